"""The typed constructors: ``dvector("x")``, ``fmatrix()``, ``row("r")``, ...

Each kind of tensor (scalar, vector, matrix, row, col, tensor3, tensor4) has one
constructor per dtype prefix (``b`` int8, ``w`` int16, ``i`` int32, ``l`` int64,
``f`` float32, ``d`` float64) and an unprefixed one whose dtype is
``config.floatX`` when it is called.  The prefixed ones are also types, as
Theano's ``T.dmatrix`` (each is a :class:`TypedConstructor`, a TensorType):

>>> x = dmatrix("x")
>>> x.type == dmatrix, dmatrix == fmatrix
(True, False)
>>> fvector("v", shape=(3,)).type
TensorType(float32, (3,))

Plural forms (``dmatrices("a b")``) are in :mod:`nbgraph.tensor.plurals`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nbgraph.config import config
from nbgraph.tensor.type import TensorType

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import DTypeLike
    from nbgraph.tensor.variable import TensorVariable

#: A static shape: one int (known size) or None (unknown) per dimension.
StaticShape = tuple[int | None, ...]

__all__ = [
    "scalar", "vector", "matrix", "row", "col", "tensor3", "tensor4", "bscalar", "wscalar",
    "iscalar", "lscalar", "fscalar", "dscalar", "bvector", "wvector", "ivector", "lvector",
    "fvector", "dvector", "bmatrix", "wmatrix", "imatrix", "lmatrix", "fmatrix", "dmatrix",
    "brow", "wrow", "irow", "lrow", "frow", "drow", "bcol", "wcol", "icol", "lcol", "fcol",
    "dcol", "btensor3", "wtensor3", "itensor3", "ltensor3", "ftensor3", "dtensor3", "btensor4",
    "wtensor4", "itensor4", "ltensor4", "ftensor4", "dtensor4",
    # the helpers that make them
    "StaticShape", "TypedConstructor", "typed_constructor", "check_constructor_shape",
    "new_variable", "new_floatx_variable",
]

#: The constructors' names, in the order kind by kind (unprefixed first).
NAMES: tuple[str, ...] = tuple(__all__[:__all__.index("StaticShape")])


class TypedConstructor(TensorType):
    """A typed constructor such as ``dmatrix``: call it for a new Variable, and
    compare it with types, as Theano's ``T.dmatrix`` (a TensorType):
    ``dmatrix("x").type == dmatrix`` holds.  Variables it makes carry a plain
    TensorType.  ``dtype=``/``shape=`` at call time override its own.

    Made by :func:`typed_constructor` from a plain function, whose name,
    docstring and signature it takes (``help(dmatrix)`` shows them)."""

    __wrapped__: Callable[..., TensorVariable]  # the plain function (functools.update_wrapper)

    def __init__(self, dtype: DTypeLike, shape: StaticShape,
                 make: Callable[..., TensorVariable]) -> None:
        super().__init__(dtype, shape)
        functools.update_wrapper(self, make)
        self.kind: str = make.__name__

    def __call__(  # a constructor's call (Type.__call__ plus dtype= and shape=)
        self, name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
    ) -> TensorVariable:
        """A new Variable of this type (``dtype``/``shape`` override it when given)."""
        made: TensorVariable = self.__wrapped__(name, dtype, shape)
        return made

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorType) and (self.dtype, self.shape) == (
            other.dtype, other.shape)

    def __hash__(self) -> int:
        return hash((TensorType, self._props()))

    def __reduce__(self) -> str:
        # pickled by reference: the module attribute of the same name
        return self.kind


def typed_constructor(
    dtype: DTypeLike, shape: StaticShape,
) -> Callable[[Callable[..., TensorVariable]], TypedConstructor]:
    """Decorator: the function becomes the :class:`TypedConstructor` of ``dtype`` and
    ``shape`` (its body makes the Variable, normally through :func:`new_variable`)."""
    def make(function: Callable[..., TensorVariable]) -> TypedConstructor:
        return TypedConstructor(dtype, shape, function)
    return make


def check_constructor_shape(kind: str, shape: Any, pattern: StaticShape) -> StaticShape:
    """``shape`` as a tuple, refused unless it fits the constructor ``kind``.

    ``pattern`` is the kind's own static shape: the length must match, and a
    dimension the kind fixes to 1 (a row's first, a column's second) must stay
    1 or unknown-free, so ``row(shape=(2, 5))`` cannot build a non-row.
    """
    if not isinstance(shape, tuple):
        raise TypeError("%s(shape=...): the shape must be a tuple of ints or None, got %r"
                        % (kind, shape))
    if len(shape) != len(pattern):
        raise ValueError("%s(shape=%r): a %s has %d dimension%s, the shape gives %d" % (
            kind, shape, kind, len(pattern), "" if len(pattern) == 1 else "s", len(shape)))
    for i, (size, fixed) in enumerate(zip(shape, pattern, strict=True)):
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer))):
            raise TypeError("%s(shape=%r): dimension %d must be an int or None, got %r"
                            % (kind, shape, i, size))
        if fixed == 1 and size != 1:
            raise ValueError("%s(shape=%r): dimension %d of a %s has size 1" % (
                kind, shape, i, kind))
    return shape


def new_variable(kind: TypedConstructor, name: str | None, dtype: DTypeLike,
                 shape: StaticShape | None) -> TensorVariable:
    """A new Variable of the typed constructor ``kind`` (e.g. ``dmatrix``), with
    ``dtype`` and a fitting ``shape`` replacing its own where given."""
    if shape is not None:
        shape = check_constructor_shape(kind.kind, shape, kind.shape)
    variable: TensorVariable = TensorType(
        dtype or kind.dtype, kind.shape if shape is None else shape)(name)
    return variable


def new_floatx_variable(kind: str, pattern: StaticShape, name: str | None, dtype: DTypeLike,
                        shape: StaticShape | None) -> TensorVariable:
    """A new Variable of the unprefixed constructor ``kind`` (static shape ``pattern``):
    dtype ``config.floatX`` as it is now, unless ``dtype`` is given."""
    shape = check_constructor_shape(kind, pattern if shape is None else shape, pattern)
    variable: TensorVariable = TensorType(dtype or config.floatX, shape)(name)
    return variable


def scalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new scalar Variable (0-d: one value); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("scalar", (), name, dtype, shape)


@typed_constructor("int8", ())
def bscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 scalar Variable (0-d: one value)."""
    return new_variable(bscalar, name, dtype, shape)


