"""The NumPy-style methods of tensor Variables that call the op library
(``x.argmax()``, ``x.squeeze()``, ``x.cumsum()``, ...).

A mixin of :class:`~nbgraph.tensor.variable.TensorVariable` and
:class:`~nbgraph.tensor.variable.TensorConstant`; each method imports its
function when called, so the variable module imports no Ops.

>>> from nbgraph.tensor.variable import dmatrix
>>> x = dmatrix("x")
>>> x.argmax(axis=1).type, x.flatten().type, x.var(keepdims=True).type
(TensorType(int64, (None,)), TensorType(float64, (None,)), TensorType(float64, (1, 1)))
"""

from __future__ import annotations


def _extra():
    from nbgraph.tensor import extra_ops

    return extra_ops


def _shape_ops():
    from nbgraph.tensor import shape_ops

    return shape_ops


class TensorMethods:
    """Reductions, scans and shape methods, spelled as on a NumPy array."""

    def argmax(self, axis=None, keepdims=False):
        """Indices of the maxima over ``axis`` (int64)."""
        return _extra().argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        """Indices of the minima over ``axis`` (int64)."""
        return _extra().argmin(self, axis=axis, keepdims=keepdims)

    def any(self, axis=None, keepdims=False):
        """True where some element over ``axis`` is nonzero."""
        return _extra().any(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        """True where every element over ``axis`` is nonzero."""
        return _extra().all(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, ddof=0, keepdims=False, corrected=False):
        """Variance over ``axis`` (``np.var``)."""
        return _extra().var(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def std(self, axis=None, ddof=0, keepdims=False, corrected=False):
        """Standard deviation over ``axis`` (``np.std``)."""
        return _extra().std(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def cumsum(self, axis=None):
        """Running sums along ``axis`` (None: flattened)."""
        return _extra().cumsum(self, axis=axis)

    def cumprod(self, axis=None):
        """Running products along ``axis`` (None: flattened)."""
        return _extra().cumprod(self, axis=axis)

    def norm(self, ord=None, axis=None, keepdims=False):
        """``np.linalg.norm`` of this tensor."""
        return _extra().norm(self, ord=ord, axis=axis, keepdims=keepdims)

    def flatten(self, ndim=1):
        """The elements with the last dimensions merged so that ``ndim`` remain (1: all)."""
        return _shape_ops().flatten(self, ndim)

    def ravel(self):
        """All elements as a vector."""
        return _shape_ops().flatten(self, 1)

    def squeeze(self, axis=None):
        """Without the size-1 ``axis`` (None: the statically size-1 ones)."""
        return _shape_ops().squeeze(self, axis)

    def transpose(self, *axes):
        """Dimensions permuted by ``axes`` (reversed when none are given)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (list, tuple))):
            axes = axes[0]
        return _shape_ops().transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        """Dimensions ``axis1`` and ``axis2`` exchanged."""
        return _shape_ops().swapaxes(self, axis1, axis2)

    def repeat(self, repeats, axis=None):
        """Elements repeated along ``axis`` (``np.repeat``)."""
        return _shape_ops().repeat(self, repeats, axis)

    def take(self, indices, axis=None):
        """Elements at ``indices`` along ``axis`` (``np.take``)."""
        from nbgraph.tensor.advanced_indexing import take

        return take(self, indices, axis)

    def diagonal(self, offset=0):
        """The ``offset``-th diagonal of a matrix."""
        from nbgraph.tensor.creation import ExtractDiag

        return ExtractDiag(offset)(self)

