"""More of NumPy's float ufuncs as scalar ops: rounding, classification, clip,
inverse trigonometric and hyperbolic functions, base-2 and base-10
logarithms, reciprocal, angle conversions.

Each op's output dtype is NumPy's (asked from the ufunc itself):
``floor``/``ceil``/``trunc``/``round`` keep integer dtypes,
``isnan``/``isinf``/``isfinite`` give bool, the transcendental functions
give floats by NumPy's rule (float16 for bools and 8-bit integers, float32
for 16-bit ones, float64 beyond).  C calls the C99 function of the same meaning
(``f``-suffixed for float32); ``round`` is ``rint`` (half to even, as
``np.round``); ``deg2rad``/``rad2deg`` multiply by the same constant NumPy
multiplies by, so they agree bit for bit.
"""

import numpy as np

from nbgraph.tensor.dtypes import REAL_DTYPES
from nbgraph.tensor.scalar_logic import Cast, switch
from nbgraph.tensor.scalar_math import UnaryMath, sqrt
from nbgraph.tensor.scalar_op import (
    BuiltinScalarOp,
    UnaryScalarOp,
    c_type_of,
    input_gradients,
    float_suffix,
    is_float_dtype,
    dtype_kind,
    c_cast,
    with_out,
    zero_gradients,
)
from nbgraph.tensor.scalar_ops import neg, sqr
from nbgraph.tensor.scalar_type import ScalarConstant

__all__ = [
    "Floor", "Ceil", "Trunc", "Round", "RoundHalfAwayFromZero", "IsNan", "IsInf", "IsFinite",
    "Clip", "Reciprocal",
    "ArcSin", "ArcCos", "ArcTan", "Sinh", "Cosh", "ArcSinh", "ArcCosh", "ArcTanh",
    "Log2", "Log10", "Exp2", "Deg2Rad", "Rad2Deg",
    "floor", "ceil", "trunc", "round_half_to_even", "round_half_away_from_zero", "isnan", "isinf",
    "isfinite", "clip",
    "reciprocal", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
    "arctanh", "log2", "log10", "exp2", "deg2rad", "rad2deg",
]


def zero_gradient(inputs):
    """Zero gradients (of each float input's dtype) for a piecewise-constant op."""
    return [ScalarConstant(x.type, 0) if is_float_dtype(x.type.dtype) else None for x in inputs]


class _Rounding(UnaryScalarOp):
    """Rounds floats to an integral value; integers and bools pass unchanged.

    Its gradient is zero (the function is piecewise constant).
    """

    c_function = None

    def c_loop(self, a, dtype):
        if dtype_kind(dtype) == "f":
            return "%s%s(%s)" % (self.c_function, float_suffix(dtype), a)
        return a

    def grad(self, inputs, output_grads):
        return zero_gradient(inputs)


class Floor(_Rounding):
    """The largest integral value not above ``a``."""

    name = "floor"
    c_function = "floor"
    nfunc = np.floor


class Ceil(_Rounding):
    """The smallest integral value not below ``a``."""

    name = "ceil"
    c_function = "ceil"
    nfunc = np.ceil


class Trunc(_Rounding):
    """``a`` rounded toward zero."""

    name = "trunc"
    c_function = "trunc"
    nfunc = np.trunc


class Round(_Rounding):
    """``a`` rounded to the nearest integral value, halves to even (``np.round``).

    A bool rounds to float16, as in NumPy.
    """

    name = "round"
    c_function = "rint"
    nfunc = with_out(np.round)


@with_out
def _round_half_away(x):
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1, x).astype(x.dtype), t)


class RoundHalfAwayFromZero(_Rounding):
    """``a`` rounded to the nearest integral value, halves away from zero (C's ``round``)."""

    name = "round_half_away_from_zero"
    c_function = "round"
    nfunc = _round_half_away


class _Classify(UnaryScalarOp):
    """A float predicate giving bool; constant for integers (no NaN or inf there)."""

    c_macro = None
    integer_answer = 0

    def c_expr(self, in_dtypes, out_dtype, args):
        if dtype_kind(in_dtypes[0]) == "f":
            return "((uint8_t)(%s(%s) != 0))" % (self.c_macro, args[0])
        return "((uint8_t)%d)" % self.integer_answer

    def grad(self, inputs, output_grads):
        return zero_gradients(inputs)


