"""Advanced indexing as NumPy defines it: integer arrays and boolean masks, mixed with
slices, integers, ``None`` and ``...``; reads (:class:`AdvancedSubtensor`) and
writes (:class:`AdvancedIncSubtensor`, where repeated indices accumulate like
``np.add.at``), ``take`` and ``take_along_axis``.

The result's layout follows NumPy: the broadcast shape of the index arrays
replaces them where they are adjacent in the index, and comes first otherwise.

>>> from nbgraph.tensor.constructors import lvector
>>> from nbgraph.tensor.type import TensorType
>>> x = TensorType("float64", (5, 4, 3))("x")
>>> x[lvector("i"), :, 0].type, x[:, [0, 1]].type, x[[0, 2], None, [1, 1]].type
(TensorType(float64, (None, 4)), TensorType(float64, (5, 2, 3)), TensorType(float64, (2, 1, 3)))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import TensorLike
    from nbgraph.tensor.variable import TensorVariable

import numpy as np

from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op
from nbgraph.tensor.grad_rules import index_gradient, input_gradient, is_discrete, zero_gradient
from nbgraph.tensor.op_args import normalize_axis_index, static_value, tensor_arg
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType

__all__ = ["AdvancedSubtensor", "AdvancedIncSubtensor", "AdvancedScatterAdd",
           "is_advanced_index",
           "advanced_getitem", "advanced_inc_along_axis", "take", "take_along_axis"]

_SLOT = "i"      # a slice bound read from a scalar input
_ARRAY = "a"     # an index array (integer or boolean) or an integer scalar, read from an input
_NEW = "x"       # numpy.newaxis


def _is_array_like(entry) -> bool:
    if isinstance(entry, Variable):
        return getattr(entry.type, "ndim", 0) > 0 or entry.type.dtype == "bool"
    if isinstance(entry, (bool, np.bool_)):
        return True
    return isinstance(entry, (list, np.ndarray))


def is_advanced_index(index) -> bool:
    """True when ``index`` (what ``x[...]`` receives) needs advanced indexing."""
    entries = index if isinstance(index, tuple) else (index,)
    return any(_is_array_like(e) for e in entries)


def _hashable(idx_list):
    return tuple(("slice", e.start, e.stop, e.step) if isinstance(e, slice) else e
                 for e in idx_list)


def _index_array(value, position):
    """An index entry as an integer or boolean tensor Variable."""
    where = "index %d" % position
    if isinstance(value, (list, tuple)) and len(value) == 0:
        value = np.zeros(0, dtype=np.int64)  # NumPy reads [] as an empty integer index
    var = tensor_arg(value, "advanced indexing", where)
    if var.dtype not in DISCRETE_DTYPES:
        raise IndexError("%s: arrays used as indices must be of integer (or boolean) type, "
                         "got %r of dtype %s" % (where, var, var.dtype))
    if var.dtype == "bool" and var.ndim == 0:
        raise IndexError("%s: a 0-d boolean index is not supported; use x[None] or a "
                         "1-d mask" % where)
    return var


def _slice_part(value, what):
    from nbgraph.tensor.op_args import int_scalar_arg

    return int_scalar_arg(value, "advanced indexing", "slice " + what, cast_to=None)


def _parse(x, index):
    """Split a NumPy index into (idx_list, index inputs) for the advanced Ops."""
    entries = index if isinstance(index, tuple) else (index,)
    if sum(1 for e in entries if e is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    arrays = [_index_array(e, i) if _is_array_like(e) else None for i, e in enumerate(entries)]
    consumed = sum(a.ndim if a is not None and a.dtype == "bool" else 0 if e is None or
                   e is Ellipsis else 1 for e, a in zip(entries, arrays, strict=True))
    if consumed > x.ndim:
        raise IndexError("too many indices for %r: it has %d dimensions but %d were indexed"
                         % (x, x.ndim, consumed))
    idx_list, inputs = [], []
    for position, (entry, array) in enumerate(zip(entries, arrays, strict=True)):
        if entry is Ellipsis:
            idx_list.extend([slice(None)] * (x.ndim - consumed))
        elif entry is None:
            idx_list.append(_NEW)
        elif isinstance(entry, slice):
            parts = []
            for what in ("start", "stop", "step"):
                p = getattr(entry, what)
                if p is None:
                    parts.append(None)
                else:
                    inputs.append(_slice_part(p, what))
                    parts.append(_SLOT)
            idx_list.append(slice(*parts))
        else:
            # arrays, and integer scalars, which NumPy treats as 0-d index arrays here
            inputs.append(array if array is not None else _index_array(entry, position))
            idx_list.append(_ARRAY)
    return tuple(idx_list), inputs


def _broadcast_static(shapes, where):
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0}
        known = {s for s in sizes if s is not None and s != 1}
        if len(known) > 1:
            raise IndexError("%s: shape mismatch: indexing arrays could not be broadcast "
                             "together with shapes %s" % (where, " ".join(map(str, shapes))))
        if known:
            out.append(known.pop())
        elif None in sizes:
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _layout(idx_list, x, inputs, where):
    """The static output shape, and the checks NumPy does on static information."""
    values = iter(inputs)
    pieces = []      # one per idx_list entry: a tuple of static sizes, or "adv"
    adv_shapes = []
    adv_positions = []
    dim = 0
    for pos, entry in enumerate(idx_list):
        if entry == _NEW:
            pieces.append((1,))
        elif isinstance(entry, slice):
            pieces.append((_static_slice_length(entry, values, x.type.shape[dim], where),))
            dim += 1
        else:
            array = next(values)
            adv_positions.append(pos)
            pieces.append("adv")
            adv_shapes.append(_static_index_shape(array, x.type.shape, dim, where))
            dim += array.ndim if array.dtype == "bool" else 1
    broadcast = _broadcast_static(adv_shapes, where)
    return _place_advanced(pieces, adv_positions, broadcast) + tuple(x.type.shape[dim:])


def _static_slice_length(entry, values, size, where):
    """The static length of slice ``entry`` (its symbolic bounds read from ``values``)
    over a dimension of static ``size``; None when something is not known."""
    parts = [None if p is None else next(values) for p in (entry.start, entry.stop, entry.step)]
    static = [None if p is None else static_value(p) for p in parts]
    if static[2] is not None and int(static[2]) == 0:
        raise ValueError("%s: slice step cannot be zero" % where)
    known = all(p is None or s is not None for p, s in zip(parts, static, strict=True))
    if size is None or not known:
        return None
    bounds = [None if s is None else int(s) for s in static]
    return len(range(*slice(*bounds).indices(size)))


def _static_index_shape(array, x_shape, dim, where):
    """The static shape index ``array`` contributes to the broadcast of the advanced
    indices (a boolean mask: its count of True), checked against ``x_shape`` at ``dim``."""
    if array.dtype != "bool":
        _check_static_bounds(array, x_shape[dim], dim, where)
        return array.type.shape
    for k, s in enumerate(array.type.shape):
        have = x_shape[dim + k]
        if s is not None and have is not None and s != have:
            raise IndexError("%s: boolean index did not match indexed array along "
                             "axis %d; size of axis is %d but size of corresponding "
                             "boolean axis is %d" % (where, dim + k, have, s))
    mask = static_value(array)
    return (None if mask is None else int(mask.sum()),)


def _place_advanced(pieces, adv_positions, broadcast):
    """NumPy's placement of the advanced indices' broadcast shape among the other
    pieces: where they stand when adjacent, else first."""
    adjacent = adv_positions == list(range(adv_positions[0], adv_positions[-1] + 1))
    shape = [] if adjacent else list(broadcast)
    placed = False
    for piece in pieces:
        if piece == "adv":
            if adjacent and not placed:
                shape.extend(broadcast)
                placed = True
            continue
        shape.extend(piece)
    return tuple(shape)


def _broadcast_size(sizes):
    """The broadcast of int64 scalar sizes (a size of 1 yields to the others)."""
    from nbgraph.tensor.math import eq, switch

    out = None
    for s in sizes:
        out = s if out is None else switch(eq(out, 1), s, out)
    return out


def _symbolic_shape(idx_list, node, input_shapes):
    """The output shape of an advanced index as int64 scalar Variables."""
    from nbgraph.tensor.basic import constant_shape_entry, shape_i
    from nbgraph.tensor.math import cast, sum as tsum
    from nbgraph.tensor.subtensor import slice_length

    x_shape = input_shapes[0]
    values = iter(node.inputs[1:])
    pieces, adv, positions = [], [], []
    dim = 0
    for pos, entry in enumerate(idx_list):
        if entry == _NEW:
            pieces.append([constant_shape_entry(1)])
        elif isinstance(entry, slice):
            parts = [None if p is None else next(values) for p in
                     (entry.start, entry.stop, entry.step)]
            pieces.append([slice_length(*parts, x_shape[dim])])
            dim += 1
        else:
            array = next(values)
            positions.append(pos)
            pieces.append("adv")
            if array.dtype == "bool":
                adv.append([cast(tsum(array), "int64")])
                dim += array.ndim
            else:
                adv.append([shape_i(array, d) for d in range(array.ndim)])
                dim += 1
    ndim = max(len(a) for a in adv)
    broadcast = []
    for d in range(ndim):
        sizes = [a[d - ndim + len(a)] for a in adv if d - ndim + len(a) >= 0]
        broadcast.append(_broadcast_size(sizes))
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    shape = [] if adjacent else list(broadcast)
    for piece in pieces:
        if piece == "adv":
            if adjacent:
                shape.extend(broadcast)
                adjacent = False  # once
            continue
        shape.extend(piece)
    shape.extend(x_shape[dim:])
    static = node.outputs[0].type.shape
    return tuple(constant_shape_entry(s) if s is not None else e
                 for s, e in zip(static, shape, strict=True))


def _check_static_bounds(array, size, dim, where):
    values = static_value(array)
    if values is None or size is None or values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < -size or high >= size:
        bad = low if low < -size else high
        raise IndexError("%s: index %d is out of bounds for axis %d with size %d" % (
            where, bad, dim, size))


def _numpy_index(idx_list, values):
    values = iter(values)
    out = []
    for entry in idx_list:
        if entry == _NEW:
            out.append(None)
        elif isinstance(entry, slice):
            out.append(slice(*[None if p is None else int(next(values)) for p in
                               (entry.start, entry.stop, entry.step)]))
        else:
            out.append(next(values))
    return tuple(out)


def _describe(idx_list):
    parts = []
    for entry in idx_list:
        if entry == _NEW:
            parts.append("None")
        elif isinstance(entry, slice):
            given = ["" if p is None else "i" for p in (entry.start, entry.stop, entry.step)]
            parts.append(":".join(given[:2] if entry.step is None else given))
        else:
            parts.append("idx")
    return ", ".join(parts)


class AdvancedSubtensor(Op):
    """``x[index]`` with integer-array or boolean-mask entries (a new array, like NumPy)."""

    __props__ = ("idx_list",)

    def __init__(self, idx_list):
        self.idx_list = tuple(idx_list)

    def __hash__(self):
        return hash((type(self), _hashable(self.idx_list)))

    def __str__(self):
        return "AdvancedSubtensor{%s}" % _describe(self.idx_list)

    def make_node(self, x, *indices):
        x = tensor_arg(x, "advanced indexing", "x")
        shape = _layout(self.idx_list, x, indices, "%r[...]" % (x,))
        return Apply(self, [x] + list(indices), [TensorType(x.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        x, *values = inputs
        try:
            out = x[_numpy_index(self.idx_list, values)]
        except IndexError as exc:
            raise IndexError("%s on an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = np.asarray(out)

    def infer_shape(self, node, input_shapes):
        return [_symbolic_shape(self.idx_list, node, input_shapes)]

    def grad(self, inputs, output_grads):
        x, *indices = inputs
        if is_discrete(x):
            return [zero_gradient(x)] + [index_gradient() for _ in indices]
        gx = AdvancedScatterAdd(self.idx_list)(x, output_grads[0], *indices)
        return [gx] + [index_gradient() for _ in indices]


class AdvancedScatterAdd(Op):
    """Zeros shaped like ``x`` with ``y`` added at ``[index]`` (repeated indices add up):
    the gradient of :class:`AdvancedSubtensor`.  ``x`` gives only the shape and dtype,
    so no zero array is built and copied first (``np.zeros`` gets zeroed pages free)."""

    __props__ = ("idx_list",)

    def __init__(self, idx_list):
        self.idx_list = tuple(idx_list)

    def __hash__(self):
        return hash((type(self), _hashable(self.idx_list)))

    def __str__(self):
        return "AdvancedScatterAdd{%s}" % _describe(self.idx_list)

    def make_node(self, x, y, *indices):
        node = AdvancedIncSubtensor(self.idx_list).make_node(x, y, *indices)
        return Apply(self, node.inputs, [node.outputs[0].type()])

    def perform(self, node, inputs, output_storage):
        x, y, *values = inputs
        out = np.zeros(x.shape, dtype=x.dtype)
        try:
            np.add.at(out, _numpy_index(self.idx_list, values), y.astype(x.dtype, copy=False))
        except IndexError as exc:
            raise IndexError("%s on an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = out

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        x, y, *indices = inputs
        gy = AdvancedSubtensor(self.idx_list)(output_grads[0], *indices)
        extra = gy.ndim - y.ndim
        if extra:
            gy = gy.sum(axis=tuple(range(extra)))
        from nbgraph.tensor.elemwise import sum_to_shape

        gy = zero_gradient(y) if is_discrete(x) else input_gradient(sum_to_shape(gy, y), y)
        # x gives only the shape: a zero gradient, as for zeros_like(x)
        return [zero_gradient(x), gy] + [index_gradient() for _ in indices]


class AdvancedIncSubtensor(Op):
    """A copy of ``x`` with ``y`` added at ``x[index]`` (repeated indices add up, as
    ``np.add.at``) or, with ``set_instead_of_inc``, written there (the last write wins)."""

    __props__ = ("idx_list", "set_instead_of_inc")

    def __init__(self, idx_list, set_instead_of_inc=False):
        self.idx_list = tuple(idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)

    def __hash__(self):
        return hash((type(self), _hashable(self.idx_list), self.set_instead_of_inc))

    def __str__(self):
        kind = "Set" if self.set_instead_of_inc else "Inc"
        return "Advanced%sSubtensor{%s}" % (kind, _describe(self.idx_list))

    def make_node(self, x, y, *indices):
        x = tensor_arg(x, "advanced indexing", "x")
        y = tensor_arg(y, "advanced indexing", "y")
        view = AdvancedSubtensor(self.idx_list).make_node(x, *indices).outputs[0]
        if y.ndim > view.ndim:
            raise ValueError("cannot write %d-d %r into the %d-d selection %s of %r" % (
                y.ndim, y, view.ndim, _describe(self.idx_list), x))
        for have, want in zip(y.type.shape[::-1], view.type.shape[::-1], strict=False):
            if have not in (None, 1) and want is not None and have != want:
                raise ValueError("cannot broadcast %r of static shape %s into the selection of "
                                 "%r of static shape %s" % (y, y.type.shape, x, view.type.shape))
        if not self.set_instead_of_inc and not np.can_cast(y.dtype, x.dtype, "same_kind"):
            raise TypeError("cannot add %r of dtype %s into %r of dtype %s; cast it first" % (
                y, y.dtype, x, x.dtype))
        return Apply(self, [x, y] + list(indices), [x.type()])

    def perform(self, node, inputs, output_storage):
        x, y, *values = inputs
        out = x.copy()
        index = _numpy_index(self.idx_list, values)
        try:
            if self.set_instead_of_inc:
                out[index] = y
            else:
                np.add.at(out, index, y.astype(out.dtype, copy=False))
        except IndexError as exc:
            raise IndexError("%s on an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = out

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import zeros_like
        from nbgraph.tensor.elemwise import sum_to_shape

        x, y, *indices = inputs
        (gz,) = output_grads
        if self.set_instead_of_inc:
            gx = AdvancedIncSubtensor(self.idx_list, True)(gz, zeros_like(y), *indices)
        else:
            gx = gz
        gy = AdvancedSubtensor(self.idx_list)(gz, *indices)
        extra = gy.ndim - y.ndim
        if extra:
            gy = gy.sum(axis=tuple(range(extra)))
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x), zero_gradient(y)] + [index_gradient() for _ in indices]
        gy = input_gradient(sum_to_shape(gy, y), y)
        return [gx, gy] + [index_gradient() for _ in indices]


def advanced_getitem(x: TensorLike, index) -> TensorVariable:
    """``x[index]`` for an index with arrays or masks (see :func:`is_advanced_index`)."""
    x = tensor_arg(x, "advanced indexing", "x")
    idx_list, inputs = _parse(x, index)
    return AdvancedSubtensor(idx_list)(x, *inputs)


def advanced_write(view: TensorVariable, y: TensorLike, set_instead: bool) -> TensorVariable:
    """``inc_subtensor``/``set_subtensor`` of the result of an advanced index."""
    node = view.owner
    x, *indices = node.inputs
    return AdvancedIncSubtensor(node.op.idx_list, set_instead)(x, y, *indices)


def advanced_inc_along_axis(x: TensorLike, y: TensorLike, index: TensorLike,
                            axis: int) -> TensorVariable:
    """A copy of ``x`` with ``y`` added at ``index`` along ``axis`` (``np.add.at``)."""
    idx_list = (slice(None),) * axis + (_ARRAY,)
    return AdvancedIncSubtensor(idx_list)(x, y, index)


def take(a: TensorLike, indices: TensorLike, axis: int | None = None) -> TensorVariable:
    """``np.take``: elements of ``a`` (flattened when ``axis`` is None) at ``indices``."""
    from nbgraph.tensor.shape_ops import flatten

    a = tensor_arg(a, "take", "a")
    indices = _index_array(indices, 1)
    if indices.dtype == "bool":
        raise IndexError("take: indices must be integers, got %r of dtype bool" % (indices,))
    if axis is None:
        a, axis = flatten(a), 0
    axis = normalize_axis_index(axis, a.ndim, "take")
    return AdvancedSubtensor((slice(None),) * axis + (_ARRAY,))(a, indices)


def take_along_axis(arr: TensorLike, indices: TensorLike,
                    axis: int | None) -> TensorVariable:
    """``np.take_along_axis``: ``arr`` gathered along ``axis`` at ``indices`` (same ndim)."""
    from nbgraph.tensor.creation import arange
    from nbgraph.tensor.shape_ops import flatten

    arr = tensor_arg(arr, "take_along_axis", "arr")
    indices = _index_array(indices, 1)
    if indices.dtype == "bool":
        raise IndexError("take_along_axis: `indices` must be an integer array, got bool")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("take_along_axis: when axis=None, `indices` must have a single "
                             "dimension, got %d" % indices.ndim)
        arr, axis = flatten(arr), 0
    if indices.ndim != arr.ndim:
        raise ValueError("take_along_axis: `indices` and `arr` must have the same number of "
                         "dimensions (%d and %d)" % (indices.ndim, arr.ndim))
    axis = normalize_axis_index(axis, arr.ndim, "take_along_axis")
    index = []
    for d in range(arr.ndim):
        if d == axis:
            index.append(indices)
        else:
            pattern = ["x"] * arr.ndim
            pattern[d] = 0
            index.append(arange(arr.shape[d]).dimshuffle(*pattern))
    return AdvancedSubtensor((_ARRAY,) * arr.ndim)(arr, *index)
