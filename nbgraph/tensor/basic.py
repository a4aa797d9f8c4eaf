"""Structural tensor ops: Alloc (zeros, ones, ..._like), Reshape, Dot, Join (stack).

The Ops that read or assert shapes (Shape, ShapeI, SpecifyShape) and the
shape-entry helpers live in :mod:`nbgraph.tensor.symbolic_shapes`; they are
re-exported here, so their old import paths keep working.

>>> from nbgraph.tensor.variable import TensorType
>>> v = TensorType("float64", (2, None))("v")
>>> reshape(v, (1, 2, -1)).type, stack([v, v]).type
(TensorType(float64, (1, 2, None)), TensorType(float64, (2, 2, None)))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.exceptions import AxisError

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.blas_threads import product_function
from nbgraph.tensor.c_code.basic import AllocC, ReshapeC
from nbgraph.tensor.c_code.dot import DotC
from nbgraph.tensor.grad_rules import index_gradient, input_gradient, is_discrete, zero_gradient
from nbgraph.tensor.symbolic_shapes import (
    Shape,
    ShapeI,
    SpecifyShape,
    as_shape_entries,
    constant_shape_entry,
    known_int,
    shape,
    shape_i,
    shape_product,
    shape_sum,
    specify_shape,
    with_static_sizes,
)
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable, constant

if TYPE_CHECKING:
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.op_args import DTypeLike, ShapeLike, TensorLike
    from nbgraph.tensor.variable import AnyTensor, TensorVariable

__all__ = [
    "SpecifyShape", "specify_shape", "Alloc", "alloc", "alloc_like", "zeros", "ones",
    "zeros_like", "ones_like", "Shape", "shape", "ShapeI", "shape_i", "Reshape", "reshape",
    "Dot", "dot", "Join", "join", "concatenate", "stack", "constant_shape_entry",
    "as_shape_entries", "shape_product", "shape_sum",
]


def _as_argument(value: TensorLike, where: str, what: str) -> AnyTensor:
    """``value`` as a tensor Variable; a TypeError names ``what`` of ``where`` if it is not."""
    try:
        return as_tensor_variable(value)
    except TypeError as exc:
        raise TypeError("%s: %s: %s" % (where, what, exc)) from exc


class Alloc(AllocC, Op):
    """A fresh array of the given shape filled with ``value`` (broadcast)."""

    __props__ = ()

    def make_node(self, value: TensorLike, *shape: Any) -> Apply:
        value = as_tensor_variable(value)
        entries = as_shape_entries(shape)
        if len(entries) < value.ndim:
            raise ValueError("alloc: the shape has %d entries, fewer than the value's %d "
                             "dimensions" % (len(entries), value.ndim))
        static = []
        vshape = (None,) * (len(entries) - value.ndim) + value.type.shape
        for i, (e, vs) in enumerate(zip(entries, vshape, strict=True)):
            s = known_int(e)
            if s is not None and s < 0:
                raise ValueError("alloc: shape entry %d is negative (%d)" % (i, s))
            if s is not None and vs not in (None, 1, s):
                raise ValueError("alloc: cannot broadcast a value of size %d to size %d in "
                                 "dimension %d" % (vs, s, i))
            if s is None and vs not in (None, 1):
                s = vs  # a dimension of size vs broadcasts only to vs
            static.append(s)
        return Apply(self, [value] + entries, [TensorType(value.dtype, tuple(static))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        value, *sizes = inputs
        shape = tuple(int(s) for s in sizes)
        out = output_storage[0][0]
        if out is None or out.shape != shape:
            out = np.empty(shape, dtype=node.outputs[0].type.numpy_dtype)
        out[...] = value
        output_storage[0][0] = out

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A fill: the value broadcast to the shape."""
        from nbgraph.core.chunks import ChunkSemantics

        return ChunkSemantics("fill")

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        return [tuple(node.inputs[1:])]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.elemwise import sum_to_shape

        value = inputs[0]
        gz = output_grads[0]
        extra = gz.ndim - value.ndim
        if extra:
            gz = gz.sum(axis=tuple(range(extra)))
        g = zero_gradient(value) if is_discrete(value) else sum_to_shape(gz, value)
        return [g] + [index_gradient() for _ in inputs[1:]]

    def do_constant_folding(self, node: Apply) -> bool:
        return False


_alloc = Alloc()


