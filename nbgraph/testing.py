"""Checking helpers: verify_grad compares symbolic gradients with finite differences.

>>> import numpy as np
>>> import nbgraph.tensor as nt
>>> verify_grad(lambda x: nt.exp(x) * 2, [np.array([0.1, -0.3])])
"""

import numpy as np

from nbgraph.core.gradient import grad
from nbgraph.linkers.function import function

__all__ = ["verify_grad", "GradientError", "numeric_grad"]


class GradientError(AssertionError):
    """The symbolic and the finite-difference gradients disagree."""

    def __init__(self, arg, analytic, numeric, abs_err, rel_err):
        self.arg = arg
        self.analytic = analytic
        self.numeric = numeric
        super().__init__(
            "gradient mismatch for argument %d: max abs error %.3g, max rel error %.3g\n"
            "symbolic:\n%s\nfinite differences:\n%s" % (arg, abs_err, rel_err, analytic,
                                                         numeric))


def numeric_grad(f, values, eps):
    """Central finite-difference gradient of the scalar ``f(*values)`` for each value."""
    grads = []
    for v in values:
        g = np.zeros_like(v, dtype="float64")
        flat = v.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            up = float(f(*values))
            flat[j] = old - eps
            down = float(f(*values))
            flat[j] = old
            g.reshape(-1)[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def verify_grad(fun, pt, rng=None, eps=None, abs_tol=None, rel_tol=None, linker=None):
    """Check ``grad`` of ``fun`` at the point ``pt`` against finite differences.

    ``fun`` maps symbolic tensors (one per array in ``pt``) to a symbolic
    output; the cost checked is ``sum(output * R)`` for a fixed random
    projection R, so every output element matters.  Raises
    :class:`GradientError` naming the argument that disagrees.
    """
    from nbgraph.tensor import math as tm
    from nbgraph.tensor.type import TensorType
    from nbgraph.tensor.variable import as_tensor_variable, constant

    rng = np.random.default_rng(42) if rng is None else rng
    pt = [np.array(p, dtype=p.dtype if hasattr(p, "dtype") else "float64", copy=True)
          for p in pt]
    for i, p in enumerate(pt):
        if p.dtype.kind != "f":
            raise TypeError("verify_grad: point %d has dtype %s; use floats" % (i, p.dtype))
    dtype = np.result_type(*pt)
    if eps is None:
        eps = 1e-7 if dtype == np.float64 else 3e-3
    if abs_tol is None:
        abs_tol = 1e-4 if dtype == np.float64 else 1e-2
    if rel_tol is None:
        rel_tol = 1e-4 if dtype == np.float64 else 1e-2
    inputs = [TensorType(p.dtype, (None,) * p.ndim)("arg%d" % i) for i, p in enumerate(pt)]
    out = as_tensor_variable(fun(*inputs))
    out_shape = np.shape(function(inputs, out, linker=linker)(*pt))
    projection = constant(rng.uniform(0.5, 1.5, size=out_shape).astype(out.dtype))
    cost = tm.sum(out * projection)
    # A gradient may not depend on every input (the gradient of x * 2 is
    # constant): that is a valid point to check, not an unused-input mistake.
    cost_fn = function(inputs, cost, linker=linker, on_unused_input="ignore")
    grad_fn = function(inputs, grad(cost, inputs), linker=linker, on_unused_input="ignore")
    analytic = grad_fn(*pt)
    numeric = numeric_grad(cost_fn, pt, eps)
    for i, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        a = np.asarray(a, dtype="float64")
        abs_err = np.abs(a - n)
        rel_err = abs_err / np.maximum(np.abs(a) + np.abs(n), 1e-8)
        if not np.all((abs_err <= abs_tol) | (rel_err <= rel_tol)):
            raise GradientError(i, a, n, float(abs_err.max()), float(rel_err.max()))



from nbgraph.graph_generator import (  # noqa: E402  (the random-graph generator)
    GRAPH_OPS, ELEMENTWISE_OPS, INPUT_SPECS, GraphOp, RandomGraph, numpy_inputs, random_graph,
)

__all__ += ["random_graph", "RandomGraph", "GraphOp", "GRAPH_OPS", "ELEMENTWISE_OPS",
            "INPUT_SPECS", "numpy_inputs"]

from nbgraph.testing_threads import run_in_threads  # noqa: E402  (threads at once)

__all__ += ["run_in_threads"]

from nbgraph.testing_processes import (  # noqa: E402  (fresh processes per thread count)
    assert_thread_count_independent, thread_count_outputs,
)

__all__ += ["assert_thread_count_independent", "thread_count_outputs"]
