"""Shape functions: flatten, squeeze, expand_dims, transpose, swapaxes, moveaxis,
broadcast_to, tile, repeat, split and roll, with NumPy's semantics.

Most are DimShuffle, Reshape, Alloc or basic indexing underneath (so they are
views where NumPy's are, and differentiable); ``Repeat``, ``Split`` and ``Roll``
are Ops of their own.

>>> from nbgraph.tensor.variable import TensorType
>>> x = TensorType("float64", (2, 1, 3))("x")
>>> squeeze(x).type, flatten(x, 2).type, moveaxis(x, 0, -1).type
(TensorType(float64, (2, 3)), TensorType(float64, (2, 3)), TensorType(float64, (1, 3, 2)))
>>> [p.type for p in split(x, 3, axis=2)][0]
TensorType(float64, (2, 1, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import Axes, IntLike, ShapeLike, TensorLike
    from nbgraph.tensor.variable import AnyTensor, TensorVariable

import numpy as np

from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.op_args import (
    as_int_tuple, int_scalar_arg, normalize_axis_index, normalize_axis_tuple, static_int,
    static_value, tensor_arg,
)
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType
from nbgraph.tensor.grad_rules import index_gradient, is_discrete, zero_gradient

__all__ = [
    "flatten", "squeeze", "expand_dims", "transpose", "swapaxes", "moveaxis", "broadcast_to",
    "tile", "Repeat", "repeat", "Split", "split", "Roll", "roll",
]


def flatten(x: TensorLike, ndim: int = 1) -> AnyTensor:
    """``x`` with its last dimensions merged so that ``ndim`` remain (``ndim=1``: all)."""
    from nbgraph.tensor.basic import reshape, shape_i, shape_product

    x = tensor_arg(x, "flatten", "x")
    if isinstance(ndim, (bool, np.bool_)) or not isinstance(ndim, (int, np.integer)):
        raise TypeError("flatten: ndim must be an int, got %r" % (ndim,))
    if not 1 <= ndim <= max(x.ndim, 1):
        raise ValueError("flatten: ndim must be between 1 and %d for %r, got %d" % (
            max(x.ndim, 1), x, ndim))
    # the merged size as a product, not -1: NumPy cannot infer -1 next to a 0-size dim
    sizes = [shape_i(x, i) for i in range(x.ndim)]
    return reshape(x, sizes[:ndim - 1] + [shape_product(sizes[ndim - 1:])])


def squeeze(x: TensorLike, axis: Axes | None = None) -> AnyTensor:
    """``x`` without the size-1 ``axis`` (an int or tuple).

    With ``axis=None`` the dimensions statically known to be of size 1 are
    dropped (a graph cannot know which others will be 1); a given axis whose
    size is unknown is checked when the function runs (ValueError, as NumPy).
    """
    from nbgraph.tensor.basic import specify_shape

    x = tensor_arg(x, "squeeze", "a")
    if axis is None:
        axes = tuple(i for i, s in enumerate(x.type.shape) if s == 1)
    else:
        axes = normalize_axis_tuple(axis, x.ndim, "squeeze")
    for a in axes:
        if x.type.shape[a] not in (None, 1):
            raise ValueError("squeeze: cannot select an axis to squeeze out which has size "
                             "not equal to one (axis %d of %r has size %s)" % (
                                 a, x, x.type.shape[a]))
    if any(x.type.shape[a] is None for a in axes):
        x = specify_shape(x, tuple(1 if i in axes else s for i, s in enumerate(x.type.shape)))
    if not axes:
        return x
    return x.dimshuffle(*[i for i in range(x.ndim) if i not in axes])


def expand_dims(x: TensorLike, axis: Axes) -> TensorVariable:
    """``x`` with new size-1 dimensions at the positions ``axis`` of the result."""
    x = tensor_arg(x, "expand_dims", "a")
    out_ndim = x.ndim + len(as_int_tuple(axis, "expand_dims", "axis"))
    axes = normalize_axis_tuple(axis, out_ndim, "expand_dims")
    dims = iter(range(x.ndim))
    return x.dimshuffle(*["x" if i in axes else next(dims) for i in range(out_ndim)])


def transpose(x: TensorLike, axes: Sequence[int] | None = None) -> TensorVariable:
    """``x`` with its dimensions permuted by ``axes`` (reversed by default)."""
    x = tensor_arg(x, "transpose", "a")
    if axes is None:
        return x.dimshuffle(*reversed(range(x.ndim)))
    axes = normalize_axis_tuple(axes, x.ndim, "transpose", "axes")
    if len(axes) != x.ndim:
        raise ValueError("transpose: axes don't match array: %r has %d dimensions, axes has %d "
                         "entries" % (x, x.ndim, len(axes)))
    return x.dimshuffle(*axes)


def swapaxes(x: TensorLike, axis1: int, axis2: int) -> TensorVariable:
    """``x`` with dimensions ``axis1`` and ``axis2`` exchanged."""
    x = tensor_arg(x, "swapaxes", "a")
    a = normalize_axis_index(axis1, x.ndim, "swapaxes", "axis1")
    b = normalize_axis_index(axis2, x.ndim, "swapaxes", "axis2")
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return x.dimshuffle(*order)


def moveaxis(x: TensorLike, source: Axes, destination: Axes) -> TensorVariable:
    """``x`` with the dimensions ``source`` moved to the positions ``destination``."""
    x = tensor_arg(x, "moveaxis", "a")
    src = normalize_axis_tuple(source, x.ndim, "moveaxis", "source")
    dst = normalize_axis_tuple(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the same "
                         "number of elements")
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return x.dimshuffle(*order)


def broadcast_to(x: TensorLike, shape: ShapeLike) -> AnyTensor:
    """``x`` broadcast to ``shape`` (a new array; NumPy's rules, checked at run time too)."""
    from nbgraph.tensor.basic import alloc, as_shape_entries, specify_shape

    x = tensor_arg(x, "broadcast_to", "array")
    entries = as_shape_entries(shape, "broadcast_to: shape")
    if len(entries) < x.ndim:
        raise ValueError("broadcast_to: input operand has more dimensions than allowed by the "
                         "axis remapping (%r has %d, the shape %d)" % (x, x.ndim, len(entries)))
    for i, e in enumerate(entries):
        s = static_int(e)
        if s is not None and s < 0:
            raise ValueError("broadcast_to: all elements of broadcast shape must be "
                             "non-negative (entry %d is %d)" % (i, s))
    out = alloc(x, *entries)
    lead = len(entries) - x.ndim
    known = tuple(o if o is not None else (s if s not in (None, 1) else None)
                  for o, s in zip(out.type.shape, (None,) * lead + x.type.shape, strict=True))
    return specify_shape(out, known)


def tile(x: TensorLike, reps: ShapeLike | int) -> AnyTensor:
    """``x`` repeated ``reps`` times along each dimension (``np.tile``)."""
    from nbgraph.tensor.basic import alloc, as_shape_entries, reshape, shape_i, shape_product

    x = tensor_arg(x, "tile", "A")
    if isinstance(reps, (int, np.integer, Variable)) and (
            not isinstance(reps, Variable) or cast("AnyTensor", reps).ndim == 0):
        given = as_shape_entries((reps,), "tile: reps")
    else:
        given = as_shape_entries(reps, "tile: reps")
    for i, r in enumerate(given):
        s = static_int(r)
        if s is not None and s < 0:
            raise ValueError("tile: reps entry %d is negative (%d)" % (i, s))
    ndim = max(x.ndim, len(given))
    if x.ndim < ndim:
        x = x.dimshuffle(*(["x"] * (ndim - x.ndim) + list(range(x.ndim))))
    from nbgraph.tensor.basic import constant_shape_entry

    counts = [constant_shape_entry(1)] * (ndim - len(given)) + list(given)
    if all(static_int(r) == 1 for r in counts):
        return x
    interleaved = x.dimshuffle(*[e for i in range(ndim) for e in ("x", i)])
    sizes = [shape_i(x, i) for i in range(ndim)]
    big = alloc(interleaved, *[e for r, s in zip(counts, sizes, strict=True) for e in (r, s)])
    return reshape(big, [shape_product([r, s]) for r, s in zip(counts, sizes, strict=True)])


class Repeat(Op):
    """``np.repeat(x, repeats, axis)``: each element along ``axis`` repeated ``repeats``
    times (a scalar, or one count per element)."""

    __props__ = ("axis",)

    def __init__(self, axis: int) -> None:
        self.axis = int(axis)

    def __str__(self) -> str:
        return "Repeat{axis=%d}" % self.axis

    def make_node(self, x: TensorLike, repeats: TensorLike) -> Apply:
        x = tensor_arg(x, "repeat", "a")
        if isinstance(repeats, (list, tuple)) and len(repeats) == 0:
            repeats = np.zeros(0, dtype=np.int64)  # NumPy reads [] as no integer counts
        repeats = tensor_arg(repeats, "repeat", "repeats")
        if repeats.ndim > 1 or repeats.dtype not in DISCRETE_DTYPES or repeats.dtype == "bool":
            raise TypeError("repeat: repeats must be an integer scalar or vector, got %r of "
                            "type %r" % (repeats, repeats.type))
        if not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError("repeat: axis %d is out of bounds for %r" % (
                self.axis, x))
        n = x.type.shape[self.axis]
        counts = static_value(repeats)
        size = None
        if counts is not None:
            if (counts < 0).any():
                raise ValueError("repeat: repeats may not contain negative values")
            if counts.ndim == 0 or counts.shape[0] == 1:
                size = None if n is None else n * int(counts.reshape(-1)[0])
            else:
                if n is not None and counts.shape[0] != n:
                    raise ValueError("repeat: operands could not be broadcast together: %d "
                                     "counts for an axis of size %d" % (counts.shape[0], n))
                size = int(counts.sum())
        elif repeats.ndim == 1 and n is not None and repeats.type.shape[0] not in (None, 1, n):
            raise ValueError("repeat: %d counts for an axis of size %d" % (
                repeats.type.shape[0], n))
        shape = list(x.type.shape)
        shape[self.axis] = size
        return Apply(self, [x, repeats], [TensorType(x.dtype, tuple(shape))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, repeats = inputs
        output_storage[0][0] = np.repeat(x, repeats, axis=self.axis)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import constant_shape_entry
        from nbgraph.tensor.math import cast, sum as tsum

        shape = list(input_shapes[0])
        repeats = node.inputs[1]
        static = node.outputs[0].type.shape[self.axis]
        if static is not None:
            shape[self.axis] = constant_shape_entry(static)
        elif repeats.ndim == 0 or repeats.type.shape[0] == 1:
            r = repeats if repeats.ndim == 0 else repeats[0]
            shape[self.axis] = shape[self.axis] * cast(r, "int64")
        else:
            shape[self.axis] = cast(tsum(repeats), "int64")
        return [tuple(shape)]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.advanced_indexing import advanced_inc_along_axis
        from nbgraph.tensor.basic import zeros_like
        from nbgraph.tensor.creation import arange

        x, repeats = inputs
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x), index_gradient()]
        # each output element came from one input element: scatter-add back
        source = Repeat(0)(arange(x.shape[self.axis]), repeats)
        gx = advanced_inc_along_axis(zeros_like(x), output_grads[0], source, self.axis)
        return [gx, index_gradient()]


def repeat(x: TensorLike, repeats: TensorLike, axis: int | None = None) -> TensorVariable:
    """``np.repeat``: repeat elements along ``axis`` (None: of the flattened ``x``)."""
    x = tensor_arg(x, "repeat", "a")
    if axis is None:
        return Repeat(0)(flatten(x), repeats)
    return Repeat(normalize_axis_index(axis, x.ndim, "repeat"))(x, repeats)


class Split(Op):
    """``x`` cut along ``axis`` into ``n`` consecutive pieces of the given sizes.

    The pieces are copies: views of one array along an inner axis interleave in
    memory, and outputs of one node must not overlap.

    The sizes must add up to the length of the axis; otherwise a ValueError
    (NumPy's "array split does not result in an equal division" for equal parts).
    """

    __props__ = ("n", "axis")

    def __init__(self, n: int, axis: int) -> None:
        self.n = int(n)
        self.axis = int(axis)

    def __str__(self) -> str:
        return "Split{%d, axis=%d}" % (self.n, self.axis)

    def make_node(self, x, *sizes):
        x = tensor_arg(x, "split", "ary")
        if len(sizes) != self.n:
            raise ValueError("Split: expected %d sizes, got %d" % (self.n, len(sizes)))
        sizes = [int_scalar_arg(s, "split", "size %d" % i) for i, s in enumerate(sizes)]
        static = [static_int(s) for s in sizes]
        n = x.type.shape[self.axis]
        if n is not None and None not in static and sum(static) != n:
            raise ValueError("split: array split does not result in an equal division "
                             "(sizes %s for an axis of size %d)" % (static, n))
        outs = []
        for s in static:
            shape = list(x.type.shape)
            shape[self.axis] = s
            outs.append(TensorType(x.dtype, tuple(shape))())
        return Apply(self, [x] + sizes, outs)

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, *sizes = inputs
        sizes = [int(s) for s in sizes]
        if sum(sizes) != x.shape[self.axis] or min(sizes, default=0) < 0:
            raise ValueError("split: array split does not result in an equal division (sizes "
                             "%s for an axis of size %d)" % (sizes, x.shape[self.axis]))
        start = 0
        for cell, s in zip(output_storage, sizes, strict=True):
            index = [slice(None)] * x.ndim
            index[self.axis] = slice(start, start + s)
            cell[0] = x[tuple(index)].copy()
            start += s

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        out = []
        for s in node.inputs[1:]:
            shape = list(input_shapes[0])
            shape[self.axis] = s
            out.append(tuple(shape))
        return out

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import join
        from nbgraph.tensor.math import cast

        x = inputs[0]
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x)] + [index_gradient() for _ in inputs[1:]]
        g = join(self.axis, *[cast(g, x.dtype) for g in output_grads])
        return [g] + [index_gradient() for _ in inputs[1:]]


