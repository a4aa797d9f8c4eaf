"""The compiler probe on a first use: it is the runtime library's build.

On an empty cache the probe's one build with every optional flag is the
runtime library (which holds the probe's test function), checked in a child
process before this one loads it; the first module compiles meanwhile with
the probe's usual answer and is loaded only once the probe agrees, else it
is generated and compiled again.  Each test runs in a fresh interpreter on a
private empty cache (the session's probe is already in memory here).
"""

import json

import pytest

from nbgraph.linkers.c import compiler

pytestmark = pytest.mark.needs_cc

# Records the sources each compiler run was given (basenames), then runs `body`.
_TRACE = """
import ctypes, json, os, subprocess
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import cache, compiler, probe_program, threads

sources = []
_init = subprocess.Popen.__init__
def _spy(self, args, *a, **k):
    if isinstance(args, list):
        sources.extend(os.path.basename(w) for w in args if w.endswith(".c"))
    _init(self, args, *a, **k)
subprocess.Popen.__init__ = _spy
%s
x, y = nt.dvector("x"), nt.dvector("y")
f = ng.function([x, y], nt.exp(x) * 2.0 + y, linker=LINKER)
if LINKER == "cvm":
    f.program.wait_compiled()
out = f(np.linspace(0, 1, 5), np.ones(5))
assert np.allclose(out, np.exp(np.linspace(0, 1, 5)) * 2 + 1), out
info = f.program._plan.info
names = sorted(os.listdir(os.environ["NBGRAPH_CACHE_DIR"]))
print(json.dumps({"sources": sources, "names": names, "kinds": list(f.program.kinds),
                  "mvec": info.mvec, "flags": info.flags, "confirmed": info.confirmed,
                  "compiles": cache.STATS["compiles"],
                  "runtime_builds": cache.STATS["runtime_builds"],
                  "probe": [hasattr(ctypes.CDLL(os.path.join(os.environ["NBGRAPH_CACHE_DIR"], n)),
                                    "nbg_probe") for n in names
                            if n.startswith("runtime-") and n.endswith(".so")]}))
"""


