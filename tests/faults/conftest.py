"""The fault suite's laboratory: real processes, a real compiler, private caches.

Every test gets cache directories of its own (:meth:`FaultLab.new_cache`), seeded
with what every module needs and no test is about (the compiler probe record, the
thread-pool runtime and the C call-path extension, built once per session), so a
child process compiles exactly the module its test is about.

The children run ``python -c CODE`` with ``CC`` pointing at a small wrapper
around the real C compiler.  By default the wrapper just runs the compiler; with
``NBG_FAULT_GATE=<prefix>`` in a child's environment it stops a *module* build
(not the probe, the runtime or the extension) at a gate, so a test can act at a
known point instead of sleeping and hoping:

``NBG_FAULT_MODE=before``
    the wrapper announces itself (``<prefix>.waiting`` holds its pid) and waits
    for ``<prefix>.go`` before running the compiler: the build is "in the
    compiler";
``NBG_FAULT_MODE=partial``
    the wrapper runs the compiler, cuts the library it wrote to half its size
    (what a process killed while writing leaves), announces itself and waits.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_gates = itertools.count(1)

_WRAPPER = r"""#!/bin/sh
# nbgraph fault tests: the real C compiler, optionally stopped at a gate
REAL_CC='@REAL_CC@'
gated=""
out=""
prev=""
if [ -n "$NBG_FAULT_GATE" ]; then
    for a in "$@"; do
        case "$a" in
            */nbg_runtime-*) ;;
            */nbg_*.c) gated=1 ;;
        esac
        [ "$prev" = "-o" ] && out="$a"
        prev="$a"
    done
fi
[ -z "$gated" ] && exec "$REAL_CC" "$@"
announce() { echo $$ > "$NBG_FAULT_GATE.tmp"; mv "$NBG_FAULT_GATE.tmp" "$NBG_FAULT_GATE.waiting"; }
wait_go() {
    i=0
    while [ ! -e "$NBG_FAULT_GATE.go" ]; do
        sleep 0.02
        i=$((i + 1))
        [ $i -gt 6000 ] && exit 99
    done
}
case "$NBG_FAULT_MODE" in
    partial)
        "$REAL_CC" "$@" || exit $?
        size=$(wc -c < "$out")
        head -c $((size / 2)) "$out" > "$out.half" && mv "$out.half" "$out"
        announce
        wait_go
        exit 0 ;;
    *)
        announce
        wait_go
        exec "$REAL_CC" "$@" ;;
esac
"""


def _real_compiler() -> str | None:
    from nbgraph.linkers.c.compiler import find_compiler

    argv = find_compiler()
    return argv[0] if argv else None


def graph_code(k, linker: str = "c", before: str = "", n: int = 4) -> str:
    """Python source: build ``x * k + 1`` for ``k`` (a number or a list of them;
    each gives a module no cache has: ``k`` is spelled in the C text), call it,
    print a JSON line: the result (a list of results for a list), the cache
    counters, the modules' paths and every warning raised."""
    many = isinstance(k, (list, tuple))
    ks = list(k) if many else [k]
    return f"""
import json, warnings
warnings.simplefilter("always")
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import cache
from nbgraph.tensor.c_code import constants
constants.ENABLED = False
{before}
results, paths = [], []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = nt.dvector("x")
    for k in {ks!r}:
        f = ng.function([x], x * k + 1, linker={linker!r})
        results.append(f(np.arange({n}.0)).tolist())
        paths.append(getattr(getattr(f.program, "module", None), "path", None))
print(json.dumps({{"result": results if {many!r} else results[0], "stats": cache.STATS,
                  "path": paths if {many!r} else paths[0],
                  "warnings": [str(w.message) for w in caught]}}))
"""


def expected(k: float, n: int = 4) -> list:
    """What :func:`graph_code`'s function returns for one ``k`` (NumPy, exactly)."""
    import numpy as np

    return (np.arange(float(n)) * k + 1).tolist()