class IsNan(_Classify):
    """True where ``a`` is NaN."""

    name = "isnan"
    c_macro = "isnan"
    nfunc = np.isnan


class IsInf(_Classify):
    """True where ``a`` is +inf or -inf."""

    name = "isinf"
    c_macro = "isinf"
    nfunc = np.isinf


class IsFinite(_Classify):
    """True where ``a`` is neither NaN nor infinite (always for integers)."""

    name = "isfinite"
    c_macro = "isfinite"
    nfunc = np.isfinite
    integer_answer = 1


class Clip(BuiltinScalarOp):
    """``clip(a, low, high)``: ``minimum(maximum(a, low), high)`` as ``np.clip``.

    Computed in the dtype of the three together; NaN in any of them gives
    NaN.  Gradient: ``gz`` to ``a`` where ``low <= a <= high``, to ``low``
    where ``a < low``, to ``high`` where ``a > high`` (and below ``low``).
    """

    name = "clip"
    nin = 3
    nfunc = np.clip

    def c_expr(self, in_dtypes, out_dtype, args):
        a, lo, hi = [c_cast(x, d, out_dtype) for x, d in zip(args, in_dtypes, strict=True)]
        if dtype_kind(out_dtype) == "f":
            raised = "(isnan(%s) ? %s : (%s > %s ? %s : %s))" % (a, a, a, lo, a, lo)
            return "nbg_clip_min_%s(%s, %s)" % (out_dtype, raised, hi)
        raised = "(%s > %s ? %s : %s)" % (a, lo, a, lo)
        return "nbg_clip_min_%s(%s, %s)" % (out_dtype, raised, hi)

    def c_support_code(self, node=None):
        lines = ["#ifndef NBG_CLIP_SUPPORT", "#define NBG_CLIP_SUPPORT"]
        for dtype in REAL_DTYPES:
            t = c_type_of(dtype)
            test = "isnan(a) || a < b" if dtype_kind(dtype) == "f" else "a < b"
            lines.append("static inline %s nbg_clip_min_%s(%s a, %s b) { return (%s) ? a : b; }"
                         % (t, dtype, t, t, test))
        lines.append("#endif")
        return "\n".join(lines) + "\n"

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.scalar_logic import and_, ge, gt, le, lt, or_

        (gz,) = output_grads
        a, lo, hi = inputs
        inside = and_(ge(a, lo), le(a, hi))
        below = and_(lt(a, lo), le(lo, hi))
        above = or_(gt(a, hi), gt(lo, hi))
        return input_gradients([switch(inside, gz, 0), switch(below, gz, 0),
                            switch(above, gz, 0)], inputs)


class Reciprocal(UnaryScalarOp):
    """``1 / a`` in ``a``'s dtype (NumPy's reciprocal: integers truncate, bool gives int8).

    Integer ``1 / 0`` is platform-defined in NumPy; here it is what NumPy
    computes on x86-64 (the conversion of ``1.0 / 0`` to the integer type).
    """

    name = "reciprocal"
    element_cost = 2
    nfunc = np.reciprocal

    def c_expr(self, in_dtypes, out_dtype, args):
        if dtype_kind(out_dtype) == "f":
            return "((%s)1 / %s)" % (c_type_of(out_dtype), c_cast(args[0], in_dtypes[0], out_dtype))
        quotient = "(1.0 / (double)%s)" % args[0]
        return Cast(out_dtype).c_expr(["float64"], out_dtype, [quotient])

    def c_support_code(self, node=None):
        return Cast("int64").c_support_code(node)

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([neg(output_grads[0]) / sqr(x)], inputs)


class ArcSin(UnaryMath):
    """Inverse sine (NaN outside [-1, 1])."""

    name = "arcsin"
    c_function = "asin"
    nfunc = np.arcsin

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / sqrt(1 - sqr(x))], inputs)


