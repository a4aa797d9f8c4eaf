"""Reductions over axes: Sum, Prod, Max, Min (mean is built from Sum).

Output dtypes follow NumPy: ``sum``/``prod`` of small integers accumulate in
the platform integer (int64/uint64), bool sums count, max/min keep the dtype.

>>> from nbgraph.tensor.variable import tensor
>>> x = tensor("int8", (2, None, 3))
>>> Reduce("sum", (0, 2))(x).type
TensorType(int64, (None,))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.exceptions import AxisError

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.c_code.reduction import ReduceC
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable
from nbgraph.tensor.grad_rules import is_discrete, zero_gradient

if TYPE_CHECKING:
    from nbgraph.tensor.op_args import TensorLike
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.op_args import Axes

__all__ = ["Reduce", "ProdWithoutSelf", "ProdWithoutSelfGrad", "normalize_axis"]

_FUNCS: dict[str, Callable[..., Any]] = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def normalize_axis(axis: Axes | None, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """``axis`` (None, an int or a sequence) as a sorted tuple of distinct non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (axis,)
    try:
        entries = list(axis)  # type: ignore[arg-type]  # a bool is refused below
    except TypeError as exc:
        raise TypeError("%s must be None, an int or a tuple of ints, got %r" % (
            what, axis)) from exc
    out = []
    for a in entries:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError("%s entries must be ints, got %r" % (what, a))
        if not -ndim <= a < ndim:
            raise AxisError("%s %d is out of range for a tensor with %d dimension%s" % (
                what, a, ndim, "" if ndim == 1 else "s"))
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError("%s %r repeats an axis" % (what, tuple(entries)))
    return tuple(sorted(out))