@typed_constructor("int16", ())
def wscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 scalar Variable (0-d: one value)."""
    return new_variable(wscalar, name, dtype, shape)


@typed_constructor("int32", ())
def iscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 scalar Variable (0-d: one value)."""
    return new_variable(iscalar, name, dtype, shape)


@typed_constructor("int64", ())
def lscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 scalar Variable (0-d: one value)."""
    return new_variable(lscalar, name, dtype, shape)


@typed_constructor("float32", ())
def fscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 scalar Variable (0-d: one value)."""
    return new_variable(fscalar, name, dtype, shape)


@typed_constructor("float64", ())
def dscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 scalar Variable (0-d: one value)."""
    return new_variable(dscalar, name, dtype, shape)


def vector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new vector Variable (1-d, any length); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("vector", (None,), name, dtype, shape)


@typed_constructor("int8", (None,))
def bvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 vector Variable (1-d, any length)."""
    return new_variable(bvector, name, dtype, shape)


@typed_constructor("int16", (None,))
def wvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 vector Variable (1-d, any length)."""
    return new_variable(wvector, name, dtype, shape)


@typed_constructor("int32", (None,))
def ivector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 vector Variable (1-d, any length)."""
    return new_variable(ivector, name, dtype, shape)


@typed_constructor("int64", (None,))
def lvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 vector Variable (1-d, any length)."""
    return new_variable(lvector, name, dtype, shape)


@typed_constructor("float32", (None,))
def fvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 vector Variable (1-d, any length)."""
    return new_variable(fvector, name, dtype, shape)


@typed_constructor("float64", (None,))
def dvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 vector Variable (1-d, any length)."""
    return new_variable(dvector, name, dtype, shape)


def matrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new matrix Variable (2-d, any shape); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("matrix", (None, None), name, dtype, shape)


@typed_constructor("int8", (None, None))
def bmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 matrix Variable (2-d, any shape)."""
    return new_variable(bmatrix, name, dtype, shape)


@typed_constructor("int16", (None, None))
def wmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 matrix Variable (2-d, any shape)."""
    return new_variable(wmatrix, name, dtype, shape)


@typed_constructor("int32", (None, None))
def imatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 matrix Variable (2-d, any shape)."""
    return new_variable(imatrix, name, dtype, shape)


