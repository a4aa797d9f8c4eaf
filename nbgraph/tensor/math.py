"""The functional tensor API: elementwise functions, reductions, products.

Each elementwise function is an :class:`~nbgraph.tensor.elemwise.Elemwise`
Op instance, so it can be called (``exp(x)``) or used to build Apply nodes
directly (``Apply(add, [x, y], [out])``), as the seed's long example does.

>>> from nbgraph.tensor.constructors import dvector
>>> x = dvector("x")
>>> sum(exp(x) * 2, keepdims=True).type
TensorType(float64, (1,))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nbgraph.tensor import scalar as ps
from nbgraph.tensor.basic import dot, shape_i
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.reduction import Reduce, normalize_axis
from nbgraph.tensor.type import CONTINUOUS_DTYPES, normalize_dtype
from nbgraph.tensor.variable import as_tensor_variable

if TYPE_CHECKING:
    from nbgraph.tensor.op_args import Axes, DTypeLike, TensorLike
    from nbgraph.tensor.variable import AnyTensor, TensorVariable

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


def sqr(x: TensorLike) -> TensorVariable:
    """``x * x`` (NumPy's ``square``: a bool squares to int8, not to a logical and)."""
    x = as_tensor_variable(x)
    if x.dtype == "bool":
        return Elemwise(ps.sqr)(x)
    return mul(x, x)


def cast(x: TensorLike, dtype: DTypeLike) -> AnyTensor:
    """``x`` converted to ``dtype`` (NumPy ``astype`` semantics); ``x`` itself if equal."""
    x = as_tensor_variable(x)
    dtype = normalize_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Elemwise(ps.Cast(dtype))(x)


def _keep(out: TensorVariable, axis: Sequence[int], ndim: int,
          keepdims: bool) -> TensorVariable:
    if not keepdims:
        return out
    pattern: list[int | str] = []
    j = 0
    for i in range(ndim):
        if i in axis:
            pattern.append("x")
        else:
            pattern.append(j)
            j += 1
    return out.dimshuffle(*pattern)


def _reduce(kind: str, x: TensorLike, axis: Axes | None, keepdims: bool) -> TensorVariable:
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    return _keep(Reduce(kind, axes)(x), axes, x.ndim, keepdims)


def _reduce_in(kind: str, x: TensorLike, axis: Axes | None, keepdims: bool, dtype: DTypeLike,
               acc_dtype: DTypeLike) -> AnyTensor:
    """``kind`` reduction accumulated in ``acc_dtype`` and given as ``dtype``.

    NumPy's ``dtype=`` both accumulates and returns in that dtype; Theano's
    ``acc_dtype=`` sets the accumulator alone.  Unset, both follow NumPy's
    default for the input (integers accumulate in 64 bits).
    """
    x = as_tensor_variable(x)
    if dtype is None and acc_dtype is None:
        return _reduce(kind, x, axis, keepdims)
    if dtype is None:  # NumPy's result dtype for this input, whatever the accumulator
        ufunc = np.add if kind == "sum" else np.multiply
        dtype = str(ufunc.reduce(np.zeros(1, dtype=x.dtype)).dtype)
    dtype = normalize_dtype(dtype, "%s(dtype=...)" % kind)
    acc = dtype if acc_dtype is None else normalize_dtype(acc_dtype, "%s(acc_dtype=...)" % kind)
    if acc is not None and dtype is not None and not np.can_cast(dtype, acc, "same_kind"):
        raise TypeError("%s: acc_dtype %s cannot accumulate values of dtype %s" % (
            kind, acc, dtype))
    out: AnyTensor = _reduce(kind, cast(x, acc) if acc is not None and acc != x.dtype else x,
                  axis, keepdims)
    if dtype is not None and out.dtype != dtype:
        out = cast(out, dtype)
    return out


def sum(x: TensorLike, axis: Axes | None = None, keepdims: bool = False,
        dtype: DTypeLike = None, acc_dtype: DTypeLike = None) -> AnyTensor:
    """Sum over ``axis`` (None: all); integer sums accumulate like NumPy's.

    ``dtype``: accumulate and return in that dtype (NumPy's meaning);
    ``acc_dtype``: accumulate in that dtype only (Theano's).
    """
    return _reduce_in("sum", x, axis, keepdims, dtype, acc_dtype)


def prod(x: TensorLike, axis: Axes | None = None, keepdims: bool = False,
         dtype: DTypeLike = None, acc_dtype: DTypeLike = None,
         no_zeros_in_input: bool = False) -> AnyTensor:
    """Product over ``axis`` (``dtype``/``acc_dtype`` as for :func:`sum`).

    ``no_zeros_in_input`` is accepted for Theano's programs; the gradient is
    exact with zeros either way, so it changes nothing.
    """
    return _reduce_in("prod", x, axis, keepdims, dtype, acc_dtype)


def max(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """Maximum over ``axis`` (NaN propagates)."""
    return _reduce("max", x, axis, keepdims)


def min(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """Minimum over ``axis`` (NaN propagates)."""
    return _reduce("min", x, axis, keepdims)


def mean(x: TensorLike, axis: Axes | None = None, keepdims: bool = False,
         dtype: DTypeLike = None, acc_dtype: DTypeLike = None) -> AnyTensor:
    """Mean over ``axis``: float inputs keep their dtype, integers give float64.

    ``dtype`` (a float dtype) computes and returns the mean in it, as NumPy;
    ``acc_dtype`` sets the dtype the sum accumulates in.
    """
    x = as_tensor_variable(x)
    if x.dtype == "float16" and dtype is None and acc_dtype is None:
        # NumPy's float16 mean: summed and divided in float32, then rounded
        return cast(mean(cast(x, "float32"), axis, keepdims), "float16")
    if dtype is not None:
        dtype = normalize_dtype(dtype, "mean(dtype=...)")
        if dtype not in CONTINUOUS_DTYPES:
            raise TypeError("mean(dtype=%s): the mean needs a float dtype" % dtype)
        x = cast(x, dtype) if x.dtype != dtype else x
    axes = normalize_axis(axis, x.ndim)
    total = sum(x, axis=axes, keepdims=keepdims, acc_dtype=acc_dtype,
                dtype=dtype if acc_dtype is not None else None)
    sizes = [x.type.shape[a] for a in axes]
    known = [s for s in sizes if s is not None]
    count: int | AnyTensor | None
    if len(known) == len(sizes):
        count = int(np.prod(known, dtype=np.int64))
    else:
        count = shape_i(x, axes[0])  # some size is unknown: there is an axis
        for a in axes[1:]:
            count = mul(count, shape_i(x, a))
        if total.dtype in CONTINUOUS_DTYPES:
            count = cast(count, total.dtype)
    return true_div(total, count)


def outer(x: TensorLike, y: TensorLike) -> TensorVariable:
    """Outer product of two vectors."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.ndim != 1 or y.ndim != 1:
        raise TypeError("outer needs two vectors, got %d-d %r and %d-d %r" % (
            x.ndim, x, y.ndim, y))
    return mul(x.dimshuffle(0, "x"), y.dimshuffle("x", 0))

