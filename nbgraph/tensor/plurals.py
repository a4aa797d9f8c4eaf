"""Plural typed constructors: several Variables at once, as Theano's.

``dmatrices("a", "b")``, ``scalars("x y")`` (or ``"x, y"``), ``vectors(3)``
(unnamed).  One name gives one Variable, several a list:

>>> a, b = dvectors("a b")
>>> a.name, b.type
('a', TensorType(float64, (None,)))
>>> fscalars("s").dtype
'float32'

The complex ones (``c`` complex64, ``z`` complex128) too: ``zvectors("a b")``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union


from nbgraph.tensor.constructors import (
    bcol, bmatrix, brow, bscalar, btensor3, btensor4, bvector, col, dcol, dmatrix, drow, dscalar,
    dtensor3, dtensor4, dvector, fcol, fmatrix, frow, fscalar, ftensor3, ftensor4, fvector, icol,
    imatrix, irow, iscalar, itensor3, itensor4, ivector, lcol, lmatrix, lrow, lscalar, ltensor3,
    ltensor4, lvector, matrix, row, scalar, tensor3, tensor4, vector, wcol, wmatrix, wrow, wscalar,
    wtensor3, wtensor4, wvector,
)
from nbgraph.tensor.complex_constructors import (
    ccol, cmatrix, crow, cscalar, ctensor3, ctensor4, cvector, zcol, zmatrix, zrow, zscalar,
    ztensor3, ztensor4, zvector,
)

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import DTypeLike
    from nbgraph.tensor.variable import TensorVariable

#: What a plural constructor returns: one Variable for one name, else a list.
Several = Union["TensorVariable", list["TensorVariable"]]

__all__ = [
    "scalars", "vectors", "matrices", "rows", "cols", "tensor3s", "tensor4s", "bscalars",
    "wscalars", "iscalars", "lscalars", "fscalars", "dscalars", "bvectors", "wvectors",
    "ivectors", "lvectors", "fvectors", "dvectors", "bmatrices", "wmatrices", "imatrices",
    "lmatrices", "fmatrices", "dmatrices", "brows", "wrows", "irows", "lrows", "frows",
    "drows", "bcols", "wcols", "icols", "lcols", "fcols", "dcols", "btensor3s", "wtensor3s",
    "itensor3s", "ltensor3s", "ftensor3s", "dtensor3s", "btensor4s", "wtensor4s", "itensor4s",
    "ltensor4s", "ftensor4s", "dtensor4s", "cscalars", "zscalars", "cvectors", "zvectors",
    "cmatrices", "zmatrices", "crows", "zrows", "ccols", "zcols", "ctensor3s", "ztensor3s",
    "ctensor4s", "ztensor4s",
    # the helper that makes them
    "Several", "several",
]

#: The plural constructors' names (``dmatrix`` -> ``dmatrices``, ``dvector`` -> ``dvectors``).
NAMES: tuple[str, ...] = tuple(__all__[:__all__.index("Several")])


def several(plural: str, single: Callable[..., TensorVariable], names: tuple[str | int, ...],
            dtype: DTypeLike) -> Several:
    """The Variables the plural constructor ``plural`` makes with ``single``.

    ``names`` are names (each may hold several, split at spaces and commas) or one
    int, a count of unnamed Variables; ``dtype`` overrides ``single``'s when given.
    """
    extra: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    if len(names) == 1 and isinstance(names[0], numbers.Integral):
        made = [single(None, **extra) for _ in range(int(names[0]))]
        return made[0] if len(made) == 1 else made
    split = [n for name in names for n in str(name).replace(",", " ").split()]
    if not split:
        raise TypeError("%s() needs names or a count, e.g. %s('a', 'b')" % (plural, plural))
    made = [single(n, **extra) for n in split]
    return made[0] if len(made) == 1 else made


def scalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several scalar Variables of dtype ``config.floatX``, e.g. ``scalars("a b")``."""
    return several("scalars", scalar, names, dtype)


def bscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 scalar Variables, e.g. ``bscalars("a", "b")`` or ``bscalars(2)``."""
    return several("bscalars", bscalar, names, dtype)


def wscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 scalar Variables, e.g. ``wscalars("a", "b")`` or ``wscalars(2)``."""
    return several("wscalars", wscalar, names, dtype)


def iscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 scalar Variables, e.g. ``iscalars("a", "b")`` or ``iscalars(2)``."""
    return several("iscalars", iscalar, names, dtype)


def lscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 scalar Variables, e.g. ``lscalars("a", "b")`` or ``lscalars(2)``."""
    return several("lscalars", lscalar, names, dtype)


def fscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 scalar Variables, e.g. ``fscalars("a", "b")`` or ``fscalars(2)``."""
    return several("fscalars", fscalar, names, dtype)


def dscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 scalar Variables, e.g. ``dscalars("a", "b")`` or ``dscalars(2)``."""
    return several("dscalars", dscalar, names, dtype)


def vectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several vector Variables of dtype ``config.floatX``, e.g. ``vectors("a b")``."""
    return several("vectors", vector, names, dtype)


def bvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 vector Variables, e.g. ``bvectors("a", "b")`` or ``bvectors(2)``."""
    return several("bvectors", bvector, names, dtype)


def wvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 vector Variables, e.g. ``wvectors("a", "b")`` or ``wvectors(2)``."""
    return several("wvectors", wvector, names, dtype)


def ivectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 vector Variables, e.g. ``ivectors("a", "b")`` or ``ivectors(2)``."""
    return several("ivectors", ivector, names, dtype)


def lvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 vector Variables, e.g. ``lvectors("a", "b")`` or ``lvectors(2)``."""
    return several("lvectors", lvector, names, dtype)


def fvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 vector Variables, e.g. ``fvectors("a", "b")`` or ``fvectors(2)``."""
    return several("fvectors", fvector, names, dtype)


def dvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 vector Variables, e.g. ``dvectors("a", "b")`` or ``dvectors(2)``."""
    return several("dvectors", dvector, names, dtype)


def matrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several matrix Variables of dtype ``config.floatX``, e.g. ``matrices("a b")``."""
    return several("matrices", matrix, names, dtype)


def bmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 matrix Variables, e.g. ``bmatrices("a", "b")`` or ``bmatrices(2)``."""
    return several("bmatrices", bmatrix, names, dtype)


def wmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 matrix Variables, e.g. ``wmatrices("a", "b")`` or ``wmatrices(2)``."""
    return several("wmatrices", wmatrix, names, dtype)


def imatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 matrix Variables, e.g. ``imatrices("a", "b")`` or ``imatrices(2)``."""
    return several("imatrices", imatrix, names, dtype)


def lmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 matrix Variables, e.g. ``lmatrices("a", "b")`` or ``lmatrices(2)``."""
    return several("lmatrices", lmatrix, names, dtype)


def fmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 matrix Variables, e.g. ``fmatrices("a", "b")`` or ``fmatrices(2)``."""
    return several("fmatrices", fmatrix, names, dtype)


def dmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 matrix Variables, e.g. ``dmatrices("a", "b")`` or ``dmatrices(2)``."""
    return several("dmatrices", dmatrix, names, dtype)


def rows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several row Variables of dtype ``config.floatX``, e.g. ``rows("a b")``."""
    return several("rows", row, names, dtype)


def brows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 row Variables, e.g. ``brows("a", "b")`` or ``brows(2)``."""
    return several("brows", brow, names, dtype)


def wrows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 row Variables, e.g. ``wrows("a", "b")`` or ``wrows(2)``."""
    return several("wrows", wrow, names, dtype)


def irows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 row Variables, e.g. ``irows("a", "b")`` or ``irows(2)``."""
    return several("irows", irow, names, dtype)


def lrows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 row Variables, e.g. ``lrows("a", "b")`` or ``lrows(2)``."""
    return several("lrows", lrow, names, dtype)


def frows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 row Variables, e.g. ``frows("a", "b")`` or ``frows(2)``."""
    return several("frows", frow, names, dtype)


def drows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 row Variables, e.g. ``drows("a", "b")`` or ``drows(2)``."""
    return several("drows", drow, names, dtype)


def cols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several col Variables of dtype ``config.floatX``, e.g. ``cols("a b")``."""
    return several("cols", col, names, dtype)


def bcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 col Variables, e.g. ``bcols("a", "b")`` or ``bcols(2)``."""
    return several("bcols", bcol, names, dtype)


def wcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 col Variables, e.g. ``wcols("a", "b")`` or ``wcols(2)``."""
    return several("wcols", wcol, names, dtype)


def icols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 col Variables, e.g. ``icols("a", "b")`` or ``icols(2)``."""
    return several("icols", icol, names, dtype)


def lcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 col Variables, e.g. ``lcols("a", "b")`` or ``lcols(2)``."""
    return several("lcols", lcol, names, dtype)


def fcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 col Variables, e.g. ``fcols("a", "b")`` or ``fcols(2)``."""
    return several("fcols", fcol, names, dtype)


def dcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 col Variables, e.g. ``dcols("a", "b")`` or ``dcols(2)``."""
    return several("dcols", dcol, names, dtype)


def tensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several tensor3 Variables of dtype ``config.floatX``, e.g. ``tensor3s("a b")``."""
    return several("tensor3s", tensor3, names, dtype)


def btensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 tensor3 Variables, e.g. ``btensor3s("a", "b")`` or ``btensor3s(2)``."""
    return several("btensor3s", btensor3, names, dtype)


def wtensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 tensor3 Variables, e.g. ``wtensor3s("a", "b")`` or ``wtensor3s(2)``."""
    return several("wtensor3s", wtensor3, names, dtype)


def itensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 tensor3 Variables, e.g. ``itensor3s("a", "b")`` or ``itensor3s(2)``."""
    return several("itensor3s", itensor3, names, dtype)


def ltensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 tensor3 Variables, e.g. ``ltensor3s("a", "b")`` or ``ltensor3s(2)``."""
    return several("ltensor3s", ltensor3, names, dtype)


def ftensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 tensor3 Variables, e.g. ``ftensor3s("a", "b")`` or ``ftensor3s(2)``."""
    return several("ftensor3s", ftensor3, names, dtype)


def dtensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 tensor3 Variables, e.g. ``dtensor3s("a", "b")`` or ``dtensor3s(2)``."""
    return several("dtensor3s", dtensor3, names, dtype)


def tensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several tensor4 Variables of dtype ``config.floatX``, e.g. ``tensor4s("a b")``."""
    return several("tensor4s", tensor4, names, dtype)


def btensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int8 tensor4 Variables, e.g. ``btensor4s("a", "b")`` or ``btensor4s(2)``."""
    return several("btensor4s", btensor4, names, dtype)


def wtensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int16 tensor4 Variables, e.g. ``wtensor4s("a", "b")`` or ``wtensor4s(2)``."""
    return several("wtensor4s", wtensor4, names, dtype)


def itensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int32 tensor4 Variables, e.g. ``itensor4s("a", "b")`` or ``itensor4s(2)``."""
    return several("itensor4s", itensor4, names, dtype)


def ltensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several int64 tensor4 Variables, e.g. ``ltensor4s("a", "b")`` or ``ltensor4s(2)``."""
    return several("ltensor4s", ltensor4, names, dtype)


def ftensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float32 tensor4 Variables, e.g. ``ftensor4s("a", "b")`` or ``ftensor4s(2)``."""
    return several("ftensor4s", ftensor4, names, dtype)


def dtensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several float64 tensor4 Variables, e.g. ``dtensor4s("a", "b")`` or ``dtensor4s(2)``."""
    return several("dtensor4s", dtensor4, names, dtype)


def cscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 scalar Variables, e.g. ``cscalars("a", "b")`` or ``cscalars(2)``."""
    return several("cscalars", cscalar, names, dtype)


def zscalars(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 scalar Variables, e.g. ``zscalars("a", "b")`` or ``zscalars(2)``."""
    return several("zscalars", zscalar, names, dtype)


def cvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 vector Variables, e.g. ``cvectors("a", "b")`` or ``cvectors(2)``."""
    return several("cvectors", cvector, names, dtype)


def zvectors(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 vector Variables, e.g. ``zvectors("a", "b")`` or ``zvectors(2)``."""
    return several("zvectors", zvector, names, dtype)


def cmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 matrix Variables, e.g. ``cmatrices("a", "b")`` or ``cmatrices(2)``."""
    return several("cmatrices", cmatrix, names, dtype)


def zmatrices(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 matrix Variables, e.g. ``zmatrices("a", "b")`` or ``zmatrices(2)``."""
    return several("zmatrices", zmatrix, names, dtype)


def crows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 row Variables, e.g. ``crows("a", "b")`` or ``crows(2)``."""
    return several("crows", crow, names, dtype)


def zrows(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 row Variables, e.g. ``zrows("a", "b")`` or ``zrows(2)``."""
    return several("zrows", zrow, names, dtype)


def ccols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 col Variables, e.g. ``ccols("a", "b")`` or ``ccols(2)``."""
    return several("ccols", ccol, names, dtype)


def zcols(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 col Variables, e.g. ``zcols("a", "b")`` or ``zcols(2)``."""
    return several("zcols", zcol, names, dtype)


def ctensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 tensor3 Variables, e.g. ``ctensor3s("a", "b")`` or ``ctensor3s(2)``."""
    return several("ctensor3s", ctensor3, names, dtype)


def ztensor3s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 tensor3 Variables, e.g. ``ztensor3s("a", "b")`` or ``ztensor3s(2)``."""
    return several("ztensor3s", ztensor3, names, dtype)


def ctensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex64 tensor4 Variables, e.g. ``ctensor4s("a", "b")`` or ``ctensor4s(2)``."""
    return several("ctensor4s", ctensor4, names, dtype)


def ztensor4s(*names: str | int, dtype: DTypeLike = None) -> Several:
    """Several complex128 tensor4 Variables, e.g. ``ztensor4s("a", "b")`` or ``ztensor4s(2)``."""
    return several("ztensor4s", ztensor4, names, dtype)