@typed_constructor("int64", (None, None))
def lmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 matrix Variable (2-d, any shape)."""
    return new_variable(lmatrix, name, dtype, shape)


@typed_constructor("float32", (None, None))
def fmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 matrix Variable (2-d, any shape)."""
    return new_variable(fmatrix, name, dtype, shape)


@typed_constructor("float64", (None, None))
def dmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 matrix Variable (2-d, any shape)."""
    return new_variable(dmatrix, name, dtype, shape)


def row(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new row Variable (2-d, one row: shape (1, n)); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("row", (1, None), name, dtype, shape)


@typed_constructor("int8", (1, None))
def brow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(brow, name, dtype, shape)


@typed_constructor("int16", (1, None))
def wrow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(wrow, name, dtype, shape)


@typed_constructor("int32", (1, None))
def irow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(irow, name, dtype, shape)


@typed_constructor("int64", (1, None))
def lrow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(lrow, name, dtype, shape)


@typed_constructor("float32", (1, None))
def frow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(frow, name, dtype, shape)


@typed_constructor("float64", (1, None))
def drow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(drow, name, dtype, shape)


def col(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new col Variable (2-d, one column: shape (n, 1)); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("col", (None, 1), name, dtype, shape)


@typed_constructor("int8", (None, 1))
def bcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(bcol, name, dtype, shape)


@typed_constructor("int16", (None, 1))
def wcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(wcol, name, dtype, shape)


@typed_constructor("int32", (None, 1))
def icol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(icol, name, dtype, shape)


@typed_constructor("int64", (None, 1))
def lcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(lcol, name, dtype, shape)


@typed_constructor("float32", (None, 1))
def fcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(fcol, name, dtype, shape)


@typed_constructor("float64", (None, 1))
def dcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(dcol, name, dtype, shape)


def tensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new tensor3 Variable (3-d, any shape); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("tensor3", (None, None, None), name, dtype, shape)


@typed_constructor("int8", (None, None, None))
def btensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 tensor3 Variable (3-d, any shape)."""
    return new_variable(btensor3, name, dtype, shape)


@typed_constructor("int16", (None, None, None))
def wtensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 tensor3 Variable (3-d, any shape)."""
    return new_variable(wtensor3, name, dtype, shape)


@typed_constructor("int32", (None, None, None))
def itensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 tensor3 Variable (3-d, any shape)."""
    return new_variable(itensor3, name, dtype, shape)


@typed_constructor("int64", (None, None, None))
def ltensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 tensor3 Variable (3-d, any shape)."""
    return new_variable(ltensor3, name, dtype, shape)


@typed_constructor("float32", (None, None, None))
def ftensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 tensor3 Variable (3-d, any shape)."""
    return new_variable(ftensor3, name, dtype, shape)


@typed_constructor("float64", (None, None, None))
def dtensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 tensor3 Variable (3-d, any shape)."""
    return new_variable(dtensor3, name, dtype, shape)


def tensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new tensor4 Variable (4-d, any shape); dtype ``config.floatX`` unless given."""
    return new_floatx_variable("tensor4", (None, None, None, None), name, dtype, shape)


@typed_constructor("int8", (None, None, None, None))
def btensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int8 tensor4 Variable (4-d, any shape)."""
    return new_variable(btensor4, name, dtype, shape)


@typed_constructor("int16", (None, None, None, None))
def wtensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int16 tensor4 Variable (4-d, any shape)."""
    return new_variable(wtensor4, name, dtype, shape)


@typed_constructor("int32", (None, None, None, None))
def itensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int32 tensor4 Variable (4-d, any shape)."""
    return new_variable(itensor4, name, dtype, shape)


@typed_constructor("int64", (None, None, None, None))
def ltensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new int64 tensor4 Variable (4-d, any shape)."""
    return new_variable(ltensor4, name, dtype, shape)


@typed_constructor("float32", (None, None, None, None))
def ftensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float32 tensor4 Variable (4-d, any shape)."""
    return new_variable(ftensor4, name, dtype, shape)


@typed_constructor("float64", (None, None, None, None))
def dtensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new float64 tensor4 Variable (4-d, any shape)."""
    return new_variable(dtensor4, name, dtype, shape)