def alloc(value: TensorLike, *shape: ShapeLike | int) -> TensorVariable:
    """A new array of ``shape`` filled with ``value``."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    return _alloc(value, *shape)


def alloc_like(value: TensorLike, like: TensorLike) -> TensorVariable:
    """``value`` broadcast to the (symbolic) shape of ``like``."""
    like = as_tensor_variable(like)
    return _alloc(value, *[shape_i(like, i) for i in range(like.ndim)])


def zeros(shape: ShapeLike | int, dtype: DTypeLike = "floatX") -> TensorVariable:
    """An array of zeros of ``shape`` (ints or integer scalars)."""
    from nbgraph.tensor.type import normalize_dtype

    return alloc(constant(np.zeros((), dtype=normalize_dtype(dtype))), *as_shape_entries(shape))


def ones(shape: ShapeLike | int, dtype: DTypeLike = "floatX") -> TensorVariable:
    """An array of ones of ``shape``."""
    from nbgraph.tensor.type import normalize_dtype

    return alloc(constant(np.ones((), dtype=normalize_dtype(dtype))), *as_shape_entries(shape))


def zeros_like(x: TensorLike, dtype: DTypeLike = None) -> TensorVariable:
    """Zeros with ``x``'s shape (and dtype unless given)."""
    x = as_tensor_variable(x)
    return alloc_like(constant(np.zeros((), dtype=dtype or x.dtype)), x)


def ones_like(x: TensorLike, dtype: DTypeLike = None) -> TensorVariable:
    """Ones with ``x``'s shape (and dtype unless given)."""
    x = as_tensor_variable(x)
    return alloc_like(constant(np.ones((), dtype=dtype or x.dtype)), x)


