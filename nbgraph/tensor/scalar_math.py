"""Transcendental scalar ops: exp, log, log1p, expm1, sqrt, sin, cos, tan, tanh,
and the numerically stable sigmoid and softplus.

Integers and bools are computed in the float dtype NumPy would use (float16
for bools and 8-bit integers, float32 for 16-bit ones, float64 beyond).  In C
the float32 versions call the ``f``-suffixed functions of math.h (``expf``),
so float32 stays float32; float16 is computed in float32 and rounded.
"""

import numpy as np

from nbgraph.tensor.scalar_op import UnaryScalarOp, input_gradients, float_suffix, with_out
from nbgraph.tensor.scalar_ops import neg, sqr

__all__ = [
    "UnaryMath", "Exp", "Log", "Log1p", "Expm1", "Sqrt", "Sin", "Cos", "Tan", "Tanh",
    "Sigmoid", "Softplus", "C99_COMPLEX",
    "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "softplus",
]


#: The functions whose complex NumPy loops call C99's ``complex.h`` namesake
#: (``cexp``, ``clog``, ``csqrt``, ... with C99's branch cuts and special values;
#: the results of glibc's are NumPy's bit for bit).  NumPy computes the others
#: on complex numbers itself (log1p, expm1, log2, log10, exp2): those run in Python.
C99_COMPLEX = frozenset({"exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                         "asin", "acos", "atan", "asinh", "acosh", "atanh"})


class UnaryMath(UnaryScalarOp):
    """A float function of one input calling the math.h function ``c_function``
    (for complex operands its ``complex.h`` twin, where in :data:`C99_COMPLEX`)."""

    c_function = None
    element_cost = 5

    @property
    def c_complex(self):
        """True when the complex C of this function is C99's (see :data:`C99_COMPLEX`)."""
        return self.c_function in C99_COMPLEX

    def c_loop(self, a, dtype):
        if dtype in ("complex64", "complex128"):
            return "c%s%s(%s)" % (self.c_function, "f" if dtype == "complex64" else "", a)
        return "%s%s(%s)" % (self.c_function, float_suffix(dtype), a)


class Exp(UnaryMath):
    """``e ** a``."""

    name = "exp"
    c_function = "exp"
    nfunc = np.exp

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * exp(inputs[0])], inputs)


class Log(UnaryMath):
    """Natural logarithm (``log(0)`` is -inf, negative inputs give NaN)."""

    name = "log"
    c_function = "log"
    nfunc = np.log

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] / inputs[0]], inputs)


class Log1p(UnaryMath):
    """``log(1 + a)``, accurate for small ``a``."""

    name = "log1p"
    c_function = "log1p"
    nfunc = np.log1p

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] / (1 + inputs[0])], inputs)


class Expm1(UnaryMath):
    """``exp(a) - 1``, accurate for small ``a``."""

    name = "expm1"
    c_function = "expm1"
    nfunc = np.expm1

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * exp(inputs[0])], inputs)


class Sqrt(UnaryMath):
    """Square root (NaN for negative inputs)."""

    name = "sqrt"
    element_cost = 2
    c_function = "sqrt"
    nfunc = np.sqrt

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] / (2 * sqrt(inputs[0]))], inputs)


class Sin(UnaryMath):
    """Sine."""

    name = "sin"
    c_function = "sin"
    nfunc = np.sin

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * cos(inputs[0])], inputs)


class Cos(UnaryMath):
    """Cosine."""

    name = "cos"
    c_function = "cos"
    nfunc = np.cos

    def grad(self, inputs, output_grads):
        return input_gradients([neg(output_grads[0] * sin(inputs[0]))], inputs)


class Tan(UnaryMath):
    """Tangent."""

    name = "tan"
    c_function = "tan"
    nfunc = np.tan

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] / sqr(cos(inputs[0]))], inputs)


class Tanh(UnaryMath):
    """Hyperbolic tangent."""

    name = "tanh"
    c_function = "tanh"
    nfunc = np.tanh

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * (1 - sqr(tanh(inputs[0])))], inputs)


def float_input(x):
    """``x`` as an array of the float dtype NumPy's exp gives it (float16 for bools
    and 8-bit integers, as NumPy)."""
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        x = x.astype(np.exp(np.ones((), dtype=x.dtype)).dtype)
    return x


def computed_in(x):
    """The float array ``x`` is computed in: float32 for float16 (NumPy's float16
    loops compute in float32 and round the result), else ``x`` itself."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


@with_out
def _sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow: exp only ever sees ``-|x|``."""
    x = float_input(x)
    w = computed_in(x)
    e = np.exp(-np.abs(w))
    return np.where(w >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


@with_out
def _softplus(x):
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))``: never overflows."""
    x = float_input(x)
    w = computed_in(x)
    return (np.where(w > 0, w, 0) + np.log1p(np.exp(-np.abs(w)))).astype(x.dtype, copy=False)


_SIGMOID_SUPPORT = """#ifndef NBG_SIGMOID_SUPPORT
#define NBG_SIGMOID_SUPPORT
static inline double nbg_sigmoid_float64(double x) {
    double e = exp(-fabs(x));
    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
static inline float nbg_sigmoid_float32(float x) {
    float e = expf(-fabsf(x));
    return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
#endif
"""

_SOFTPLUS_SUPPORT = """#ifndef NBG_SOFTPLUS_SUPPORT
#define NBG_SOFTPLUS_SUPPORT
static inline double nbg_softplus_float64(double x) {
    return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x)));
}
static inline float nbg_softplus_float32(float x) {
    return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x)));
}
#endif
"""


class Sigmoid(UnaryScalarOp):
    """The logistic function ``1 / (1 + exp(-a))``, stable for any ``a``."""

    name = "sigmoid"
    element_cost = 6
    nfunc = _sigmoid

    def c_loop(self, a, dtype):
        return "nbg_sigmoid_%s(%s)" % (dtype, a)

    def c_support_code(self, node=None):
        return _SIGMOID_SUPPORT

    def grad(self, inputs, output_grads):
        s = sigmoid(inputs[0])
        return input_gradients([output_grads[0] * s * (1 - s)], inputs)


class Softplus(UnaryScalarOp):
    """``log(1 + exp(a))``, stable for any ``a`` (never overflows)."""

    name = "softplus"
    element_cost = 9
    nfunc = _softplus

    def c_loop(self, a, dtype):
        return "nbg_softplus_%s(%s)" % (dtype, a)

    def c_support_code(self, node=None):
        return _SOFTPLUS_SUPPORT

    def grad(self, inputs, output_grads):
        return input_gradients([output_grads[0] * sigmoid(inputs[0])], inputs)


exp = Exp()
log = Log()
log1p = Log1p()
expm1 = Expm1()
sqrt = Sqrt()
sin = Sin()
cos = Cos()
tan = Tan()
tanh = Tanh()
sigmoid = Sigmoid()
softplus = Softplus()