class Reduce(ReduceC, Op):
    """Reduce ``axis`` (a tuple of dimensions) with ``kind`` in sum/prod/max/min."""

    __props__ = ("kind", "axis")

    def __init__(self, kind: str, axis: Sequence[int]) -> None:
        if kind not in _FUNCS:
            raise ValueError("Reduce kind must be one of %s, got %r" % (sorted(_FUNCS), kind))
        self.kind = kind
        self.axis = tuple(axis)
        self.func = _FUNCS[kind]

    def __str__(self) -> str:
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        axis = normalize_axis(self.axis, x.ndim)
        if axis != self.axis:
            return Reduce(self.kind, axis).make_node(x)
        if self.kind in ("max", "min"):
            for a in axis:
                if x.type.shape[a] == 0:
                    raise ValueError("%s over axis %d of %r: that dimension is statically "
                                     "empty" % (self.kind, a, x))
        sample = self.func(np.zeros((1,) * max(x.ndim, 1), dtype=x.dtype),
                           axis=axis if x.ndim else None)
        shape = tuple(s for i, s in enumerate(x.type.shape) if i not in axis)
        return Apply(self, [x], [TensorType(np.asarray(sample).dtype, shape)()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        (x,) = inputs
        dtype = node.outputs[0].type.numpy_dtype
        if self.kind in ("sum", "prod"):
            out = self.func(x, axis=self.axis, dtype=dtype)
        else:
            try:
                out = self.func(x, axis=self.axis)
            except ValueError as exc:
                raise ValueError("%s of an empty array (shape %s) has no value" % (
                    self, x.shape)) from exc
        if type(out) is not np.ndarray or out.dtype != dtype:
            out = np.asarray(out, dtype=dtype)
        output_storage[0][0] = out

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A reduction whose block partials merge with the same kind."""
        from nbgraph.tensor import chunking

        return chunking.reduction(self.kind, self.axis, node)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)]

    def _expand(self, g, ndim):
        """``g`` with the reduced axes put back as size-1 dimensions."""
        pattern = []
        j = 0
        for i in range(ndim):
            if i in self.axis:
                pattern.append("x")
            else:
                pattern.append(j)
                j += 1
        return g.dimshuffle(*pattern)

    def grad(self, inputs, output_grads):
        from nbgraph.tensor import math as tm
        from nbgraph.tensor.basic import alloc_like

        (x,) = inputs
        if is_discrete(x):
            return [zero_gradient(x)]
        gz = self._expand(output_grads[0], x.ndim)
        if self.kind == "sum":
            g = alloc_like(gz, x)
        elif self.kind == "prod":
            g = gz * ProdWithoutSelf(self.axis)(x)
        else:
            result = self._expand(self(x), x.ndim)
            g = gz * tm.cast(tm.eq(x, result), x.dtype)
        return [g if g.dtype == x.dtype else tm.cast(g, x.dtype)]


def _flatten_axes(x, axis):
    """``x`` with the ``axis`` dimensions moved last and merged: ``(lead..., n)``,
    and a function putting an array of that shape back into ``x``'s layout."""
    rest = [i for i in range(x.ndim) if i not in axis]
    moved = np.transpose(x, rest + list(axis))
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    inverse = np.argsort(rest + list(axis))

    def restore(out):
        return np.ascontiguousarray(np.transpose(out.reshape(moved.shape), inverse)).astype(
            x.dtype, copy=False)
    return flat, restore


def _exclusive_products(flat):
    """Products of the elements before (left) and after (right) each one, on the last axis."""
    ones = np.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
    if flat.shape[-1] == 0:
        return flat, flat
    left = np.concatenate([ones, np.cumprod(flat, axis=-1)[..., :-1]], axis=-1)
    right = np.concatenate([np.cumprod(flat[..., ::-1], axis=-1)[..., :-1][..., ::-1], ones],
                           axis=-1)
    return left, right


def linear_scan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``s[j] = a[j] * s[j-1] + b[j]`` along the last axis (``s[-1] = 0``).

    A log-depth parallel prefix over the affine maps ``s -> a*s + b``: every
    step is whole-array NumPy work, and nothing is divided (exact with zeros).
    """
    a, b = a.copy(), b.copy()
    n = a.shape[-1]
    shift = 1
    while shift < n:
        b[..., shift:] = a[..., shift:] * b[..., :-shift] + b[..., shift:]
        a[..., shift:] = a[..., shift:] * a[..., :-shift]
        shift *= 2
    return b


class ProdWithoutSelf(Op):
    """For each element, the product of the others along ``axis`` (exact with zeros).

    This is the gradient of ``prod``: ``prod(x) / x`` would divide by zero.
    """

    __props__ = ("axis",)

    def __init__(self, axis: Sequence[int]) -> None:
        self.axis = tuple(axis)

    def make_node(self, x: TensorLike) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        (x,) = inputs
        flat, restore = _flatten_axes(x, self.axis)
        left, right = _exclusive_products(flat)
        output_storage[0][0] = restore(left * right)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        (x,) = inputs
        if is_discrete(x):
            return [zero_gradient(x)]
        gz = output_grads[0]
        if gz.dtype != x.dtype:
            from nbgraph.tensor.math import cast

            gz = cast(gz, x.dtype)
        return [ProdWithoutSelfGrad(self.axis)(x, gz)]


class ProdWithoutSelfGrad(Op):
    """The gradient of :class:`ProdWithoutSelf`, exact with zeros (no division).

    For ``x`` and the output gradient ``gz``, element ``j`` of a group (the
    elements reduced together along ``axis``) is ``sum over i != j of gz[i]
    times the product of x[k] for k not in {i, j}``.  Computed in O(n log n)
    array work per group with the products before/after each element and a
    linear scan (the derivative of a running product).  It has no grad itself
    (a third derivative of ``prod`` is not supported).
    """

    __props__ = ("axis",)

    def __init__(self, axis: Sequence[int]) -> None:
        self.axis = tuple(axis)

    def make_node(self, x: TensorLike, gz: TensorLike) -> Apply:
        x, gz = as_tensor_variable(x), as_tensor_variable(gz)
        if gz.type.dtype != x.type.dtype or gz.ndim != x.ndim:
            raise TypeError("%s: gz (%r of type %r) must have the dtype and ndim of x (%r of "
                            "type %r)" % (self, gz, gz.type, x, x.type))
        return Apply(self, [x, gz], [x.type()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, gz = inputs
        gz = np.broadcast_to(gz, x.shape)
        flat, restore = _flatten_axes(x, self.axis)
        gflat, _ = _flatten_axes(gz, self.axis)
        left, right = _exclusive_products(flat)
        if flat.shape[-1] == 0:
            output_storage[0][0] = restore(flat.copy())
            return
        # before[j] = sum over i < j of gz[i] * prod(x[k] for k < j, k != i)
        before = linear_scan(flat, gflat * left)
        before = np.concatenate([np.zeros_like(before[..., :1]), before[..., :-1]], axis=-1)
        after = linear_scan(flat[..., ::-1], (gflat * right)[..., ::-1])[..., ::-1]
        after = np.concatenate([after[..., 1:], np.zeros_like(after[..., :1])], axis=-1)
        output_storage[0][0] = restore(before * right + after * left)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]
