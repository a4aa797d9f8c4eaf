"""The built-in arithmetic scalar ops: + - * / // % **, maximum, minimum, neg, abs, sign, sqr.

Each op computes what the NumPy ufunc of the same meaning computes, with the
same output dtype, in Python (``impl`` / ``nfunc``) and in C (``c_code``),
including the corners: integer division and modulo by zero give 0, ``//``
and ``%`` follow the divisor's sign, integer overflow wraps, bool ``+``/``*``
are logical or/and, NaN propagates through ``maximum``/``minimum``.
Comparisons, logic, switch and cast are in :mod:`nbgraph.tensor.scalar_logic`,
transcendental functions in :mod:`nbgraph.tensor.scalar_math`.

C code is plain C99 with ``<math.h>`` and ``<stdint.h>``; it never relies on
undefined behaviour (signed arithmetic wraps through unsigned types) nor on
``-ffast-math``.
"""

import numpy as np

from nbgraph.tensor.dtypes import FLOAT_DTYPES, INT_DTYPES, UINT_DTYPES
from nbgraph.tensor.scalar_op import (
    BinaryScalarOp,
    UnaryScalarOp,
    VariadicScalarOp,
    c_type_of,
    input_gradients,
    fold_ufunc,
    float_suffix,
    is_float_dtype,
    dtype_kind,
    c_wide_uint,
    c_cast,
    c_fail,
    zero_gradients,
)

__all__ = [
    "Add", "Sub", "Mul", "TrueDiv", "IntDiv", "Mod", "Pow", "Maximum", "Minimum",
    "Neg", "Abs", "Sign", "Sqr",
    "add", "sub", "mul", "true_div", "int_div", "mod", "pow", "maximum", "minimum",
    "neg", "abs_", "sign", "sqr",
]


class Add(VariadicScalarOp):
    """``a + b (+ c ...)``; bool + bool is logical or, as in NumPy."""

    name = "add"
    symbol = "+"
    nfunc = fold_ufunc(np.add)

    def c_bool(self, a, b):
        return "((uint8_t)((%s) || (%s)))" % (a, b)

    def c_int(self, a, b, dtype):
        w = c_wide_uint(dtype)
        return "((%s)((%s)(%s) + (%s)(%s)))" % (c_type_of(dtype), w, a, w, b)

    def c_float(self, a, b, dtype):
        return "(%s + %s)" % (a, b)

    c_complex = True
    c_cplx = c_float

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return input_gradients([gz] * len(inputs), inputs)


class Mul(VariadicScalarOp):
    """``a * b (* c ...)``; bool * bool is logical and, as in NumPy."""

    name = "mul"
    symbol = "*"
    nfunc = fold_ufunc(np.multiply)

    def c_bool(self, a, b):
        return "((uint8_t)((%s) && (%s)))" % (a, b)

    def c_int(self, a, b, dtype):
        w = c_wide_uint(dtype)
        return "((%s)((%s)(%s) * (%s)(%s)))" % (c_type_of(dtype), w, a, w, b)

    def c_float(self, a, b, dtype):
        return "(%s * %s)" % (a, b)

    c_complex = True

    def c_cplx(self, a, b, dtype):
        return "nbg_cmul_%s(%s, %s)" % (dtype, a, b)

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        grads = []
        for i in range(len(inputs)):
            others = inputs[:i] + inputs[i + 1:]
            grads.append(mul(gz, *others))
        return input_gradients(grads, inputs)


class Sub(BinaryScalarOp):
    """``a - b`` (NumPy refuses bool - bool, and so does this op)."""

    name = "sub"
    symbol = "-"
    nfunc = np.subtract

    def c_int(self, a, b, dtype):
        w = c_wide_uint(dtype)
        return "((%s)((%s)(%s) - (%s)(%s)))" % (c_type_of(dtype), w, a, w, b)

    def c_float(self, a, b, dtype):
        return "(%s - %s)" % (a, b)

    c_complex = True
    c_cplx = c_float

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return input_gradients([gz, neg(gz)], inputs)


