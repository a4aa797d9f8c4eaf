"""Symbolic shapes: the Ops that read or assert a tensor's shape (Shape, ShapeI,
SpecifyShape) and the helpers that turn user shapes into int64 scalar entries,
keeping every static size they carry (``as_shape_entries``, ``known_int``,
``shape_product``/``shape_sum``).  Every name is also importable from
:mod:`nbgraph.tensor.basic`, which builds its Ops (Alloc, Reshape, Join) on them.

>>> from nbgraph.tensor.variable import TensorType
>>> v = TensorType("float64", (2, None))("v")
>>> specify_shape(v, (2, 1)).type
TensorType(float64, (2, 1))
>>> shape_i(v, 0), known_int(shape_i(v, 0))
(2, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import typing
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.exceptions import AxisError

from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.c_code.basic import ShapeC, ShapeIC, SpecifyShapeC
from nbgraph.tensor.grad_rules import index_gradient
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType
from nbgraph.tensor.variable import as_tensor_variable, constant

if TYPE_CHECKING:
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.op_args import ShapeLike, TensorLike
    from nbgraph.tensor.variable import AnyTensor, TensorConstant

__all__ = [
    "SpecifyShape", "specify_shape", "Shape", "shape", "ShapeI", "shape_i",
    "constant_shape_entry", "known_int", "as_shape_entries", "shape_product", "shape_sum",
    "with_static_sizes",
]


def constant_shape_entry(value: int | np.integer) -> TensorConstant:
    """An int64 scalar constant used as one entry of a symbolic shape."""
    return constant(np.int64(value))


def known_int(var: Variable) -> int | None:
    """The Python int ``var`` is known to hold at build time, else None.

    Known: a constant scalar, and the size of a dimension whose static shape
    is known (``ShapeI`` or ``x.shape[i]``), so creation and reshape Ops keep
    every static size their arguments carry.
    """
    if isinstance(var, Constant) and getattr(var.data, "ndim", 1) == 0:
        return int(var.data)
    node = var.owner
    if node is None:
        return None
    if isinstance(node.op, ShapeI):
        return node.inputs[0].type.shape[node.op.i]
    vector = node.inputs[0]
    if (type(node.op).__name__ == "Subtensor" and len(node.inputs) == 2
            and vector.owner is not None and isinstance(vector.owner.op, Shape)
            and isinstance(node.inputs[1], Constant)):
        x = typing.cast("AnyTensor", vector.owner.inputs[0])  # what Shape reads is a tensor
        i = int(node.inputs[1].data)
        if -x.ndim <= i < x.ndim:
            return x.type.shape[i]
    return None


def _stacked_scalars(vector):
    """The scalars a ``stack([...])`` of 0-d tensors was made of, else None."""
    from nbgraph.tensor.basic import Join  # Join builds on these entries: imported late

    node = vector.owner
    if node is None or not isinstance(node.op, Join) or node.op.axis != 0:
        return None
    scalars = []
    for part in node.inputs:
        inner = part.owner
        if (inner is None or type(inner.op).__name__ != "DimShuffle"
                or inner.inputs[0].ndim != 0 or part.ndim != 1):
            return None
        scalars.append(inner.inputs[0])
    return scalars


def as_shape_entries(shape: ShapeLike | int | np.integer, what: str = "shape",
                     ) -> list[AnyTensor]:
    """Each entry of ``shape`` (ints or integer scalar Variables) as an int64 scalar Variable."""
    if isinstance(shape, Variable) and getattr(shape.type, "ndim", None) == 1:
        return _vector_entries(shape, what)
    items = (shape,) if isinstance(shape, (int, np.integer, Variable)) else shape
    return [_one_entry(s, i, what) for i, s in enumerate(items)]


def _vector_entries(shape: Variable, what: str) -> list[AnyTensor]:
    """The entries of an int vector ``shape`` of static length.

    They are read where the vector says what they are, so static sizes
    survive: a constant, another tensor's shape, a stack of scalars.
    """
    n = shape.type.shape[0]
    if n is None:
        raise ValueError("%s %r must have a static length" % (what, shape))
    if isinstance(shape, Constant):
        return [constant_shape_entry(int(v)) for v in np.asarray(shape.data)]
    if shape.owner is not None and isinstance(shape.owner.op, Shape):
        return [shape_i(shape.owner.inputs[0], i) for i in range(n)]
    stacked = _stacked_scalars(shape)
    if stacked is not None and all(s.dtype in DISCRETE_DTYPES and s.dtype != "bool"
                                   for s in stacked):
        return as_shape_entries(stacked, what)
    vector = typing.cast("AnyTensor", shape)  # a Variable of a 1-d TensorType
    return [vector[i] for i in range(n)]


def _one_entry(s: Any, i: int, what: str) -> AnyTensor:
    """Entry ``i`` of a shape given entry by entry: an int or an integer scalar Variable."""
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer, Variable)):
        raise TypeError("%s entry %d must be an int or an integer scalar Variable, got %r"
                        % (what, i, s))
    if not isinstance(s, Variable):
        return constant_shape_entry(int(s))
    s = as_tensor_variable(s)
    if s.ndim != 0 or s.dtype not in DISCRETE_DTYPES or s.dtype == "bool":
        raise TypeError("%s entry %d must be an integer scalar, got %r of type %r" % (
            what, i, s, s.type))
    if s.dtype != "int64":
        from nbgraph.tensor.math import cast

        s = cast(s, "int64")
    return s


def _fold_entries(entries: Sequence[Variable], combine: Callable[[Any, Any], Any],
                  neutral: int) -> AnyTensor:
    """``entries`` (int64 scalar Variables) combined by ``combine``; constants are
    folded in Python, so an all-static result is one constant."""
    total, rest = neutral, []
    for e in entries:
        value = known_int(e)
        if value is None:
            rest.append(e)
        else:
            total = combine(total, value)
    out: Variable | None = constant_shape_entry(total) if not rest or total != neutral else None
    for e in rest:
        out = e if out is None else combine(out, e)
    assert out is not None  # no entries left over means the constant was made
    return typing.cast("AnyTensor", out)  # shape entries are int64 scalar tensors


def shape_product(entries: Sequence[Variable]) -> AnyTensor:
    """The product of shape entries (1 for none), as an int64 scalar Variable."""
    return _fold_entries(entries, lambda a, b: a * b, 1)


def shape_sum(entries: Sequence[Variable]) -> AnyTensor:
    """The sum of shape entries (0 for none), as an int64 scalar Variable."""
    return _fold_entries(entries, lambda a, b: a + b, 0)


def with_static_sizes(var: Variable, entries: Sequence[Any]) -> tuple[Any, ...]:
    """``entries`` with the dimensions ``var``'s type knows replaced by constants."""
    static = typing.cast("TensorType", var.type).shape  # var is a tensor Op's output
    return tuple(constant_shape_entry(s) if s is not None else e
                 for s, e in zip(static, entries, strict=True))


