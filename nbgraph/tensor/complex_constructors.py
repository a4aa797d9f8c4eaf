"""Typed constructors of complex tensors, as Theano's: ``c`` complex64, ``z`` complex128.

``cscalar``, ``cvector``, ``cmatrix``, ``crow``, ``ccol``, ``ctensor3``,
``ctensor4`` and their ``z`` twins work as the real ones of
:mod:`nbgraph.tensor.constructors` (each is also a TensorType):

>>> z = zmatrix("z")
>>> z.type, z.type == zmatrix, cvector("c", shape=(3,)).type
(TensorType(complex128, (None, None)), True, TensorType(complex64, (3,)))

Their plural forms (``zvectors("a b")``) are in :mod:`nbgraph.tensor.plurals`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


from nbgraph.tensor.constructors import StaticShape, new_variable, typed_constructor

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.tensor.op_args import DTypeLike
    from nbgraph.tensor.variable import TensorVariable

__all__ = [
    "cscalar", "zscalar", "cvector", "zvector", "cmatrix", "zmatrix", "crow", "zrow", "ccol",
    "zcol", "ctensor3", "ztensor3", "ctensor4", "ztensor4",
]

#: The constructors' names, kind by kind (complex64 first).
NAMES: tuple[str, ...] = tuple(__all__)



@typed_constructor("complex64", ())
def cscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 scalar Variable (0-d: one value)."""
    return new_variable(cscalar, name, dtype, shape)


@typed_constructor("complex128", ())
def zscalar(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 scalar Variable (0-d: one value)."""
    return new_variable(zscalar, name, dtype, shape)


@typed_constructor("complex64", (None,))
def cvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 vector Variable (1-d, any length)."""
    return new_variable(cvector, name, dtype, shape)


@typed_constructor("complex128", (None,))
def zvector(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 vector Variable (1-d, any length)."""
    return new_variable(zvector, name, dtype, shape)


@typed_constructor("complex64", (None, None))
def cmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 matrix Variable (2-d, any shape)."""
    return new_variable(cmatrix, name, dtype, shape)


@typed_constructor("complex128", (None, None))
def zmatrix(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 matrix Variable (2-d, any shape)."""
    return new_variable(zmatrix, name, dtype, shape)


@typed_constructor("complex64", (1, None))
def crow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(crow, name, dtype, shape)


@typed_constructor("complex128", (1, None))
def zrow(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 row Variable (2-d, one row: shape (1, n))."""
    return new_variable(zrow, name, dtype, shape)


@typed_constructor("complex64", (None, 1))
def ccol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(ccol, name, dtype, shape)


@typed_constructor("complex128", (None, 1))
def zcol(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 col Variable (2-d, one column: shape (n, 1))."""
    return new_variable(zcol, name, dtype, shape)


@typed_constructor("complex64", (None, None, None))
def ctensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 tensor3 Variable (3-d, any shape)."""
    return new_variable(ctensor3, name, dtype, shape)


@typed_constructor("complex128", (None, None, None))
def ztensor3(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 tensor3 Variable (3-d, any shape)."""
    return new_variable(ztensor3, name, dtype, shape)


@typed_constructor("complex64", (None, None, None, None))
def ctensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex64 tensor4 Variable (4-d, any shape)."""
    return new_variable(ctensor4, name, dtype, shape)


@typed_constructor("complex128", (None, None, None, None))
def ztensor4(
    name: str | None = None, dtype: DTypeLike = None, shape: StaticShape | None = None,
) -> TensorVariable:
    """A new complex128 tensor4 Variable (4-d, any shape)."""
    return new_variable(ztensor4, name, dtype, shape)