class TrueDiv(BinaryScalarOp):
    """``a / b``; integers divide in float64 (IEEE: x/0 is ±inf or NaN)."""

    name = "true_div"
    element_cost = 2
    symbol = "/"
    nfunc = np.true_divide

    def c_float(self, a, b, dtype):
        return "(%s / %s)" % (a, b)

    c_complex = True

    def c_cplx(self, a, b, dtype):
        return "nbg_cdiv_%s(%s, %s)" % (dtype, a, b)

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        x, y = inputs
        return input_gradients([true_div(gz, y), neg(gz) * true_div(true_div(x, y), y)], inputs)


def _divmod_support():
    parts = ["#ifndef NBG_DIVMOD_SUPPORT", "#define NBG_DIVMOD_SUPPORT"]
    for d in INT_DTYPES:
        t, w = c_type_of(d), c_wide_uint(d)
        parts.append("""
static inline %(t)s nbg_floordiv_%(d)s(%(t)s a, %(t)s b) {
    %(t)s q;
    if (b == 0) return 0;
    if (b == -1) return (%(t)s)((%(w)s)0 - (%(w)s)a);
    q = (%(t)s)(a / b);
    if ((a %% b) != 0 && ((a < 0) != (b < 0))) q = (%(t)s)(q - 1);
    return q;
}
static inline %(t)s nbg_mod_%(d)s(%(t)s a, %(t)s b) {
    %(t)s r;
    if (b == 0 || b == -1) return 0;
    r = (%(t)s)(a %% b);
    if (r != 0 && ((r < 0) != (b < 0))) r = (%(t)s)(r + b);
    return r;
}""" % {"t": t, "w": w, "d": d})
    for d in UINT_DTYPES:
        parts.append("""
static inline %(t)s nbg_floordiv_%(d)s(%(t)s a, %(t)s b) { return b == 0 ? 0 : (%(t)s)(a / b); }
static inline %(t)s nbg_mod_%(d)s(%(t)s a, %(t)s b) { return b == 0 ? 0 : (%(t)s)(a %% b); }"""
                     % {"t": c_type_of(d), "d": d})
    for d in FLOAT_DTYPES:
        parts.append("""
/* NumPy's divmod: fmod, then move the remainder to the divisor's sign and
   snap the quotient to the nearest integer. */
static inline %(t)s nbg_floordiv_%(d)s(%(t)s a, %(t)s b) {
    %(t)s mod, div, floordiv;
    if (b == 0) return a / b;
    mod = fmod%(f)s(a, b);
    div = (a - mod) / b;
    if (mod) {
        if (isless(b, 0) != isless(mod, 0)) div -= 1.0%(f)s;
    }
    if (div) {
        floordiv = floor%(f)s(div);
        if (isgreater(div - floordiv, 0.5%(f)s)) floordiv += 1.0%(f)s;
    } else {
        floordiv = copysign%(f)s(0, a / b);
    }
    return floordiv;
}
static inline %(t)s nbg_mod_%(d)s(%(t)s a, %(t)s b) {
    %(t)s mod = fmod%(f)s(a, b);
    if (b == 0) return mod;
    if (mod) {
        if (isless(b, 0) != isless(mod, 0)) mod += b;
    } else {
        mod = copysign%(f)s(0, b);
    }
    return mod;
}""" % {"t": c_type_of(d), "d": d, "f": float_suffix(d)})
    parts.append("#endif")
    return "\n".join(parts) + "\n"


_DIVMOD_SUPPORT = _divmod_support()


class IntDiv(BinaryScalarOp):
    """``a // b``, floor division as NumPy: x // 0 is 0 for integers, ±inf/NaN for floats.

    Not differentiable (its gradient is None).
    """

    name = "int_div"
    element_cost = 2
    symbol = "//"
    nfunc = np.floor_divide

    def c_int(self, a, b, dtype):
        return "nbg_floordiv_%s(%s, %s)" % (dtype, a, b)

    c_float = c_int

    def c_support_code(self, node=None):
        return _DIVMOD_SUPPORT

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class Mod(BinaryScalarOp):
    """``a % b`` as NumPy: the result has the divisor's sign; x % 0 is 0 for integers.

    Gradients: ``gz`` for ``a``, ``-gz * (a // b)`` for ``b``.
    """

    name = "mod"
    element_cost = 2
    symbol = "%"
    nfunc = np.remainder

    def c_int(self, a, b, dtype):
        return "nbg_mod_%s(%s, %s)" % (dtype, a, b)

    c_float = c_int

    def c_support_code(self, node=None):
        return _DIVMOD_SUPPORT

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        x, y = inputs
        return input_gradients([gz, neg(gz) * int_div(x, y)], inputs)


