"""The matrix functions of :mod:`nbgraph.tensor.linalg` that NumPy's LAPACK computes.

Each Op takes 2-d operands (a ``b`` of ``solve`` may be 1-d), computes in the
input's float dtype (float32 stays float32; integers and bools compute in
float64, as ``numpy.linalg`` does) and has ``perform`` through ``numpy.linalg``,
``infer_shape`` and, where the function is differentiable, ``grad``:

* ``inv``: ``-X^T g X^T`` with ``X = inv(A)``;
* ``solve``: ``gb = solve(A^T, g)``, ``gA = -gb x^T``;
* ``cholesky``: the symmetric gradient ``sym(L^-T Phi(L^T gL) L^-1)`` (``Phi``:
  the lower triangle with the diagonal halved); the factorisation reads only
  one triangle, so the gradient is that of the symmetric input;
* ``det``: ``g det(A) inv(A)^T``; ``slogdet``: ``g inv(A)^T`` for the log of
  the absolute value (the sign has no gradient);
* ``eigh``: eigenvalues ``V diag(gw) V^T``; eigenvectors ``V (F o V^T gV) V^T``
  with ``F_ij = 1 / (w_j - w_i)`` (distinct eigenvalues), symmetrised.

``pinv``, ``svd``, ``qr`` and ``lstsq`` have no gradient here: asking for one
raises an error naming the Op.
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.dtypes import FLOAT_DTYPES
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable

__all__ = ["Inv", "Pinv", "Solve", "Cholesky", "Det", "SlogDet", "Eigh", "SVD", "QR",
           "Lstsq", "inv", "pinv", "solve", "cholesky", "det", "slogdet", "eigh", "svd",
           "qr", "lstsq"]


def float_dtype(dtype: str) -> str:
    """The dtype numpy.linalg computes in for an input of ``dtype``."""
    return dtype if dtype in FLOAT_DTYPES else "float64"


def _matrix(value, where, what, ndims=(2,)):
    try:
        var = as_tensor_variable(value)
    except TypeError as exc:
        raise TypeError("%s: argument %s: %s" % (where, what, exc)) from exc
    if var.ndim not in ndims:
        raise TypeError("%s: argument %s (%r) must have %s dimensions, got %d" % (
            where, what, var, " or ".join(map(str, ndims)), var.ndim))
    return var


def _square(var, where):
    rows, cols = var.type.shape
    if rows is not None and cols is not None and rows != cols:
        raise ValueError("%s: argument a (%r) must be square, its static shape is %s" % (
            where, var, var.type.shape))
    n = rows if rows is not None else cols
    return n


def _check_square_value(a, where):
    if a.shape[0] != a.shape[1]:
        raise ValueError("%s: argument a must be square, got shape %s" % (where, a.shape))


class _LinalgOp(Op):
    """Shared plumbing: one 2-d float input unless a subclass says otherwise."""

    __props__ = ()
    name = "linalg"

    def _out(self, var, shape):
        return TensorType(float_dtype(var.dtype), shape)()

    def _no_grad(self):
        raise NotImplementedError(
            "%s has no gradient in nbgraph (its derivative is not defined everywhere or not "
            "implemented); differentiate through inv/solve/cholesky/eigh instead" % self)

    def grad(self, inputs, output_grads):
        self._no_grad()


class Inv(_LinalgOp):
    """The inverse of a square matrix (``numpy.linalg.inv``)."""

    def make_node(self, a):
        a = _matrix(a, "inv", "a")
        _square(a, "inv")
        return Apply(self, [a], [self._out(a, a.type.shape)])

    def perform(self, node, inputs, output_storage):
        (a,) = inputs
        _check_square_value(a, "inv")
        out = np.linalg.inv(a) if a.size else np.empty(a.shape)
        output_storage[0][0] = out.astype(node.outputs[0].type.numpy_dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        (x,) = inputs
        (g,) = output_grads
        xi = inv(x)
        return [-(xi.T.dot(g)).dot(xi.T)]


class Pinv(_LinalgOp):
    """The Moore-Penrose pseudo-inverse (``numpy.linalg.pinv``); no gradient."""

    def make_node(self, a):
        a = _matrix(a, "pinv", "a")
        return Apply(self, [a], [self._out(a, a.type.shape[::-1])])

    def perform(self, node, inputs, output_storage):
        out = np.linalg.pinv(inputs[0])
        output_storage[0][0] = out.astype(node.outputs[0].type.numpy_dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0][::-1]]


class Solve(_LinalgOp):
    """``x`` with ``a x = b`` (``numpy.linalg.solve``).  ``assume_a="pos"``
    marks ``a`` symmetric positive definite: it is then solved through its
    Cholesky factor (half the work; fails if ``a`` is not positive definite)."""

    __props__ = ("assume_a",)

    def __init__(self, assume_a="gen"):
        if assume_a not in ("gen", "pos", "sym"):
            raise ValueError("solve: assume_a must be 'gen', 'sym' or 'pos', got %r" % (
                assume_a,))
        self.assume_a = assume_a

    def make_node(self, a, b):
        a = _matrix(a, "solve", "a")
        b = _matrix(b, "solve", "b", (1, 2))
        n = _square(a, "solve")
        rows = b.type.shape[0]
        if n is not None and rows is not None and n != rows:
            raise ValueError("solve: a (%r) has %d rows, b (%r) has %d" % (a, n, b, rows))
        dtype = float_dtype(np.result_type(a.dtype, b.dtype).name)
        return Apply(self, [a, b], [TensorType(dtype, (a.type.shape[1],) + b.type.shape[1:])()])

    def perform(self, node, inputs, output_storage):
        a, b = inputs
        _check_square_value(a, "solve")
        if a.shape[0] != b.shape[0]:
            raise ValueError("solve: a has %d rows, b has %d" % (a.shape[0], b.shape[0]))
        if self.assume_a == "pos" and a.size:
            low = np.linalg.cholesky(a)
            out = np.linalg.solve(low.T, np.linalg.solve(low, b))
        else:
            out = np.linalg.solve(a, b) if a.size else np.empty(b.shape)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        a_shape, b_shape = input_shapes
        return [(a_shape[1],) + tuple(b_shape[1:])]

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.math import outer

        a, b = inputs
        (g,) = output_grads
        x = self(a, b)
        gb = Solve("gen" if self.assume_a == "gen" else self.assume_a)(a.T, g)
        ga = -outer(gb, x) if b.ndim == 1 else -gb.dot(x.T)
        return [ga, gb]


class Cholesky(_LinalgOp):
    """The lower Cholesky factor ``L`` of a symmetric positive definite matrix
    (``L L^T = a``; ``numpy.linalg.cholesky``, which reads the lower triangle)."""

    def make_node(self, a):
        a = _matrix(a, "cholesky", "a")
        _square(a, "cholesky")
        return Apply(self, [a], [self._out(a, a.type.shape)])

    def perform(self, node, inputs, output_storage):
        (a,) = inputs
        _check_square_value(a, "cholesky")
        try:
            out = np.linalg.cholesky(a)
        except np.linalg.LinAlgError as exc:
            raise ValueError("cholesky: argument a is not positive definite (%s)" % exc) \
                from exc
        output_storage[0][0] = out.astype(node.outputs[0].type.numpy_dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        (a,) = inputs
        return [CholeskyGrad()(self(a), output_grads[0])]


class CholeskyGrad(_LinalgOp):
    """The gradient of :class:`Cholesky` from ``(L, gL)`` (NumPy; no second derivative)."""

    def make_node(self, low, g):
        low, g = _matrix(low, "CholeskyGrad", "L"), _matrix(g, "CholeskyGrad", "gL")
        return Apply(self, [low, g], [self._out(low, low.type.shape)])

    def perform(self, node, inputs, output_storage):
        low, g = inputs
        phi = np.tril(low.T @ g)
        phi[np.diag_indices_from(phi)] *= 0.5
        inv_low = np.linalg.inv(low) if low.size else low
        out = inv_low.T @ phi @ inv_low
        out = 0.5 * (out + out.T)
        output_storage[0][0] = out.astype(node.outputs[0].type.numpy_dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]


class Det(_LinalgOp):
    """The determinant (``numpy.linalg.det``)."""

    def make_node(self, a):
        a = _matrix(a, "det", "a")
        _square(a, "det")
        return Apply(self, [a], [self._out(a, ())])

    def perform(self, node, inputs, output_storage):
        (a,) = inputs
        _check_square_value(a, "det")
        output_storage[0][0] = np.asarray(np.linalg.det(a),
                                          dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        return [()]

    def grad(self, inputs, output_grads):
        (a,) = inputs
        (g,) = output_grads
        return [(g * self(a)) * inv(a).T]


class SlogDet(_LinalgOp):
    """``(sign, log|det|)`` (``numpy.linalg.slogdet``); the log has a gradient."""

    def make_node(self, a):
        a = _matrix(a, "slogdet", "a")
        _square(a, "slogdet")
        return Apply(self, [a], [self._out(a, ()), self._out(a, ())])

    def perform(self, node, inputs, output_storage):
        (a,) = inputs
        _check_square_value(a, "slogdet")
        sign, logdet = np.linalg.slogdet(a)
        dtype = node.outputs[0].type.numpy_dtype
        output_storage[0][0] = np.asarray(sign, dtype=dtype)
        output_storage[1][0] = np.asarray(logdet, dtype=dtype)

    def infer_shape(self, node, input_shapes):
        return [(), ()]

    def grad(self, inputs, output_grads):
        (a,) = inputs
        _, g_log = output_grads  # the sign is piecewise constant: no gradient
        return [g_log * inv(a).T]


class Eigh(_LinalgOp):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix
    (``numpy.linalg.eigh`` with ``UPLO``: which triangle it reads)."""

    __props__ = ("UPLO",)

    def __init__(self, UPLO="L"):
        if UPLO not in ("L", "U"):
            raise ValueError("eigh: UPLO must be 'L' or 'U', got %r" % (UPLO,))
        self.UPLO = UPLO

    def make_node(self, a):
        a = _matrix(a, "eigh", "a")
        n = _square(a, "eigh")
        return Apply(self, [a], [self._out(a, (n,)), self._out(a, (n, n))])

    def perform(self, node, inputs, output_storage):
        (a,) = inputs
        _check_square_value(a, "eigh")
        w, v = np.linalg.eigh(a, UPLO=self.UPLO)
        dtype = node.outputs[0].type.numpy_dtype
        output_storage[0][0] = w.astype(dtype, copy=False)
        output_storage[1][0] = v.astype(dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        n = input_shapes[0][0]
        return [(n,), (n, n)]

    def grad(self, inputs, output_grads):
        (a,) = inputs
        w, v = self(a)
        return [EighGrad()(w, v, *output_grads)]


class EighGrad(_LinalgOp):
    """The gradient of :class:`Eigh` from ``(w, V, gw, gV)`` (NumPy)."""

    def make_node(self, w, v, gw, gv):
        w, gw = as_tensor_variable(w), as_tensor_variable(gw)
        v, gv = as_tensor_variable(v), as_tensor_variable(gv)
        return Apply(self, [w, v, gw, gv], [self._out(v, v.type.shape)])

    def perform(self, node, inputs, output_storage):
        w, v, gw, gv = inputs
        inner = np.diag(gw).astype(v.dtype)
        if np.any(gv):
            diff = w[None, :] - w[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                f = np.where(diff == 0, 0.0, 1.0 / np.where(diff == 0, 1.0, diff))
            inner = inner + f * (v.T @ gv)
        out = v @ inner @ v.T
        out = 0.5 * (out + out.T)
        output_storage[0][0] = out.astype(node.outputs[0].type.numpy_dtype, copy=False)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]


class SVD(_LinalgOp):
    """``numpy.linalg.svd``: ``(U, s, Vh)``, or ``s`` alone with ``compute_uv=False``."""

    __props__ = ("full_matrices", "compute_uv")

    def __init__(self, full_matrices=True, compute_uv=True):
        self.full_matrices = bool(full_matrices)
        self.compute_uv = bool(compute_uv)

    def make_node(self, a):
        a = _matrix(a, "svd", "a")
        m, n = a.type.shape
        k = None if m is None or n is None else min(m, n)
        if not self.compute_uv:
            return Apply(self, [a], [self._out(a, (k,))])
        if self.full_matrices:
            shapes = [(m, m), (k,), (n, n)]
        else:
            shapes = [(m, k), (k,), (k, n)]
        return Apply(self, [a], [self._out(a, s) for s in shapes])

    def perform(self, node, inputs, output_storage):
        result = np.linalg.svd(inputs[0], full_matrices=self.full_matrices,
                               compute_uv=self.compute_uv)
        if not self.compute_uv:
            result = (result,)
        for cell, value, out in zip(output_storage, result, node.outputs, strict=True):
            cell[0] = np.asarray(value, dtype=out.type.numpy_dtype)


class QR(_LinalgOp):
    """``numpy.linalg.qr`` (mode "reduced", "complete" or "r")."""

    __props__ = ("mode",)

    def __init__(self, mode="reduced"):
        if mode not in ("reduced", "complete", "r"):
            raise ValueError("qr: mode must be 'reduced', 'complete' or 'r', got %r" % (mode,))
        self.mode = mode

    def make_node(self, a):
        a = _matrix(a, "qr", "a")
        m, n = a.type.shape
        k = None if m is None or n is None else min(m, n)
        if self.mode == "r":
            return Apply(self, [a], [self._out(a, (k, n))])
        if self.mode == "complete":
            return Apply(self, [a], [self._out(a, (m, m)), self._out(a, (m, n))])
        return Apply(self, [a], [self._out(a, (m, k)), self._out(a, (k, n))])

    def perform(self, node, inputs, output_storage):
        result = np.linalg.qr(inputs[0], mode=self.mode)
        if self.mode == "r":
            result = (result,)
        for cell, value, out in zip(output_storage, result, node.outputs, strict=True):
            cell[0] = np.asarray(value, dtype=out.type.numpy_dtype)


class Lstsq(_LinalgOp):
    """``numpy.linalg.lstsq(a, b, rcond)``: ``(x, residuals, rank, s)``."""

    __props__ = ("rcond",)

    def __init__(self, rcond=None):
        self.rcond = rcond

    def make_node(self, a, b):
        a = _matrix(a, "lstsq", "a")
        b = _matrix(b, "lstsq", "b", (1, 2))
        dtype = float_dtype(np.result_type(a.dtype, b.dtype).name)
        outs = [TensorType(dtype, (a.type.shape[1],) + b.type.shape[1:])(),
                TensorType(dtype, (None,))(), TensorType("int32", ())(),
                TensorType(dtype, (None,))()]
        return Apply(self, [a, b], outs)

    def perform(self, node, inputs, output_storage):
        result = np.linalg.lstsq(inputs[0], inputs[1], rcond=self.rcond)
        for cell, value, out in zip(output_storage, result, node.outputs, strict=True):
            cell[0] = np.asarray(value, dtype=out.type.numpy_dtype)


def inv(a):
    """The inverse of the square matrix ``a``."""
    return Inv()(a)


def pinv(a):
    """The pseudo-inverse of ``a``."""
    return Pinv()(a)


def solve(a, b, assume_a="gen"):
    """``x`` with ``a @ x == b``; ``assume_a="pos"`` for symmetric positive definite ``a``."""
    return Solve(assume_a)(a, b)


def cholesky(a):
    """The lower Cholesky factor of the symmetric positive definite ``a``."""
    return Cholesky()(a)


def det(a):
    """The determinant of ``a``."""
    return Det()(a)


def slogdet(a):
    """``(sign, log(abs(det(a))))``."""
    return SlogDet()(a)


def eigh(a, UPLO="L"):
    """``(w, v)``: eigenvalues (ascending) and eigenvectors of the symmetric ``a``."""
    return Eigh(UPLO)(a)


def svd(a, full_matrices=True, compute_uv=True):
    """``(U, s, Vh)`` (or ``s`` with ``compute_uv=False``), as ``numpy.linalg.svd``."""
    return SVD(full_matrices, compute_uv)(a)


def qr(a, mode="reduced"):
    """``(Q, R)`` (or ``R`` with ``mode="r"``), as ``numpy.linalg.qr``."""
    return QR(mode)(a)


def lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)``, as ``numpy.linalg.lstsq``."""
    return Lstsq(rcond)(a, b)