def _run(python_process, tmp_path, setup="", linker="c"):
    cache_dir = tmp_path / "cache"
    code = (_TRACE % setup).replace("LINKER", repr(linker))
    proc = python_process(code, cache_dir=cache_dir, extra_env={"NBGRAPH_C_BACKGROUND": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _modules(names):
    return [n for n in names if n.endswith(".so")
            and not n.startswith(("runtime-", "nbg-fastcall-"))]


def test_a_first_use_probes_by_building_the_runtime_while_the_module_compiles(
        python_process, tmp_path):
    got = _run(python_process, tmp_path)
    assert not any(s.startswith("probe_") for s in got["sources"]), got["sources"]
    runtime_units = [s for s in got["sources"] if s.startswith("nbg_runtime-")]
    assert len(runtime_units) == 1, got["sources"]  # built once, as the probe
    assert got["runtime_builds"] == 1 and got["compiles"] == 1
    assert got["confirmed"] and "-march=native" in got["flags"]
    assert any(n.startswith("probe-") for n in got["names"])
    assert len(_modules(got["names"])) == 1
    assert got["probe"] == [True]  # the runtime library holds the probe's test function
    module = [k for k, s in enumerate(got["sources"]) if s.startswith("nbg_")
              and not s.startswith("nbg_runtime-")]
    if "_fastcall.c" in got["sources"]:  # the call-path extension builds after the module
        assert got["sources"].index("_fastcall.c") > module[-1]


_OTHER_ANSWER = """
def _run_probe(argv, cache=None):
    import time
    time.sleep(0.3)  # the module is generated with the usual answer meanwhile
    version = compiler._version(argv)
    return compiler.CompilerInfo(argv, version, compiler.BASE_FLAGS, compiler.BASE_LIBS, False)
probe_program.run_probe = _run_probe
"""


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_a_module_made_while_the_probe_ran_is_made_again_when_it_found_otherwise(
        python_process, tmp_path, linker):
    got = _run(python_process, tmp_path, _OTHER_ANSWER, linker)
    assert got["confirmed"] and not got["mvec"] and "-march=native" not in got["flags"]
    assert got["kinds"] == ["c"]
    # the module built for the usual answer never loaded, and was not kept
    assert len(_modules(got["names"])) == 1
    assert got["compiles"] == 1


_RUNTIME_FAILS_ITS_CHECK = """
_check = probe_program._loads_and_runs
def _loads_and_runs(path):
    return "nbg_runtime-" not in path and _check(path)
probe_program._loads_and_runs = _loads_and_runs
"""


def test_the_probe_builds_its_own_program_when_the_runtime_fails_the_check(
        python_process, tmp_path):
    got = _run(python_process, tmp_path, _RUNTIME_FAILS_ITS_CHECK)
    assert "probe_all.c" in got["sources"]
    assert got["confirmed"] and "-march=native" in got["flags"]
    # refused by the check, the probe's runtime build was not published; the
    # link then built it again (without the check) and loaded it
    assert sum(s.startswith("nbg_runtime-") for s in got["sources"]) == 2
    assert got["runtime_builds"] == 1 and got["kinds"] == ["c"]


def test_confirm_passes_a_probed_answer_and_refuses_another(c_cache_dir):
    from nbgraph.linkers.c.cache import get_cache

    cache = get_cache()
    info = compiler.probe(cache)
    assert compiler.confirm(info, cache) is info
    other = compiler.CompilerInfo(info.argv, info.version, info.flags + ["-DNBG_OTHER"],
                                  info.libs, info.mvec, confirmed=False)
    with pytest.raises(compiler.ProbeMismatch) as caught:
        compiler.confirm(other, cache)
    assert caught.value.info.key_text() == info.key_text()
    assert compiler.probe_nowait(cache) is info  # known: confirmed, no thread


def test_module_keys_name_the_cpu_when_built_for_the_native_one(monkeypatch):
    """Two machines sharing a cache directory get different keys for -march=native
    code (loading another CPU's build could die of an illegal instruction), and
    the same key for portable flags."""
    native = compiler.CompilerInfo(["/usr/bin/cc"], "cc 1", ["-O3", "-march=native"], ["-lm"],
                                   False)
    portable = compiler.CompilerInfo(["/usr/bin/cc"], "cc 1", ["-O3"], ["-lm"], False)
    keys = {}
    for cpu in ("cpu-a", "cpu-b"):
        monkeypatch.setattr(compiler, "_cpu", [cpu])
        keys[cpu] = (native.key_text(), portable.key_text())
    assert keys["cpu-a"][0] != keys["cpu-b"][0]
    assert keys["cpu-a"][1] == keys["cpu-b"][1]


_SLOW_PROBE = """
import threading, time
import nbgraph.linkers.c as c_backend
_real = probe_program.run_probe
def _run_probe(argv, cache=None):
    time.sleep(0.5)  # function() returns meanwhile
    return _real(argv, cache)
probe_program.run_probe = _run_probe
x, y = nt.dvector("x"), nt.dvector("y")
f = ng.function([x, y], nt.exp(x) * 2.0 + y)  # the default linker
running = [t.is_alive() for t in compiler._threads.values()]
first = f(np.linspace(0, 1, 5), np.ones(5)).tolist()
before = (f.linker, list(f.program.kinds), c_backend._default)
f.program.wait_compiled()
print(json.dumps({"running": running, "before": before, "kinds": list(f.program.kinds),
                  "first": first, "after": c_backend.default_linker()}))
raise SystemExit
"""


def test_the_default_linker_does_not_wait_for_a_first_use_probe(python_process, tmp_path):
    proc = python_process((_TRACE % _SLOW_PROBE).replace("LINKER", "'cvm'"),
                          cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["running"] == [True]  # function() returned while the probe ran
    assert got["before"] == ["cvm", ["py"], None]  # (the answer is not remembered yet)
    assert got["kinds"] == ["c"] and got["after"] == "cvm"
    import numpy as np

    np.testing.assert_allclose(got["first"], np.exp(np.linspace(0, 1, 5)) * 2 + 1)
