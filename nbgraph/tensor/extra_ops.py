"""Reductions with indices and scans: argmax/argmin, max_and_argmax, all/any, var/std,
cumsum/cumprod, diff and norm, with NumPy's dtypes and values.

>>> from nbgraph.tensor.variable import TensorType
>>> x = TensorType("int8", (2, 3))("x")
>>> argmax(x, axis=1).type, any(x).type, cumsum(x).type, var(x, axis=0).type
(TensorType(int64, (2,)), TensorType(bool, ()), TensorType(int64, (6,)), TensorType(float64, (3,)))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import Axes, TensorLike
    from nbgraph.tensor.variable import TensorVariable

import builtins

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.op_args import normalize_axis_index, normalize_axis_tuple, tensor_arg
from nbgraph.tensor.c_code.extra_ops import BoolReduceC
from nbgraph.tensor.c_code.nnet import ArgReduceC, MaxAndArgmaxC
from nbgraph.tensor.reduction import linear_scan
from nbgraph.tensor.type import DISCRETE_DTYPES, FLOAT_DTYPES, TensorType
from nbgraph.tensor.grad_rules import is_discrete, zero_gradient

__all__ = [
    "ArgReduce", "argmax", "argmin", "MaxAndArgmax", "max_and_argmax", "BoolReduce", "all",
    "any", "var", "std", "CumOp", "CumprodGrad", "cumsum", "cumprod", "diff", "norm",
]


def _axes(axis, ndim, where):
    """None or an int/tuple as a sorted tuple of distinct axes (all axes for None)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim, where)))


def _keep(out, axes, ndim, keepdims):
    if not keepdims:
        return out
    kept = iter(range(out.ndim))
    return out.dimshuffle(*["x" if i in axes else next(kept) for i in range(ndim)])


def _moved_flat(x, axes):
    """``x`` with ``axes`` moved last and merged into one (NumPy value)."""
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, rest + list(axes))
    merged = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))  # (-1 fails on 0-size)
    return moved.reshape(moved.shape[:len(rest)] + (merged,))


def _reduced_shape(x, axes):
    return tuple(s for i, s in enumerate(x.type.shape) if i not in axes)


def _refuse_static_empty(x, axes, where):
    for a in axes:
        if x.type.shape[a] == 0:
            raise ValueError("%s: attempt to get %s of an empty sequence (axis %d of %r has "
                             "size 0)" % (where, where, a, x))