_IPOW_SUPPORT = """#ifndef NBG_IPOW_SUPPORT
#define NBG_IPOW_SUPPORT
/* Exponentiation by squaring modulo 2**64: the low bits are those of the
   wrapped product in any narrower integer type. */
static inline uint64_t nbg_ipow(uint64_t base, uint64_t exponent) {
    uint64_t result = 1;
    while (exponent) {
        if (exponent & 1) result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}
#endif
"""


def _power(a, b, out=None):
    """``np.power``, with ``x ** 0.5`` always computed as ``sqrt(x)``.

    NumPy takes ``sqrt`` for a scalar exponent of 0.5 but ``pow`` for an
    array of exponents.  The two differ at -inf and -0.0, and, where NumPy's
    vectorised ``pow`` is not correctly rounded (its AVX-512 float32 loop
    gives ``3 ** 0.5 = 1.7320509``), by an ulp elsewhere.  nbgraph always
    follows the scalar-exponent behaviour, in Python and in C, on every CPU.
    """
    a, b = np.asarray(a), np.asarray(b)
    half = None
    if b.size > 1:
        dtype = np.result_type(a.dtype, b.dtype)
        if dtype.kind == "f":
            # found before np.power runs: ``out`` may be one of the inputs
            half = b == 0.5
            if half.any():
                shape = np.broadcast_shapes(a.shape, b.shape)
                half = np.broadcast_to(half, shape)
                roots = np.sqrt(np.broadcast_to(a, shape)[half].astype(dtype))
            else:
                half = None
    result = np.power(a, b, out=out)
    if half is not None:
        result[half] = roots
    return result


class Pow(BinaryScalarOp):
    """``a ** b``.  Integer powers wrap; a negative integer exponent is an error, as in NumPy.

    For floats ``a ** 0.5`` is ``sqrt(a)`` (what NumPy computes for a scalar
    exponent; ``pow`` would differ at -inf and -0.0, and by an ulp where a SIMD
    ``pow`` is not correctly rounded).
    """

    name = "pow"
    element_cost = 5
    symbol = "**"
    nfunc = _power
    complex_support = True  # _power wraps np.power, which NumPy defines on complex

    def c_code(self, node, name, inputs, outputs, sub):
        in_dtypes = [v.type.dtype for v in node.inputs]
        dtype = node.outputs[0].type.dtype
        a = c_cast(inputs[0], in_dtypes[0], dtype)
        b = c_cast(inputs[1], in_dtypes[1], dtype)
        if dtype_kind(dtype) == "f":
            f = float_suffix(dtype)
            return "%s = (%s == 0.5%s) ? sqrt%s(%s) : pow%s(%s, %s);" % (
                outputs[0], b, f, f, a, f, a, b)
        code = ""
        if dtype_kind(dtype) == "i" and dtype_kind(in_dtypes[1]) == "i":
            code = "if (%s < 0) %s\n" % (b, c_fail(
                sub, "Integers to negative integer powers are not allowed."))
        return code + "%s = (%s)nbg_ipow((uint64_t)%s, (uint64_t)%s);" % (
            outputs[0], c_type_of(dtype), a, b)

    def c_support_code(self, node=None):
        return _IPOW_SUPPORT

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        x, y = inputs
        gx = gz * y * pow(x, y - 1)
        from nbgraph.tensor.scalar_logic import eq, switch
        from nbgraph.tensor.scalar_math import log

        # d(x**y)/dy = x**y * log(x); at x == 0 the limit is 0 (x**y vanishes
        # faster than log(x) diverges), where the product would be 0 * -inf.
        gy = None
        if is_float_dtype(y.type.dtype):
            gy = gz * switch(eq(x, 0), 0, log(x) * pow(x, y))
        return input_gradients([gx, gy], inputs)


