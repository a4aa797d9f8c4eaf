"""Benchmark cases of the C layer's latency (issue 12): new graphs to their first result.

Each case is timed from graph construction to the first result, with a value
or a structure no cache has seen (a random constant, a random chain of ops),
in this process or in a fresh one.  The PyTensor twins do the same work with
PyTensor's C backend.  JAX is not a dependency; these rows have no JAX column.
"""

import os
import random
import tempfile
import time

import numpy as np

from bench.mlp import mlp_script
from bench.process import seconds_printed

__all__ = ["cases"]

_MS = 1e-3


def _fresh_constant():
    """A float no earlier run used (not a power of two, so it stays an argument)."""
    return 0.1 + random.SystemRandom().random()


def _env(cache=None):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    if cache is not None:
        env["NBGRAPH_CACHE_DIR"] = cache
    return env, root


# -- x * c + y with a fresh c -----------------------------------------------------


def _fresh_c_ours():
    import nbgraph as ng
    import nbgraph.tensor as nt

    a, b = np.arange(10.0), np.ones(10)

    def run():
        t = time.perf_counter()
        x, y = nt.dvector("x"), nt.dvector("y")
        f = ng.function([x, y], x * _fresh_constant() + y, linker="c")
        f(a, b)
        return time.perf_counter() - t
    run()  # the module of this structure is compiled once
    return run


def _fresh_c_peer():
    import pytensor
    import pytensor.tensor as pt

    a, b = np.arange(10.0), np.ones(10)

    def run():
        t = time.perf_counter()
        x, y = pt.dvector("x"), pt.dvector("y")
        f = pytensor.function([x, y], x * _fresh_constant() + y)
        f(a, b)
        return time.perf_counter() - t
    run()
    return run


# -- a structurally new chain of 6 elementwise ops --------------------------------

_UNARY = ["exp", "sin", "cos", "tanh", "sqrt", "log1p", "abs", "sigmoid", "neg"]
_BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def _chain_plan(rng):
    """Six steps, each (op name, use the other input?); the first uses ``y``."""
    plan = [(rng.choice(_BINARY), True)]
    for _ in range(5):
        if rng.random() < 0.5:
            plan.append((rng.choice(_UNARY), None))
        else:
            plan.append((rng.choice(_BINARY), rng.random() < 0.5))
    return plan


def _chain(mod, x, y, plan):
    h = x
    for name, other in plan:
        if other is None:
            h = -h if name == "neg" else (abs(h) if name == "abs" else getattr(mod, name)(
                abs(h) if name in ("sqrt", "log1p") else h))
        else:
            h = getattr(mod, name)(h, y if other else x)
    return h


def _chain_case(library):
    """A new random chain per run, with nbgraph's C linker or PyTensor."""
    def setup():
        if library == "nbgraph":
            import nbgraph as ng
            import nbgraph.tensor as mod

            def function(inputs, output):
                return ng.function(inputs, output, linker="c")
        else:
            import pytensor
            import pytensor.tensor as mod

            function = pytensor.function
        a, b = np.linspace(0.1, 1.0, 10), np.linspace(1.0, 2.0, 10)
        rng = random.Random(os.urandom(16))

        def run():
            plan = _chain_plan(rng)
            t = time.perf_counter()
            x, y = mod.dvector("x"), mod.dvector("y")
            f = function([x, y], _chain(mod, x, y, plan))
            f(a, b)
            return time.perf_counter() - t
        return run
    return setup


# -- logistic regression: grad + compile + first call ------------------------------

_LOGREG = """
X, w = nt.dmatrix("X"), nt.dvector("w")
cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w)))) + C * nt.sum(w * w)
f = ng.function([X, w], ng.grad(cost, w), linker="c")
f(xv, wv)
"""


def _logreg_ours():
    import nbgraph as ng
    import nbgraph.tensor as nt

    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1

    def run():
        t = time.perf_counter()
        exec(_LOGREG.replace("C *", "%r *" % _fresh_constant()),
             {"ng": ng, "nt": nt, "xv": xv, "wv": wv})
        return time.perf_counter() - t
    run()
    return run


