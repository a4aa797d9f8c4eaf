"""Scalar ops of complex numbers: real, imag, conj, angle, and the C of complex arithmetic.

Each follows the NumPy function of the same name on every dtype NumPy accepts
(``real`` of a float is the float, ``imag`` of a float is 0, ``angle`` of a
real number is 0 or pi).  Gradients follow Theano's convention for a real
cost ``C`` of a complex ``z = x + iy``: the gradient is ``dC/dx + i dC/dy``.
These four ops, and ``abs``, are not holomorphic, so each gives that gradient
itself; holomorphic ops (``+ * exp``...) get it from their real formula
through :class:`~nbgraph.tensor.elemwise.Elemwise`.

C: ``real``, ``imag`` and ``conj`` have C for complex operands; ``angle`` runs
in Python there.  :data:`COMPLEX_SUPPORT` holds the C helpers for NumPy's
complex multiplication and division (the same formulas and the same order of
operations as NumPy's loops, so the results are bit for bit NumPy's; C's own
``*`` and ``/`` on ``_Complex`` recover infinities differently).
"""

import numpy as np

from nbgraph.tensor.dtypes import COMPLEX_DTYPES
from nbgraph.tensor.scalar_op import UnaryScalarOp, input_gradients, with_out, zero_gradients

__all__ = ["Real", "Imag", "Conj", "Angle", "real", "imag", "conj", "angle",
           "COMPLEX_SUPPORT", "is_complex"]


def is_complex(dtype):
    """True for complex64 and complex128."""
    return dtype in COMPLEX_DTYPES


def _parts(dtype):
    """(real C type, libm suffix) of a complex dtype's parts."""
    return ("float", "f") if dtype == "complex64" else ("double", "")


def _complex_support():
    parts = ["#ifndef NBG_COMPLEX_SUPPORT", "#define NBG_COMPLEX_SUPPORT", "#include <complex.h>"]
    for dtype, ctype in (("complex64", "float _Complex"), ("complex128", "double _Complex")):
        real, f = _parts(dtype)
        make = "CMPLXF" if dtype == "complex64" else "CMPLX"
        parts.append("""
static inline %(c)s nbg_cmul_%(d)s(%(c)s a, %(c)s b) {
    const %(r)s ar = creal%(f)s(a), ai = cimag%(f)s(a), br = creal%(f)s(b), bi = cimag%(f)s(b);
    return %(m)s(ar * br - ai * bi, ar * bi + ai * br);
}
/* Smith's division, in NumPy's branch order (|b.real| >= |b.imag| first). */
static inline %(c)s nbg_cdiv_%(d)s(%(c)s a, %(c)s b) {
    const %(r)s ar = creal%(f)s(a), ai = cimag%(f)s(a), br = creal%(f)s(b), bi = cimag%(f)s(b);
    const %(r)s abr = fabs%(f)s(br), abi = fabs%(f)s(bi);
    if (abr >= abi) {
        if (abr == 0 && abi == 0) return %(m)s(ar / abr, ai / abr);
        {
            const %(r)s rat = bi / br;
            const %(r)s scl = (%(r)s)1.0 / (br + bi * rat);
            return %(m)s((ar + ai * rat) * scl, (ai - ar * rat) * scl);
        }
    } else {
        const %(r)s rat = br / bi;
        const %(r)s scl = (%(r)s)1.0 / (bi + br * rat);
        return %(m)s((ar * rat + ai) * scl, (ai * rat - ar) * scl);
    }
}""" % {"c": ctype, "d": dtype, "r": real, "f": f, "m": make})
    parts.append("#endif")
    return "\n".join(parts) + "\n"


#: C helpers: ``nbg_cmul_<dtype>``, ``nbg_cdiv_<dtype>`` (needs ``complex.h``).
COMPLEX_SUPPORT = _complex_support()


class _ComplexPart(UnaryScalarOp):
    """Shared: not holomorphic, NumPy defines it on every numeric dtype."""

    holomorphic = False
    complex_support = True
    c_complex = True

    def c_headers(self):
        return ["math.h", "stdint.h", "complex.h"]

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        src = node.inputs[0].type.dtype
        out = node.outputs[0].type.dtype
        return "%s = %s;" % (outputs[0], self.c_of(inputs[0], src, out))


def _part(function):
    """NumPy's ``real``/``imag`` as a fresh array (NumPy returns a view), with ``out=``."""
    def part(x, out=None):
        result = function(x)
        if out is None:
            return np.array(result, copy=True)
        np.copyto(out, result, casting="unsafe")
        return out
    part.__name__ = function.__name__
    return part


class Real(_ComplexPart):
    """The real part (a real number is its own real part)."""

    name = "real"
    nfunc = _part(np.real)

    def c_of(self, a, src, out):
        if is_complex(src):
            return "creal%s(%s)" % (_parts(src)[1], a)
        return a

    def grad(self, inputs, output_grads):
        # dC/dx = gz, dC/dy = 0: gz as a complex number (real inputs: gz itself)
        return input_gradients([output_grads[0]], inputs)


class Imag(_ComplexPart):
    """The imaginary part (0 for a real number)."""

    name = "imag"
    nfunc = _part(np.imag)

    def has_c_code(self, node):
        return node is None or is_complex(node.inputs[0].type.dtype)

    def c_of(self, a, src, out):
        return "cimag%s(%s)" % (_parts(src)[1], a)

    def grad(self, inputs, output_grads):
        (x,), (gz,) = inputs, output_grads
        if not is_complex(x.type.dtype):
            return zero_gradients(inputs)
        return input_gradients([gz * 1j], inputs)


class Conj(_ComplexPart):
    """The complex conjugate (a real number is its own conjugate)."""

    name = "conj"
    nfunc = np.conjugate

    def c_of(self, a, src, out):
        if is_complex(src):
            real, f = _parts(src)
            return "%s(creal%s(%s), -cimag%s(%s))" % (
                "CMPLXF" if src == "complex64" else "CMPLX", f, a, f, a)
        return a

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return input_gradients([conj(gz) if is_complex(gz.type.dtype) else gz], inputs)


class Angle(_ComplexPart):
    """The argument of a complex number, in (-pi, pi] (0 or pi for a real number).

    Runs in Python (NumPy's ``angle``); the gradient at 0 is NaN (no direction).
    """

    name = "angle"
    c_complex = False
    nfunc = with_out(np.angle)

    def has_c_code(self, node):
        return False

    def grad(self, inputs, output_grads):
        (x,), (gz,) = inputs, output_grads
        if not is_complex(x.type.dtype):
            return zero_gradients(inputs)
        # d angle/dx = -y/|z|^2, d angle/dy = x/|z|^2: together i*z/|z|^2
        squared = real(x) * real(x) + imag(x) * imag(x)
        return input_gradients([gz * (x * 1j) / squared], inputs)


real = Real()
imag = Imag()
conj = Conj()
angle = Angle()
