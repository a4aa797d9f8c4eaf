"""Jacobians and Hessians of tensor expressions.

:func:`jacobian` stacks, for every element of ``expression``, the gradient of
that element with respect to ``wrt``; :func:`hessian` is the Jacobian of the
gradient.  Two ways to build the rows:

``method="unroll"``
    one reverse pass per element of ``expression`` (whose size must then be
    known at build time), stacked; the forward part they share is computed
    once (the merge rewrite folds the copies).  Vectorised: no loop runs.
``method="scan"``
    a :func:`nbgraph.tensor.scan.scan` over the element index whose step
    computes one row: for expressions whose size is only known at run time.
``method="vectorize"``
    one reverse pass for all rows at once: the vector-Jacobian product
    ``Lop(expression, wrt, u)`` with the stand-in ``u`` replaced by the
    identity matrix through :func:`nbgraph.tensor.vectorize.vectorize_graph`
    (elementwise work broadcasts, matrix products become ``matmul``; an Op with
    no batched form runs once per row).  Any size, no loop over the graph.
``method="auto"`` (the default)
    unroll when the size is static and at most :data:`UNROLL_LIMIT`, scan
    otherwise.

>>> import numpy as np, nbgraph as ng, nbgraph.tensor as nt
>>> x = nt.tensor("float64", (2,), "x")
>>> J = jacobian(x ** 2, x)
>>> ng.function([x], J, linker="py")(np.array([1.0, 3.0]))
array([[2., 0.],
       [0., 6.]])
"""

from collections.abc import Sequence

import numpy as np

from nbgraph.core.gradient import grad
from nbgraph.core.graph import Variable
from nbgraph.tensor.basic import specify_shape, stack
from nbgraph.tensor.variable import as_tensor_variable

__all__ = ["jacobian", "hessian", "UNROLL_LIMIT"]

#: "auto" unrolls Jacobians of at most this many rows.
UNROLL_LIMIT = 256

Wrt = Variable | Sequence[Variable]


def _wrt_list(wrt):
    if isinstance(wrt, Variable):
        return [wrt], True
    if isinstance(wrt, (list, tuple)):
        return list(wrt), False
    raise TypeError("wrt must be a Variable or a list of Variables, got %r" % (wrt,))


def _row_count(expression):
    shape = expression.type.shape
    if None in shape:
        return None
    return int(np.prod(shape, dtype=np.int64))


def jacobian(expression, wrt: Wrt, consider_constant=None, disconnected_inputs="raise",
             method="auto") -> Variable | list[Variable]:
    """d(expression)/d(wrt): shape ``expression.shape + wrt.shape`` (one per ``wrt``).

    ``expression`` may have any number of dimensions (a scalar gives the
    gradient); ``wrt`` is a Variable or a list (the result follows).
    ``consider_constant`` and ``disconnected_inputs`` are passed to
    :func:`~nbgraph.core.gradient.grad`; ``method`` is "auto", "unroll" or
    "scan" (see the module doc).
    """
    if method not in ("auto", "unroll", "scan", "vectorize"):
        raise ValueError("jacobian: method must be 'auto', 'unroll', 'scan' or 'vectorize', "
                         "got %r" % (method,))
    expression = as_tensor_variable(expression)
    xs, single = _wrt_list(wrt)
    if expression.ndim == 0:
        out = grad(expression, xs, consider_constant=consider_constant,
                   disconnected_inputs=disconnected_inputs)
        return out[0] if single else out
    n = _row_count(expression)
    if method == "auto":
        method = "unroll" if n is not None and n <= UNROLL_LIMIT else "scan"
    if method == "unroll":
        if n is None:
            raise ValueError("jacobian(method='unroll') needs an expression of static shape; "
                             "%r has shape %s (use method='scan')" % (
                                 expression, expression.type.shape))
        rows = _unrolled_rows(expression, xs, n, consider_constant, disconnected_inputs)
    elif method == "vectorize":
        rows = _vectorized_rows(expression, xs, consider_constant, disconnected_inputs)
    else:
        rows = _scan_rows(expression, xs, consider_constant, disconnected_inputs)
    results = []
    for x, r in zip(xs, rows, strict=True):
        if expression.ndim != 1:
            shape = tuple(expression.type.shape) + tuple(x.shape[i] for i in range(x.ndim))
            r = r.reshape(shape)
        results.append(r)
    return results[0] if single else results


