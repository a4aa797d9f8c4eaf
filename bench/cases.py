"""Benchmark cases: each builds an nbgraph callable and its NumPy twin."""

import os
import subprocess
import sys
import timeit

import numpy as np

try:
    import numexpr
except ImportError:  # optional
    numexpr = None


class Case:
    """One benchmark: ``setup(linker)`` returns (nbgraph_callable, numpy_callable, numexpr)."""

    def __init__(self, name, setup, number=None, self_timed=False):
        self.name = name
        self.setup = setup
        self.number = number
        self.self_timed = self_timed  # the callable returns its own duration in seconds


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


def run_case(case, linker):
    """Time one case; return its printed row."""
    ours, theirs, ne = case.setup(linker)
    _wait_for_compilers()
    if case.self_timed:
        t_ours = min(ours() for _ in range(5))
    else:
        t_ours = best_time(ours, case.number)
    t_np = best_time(theirs, case.number) if theirs is not None else None
    t_ne = best_time(ne, case.number) if ne is not None else None
    ratio = "%.2fx" % (t_ours / t_np) if t_np else "-"
    return "%-44s %12s %12s %8s %12s" % (case.name, _fmt(t_ours), _fmt(t_np), ratio,
                                        _fmt(t_ne))


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
        ne = lambda: numexpr.evaluate("a + b * 2.0 - c", local_dict={"a": a, "b": b, "c": c})
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
        ne = lambda: numexpr.evaluate("exp(-a**2/2)*sin(b) + a*b", local_dict={"a": a, "b": b})
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
    ng, nt = _nt()
    rng = np.random.default_rng(0)

    def build():
        x = nt.dmatrix("x")
        h = x
        params = []
        for i in range(12):
            w = ng.shared(rng.standard_normal((16, 16)) * 0.1, name="W%d" % i)
            b = ng.shared(np.zeros(16), name="b%d" % i)
            params += [w, b]
            h = nt.tanh(nt.dot(h, w) + b)
        cost = (h ** 2).mean()
        return ng.function([x], [cost] + ng.grad(cost, params), linker=linker)
    return build, None, None


def import_time(linker):
    code = "import time; t = time.perf_counter(); import nbgraph; print(time.perf_counter() - t)"

    def run():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=dict(os.environ))
        return float(out.stdout)
    return run, None, None


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

    def run():
        out = subprocess.run([sys.executable, "-c", timed], capture_output=True, text=True,
                             check=True, env=env, cwd=root)
        return float(out.stdout.strip().splitlines()[-1])
    return run, None, None


CASES = [
    Case("call overhead x + y, 0-d", scalar_add(False)),
    Case("call overhead x + y, 0-d, trust_input", scalar_add(True)),
    Case("cached eval, small vector graph", cached_eval),
    Case("new graph, build to first result", new_graph, number=5),
    Case("x + y*2.0 - z, float64, N=1e7", elementwise_1, number=3),
    Case("exp(-x**2/2)*sin(y) + x*y, N=1e6", elementwise_2, number=10),
    Case("sum((x - y)**2), N=1e7", sum_sq_diff, number=3),
    Case("dot(A, B) + b, 500x500", dot_plus_bias, number=20),
    Case("logistic-regression grad, X 1000x100", logreg_grad, number=200),
    Case("12-layer tanh MLP + grad, function()", mlp_compile, number=1),
    Case("same graph, fresh process, disk cache warm", warm_cache_process, self_timed=True),
    Case("import nbgraph (fresh process)", import_time, self_timed=True),
]

