"""Special functions as scalar ops: erf, erfc, erfcx, erfinv, gammaln, digamma.

NumPy has none of them; their values are checked against ``scipy.special``
(a test dependency only) and mpmath.  Output dtypes follow NumPy's rule for
float functions (as ``np.exp``: float32 for bool and integers up to 16
bits, float64 beyond), where SciPy gives float64 for some of them.  All are
computed in double precision and rounded once for float32, the same way in
Python and in C:

* ``erf``, ``erfc``, ``gammaln`` call the C library (Python's ``math``
  module calls the same functions); ``gammaln`` is +inf at the poles and at
  -inf (as C99's ``lgamma``; SciPy gives -inf at -inf);
* ``erfcx(x) = exp(x**2) * erfc(x)``: ``exp`` of the exact square (split in
  two doubles) times ``erfc`` below 12, an asymptotic series from 12 on, and
  ``2 exp(x**2) - erfcx(-x)`` for negative ``x``;
* ``erfinv``: an initial guess refined by three Halley steps on ``erf``
  (``erfc`` for ``|y| > 0.5``, where it keeps the relative precision);
* ``digamma``: a Taylor series around its positive root (so it keeps its
  relative precision there), else the recurrence up to 10 and the
  asymptotic series, with the reflection formula below 0.
"""

import math

import numpy as np

from nbgraph.tensor.scalar_math import float_input, exp
from nbgraph.tensor.scalar_op import UnaryScalarOp, input_gradients, with_out
from nbgraph.tensor.scalar_ops import sqr

__all__ = [
    "Erf", "Erfc", "Erfcx", "ErfInv", "GammaLn", "Digamma",
    "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma",
]

_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_PI = 1.7724538509055159
_ERFCX_SERIES_FROM = 12.0
_ERFCX_TERMS = 14
# Taylor coefficients of digamma around its positive root x0 (x0 = _ROOT_HI +
# _ROOT_LO): polygamma(n, x0) / n!, n = 1..23, computed with mpmath at 40 digits.
_ROOT_HI = 1.4616321449683622
_ROOT_LO = 9.549995429965697e-17
_ROOT_COEFFS = (
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
    0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928,
    -0.0015769367714301972, 0.0010788252019162967, -0.0007380709389960052,
    0.000504953265834602, -0.0003454680251063077, 0.00023635601564027053,
    -0.00016170622091974803, 0.0001106337276874741,
)
_ROOT_RADIUS = 0.25
# B_2k / (2k), k = 1..8: the asymptotic series of digamma.
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
                       -3617 / 8160)
_DIGAMMA_SHIFT_TO = 10.0


def _in_double(function):
    """An nfunc computing ``function`` on float64 and rounding to the float dtype NumPy
    would give (as ``np.exp`` chooses it)."""
    @with_out
    def nfunc(x):
        x = float_input(x)
        with np.errstate(all="ignore"):
            out = function(x.astype(np.float64))
        return np.asarray(out, dtype=np.float64).astype(x.dtype)
    nfunc.__name__ = function.__name__
    nfunc.__doc__ = function.__doc__
    return nfunc


def _elementwise(scalar_function):
    vectorised = np.frompyfunc(scalar_function, 1, 1)

    def apply(x):
        return np.asarray(vectorised(x), dtype=np.float64)
    apply.__name__ = scalar_function.__name__
    return apply


def _lgamma_scalar(x):
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # the poles (0, -1, -2, ...)
        return math.inf


_erf = _elementwise(math.erf)
_erfc = _elementwise(math.erfc)
_lgamma = _elementwise(_lgamma_scalar)


def _exp_of_square(x):
    """``exp(x * x)`` with the square taken exactly (as a sum of two doubles)."""
    hi = x * x
    c = 134217729.0 * x  # Veltkamp's split: x = xh + xl, each of 26 bits
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2 * xh * xl) + xl * xl
    e = np.exp(hi)
    return np.where(np.isinf(e), e, e + e * lo)


def _erfcx_nonnegative(a):
    big = a >= _ERFCX_SERIES_FROM
    small = np.where(big, 0.0, a)
    direct = _exp_of_square(small) * _erfc(small)
    t = 0.5 / np.where(big, a, 1.0) / np.where(big, a, 1.0)
    term = np.ones_like(a)
    total = np.ones_like(a)
    for k in range(1, _ERFCX_TERMS + 1):
        term = term * (-(2 * k - 1) * t)
        total = total + term
    series = total / (np.where(big, a, 1.0) * _SQRT_PI)
    return np.where(big, series, direct)


def _erfcx(x):
    """``exp(x**2) * erfc(x)``, the scaled complementary error function."""
    a = np.abs(x)
    positive = _erfcx_nonnegative(np.where(np.isnan(a), 0.0, a))
    negative = 2 * _exp_of_square(np.where(a < 27, a, 27.0)) - positive
    out = np.where(x >= 0, positive, np.where(a < 27, negative, np.inf))
    return np.where(np.isnan(x), x, out)