class ArcCos(UnaryMath):
    """Inverse cosine (NaN outside [-1, 1])."""

    name = "arccos"
    c_function = "acos"
    nfunc = np.arccos

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([neg(output_grads[0]) / sqrt(1 - sqr(x))], inputs)


class ArcTan(UnaryMath):
    """Inverse tangent."""

    name = "arctan"
    c_function = "atan"
    nfunc = np.arctan

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / (1 + sqr(x))], inputs)


class Sinh(UnaryMath):
    """Hyperbolic sine."""

    name = "sinh"
    c_function = "sinh"
    nfunc = np.sinh

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * cosh(inputs[0])], inputs)


class Cosh(UnaryMath):
    """Hyperbolic cosine."""

    name = "cosh"
    c_function = "cosh"
    nfunc = np.cosh

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * sinh(inputs[0])], inputs)


class ArcSinh(UnaryMath):
    """Inverse hyperbolic sine."""

    name = "arcsinh"
    c_function = "asinh"
    nfunc = np.arcsinh

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / sqrt(sqr(x) + 1)], inputs)


class ArcCosh(UnaryMath):
    """Inverse hyperbolic cosine (NaN below 1)."""

    name = "arccosh"
    c_function = "acosh"
    nfunc = np.arccosh

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / sqrt(sqr(x) - 1)], inputs)


class ArcTanh(UnaryMath):
    """Inverse hyperbolic tangent (±inf at ±1, NaN beyond)."""

    name = "arctanh"
    c_function = "atanh"
    nfunc = np.arctanh

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / (1 - sqr(x))], inputs)


class Log2(UnaryMath):
    """Base-2 logarithm."""

    name = "log2"
    c_function = "log2"
    nfunc = np.log2

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / (x * np.log(2.0))], inputs)


class Log10(UnaryMath):
    """Base-10 logarithm."""

    name = "log10"
    c_function = "log10"
    nfunc = np.log10

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] / (x * np.log(10.0))], inputs)


class Exp2(UnaryMath):
    """``2 ** a``."""

    name = "exp2"
    c_function = "exp2"
    nfunc = np.exp2

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] * exp2(x) * np.log(2.0)], inputs)


# The constants NumPy's loops multiply by (pi/180 and 180/pi rounded once to
# the loop's float type), so these two ops agree with NumPy bit for bit.
_DEG2RAD = {"float64": "(M_PI_NBG / 180.0)", "float32": "((float)M_PI_NBG / 180.0f)"}
_RAD2DEG = {"float64": "(180.0 / M_PI_NBG)", "float32": "(180.0f / (float)M_PI_NBG)"}
_PI_SUPPORT = """#ifndef M_PI_NBG
#define M_PI_NBG 3.141592653589793238462643383279502884
#endif
"""


class Deg2Rad(UnaryScalarOp):
    """Degrees to radians (``a * (pi / 180)``)."""

    name = "deg2rad"
    nfunc = np.deg2rad
    factors = _DEG2RAD

    def c_loop(self, a, dtype):
        return "(%s * %s)" % (a, self.factors[dtype])

    def c_support_code(self, node=None):
        return _PI_SUPPORT

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * (np.pi / 180.0)], inputs)


class Rad2Deg(Deg2Rad):
    """Radians to degrees (``a * (180 / pi)``)."""

    name = "rad2deg"
    nfunc = np.rad2deg
    factors = _RAD2DEG

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * (180.0 / np.pi)], inputs)


floor = Floor()
ceil = Ceil()
trunc = Trunc()
round_half_to_even = Round()
round_half_away_from_zero = RoundHalfAwayFromZero()
isnan = IsNan()
isinf = IsInf()
isfinite = IsFinite()
clip = Clip()
reciprocal = Reciprocal()
arcsin = ArcSin()
arccos = ArcCos()
arctan = ArcTan()
sinh = Sinh()
cosh = Cosh()
arcsinh = ArcSinh()
arccosh = ArcCosh()
arctanh = ArcTanh()
log2 = Log2()
log10 = Log10()
exp2 = Exp2()
deg2rad = Deg2Rad()
rad2deg = Rad2Deg()
