"""Filtering numbers into a ScalarType: what ``ScalarType.filter`` accepts and how.

``strict=True`` accepts only a NumPy scalar (or 0-d array) of the exact dtype;
otherwise safe conversions are made, and those that may lose information need
``allow_downcast=True``, except that with ``allow_downcast=None`` a Python
float may be rounded to a narrower float.  Every refusal is a TypeError naming
the value, the received and the expected dtype.

>>> from nbgraph.tensor.scalar_type import int8
>>> filter_scalar(int8, 5), filter_scalar(int8, 300, allow_downcast=True)
(np.int8(5), np.int8(44))
"""

import warnings

import numpy as np
from numpy.exceptions import ComplexWarning

__all__ = ["filter_scalar", "short_repr"]


def filter_scalar(stype, data, strict=False, allow_downcast=None):
    """``data`` as a NumPy scalar of ``stype``'s dtype, or a TypeError saying why not."""
    if isinstance(data, np.ndarray):
        if data.ndim != 0:
            raise TypeError("%s expects a scalar, got an array of shape %s" % (
                stype, data.shape))
        data = data[()]
    if isinstance(data, np.generic):
        return _filter_numpy(stype, data, strict, allow_downcast)
    if isinstance(data, complex):
        data = np.complex128(data)
        if strict:
            raise TypeError("%s expects a NumPy %s scalar (strict), got a Python complex"
                            % (stype, stype.dtype))
        if stype.np_dtype.kind != "c" and not allow_downcast:
            raise TypeError("%s cannot hold the Python complex %r; pass "
                            "allow_downcast=True to keep its real part" % (stype, data))
        return _filter_numpy(stype, data, False, True)
    if isinstance(data, (bool, int, float)):
        if strict:
            raise TypeError("%s expects a NumPy %s scalar (strict), got a Python %s %r" % (
                stype, stype.dtype, type(data).__name__, data))
        return _filter_python(stype, data, allow_downcast)
    raise TypeError("%s expects a %s number, got %s %s" % (
        stype, stype.dtype, type(data).__name__, short_repr(data)))


def _filter_numpy(stype, data, strict, allow_downcast):
    src = data.dtype
    if src == stype.np_dtype:
        return data
    if strict:
        raise TypeError("%s expects a %s scalar (strict), got a %s scalar" % (
            stype, stype.dtype, src.name))
    if src.kind not in "biufc":
        raise TypeError("%s expects a %s number, got a %s scalar" % (
            stype, stype.dtype, src.name))
    if np.can_cast(src, stype.np_dtype, "safe") or allow_downcast:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", ComplexWarning)
            return data.astype(stype.np_dtype)
    raise TypeError("%s cannot convert a %s value to %s without possible loss; pass "
                    "allow_downcast=True to force it" % (stype, src.name, stype.dtype))


def _filter_python(stype, data, allow_downcast):
    """A Python bool, float or int as a NumPy scalar of ``stype``'s dtype."""
    if isinstance(data, bool):
        return stype.np_dtype.type(data)
    if isinstance(data, float):
        return _filter_float(stype, data, allow_downcast)
    kind = stype.np_dtype.kind
    if kind in "iu":
        return _int_into_int(stype, data, allow_downcast)
    if kind == "b":
        return _int_into_bool(stype, data, allow_downcast)
    return _int_into_float(stype, data, allow_downcast)


def _filter_float(stype, data, allow_downcast):
    """A Python float: rounded into a float dtype (refused with ``allow_downcast=False``
    when inexact); into a bool or an integer dtype only with ``allow_downcast``."""
    kind = stype.np_dtype.kind
    make = stype.np_dtype.type
    if kind == "f":
        with np.errstate(all="ignore"):
            value = make(data)
        if _same_float(value, data) or allow_downcast or allow_downcast is None:
            return value
        raise TypeError("%s cannot hold the Python float %r exactly (received float64, "
                        "expected %s); pass allow_downcast=True to round it" % (
                            stype, data, stype.dtype))
    if not allow_downcast:
        raise TypeError("%s cannot hold the Python float %r (received float64, "
                        "expected %s); pass allow_downcast=True to convert it" % (
                            stype, data, stype.dtype))
    if kind == "b":
        return make(data != 0)
    if data != data or data in (float("inf"), float("-inf")):
        raise TypeError("%s cannot represent %r" % (stype, data))
    return _wrap_int(int(data), stype.np_dtype)


def _int_into_int(stype, data, allow_downcast):
    """A Python int into an integer dtype: exact, or wrapped with ``allow_downcast``."""
    info = np.iinfo(stype.np_dtype)
    if info.min <= data <= info.max:
        return stype.np_dtype.type(data)
    if allow_downcast:
        return _wrap_int(data, stype.np_dtype)
    raise TypeError("%s cannot hold the Python integer %d (received int, expected %s "
                    "in [%d, %d]); pass allow_downcast=True to wrap it" % (
                        stype, data, stype.dtype, info.min, info.max))


def _int_into_bool(stype, data, allow_downcast):
    """A Python int into bool: 0 and 1, anything else with ``allow_downcast``."""
    if data in (0, 1) or allow_downcast:
        return stype.np_dtype.type(data != 0)
    raise TypeError("%s cannot hold the Python integer %d (received int, expected bool)"
                    "; pass allow_downcast=True to convert it" % (stype, data))


def _int_into_float(stype, data, allow_downcast):
    """A Python int into a float or complex dtype: exact, or rounded with ``allow_downcast``."""
    make = stype.np_dtype.type
    try:
        value = make(data)
    except OverflowError:
        value = None
    if value is not None and np.isfinite(value) and int(value) == data:
        return value
    if allow_downcast:
        with np.errstate(all="ignore"):
            return make(float(data)) if value is None else value
    raise TypeError("%s cannot hold the Python integer %d exactly (received int, expected "
                    "%s); pass allow_downcast=True to round it" % (stype, data, stype.dtype))


def _same_float(value, data):
    return float(value) == data or (data != data and value != value)


def _wrap_int(value, np_dtype):
    """``value`` reduced modulo 2**bits into the range of integer ``np_dtype``."""
    bits = 8 * np_dtype.itemsize
    value %= 1 << bits
    if np_dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return np_dtype.type(value)


def short_repr(data, limit=50):
    """``repr(data)``, cut to ``limit`` characters."""
    text = repr(data)
    return text if len(text) <= limit else text[:limit - 3] + "..."
