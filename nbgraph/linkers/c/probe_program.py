"""The compiler probe's test program: its C text, building it, and running it
in a child process (:func:`run_probe`, called by
:func:`nbgraph.linkers.c.compiler.probe` when no answer is known).

The probe's one build with every optional flag (``-march=native``, glibc's
``libmvec``) is normally the runtime library's, which holds the test function
:func:`probe_function`; only when that fails does it build its own small
program, then each optional flag alone.  Every build is loaded and run in a
child process first: an instruction this CPU lacks must not kill the caller.
"""

import os

from nbgraph.linkers.c import compiler as _compiler
from nbgraph.linkers.c.compiler import (
    BASE_FLAGS,
    BASE_LIBS,
    MVEC_FUNCTIONS,
    CompilerInfo,
    CompilerUnavailable,
)

__all__ = ["probe_function", "loads_and_runs", "run_probe"]

#: With ``NBGRAPH_PROBE_SELFTEST`` in its environment, a process that loads the
#: probe's library runs the test function at once and exits with status 42 when
#: it returned 42 (:func:`loads_and_runs` preloads it into ``true``).
_SELFTEST = """char *getenv(const char *);
void _exit(int) __attribute__((noreturn));
__attribute__((constructor)) static void nbg_probe_selftest(void) {
    static double x[16];
    static float y[16];
    int i;
    if (!getenv("NBGRAPH_PROBE_SELFTEST") || !getenv("LD_PRELOAD")) return;
    for (i = 0; i < 16; i++) { x[i] = 0.5; y[i] = 0.5f; }
    _exit(nbg_probe(16, x, y) == 42 ? 42 : 1);
}
"""

_PROBE_SOURCE = """#include <stdint.h>
#include <math.h>
%(decls)s
__attribute__((visibility("default"))) int nbg_probe(int64_t n, double *x, float *y) {
    int64_t i;
    for (i = 0; i < n; i++) x[i] = %(dexpr)s;
    for (i = 0; i < n; i++) y[i] = %(fexpr)s;
    return 42;
}
""" + _SELFTEST


_PROBE_FUNCTION = """%(decls)s
__attribute__((visibility("default"))) int nbg_probe(int64_t n, double *x, float *y) {
    int64_t i;
    for (i = 0; i < n; i++) x[i] = %(dexpr)s;
    for (i = 0; i < n; i++) y[i] = %(fexpr)s;
    return 42;
}
""" + _SELFTEST


def probe_function(mvec):
    """C text of the probe's test function ``nbg_probe`` without any header (the
    runtime library holds it: on a first use its build is the probe, see
    :func:`run_probe`); the math functions it calls are declared, with their
    vector variants when ``mvec``."""
    if mvec:
        decls = _compiler._mvec_declarations()
    else:
        decls = "".join("double %s(double);\nfloat %sf(float);\n" % (f, f)
                        for f in MVEC_FUNCTIONS)
        decls += "double pow(double, double);\nfloat powf(float, float);\n"
    return _PROBE_FUNCTION % dict(_probe_expressions(), decls=decls)


def _probe_expressions():
    dexpr = " + ".join("%s(x[i])" % f for f in MVEC_FUNCTIONS) + " + pow(x[i], x[i])"
    fexpr = " + ".join("%sf(y[i])" % f for f in MVEC_FUNCTIONS) + " + powf(y[i], y[i])"
    return {"dexpr": dexpr, "fexpr": fexpr}


def _probe_source(mvec):
    return _PROBE_SOURCE % dict(_probe_expressions(),
                                decls=_compiler._mvec_declarations() if mvec else "")