class Maximum(BinaryScalarOp):
    """The larger of ``a`` and ``b``; NaN if either is NaN; on ties ``b`` (as NumPy)."""

    name = "maximum"
    nfunc = np.maximum
    _cmp = ">"

    def c_bool(self, a, b):
        return self.c_int(a, b, "bool")

    def c_int(self, a, b, dtype):
        return "((%s %s %s) ? %s : %s)" % (a, self._cmp, b, a, b)

    def c_float(self, a, b, dtype):
        return "((isnan(%s) || %s %s %s) ? %s : %s)" % (a, a, self._cmp, b, a, b)

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        x, y = inputs
        from nbgraph.tensor.scalar_logic import gt, lt, switch

        first = gt(x, y) if self._cmp == ">" else lt(x, y)
        return input_gradients([switch(first, gz, 0), switch(first, 0, gz)], inputs)


class Minimum(Maximum):
    """The smaller of ``a`` and ``b``; NaN if either is NaN; on ties ``b`` (as NumPy)."""

    name = "minimum"
    nfunc = np.minimum
    _cmp = "<"


class Neg(UnaryScalarOp):
    """``-a`` (wrapping for integers; NumPy refuses bool)."""

    name = "neg"
    prefix = "-"
    nfunc = np.negative

    c_complex = True

    def c_loop(self, a, dtype):
        if dtype_kind(dtype) in "fc":
            return "(-%s)" % a
        w = c_wide_uint(dtype)
        return "((%s)((%s)0 - (%s)(%s)))" % (c_type_of(dtype), w, w, a)

    def grad(self, inputs, output_grads):
        return input_gradients([neg(output_grads[0])], inputs)


class Abs(UnaryScalarOp):
    """``|a|`` (abs of the most negative integer wraps to itself, as in NumPy)."""

    name = "abs"
    nfunc = np.absolute
    holomorphic = False  # its gradient below is Theano's complex one too: gz * z / |z|
    c_complex = True

    def c_expr(self, in_dtypes, out_dtype, args):
        if dtype_kind(in_dtypes[0]) == "c":
            f = float_suffix(out_dtype)
            return "hypot%s(creal%s(%s), cimag%s(%s))" % (f, f, args[0], f, args[0])
        return UnaryScalarOp.c_expr(self, in_dtypes, out_dtype, args)

    def c_loop(self, a, dtype):
        kind = dtype_kind(dtype)
        if kind == "f":
            return "fabs%s(%s)" % (float_suffix(dtype), a)
        if kind == "i":
            w = c_wide_uint(dtype)
            return "((%s < 0) ? (%s)((%s)0 - (%s)(%s)) : %s)" % (a, c_type_of(dtype), w, w, a, a)
        return a

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * sign(inputs[0])], inputs)


class Sign(UnaryScalarOp):
    """-1, 0 or 1 by the sign of ``a`` (NaN stays NaN); its gradient is zero."""

    name = "sign"
    nfunc = np.sign

    def c_loop(self, a, dtype):
        kind = dtype_kind(dtype)
        t = c_type_of(dtype)
        if kind == "f":
            return "((%s > 0) ? (%s)1 : ((%s < 0) ? (%s)-1 : ((%s == 0) ? (%s)0 : %s)))" % (
                a, t, a, t, a, t, a)
        if kind == "u":
            return "((%s)(%s > 0))" % (t, a)
        return "((%s)((%s > 0) - (%s < 0)))" % (t, a, a)

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class Sqr(UnaryScalarOp):
    """``a * a`` (NumPy's square; bool squares to int8)."""

    name = "sqr"
    nfunc = np.square
    c_complex = True

    def c_loop(self, a, dtype):
        if dtype_kind(dtype) == "c":
            return "nbg_cmul_%s(%s, %s)" % (dtype, a, a)
        if dtype_kind(dtype) == "f":
            return "(%s * %s)" % (a, a)
        w = c_wide_uint(dtype)
        return "((%s)((%s)(%s) * (%s)(%s)))" % (c_type_of(dtype), w, a, w, a)

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * 2 * inputs[0]], inputs)


add = Add()
sub = Sub()
mul = Mul()
true_div = TrueDiv()
int_div = IntDiv()
mod = Mod()
pow = Pow()
maximum = Maximum()
minimum = Minimum()
neg = Neg()
abs_ = Abs()
sign = Sign()
sqr = Sqr()