def split(x: TensorLike, indices_or_sections: int | Sequence[IntLike],
          axis: int = 0) -> list:
    """``np.split``: ``x`` cut into equal sections (an int) or at the given indices."""
    from nbgraph.tensor.subtensor import getitem

    x = tensor_arg(x, "split", "ary")
    axis = normalize_axis_index(axis, x.ndim, "split")
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
            indices_or_sections, (bool, np.bool_)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("split: number sections must be larger than 0, got %d" % k)
        n = x.type.shape[axis]
        if n is not None and n % k:
            raise ValueError("split: array split does not result in an equal division (%d "
                             "sections of an axis of size %d)" % (k, n))
        size = x.shape[axis] // k if n is None else n // k
        return Split(k, axis)(x, *([size] * k)) if k > 1 else [Split(1, axis)(x, x.shape[axis])]
    cuts = [int_scalar_arg(i, "split", "indices entry") if isinstance(i, Variable) else i
            # a bool is no sequence: refused there with a TypeError
            for i in as_int_tuple_or_vars(indices_or_sections)]  # type: ignore[arg-type]
    bounds = [None] + cuts + [None]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        index = [slice(None)] * x.ndim
        index[axis] = slice(lo, hi)
        pieces.append(getitem(x, tuple(index)))
    return pieces


