"""Benchmark cases: each builds an nbgraph callable and its NumPy twin."""

import os
import subprocess
import sys
import time
import timeit

import numpy as np

from bench import peers
from bench.lenet_case import lenet_jax, lenet_setup
from bench.mlp import mlp_code, mlp_script
from bench.scan_cases import rnn_jax, rnn_pytensor, rnn_setup
from bench.process import seconds_printed

try:
    import numexpr
except ImportError:  # optional
    numexpr = None


try:
    import pytensor
except ImportError:  # optional; `make bench` tries to install it
    pytensor = None


class Case:
    """One benchmark.

    ``setup(linker)`` returns (nbgraph_callable, numpy_callable, numexpr_callable);
    ``peer()``, when given and PyTensor is installed, returns PyTensor's callable
    for the same work.  ``target`` is the issue's goal: seconds, or with
    ``per_numpy`` a ratio to NumPy's time.
    """

    def __init__(self, name, setup, number=None, self_timed=False, peer=None, target=None,
                 per_numpy=False, repeat=5, jax=None, interleave=False):
        self.name = name
        self.interleave = interleave  # peers timed in turn, repeat by repeat (_interleaved)
        self.repeat = repeat
        self.setup = setup
        self.number = number
        self.self_timed = self_timed  # the callables return their own duration in seconds
        self.peer = peer
        self.target = target
        self.per_numpy = per_numpy
        self.jax = jax  # returns JAX's callable for the same work, or None


def best_time(fn, number=None, repeat=5):
    """Best seconds per call of ``fn`` over ``repeat`` timing runs."""
    if number is None:
        timer = timeit.Timer(fn)
        number, _ = timer.autorange()
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return min(times) / number


def _fmt(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return "%.2f us" % (seconds * 1e6)
    if seconds < 1:
        return "%.2f ms" % (seconds * 1e3)
    return "%.2f s" % seconds


HEADER = "%-44s %11s %11s %7s %11s %11s %11s %11s" % (
    "case", "nbgraph", "numpy", "ratio", "numexpr", "pytensor", "jax", "target")


def _time(fn, case):
    if fn is None:
        return None
    if case.self_timed:
        return min(fn() for _ in range(case.repeat))
    return best_time(fn, case.number, case.repeat)


def _target_text(case, t_ours, t_np, t_jax=None, t_pt=None):
    if isinstance(case.target, dict):  # {"pytensor": 1.0, "jax": 2.0}: factors of peers' times
        times = {"pytensor": t_pt, "jax": t_jax, "numpy": t_np}
        parts = ["%s%s" % ("" if f == 1 else "%gx" % f, k[:2]) for k, f in case.target.items()]
        met = all(times[k] is None or t_ours <= f * times[k] for k, f in case.target.items())
        return "<=" + ",".join(parts) + (" ok" if met else " MISS")
    if case.target == "jax":  # the goal is JAX's time
        if t_jax is None:
            return "-"
        return "<=jax" + (" ok" if t_ours <= t_jax else " MISS")
    if case.target is None:
        return "-"
    if case.per_numpy:
        if not t_np:
            return "-"
        met = t_ours <= case.target * t_np
        text = "<=%.2fx" % case.target
    else:
        met = t_ours <= case.target
        text = "<=" + _fmt(case.target).replace(" ", "")
    return text + (" ok" if met else " MISS")


#: Seconds of rest before each timed block of an interleaved case: BLAS and XLA
#: worker threads busy-wait after their work (NumPy's OpenBLAS ~0.1 s), and
#: without a rest they would take a core from whichever peer comes next.  One
#: untimed call after the rest then wakes the peer's own threads and caches, so
#: the block times its steady state, as a block of ``best_time`` does.
REST = 0.15


def _interleaved(fns, case):
    """Best seconds per call of each callable (None stays None): ``case.repeat``
    rounds, each timing every callable in turn (``case.number`` calls after a
    rest of :data:`REST` and one untimed call), so slow and fast spells of a
    shared machine fall on every column alike."""
    best = [None] * len(fns)
    for _ in range(case.repeat):
        for i, fn in enumerate(fns):
            if fn is None:
                continue
            time.sleep(REST)
            fn()
            t = timeit.timeit(fn, number=case.number) / case.number
            best[i] = t if best[i] is None else min(best[i], t)
    return best


def run_case(case, linker):
    """Time one case; return its printed row."""
    ours, theirs, ne = case.setup(linker)
    peer = case.peer() if case.peer is not None and pytensor is not None else None
    _wait_for_compilers()
    if case.interleave:
        jax_fn = case.jax() if case.jax is not None else None
        t_ours, t_np, t_ne, t_pt, t_jax = _interleaved([ours, theirs, ne, peer, jax_fn], case)
    else:
        t_ours = _time(ours, case)
        t_np = _time(theirs, case)
        t_ne = _time(ne, case)
        t_pt = _time(peer, case)
        t_jax = _time(case.jax() if case.jax is not None else None, case)
    ratio = "%.2fx" % (t_ours / t_np) if t_np else "-"
    return "%-44s %11s %11s %7s %11s %11s %11s %11s" % (
        case.name, _fmt(t_ours), _fmt(t_np), ratio, _fmt(t_ne), _fmt(t_pt), _fmt(t_jax),
        _target_text(case, t_ours, t_np, t_jax, t_pt))


def _wait_for_compilers():
    """Let background C compilations finish, so steady-state calls are timed."""
    try:
        from nbgraph.linkers.c import background
    except ImportError:  # pragma: no cover - no C linker
        return
    background.wait_all(timeout=600)


def _nt():
    import nbgraph as ng
    import nbgraph.tensor as nt

    return ng, nt


def scalar_add(trust):
    def setup(linker):
        ng, nt = _nt()
        x, y = nt.dscalar("x"), nt.dscalar("y")
        f = ng.function([x, y], x + y, linker=linker, trust_input=trust)
        a, b = np.array(1.5), np.array(2.5)
        return (lambda: f(a, b)), (lambda: np.add(a, b)), None
    return setup


def cached_eval(linker):
    ng, nt = _nt()
    x, y = nt.dvector("x"), nt.dvector("y")
    z = (x * 2 + y).sum()
    a, b = np.arange(10.0), np.ones(10)
    values = {x: a, y: b}
    z.eval(values)
    return (lambda: z.eval(values)), (lambda: (a * 2 + b).sum()), None


def new_graph(linker):
    ng, nt = _nt()
    a, b = np.arange(10.0), np.ones(10)
    counter = [0]

    def build_and_run():
        counter[0] += 1
        x, y = nt.dvector("x"), nt.dvector("y")
        # a distinct constant per call so no cache can answer
        f = ng.function([x, y], (x * counter[0] + y).sum() * 1.5, linker=linker)
        return f(a, b)
    return build_and_run, None, None


def elementwise_1(linker):
    ng, nt = _nt()
    n = 10 ** 7
    x, y, z = nt.dvector("x"), nt.dvector("y"), nt.dvector("z")
    f = ng.function([x, y, z], x + y * 2.0 - z, linker=linker)
    rng = np.random.default_rng(0)
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    ne = None
    if numexpr is not None:
        def ne():
            return numexpr.evaluate("a + b * 2.0 - c", local_dict={"a": a, "b": b, "c": c})
    return (lambda: f(a, b, c)), (lambda: a + b * 2.0 - c), ne


def elementwise_2(linker):
    ng, nt = _nt()
    n = 10 ** 6
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y, linker=linker)
    rng = np.random.default_rng(0)
    a, b = rng.random(n), rng.random(n)
    ne = None
    if numexpr is not None:
        def ne():
            return numexpr.evaluate("exp(-a**2/2)*sin(b) + a*b", local_dict={"a": a, "b": b})
    return (lambda: f(a, b)), (lambda: np.exp(-a ** 2 / 2) * np.sin(b) + a * b), ne


