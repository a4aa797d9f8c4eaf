"""Creation Ops: arange, eye, tri, linspace, diag, and the helpers built on them.

Dtypes and values follow NumPy (``arange(5)`` is int64, ``arange(0., 1, .25)`` float64);
sizes that constant arguments fix are static in the output type.

>>> from nbgraph.tensor.constructors import lscalar
>>> arange(2, 7).type, arange(lscalar("n")).type
(TensorType(int64, (5,)), TensorType(int64, (None,)))
>>> eye(3, dtype="int8").type, tril(eye(3)).type
(TensorType(int8, (3, 3)), TensorType(float64, (3, 3)))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import IntLike, ScalarLike, ShapeLike, TensorLike
    from nbgraph.tensor.variable import TensorVariable

import math

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.op_args import (
    int_scalar_arg, scalar_arg, static_int, static_value, tensor_arg,
)
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType, normalize_dtype
from nbgraph.tensor.variable import TensorConstant, constant
from nbgraph.tensor.grad_rules import index_gradient, input_gradient, is_discrete, zero_gradient

__all__ = [
    "ARange", "arange", "ARangeLength", "Eye", "eye", "identity_like", "tri", "tril",
    "triu", "AllocDiag", "ExtractDiag", "diag", "full", "full_like", "Linspace", "linspace",
]


def _zero(dtype):
    return constant(np.zeros((), dtype=dtype))


def arange_length(start, stop, step) -> int:
    """The length of ``np.arange(start, stop, step)``, computed as NumPy does (no array)."""
    values = [np.asarray(v)[()] for v in (start, stop, step)]
    if all(isinstance(v, (np.integer, np.bool_)) for v in values):
        start, stop, step = (int(v) for v in values)
        if step == 0:
            raise ZeroDivisionError("arange: step is zero")
        n = math.ceil((stop - start) / step)  # true division of ints, as NumPy does
    else:
        start, stop, step = (float(v) for v in values)
        if step == 0:
            raise ZeroDivisionError("arange: step is zero")
        n = (stop - start) / step
        if n == 0 and stop != start:  # the quotient underflowed: NumPy counts its sign
            return 0 if math.copysign(1.0, n) < 0 else 1
        if not math.isfinite(n):
            raise ValueError("arange: cannot compute the length of arange(%r, %r, %r)" % (
                start, stop, step))
        n = math.ceil(n)
    return max(n, 0)


class ARangeLength(Op):
    """The length of ``arange(start, stop, step)`` as an int64 scalar (for shape inference)."""

    __props__ = ()

    def make_node(self, start: TensorLike, stop: TensorLike, step: TensorLike) -> Apply:
        inputs = [scalar_arg(v, "arange_length", w) for v, w in
                  ((start, "start"), (stop, "stop"), (step, "step"))]
        return Apply(self, inputs, [TensorType("int64", ())()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        output_storage[0][0] = np.asarray(arange_length(*inputs), dtype=np.int64)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [()]

    def grad(self, inputs, output_grads):
        return [index_gradient() for _ in inputs]  # a length


class ARange(Op):
    """``np.arange(start, stop, step, dtype)`` with scalar (possibly symbolic) bounds."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str) -> None:
        self.dtype = normalize_dtype(dtype)

    def __str__(self) -> str:
        return "ARange{%s}" % self.dtype

    def make_node(self, start: TensorLike, stop: TensorLike, step: TensorLike) -> Apply:
        inputs = [scalar_arg(v, "arange", w) for v, w in
                  ((start, "start"), (stop, "stop"), (step, "step"))]
        values = [static_value(v) for v in inputs]
        length = None
        if all(v is not None for v in values):
            length = arange_length(*values)
        elif values[2] is not None and values[2] == 0:
            raise ZeroDivisionError("arange: step is zero")
        return Apply(self, inputs, [TensorType(self.dtype, (length,))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        start, stop, step = inputs
        if step == 0:
            raise ZeroDivisionError("arange: step is zero")
        # NumPy scalars, not 0-d arrays: np.arange takes ~15x longer to read the latter
        output_storage[0][0] = np.arange(start[()], stop[()], step[()], dtype=self.dtype)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        n = node.outputs[0].type.shape[0]
        if n is not None:
            return [(constant(np.int64(n)),)]
        return [(ARangeLength()(*node.inputs),)]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor import math as tm

        start, stop, step = inputs
        (gz,) = output_grads
        # stop decides only the length; start and step move every value
        if self.dtype in DISCRETE_DTYPES:
            return [zero_gradient(start), index_gradient(), zero_gradient(step)]
        index = ARange(self.dtype)(0, gz.shape[0], 1)
        return [input_gradient(tm.sum(gz), start), index_gradient(),
                input_gradient(tm.sum(gz * index), step)]


def _arange_dtype(inputs):
    """The dtype NumPy's arange picks for arguments of these (symbolic or weak) types."""
    samples = []
    for v, sample in zip(inputs, (0, 1, 1), strict=True):
        if getattr(v, "weak", False):
            samples.append(np.asarray(v.data).item())
        else:
            samples.append(np.asarray(sample, dtype=v.dtype)[()])
    try:
        return np.arange(*samples).dtype.name
    except TypeError as exc:
        raise TypeError("arange: no result dtype for arguments of dtypes %s: %s" % (
            ", ".join(v.dtype for v in inputs), exc)) from exc


def arange(start: ScalarLike, stop: ScalarLike | None = None, step: ScalarLike = 1,
           dtype: str | None = None) -> TensorVariable:
    """``np.arange``: ``arange(stop)``, ``arange(start, stop)``, ``arange(start, stop, step)``.

    The bounds may be symbolic scalars; the dtype is the one NumPy picks for
    arguments of those dtypes (int64 for integers, float64 with a float or a
    uint64), unless ``dtype`` is given.
    """
    if stop is None:
        start, stop = 0, start
    inputs = [scalar_arg(v, "arange", w) for v, w in
              ((start, "start"), (stop, "stop"), (step, "step"))]
    dtype = _arange_dtype(inputs) if dtype is None else normalize_dtype(dtype)
    return ARange(dtype)(*inputs)


class Eye(Op):
    """``np.eye(n, m, k)`` (``kind="eye"``) or ``np.tri(n, m, k)`` (``kind="tri"``)."""

    __props__ = ("kind", "dtype")

    def __init__(self, kind: str, dtype: str) -> None:
        if kind not in ("eye", "tri"):
            raise ValueError("Eye kind must be 'eye' or 'tri', got %r" % (kind,))
        self.kind = kind
        self.dtype = normalize_dtype(dtype)

    def __str__(self) -> str:
        return "%s{%s}" % ("Eye" if self.kind == "eye" else "Tri", self.dtype)

    def make_node(self, n: TensorLike, m: TensorLike, k: TensorLike) -> Apply:
        where = self.kind
        inputs = [int_scalar_arg(v, where, w) for v, w in ((n, "N"), (m, "M"), (k, "k"))]
        shape = []
        for v, w in zip(inputs[:2], ("N", "M"), strict=True):
            s = static_int(v)
            if s is not None and s < 0:
                raise ValueError("%s: argument %s is negative (%d)" % (where, w, s))
            shape.append(s)
        return Apply(self, inputs, [TensorType(self.dtype, tuple(shape))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        n, m, k = (int(v) for v in inputs)
        func = np.eye if self.kind == "eye" else np.tri
        try:
            output_storage[0][0] = func(n, m, k, dtype=self.dtype)
        except ValueError as exc:
            raise ValueError("%s(%d, %d, %d): %s" % (self.kind, n, m, k, exc)) from exc

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [(node.inputs[0], node.inputs[1])]

    def grad(self, inputs, output_grads):
        return [index_gradient() for _ in inputs]  # sizes and an offset


def eye(n: IntLike, m: IntLike | None = None, k: IntLike = 0,
        dtype: str = "floatX") -> TensorVariable:
    """An ``n`` x ``m`` array with ones on the ``k``-th diagonal (``np.eye``)."""
    return Eye("eye", dtype)(n, n if m is None else m, k)


def tri(n: IntLike, m: IntLike | None = None, k: IntLike = 0,
        dtype: str = "floatX") -> TensorVariable:
    """Ones at and below the ``k``-th diagonal of an ``n`` x ``m`` array (``np.tri``)."""
    return Eye("tri", dtype)(n, n if m is None else m, k)


def identity_like(x: TensorLike, dtype: str | None = None) -> TensorVariable:
    """An identity matrix shaped like the matrix ``x`` (its dtype unless ``dtype``)."""
    x = tensor_arg(x, "identity_like", "x")
    if x.ndim != 2:
        raise ValueError("identity_like: x must be a matrix, got %r with %d dimensions" % (
            x, x.ndim))
    from nbgraph.tensor.basic import shape_i

    return eye(shape_i(x, 0), shape_i(x, 1), dtype=dtype or x.dtype)


def _triangle(x, k, lower):
    from nbgraph.tensor.math import switch

    where = "tril" if lower else "triu"
    x = tensor_arg(x, where, "m")
    if x.ndim == 0:
        raise ValueError("%s: m must have at least one dimension, got a scalar %r" % (where, x))
    k = int_scalar_arg(k, where, "k")
    from nbgraph.tensor.basic import shape_i

    cols = shape_i(x, x.ndim - 1)
    rows = shape_i(x, x.ndim - 2) if x.ndim >= 2 else cols
    if lower:
        mask = tri(rows, cols, k, dtype="bool")
    else:
        mask = ~tri(rows, cols, k - 1, dtype="bool")
    return switch(mask, x, _zero(x.dtype))


def tril(m: TensorLike, k: IntLike = 0) -> TensorVariable:
    """``m`` with the elements above the ``k``-th diagonal zeroed (last two axes; np.tril)."""
    return _triangle(m, k, True)


def triu(m: TensorLike, k: IntLike = 0) -> TensorVariable:
    """``m`` with the elements below the ``k``-th diagonal zeroed (np.triu)."""
    return _triangle(m, k, False)


class AllocDiag(Op):
    """A ``rows`` x ``cols`` zero matrix with ``v`` on its ``offset``-th diagonal."""

    __props__ = ("offset",)

    def __init__(self, offset: int = 0) -> None:
        self.offset = int(offset)

    def __str__(self) -> str:
        return "AllocDiag{offset=%d}" % self.offset

    def make_node(self, v: TensorLike, rows: TensorLike, cols: TensorLike) -> Apply:
        v = tensor_arg(v, "diag", "v")
        if v.ndim != 1:
            raise ValueError("AllocDiag: v must be a vector, got %r" % (v,))
        rows, cols = (int_scalar_arg(a, "diag", w) for a, w in ((rows, "rows"), (cols, "cols")))
        shape = (static_int(rows), static_int(cols))
        return Apply(self, [v, rows, cols], [TensorType(v.dtype, shape)()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        v, rows, cols = inputs
        out = np.zeros((int(rows), int(cols)), dtype=v.dtype)
        diagonal = np.diagonal(out, self.offset)
        if diagonal.shape != v.shape:
            raise ValueError("AllocDiag: diagonal %d of a %dx%d matrix has %d elements, v has %d"
                             % (self.offset, rows, cols, diagonal.shape[0], v.shape[0]))
        idx = np.arange(v.shape[0])
        out[idx + max(-self.offset, 0), idx + max(self.offset, 0)] = v
        output_storage[0][0] = out

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [(node.inputs[1], node.inputs[2])]

    def grad(self, inputs, output_grads):
        v = inputs[0]
        g = zero_gradient(v) if is_discrete(v) else ExtractDiag(self.offset)(output_grads[0])
        return [g, index_gradient(), index_gradient()]


class ExtractDiag(Op):
    """The ``offset``-th diagonal of a matrix, as a new vector (``np.diagonal``)."""

    __props__ = ("offset",)

    def __init__(self, offset: int = 0) -> None:
        self.offset = int(offset)

    def __str__(self) -> str:
        return "ExtractDiag{offset=%d}" % self.offset

    def make_node(self, x: TensorLike) -> Apply:
        x = tensor_arg(x, "diag", "v")
        if x.ndim != 2:
            raise ValueError("ExtractDiag: x must be a matrix, got %r" % (x,))
        r, c = x.type.shape
        n = None
        if r is not None and c is not None:
            n = max(0, min(r + min(self.offset, 0), c - max(self.offset, 0)))
        return Apply(self, [x], [TensorType(x.dtype, (n,))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        output_storage[0][0] = np.diagonal(inputs[0], self.offset).copy()

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        from nbgraph.tensor.math import maximum, minimum

        r, c = input_shapes[0]
        n = maximum(minimum(r + min(self.offset, 0), c - max(self.offset, 0)), 0)
        return [(n,)]

    def grad(self, inputs, output_grads):
        (x,) = inputs
        if is_discrete(x):
            return [zero_gradient(x)]
        return [AllocDiag(self.offset)(output_grads[0], x.shape[0], x.shape[1])]


def diag(v: TensorLike, k: int = 0) -> TensorVariable:
    """``np.diag``: a vector's square diagonal matrix, or a matrix's ``k``-th diagonal."""
    v = tensor_arg(v, "diag", "v")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError("diag: argument k must be an int, got %r" % (k,))
    if v.ndim == 1:
        size = v.type.shape[0]
        n = v.shape[0] + abs(int(k)) if size is None else size + abs(int(k))
        return AllocDiag(k)(v, n, n)
    if v.ndim == 2:
        return ExtractDiag(k)(v)
    raise ValueError("diag: input must be 1-d or 2-d, got %r with %d dimensions" % (v, v.ndim))


def full(shape: ShapeLike, fill_value: TensorLike, dtype: str | None = None) -> TensorVariable:
    """An array of ``shape`` filled with ``fill_value`` (``np.full``; its dtype by default)."""
    from nbgraph.tensor.basic import alloc, as_shape_entries
    from nbgraph.tensor.math import cast

    fill = tensor_arg(fill_value, "full", "fill_value")
    if dtype is not None:
        fill = cast(fill, dtype)
    return alloc(fill, *as_shape_entries(shape))


def full_like(x: TensorLike, fill_value: TensorLike,
              dtype: str | None = None) -> TensorVariable:
    """An array shaped like ``x``, filled with ``fill_value`` cast to ``x``'s dtype (or
    ``dtype``)."""
    from nbgraph.tensor.basic import alloc_like
    from nbgraph.tensor.math import cast

    x = tensor_arg(x, "full_like", "a")
    fill = tensor_arg(fill_value, "full_like", "fill_value")
    return alloc_like(cast(fill, dtype or x.dtype), x)


class Linspace(Op):
    """``np.linspace(start, stop, num, endpoint, dtype=dtype)`` with scalar inputs."""

    __props__ = ("endpoint", "dtype")

    def __init__(self, endpoint: bool, dtype: str) -> None:
        self.endpoint = bool(endpoint)
        self.dtype = normalize_dtype(dtype)

    def __str__(self) -> str:
        return "Linspace{%s%s}" % (self.dtype, "" if self.endpoint else ", no endpoint")

    def make_node(self, start: TensorLike, stop: TensorLike, num: TensorLike) -> Apply:
        start = scalar_arg(start, "linspace", "start")
        stop = scalar_arg(stop, "linspace", "stop")
        num = int_scalar_arg(num, "linspace", "num")
        n = static_int(num)
        if n is not None and n < 0:
            raise ValueError("linspace: Number of samples, %d, must be non-negative." % n)
        return Apply(self, [start, stop, num], [TensorType(self.dtype, (n,))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        start, stop, num = inputs
        output_storage[0][0] = np.linspace(start, stop, int(num), endpoint=self.endpoint,
                                           dtype=self.dtype)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [(node.inputs[2],)]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor import math as tm

        start, stop, num = inputs
        (gz,) = output_grads
        if self.dtype in DISCRETE_DTYPES:
            return [zero_gradient(start), zero_gradient(stop), index_gradient()]
        t = Linspace(self.endpoint, self.dtype)(0.0, 1.0, num)
        return [input_gradient(tm.sum(gz * (1 - t)), start),
                input_gradient(tm.sum(gz * t), stop), index_gradient()]


def linspace(start: ScalarLike, stop: ScalarLike, num: IntLike = 50, endpoint: bool = True,
             dtype: str | None = None) -> TensorVariable:
    """``num`` evenly spaced values from ``start`` to ``stop`` (``np.linspace``)."""
    start = scalar_arg(start, "linspace", "start")
    stop = scalar_arg(stop, "linspace", "stop")
    if dtype is None:
        samples = [np.asarray(v.data).item() if isinstance(v, TensorConstant) and v.weak
                   else np.zeros((), v.dtype)[()] for v in (start, stop)]
        dtype = np.linspace(samples[0], samples[1], 2).dtype.name
    return Linspace(endpoint, dtype)(start, stop, num)