def _unrolled_rows(expression, xs, n, consider_constant, disconnected_inputs):
    flat = expression.reshape((n,)) if expression.ndim != 1 else expression
    per_row = [grad(flat[i], xs, consider_constant=consider_constant,
                    disconnected_inputs=disconnected_inputs) for i in range(n)]
    if n == 0:
        raise ValueError("jacobian: the expression %r has no elements" % (expression,))
    return [stack([row[k] for row in per_row]) for k in range(len(xs))]


def _vectorized_rows(expression, xs, consider_constant, disconnected_inputs):
    from nbgraph.core.gradient import Lop
    from nbgraph.core.graph import ancestors
    from nbgraph.tensor.basic import alloc
    from nbgraph.tensor.creation import eye
    from nbgraph.tensor.vectorize import vectorize_graph

    flat = expression.flatten() if expression.ndim != 1 else expression
    u = flat.type(name="u")
    vjps = Lop(flat, xs, u, consider_constant=consider_constant,
               disconnected_inputs=disconnected_inputs)
    n = flat.shape[0]
    identity = eye(n, dtype=flat.dtype)
    rows = []
    for x, g in zip(xs, vjps, strict=True):
        if u in set(ancestors([g])):
            rows.append(vectorize_graph(g, {u: identity}))
        else:  # no row depends on u: g is the zero gradient, the same for every row
            rows.append(alloc(g, n, *[x.shape[i] for i in range(x.ndim)]))
    return rows


def _scan_rows(expression, xs, consider_constant, disconnected_inputs):
    from nbgraph.tensor.scan import scan
    from nbgraph.tensor.variable import constant

    flat = expression.flatten() if expression.ndim != 1 else expression

    def row(previous, flat, *wrt):
        i = previous + 1  # the element this step differentiates
        grads = grad(flat[i], list(wrt), consider_constant=consider_constant,
                     disconnected_inputs=disconnected_inputs)
        return list(grads) + [i]

    outputs, _ = scan(row, outputs_info=[None] * len(xs) + [constant(np.int64(-1))],
                      non_sequences=[flat] + xs, n_steps=flat.shape[0], return_list=True)
    return list(outputs[:len(xs)])


def hessian(cost, wrt: Wrt, consider_constant=None, disconnected_inputs="raise",
            method="auto") -> Variable | list[Variable]:
    """The matrix of second derivatives of the scalar ``cost`` for each vector in ``wrt``.

    For each ``x`` (a vector): ``jacobian(grad(cost, x), x)``, shape ``(n, n)``.
    """
    cost = as_tensor_variable(cost)
    if cost.ndim != 0:
        raise TypeError("hessian: cost must be a scalar, got %r with %d dimensions" % (
            cost, cost.ndim))
    xs, single = _wrt_list(wrt)
    results = []
    for x in xs:
        if getattr(x, "ndim", None) != 1:
            raise TypeError("hessian: wrt must be vectors, got %r of type %r" % (x, x.type))
        g = grad(cost, x, consider_constant=consider_constant,
                 disconnected_inputs=disconnected_inputs)
        if x.type.shape[0] is not None and g.type.shape[0] is None:
            g = specify_shape(g, x.type.shape)  # keeps the size static for unrolling
        results.append(jacobian(g, x, consider_constant=consider_constant,
                                disconnected_inputs=disconnected_inputs, method=method))
    return results[0] if single else results