class Child:
    """A running child process (``popen``) and where its gate files are."""

    def __init__(self, popen: subprocess.Popen, gate: str | None):
        self.popen = popen
        self.gate = gate
        self.pid = popen.pid

    def wait_at_gate(self, timeout: float = 120.0) -> int:
        """Wait until the child's compiler reached the gate; returns the compiler's pid."""
        deadline = time.monotonic() + timeout
        waiting = self.gate + ".waiting"
        while not os.path.exists(waiting):
            if self.popen.poll() is not None:
                out, err = self.popen.communicate()
                raise AssertionError("the child ended before its compiler reached the gate "
                                     "(status %s):\n%s\n%s" % (self.popen.returncode, out,
                                                               err[-3000:]))
            if time.monotonic() > deadline:
                raise AssertionError("the child's compiler never reached the gate")
            time.sleep(0.01)
        with open(waiting) as f:
            return int(f.read().strip())

    def release(self) -> None:
        Path(self.gate + ".go").touch()

    def result(self, timeout: float = 300.0) -> dict:
        """The JSON line the child printed (asserting it succeeded)."""
        out, err = self.popen.communicate(timeout=timeout)
        assert self.popen.returncode == 0, "child failed (status %s):\n%s" % (
            self.popen.returncode, err[-4000:])
        return json.loads(out.strip().splitlines()[-1])

    def failure(self, timeout: float = 300.0) -> str:
        """The child's stderr, asserting it failed."""
        out, err = self.popen.communicate(timeout=timeout)
        assert self.popen.returncode != 0, "the child succeeded:\n%s" % out
        return err

    def kill(self, group: bool = True) -> None:
        """SIGKILL the child (and, with ``group``, every process it started)."""
        if group:
            os.killpg(self.popen.pid, signal.SIGKILL)
        else:
            os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.communicate(timeout=60)
        assert self.popen.returncode == -signal.SIGKILL


class FaultLab:
    """Helpers of one test: cache directories, children, checks."""

    def __init__(self, base: Path, cc: str, seed: Path, tmp: Path):
        self.base = base
        self.cc = cc
        self.seed = seed
        self.tmp = tmp

    def new_cache(self, name: str, seeded: bool = True, parent: Path | None = None) -> Path:
        """A fresh private cache directory (seeded with probe, runtime and extension)."""
        d = (parent or self.tmp) / name
        d.mkdir(mode=0o700)
        if seeded:
            for entry in os.listdir(self.seed):
                if entry.startswith(("probe-", "runtime-", "nbg-fastcall-")):
                    shutil.copy2(self.seed / entry, d / entry)
        return d

    def env(self, cache: Path, **extra: str) -> dict:
        env = dict(os.environ)
        env.update(NBGRAPH_CACHE_DIR=str(cache), CC=self.cc,
                   PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""))
        for name in ("NBG_FAULT_GATE", "NBG_FAULT_MODE"):
            env.pop(name, None)
        env.update(extra)
        return env

    def spawn(self, code: str, cache: Path, gate: str | None = None,
              permissions_apply: bool = False, env: dict | None = None) -> Child:
        """Start ``python -c code`` with ``cache`` as its cache directory, in a new
        session (so its whole process group can be killed).  ``gate``: the wrapper's
        mode ("before", "partial"); ``permissions_apply``: a child of root runs
        without the capabilities that let root ignore file permissions (other
        users' children are subject to them anyway)."""
        extra = dict(env or {})
        gate_prefix = None
        if gate is not None:
            gate_prefix = str(self.tmp / ("gate-%d" % next(_gates)))  # never reused
            extra.update(NBG_FAULT_GATE=gate_prefix, NBG_FAULT_MODE=gate)
        popen = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=str(REPO),
                                 env=self.env(cache, **extra), start_new_session=True,
                                 preexec_fn=_drop_root_powers
                                 if permissions_apply and os.geteuid() == 0 else None)
        return Child(popen, gate_prefix)

    def run(self, code: str, cache: Path, **kw) -> dict:
        """Run a child to its end; its JSON line."""
        return self.spawn(code, cache, **kw).result()

    def cli(self, cache: Path, *words: str) -> subprocess.CompletedProcess:
        """``python -m nbgraph cache WORDS`` on ``cache``."""
        return subprocess.run([sys.executable, "-m", "nbgraph", "cache", *words],
                              capture_output=True, text=True, cwd=str(REPO),
                              env=self.env(cache), timeout=300)