def _logreg_peer():
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1

    def run():
        t = time.perf_counter()
        X, w = pt.dmatrix("X"), pt.dvector("w")
        cost = pt.sum(pt.log1p(pt.exp(-pt.dot(X, w)))) + _fresh_constant() * pt.sum(w * w)
        f = pytensor.function([X, w], pytensor.grad(cost, w))
        f(xv, wv)
        return time.perf_counter() - t
    run()
    return run


def _logreg_process_ours():
    setup = ("import numpy as np, nbgraph as ng, nbgraph.tensor as nt\n"
             "rng = np.random.default_rng(0)\n"
             "xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1\n")
    body = _LOGREG.replace("C *", "0.01 *")
    timed = setup + "import time\nt = time.perf_counter()\n" + body + \
        "print(time.perf_counter() - t)\n"
    env, root = _env()
    seconds_printed(setup + body + "print(0)\n", env, root)  # warms the disk cache
    return lambda: seconds_printed(timed, env, root)


def _logreg_process_peer():
    code = ("import numpy as np, pytensor, pytensor.tensor as pt\n"
            "rng = np.random.default_rng(0)\n"
            "xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1\n"
            "import time\nt = time.perf_counter()\n"
            "X, w = pt.dmatrix('X'), pt.dvector('w')\n"
            "cost = pt.sum(pt.log1p(pt.exp(-pt.dot(X, w)))) + 0.01 * pt.sum(w * w)\n"
            "f = pytensor.function([X, w], pytensor.grad(cost, w))\n"
            "f(xv, wv)\nprint(time.perf_counter() - t)\n")
    seconds_printed(code)
    return lambda: seconds_printed(code)


# -- empty cache, fresh process -------------------------------------------------------

_FIRST_USE = """import time
t = time.perf_counter()
import numpy as np, nbgraph as ng, nbgraph.tensor as nt
x, y = nt.dvector("x"), nt.dvector("y")
f = ng.function([x, y], x * 2.0 + y, linker="c")
f(np.ones(10), np.ones(10))
print(time.perf_counter() - t)
"""

def _empty_cache(code):
    def setup():
        def run():
            with tempfile.TemporaryDirectory() as cache:
                env, root = _env(cache)
                return seconds_printed(code, env, root)
        return run
    return setup


_PT_FIRST_USE = """import time, tempfile, os
t = time.perf_counter()
import numpy as np, pytensor, pytensor.tensor as pt
x, y = pt.dvector("x"), pt.dvector("y")
f = pytensor.function([x, y], x * 2.0 + y)
f(np.ones(10), np.ones(10))
print(time.perf_counter() - t)
"""


def _pt_empty_cache(code):
    def setup():
        def run():
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ)
                flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",") if f]
                env["PYTENSOR_FLAGS"] = ",".join(flags + ["compiledir=" + cache])
                return seconds_printed(code, env)
        return run
    return setup


def _case(name, ours, peer, target, repeat=5):
    from bench.cases import Case

    def setup(linker):
        return ours(), None, None
    return Case(name, setup, self_timed=True, peer=peer, target=target, repeat=repeat)


def cases():
    """The C-layer rows of ``make bench`` (see the module docstring)."""
    return [
        _case("new graph x*c + y (fresh c), linker=c", _fresh_c_ours, _fresh_c_peer, 5 * _MS),
        _case("new random 6-op chain, linker=c", _chain_case("nbgraph"),
              _chain_case("pytensor"), 60 * _MS),
        _case("logreg grad+compile+call, fresh constant", _logreg_ours, _logreg_peer,
              100 * _MS),
        _case("logreg graph, fresh process, cache warm", _logreg_process_ours,
              _logreg_process_peer, 15 * _MS, repeat=3),
        _case("first use, empty cache (fresh process)", _empty_cache(_FIRST_USE),
              _pt_empty_cache(_PT_FIRST_USE), 400 * _MS, repeat=2),
        _case("12-layer MLP + grad, fresh process, empty", _empty_cache(mlp_script(linker="c")),
              _pt_empty_cache(mlp_script("pytensor")), 0.6, repeat=2),
    ]
