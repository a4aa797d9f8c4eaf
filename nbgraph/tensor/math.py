"""The functional tensor API: elementwise functions, reductions, products.

Each elementwise function is an :class:`~nbgraph.tensor.elemwise.Elemwise`
Op instance, so it can be called (``exp(x)``) or used to build Apply nodes
directly (``Apply(add, [x, y], [out])``), as the seed's long example does.

>>> from nbgraph.tensor.variable import dvector
>>> x = dvector("x")
>>> sum(exp(x) * 2, keepdims=True).type
TensorType(float64, (1,))
"""

import numpy as np

from nbgraph.tensor import scalar as ps
from nbgraph.tensor.basic import dot, shape_i
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.reduction import Reduce, normalize_axis
from nbgraph.tensor.type import FLOAT_DTYPES, normalize_dtype
from nbgraph.tensor.variable import as_tensor_variable

__all__ = [
    "add", "sub", "mul", "true_div", "int_div", "mod", "pow", "neg", "abs", "exp", "log",
    "log1p", "expm1", "sqrt", "sqr", "sin", "cos", "tan", "tanh", "sigmoid", "softplus",
    "maximum", "minimum", "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor", "invert",
    "switch", "where", "cast", "sum", "prod", "mean", "max", "min", "dot", "outer",
]

add = Elemwise(ps.add)
sub = Elemwise(ps.sub)
mul = Elemwise(ps.mul)
true_div = Elemwise(ps.true_div)
int_div = Elemwise(ps.int_div)
mod = Elemwise(ps.mod)
pow = Elemwise(ps.pow)
neg = Elemwise(ps.neg)
abs = Elemwise(ps.abs_)
exp = Elemwise(ps.exp)
log = Elemwise(ps.log)
log1p = Elemwise(ps.log1p)
expm1 = Elemwise(ps.expm1)
sqrt = Elemwise(ps.sqrt)
sin = Elemwise(ps.sin)
cos = Elemwise(ps.cos)
tan = Elemwise(ps.tan)
tanh = Elemwise(ps.tanh)
sigmoid = Elemwise(ps.sigmoid)
softplus = Elemwise(ps.softplus)
maximum = Elemwise(ps.maximum)
minimum = Elemwise(ps.minimum)
lt = Elemwise(ps.lt)
le = Elemwise(ps.le)
gt = Elemwise(ps.gt)
ge = Elemwise(ps.ge)
eq = Elemwise(ps.eq)
neq = Elemwise(ps.neq)
and_ = Elemwise(ps.and_)
or_ = Elemwise(ps.or_)
xor = Elemwise(ps.xor)
invert = Elemwise(ps.invert)
switch = Elemwise(ps.switch)
where = switch


def sqr(x):
    """``x * x``."""
    return mul(x, x)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (NumPy ``astype`` semantics); ``x`` itself if equal."""
    x = as_tensor_variable(x)
    dtype = normalize_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Elemwise(ps.Cast(dtype))(x)


def _keep(out, axis, ndim, keepdims):
    if not keepdims:
        return out
    pattern = []
    j = 0
    for i in range(ndim):
        if i in axis:
            pattern.append("x")
        else:
            pattern.append(j)
            j += 1
    return out.dimshuffle(*pattern)


def _reduce(kind, x, axis, keepdims):
    x = as_tensor_variable(x)
    axis = normalize_axis(axis, x.ndim)
    return _keep(Reduce(kind, axis)(x), axis, x.ndim, keepdims)


def sum(x, axis=None, keepdims=False):
    """Sum over ``axis`` (None: all); integer sums accumulate like NumPy's."""
    return _reduce("sum", x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    """Product over ``axis``."""
    return _reduce("prod", x, axis, keepdims)


def max(x, axis=None, keepdims=False):
    """Maximum over ``axis`` (NaN propagates)."""
    return _reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims=False):
    """Minimum over ``axis`` (NaN propagates)."""
    return _reduce("min", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean over ``axis``: float inputs keep their dtype, integers give float64."""
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    total = sum(x, axis=axes, keepdims=keepdims)
    sizes = [x.type.shape[a] for a in axes]
    if all(s is not None for s in sizes):
        count = int(np.prod(sizes, dtype=np.int64))
    else:
        count = None
        for a in axes:
            entry = shape_i(x, a)
            count = entry if count is None else mul(count, entry)
        if total.dtype in FLOAT_DTYPES:
            count = cast(count, total.dtype)
    return true_div(total, count)


def outer(x, y):
    """Outer product of two vectors."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.ndim != 1 or y.ndim != 1:
        raise TypeError("outer needs two vectors, got %d-d %r and %d-d %r" % (
            x.ndim, x, y.ndim, y))
    return mul(x.dimshuffle(0, "x"), y.dimshuffle("x", 0))

