"""Basic indexing: integers, slices, ``None`` and ``...`` (no advanced indexing).

>>> from nbgraph.tensor.variable import TensorType
>>> m = TensorType("float64", (4, None))("m")
>>> m[1:3].type, m[0].type, m[:, None].type
(TensorType(float64, (2, None)), TensorType(float64, (None,)), TensorType(float64, (4, 1, None)))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType
from nbgraph.tensor.variable import as_tensor_variable, constant
from nbgraph.tensor.grad_rules import index_gradient, input_gradient, is_discrete, zero_gradient

if TYPE_CHECKING:
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.op_args import TensorLike
    from nbgraph.tensor.variable import AnyTensor, TensorVariable

__all__ = ["Subtensor", "IncSubtensor", "IndexTypeError", "getitem", "inc_subtensor",
           "set_subtensor", "slice_length"]


class IndexTypeError(TypeError, IndexError):
    """An index of the wrong type (``x[1.5]``, ``x["a"]``, a float Variable).

    Both a TypeError (Theano's class for it) and an IndexError (NumPy's), so
    ``except`` clauses written for either catch it."""

_SLOT = "i"  # placeholder in idx_list for a value read from a scalar input


def _index_input(value, what):
    # NumPy: a bad index is an IndexError, a bad slice bound a TypeError
    error = TypeError if what.startswith("slice") else IndexTypeError
    if isinstance(value, Variable):
        v = as_tensor_variable(value)
        if v.ndim != 0 or v.dtype not in DISCRETE_DTYPES or v.dtype == "bool":
            raise error("%s must be an integer scalar, got %r of type %r" % (what, v, v.type))
        return v
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error("%s must be an int, got %r; advanced (array) indexing is not supported"
                    % (what, value))
    return constant(np.int64(value))


def _static(var):
    if isinstance(var, Constant):
        return int(var.data)
    return None


def _int_or_var(value):
    """None, a Python int (for a constant) or an int64 scalar Variable."""
    if value is None or isinstance(value, int):
        return value
    static = _static(value)
    if static is not None:
        return static
    if value.dtype != "int64":
        from nbgraph.tensor.math import cast

        value = cast(value, "int64")
    return value


def _max(a, b):
    from nbgraph.tensor.math import maximum

    return max(a, b) if isinstance(a, int) and isinstance(b, int) else maximum(a, b)


def _min(a, b):
    from nbgraph.tensor.math import minimum

    return min(a, b) if isinstance(a, int) and isinstance(b, int) else minimum(a, b)


def _clamp(index, n, lower, upper):
    """A slice bound normalised as ``slice.indices`` does for a dimension of size ``n``."""
    from nbgraph.tensor.math import lt, switch

    if isinstance(index, int):
        return _max(index + n, lower) if index < 0 else _min(index, upper)
    return switch(lt(index, 0), _max(index + n, lower), _min(index, upper))


def _length(start, stop, step, n, positive):
    """The slice's length for a step of a known sign."""
    if stop is None and step in (1, -1) and (start is None or (
            step == 1 and isinstance(start, int) and start >= 0)):
        return n if not start else _max(n - start, 0)  # x[s:], x[::-1]: no clamping
    lower, upper = (0, n) if positive else (-1, n - 1)
    start = (lower if positive else upper) if start is None else _clamp(start, n, lower, upper)
    stop = (upper if positive else lower) if stop is None else _clamp(stop, n, lower, upper)
    span, stride = (stop - start, step) if positive else (start - stop, -step)
    if isinstance(stride, int):
        if stride == 1:
            return _max(span, 0)
        return _max((span + (stride - 1)) // stride, 0)
    return _max((span + stride - 1) // stride, 0)


def slice_length(start: int | Variable | None, stop: int | Variable | None,
                 step: int | Variable | None, n: int | Variable) -> AnyTensor:
    """``len(range(*slice(start, stop, step).indices(n)))`` as an int64 scalar Variable.

    Each argument is None (except ``n``), an int or an integer scalar
    Variable; constants are folded in Python.
    """
    from nbgraph.tensor.basic import constant_shape_entry
    from nbgraph.tensor.math import gt, switch

    start, stop, step, n = (_int_or_var(v) for v in (start, stop, step, n))
    step = 1 if step is None else step
    if isinstance(step, int):
        if step == 0:
            raise ValueError("slice step cannot be zero")
        out = _length(start, stop, step, n, step > 0)
    else:
        out = switch(gt(step, 0), _length(start, stop, step, n, True),
                     _length(start, stop, step, n, False))
    return constant_shape_entry(out) if isinstance(out, int) else out


def _hashable(idx_list):
    """``idx_list`` with its slices (unhashable before Python 3.12) as tuples."""
    return tuple(("slice", e.start, e.stop, e.step) if isinstance(e, slice) else e
                 for e in idx_list)


class Subtensor(Op):
    """``x[idx]`` for basic indices; ``idx_list`` describes the index with slots for inputs."""

    __props__ = ("idx_list",)
    view_map = {0: [0]}

    def __init__(self, idx_list: Sequence[Any]) -> None:
        self.idx_list = tuple(idx_list)

    def __hash__(self) -> int:
        return hash((type(self), _hashable(self.idx_list)))

    def __str__(self) -> str:
        parts = []
        for entry in self.idx_list:
            if isinstance(entry, slice):
                given = ["" if p is None else "i" for p in
                         (entry.start, entry.stop, entry.step)]
                # keep the first colon so x[1:] (i:) never reads like x[1] (i)
                parts.append(":".join(given[:2] if entry.step is None else given))
            else:
                parts.append("i")
        return "Subtensor{%s}" % ", ".join(parts)

    def make_node(self, x, *indices):
        x = as_tensor_variable(x)
        if len(self.idx_list) > x.ndim:
            raise IndexError("too many indices for %r: %d given, it has %d dimensions" % (
                x, len(self.idx_list), x.ndim))
        values = iter(indices)
        shape = []
        for dim, entry in enumerate(self.idx_list):
            size = x.type.shape[dim]
            if isinstance(entry, slice):
                parts = [None if p is None else next(values) for p in
                         (entry.start, entry.stop, entry.step)]
                static = [_static(p) if p is not None else None for p in parts]
                if static[2] == 0:
                    raise ValueError("slice step cannot be zero (dimension %d of %r)" % (dim, x))
                known = all(p is None or s is not None for p, s in zip(parts, static, strict=True))
                if size is not None and known:
                    shape.append(len(range(*slice(*static).indices(size))))
                else:
                    shape.append(None)
            else:
                idx = _static(next(values))
                if idx is not None and size is not None and not -size <= idx < size:
                    raise IndexError("index %d is out of bounds for dimension %d of %r with "
                                     "size %d" % (idx, dim, x, size))
        shape.extend(x.type.shape[len(self.idx_list):])
        return Apply(self, [x] + list(indices), [TensorType(x.dtype, tuple(shape))()])

    def index_tuple(self, indices):
        """The NumPy index built from the run-time values of the index inputs."""
        values = iter(indices)
        out = []
        for entry in self.idx_list:
            if isinstance(entry, slice):
                out.append(slice(*[None if p is None else int(next(values)) for p in
                                   (entry.start, entry.stop, entry.step)]))
            else:
                out.append(int(next(values)))
        return tuple(out)

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, *indices = inputs
        try:
            out = x[self.index_tuple(indices)]
        except IndexError as exc:
            raise IndexError("%s on an array of shape %s: %s" % (self, x.shape, exc)) from exc
        output_storage[0][0] = out if type(out) is np.ndarray else np.asarray(out)

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A view: basic indexing."""
        from nbgraph.tensor import chunking

        return chunking.subtensor(self)

    def infer_shape(self, node, input_shapes):  # entries mix ints, tuples and Variables
        from nbgraph.tensor.basic import constant_shape_entry

        x_shape = input_shapes[0]
        values = iter(node.inputs[1:])
        shape = []
        for dim, entry in enumerate(self.idx_list):
            if isinstance(entry, slice):
                parts = [None if p is None else next(values) for p in
                         (entry.start, entry.stop, entry.step)]
                shape.append((parts, x_shape[dim]))
            else:
                next(values)
        shape.extend(x_shape[len(self.idx_list):])
        out = []
        for static, entry in zip(node.outputs[0].type.shape, shape, strict=True):
            if static is not None:
                out.append(constant_shape_entry(static))
            elif isinstance(entry, tuple):
                out.append(slice_length(*entry[0], entry[1]))
            else:
                out.append(entry)
        return [tuple(out)]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import zeros_like

        x, *indices = inputs
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x)] + [index_gradient() for _ in indices]
        gx = IncSubtensor(self.idx_list)(zeros_like(x), output_grads[0], *indices)
        return [gx] + [index_gradient() for _ in indices]


class IncSubtensor(Op):
    """A copy of ``x`` with ``y`` added to (or, with ``set_instead_of_inc``, written into)
    ``x[idx]``."""

    __props__ = ("idx_list", "set_instead_of_inc")

    def __init__(self, idx_list: Sequence[Any], set_instead_of_inc: bool = False) -> None:
        self.idx_list = tuple(idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)

    def __hash__(self) -> int:
        return hash((type(self), _hashable(self.idx_list), self.set_instead_of_inc))

    def __str__(self) -> str:
        kind = "Set" if self.set_instead_of_inc else "Inc"
        return "%sSubtensor{%s}" % (kind, str(Subtensor(self.idx_list))[10:-1])

    def make_node(self, x, y, *indices):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        view = Subtensor(self.idx_list).make_node(x, *indices).outputs[0]
        if y.ndim > view.ndim:
            raise ValueError("cannot write %d-d %r into a %d-d region of %r" % (
                y.ndim, y, view.ndim, x))
        for have, want in zip(y.type.shape[::-1], view.type.shape[::-1], strict=False):
            if have not in (None, 1) and want is not None and have != want:
                raise ValueError("cannot broadcast %r of static shape %s into the region of "
                                 "%r of static shape %s" % (y, y.type.shape, x, view.type.shape))
        if not self.set_instead_of_inc and not np.can_cast(y.dtype, x.dtype, "same_kind"):
            # NumPy's ``a[idx] += y`` refuses this cast; say so when the graph is built
            raise TypeError("cannot add %r of dtype %s into %r of dtype %s; cast it first" % (
                y, y.dtype, x, x.dtype))
        return Apply(self, [x, y] + list(indices), [x.type()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, y, *indices = inputs
        out = x.copy()
        idx = Subtensor(self.idx_list).index_tuple(indices)
        if self.set_instead_of_inc:
            out[idx] = y
        else:
            out[idx] += y
        output_storage[0][0] = out

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import zeros_like
        from nbgraph.tensor.elemwise import sum_to_shape

        x, y, *indices = inputs
        (gz,) = output_grads
        if self.set_instead_of_inc:
            gx = IncSubtensor(self.idx_list, True)(gz, zeros_like(y), *indices)
        else:
            gx = gz
        gy = Subtensor(self.idx_list)(gz, *indices)
        extra = gy.ndim - y.ndim
        if extra:
            gy = gy.sum(axis=tuple(range(extra)))
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x), zero_gradient(y)] + [index_gradient() for _ in indices]
        gy = input_gradient(sum_to_shape(gy, y), y)
        return [gx, gy] + [index_gradient() for _ in indices]


def _parse(x, index):
    """Split a user index into (idx_list, index inputs, positions of new axes)."""
    if not isinstance(index, tuple):
        index = (index,)
    n_real = sum(1 for e in index if e is not None and e is not Ellipsis)
    if sum(1 for e in index if e is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for entry in index:
        if entry is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(entry)
    idx_list, inputs, new_axes = [], [], []
    out_dim = 0
    for entry in expanded:
        if entry is None:
            new_axes.append(out_dim)
            out_dim += 1
        elif isinstance(entry, slice):
            parts = []
            for name, p in (("start", entry.start), ("stop", entry.stop), ("step", entry.step)):
                if p is None:
                    parts.append(None)
                else:
                    inputs.append(_index_input(p, "slice " + name))
                    parts.append(_SLOT)
            idx_list.append(slice(*parts))
            out_dim += 1
        else:
            inputs.append(_index_input(entry, "index"))
            idx_list.append(_SLOT)
    return idx_list, inputs, new_axes


def _shape_entry(vector, index):
    """``t.shape[i]`` for a Python int ``i``: the size of ``t``'s dimension i.

    A constant when that size is static, else ``ShapeI``; None when ``vector``
    is not a shape or ``index`` not a plain int (ordinary indexing applies).
    """
    from nbgraph.tensor.basic import Shape, shape_i

    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        return None
    if isinstance(vector, Constant) and vector.ndim == 1 and vector.dtype == "int64":
        data = np.asarray(vector.data)  # a fully static shape is a constant already
        return constant(data[int(index)]) if -data.size <= index < data.size else None
    node = vector.owner
    if node is None or not isinstance(node.op, Shape):
        return None
    x = node.inputs[0]
    if not -x.ndim <= index < x.ndim:
        return None  # the usual IndexError comes from ordinary indexing
    return shape_i(x, int(index))


def getitem(x: TensorLike, index: Any) -> AnyTensor:
    """``x[index]`` for ints, integer scalars, slices, None and Ellipsis; an index with
    arrays or masks goes to :mod:`nbgraph.tensor.advanced_indexing`."""
    x = as_tensor_variable(x)
    from nbgraph.tensor import advanced_indexing

    if advanced_indexing.is_advanced_index(index):
        return advanced_indexing.advanced_getitem(x, index)
    size = _shape_entry(x, index)
    if size is not None:
        return size
    idx_list, inputs, new_axes = _parse(x, index)
    out = Subtensor(idx_list)(x, *inputs) if idx_list else x
    if new_axes:
        pattern: list[int | str] = list(range(out.ndim))
        for pos in new_axes:
            pattern.insert(pos, "x")
        out = out.dimshuffle(*pattern)
    return out


def inc_subtensor(view: AnyTensor, y: TensorLike) -> TensorVariable:
    """A copy of the tensor ``view`` was sliced from, with ``y`` added in that region."""
    return _write(view, y, False)


def set_subtensor(view: AnyTensor, y: TensorLike) -> TensorVariable:
    """A copy of the tensor ``view`` was sliced from, with that region set to ``y``."""
    return _write(view, y, True)


def _write(view, y, set_instead):
    from nbgraph.tensor.advanced_indexing import AdvancedSubtensor, advanced_write

    node = view.owner
    if node is not None and isinstance(node.op, AdvancedSubtensor):
        return advanced_write(view, y, set_instead)
    if node is None or not isinstance(node.op, Subtensor):
        raise TypeError("inc/set_subtensor needs the result of indexing a tensor, got %r" % (
            view,))
    x, *indices = node.inputs
    return IncSubtensor(node.op.idx_list, set_instead)(x, y, *indices)
