"""Linear algebra: ``matmul`` (and ``@``) with NumPy's batching, ``tensordot``,
``batched_dot``, ``trace``, ``kron``, and the LAPACK functions of
:mod:`nbgraph.tensor.linalg_ops` (``inv pinv solve cholesky det slogdet eigh svd
qr lstsq``).

>>> import numpy as np
>>> import nbgraph.tensor as nt
>>> a, b = nt.dtensor3("a"), nt.dmatrix("b")
>>> (a @ b).type
TensorType(float64, (None, None, None))
>>> x = np.arange(24.0).reshape(2, 3, 4)
>>> bool(np.array_equal(matmul(a, b).eval({a: x, b: np.ones((4, 2))}), x @ np.ones((4, 2))))
True

One rewrite lives here, in the stabilising part of the fast pipeline (tags
"fast" and "stabilize"): ``dot(inv(A), b)`` becomes ``solve(A, b)``, which is
both cheaper and more accurate; ``Mode().excluding("inv_dot_to_solve")``
turns it off.
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.core.rewriting import node_rewriter
from nbgraph.tensor.basic import Dot, dot, reshape, shape_product
from nbgraph.tensor.elemwise import broadcast_shapes, sum_to_shape
from nbgraph.tensor.linalg_ops import (
    QR, SVD, Cholesky, CholeskyGrad, Det, Eigh, EighGrad, Inv, Lstsq, Pinv, SlogDet, Solve,
    cholesky, det, eigh, inv, lstsq, pinv, qr, slogdet, solve, svd,
)
from nbgraph.tensor.rewriting import register_rewrite
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable
from nbgraph.tensor.grad_rules import input_gradient, is_discrete, zero_gradient

__all__ = ["MatMul", "Trace", "EyeLike", "matmul", "tensordot", "batched_dot", "trace",
           "kron", "Inv", "Pinv", "Solve", "Cholesky", "CholeskyGrad", "Det", "SlogDet",
           "Eigh", "EighGrad", "SVD", "QR", "Lstsq", "inv", "pinv", "solve", "cholesky", "det",
           "slogdet", "eigh", "svd", "qr", "lstsq"]


def _swap_last(x):
    nd = x.ndim
    return x.dimshuffle(*range(nd - 2), nd - 1, nd - 2)


class MatMul(Op):
    """``numpy.matmul`` of two operands of at least 2 dimensions: a stack of
    matrix products, the leading (batch) dimensions broadcast as NumPy does.
    :func:`matmul` handles 1-d operands and sends 2-d ones to :class:`Dot`."""

    __props__ = ()

    def make_node(self, a, b):
        a, b = as_tensor_variable(a), as_tensor_variable(b)
        for what, v in (("a", a), ("b", b)):
            if v.ndim < 2:
                raise TypeError("MatMul: argument %s (%r) needs at least 2 dimensions, got %d"
                                % (what, v, v.ndim))
        k1, k2 = a.type.shape[-1], b.type.shape[-2]
        if k1 is not None and k2 is not None and k1 != k2:
            raise ValueError("matmul: inner dimensions differ: %r has %d, %r has %d" % (
                a, k1, b, k2))
        nd = max(a.ndim, b.ndim)
        batch_a = (1,) * (nd - a.ndim) + a.type.shape[:-2]
        batch_b = (1,) * (nd - b.ndim) + b.type.shape[:-2]
        batch = broadcast_shapes(batch_a, batch_b, names=[a, b])
        dtype = np.result_type(a.dtype, b.dtype).name
        shape = tuple(batch) + (a.type.shape[-2], b.type.shape[-1])
        return Apply(self, [a, b], [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        a, b = inputs
        try:
            out = np.matmul(a, b)
        except ValueError as exc:
            raise ValueError("matmul: shapes %s and %s do not match: %s" % (
                a.shape, b.shape, exc)) from exc
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.math import maximum

        sa, sb = input_shapes
        a, b = node.inputs
        nd = node.outputs[0].ndim
        batch = []
        for i in range(nd - 2):
            ia, ib = i - (nd - a.ndim), i - (nd - b.ndim)
            da = sa[ia] if ia >= 0 else None
            db = sb[ib] if ib >= 0 else None
            static = node.outputs[0].type.shape[i]
            if static is not None:
                from nbgraph.tensor.basic import constant_shape_entry

                batch.append(constant_shape_entry(static))
            elif da is None or db is None:
                batch.append(da if db is None else db)
            else:
                batch.append(maximum(da, db))  # broadcasting: one is 1 or both equal
        return [tuple(batch) + (sa[-2], sb[-1])]

    def grad(self, inputs, output_grads):
        a, b = inputs
        (g,) = output_grads
        return [_reduce_to(matmul(g, _swap_last(b)), a), _reduce_to(matmul(_swap_last(a), g), b)]


def _reduce_to(g, like):
    """``g`` summed over the batch dimensions ``like`` did not have or broadcast."""
    extra = g.ndim - like.ndim
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    return input_gradient(sum_to_shape(g, like), like)


def matmul(a, b):
    """``numpy.matmul(a, b)``: matrix products with NumPy's batching (1-d operands
    are promoted and the added dimension removed again)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    for what, v in (("a", a), ("b", b)):
        if v.ndim == 0:
            raise ValueError("matmul: argument %s (%r) is a scalar; use * instead" % (what, v))
    if a.ndim <= 2 and b.ndim <= 2:
        return dot(a, b)
    a2 = a.dimshuffle("x", 0) if a.ndim == 1 else a
    b2 = b.dimshuffle(0, "x") if b.ndim == 1 else b
    out = MatMul()(a2, b2)
    nd = out.ndim
    if b.ndim == 1:
        out = out.dimshuffle(*range(nd - 1))
        nd -= 1
    if a.ndim == 1:
        out = out.dimshuffle(*range(nd - 2), nd - 1)
    return out


