"""Comparisons, bitwise logic, switch, identity and cast, as scalar ops.

Comparisons give bool and follow IEEE (NaN compares false, except ``!=``)
and NumPy 2 (a signed integer against a uint64, or a Python int out of the
other operand's range, compares exactly).  Bitwise ops are logical on bool
and bitwise on integers.  ``cast`` converts like ``ndarray.astype``.
None of these is differentiable except switch (through its branches),
identity and float-to-float casts.
"""

import numpy as np

from nbgraph.tensor.scalar_op import (
    BinaryScalarOp,
    BuiltinScalarOp,
    UnaryScalarOp,
    c_type_of,
    input_gradients,
    is_float_dtype,
    dtype_kind,
    c_cast,
    with_out,
    zero_gradients,
)
from nbgraph.tensor.dtypes import dtype_name
from nbgraph.tensor.scalar_type import (
    ScalarConstant,
    as_scalar,
    get_scalar_type,
    promote_weak,
    strong_constant,
)

__all__ = [
    "Comparison", "LT", "LE", "GT", "GE", "EQ", "NEQ", "Bitwise", "And", "Or", "Xor",
    "Invert", "Switch", "Identity", "Cast",
    "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor", "invert", "switch",
    "identity", "cast",
]


class Comparison(BuiltinScalarOp):
    """A comparison giving bool, computed in the inputs' common dtype.

    A signed integer against a uint64 compares exactly (as NumPy 2 does),
    and so does a Python int outside the other operand's range
    (``uint8_var < -1`` is simply false, ``int64_var < 2**70`` true).  Not
    differentiable.
    """

    nin = 2

    def promote_inputs(self, inputs):
        inputs = [as_scalar(x) for x in inputs]
        try:
            return promote_weak(inputs)
        except ValueError:
            pass
        rescued = []
        for v in inputs:
            if (isinstance(v, ScalarConstant) and v.weak and isinstance(v.python_value, int)
                    and not isinstance(v.python_value, bool)):
                value = v.python_value
                if -2**63 <= value < 2**64:
                    v = strong_constant(v, get_scalar_type(np.min_scalar_type(value)).dtype)
                else:
                    # beyond every 64-bit integer: +-inf compares the same with each
                    # (its float64 value would round onto 2**64 or -2**63)
                    v = ScalarConstant(get_scalar_type("float64"),
                                       np.float64(np.inf if value > 0 else -np.inf))
            rescued.append(v)
        return promote_weak(rescued)

    def c_expr(self, in_dtypes, out_dtype, args):
        a, b = args
        da, db = in_dtypes
        if dtype_kind(da) == "i" and db == "uint64":
            return "((uint8_t)((%s < 0) ? %d : ((uint64_t)%s %s %s)))" % (
                a, int(self.impl(-1, 1)), a, self.symbol, b)
        if da == "uint64" and dtype_kind(db) == "i":
            return "((uint8_t)((%s < 0) ? %d : (%s %s (uint64_t)%s)))" % (
                b, int(self.impl(1, -1)), a, self.symbol, b)
        loop = dtype_name(np.result_type(da, db))
        return "((uint8_t)(%s %s %s))" % (c_cast(a, da, loop), self.symbol,
                                           c_cast(b, db, loop))

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class LT(Comparison):
    """``a < b``."""

    name = "lt"
    symbol = "<"
    nfunc = np.less


class LE(Comparison):
    """``a <= b``."""

    name = "le"
    symbol = "<="
    nfunc = np.less_equal


class GT(Comparison):
    """``a > b``."""

    name = "gt"
    symbol = ">"
    nfunc = np.greater


class GE(Comparison):
    """``a >= b``."""

    name = "ge"
    symbol = ">="
    nfunc = np.greater_equal


class EQ(Comparison):
    """``a == b`` as a graph node (NaN is not equal to itself)."""

    name = "eq"
    symbol = "=="
    nfunc = np.equal


class NEQ(Comparison):
    """``a != b`` as a graph node (true when either is NaN)."""

    name = "neq"
    symbol = "!="
    nfunc = np.not_equal


class Bitwise(BinaryScalarOp):
    """Bitwise ops: logical on bools, bitwise on integers; NumPy refuses floats."""

    def c_bool(self, a, b):
        return "((uint8_t)(%s %s %s))" % (a, self.symbol, b)

    def c_int(self, a, b, dtype):
        return "((%s)(%s %s %s))" % (c_type_of(dtype), a, self.symbol, b)

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class And(Bitwise):
    """``a & b``."""

    name = "and_"
    symbol = "&"
    nfunc = np.bitwise_and


class Or(Bitwise):
    """``a | b``."""

    name = "or_"
    symbol = "|"
    nfunc = np.bitwise_or


class Xor(Bitwise):
    """``a ^ b``."""

    name = "xor"
    symbol = "^"
    nfunc = np.bitwise_xor