def as_int_tuple_or_vars(value: Variable | Sequence[IntLike]) -> list[int | Variable]:
    """A sequence of ints and integer scalar Variables (for split's indices)."""
    if isinstance(value, Variable):
        data = static_value(value)
        if data is None:
            raise TypeError("split: indices must be a sequence (a symbolic vector has no static "
                            "length), got %r" % (value,))
        items = data.tolist()
    else:
        items = value
    out: list[int | Variable] = []
    for v in items:
        if isinstance(v, Variable):
            out.append(v)
        else:
            out.extend(as_int_tuple(v, "split", "indices entry"))
    return out


class Roll(Op):
    """``np.roll(x, shift, axis)`` for one axis, or the flattened array (``axis=None``)."""

    __props__ = ("axis",)

    def __init__(self, axis: int | None = None) -> None:
        self.axis = None if axis is None else int(axis)

    def __str__(self) -> str:
        return "Roll{axis=%s}" % self.axis

    def make_node(self, x: TensorLike, shift: TensorLike) -> Apply:
        x = tensor_arg(x, "roll", "a")
        shift = int_scalar_arg(shift, "roll", "shift")
        if self.axis is not None and not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError("roll: axis %d is out of bounds for %r" % (
                self.axis, x))
        return Apply(self, [x, shift], [x.type()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, shift = inputs
        output_storage[0][0] = np.roll(x, int(shift), axis=self.axis)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        x, shift = inputs
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x), index_gradient()]
        return [Roll(self.axis)(output_grads[0], -shift), index_gradient()]


def roll(x: TensorLike, shift: IntLike | Sequence[IntLike],
         axis: Axes | None = None) -> AnyTensor:
    """``np.roll``: elements shifted cyclically along ``axis`` (ints or tuples)."""
    out = tensor_arg(x, "roll", "a")
    if axis is None:
        return Roll(None)(out, shift)
    axes = normalize_axis_tuple(axis, out.ndim, "roll", allow_duplicate=True)
    if isinstance(shift, (list, tuple)):
        shifts = list(shift)
    else:
        shifts = [shift]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences of the "
                         "same length")
    for a, s in zip(axes, shifts, strict=True):
        out = Roll(a)(out, s)
    return out
