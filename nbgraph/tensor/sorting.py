"""Sorting: ``sort`` and ``argsort`` along an axis (None: the flattened array), as NumPy.

>>> from nbgraph.tensor.variable import TensorType
>>> x = TensorType("float32", (3, 4))("x")
>>> sort(x).type, argsort(x, axis=0).type, sort(x, axis=None).type
(TensorType(float32, (3, 4)), TensorType(int64, (3, 4)), TensorType(float32, (12,)))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import TensorLike
    from nbgraph.tensor.variable import TensorVariable

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.op_args import normalize_axis_index, tensor_arg
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.grad_rules import is_discrete, zero_gradient

__all__ = ["SortOp", "sort", "argsort"]

_KINDS = ("quicksort", "mergesort", "heapsort", "stable")


class SortOp(Op):
    """``np.sort`` (``returns="values"``) or ``np.argsort`` (``returns="indices"``) along
    ``axis``; ``kind`` as NumPy's (ties keep their order only with a stable kind)."""

    __props__ = ("returns", "axis", "kind")

    def __init__(self, returns, axis, kind="quicksort"):
        if returns not in ("values", "indices"):
            raise ValueError("SortOp returns 'values' or 'indices', got %r" % (returns,))
        if kind not in _KINDS:
            raise ValueError("sort: kind must be one of %s, got %r" % (", ".join(_KINDS), kind))
        self.returns = returns
        self.axis = None if axis is None else int(axis)
        self.kind = kind

    def __str__(self):
        name = "Sort" if self.returns == "values" else "Argsort"
        return "%s{axis=%s}" % (name, self.axis)

    def make_node(self, x):
        where = "sort" if self.returns == "values" else "argsort"
        x = tensor_arg(x, where, "a")
        if self.axis is None:
            n = None if None in x.type.shape else int(np.prod(x.type.shape, dtype=np.int64))
            shape = (n,)
        else:
            if not 0 <= self.axis < x.ndim:
                raise np.exceptions.AxisError("%s: axis %d is out of bounds for %r" % (
                    where, self.axis, x))
            shape = x.type.shape
        dtype = x.dtype if self.returns == "values" else "int64"
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        func = np.sort if self.returns == "values" else np.argsort
        out = func(x, axis=self.axis, kind=self.kind)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import shape_product

        if self.axis is None:
            return [(shape_product(list(input_shapes[0])),)]
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.advanced_indexing import take_along_axis
        from nbgraph.tensor.shape_ops import flatten

        (x,) = inputs
        if self.returns == "indices" or is_discrete(x):  # integer outputs
            return [zero_gradient(x)]
        source = flatten(x) if self.axis is None else x
        axis = 0 if self.axis is None else self.axis
        order = SortOp("indices", axis, "stable")(source)
        # each output element came from x[order]: send its gradient back there
        rank = SortOp("indices", axis, "stable")(order)
        g = take_along_axis(output_grads[0], rank, axis)
        if self.axis is None:
            g = g.reshape(x.shape, ndim=x.ndim)
        return [g]


def sort(x: TensorLike, axis: int | None = -1, kind: str = "quicksort") -> TensorVariable:
    """``np.sort``: ``x`` sorted along ``axis`` (None: flattened first)."""
    x = tensor_arg(x, "sort", "a")
    return SortOp("values", None if axis is None else normalize_axis_index(axis, x.ndim, "sort"),
                  kind)(x)


def argsort(x: TensorLike, axis: int | None = -1, kind: str = "quicksort") -> TensorVariable:
    """``np.argsort``: the indices that sort ``x`` along ``axis`` (None: flattened), int64."""
    x = tensor_arg(x, "argsort", "a")
    return SortOp("indices", None if axis is None else normalize_axis_index(axis, x.ndim,
                                                                           "argsort"), kind)(x)