class SpecifyShape(SpecifyShapeC, Op):
    """Asserts a static shape: the output is the input with a more precise type.

    ``shape`` holds ints or None; a static size of the input that conflicts
    is refused when the node is built, and the actual shape is checked at
    run time.
    """

    __props__ = ("shape",)
    view_map = {0: [0]}

    def __init__(self, shape: Sequence[int | None]) -> None:
        self.shape = TensorType._normalize_shape(shape)

    def __str__(self) -> str:
        return "SpecifyShape"

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim != len(self.shape):
            raise ValueError("specify_shape: %r has %d dimensions but the shape %r has %d" % (
                x, x.ndim, self.shape, len(self.shape)))
        merged = []
        for i, (have, want) in enumerate(zip(x.type.shape, self.shape, strict=True)):
            if have is not None and want is not None and have != want:
                raise ValueError("specify_shape: dimension %d of %r has static size %d, which "
                                 "conflicts with the requested %d" % (i, x, have, want))
            merged.append(want if want is not None else have)
        return Apply(self, [x], [TensorType(x.dtype, tuple(merged))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        (x,) = inputs
        if x.ndim != len(self.shape) or any(
                want is not None and have != want
                for have, want in zip(x.shape, self.shape, strict=True)):
            raise ValueError("SpecifyShape: expected shape %s, got %s" % (
                _shape_text(self.shape), x.shape))
        output_storage[0][0] = x

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A view: the input itself."""
        from nbgraph.tensor import chunking

        return chunking.same_as_input()

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [tuple(constant_shape_entry(w) if w is not None else s
                      for w, s in zip(self.shape, input_shapes[0], strict=True))]

    def grad(self, inputs, output_grads):
        return [output_grads[0]]


def _shape_text(shape: Sequence[int | None]) -> str:
    return "(%s)" % ", ".join("?" if s is None else str(s) for s in shape) + \
        ("," if len(shape) == 1 else "")


def specify_shape(x: TensorLike, shape: Sequence[int | None]) -> AnyTensor:
    """``x`` with its static shape narrowed to ``shape`` (None entries keep x's)."""
    x = as_tensor_variable(x)
    shape = TensorType._normalize_shape(shape)
    if shape == x.type.shape:
        return x
    return SpecifyShape(shape)(x)


class Shape(ShapeC, Op):
    """The shape of a tensor, as an int64 vector."""

    __props__ = ()

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [TensorType("int64", (x.ndim,))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        output_storage[0][0] = np.asarray(inputs[0].shape, dtype=np.int64)

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """Metadata: reads the input's shape only."""
        from nbgraph.core.chunks import ChunkSemantics

        return ChunkSemantics("metadata")

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [(constant_shape_entry(len(input_shapes[0])),)]

    def grad(self, inputs, output_grads):
        return [index_gradient()]  # a shape does not depend on the values


_shape = Shape()


def shape(x: TensorLike) -> AnyTensor:
    """The symbolic shape of ``x`` (an int64 vector); a constant when fully static."""
    x = as_tensor_variable(x)
    if x.ndim and None not in x.type.shape:
        return constant(np.asarray(x.type.shape, dtype=np.int64))
    return _shape(x)


class ShapeI(ShapeIC, Op):
    """The size of dimension ``i`` of a tensor, as an int64 scalar."""

    __props__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = int(i)

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        if not 0 <= self.i < x.ndim:
            raise ValueError("shape_i: dimension %d is out of range for %r with %d dimensions"
                             % (self.i, x, x.ndim))
        return Apply(self, [x], [TensorType("int64", ())()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        output_storage[0][0] = np.asarray(inputs[0].shape[self.i], dtype=np.int64)

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """Metadata: reads the input's shape only."""
        from nbgraph.core.chunks import ChunkSemantics

        return ChunkSemantics("metadata")

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [()]

    def grad(self, inputs, output_grads):
        return [index_gradient()]  # a size does not depend on the values


def shape_i(x: TensorLike, i: int) -> AnyTensor:
    """Size of dimension ``i`` of ``x``: a constant when static, else a ShapeI node."""
    x = as_tensor_variable(x)
    if not -x.ndim <= i < x.ndim:
        raise AxisError("shape_i: axis %d is out of range for %r with %d dimensions" % (
            i, x, x.ndim))
    i %= max(x.ndim, 1)
    size = x.type.shape[i]
    if size is not None:
        return constant_shape_entry(size)
    return ShapeI(i)(x)