class Reshape(ReshapeC, Op):
    """A view of ``x`` with another shape; one entry of the shape may be -1."""

    __props__ = ("ndim",)
    view_map = {0: [0]}

    def __init__(self, ndim: int) -> None:
        self.ndim = int(ndim)

    def make_node(self, x, *shape):
        x = as_tensor_variable(x)
        entries = as_shape_entries(shape)
        if len(entries) != self.ndim:
            raise ValueError("reshape: expected %d shape entries, got %d" % (
                self.ndim, len(entries)))
        out_shape = _reshaped_static_shape(x.type.shape, [known_int(e) for e in entries])
        return Apply(self, [x] + entries, [TensorType(x.dtype, out_shape)()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, *shape = inputs
        try:
            output_storage[0][0] = x.reshape(tuple(int(s) for s in shape))
        except ValueError as exc:
            raise ValueError("reshape: cannot reshape an array of shape %s into %s: %s" % (
                x.shape, tuple(int(s) for s in shape), exc)) from exc

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A view: reshape to the given entries."""
        from nbgraph.tensor import chunking

        return chunking.reshape()

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        from nbgraph.tensor.math import eq, switch

        out = node.outputs[0]
        entries = node.inputs[1:]
        if None not in out.type.shape:
            return [with_static_sizes(out, entries)]
        static = [known_int(e) for e in entries]
        # the size a -1 entry (static or at run time) stands for; the other
        # entries' product counts a -1 as 1
        given = shape_product([e if s is not None else switch(eq(e, -1), 1, e)
                               for e, s in zip(entries, static, strict=True) if s != -1])
        missing = shape_product(input_shapes[0]) // given
        shape = [missing if s == -1 else e if s is not None else switch(eq(e, -1), missing, e)
                 for e, s in zip(entries, static, strict=True)]
        return [with_static_sizes(out, shape)]

    def grad(self, inputs, output_grads):
        x = inputs[0]
        g = reshape(output_grads[0], [shape_i(x, i) for i in range(x.ndim)])
        return [g] + [index_gradient() for _ in inputs[1:]]


def _reshaped_static_shape(in_shape: tuple[int | None, ...], static: list[int | None],
                           ) -> tuple[int | None, ...]:
    """The static shape of ``reshape``'s output from the input's static shape and the
    entries known at build time (None: unknown; at most one -1): a -1 is resolved and
    the sizes checked when everything is known; a ValueError says what cannot work."""
    if sum(1 for s in static if s == -1) > 1:
        raise ValueError("reshape: only one dimension may be -1, got %r" % (static,))
    if any(s is not None and s < -1 for s in static):
        raise ValueError("reshape: negative size in %r" % (static,))
    if None not in in_shape and None not in static:
        _resolve_minus_one(in_shape, static)
    return tuple(s if s is not None and s >= 0 else None for s in static)


def _resolve_minus_one(in_shape: tuple[Any, ...], static: list[Any]) -> None:
    """Check fully static ``static`` sizes against ``in_shape``'s element count and
    replace its -1 (if any) by the size it stands for, in place."""
    known_in = int(np.prod(in_shape, dtype=np.int64))
    fixed = int(np.prod([s for s in static if s != -1], dtype=np.int64))
    if -1 in static:
        if fixed == 0 or known_in % fixed:
            raise ValueError("reshape: cannot reshape %d elements into %r" % (
                known_in, tuple(static)))
        static[static.index(-1)] = known_in // fixed
    elif fixed != known_in:
        raise ValueError("reshape: cannot reshape %r (%d elements) into %r" % (
            in_shape, known_in, tuple(static)))


def reshape(x: TensorLike, shape: ShapeLike | int, ndim: int | None = None) -> TensorVariable:
    """``x`` reshaped to ``shape`` (ints, integer scalars, or an int vector of static length)."""
    x = as_tensor_variable(x)
    entries = as_shape_entries(shape)
    if ndim is not None and ndim != len(entries):
        raise ValueError("reshape: ndim=%d but the shape has %d entries" % (ndim, len(entries)))
    return Reshape(len(entries))(x, *entries)


class Dot(DotC, Op):
    """Matrix and vector products (1-d and 2-d operands).

    ``perform`` uses NumPy (BLAS); the C code (:mod:`nbgraph.tensor.c_code.dot`)
    runs the matrix-vector products, split across threads, and every product
    under ``linker="c"``.  ``c_preferred`` tells the C-VM linker which is faster.
    """

    __props__ = ()

    def make_node(self, x: TensorLike, y: TensorLike) -> Apply:
        x, y = _as_argument(x, "dot", "x"), _as_argument(y, "dot", "y")
        for name, v in (("x", x), ("y", y)):
            if v.ndim not in (1, 2):
                raise TypeError("dot: argument %s (%r) must be 1-d or 2-d, got %d dimensions"
                                % (name, v, v.ndim))
        kx = x.type.shape[-1]
        ky = y.type.shape[0]
        if kx is not None and ky is not None and kx != ky:
            raise ValueError("dot: inner dimensions differ: %r has %d, %r has %d" % (
                x, kx, y, ky))
        out_shape = x.type.shape[:-1] + y.type.shape[1:]
        dtype = np.dot(np.zeros((1,) * x.ndim, x.dtype), np.zeros((1,) * y.ndim, y.dtype)).dtype
        return Apply(self, [x, y], [TensorType(dtype, out_shape)()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        x, y = inputs
        try:
            out = product_function(node)(x, y)
        except ValueError as exc:
            raise ValueError("dot: shapes %s and %s are not aligned" % (x.shape, y.shape)) \
                from exc
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def make_py_thunk(self, node, in_cells, out_cells):
        """:meth:`perform` without its per-call overhead (same results and errors)."""
        (a, b), (o,) = in_cells, out_cells
        dtype = node.outputs[0].type.numpy_dtype
        npdot, asarray, ndarray = product_function(node), np.asarray, np.ndarray

        def thunk():
            x, y = a[0], b[0]
            try:
                out = npdot(x, y)
            except ValueError as exc:
                raise ValueError("dot: shapes %s and %s are not aligned" % (
                    x.shape, y.shape)) from exc
            if type(out) is not ndarray or out.dtype is not dtype:
                out = asarray(out, dtype=dtype)
            o[0] = out
        return thunk

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A matrix/vector product."""
        from nbgraph.core.chunks import ChunkSemantics

        return ChunkSemantics("dot")

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        xs, ys = input_shapes
        return [tuple(xs[:-1]) + tuple(ys[1:])]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.math import outer

        x, y = inputs
        (gz,) = output_grads
        if "complex" in x.dtype + y.dtype:
            # Theano's complex gradient of a real cost: each factor's conjugate
            from nbgraph.tensor.complex_ops import conj

            x, y = [conj(v) if "complex" in v.dtype else v for v in (x, y)]
        if x.ndim == 1 and y.ndim == 1:
            gx, gy = gz * y, gz * x
            if not is_discrete(x) and not is_discrete(y):
                # both vectors have one length: each gradient keeps its input's static size
                return [x.type.filter_variable(input_gradient(gx, x)),
                        y.type.filter_variable(input_gradient(gy, y))]
        elif x.ndim == 2 and y.ndim == 1:
            gx, gy = outer(gz, y), dot(x.T, gz)
        elif x.ndim == 1 and y.ndim == 2:
            gx, gy = dot(y, gz), outer(x, gz)
        else:
            gx, gy = dot(gz, y.T), dot(x.T, gz)
        return [input_gradient(gx, x), input_gradient(gy, y)]


_dot = Dot()


def dot(x: TensorLike, y: TensorLike) -> TensorVariable:
    """Matrix/vector product of 1-d or 2-d tensors (NumPy's ``dot``)."""
    return _dot(x, y)


class Join(Op):
    """Concatenation of tensors along ``axis``."""

    __props__ = ("axis",)

    def __init__(self, axis: int) -> None:
        self.axis = int(axis)

    def make_node(self, *tensors):
        if not tensors:
            raise ValueError("join needs at least one tensor")
        tensors = [_as_argument(t, "join", "tensor %d" % i) for i, t in enumerate(tensors)]
        ndim = tensors[0].ndim
        if ndim == 0:
            raise ValueError("join: zero-dimensional tensors cannot be concatenated")
        if not 0 <= self.axis < ndim:
            raise AxisError("join: axis %d is out of range for %d dimensions" % (
                self.axis, ndim))
        for i, t in enumerate(tensors):
            if t.ndim != ndim:
                raise ValueError("join: tensor %d (%r) has %d dimensions, expected %d" % (
                    i, t, t.ndim, ndim))
        dtype = np.result_type(*[t.type.numpy_dtype for t in tensors])
        shape = []
        for d in range(ndim):
            sizes = [t.type.shape[d] for t in tensors]
            if d == self.axis:
                shape.append(None if None in sizes else sum(sizes))
                continue
            known = {s for s in sizes if s is not None}
            if len(known) > 1:
                raise ValueError("join: dimension %d differs between inputs: %s" % (
                    d, sorted(known)))
            shape.append(known.pop() if known else None)
        return Apply(self, tensors, [TensorType(dtype, tuple(shape))()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        out = np.concatenate(inputs, axis=self.axis)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def chunk_semantics(self, node: Apply) -> ChunkSemantics:
        """A concatenation along ``axis``."""
        from nbgraph.core.chunks import ChunkSemantics

        return ChunkSemantics.concatenate(self.axis)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        # the other dimensions agree in every run that does not fail: read the first's
        shape = list(input_shapes[0])
        shape[self.axis] = shape_sum([shp[self.axis] for shp in input_shapes])
        return [with_static_sizes(node.outputs[0], shape)]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.subtensor import getitem

        (gz,) = output_grads
        grads = []
        start = constant_shape_entry(0)
        for t in inputs:
            stop = start + shape_i(t, self.axis)
            index = [slice(None)] * gz.ndim
            index[self.axis] = slice(start, stop)
            # the slice loses the static sizes t has: give them back, or a grad
            # flowing on (e.g. through stack's DimShuffle) cannot use them
            g = specify_shape(getitem(gz, tuple(index)), t.type.shape)
            grads.append(input_gradient(g, t))
            start = stop
        return grads


def join(axis: int, *tensors: TensorLike) -> TensorVariable:
    """Concatenate ``tensors`` (or one list of them) along ``axis``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not isinstance(axis, (int, np.integer)):
        raise TypeError("join: axis must be an int, got %r" % (axis,))
    ndim = as_tensor_variable(tensors[0]).ndim if tensors else 0
    return Join(axis % ndim if ndim and -ndim <= axis < ndim else axis)(*tensors)


def concatenate(tensors: Sequence[TensorLike], axis: int = 0) -> TensorVariable:
    """NumPy-style spelling of :func:`join`."""
    return join(axis, *tensors)


def stack(tensors: Sequence[TensorLike], axis: int = 0) -> TensorVariable:
    """Stack tensors of equal shape along a new axis."""
    args = [_as_argument(t, "stack", "tensor %d" % i) for i, t in enumerate(tensors)]
    if not args:
        raise ValueError("stack needs at least one tensor")
    ndim = args[0].ndim
    for i, t in enumerate(args):
        if t.ndim != ndim:
            raise ValueError("stack: tensor %d (%r) has %d dimensions, expected %d like tensor 0"
                             % (i, t, t.ndim, ndim))
    if not -ndim - 1 <= axis <= ndim:
        raise AxisError("stack: axis %d is out of range for %d-dimensional tensors" % (
            axis, ndim))
    axis %= ndim + 1
    pattern = tuple(range(axis)) + ("x",) + tuple(range(axis, ndim))
    return join(axis, *[t.dimshuffle(*pattern) for t in args])
