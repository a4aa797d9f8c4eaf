"""The one table of nbgraph's dtypes, and every dtype fact derived from it.

Each supported NumPy dtype has one row of :data:`DTYPES`: its NumPy kind
character, its size in bytes and the C type of one element.  The C code of
scalars and tensors (:data:`C_TYPES`), the dtype groups (integers, floats,
the extended dtypes...) and :func:`dtype_name`, which turns any dtype-like
value into the canonical name, all read this table; nothing else spells a
dtype fact out.

>>> DTYPES["float32"]
DtypeInfo(name='float32', kind='f', itemsize=4, c_type='float')
>>> C_TYPES["bool"], INT_DTYPES
('uint8_t', ('int8', 'int16', 'int32', 'int64'))
>>> dtype_name(np.int16), dtype_name("d")
('int16', 'float64')
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "DtypeInfo",
    "DTYPES",
    "C_TYPES",
    "BOOL_DTYPES",
    "INT_DTYPES",
    "UINT_DTYPES",
    "FLOAT_DTYPES",
    "HALF_DTYPES",
    "COMPLEX_DTYPES",
    "EXTENDED_DTYPES",
    "DISCRETE_DTYPES",
    "REAL_DTYPES",
    "ALL_DTYPES",
    "CONTINUOUS_DTYPES",
    "dtype_name",
]


class DtypeInfo(NamedTuple):
    """One row of the dtype table.

    ``kind`` is NumPy's kind character (``"b"`` bool, ``"i"`` signed, ``"u"``
    unsigned, ``"f"`` float, ``"c"`` complex), ``itemsize`` the bytes of one
    element and ``c_type`` the C type holding it (``uint8_t`` 0 or 1 for bool).
    """

    name: str
    kind: str
    itemsize: int
    c_type: str


#: Every supported dtype, in the order error messages and tests list them.
DTYPES: dict[str, DtypeInfo] = {row.name: row for row in (
    DtypeInfo("bool", "b", 1, "uint8_t"),
    DtypeInfo("int8", "i", 1, "int8_t"),
    DtypeInfo("int16", "i", 2, "int16_t"),
    DtypeInfo("int32", "i", 4, "int32_t"),
    DtypeInfo("int64", "i", 8, "int64_t"),
    DtypeInfo("uint8", "u", 1, "uint8_t"),
    DtypeInfo("uint16", "u", 2, "uint16_t"),
    DtypeInfo("uint32", "u", 4, "uint32_t"),
    DtypeInfo("uint64", "u", 8, "uint64_t"),
    DtypeInfo("float32", "f", 4, "float"),
    DtypeInfo("float64", "f", 8, "double"),
    DtypeInfo("float16", "f", 2, "_Float16"),
    DtypeInfo("complex64", "c", 8, "float _Complex"),
    DtypeInfo("complex128", "c", 16, "double _Complex"),
)}

#: The C type of one element of each dtype (the C code of scalars and tensors reads it).
C_TYPES: dict[str, str] = {name: row.c_type for name, row in DTYPES.items()}


def _names(kind: str, *, half: bool = False) -> tuple[str, ...]:
    return tuple(name for name, row in DTYPES.items()
                 if row.kind == kind and (row.name == "float16") == half)


BOOL_DTYPES = _names("b")
INT_DTYPES = _names("i")
UINT_DTYPES = _names("u")
#: The float dtypes nbgraph computes in.
FLOAT_DTYPES = _names("f")
#: float16: a storage dtype, computed in float32 and rounded per operation.
HALF_DTYPES = _names("f", half=True)
COMPLEX_DTYPES = _names("c")
#: Supported beyond the real computational dtypes: float16 and the complex
#: dtypes.  C kernels handle them only where an Op says so
#: (``CLinkerOp.c_handles_restricted``); elsewhere the node runs in Python.
EXTENDED_DTYPES = HALF_DTYPES + COMPLEX_DTYPES
DISCRETE_DTYPES = BOOL_DTYPES + INT_DTYPES + UINT_DTYPES
#: The real computational dtypes (what Theano's scalar module calls all types).
REAL_DTYPES = DISCRETE_DTYPES + FLOAT_DTYPES
#: Every supported dtype.
ALL_DTYPES = REAL_DTYPES + EXTENDED_DTYPES
#: The dtypes a gradient flows through (Theano's continuous dtypes).
CONTINUOUS_DTYPES = FLOAT_DTYPES + EXTENDED_DTYPES

_NAMES: dict[Any, str] = {}  # dtype-like -> canonical name (np.dtype(...).name is slow, and hot)


def dtype_name(dtype: Any, what: str = "dtype") -> str:
    """The canonical name of a supported dtype (``np.float32``, ``"f4"``... -> ``"float32"``).

    TypeError (naming ``what``) when ``dtype`` is not a NumPy dtype or not one
    nbgraph supports.
    """
    try:
        return _NAMES[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable
        pass
    try:
        name: str = np.dtype(dtype).name
    except TypeError:
        raise TypeError("%s %r is not a NumPy dtype" % (what, dtype)) from None
    if name not in DTYPES:
        raise TypeError("%s %s is not supported; use one of %s" % (
            what, name, ", ".join(ALL_DTYPES)))
    if isinstance(dtype, (str, np.dtype, type)):
        _NAMES[dtype] = name
    return name
