"""PyTensor twins of the benchmark cases (used only when PyTensor is installed).

Each function returns a callable doing the same work as the nbgraph side of
the case of the same name in :mod:`bench.cases`, with PyTensor's default
C backend (``linker=cvm``: PyTensor 3 otherwise picks Numba when it is
installed; the issue's anchors are PyTensor's C figures).  Self-timed twins
return their own duration in seconds.
"""

import os
import subprocess
import sys

import numpy as np

from bench.mlp import mlp_code, mlp_script
from bench.process import seconds_printed

# Before PyTensor is first imported (here, and in every subprocess, which
# inherits the environment).
os.environ["PYTENSOR_FLAGS"] = ",".join(
    [f for f in os.environ.get("PYTENSOR_FLAGS", "").split(",") if f] + ["linker=cvm"])

__all__ = ["scalar_add", "new_graph", "elementwise_1", "elementwise_2", "sum_sq_diff",
           "dot_plus_bias", "logreg_grad", "mlp_compile", "mlp_cold_process",
           "warm_cache_process", "import_time"]


def _pt():
    import pytensor
    import pytensor.tensor as pt

    return pytensor, pt


def scalar_add(trust):
    def peer():
        pytensor, pt = _pt()
        x, y = pt.dscalar("x"), pt.dscalar("y")
        f = pytensor.function([x, y], x + y)
        f.trust_input = trust
        a, b = np.array(1.5), np.array(2.5)
        return lambda: f(a, b)
    return peer


def new_graph():
    pytensor, pt = _pt()
    a, b = np.arange(10.0), np.ones(10)
    counter = [0]

    def build_and_run():
        counter[0] += 1
        x, y = pt.dvector("x"), pt.dvector("y")
        f = pytensor.function([x, y], (x * (1000 + counter[0]) + y).sum() * 1.5)
        return f(a, b)
    return build_and_run


def elementwise_1():
    pytensor, pt = _pt()
    x, y, z = pt.dvector("x"), pt.dvector("y"), pt.dvector("z")
    f = pytensor.function([x, y, z], x + y * 2.0 - z)
    rng = np.random.default_rng(0)
    a, b, c = rng.random(10 ** 7), rng.random(10 ** 7), rng.random(10 ** 7)
    return lambda: f(a, b, c)


def elementwise_2():
    pytensor, pt = _pt()
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], pt.exp(-x ** 2 / 2) * pt.sin(y) + x * y)
    rng = np.random.default_rng(0)
    a, b = rng.random(10 ** 6), rng.random(10 ** 6)
    return lambda: f(a, b)


def sum_sq_diff():
    pytensor, pt = _pt()
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], ((x - y) ** 2).sum())
    rng = np.random.default_rng(0)
    a, b = rng.random(10 ** 7), rng.random(10 ** 7)
    return lambda: f(a, b)


def dot_plus_bias():
    pytensor, pt = _pt()
    A, B, bias = pt.dmatrix("A"), pt.dmatrix("B"), pt.dvector("b")
    f = pytensor.function([A, B, bias], pt.dot(A, B) + bias)
    rng = np.random.default_rng(0)
    a, b, c = rng.random((500, 500)), rng.random((500, 500)), rng.random(500)
    return lambda: f(a, b, c)


def logreg_grad():
    pytensor, pt = _pt()
    X, w = pt.dmatrix("X"), pt.dvector("w")
    cost = pt.sum(pt.log1p(pt.exp(-pt.dot(X, w))))
    f = pytensor.function([X, w], pytensor.grad(cost, w))
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1
    return lambda: f(xv, wv)


def mlp_compile():
    """function() of the MLP (:mod:`bench.mlp`) with PyTensor's compile cache warm
    (built once first)."""
    pytensor, pt = _pt()
    code = mlp_code(None)
    names = {"np": np, "nt": pt, "FUNCTION": pytensor.function, "SHARED": pytensor.shared,
             "GRAD": pytensor.grad}

    def build():
        exec(code, dict(names))
    build()
    return build


def mlp_cold_process():
    """The MLP's function() in a fresh interpreter with an empty compile directory."""
    code = mlp_script("pytensor", time_imports=False, then="")

    def run():
        import tempfile

        with tempfile.TemporaryDirectory() as cdir:
            flags = os.environ.get("PYTENSOR_FLAGS", "")
            env = dict(os.environ, PYTENSOR_FLAGS=(flags + "," if flags else "")
                       + "base_compiledir=" + cdir)
            return seconds_printed(code, env)
    return run


def warm_cache_process():
    setup = "import numpy as np, pytensor, pytensor.tensor as pt\n"
    body = ("x, y = pt.dvector('x'), pt.dvector('y')\n"
            "f = pytensor.function([x, y], pt.exp(-x ** 2 / 2) * pt.sin(y) + x * y)\n"
            "f(np.ones(10), np.ones(10))\n")
    timed = setup + "import time\nt = time.perf_counter()\n" + body + \
        "print(time.perf_counter() - t)\n"
    subprocess.run([sys.executable, "-c", setup + body], check=True, env=dict(os.environ),
                   capture_output=True)

    return lambda: seconds_printed(timed)


def _import_case(module):
    code = ("import time; t = time.perf_counter(); import %s; print(time.perf_counter() - t)"
            % module)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return lambda: seconds_printed(code)


def import_time():
    return _import_case("pytensor")


def import_tensor_time():
    return _import_case("pytensor.tensor")