class ArgReduce(ArgReduceC, Op):
    """Index of the largest (``kind="argmax"``) or smallest value over ``axis``.

    Several axes count as one, flattened in order (Theano's rule; NumPy takes
    one axis or None).  Ties and NaN give the first, as NumPy.
    """

    __props__ = ("kind", "axis")

    def __init__(self, kind, axis):
        if kind not in ("argmax", "argmin"):
            raise ValueError("ArgReduce kind must be 'argmax' or 'argmin', got %r" % (kind,))
        self.kind = kind
        self.axis = tuple(axis)

    def __str__(self):
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))

    def make_node(self, x):
        x = tensor_arg(x, self.kind, "a")
        axes = _axes(self.axis, x.ndim, self.kind)
        if axes != self.axis:
            return ArgReduce(self.kind, axes).make_node(x)
        _refuse_static_empty(x, axes, self.kind)
        return Apply(self, [x], [TensorType("int64", _reduced_shape(x, axes))()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        func = np.argmax if self.kind == "argmax" else np.argmin
        try:
            out = func(_moved_flat(x, self.axis), axis=-1)
        except ValueError as exc:
            raise ValueError("%s of an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = np.asarray(out, dtype=np.int64)

    def infer_shape(self, node, input_shapes):
        return [tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)]

    def grad(self, inputs, output_grads):
        return [zero_gradient(inputs[0])]  # piecewise constant


def argmax(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """Indices of the maxima over ``axis`` (None: of the flattened array), as int64."""
    x = tensor_arg(x, "argmax", "a")
    axes = _axes(axis, x.ndim, "argmax")
    return _keep(ArgReduce("argmax", axes)(x), axes, x.ndim, keepdims)


def argmin(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """Indices of the minima over ``axis`` (None: of the flattened array), as int64."""
    x = tensor_arg(x, "argmin", "a")
    axes = _axes(axis, x.ndim, "argmin")
    return _keep(ArgReduce("argmin", axes)(x), axes, x.ndim, keepdims)


class MaxAndArgmax(MaxAndArgmaxC, Op):
    """The maximum over ``axis`` and its index, in one pass (two outputs)."""

    __props__ = ("axis",)

    def __init__(self, axis):
        self.axis = tuple(axis)

    def __str__(self):
        return "MaxAndArgmax{axis=%s}" % ",".join(map(str, self.axis))

    def make_node(self, x):
        x = tensor_arg(x, "max_and_argmax", "a")
        axes = _axes(self.axis, x.ndim, "max_and_argmax")
        if axes != self.axis:
            return MaxAndArgmax(axes).make_node(x)
        _refuse_static_empty(x, axes, "max_and_argmax")
        shape = _reduced_shape(x, axes)
        return Apply(self, [x], [TensorType(x.dtype, shape)(), TensorType("int64", shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        flat = _moved_flat(x, self.axis)
        try:
            index = np.argmax(flat, axis=-1)
        except ValueError as exc:
            raise ValueError("%s of an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = np.asarray(np.max(flat, axis=-1), dtype=x.dtype)
        output_storage[1][0] = np.asarray(index, dtype=np.int64)

    def infer_shape(self, node, input_shapes):
        shape = tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)
        return [shape, shape]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor import math as tm

        (x,) = inputs
        if is_discrete(x):
            return [zero_gradient(x)]
        g_max = output_grads[0]
        expand = lambda v: _keep(v, self.axis, x.ndim, True)  # noqa: E731
        g = expand(g_max) * tm.cast(tm.eq(x, expand(self(x)[0])), x.dtype)
        return [tm.cast(g, x.dtype)]


def max_and_argmax(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> list:
    """``[max(x, axis), argmax(x, axis)]`` computed together."""
    x = tensor_arg(x, "max_and_argmax", "a")
    axes = _axes(axis, x.ndim, "max_and_argmax")
    out_max, out_arg = MaxAndArgmax(axes)(x)
    return [_keep(out_max, axes, x.ndim, keepdims), _keep(out_arg, axes, x.ndim, keepdims)]


class BoolReduce(BoolReduceC, Op):
    """``np.all`` (``kind="all"``) or ``np.any`` over ``axis``, as bool (NaN counts as true)."""

    __props__ = ("kind", "axis")

    def __init__(self, kind, axis):
        if kind not in ("all", "any"):
            raise ValueError("BoolReduce kind must be 'all' or 'any', got %r" % (kind,))
        self.kind = kind
        self.axis = tuple(axis)

    def __str__(self):
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))

    def make_node(self, x):
        x = tensor_arg(x, self.kind, "a")
        axes = _axes(self.axis, x.ndim, self.kind)
        if axes != self.axis:
            return BoolReduce(self.kind, axes).make_node(x)
        return Apply(self, [x], [TensorType("bool", _reduced_shape(x, axes))()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        func = np.all if self.kind == "all" else np.any
        output_storage[0][0] = np.asarray(func(x, axis=self.axis))

    def infer_shape(self, node, input_shapes):
        return [tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)]

    def grad(self, inputs, output_grads):
        return [zero_gradient(inputs[0])]  # piecewise constant


def all(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """True where every element over ``axis`` is nonzero."""
    x = tensor_arg(x, "all", "a")
    axes = _axes(axis, x.ndim, "all")
    return _keep(BoolReduce("all", axes)(x), axes, x.ndim, keepdims)


def any(x: TensorLike, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
    """True where some element over ``axis`` is nonzero."""
    x = tensor_arg(x, "any", "a")
    axes = _axes(axis, x.ndim, "any")
    return _keep(BoolReduce("any", axes)(x), axes, x.ndim, keepdims)


def _count(x, axes):
    """The number of elements over ``axes``: a Python int when static, else int64 scalar."""
    from nbgraph.tensor.basic import shape_i

    sizes = [x.type.shape[a] for a in axes]
    if None not in sizes:
        return int(np.prod(sizes, dtype=np.int64))
    count = None
    for a in axes:
        count = shape_i(x, a) if count is None else count * shape_i(x, a)
    return count


def var(x: TensorLike, axis: Axes | None = None, ddof: int = 0, keepdims: bool = False,
        corrected: bool = False) -> TensorVariable:
    """Variance over ``axis`` (``np.var``): the mean squared deviation, divided by
    ``N - ddof`` instead of ``N``.  ``corrected`` is Theano's ``ddof=1``."""
    from nbgraph.tensor import math as tm

    x = tensor_arg(x, "var", "a")
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)):
        raise TypeError("var: ddof must be an int, got %r" % (ddof,))
    if corrected:
        ddof = 1
    axes = _axes(axis, x.ndim, "var")
    if x.dtype in DISCRETE_DTYPES:
        x = tm.cast(x, "float64")  # NumPy sums integers as float64 elements, not exactly
    centered = x - tm.mean(x, axis=axes, keepdims=True)
    total = tm.sum(centered * centered, axis=axes, keepdims=keepdims)
    count = _count(x, axes)
    if isinstance(count, int):
        return total / builtins.max(count - int(ddof), 0)
    return total / tm.cast(tm.maximum(count - int(ddof), 0), total.dtype)


def std(x: TensorLike, axis: Axes | None = None, ddof: int = 0, keepdims: bool = False,
        corrected: bool = False) -> TensorVariable:
    """Standard deviation over ``axis``: ``sqrt(var(...))`` (``np.std``)."""
    from nbgraph.tensor import math as tm

    x = tensor_arg(x, "std", "a")
    return tm.sqrt(var(x, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected))


class CumOp(Op):
    """``np.cumsum`` / ``np.cumprod`` along ``axis`` (None: the flattened array).

    Small integers and bool accumulate in int64/uint64, as NumPy does.
    """

    __props__ = ("mode", "axis")

    def __init__(self, mode, axis=None):
        if mode not in ("add", "mul"):
            raise ValueError("CumOp mode must be 'add' or 'mul', got %r" % (mode,))
        self.mode = mode
        self.axis = None if axis is None else int(axis)

    def __str__(self):
        name = "Cumsum" if self.mode == "add" else "Cumprod"
        return "%s{axis=%s}" % (name, "None" if self.axis is None else self.axis)

    def make_node(self, x):
        where = "cumsum" if self.mode == "add" else "cumprod"
        x = tensor_arg(x, where, "a")
        if self.axis is None:
            n = None if None in x.type.shape else int(np.prod(x.type.shape, dtype=np.int64))
            shape = (n,)
        else:
            if not 0 <= self.axis < x.ndim:
                raise np.exceptions.AxisError("%s: axis %d is out of bounds for %r" % (
                    where, self.axis, x))
            shape = x.type.shape
        func = np.cumsum if self.mode == "add" else np.cumprod
        dtype = func(np.zeros(1, dtype=x.dtype)).dtype
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        func = np.cumsum if self.mode == "add" else np.cumprod
        output_storage[0][0] = func(x, axis=self.axis, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import shape_product

        if self.axis is None:
            return [(shape_product(list(input_shapes[0])),)]
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.math import cast
        from nbgraph.tensor.shape_ops import flatten

        (x,) = inputs
        if is_discrete(x):
            return [zero_gradient(x)]
        gz = output_grads[0]
        target = flatten(x) if self.axis is None else x
        axis = 0 if self.axis is None else self.axis
        if self.mode == "add":
            g = _flip(CumOp("add", axis)(_flip(gz, axis)), axis)
        else:
            g = CumprodGrad(axis)(target, gz)
        if self.axis is None:
            g = g.reshape(x.shape, ndim=x.ndim)
        return [cast(g, x.dtype)]


def _flip(x, axis):
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, -1)
    return x[tuple(index)]


class CumprodGrad(Op):
    """The gradient of ``cumprod`` along ``axis``, exact with zeros (nothing is divided).

    For output gradient ``g``: ``dx[j] = P[j-1] * S[j]`` with ``P`` the running
    product before ``j`` and ``S[j] = g[j] + x[j+1] * S[j+1]`` (a reversed
    linear scan).  It has no gradient of its own.
    """

    __props__ = ("axis",)

    def __init__(self, axis):
        self.axis = int(axis)

    def make_node(self, x, gz):
        x, gz = tensor_arg(x, "cumprod grad", "x"), tensor_arg(gz, "cumprod grad", "gz")
        if x.ndim != gz.ndim:
            raise TypeError("CumprodGrad: gz must have x's %d dimensions, got %r" % (
                x.ndim, gz))
        return Apply(self, [x, gz], [TensorType(gz.dtype, x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, gz = inputs
        dtype = node.outputs[0].type.numpy_dtype
        xs = np.moveaxis(x, self.axis, -1).astype(dtype)
        gs = np.moveaxis(np.broadcast_to(gz, x.shape), self.axis, -1).astype(dtype)
        if xs.shape[-1] == 0:
            output_storage[0][0] = np.zeros(x.shape, dtype=dtype)
            return
        ones = np.ones(xs.shape[:-1] + (1,), dtype=dtype)
        before = np.concatenate([ones, np.cumprod(xs, axis=-1)[..., :-1]], axis=-1)
        # S[j] = g[j] + x[j+1] * S[j+1], run backwards as a forward scan
        a = np.concatenate([np.zeros_like(ones), xs[..., :0:-1]], axis=-1)
        after = linear_scan(a, gs[..., ::-1])[..., ::-1]
        output_storage[0][0] = np.ascontiguousarray(np.moveaxis(before * after, -1, self.axis))

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]


def cumsum(x: TensorLike, axis: int | None = None) -> TensorVariable:
    """Running sums along ``axis`` (None: of the flattened array), as ``np.cumsum``."""
    x = tensor_arg(x, "cumsum", "a")
    return CumOp("add", None if axis is None else normalize_axis_index(axis, x.ndim, "cumsum"))(x)


def cumprod(x: TensorLike, axis: int | None = None) -> TensorVariable:
    """Running products along ``axis`` (None: of the flattened array), as ``np.cumprod``."""
    x = tensor_arg(x, "cumprod", "a")
    return CumOp("mul", None if axis is None else normalize_axis_index(axis, x.ndim,
                                                                       "cumprod"))(x)


def diff(x: TensorLike, n: int = 1, axis: int = -1) -> TensorVariable:
    """``np.diff``: the ``n``-th discrete difference along ``axis`` (bool: ``!=``)."""
    from nbgraph.tensor.math import neq

    x = tensor_arg(x, "diff", "a")
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError("diff: n must be an int, got %r" % (n,))
    if n < 0:
        raise ValueError("diff: order must be non-negative but got %d" % n)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, x.ndim, "diff")
    for _ in range(int(n)):
        head = [slice(None)] * x.ndim
        tail = [slice(None)] * x.ndim
        head[axis], tail[axis] = slice(1, None), slice(None, -1)
        x = neq(x[tuple(head)], x[tuple(tail)]) if x.dtype == "bool" else \
            x[tuple(head)] - x[tuple(tail)]
    return x


def _as_float(x):
    from nbgraph.tensor.math import cast

    return x if x.dtype in FLOAT_DTYPES else cast(x, "float64")


def _vector_norm(x, ord, axis, keepdims):
    from nbgraph.tensor import math as tm

    a = tm.abs(x)
    if ord is None or ord == 2:
        return tm.sqrt(tm.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return tm.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return tm.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return tm.cast(tm.sum(tm.neq(x, 0), axis=axis, keepdims=keepdims), x.dtype)
    if ord == 1:
        return tm.sum(a, axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError("norm: invalid norm order %r for vectors" % (ord,))
    return tm.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    from nbgraph.tensor import math as tm

    row, col = axes
    if ord in (None, "fro", "f"):
        out = tm.sqrt(tm.sum(x * x, axis=axes))
    elif ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        sums = tm.sum(tm.abs(x), axis=summed)
        other = other - 1 if other > summed else other
        out = (tm.max if ord > 0 else tm.min)(sums, axis=other)
    elif ord in (2, -2, "nuc"):
        if x.ndim != 2:
            raise NotImplementedError("norm: ord=%r of a %d-d tensor needs batched singular "
                                      "values; only matrices are supported" % (ord, x.ndim))
        from nbgraph.tensor.linalg_ops import svd

        s = svd(x, compute_uv=False)
        out = tm.sum(s) if ord == "nuc" else (tm.max if ord == 2 else tm.min)(s)
    else:
        raise ValueError("norm: invalid norm order %r for matrices" % (ord,))
    return _keep(out, tuple(sorted(axes)), x.ndim, keepdims)


def norm(x: TensorLike, ord: float | str | None = None, axis: Axes | None = None,
         keepdims: bool = False) -> TensorVariable:
    """``np.linalg.norm``: vector norms (orders None/2, 1, inf, -inf, 0, any p) over one
    axis, matrix norms ('fro', 1, -1, inf, -inf; 2, -2 and 'nuc' of a matrix through its
    singular values) over two; integers compute in float64."""
    x = _as_float(tensor_arg(x, "norm", "x"))
    if axis is None:
        if ord is None:
            return _keep(_vector_norm(x, None, tuple(range(x.ndim)), False),
                         tuple(range(x.ndim)), x.ndim, keepdims)
        if x.ndim not in (1, 2):
            raise ValueError("norm: improper number of dimensions to norm (%d) for ord=%r" % (
                x.ndim, ord))
        axis = tuple(range(x.ndim))
    axes = normalize_axis_tuple(axis, x.ndim, "norm")
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("norm: improper number of dimensions to norm (%d axes)" % len(axes))
