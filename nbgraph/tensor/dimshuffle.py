"""The layout Ops of broadcasting: DimShuffle and SumToShape.

``DimShuffle`` reorders a tensor's dimensions, drops size-1 ones and inserts
new ones (a view); Elemwise pads its inputs with it.  ``SumToShape`` is the
way back for gradients: it sums a gradient over the dimensions an input was
broadcast along (``sum_to_shape``).  Both are re-exported by
:mod:`nbgraph.tensor.elemwise`, their old home.

>>> from nbgraph.tensor.constructors import dmatrix
>>> DimShuffle(2, (1, 0))(dmatrix("m")).type
TensorType(float64, (None, None))
>>> DimShuffle(2, ("x", 0, 1))(dmatrix("m")).type
TensorType(float64, (1, None, None))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.c_code.basic import DimShuffleC
from nbgraph.tensor.c_code.reduction import SumToShapeC
from nbgraph.tensor.grad_rules import index_gradient, is_discrete, zero_gradient
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable

if TYPE_CHECKING:
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.op_args import TensorLike
    from nbgraph.tensor.variable import AnyTensor

__all__ = ["DimShuffle", "SumToShape", "sum_to_shape"]


class DimShuffle(DimShuffleC, Op):
    """Reorder dimensions, drop size-1 ones, or insert new size-1 ones ('x').

    ``DimShuffle(2, (1, 0))`` transposes a matrix, ``DimShuffle(1, ('x', 0))``
    makes a row.  The output is a view of the input.
    """

    __props__ = ("input_ndim", "new_order")
    view_map = {0: [0]}

    def __init__(self, input_ndim: int, new_order: Sequence[int | str]) -> None:
        self.input_ndim = int(input_ndim)
        order: list[int | str] = []
        for entry in new_order:
            if entry == "x":
                order.append("x")
            elif isinstance(entry, (int, np.integer)) and 0 <= entry < self.input_ndim:
                order.append(int(entry))
            else:
                raise ValueError("DimShuffle pattern entry %r must be 'x' or a dimension in "
                                 "[0, %d)" % (entry, self.input_ndim))
        kept = [e for e in order if e != "x"]
        if len(set(kept)) != len(kept):
            raise ValueError("DimShuffle pattern %r repeats a dimension" % (tuple(order),))
        self.new_order = tuple(order)
        self.dropped = tuple(i for i in range(self.input_ndim) if i not in kept)
        self.shuffle = tuple(kept)
        self.augment = tuple(i for i, e in enumerate(order) if e == "x")
        self.is_transpose_only = not self.dropped and not self.augment

    def __str__(self) -> str:
        return "DimShuffle{%s}" % ",".join(str(e) for e in self.new_order)

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim != self.input_ndim:
            raise TypeError("%s expects %d dimensions, got %r with %d" % (
                self, self.input_ndim, x, x.ndim))
        for d in self.dropped:
            if x.type.shape[d] != 1:
                raise ValueError("%s drops dimension %d of %r, which is not statically of "
                                 "size 1 (its type is %r)" % (self, d, x, x.type))
        shape = tuple(1 if e == "x" else x.type.shape[int(e)] for e in self.new_order)
        return Apply(self, [x], [TensorType(x.dtype, shape)()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        (x,) = inputs
        if self.dropped:
            if any(x.shape[d] != 1 for d in self.dropped):
                raise ValueError("%s: dimensions %s must have size 1, got shape %s" % (
                    self, self.dropped, x.shape))
        res = x.transpose(self.shuffle + self.dropped)
        shape = [res.shape[i] for i in range(len(self.shuffle))]
        for i in self.augment:
            shape.insert(i, 1)
        output_storage[0][0] = res.reshape(shape) if (self.augment or self.dropped) else res

    def make_py_thunk(self, node, in_cells, out_cells):
        """:meth:`perform` in one or two NumPy calls: a transpose-only DimShuffle is one
        ``transpose``; otherwise the kept axes are moved in front of the dropped ones
        (when not already) and one index ``[None, :, ..., 0]`` inserts the new axes and
        takes the dropped ones (after the same size check as ``perform``).  Same view,
        same shape, same errors."""
        (a,), (o,) = in_cells, out_cells
        if self.is_transpose_only:
            order = self.shuffle

            def thunk():
                o[0] = a[0].transpose(order)
            return thunk
        perm = self.shuffle + self.dropped
        moved = perm != tuple(range(self.input_ndim))
        index = tuple(None if e == "x" else slice(None) for e in self.new_order) + \
            (0,) * len(self.dropped)
        if not self.new_order:  # x[0, ...] is a 0-d view, x[0] a scalar
            index += (Ellipsis,)
        dropped, perform = self.dropped, self.perform
        asarray, ndarray = np.asarray, np.ndarray

        def thunk():
            x = a[0]
            if type(x) is not ndarray:
                x = asarray(x)
            shape = x.shape
            for d in dropped:
                if shape[d] != 1:
                    perform(node, [x], out_cells)  # raises perform's error
            o[0] = (x.transpose(perm) if moved else x)[index]
        return thunk

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A view: transpose, drop and insert size-1 axes."""
        from nbgraph.tensor import chunking

        return chunking.dimshuffle(self)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        from nbgraph.tensor.basic import constant_shape_entry

        (shp,) = input_shapes
        return [tuple(constant_shape_entry(1) if e == "x" else shp[int(e)] for e in self.new_order)]

    def grad(self, inputs, output_grads):
        (x,) = inputs
        (gz,) = output_grads
        # Drop the inserted axes, then put the kept axes back and re-add dropped ones.
        kept_positions = [i for i, e in enumerate(self.new_order) if e != "x"]
        squeezed = DimShuffle(gz.ndim, tuple(kept_positions))(gz) if self.augment else gz
        inverse = []
        for d in range(self.input_ndim):
            inverse.append(self.shuffle.index(d) if d in self.shuffle else "x")
        g = DimShuffle(squeezed.ndim, tuple(inverse))(squeezed)
        if is_discrete(x):
            return [zero_gradient(x)]
        return [g]