def _erfinv(y):
    """The inverse of ``erf`` on [-1, 1] (NaN outside, ±inf at ±1)."""
    a = np.abs(y)
    inside = a < 1
    s = np.where(inside, a, 0.5)
    q = 1 - s
    log_term = np.log(q * (1 + s))
    k = 0.147
    b = 2 / (np.pi * k) + log_term / 2
    x = np.sqrt(np.sqrt(b * b - log_term / k) - b)
    tail = s > 0.5
    for _ in range(3):
        f = np.where(tail, q - _erfc(x), _erf(x) - s)
        r = f / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
        x = x - r / (1 + x * r)
    out = np.where(a == 0, 0.0, x)
    out = np.where(a == 1, np.inf, out)
    out = np.where(a > 1, np.nan, out)
    out = np.copysign(out, y)
    return np.where(np.isnan(y) | (a == 0), y, out)


def _digamma_positive(x):
    """digamma for x > 0 (any other entries give garbage, masked by the caller)."""
    result = np.zeros_like(x)
    for _ in range(int(_DIGAMMA_SHIFT_TO)):
        low = x < _DIGAMMA_SHIFT_TO
        result = result - np.where(low, 1 / x, 0.0)
        x = np.where(low, x + 1, x)
    inv2 = 1 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_DIGAMMA_ASYMPTOTIC):
        series = (series + c) * inv2
    return result + (np.log(x) - 0.5 / x - series)


def _digamma_near_root(x):
    d = (x - _ROOT_HI) - _ROOT_LO
    total = np.zeros_like(x)
    for c in reversed(_ROOT_COEFFS):
        total = (total + c) * d
    return total


def _digamma(x):
    """The logarithmic derivative of the gamma function."""
    pole = (x <= 0) & (x == np.floor(x))
    reflect = x < 0
    safe = np.where(pole | ~np.isfinite(x), 1.0, x)
    base = np.where(reflect, 1 - safe, safe)
    value = _digamma_positive(base)
    near = np.abs(base - _ROOT_HI) < _ROOT_RADIUS
    value = np.where(near, _digamma_near_root(np.where(near, base, _ROOT_HI)), value)
    r = safe - np.round(safe)  # tan(pi x) has period 1; r is exact
    value = np.where(reflect, value - np.pi / np.tan(np.pi * r), value)
    zero_pole = np.where(np.signbit(x), np.inf, -np.inf)
    value = np.where(pole, np.where(x == 0, zero_pole, np.nan), value)
    value = np.where(x == np.inf, np.inf, value)
    value = np.where(x == -np.inf, np.nan, value)
    return np.where(np.isnan(x), x, value)


def _c_erfcx():
    return """#ifndef NBG_ERFCX_SUPPORT
#define NBG_ERFCX_SUPPORT
static inline double nbg_exp_of_square(double x) {
    double hi = x * x, lo = fma(x, x, -hi), e = exp(hi);
    return isinf(e) ? e : e + e * lo;
}
static inline double nbg_erfcx_nonnegative(double a) {
    double t, term = 1.0, total = 1.0;
    int k;
    if (a < %(FROM)r) return nbg_exp_of_square(a) * erfc(a);
    t = 0.5 / a / a;
    for (k = 1; k <= %(TERMS)d; k++) {
        term = term * (-(2 * k - 1) * t);
        total = total + term;
    }
    return total / (a * %(SQRT_PI)r);
}
static inline double nbg_erfcx(double x) {
    double a = fabs(x);
    if (isnan(x)) return x;
    if (x >= 0) return nbg_erfcx_nonnegative(a);
    if (a >= 27) return INFINITY;
    return 2 * nbg_exp_of_square(a) - nbg_erfcx_nonnegative(a);
}
#endif
""" % {"FROM": _ERFCX_SERIES_FROM, "TERMS": _ERFCX_TERMS, "SQRT_PI": _SQRT_PI}


def _c_erfinv():
    return """#ifndef NBG_ERFINV_SUPPORT
#define NBG_ERFINV_SUPPORT
static inline double nbg_erfinv(double y) {
    double a = fabs(y), q, l, b, x, f, r;
    int i;
    if (isnan(y) || a == 0) return y;
    if (a > 1) return NAN;
    if (a == 1) return copysign(INFINITY, y);
    q = 1 - a;
    l = log(q * (1 + a));
    b = 2 / (%(PI)r * 0.147) + l / 2;
    x = sqrt(sqrt(b * b - l / 0.147) - b);
    for (i = 0; i < 3; i++) {
        f = a > 0.5 ? q - erfc(x) : erf(x) - a;
        r = f / (%(C)r * exp(-x * x));
        x = x - r / (1 + x * r);
    }
    return copysign(x, y);
}
#endif
""" % {"PI": np.pi, "C": _TWO_OVER_SQRT_PI}