def _try_build(argv, flags, libs, source, workdir, tag):
    import subprocess

    src = os.path.join(workdir, "probe_%s.c" % tag)
    out = os.path.join(workdir, "probe_%s.so" % tag)
    with open(src, "w") as f:
        f.write(source)
    try:
        proc = subprocess.run(argv + flags + ["-o", out, src] + libs, capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    if proc.returncode != 0 or not os.path.exists(out):
        return None, proc.stderr
    if not _loads_and_runs(out):
        return None, "the built library could not be loaded and run"
    return out, ""


def loads_and_runs(path):
    """True when the library at ``path`` loads and its ``nbg_probe`` runs, in a
    child process (an unsupported instruction must not kill this one)."""
    return _loads_and_runs(path)


def _loads_and_runs(path):
    """dlopen a probe library in a child process and call it (an unsupported
    instruction must not kill this process).

    The child is ``true`` with the library preloaded, every symbol bound at
    load (``LD_BIND_NOW``), and its self-test constructor on (``_SELFTEST``):
    ~1 ms.  When that cannot say (no ``true``, a path the loader's list cannot
    hold, a loader without ``LD_PRELOAD``: ``true`` exits 0), a bare
    interpreter (no site, ctypes) loads and calls it: ~20 ms."""
    import subprocess
    import sys

    true = _compiler.which("true")
    if true and not any(c in path for c in " \t\n:"):
        env = dict(os.environ, LD_PRELOAD=path, LD_BIND_NOW="1", NBGRAPH_PROBE_SELFTEST="1")
        try:
            proc = subprocess.run([true], capture_output=True, timeout=60, env=env)
        except (OSError, subprocess.TimeoutExpired):
            proc = None
        if proc is not None and proc.returncode == 42:
            return True
        if proc is not None and proc.returncode != 0:
            return False  # it crashed, or the test function gave a wrong answer
    code = ("import ctypes, sys\n"
            "f = ctypes.CDLL(sys.argv[1]).nbg_probe\n"
            "f.restype = ctypes.c_int\n"
            "f.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_double),\n"
            "              ctypes.POINTER(ctypes.c_float)]\n"
            "x = (ctypes.c_double * 16)(*[0.5] * 16)\n"
            "y = (ctypes.c_float * 16)(*[0.5] * 16)\n"
            "sys.exit(0 if f(16, x, y) == 42 else 1)\n")
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, path],
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def run_probe(argv, cache=None):
    """Probe ``argv``: its version, then one build (and run) with every optional
    flag, which is the usual answer; only when that fails, the flags one by one.

    With a ``cache``, that one build is the runtime library's (it holds the
    probe's test function, :func:`probe_function`): checked in a child process
    before anything loads it, then kept, so a first use compiles the runtime
    once and the probe's own program not at all."""
    version = _compiler._version(argv)
    flags = list(BASE_FLAGS)
    libs = list(BASE_LIBS)
    usual = CompilerInfo(argv, version, flags + ["-march=native"], libs + ["-lmvec"], True)
    if cache is not None and _runtime_runs(cache, usual):
        return usual
    import tempfile  # (not before: with the runtime's build, importing it costs ~4 ms)

    with tempfile.TemporaryDirectory(prefix="nbgraph-probe-") as workdir:
        everything, _ = _try_build(argv, usual.flags, usual.libs, _probe_source(True), workdir,
                                   "all")
        if everything:
            return usual
        ok, err = _try_build(argv, flags, libs, _probe_source(False), workdir, "base")
        if not ok:
            raise CompilerUnavailable("the C compiler %s does not build a working shared "
                                      "library: %s" % (" ".join(argv), err.strip()[-2000:]))
        native, _ = _try_build(argv, flags + ["-march=native"], libs, _probe_source(False),
                               workdir, "native")
        if native:
            flags.append("-march=native")
        mvec, _ = _try_build(argv, flags, libs + ["-lmvec"], _probe_source(True), workdir,
                             "mvec")
        if mvec:
            libs.append("-lmvec")
    return CompilerInfo(argv, version, flags, libs, bool(mvec))


def _runtime_runs(cache, info):
    """True when the runtime library built with ``info`` (or found built) loads and
    runs its probe function in a child process (then this process loads it)."""
    from nbgraph.linkers.c import threads
    from nbgraph.linkers.c.publish import CacheSecurityError

    try:
        return threads.build_as_probe(cache, info)
    except CacheSecurityError:
        raise
    except Exception:  # noqa: BLE001 - any failure: probe with the small program
        return False
