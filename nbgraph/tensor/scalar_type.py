"""Scalar values: ScalarType, scalar Variables and Constants, NumPy-style promotion.

This is the world Elemwise kernels are written in: one number at a time, of a
fixed NumPy dtype.  Values of a :class:`ScalarType` are NumPy scalars
(``np.float32(1.5)``, ``np.int8(-3)``); in C they are plain C numbers
(``float``, ``int8_t``).

Python numbers are *weak*, as in NumPy 2 (NEP 50): ``as_scalar(2.0)`` makes a
constant flagged ``weak``, and an op applied to it together with a float32
variable converts the 2.0 to float32 instead of upcasting the variable.
``float16`` is a storage dtype: ops give float16 where NumPy does (on
float16 values, and ``exp`` of an int8 or a bool), computing in float32 and
rounding as NumPy's float16 loops do.
``complex64``/``complex128`` follow NumPy's promotion (a Python ``complex``
is weak, as in NEP 50).  What ``ScalarType.filter`` accepts is decided in
:mod:`nbgraph.tensor.scalar_filter`.

>>> x = float32("x")
>>> (x * 2.0).type
ScalarType(float32)
"""


import numpy as np

from nbgraph.core.graph import Constant, Variable
from nbgraph.core.c_interface import CLinkerType
from nbgraph.core.type import Type
from nbgraph.tensor import dtypes
from nbgraph.tensor.dtypes import C_TYPES, dtype_name
from nbgraph.tensor.scalar_filter import filter_scalar, short_repr

__all__ = [
    "ScalarType",
    "ScalarVariable",
    "ScalarConstant",
    "as_scalar",
    "get_scalar_type",
    "promote_weak",
    "weak_promotion_dtype",
    "check_weak_fits",
    "strong_constant",
    "upcast",
    "all_dtypes",
    "bool_dtypes",
    "int_dtypes",
    "uint_dtypes",
    "float_dtypes",
    "half_dtypes",
    "complex_dtypes",
    "extended_dtypes",
    "discrete_dtypes",
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "float16",
    "complex64",
    "complex128",
]

#: Theano's lowercase names of the dtype groups (the table is nbgraph.tensor.dtypes).
bool_dtypes = dtypes.BOOL_DTYPES
int_dtypes = dtypes.INT_DTYPES
uint_dtypes = dtypes.UINT_DTYPES
float_dtypes = dtypes.FLOAT_DTYPES
discrete_dtypes = dtypes.DISCRETE_DTYPES
#: The real computational dtypes (float16 and complex are :data:`extended_dtypes`).
all_dtypes = dtypes.REAL_DTYPES
half_dtypes = dtypes.HALF_DTYPES
complex_dtypes = dtypes.COMPLEX_DTYPES
extended_dtypes = dtypes.EXTENDED_DTYPES


def upcast(*dtypes):
    """The dtype NumPy gives a binary operation on values of ``dtypes`` (a str).

    >>> upcast("int8", "uint8"), upcast("float32", "int64")
    ('int16', 'float64')
    """
    if not dtypes:
        raise TypeError("upcast needs at least one dtype")
    return dtype_name(np.result_type(*[np.dtype(d) for d in dtypes]))