def sum_sq_diff(linker):
    ng, nt = _nt()
    n = 10 ** 7
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], ((x - y) ** 2).sum(), linker=linker)
    rng = np.random.default_rng(0)
    a, b = rng.random(n), rng.random(n)
    return (lambda: f(a, b)), (lambda: ((a - b) ** 2).sum()), None


def dot_plus_bias(linker):
    ng, nt = _nt()
    A, B, bias = nt.dmatrix("A"), nt.dmatrix("B"), nt.dvector("b")
    f = ng.function([A, B, bias], nt.dot(A, B) + bias, linker=linker)
    rng = np.random.default_rng(0)
    a, b, c = rng.random((500, 500)), rng.random((500, 500)), rng.random(500)
    return (lambda: f(a, b, c)), (lambda: np.dot(a, b) + c), None


def logreg_grad(linker):
    ng, nt = _nt()
    X, w = nt.dmatrix("X"), nt.dvector("w")
    cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w))))
    f = ng.function([X, w], ng.grad(cost, w), linker=linker)
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1

    def numpy_grad():
        e = np.exp(-xv.dot(wv))
        return -xv.T.dot(e / (1 + e))
    return (lambda: f(xv, wv)), numpy_grad, None


def mlp_compile(linker):
    """function() of the MLP (:mod:`bench.mlp`) in this process."""
    import nbgraph as ng
    import nbgraph.tensor as nt

    code = mlp_code(linker)
    names = {"np": np, "nt": nt, "FUNCTION": ng.function, "SHARED": ng.shared,
             "GRAD": ng.grad}
    return (lambda: exec(code, dict(names))), None, None


def mlp_cold_process(linker):
    """A fresh interpreter with an empty C cache: function() of the MLP until its
    C code is compiled and installed."""
    code = mlp_script("nbgraph", linker, time_imports=False,
                      then='getattr(f.program, "wait_compiled", lambda: None)()\n')

    def run():
        import tempfile

        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NBGRAPH_CACHE_DIR=cache)
            return seconds_printed(code, env)
    return run, None, None


