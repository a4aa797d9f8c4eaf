"""Argument checks shared by the op-library modules (creation, shape, reductions, indexing).

Each helper turns a user argument into what an Op needs, or raises the exception
class NumPy raises for the same mistake, naming the function and the argument.

>>> import numpy as np
>>> normalize_axis_index(-1, 3, "cumsum")
2
>>> try:
...     normalize_axis_index(3, 3, "cumsum")
... except np.exceptions.AxisError as exc:
...     print(exc)
cumsum: axis 3 is out of bounds for a tensor of dimension 3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nbgraph.core.graph import Constant, Variable
from nbgraph.tensor.type import DISCRETE_DTYPES
from nbgraph.tensor.variable import as_tensor_variable

if TYPE_CHECKING:
    from nbgraph.tensor.variable import AnyTensor

#: What the op library's functions accept for a tensor argument: a tensor Variable or
#: anything :func:`~nbgraph.tensor.variable.as_tensor_variable` turns into a constant.
TensorLike = Variable | np.ndarray | np.generic | int | float | complex | bool | list | tuple
#: A scalar argument (a 0-d tensor Variable or a Python/NumPy number).
ScalarLike = Variable | int | float | np.number
#: An integer argument (an integer scalar Variable or an int).
IntLike = Variable | int | np.integer
#: An axis argument: one int or a sequence of ints.
Axes = int | Sequence[int]
#: A shape: a sequence of ints and integer scalar Variables, or an int vector Variable.
ShapeLike = Sequence[int | np.integer | Variable] | Variable
#: A dtype argument: a name (``"float32"``, ``"floatX"``), a NumPy dtype or scalar
#: type, or None (the function's default).
DTypeLike = str | np.dtype | type | None

__all__ = ["TensorLike", "ScalarLike", "IntLike", "Axes", "ShapeLike", "DTypeLike", "AxisError",
           "tensor_arg", "scalar_arg", "int_scalar_arg", "normalize_axis_index",
           "normalize_axis_tuple", "static_value", "static_int", "as_int_tuple"]

AxisError = np.exceptions.AxisError


def tensor_arg(value: object, where: str, what: str) -> AnyTensor:
    """``value`` as a tensor Variable; a TypeError names ``what`` of ``where`` if impossible."""
    try:
        return as_tensor_variable(value)  # type: ignore[arg-type]  # refused with a TypeError
    except (TypeError, ValueError) as exc:
        raise TypeError("%s: argument %s: %s" % (where, what, exc)) from exc


def scalar_arg(value: object, where: str, what: str) -> AnyTensor:
    """``value`` as a 0-d tensor Variable (any real dtype)."""
    v = tensor_arg(value, where, what)
    if v.ndim != 0:
        raise TypeError("%s: argument %s must be a scalar, got %r with %d dimensions" % (
            where, what, v, v.ndim))
    return v


def int_scalar_arg(value: object, where: str, what: str,
                   cast_to: str | None = "int64") -> AnyTensor:
    """``value`` as an integer 0-d tensor Variable (cast to ``cast_to`` unless None)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("%s: argument %s must be an integer, got %r" % (where, what, value))
    v = scalar_arg(value, where, what)
    if v.dtype not in DISCRETE_DTYPES or v.dtype == "bool":
        raise TypeError("%s: argument %s must be an integer, got %r of dtype %s" % (
            where, what, v, v.dtype))
    if cast_to is not None and v.dtype != cast_to:
        if isinstance(v, Constant):
            from nbgraph.tensor.variable import constant

            return constant(np.asarray(v.data).astype(cast_to))
        from nbgraph.tensor.math import cast

        v = cast(v, cast_to)
    return v


def static_value(var: object) -> np.ndarray | None:
    """The NumPy value of a constant Variable, else None."""
    if isinstance(var, Constant):
        return np.asarray(var.data)
    return None


def static_int(var: object) -> int | None:
    """The Python int a constant integer scalar holds, else None."""
    value = static_value(var)
    if value is None or value.ndim != 0 or value.dtype.kind not in "iu":
        return None
    return int(value)


def _check_int(axis: object, where: str, what: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError("%s: %s must be an int, got %r" % (where, what, axis))
    return int(axis)


def normalize_axis_index(axis: object, ndim: int, where: str, what: str = "axis") -> int:
    """One axis in ``[-ndim, ndim)`` as a non-negative int; AxisError when out of range."""
    axis = _check_int(axis, where, what)
    if not -ndim <= axis < ndim:
        raise AxisError("%s: %s %d is out of bounds for a tensor of dimension %d" % (
            where, what, axis, ndim))
    return axis % ndim


def normalize_axis_tuple(axis: Any, ndim: int, where: str, what: str = "axis",
                         allow_duplicate: bool = False) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of non-negative axes (order kept)."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_)):
        axis = (axis,)
    try:
        entries = tuple(axis)
    except TypeError as exc:
        raise TypeError("%s: %s must be an int or a tuple of ints, got %r" % (
            where, what, axis)) from exc
    out = tuple(normalize_axis_index(a, ndim, where, what) for a in entries)
    if not allow_duplicate and len(set(out)) != len(out):
        raise ValueError("%s: repeated axis in %s %r" % (where, what, entries))
    return out


def as_int_tuple(value: Any, where: str, what: str) -> tuple[int, ...]:
    """An int or a sequence of Python ints as a tuple of ints (TypeError otherwise)."""
    if isinstance(value, Variable):
        data = static_value(value)
        if data is None:
            raise TypeError("%s: %s must be known when the graph is built (ints), got the "
                            "symbolic %r" % (where, what, value))
        value = data.tolist()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    try:
        return tuple(_check_int(v, where, what + " entry") for v in value)
    except TypeError as exc:
        if "entry" in str(exc):
            raise
        raise TypeError("%s: %s must be an int or a sequence of ints, got %r" % (
            where, what, value)) from exc