class ScalarType(CLinkerType, Type):
    """The Type of a single number of one NumPy dtype.

    ``dtype`` is one of :data:`all_dtypes`.  Values are NumPy scalars of
    exactly that dtype; in C they are ``c_type`` numbers (``uint8_t`` holding
    0 or 1 for bool).  Generated C code assumes ``<stdint.h>`` and
    ``<math.h>``.

    ``filter`` follows the usual rules: ``strict=True`` accepts only a NumPy
    scalar (or 0-d array) of the exact dtype; otherwise safe upcasts are done,
    and conversions that may lose information need ``allow_downcast=True`` —
    except that with ``allow_downcast=None`` a Python float may be rounded to
    float32.
    """

    __props__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype_name(dtype)

    @property
    def np_dtype(self):
        """The NumPy dtype object."""
        return np.dtype(self.dtype)

    @property
    def c_type(self):
        """The C type holding a value (``double``, ``int8_t``, ``uint8_t`` for bool)."""
        return C_TYPES[self.dtype]

    def __str__(self):
        return "ScalarType(%s)" % self.dtype

    # -- values ----------------------------------------------------------
    def filter(self, data, strict=False, allow_downcast=None):
        """Return ``data`` as a NumPy scalar of this dtype, or raise TypeError
        (the rules: :mod:`nbgraph.tensor.scalar_filter`)."""
        return filter_scalar(self, data, strict, allow_downcast)

    def values_eq(self, a, b):
        """Exact equality; NaN equals NaN (so equal NaN constants merge)."""
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != () or b.shape != ():
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            if np.isnan(a) and np.isnan(b):
                return True
        return bool(a == b)

    def values_eq_approx(self, a, b, rtol=None, atol=None):
        """Equality up to a dtype-aware tolerance.

        Integers and bools compare exactly.  Floats: NaN matches NaN, an
        infinity matches only the same infinity, and finite values match when
        ``|a - b| <= atol + rtol * max(|a|, |b|)`` (float64: rtol 1e-5,
        atol 1e-8; float32: rtol 1e-4, atol 1e-6).
        """
        if self.np_dtype.kind == "c":
            real = get_scalar_type(self.np_dtype.type(0).real.dtype)
            a, b = np.complex128(a), np.complex128(b)
            return (real.values_eq_approx(a.real, b.real, rtol, atol)
                    and real.values_eq_approx(a.imag, b.imag, rtol, atol))
        if self.np_dtype.kind != "f":
            return self.values_eq(a, b)
        a = np.float64(np.asarray(a, dtype=np.float64))
        b = np.float64(np.asarray(b, dtype=np.float64))
        if np.isnan(a) or np.isnan(b):
            return bool(np.isnan(a) and np.isnan(b))
        if np.isinf(a) or np.isinf(b):
            return bool(a == b)
        if rtol is None:
            rtol = {"float64": 1e-5, "float32": 1e-4}.get(self.dtype, 1e-2)
        if atol is None:
            atol = {"float64": 1e-8, "float32": 1e-6}.get(self.dtype, 1e-3)
        return bool(abs(a - b) <= atol + rtol * max(abs(a), abs(b)))

    def data_signature(self, data):
        """The dtype and the raw bytes: NaN constants merge, 0.0 and -0.0 do not."""
        return (self.dtype, np.asarray(data).tobytes())

    def may_share_memory(self, a, b):
        """Scalars are immutable values: never."""
        return False

    def get_shape_info(self, obj):
        """Scalars have no shape; returns ``()``."""
        return ()

    def get_size(self, shape_info):
        """The dtype's item size in bytes."""
        return self.np_dtype.itemsize

    # -- gradients -------------------------------------------------------
    def grad_ones_like(self, var):
        """The seed 1 (of the cost's float dtype) for differentiating ``var``."""
        if self.np_dtype.kind != "f":
            raise TypeError("cannot differentiate the %s cost %r: its type %s is not a "
                            "real float type%s" % (self.dtype, var, self, _COMPLEX_COST
                                                   if self.np_dtype.kind == "c" else ""))
        return ScalarConstant(self, 1)

    def grad_zeros_like(self, var):
        """A zero gradient: of ``var``'s dtype for floats, float64 otherwise."""
        dtype = self.dtype if self.np_dtype.kind in "fc" else "float64"
        return ScalarConstant(get_scalar_type(dtype), 0)

    def grad_sum(self, terms):
        """The sum of gradient contributions, as one (n-ary) add."""
        from nbgraph.tensor.scalar_ops import add

        return add(*terms)

    def grad_flows_back(self):
        """False for integer and boolean scalars (their ops pass zeros back)."""
        return self.np_dtype.kind in "fc"

    def grad_is_zero(self, var):
        """True for a constant zero (what :meth:`grad_zeros_like` makes)."""
        return isinstance(var, ScalarConstant) and not var.data

    # -- C ---------------------------------------------------------------
    def c_declare(self, name, sub, check_input=True):
        """``<c_type> name;``"""
        return "%s %s;\n" % (self.c_type, name)

    def c_init(self, name, sub):
        """``name = 0;``"""
        return "%s = 0;\n" % name

    def c_extract(self, name, sub, check_input=True):
        """Read the value from ``sub["slot"]`` (a pointer to a ``c_type``)."""
        return "%s = *(%s *)(%s);\n" % (name, self.c_type, sub["slot"])

    def c_sync(self, name, sub):
        """Write the value to ``sub["slot"]`` (a pointer to a ``c_type``)."""
        return "*(%s *)(%s) = %s;\n" % (self.c_type, sub["slot"], name)

    def c_cleanup(self, name, sub):
        """Nothing to release."""
        return ""

    def c_is_simple(self):
        """Scalars are plain C numbers."""
        return True

    def c_restricted(self):
        """float16 and complex values reach only Ops whose C handles them."""
        return self.dtype in extended_dtypes

    def c_code_cache_version(self):
        """Version of the C hooks above."""
        return (1,)

    def c_literal(self, data):
        """A C expression of type ``c_type`` equal to ``data``, bit for bit.

        Floats are written as C99 hex literals; infinities and NaN use
        ``INFINITY`` / ``NAN`` from math.h.
        """
        value = self.filter(data, allow_downcast=True)
        ctype = self.c_type
        if self.dtype == "bool":
            return "((uint8_t)%d)" % int(bool(value))
        if self.np_dtype.kind == "c":
            part = get_scalar_type(value.real.dtype)
            return "CMPLX%s(%s, %s)" % ("F" if self.dtype == "complex64" else "",
                                        part.c_literal(value.real), part.c_literal(value.imag))
        if self.dtype == "float16":
            return "((_Float16)%s)" % get_scalar_type("float32").c_literal(np.float32(value))
        if self.np_dtype.kind == "f":
            f = float(value)
            suffix = "f" if self.dtype == "float32" else ""
            if f != f:
                return "((%s)NAN)" % ctype
            if f in (float("inf"), float("-inf")):
                return "((%s)%sINFINITY)" % (ctype, "-" if f < 0 else "")
            text = f.hex() + suffix
            return "(%s)" % text if text.startswith("-") else text
        v = int(value)
        if self.np_dtype.kind == "u":
            return "((%s)%dULL)" % (ctype, v)
        if v == np.iinfo(np.int64).min:
            return "((int64_t)(-9223372036854775807LL - 1))"
        return "((%s)%dLL)" % (ctype, v)