class SumToShape(SumToShapeC, Op):
    """Sum ``g`` over the dimensions where the target shape is 1 and ``g``'s is not.

    The gradient of a broadcast input: undoes broadcasting at run time, so it
    stays right when a dimension of unknown size turns out to be 1.  The
    target shape comes in one of two forms:

    * ``SumToShape()(g, like)`` -- a template of ``g``'s ndim, whose shape is
      read at run time (what gradients build: no extra nodes);
    * ``SumToShape()(g, *shape)`` -- int64 scalar entries, one per dimension
      (what the ``sum_to_shape_entries`` rewrite makes when the template is
      computed only for its shape, so ``shape_i_lift`` can drop it).

    When nothing needs summing the output is ``g`` itself, hence the view_map.
    """

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, g: TensorLike, *shape: Any) -> Apply:
        from nbgraph.tensor.symbolic_shapes import as_shape_entries, known_int

        g = as_tensor_variable(g)
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            like = as_tensor_variable(shape[0])
            if like.ndim == g.ndim:
                return Apply(self, [g, like], [TensorType(g.dtype, like.type.shape)()])
            if like.ndim != 0:
                raise TypeError("SumToShape needs equal ndim, got %d and %d" % (
                    g.ndim, like.ndim))
        entries = as_shape_entries(shape, "SumToShape shape") if shape else []
        if len(entries) != g.ndim:
            raise TypeError("SumToShape needs equal ndim, got %d and %d" % (
                g.ndim, len(entries)))
        static = tuple(known_int(e) for e in entries)
        for d, (gs, s) in enumerate(zip(g.type.shape, static, strict=True)):
            if gs is not None and s is not None and s != 1 and gs != s:
                raise ValueError("SumToShape: dimension %d of size %d cannot be reduced to "
                                 "size %d" % (d, gs, s))
        return Apply(self, [g] + list(entries), [TensorType(g.dtype, static)()])

    @staticmethod
    def takes_template(node):
        """True for the ``(g, like)`` form, False for ``(g, *shape)``."""
        return len(node.inputs) == 2 and node.inputs[1].ndim == node.inputs[0].ndim

    @staticmethod
    def target_shape(inputs):
        """The target shape from run-time input values (either form)."""
        g = inputs[0]
        if len(inputs) == 2 and np.ndim(inputs[1]) == np.ndim(g):
            return tuple(np.shape(inputs[1]))
        return tuple(int(s) for s in inputs[1:])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        g = inputs[0]
        target = self.target_shape(inputs)
        axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, target, strict=True))
                     if b == 1 and a != 1)
        out = g.sum(axis=axes, keepdims=True, dtype=g.dtype) if axes else g
        if out.shape != target:
            raise ValueError("SumToShape: gradient of shape %s cannot be reduced to shape %s" % (
                g.shape, target))
        output_storage[0][0] = np.asarray(out)

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A view: a sum over the broadcast dimensions."""
        from nbgraph.tensor import chunking

        return chunking.sum_to_shape(self)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        if self.takes_template(node):
            return [input_shapes[1]]
        return [tuple(node.inputs[1:])]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import alloc_like

        g, *target = inputs
        if len(target) == 1 and target[0].ndim == g.ndim:  # (g, like): like gives a shape
            return [alloc_like(output_grads[0], g), zero_gradient(target[0])]
        return [alloc_like(output_grads[0], g)] + [index_gradient() for _ in target]


def sum_to_shape(g: AnyTensor, like: AnyTensor) -> AnyTensor:
    """``g`` reduced to ``like``'s shape where ``like`` was broadcast.

    A no-op when the static types prove both shapes equal.
    """
    if g.type.shape == like.type.shape and all(s is not None for s in g.type.shape):
        return g
    return SumToShape()(g, like)