def modules(directory: Path) -> list[str]:
    """The compiled modules' keys in ``directory`` (libraries, whatever their state)."""
    return sorted(n[:-3] for n in os.listdir(directory)
                  if n.endswith(".so") and not n.startswith((".", "runtime-", "nbg-fastcall-")))


def temporaries(directory: Path) -> list[str]:
    """Leftovers of builds (``.build-*`` directories, ``.tmp-*`` files)."""
    return sorted(n for n in os.listdir(directory) if n.startswith((".build-", ".tmp-")))


def assert_consistent(directory: Path) -> None:
    """Every library in ``directory`` has its sidecar and matches it (size, SHA-256)."""
    from nbgraph.linkers.c.cache import ModuleCache

    cache = ModuleCache(directory)
    for name in os.listdir(directory):
        if name.endswith(".so") and not name.startswith("."):
            meta = directory / (name[:-3] + ".meta")
            assert cache.verify_library(str(directory / name), str(meta)), \
                "%s does not match its sidecar" % name


def process_gone(pid: int, timeout: float = 120.0) -> None:
    """Wait until ``pid`` has exited (a zombie counts as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)
    raise AssertionError("process %d did not exit" % pid)


#: capabilities that let root read, write and chmod what permissions forbid
_DAC_CAPABILITIES = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
_PR_CAPBSET_DROP = 24


def _drop_root_powers() -> None:
    """(In a child, before exec.) Drop the capabilities by which root ignores file
    permissions from the bounding set: the program run next has none of them,
    so a directory without write permission is read-only to it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _DAC_CAPABILITIES:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, %d) failed" % cap)


def root_can_drop_powers() -> str | None:
    """None when a child of root can run with file permissions applied, else why not."""
    try:
        proc = subprocess.run(["true"], preexec_fn=_drop_root_powers,
                              capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return "cannot drop root's file-permission capabilities in a child: %s" % exc
    if proc.returncode != 0:
        return "cannot drop root's file-permission capabilities in a child: %s" % (
            proc.stderr.decode(errors="replace")[-500:])
    return None


# the helpers, reachable from the tests as lab.<name> (a test module cannot import a
# conftest reliably under --import-mode=importlib)
for _helper in (graph_code, expected, modules, temporaries, assert_consistent, process_gone,
                root_can_drop_powers):
    setattr(FaultLab, _helper.__name__, staticmethod(_helper))


@pytest.fixture(scope="session")
def fault_base():
    """A session directory holding the compiler wrapper and the seed cache."""
    cc = _real_compiler()
    if cc is None:
        pytest.skip("no C compiler (apt-get install gcc libc6-dev, or set CC)")
    base = Path(tempfile.mkdtemp(prefix="nbgraph-faults-"))
    wrapper = base / "cc"
    wrapper.write_text(_WRAPPER.replace("@REAL_CC@", cc))
    os.chmod(wrapper, 0o755)
    yield base, str(wrapper)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def fault_seed(fault_base):
    """A cache built once with the wrapper compiler: probe record, runtime, extension."""
    base, cc = fault_base
    seed = base / "seed"
    seed.mkdir(mode=0o700)
    lab = FaultLab(base, cc, seed, base)
    lab.run(graph_code(0.5, n=2), seed)
    return seed


@pytest.fixture
def lab(fault_base, fault_seed, tmp_path):
    """A :class:`FaultLab` for this test."""
    base, cc = fault_base
    return FaultLab(base, cc, fault_seed, tmp_path)