_COMPLEX_COST = (" (a complex cost has no gradient: take a real part, e.g. abs(z) or "
                 "real(z), as Theano required)")


_TYPES = {}


def get_scalar_type(dtype):
    """The shared ScalarType instance of ``dtype``."""
    name = dtype_name(dtype)
    found = _TYPES.get(name)
    if found is None:
        found = _TYPES[name] = ScalarType(name)
    return found


bool_ = get_scalar_type("bool")
int8 = get_scalar_type("int8")
int16 = get_scalar_type("int16")
int32 = get_scalar_type("int32")
int64 = get_scalar_type("int64")
uint8 = get_scalar_type("uint8")
uint16 = get_scalar_type("uint16")
uint32 = get_scalar_type("uint32")
uint64 = get_scalar_type("uint64")
float32 = get_scalar_type("float32")
float64 = get_scalar_type("float64")
float16 = get_scalar_type("float16")
complex64 = get_scalar_type("complex64")
complex128 = get_scalar_type("complex128")


# ---------------------------------------------------------------------------
# variables


def _ops():
    import importlib

    # the public module holds every op (nbgraph.tensor.scalar may be shadowed
    # by the ``scalar`` constructor, hence import_module)
    return importlib.import_module("nbgraph.tensor.scalar")


def _convertible(x):
    """True when ``as_scalar(x)`` can work (so operators return NotImplemented otherwise)."""
    if isinstance(x, Variable):
        return isinstance(x.type, ScalarType)
    return isinstance(x, (bool, int, float, complex, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


def _binary(op_name, reflected=False):
    def method(self, other):
        if not _convertible(other):
            return NotImplemented
        op = getattr(_ops(), op_name)
        return op(other, self) if reflected else op(self, other)
    method.__name__ = "__%s%s__" % ("r" if reflected else "", op_name)
    method.__doc__ = "Build ``%s`` of %s." % (
        op_name, "the other operand and self" if reflected else "self and the other operand")
    return method


class ScalarVariable(Variable):
    """A Variable of a :class:`ScalarType`, with NumPy's arithmetic operators.

    ``+ - * / // % **``, unary ``-``, ``abs`` and ``< <= > >=`` build the
    matching scalar ops; Python numbers may stand on either side and are
    weak.  ``==`` keeps its identity meaning (Variables key dicts); use
    :func:`~nbgraph.tensor.scalar_logic.eq` for an equality node.
    """

    __array_ufunc__ = None  # NumPy scalars defer to our reflected operators

    @property
    def dtype(self):
        """The dtype name of the type."""
        return self.type.dtype

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("sub")
    __rsub__ = _binary("sub", True)
    __mul__ = _binary("mul")
    __rmul__ = _binary("mul", True)
    __truediv__ = _binary("true_div")
    __rtruediv__ = _binary("true_div", True)
    __floordiv__ = _binary("int_div")
    __rfloordiv__ = _binary("int_div", True)
    __mod__ = _binary("mod")
    __rmod__ = _binary("mod", True)
    __pow__ = _binary("pow")
    __rpow__ = _binary("pow", True)
    __lt__ = _binary("lt")
    __le__ = _binary("le")
    __gt__ = _binary("gt")
    __ge__ = _binary("ge")
    __and__ = _binary("and_")
    __rand__ = _binary("and_", True)
    __or__ = _binary("or_")
    __ror__ = _binary("or_", True)
    __xor__ = _binary("xor")
    __rxor__ = _binary("xor", True)

    def __neg__(self):
        return _ops().neg(self)

    def __abs__(self):
        return _ops().abs_(self)

    def __invert__(self):
        return _ops().invert(self)

    def __bool__(self):
        raise TypeError("the truth value of the symbolic scalar %r is unknown until the graph "
                        "runs; use switch() for a symbolic condition" % (self,))



class ScalarConstant(ScalarVariable, Constant):
    """A scalar Constant.  ``weak`` is True when it stands for a plain Python number.

    Weak constants take the dtype of the strong operands they meet
    (:func:`promote_weak`), as Python numbers do in NumPy 2.
    """

    def __init__(self, type, data, name=None, weak=False, python_value=None):
        Constant.__init__(self, type, data, name=name)
        self.weak = bool(weak)
        self._python_value = python_value

    @property
    def python_value(self):
        """The Python number a weak constant stands for (exact even beyond uint64)."""
        if self._python_value is not None:
            return self._python_value
        return self.data.item()

    def signature(self):
        """Like :meth:`Constant.signature`, with the weak flag."""
        return Constant.signature(self) + (self.weak,)

    def clone(self, name=None):
        """A new constant with the same data, type and weak flag."""
        new = type(self)(self.type, self.data, self.name if name is None else name, self.weak,
                         self._python_value)
        new.tag = self.tag.copy()
        return new


ScalarType.variable_type = ScalarVariable
ScalarType.constant_type = ScalarConstant


def as_scalar(x, name=None):
    """``x`` as a scalar Variable.

    A Variable of a ScalarType passes through.  A Python bool, int or float
    becomes a *weak* constant (bool, int64 — uint64 when too big — float64).
    A NumPy scalar or 0-d array becomes a strong constant of its dtype.
    Anything else raises TypeError naming it.
    """
    if isinstance(x, Variable):
        if isinstance(x.type, ScalarType):
            return x
        raise TypeError("expected a scalar Variable or a number, got the variable %r of type %r"
                        % (x, x.type))
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    if isinstance(x, np.generic):  # before the Python checks: np.float64 is a float
        try:
            stype = get_scalar_type(x.dtype)
        except TypeError as exc:
            raise TypeError("cannot make a scalar from %r: %s" % (x, exc)) from None
        return ScalarConstant(stype, x, name=name)
    if isinstance(x, bool):
        return ScalarConstant(bool_, x, name=name, weak=True)
    if isinstance(x, int):
        if np.iinfo(np.int64).min <= x <= np.iinfo(np.int64).max:
            return ScalarConstant(int64, x, name=name, weak=True)
        if 0 <= x <= np.iinfo(np.uint64).max:
            return ScalarConstant(uint64, x, name=name, weak=True)
        try:
            approx = float(x)
        except OverflowError:
            raise ValueError("the Python integer %d is too large for any supported dtype"
                             % x) from None
        # Held as float64; next to a float operand it converts like NumPy's.
        return ScalarConstant(float64, approx, name=name, weak=True, python_value=x)
    if isinstance(x, float):
        return ScalarConstant(float64, x, name=name, weak=True)
    if isinstance(x, complex):
        return ScalarConstant(complex128, np.complex128(x), name=name, weak=True)
    raise TypeError("expected a scalar Variable or a number, got %s %s" % (
        type(x).__name__, short_repr(x)))


def _is_weak(var):
    return isinstance(var, ScalarConstant) and var.weak


def weak_promotion_dtype(strong_dtypes, weak_values):
    """The dtype weak Python numbers take next to strong operands of ``strong_dtypes``.

    This is ``np.result_type(*strong_dtypes, *weak_values)`` (NEP 50), with
    float16 not allowed to appear.  A weak integer that does not fit an
    integer result (300 next to int8) raises ValueError naming the value and
    the dtype.  Shared by the scalar and the tensor layers.
    """
    strong = [np.dtype(d) for d in strong_dtypes]
    try:
        dtype = np.result_type(*strong, *weak_values)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError("NumPy cannot promote %s with the Python numbers %s: %s" % (
            ", ".join(d.name for d in strong) or "nothing", weak_values, exc)) from None
    if dtype.kind == "O":
        raise ValueError("the Python numbers %s do not fit any supported dtype" % (weak_values,))
    dtype = dtype_name(dtype)
    check_weak_fits(weak_values, dtype)
    return dtype


def check_weak_fits(weak_values, dtype):
    """Raise ValueError when a weak Python int among ``weak_values`` overflows ``dtype``."""
    np_dtype = np.dtype(dtype)
    if np_dtype.kind not in "iu":
        return
    info = np.iinfo(np_dtype)
    for value in weak_values:
        if isinstance(value, int) and not isinstance(value, bool) and not (
                info.min <= value <= info.max):
            raise ValueError("the Python integer %d is out of bounds for %s (valid range "
                             "[%d, %d]); make it a constant of a wider dtype or cast the "
                             "other operand" % (value, dtype, info.min, info.max))


def promote_weak(inputs):
    """Replace weak constants in ``inputs`` by strong constants of NumPy's choice of dtype.

    ``inputs`` are scalar Variables (or anything :func:`as_scalar` accepts).
    The weak ones all take :func:`weak_promotion_dtype` of the strong ones'
    dtypes and the weak values; when every input is weak, NumPy's own rule
    for Python scalars decides (``1 + 2.0`` is float64).

    >>> [v.type.dtype for v in promote_weak([float32("x"), 2.0])]
    ['float32', 'float32']
    """
    inputs = [as_scalar(x) for x in inputs]
    weak = [v for v in inputs if _is_weak(v)]
    if not weak:
        return inputs
    strong_dtypes = [v.type.dtype for v in inputs if not _is_weak(v)]
    values = [v.python_value for v in weak]
    dtype = weak_promotion_dtype(strong_dtypes, values)
    return [strong_constant(v, dtype) if _is_weak(v) else v for v in inputs]


def strong_constant(weak, dtype):
    """A strong constant of ``dtype`` holding the weak constant ``weak``'s value."""
    value = weak.python_value
    with np.errstate(all="ignore"):
        if isinstance(value, int) and abs(value) > 2**64:
            data = np.asarray(float(value)).astype(dtype)[()]
        else:
            data = np.asarray(value).astype(dtype)[()]
    return ScalarConstant(get_scalar_type(dtype), data, name=weak.name)