class Invert(UnaryScalarOp):
    """``~a``: logical not for bool, bitwise not for integers (NumPy's invert)."""

    name = "invert"
    prefix = "~"
    nfunc = np.invert

    def c_loop(self, a, dtype):
        if dtype == "bool":
            return "((uint8_t)!(%s))" % a
        return "((%s)~(%s))" % (c_type_of(dtype), a)

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class Switch(BuiltinScalarOp):
    """``switch(cond, a, b)``: ``a`` where ``cond`` is nonzero, else ``b`` (``np.where``).

    The output dtype is that of ``a`` and ``b`` together; the condition may
    be of any dtype and is promoted on its own.
    """

    name = "switch"
    nin = 3
    nfunc = with_out(np.where)
    complex_support = True

    def promote_inputs(self, inputs):
        cond, a, b = [as_scalar(x) for x in inputs]
        return promote_weak([cond]) + promote_weak([a, b])

    def output_dtypes(self, cond, a, b):
        return [dtype_name(np.result_type(a, b))]

    def c_expr(self, in_dtypes, out_dtype, args):
        return "((%s) ? %s : %s)" % (args[0], c_cast(args[1], in_dtypes[1], out_dtype),
                                     c_cast(args[2], in_dtypes[2], out_dtype))

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        cond = inputs[0]
        return input_gradients([None, switch(cond, gz, 0), switch(cond, 0, gz)], inputs)


@with_out
def _copy(x):
    return np.array(x, copy=True)


class Identity(UnaryScalarOp):
    """The input, unchanged."""

    name = "identity"
    nfunc = _copy
    complex_support = True

    def c_loop(self, a, dtype):
        return a

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0]], inputs)


_CAST_SUPPORT = """#ifndef NBG_CAST_SUPPORT
#define NBG_CAST_SUPPORT
/* Float to integer conversion without C's undefined behaviour.  In range it
   truncates; NaN and out-of-range values give what NumPy's (non-SIMD) casts
   give on x86-64: the "integer indefinite" value of a 32- or 64-bit
   conversion, narrowed. */
static inline int32_t nbg_f2i32(double x) {
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static inline int64_t nbg_f2i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}
static inline uint32_t nbg_f2u32(double x) {
    return (uint32_t)nbg_f2i64(x);
}
static inline uint64_t nbg_f2u64(double x) {
    return x >= 9223372036854775808.0
        ? ((uint64_t)nbg_f2i64(x - 9223372036854775808.0) ^ 0x8000000000000000ull)
        : (uint64_t)nbg_f2i64(x);
}
#endif
"""

_FLOAT_TO_INT = {
    "int8": "nbg_f2i32", "int16": "nbg_f2i32", "int32": "nbg_f2i32", "int64": "nbg_f2i64",
    "uint8": "nbg_f2i32", "uint16": "nbg_f2i32", "uint32": "nbg_f2u32", "uint64": "nbg_f2u64",
}


class Cast(UnaryScalarOp):
    """Conversion to ``dtype``, as ``ndarray.astype`` does it.

    Integers wrap; floats truncate toward zero.  Converting NaN, infinities or
    out-of-range floats to integers is platform-defined in NumPy (on x86-64
    even its SIMD and scalar loops disagree for uint32); the C code gives
    NumPy's x86-64 scalar-loop results, without C's undefined behaviour.
    """

    __props__ = ("dtype",)
    name = "cast"

    def __init__(self, dtype):
        self.dtype = dtype_name(dtype)

    @property
    def nfunc(self):
        dtype = self.dtype

        keeps_imag = np.dtype(dtype).kind in "cb"  # bool: nonzero if either part is

        def convert(x, out=None):
            x = np.asarray(x)
            if x.dtype.kind == "c" and not keeps_imag:
                x = x.real  # what astype keeps, without its ComplexWarning
            with np.errstate(all="ignore"):
                if out is None:
                    return np.asarray(x).astype(dtype)
                np.copyto(out, x, casting="unsafe")
                return out
        return convert

    def output_dtypes(self, dtype):
        return [self.dtype]

    c_complex = True
    complex_support = True

    def c_expr(self, in_dtypes, out_dtype, args):
        src, a = in_dtypes[0], args[0]
        if dtype_kind(src) == "c" and dtype_kind(out_dtype) not in "cb":
            a = "creal%s(%s)" % ("f" if src == "complex64" else "", a)
            src = "float32" if src == "complex64" else "float64"
            if dtype_kind(out_dtype) == "f":
                return "((%s)(%s))" % (c_type_of(out_dtype), a)
        if is_float_dtype(src) and dtype_kind(out_dtype) in "iu":
            return "((%s)%s((double)%s))" % (c_type_of(out_dtype), _FLOAT_TO_INT[out_dtype], a)
        return c_cast(a, src, out_dtype)

    def c_support_code(self, node=None):
        return _CAST_SUPPORT

    def grad(self, inputs, output_grads):
        if not is_float_dtype(self.dtype):
            return zero_gradients(inputs)
        return input_gradients([output_grads[0]], inputs)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``x`` itself when it already has it)."""
    x = as_scalar(x)
    dtype = dtype_name(dtype)
    if x.type.dtype == dtype and not (isinstance(x, ScalarConstant) and x.weak):
        return x
    return Cast(dtype)(x)


lt = LT()
le = LE()
gt = GT()
ge = GE()
eq = EQ()
neq = NEQ()
and_ = And()
or_ = Or()
xor = Xor()
invert = Invert()
switch = Switch()
identity = Identity()