def _axes_lists(a, b, axes):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError("tensordot: axes=%d is out of range for %d-d and %d-d operands"
                             % (n, a.ndim, b.ndim))
        return list(range(a.ndim - n, a.ndim)), list(range(n))
    try:
        axes_a, axes_b = axes
    except (TypeError, ValueError) as exc:
        raise TypeError("tensordot: axes must be an int or a pair of axis lists, got %r"
                        % (axes,)) from exc
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("tensordot: axes %r and %r differ in length" % (axes_a, axes_b))
    norm = []
    for lst, v, what in ((axes_a, a, "a"), (axes_b, b, "b")):
        out = []
        for ax in lst:
            if not -v.ndim <= ax < v.ndim:
                raise ValueError("tensordot: axis %d is out of range for argument %s (%d-d)"
                                 % (ax, what, v.ndim))
            out.append(ax % v.ndim)
        norm.append(out)
    return norm


def tensordot(a, b, axes=2):
    """``numpy.tensordot(a, b, axes)``: sum over the given axes of ``a`` and ``b``
    (an int ``n``: the last ``n`` of ``a`` with the first ``n`` of ``b``)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    axes_a, axes_b = _axes_lists(a, b, axes)
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    sa = [a.shape[i] for i in range(a.ndim)]
    sb = [b.shape[i] for i in range(b.ndim)]
    am = reshape(a.dimshuffle(*free_a, *axes_a),
                 [shape_product([sa[i] for i in free_a]), shape_product([sa[i] for i in axes_a])])
    bm = reshape(b.dimshuffle(*axes_b, *free_b),
                 [shape_product([sb[i] for i in axes_b]), shape_product([sb[i] for i in free_b])])
    out = dot(am, bm)
    return reshape(out, [sa[i] for i in free_a] + [sb[i] for i in free_b])


def batched_dot(a, b):
    """Theano's ``batched_dot``: one product per entry of the leading dimension
    (``(B, n, m) x (B, m, k) -> (B, n, k)``; 2-d operands are batches of vectors)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    for what, v in (("a", a), ("b", b)):
        if v.ndim not in (2, 3):
            raise TypeError("batched_dot: argument %s (%r) must be 2-d or 3-d, got %d" % (
                what, v, v.ndim))
    if a.ndim == 2 and b.ndim == 2:
        return (a * b).sum(axis=1)
    a3 = a.dimshuffle(0, "x", 1) if a.ndim == 2 else a
    b3 = b.dimshuffle(0, 1, "x") if b.ndim == 2 else b
    out = MatMul()(a3, b3)
    if b.ndim == 2:
        out = out.dimshuffle(0, 1)
    if a.ndim == 2:
        out = out.dimshuffle(0, 2) if b.ndim == 3 else out
    return out


class EyeLike(Op):
    """The identity matrix shaped like a 2-d input (``numpy.eye``), of ``dtype``."""

    __props__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype

    def make_node(self, a):
        a = as_tensor_variable(a)
        return Apply(self, [a], [TensorType(self.dtype, a.type.shape)()])

    def perform(self, node, inputs, output_storage):
        rows, cols = inputs[0].shape
        output_storage[0][0] = np.eye(rows, cols, dtype=self.dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        return [zero_gradient(inputs[0])]  # the input gives only the shape


class Trace(Op):
    """The sum of the main diagonal of a matrix (``numpy.trace``)."""

    __props__ = ()

    def make_node(self, a):
        a = as_tensor_variable(a)
        if a.ndim != 2:
            raise TypeError("trace: argument a (%r) must be 2-d, got %d dimensions" % (
                a, a.ndim))
        return Apply(self, [a], [TensorType(np.trace(np.zeros((1, 1), a.dtype)).dtype, ())()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(np.trace(inputs[0]),
                                          dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        return [()]

    def grad(self, inputs, output_grads):
        (a,) = inputs
        if is_discrete(a):  # an integer trace
            return [zero_gradient(a)]
        return [output_grads[0].astype(a.dtype) * EyeLike(a.dtype)(a)]


def trace(a):
    """The trace of the matrix ``a``."""
    return Trace()(a)


def kron(a, b):
    """``numpy.kron(a, b)`` (differentiable: built from a product and a reshape)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    nd = max(a.ndim, b.ndim)
    if nd == 0:
        return a * b
    a = a.dimshuffle(*(["x"] * (nd - a.ndim)), *range(a.ndim)) if a.ndim < nd else a
    b = b.dimshuffle(*(["x"] * (nd - b.ndim)), *range(b.ndim)) if b.ndim < nd else b
    pa, pb = [], []
    for i in range(nd):
        pa += [i, "x"]
        pb += ["x", i]
    prod = a.dimshuffle(*pa) * b.dimshuffle(*pb)
    return reshape(prod, [a.shape[i] * b.shape[i] for i in range(nd)])


@register_rewrite("inv_dot_to_solve", "fast", "stabilize", position=40)
@node_rewriter([Dot])
def inv_dot_to_solve(fgraph, node):
    """``dot(inv(A), b) -> solve(A, b)``: fewer operations and a smaller error
    (it changes the rounding, as every stabilising rewrite may)."""
    left, right = node.inputs
    if left.owner is None or not isinstance(left.owner.op, Inv):
        return None
    out = solve(left.owner.inputs[0], right)
    if out.type != node.outputs[0].type:
        if out.dtype != node.outputs[0].dtype:
            return None
        out = node.outputs[0].type.filter_variable(out)
    return [out]