def _import_case(module):
    code = ("import time; t = time.perf_counter(); import %s; print(time.perf_counter() - t)"
            % module)
    return (lambda: seconds_printed(code)), None, None


def import_time(linker):
    """``import nbgraph`` alone (NumPy is not imported until a Function is made)."""
    return _import_case("nbgraph")


def import_tensor_time(linker):
    """What every program imports: ``nbgraph.tensor`` (NumPy included)."""
    return _import_case("nbgraph.tensor")


def warm_cache_process(linker):
    """A fresh interpreter (nbgraph already imported) builds a graph whose compiled
    module is on disk, and computes its first result: graph, rewrites, module
    lookup and load, first call."""
    setup = "import numpy as np, nbgraph as ng, nbgraph.tensor as nt\n"
    body = ("x, y = nt.dvector('x'), nt.dvector('y')\n"
            "f = ng.function([x, y], nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y, linker=%r)\n"
            "f(np.ones(10), np.ones(10))\n" % (linker,))
    warm = setup + body + ("p = f.program\n"
                           "getattr(p, 'wait_compiled', lambda: None)()\n")
    timed = setup + "import time\nt = time.perf_counter()\n" + body + \
        "print(time.perf_counter() - t)\n"
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", warm], check=True, env=env, cwd=root)

    return (lambda: seconds_printed(timed, env, root)), None, None


def ifelse_mean(linker):
    """The conditions tutorial's program: only the taken branch's mean is computed."""
    ng, nt = _nt()
    a, b = nt.dscalar("a"), nt.dscalar("b")
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    f = ng.function([a, b, x, y], ng.ifelse(a < b, x.mean(), y.mean()), linker=linker)
    rng = np.random.default_rng(0)
    xv, yv = rng.random((1000, 1000)), rng.random((1000, 1000))
    av, bv = np.array(0.0), np.array(1.0)
    return (lambda: f(av, bv, xv, yv)), (lambda: xv.mean() if av < bv else yv.mean()), None


_US, _MS = 1e-6, 1e-3

CASES = [
    Case("call overhead x + y, 0-d", scalar_add(False), peer=peers.scalar_add(False),
         target=2.0 * _US),
    Case("call overhead x + y, 0-d, trust_input", scalar_add(True), peer=peers.scalar_add(True),
         target=0.6 * _US),
    Case("cached eval, small vector graph", cached_eval),
    Case("new graph, build to first result", new_graph, number=5, peer=peers.new_graph,
         target=60 * _MS, repeat=3),
    Case("x + y*2.0 - z, float64, N=1e7", elementwise_1, number=3, peer=peers.elementwise_1,
         target=10 * _MS),
    Case("exp(-x**2/2)*sin(y) + x*y, N=1e6", elementwise_2, number=10,
         peer=peers.elementwise_2, target=5 * _MS),
    Case("sum((x - y)**2), N=1e7", sum_sq_diff, number=3, peer=peers.sum_sq_diff,
         target=4.5 * _MS),
    Case("dot(A, B) + b, 500x500", dot_plus_bias, number=20, peer=peers.dot_plus_bias,
         target=1.05, per_numpy=True),
    Case("logistic-regression grad, X 1000x100", logreg_grad, number=200,
         peer=peers.logreg_grad, target=30 * _US),
    Case("12-layer tanh MLP + grad, function()", mlp_compile, number=1, peer=peers.mlp_compile,
         target=0.3),
    Case("same MLP, fresh process, empty C cache", mlp_cold_process, self_timed=True,
         peer=peers.mlp_cold_process, target=2.0, repeat=2),
    Case("same graph, fresh process, disk cache warm", warm_cache_process, self_timed=True,
         peer=peers.warm_cache_process, target=15 * _MS),
    Case("import nbgraph (fresh process)", import_time, self_timed=True, peer=peers.import_time,
         target=100 * _MS),
    Case("import nbgraph.tensor (fresh process)", import_tensor_time, self_timed=True,
         peer=peers.import_tensor_time, target=100 * _MS),
    Case("LeNet 28x28, one SGD step, batch 64, float32", lenet_setup, number=3, repeat=3,
         jax=lenet_jax, target="jax"),
    Case("ifelse(a < b, mean(x), mean(y)), 1000x1000", ifelse_mean, number=20, target=1.2,
         per_numpy=True),
    Case("Elman RNN loss+grad, scan, T100 B32 H64", rnn_setup, number=5, peer=rnn_pytensor,
         jax=rnn_jax, target={"pytensor": 1.0, "jax": 2.0}),
]

from bench import c_layer  # noqa: E402  (the C layer's latency rows, issue 12)

CASES += c_layer.cases()

from bench import nnet_cases  # noqa: E402  (softmax and training steps, issue 13)

CASES += nnet_cases.cases()

from bench import dask_cases  # noqa: E402  (the Dask linker's rows, issue 18; opt-in)

CASES += dask_cases.cases()
