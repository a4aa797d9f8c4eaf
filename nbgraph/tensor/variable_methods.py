"""The NumPy-style methods of tensor Variables that call the op library
(``x.argmax()``, ``x.squeeze()``, ``x.cumsum()``, ...).

A mixin of :class:`~nbgraph.tensor.variable.TensorVariable` and
:class:`~nbgraph.tensor.variable.TensorConstant`; each method imports its
function when called, so the variable module imports no Ops.

>>> from nbgraph.tensor.constructors import dmatrix
>>> x = dmatrix("x")
>>> x.argmax(axis=1).type, x.flatten().type, x.var(keepdims=True).type
(TensorType(int64, (None,)), TensorType(float64, (None,)), TensorType(float64, (1, 1)))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

    from nbgraph.tensor.op_args import Axes, TensorLike
    from nbgraph.tensor.variable import TensorVariable

    # The checker sees the mixin as what it is mixed into (a Variable), so its
    # methods may pass ``self`` where a tensor is expected.
    from nbgraph.core.graph import Variable as _MixedInto
else:
    _MixedInto = object


def _extra() -> ModuleType:
    from nbgraph.tensor import extra_ops

    return extra_ops


def _shape_ops() -> ModuleType:
    from nbgraph.tensor import shape_ops

    return shape_ops


class TensorMethods(_MixedInto):
    """Reductions, scans and shape methods, spelled as on a NumPy array."""

    def argmax(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """Indices of the maxima over ``axis`` (int64)."""
        return _extra().argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """Indices of the minima over ``axis`` (int64)."""
        return _extra().argmin(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """True where some element over ``axis`` is nonzero."""
        return _extra().any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """True where every element over ``axis`` is nonzero."""
        return _extra().all(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Axes | None = None, ddof: int = 0, keepdims: bool = False,
            corrected: bool = False) -> TensorVariable:
        """Variance over ``axis`` (``np.var``)."""
        return _extra().var(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def std(self, axis: Axes | None = None, ddof: int = 0, keepdims: bool = False,
            corrected: bool = False) -> TensorVariable:
        """Standard deviation over ``axis`` (``np.std``)."""
        return _extra().std(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def cumsum(self, axis: int | None = None) -> TensorVariable:
        """Running sums along ``axis`` (None: flattened)."""
        return _extra().cumsum(self, axis=axis)

    def cumprod(self, axis: int | None = None) -> TensorVariable:
        """Running products along ``axis`` (None: flattened)."""
        return _extra().cumprod(self, axis=axis)

    def norm(self, ord: float | str | None = None, axis: Axes | None = None,
             keepdims: bool = False) -> TensorVariable:
        """``np.linalg.norm`` of this tensor."""
        return _extra().norm(self, ord=ord, axis=axis, keepdims=keepdims)

    def flatten(self, ndim: int = 1) -> TensorVariable:
        """The elements with the last dimensions merged so that ``ndim`` remain (1: all)."""
        return _shape_ops().flatten(self, ndim)

    def ravel(self) -> TensorVariable:
        """All elements as a vector."""
        return _shape_ops().flatten(self, 1)

    def squeeze(self, axis: Axes | None = None) -> TensorVariable:
        """Without the size-1 ``axis`` (None: the statically size-1 ones)."""
        return _shape_ops().squeeze(self, axis)

    def transpose(self, *axes: int | list[int] | tuple[int, ...] | None) -> TensorVariable:
        """Dimensions permuted by ``axes`` (reversed when none are given)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (list, tuple))):
            return _shape_ops().transpose(self, axes[0] or None)
        return _shape_ops().transpose(self, axes or None)

    def swapaxes(self, axis1: int, axis2: int) -> TensorVariable:
        """Dimensions ``axis1`` and ``axis2`` exchanged."""
        return _shape_ops().swapaxes(self, axis1, axis2)

    def repeat(self, repeats: TensorLike, axis: int | None = None) -> TensorVariable:
        """Elements repeated along ``axis`` (``np.repeat``)."""
        return _shape_ops().repeat(self, repeats, axis)

    def take(self, indices: TensorLike, axis: int | None = None) -> TensorVariable:
        """Elements at ``indices`` along ``axis`` (``np.take``)."""
        from nbgraph.tensor.advanced_indexing import take

        return take(self, indices, axis)

    def diagonal(self, offset: int = 0) -> TensorVariable:
        """The ``offset``-th diagonal of a matrix."""
        from nbgraph.tensor.creation import ExtractDiag

        return ExtractDiag(offset)(self)


    def clip(self, a_min: TensorLike, a_max: TensorLike) -> TensorVariable:
        """Values limited to ``[a_min, a_max]`` (``np.clip``)."""
        from nbgraph.tensor.ufuncs import clip

        return clip(self, a_min, a_max)

    def round(self, mode: str = "half_to_even") -> TensorVariable:
        """Values rounded to integers (NumPy's half-to-even unless ``mode`` says otherwise)."""
        from nbgraph.tensor.ufuncs import round as round_

        return round_(self, mode)

    def __round__(self, ndigits: int | None = None) -> TensorVariable:
        if ndigits is not None:
            raise TypeError("round(x, ndigits) is not supported on a symbolic tensor; use "
                            "x.round()")
        return self.round()

    def max_and_argmax(self, axis: Axes | None = None,
                       keepdims: bool = False) -> list[TensorVariable]:
        """``[max, argmax]`` over ``axis`` in one pass."""
        return _extra().max_and_argmax(self, axis=axis, keepdims=keepdims)

    def diff(self, n: int = 1, axis: int = -1) -> TensorVariable:
        """The ``n``-th discrete difference along ``axis`` (``np.diff``)."""
        return _extra().diff(self, n=n, axis=axis)

    def tile(self, reps: int | tuple[int, ...] | list[int]) -> TensorVariable:
        """Repeated ``reps`` times along each dimension (``np.tile``)."""
        return _shape_ops().tile(self, reps)

    def roll(self, shift: TensorLike, axis: Axes | None = None) -> TensorVariable:
        """Elements shifted cyclically along ``axis`` (``np.roll``)."""
        return _shape_ops().roll(self, shift, axis)

    def sort(self, axis: int | None = -1, kind: str = "quicksort") -> TensorVariable:
        """A sorted copy along ``axis`` (a graph cannot sort in place as NumPy's method does)."""
        from nbgraph.tensor.sorting import sort

        return sort(self, axis, kind)

    def argsort(self, axis: int | None = -1, kind: str = "quicksort") -> TensorVariable:
        """The indices that sort along ``axis`` (int64)."""
        from nbgraph.tensor.sorting import argsort

        return argsort(self, axis, kind)
