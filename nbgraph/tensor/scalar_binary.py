"""Two-input float functions and integer shifts as scalar ops: arctan2, hypot,
logaddexp, copysign, nextafter, left_shift, right_shift.

Dtypes are NumPy's (float16 included).  The float
functions call their C99 namesakes; ``logaddexp`` follows NumPy's formula
(``max + log1p(exp(-|x - y|))``, ``x + log(2)`` when both are equal, so
equal infinities give that infinity).  Shifts follow NumPy on every shift
count: a count at or beyond the bit width (or negative) gives 0, or -1 for
a negative number shifted right; signed left shifts wrap.
"""

import numpy as np

from nbgraph.tensor.scalar_logic import Bitwise
from nbgraph.tensor.scalar_math import exp
from nbgraph.tensor.scalar_op import (
    BinaryScalarOp, c_type_of, input_gradients, float_suffix, dtype_kind, zero_gradients,
)
from nbgraph.tensor.scalar_ops import mul, sqr
from nbgraph.tensor.scalar_type import ScalarConstant

__all__ = [
    "ArcTan2", "Hypot", "LogAddExp", "CopySign", "NextAfter", "LeftShift", "RightShift",
    "arctan2", "hypot", "logaddexp", "copysign", "nextafter", "left_shift", "right_shift",
]


class _FloatBinary(BinaryScalarOp):
    """A float function of two inputs calling the math.h function ``c_function``."""

    c_function = None
    element_cost = 5  # a libm call (see ScalarOp.element_cost)

    def c_float(self, a, b, dtype):
        return "%s%s(%s, %s)" % (self.c_function, float_suffix(dtype), a, b)


class ArcTan2(_FloatBinary):
    """``arctan2(y, x)``: the angle of the point ``(x, y)``, in [-pi, pi]."""

    name = "arctan2"
    c_function = "atan2"
    nfunc = np.arctan2

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        y, x = inputs
        r2 = sqr(x) + sqr(y)
        return input_gradients([gz * x / r2, -(gz * y) / r2], inputs)


class Hypot(_FloatBinary):
    """``sqrt(a**2 + b**2)`` without overflow or underflow in the squares."""

    name = "hypot"
    c_function = "hypot"
    nfunc = np.hypot

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        a, b = inputs
        h = hypot(a, b)
        return input_gradients([gz * a / h, gz * b / h], inputs)


_LOGADDEXP_SUPPORT = """#ifndef NBG_LOGADDEXP_SUPPORT
#define NBG_LOGADDEXP_SUPPORT
static inline double nbg_logaddexp_float64(double x, double y) {
    double d;
    if (x == y) return x + 0.693147180559945309417232121458176568;
    d = x - y;
    if (d > 0) return x + log1p(exp(-d));
    if (d <= 0) return y + log1p(exp(d));
    return d;
}
static inline float nbg_logaddexp_float32(float x, float y) {
    float d;
    if (x == y) return x + 0.693147180559945309417232121458176568f;
    d = x - y;
    if (d > 0) return x + log1pf(expf(-d));
    if (d <= 0) return y + log1pf(expf(d));
    return d;
}
#endif
"""


class LogAddExp(BinaryScalarOp):
    """``log(exp(a) + exp(b))`` without overflow (NumPy's ``logaddexp``)."""

    name = "logaddexp"
    element_cost = 9
    nfunc = np.logaddexp

    def c_float(self, a, b, dtype):
        return "nbg_logaddexp_%s(%s, %s)" % (dtype, a, b)

    def c_support_code(self, node=None):
        return _LOGADDEXP_SUPPORT

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        a, b = inputs
        out = logaddexp(a, b)
        return input_gradients([gz * exp(a - out), gz * exp(b - out)], inputs)


class CopySign(_FloatBinary):
    """``|a|`` with the sign (bit) of ``b``."""

    name = "copysign"
    c_function = "copysign"
    nfunc = np.copysign

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        a, b = inputs
        one = ScalarConstant(a.type, 1) if a.type.dtype in ("float32", "float64") else 1.0
        flip = mul(copysign(one, a), copysign(one, b))
        return input_gradients([gz * flip, ScalarConstant(b.type, 0) if b.type.dtype in (
            "float32", "float64") else None], inputs)


class NextAfter(_FloatBinary):
    """The next representable float after ``a`` in the direction of ``b``."""

    name = "nextafter"
    c_function = "nextafter"
    nfunc = np.nextafter
    #: the next float16 is not the next float32 rounded: float16 nodes run in Python
    c_half_via_float32 = False

    def grad(self, inputs, output_grads):
        a, b = inputs
        zero = ScalarConstant(b.type, 0) if b.type.dtype in ("float32", "float64") else None
        return input_gradients([output_grads[0], zero], inputs)


class _Shift(Bitwise):
    """A shift computed in the output dtype; NumPy's results for every count."""

    def c_bool(self, a, b):
        raise TypeError("%s has no bool loop" % self)

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class LeftShift(_Shift):
    """``a << b`` (0 when ``b`` is negative or at least the bit width; wraps)."""

    name = "left_shift"
    symbol = "<<"
    nfunc = np.left_shift

    def c_int(self, a, b, dtype):
        bits = 8 * np.dtype(dtype).itemsize
        wide = "uint64_t" if bits == 64 else "uint32_t"
        return "((uint64_t)(%s) < %d ? (%s)((%s)(%s) << (%s)) : (%s)0)" % (
            b, bits, c_type_of(dtype), wide, a, b, c_type_of(dtype))


class RightShift(_Shift):
    """``a >> b``, arithmetic for signed integers (a count past the width gives 0 or -1)."""

    name = "right_shift"
    symbol = ">>"
    nfunc = np.right_shift

    def c_int(self, a, b, dtype):
        bits = 8 * np.dtype(dtype).itemsize
        beyond = "(%s)((%s) < 0 ? -1 : 0)" % (c_type_of(dtype), a) if dtype_kind(dtype) == "i" \
            else "(%s)0" % c_type_of(dtype)
        return "((uint64_t)(%s) < %d ? (%s)((%s) >> (%s)) : %s)" % (
            b, bits, c_type_of(dtype), a, b, beyond)


arctan2 = ArcTan2()
hypot = Hypot()
logaddexp = LogAddExp()
copysign = CopySign()
nextafter = NextAfter()
left_shift = LeftShift()
right_shift = RightShift()