def _c_digamma():
    root = " ".join("%r," % c for c in _ROOT_COEFFS)
    asym = " ".join("%r," % c for c in _DIGAMMA_ASYMPTOTIC)
    return """#ifndef NBG_DIGAMMA_SUPPORT
#define NBG_DIGAMMA_SUPPORT
static const double nbg_digamma_root[%(NROOT)d] = {%(ROOT)s};
static const double nbg_digamma_asym[%(NASYM)d] = {%(ASYM)s};
static inline double nbg_digamma_positive(double x) {
    double result = 0, inv2, series = 0, d, total = 0;
    int i;
    if (fabs(x - %(HI)r) < %(RADIUS)r) {
        d = (x - %(HI)r) - %(LO)r;
        for (i = %(NROOT)d - 1; i >= 0; i--) total = (total + nbg_digamma_root[i]) * d;
        return total;
    }
    for (i = 0; i < %(SHIFT)d; i++) {
        if (x < %(SHIFT)d.0) { result = result - 1 / x; x = x + 1; }
    }
    inv2 = 1 / (x * x);
    for (i = %(NASYM)d - 1; i >= 0; i--) series = (series + nbg_digamma_asym[i]) * inv2;
    return result + (log(x) - 0.5 / x - series);
}
static inline double nbg_digamma(double x) {
    double r;
    if (isnan(x)) return x;
    if (x == INFINITY) return x;
    if (x == -INFINITY) return NAN;
    if (x <= 0 && x == floor(x)) return x == 0 ? (signbit(x) ? INFINITY : -INFINITY) : NAN;
    if (x >= 0) return nbg_digamma_positive(x);
    r = x - rint(x);
    return nbg_digamma_positive(1 - x) - %(PI)r / tan(%(PI)r * r);
}
#endif
""" % {"NROOT": len(_ROOT_COEFFS), "ROOT": root, "NASYM": len(_DIGAMMA_ASYMPTOTIC),
       "ASYM": asym, "HI": _ROOT_HI, "LO": _ROOT_LO, "RADIUS": _ROOT_RADIUS,
       "SHIFT": int(_DIGAMMA_SHIFT_TO), "PI": np.pi}


class _Special(UnaryScalarOp):
    """A special function computed in double precision (``c_function``) and rounded."""

    c_function = None
    element_cost = 5  # a libm call or a short series (see ScalarOp.element_cost)
    support = ""

    def c_loop(self, a, dtype):
        call = "%s((double)%s)" % (self.c_function, a)
        return call if dtype == "float64" else "((float)%s)" % call

    def c_support_code(self, node=None):
        return self.support

    def c_code_cache_version(self):
        return (1,)


class Erf(_Special):
    """The error function."""

    name = "erf"
    c_function = "erf"
    nfunc = _in_double(_erf)

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] * _TWO_OVER_SQRT_PI * exp(-sqr(x))], inputs)


class Erfc(_Special):
    """The complementary error function ``1 - erf(x)``, accurate where it is tiny."""

    name = "erfc"
    c_function = "erfc"
    nfunc = _in_double(_erfc)

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([-(output_grads[0] * _TWO_OVER_SQRT_PI) * exp(-sqr(x))], inputs)


class Erfcx(_Special):
    """The scaled complementary error function ``exp(x**2) * erfc(x)``."""

    name = "erfcx"
    c_function = "nbg_erfcx"
    nfunc = _in_double(_erfcx)
    support = _c_erfcx()

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] * (2 * x * erfcx(x) - _TWO_OVER_SQRT_PI)], inputs)


class ErfInv(_Special):
    """The inverse error function on [-1, 1]."""

    name = "erfinv"
    c_function = "nbg_erfinv"
    nfunc = _in_double(_erfinv)
    support = _c_erfinv()

    def grad(self, inputs, output_grads):
        x = inputs[0]
        return input_gradients([output_grads[0] * (_SQRT_PI / 2) * exp(sqr(erfinv(x)))], inputs)


class GammaLn(_Special):
    """``log(|gamma(x)|)`` (+inf at the poles 0, -1, -2, ...)."""

    name = "gammaln"
    c_function = "lgamma"
    nfunc = _in_double(_lgamma)

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * digamma(inputs[0])], inputs)


class Digamma(_Special):
    """The digamma function ``d/dx log(gamma(x))`` (no gradient: trigamma is not provided)."""

    name = "digamma"
    c_function = "nbg_digamma"
    nfunc = _in_double(_digamma)
    support = _c_digamma()


erf = Erf()
erfc = Erfc()
erfcx = Erfcx()
erfinv = ErfInv()
gammaln = GammaLn()
digamma = Digamma()
