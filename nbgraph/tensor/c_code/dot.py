"""C kernels for ``Dot``: vector·vector, matrix·vector, vector·matrix and matrix·matrix.

Every case computes in a *compute type* chosen by the output dtype (NumPy's
``np.dot`` result dtype): the float itself, the unsigned integer of the
output's width for integers (wrapping arithmetic, NumPy's overflow
behaviour, with no signed-overflow undefined behaviour), ``uint8`` with
OR/AND for bool.  An operand whose elements are not already of the compute
type, or whose layout the fast loops cannot walk, is converted into a
contiguous buffer first (as NumPy copies before calling BLAS).

* matrix·vector reduces to one of two loops over a matrix with contiguous
  rows: *rows* (one dot product per row, four rows at a time, two vector
  accumulators per row) or *axpy* (the rows scaled by the vector summed into
  one output vector, for ``X.T·c`` with X C-contiguous).  vector·matrix is
  ``Y.T·x`` and vector·vector a one-row matrix.
* matrix·matrix packs 256-deep panels of both operands (converting them)
  and runs a 6-row register-blocked micro-kernel
  (``csrc/dot_mm.h``).
* float matrix·matrix with few output columns (at most 96 bytes of a row)
  and a first operand of the output dtype with a unit stride (``X @ W``,
  ``X.T @ G``) runs the *skinny* kernel instead (``csrc/dot_skinny.h``):
  X is streamed once, unpacked, with the columns in registers.  Under the
  C-VM without the BLAS below, where NumPy's BLAS runs float matrix
  products, ``c_call_choice`` picks it per call
  (:mod:`nbgraph.tensor.blas_skinny`).
* other float matrix products of two operands of the output dtype, each
  with a unit stride along one axis, call the process's BLAS (NumPy's
  OpenBLAS, found among the loaded libraries: ``csrc/dot_blas.h``) with its
  transpose flags, on one BLAS thread up to
  :data:`~nbgraph.tensor.blas_threads.SMALL_PRODUCT_MACS` multiply-adds as
  the C-VM's Python side does (above ``NBG_BLAS_POOL``, 2**19, in two fixed
  row blocks on the pool, BLAS on one thread in each); without such a BLAS
  (or with :data:`C_BLAS` off) they run the packed kernel, and the C-VM
  leaves them to NumPy.  Where this process has the BLAS
  (:func:`~nbgraph.tensor.blas_threads.c_blas_found`) the packed kernel is
  not compiled into the float support code (a third of its compile work):
  an operand of another dtype, or without a unit stride, is converted into a
  contiguous buffer for the BLAS instead, as NumPy does (and a module run
  where no BLAS is found after all sums in plain loops).

Big loops are split across the thread pool (``nbg_parallel``) in *fixed*
row blocks that depend on the sizes only; the axpy loop's per-block partial
vectors (each on cache lines of its own) are added in block order, so
results never depend on the thread count.  The blocks form one group per
thread; the calling thread prefers the first group and each pool worker its
own, so the rows and the axpy loops over one matrix (``dot(X, w)`` then
``dot(X.T, c)``, call after call) find each half in the same core's L2.

Vector code uses GCC vector extensions (fused multiply-add when the CPU has
it: the accumulation order differs from BLAS anyway); kernels return error
codes (shape mismatch, out of memory) that become exceptions naming the node.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, c_template
from nbgraph.tensor import blas_threads
from nbgraph.tensor.blas_skinny import skinny_choice
from nbgraph.tensor.dtypes import C_TYPES as _C_TYPES

__all__ = ["C_BLAS", "DotC", "float_matrix_support"]

#: Whether float matrix products in C call the process's BLAS when one is loaded
#: (False keeps the packed kernel).  Read when a Dot node's C is generated: kernels
#: are memoised by structure in a process, and the function cache does not see it.
C_BLAS = True

#: Output dtype -> (suffix, compute C type, kind: f float, i integer, b bool).
_COMPUTE = {
    "float64": ("f64", "double", "f"), "float32": ("f32", "float", "f"),
    "int64": ("u64", "uint64_t", "i"), "uint64": ("u64", "uint64_t", "i"),
    "int32": ("u32", "uint32_t", "i"), "uint32": ("u32", "uint32_t", "i"),
    "int16": ("u16", "uint16_t", "i"), "uint16": ("u16", "uint16_t", "i"),
    "int8": ("u8", "uint8_t", "i"), "uint8": ("u8", "uint8_t", "i"),
    "bool": ("b8", "uint8_t", "b"),
}

#: The C text lives in ``csrc/`` (``string.Template``, ``${S}`` the compute
#: type's suffix, ``${CT}`` its C type, ``${WT}`` the scalar multiply type):
#: ``dot_common.h`` (blocking sizes and the pool, shared by every type),
#: ``dot_core.h`` (the vector type and arithmetic of one compute type; its
#: ``${MACROS}``: MAC acc + a * b and VADD a + b on vectors, SMAC and ADD on
#: scalars, BCAST a vector of the scalar at p, from ``dot_macros_*.h``),
#: ``dot_mv.h`` (the matrix-vector loops), ``dot_mm.h`` (the matrix product:
#: panels of B 256 deep are packed once per panel and blocks of 48 rows of A
#: by each task, a 6 x (two vectors) register tile), ``dot_pack.h``
#: (converting a strided block of an input of dtype ``${IN}``) and, for float
#: matrix products, ``dot_skinny.h`` and ``dot_blas.h`` (the BLAS call and the
#: choice among skinny kernel, BLAS and packed kernel: ``nbg_${S}_gemm``; its
#: ``${BLAS}`` is :data:`C_BLAS`, ``${SMALL}`` and ``${SPLITS}`` the limits of
#: :mod:`nbgraph.tensor.blas_threads`).
_PKG = __package__

#: A block of support code the C linker may compile once per machine into an
#: object file that modules link (the markers of :mod:`nbgraph.linkers.c.support`;
#: compiled as it stands, it is plain static C and the exports are skipped).
SUPPORT_OBJECT = ("/* nbgraph support object: begin */\n%s\n"
                  "#if 0 /* nbgraph support object: exports */\n%s\n"
                  "#endif /* nbgraph support object: end */\n")


def _c(name, **keys):
    return c_template(_PKG, "csrc/" + name, **keys)


def _compute(node):
    return _COMPUTE[node.outputs[0].type.dtype]


def _core(suffix, ctype, kind, matrix, packed=True):
    """The vector type and arithmetic of one compute type, then the matrix-vector
    loops, or the packed matrix product (``packed``), or neither."""
    wide = "uint64_t" if ctype == "uint64_t" else "uint32_t"
    keys = {"S": suffix, "CT": ctype, "WT": wide}
    if kind == "f":
        bits = "64" if ctype == "double" else "32"
        macros = _c("dot_macros_float.h",
                    VFMA="__builtin_ia32_vfmaddpd256" if bits == "64"
                    else "__builtin_ia32_vfmaddps256",
                    SFMA="__builtin_fma" if bits == "64" else "__builtin_fmaf",
                    BCAST="__builtin_ia32_vbroadcastsd256" if bits == "64"
                    else "__builtin_ia32_vbroadcastss256", **keys)
    else:
        macros = _c("dot_macros_int.h" if kind == "i" else "dot_macros_bool.h", **keys)
    core = _c("dot_core.h", MACROS=macros.rstrip("\n"), **keys)
    if not matrix:
        return core + _c("dot_mv.h", **keys)
    return core + _c("dot_mm.h", **keys) if packed else core


def float_matrix_support(dtype):
    """The C of the matrix product's building blocks for float ``dtype`` (its
    vector type, ``nbg_<S>_micro`` register tile, packing sizes): for kernels
    that pack their own panels (the convolutions)."""
    suffix, ctype, kind = _COMPUTE[dtype]
    return _c("dot_common.h") + "\n" + _core(suffix, ctype, kind, True)


def _blas_found():
    """Whether float matrix products call the BLAS (:data:`C_BLAS` on and the
    process's BLAS found), so the packed kernel is left out of their support code."""
    return bool(C_BLAS) and blas_threads.c_blas_found()


def _pack(in_dtype, suffix, ctype):
    value = "*(const %s *)(p + c * cs)" % _C_TYPES[in_dtype]
    conv = "(%s)(%s != 0)" % (ctype, value) if in_dtype == "bool" else \
        "(%s)%s" % (ctype, value)
    return _c("dot_pack.h", IN=in_dtype, S=suffix, CT=ctype, CONV=conv)


def _native(in_dtype, out_dtype):
    """True when an input's elements already are the compute type's bits."""
    if in_dtype == out_dtype:
        return out_dtype != "bool"
    a, b = np.dtype(in_dtype), np.dtype(out_dtype)
    return a.kind in "iu" and b.kind in "iu" and a.itemsize == b.itemsize


class DotC(CLinkerOp):
    """The C side of Dot (module docstring): ``class Dot(DotC, Op)``."""

    def has_c_code(self, node):
        """True for real and bool dtypes (no float16, complex or object)."""
        return all(v.type.dtype in _C_TYPES for v in node.inputs + node.outputs) and \
            all(v.type.ndim in (1, 2) for v in node.inputs)


    def c_preferred(self, node):
        """Whether the C-VM linker should run this node in C rather than with NumPy.

        Measured on 2 cores: the C loops beat NumPy's BLAS calls for matrix·vector,
        vector·matrix and vector·vector products (less call overhead: 1.3 against
        1.7 us for a small product followed by an Elemwise; 1000x100 float64:
        ~6 us on two threads, each keeping its half of X in its L2, against
        15.6 us); NumPy's integer and bool matrix products are plain loops
        (100x100 int64: 0.14 against 0.66 ms).  Float matrix products with both
        operands of the output dtype run in C when it calls the process's BLAS
        (:data:`C_BLAS` and :func:`~nbgraph.tensor.blas_threads.c_blas_found`:
        big products in row blocks on nbgraph's pool, not on BLAS's spinning
        threads); otherwise NumPy's BLAS, with :meth:`c_call_choice`.
        """
        x, y = node.inputs
        if x.type.ndim == 2 and y.type.ndim == 2:
            out = node.outputs[0].type.dtype
            if out in ("float32", "float64"):
                return bool(C_BLAS) and x.type.dtype == y.type.dtype == out and \
                    blas_threads.c_blas_found()
        return True


    def c_call_choice(self, node):
        """For float matrix products (BLAS in the C-VM): the per-call test of
        :func:`nbgraph.tensor.blas_skinny.skinny_choice` that sends a product with
        few output columns to the skinny C kernel."""
        x, y = node.inputs
        if x.type.ndim != 2 or y.type.ndim != 2 or self.c_preferred(node):
            return None
        return skinny_choice(x.type.dtype, 2, node.outputs[0].type.dtype)


    def c_prepare_outputs(self, node, inputs, _empty=np.empty):
        x, y = inputs
        dtype = node.outputs[0].type.numpy_dtype
        if y.ndim == 1:  # sizes as ints, not tuples: this runs on every call
            return [_empty(len(x) if x.ndim == 2 else (), dtype)]
        if x.ndim == 1:
            return [_empty(y.shape[1], dtype)]
        return [_empty((len(x), y.shape[1]), dtype)]


    def c_support_code(self, node=None):
        """The fixed C of this node's compute type, as a support object (compiled
        once per machine, see :mod:`nbgraph.linkers.c.support`), then the
        converters of its input dtypes (small, kept in the module: kernels pass
        them by address)."""
        if node is None:
            return _c("dot_common.h")
        suffix, ctype, kind = _compute(node)
        matrix = all(v.type.ndim == 2 for v in node.inputs)
        packed = not (matrix and kind == "f" and _blas_found())
        body = _c("dot_common.h") + "\n" + _core(suffix, ctype, kind, matrix, packed)
        api = _c("dot_pack_api.h", S=suffix, CT=ctype)
        if packed or not matrix:
            api += _c("dot_mm_api.h" if matrix else "dot_mv_api.h", S=suffix, CT=ctype)
        if matrix and kind == "f":
            body += "\n" + _c("dot_skinny.h", S=suffix, CT=ctype)
            body += "\n" + _c("dot_blas.h", S=suffix, CT=ctype, BLAS=int(bool(C_BLAS)),
                              PACKED=int(packed), SMALL=int(blas_threads.SMALL_PRODUCT_MACS),
                              SPLITS=blas_threads.OPENBLAS_SPLITS_ABOVE)
            api += _c("dot_blas_api.h", S=suffix, CT=ctype)
        parts = [SUPPORT_OBJECT % (body.rstrip("\n"), api.strip("\n"))]
        for dtype in dict.fromkeys(v.type.dtype for v in node.inputs):
            parts.append(_pack(dtype, suffix, ctype))
        return "\n".join(parts)


    def c_code(self, node, name, inputs, outputs, sub):
        x, y = node.inputs
        a, b = inputs
        (o,) = outputs
        out_dtype = node.outputs[0].type.dtype
        suffix, ctype, _ = _compute(node)
        ka = x.type.ndim - 1
        lines = ["if (NBG_UNLIKELY(%s_dims[%d] != %s_dims[0])) {" % (a, ka, b),
                 "char nbg_b1[200], nbg_b2[200];",
                 'nbg_errorf(nbg_err, "dot: shapes %%s and %%s are not aligned", '
                 "nbg_shape_text(nbg_b1, 200, %d, %s_dims), "
                 "nbg_shape_text(nbg_b2, 200, %d, %s_dims));"
                 % (x.type.ndim, a, y.type.ndim, b),
                 "goto nbg_fail;", "}"]
        expect = ["%s_dims[0]" % a] if x.type.ndim == 2 else []
        expect += ["%s_dims[1]" % b] if y.type.ndim == 2 else []
        if expect:
            lines.append("if (NBG_UNLIKELY(%s)) { nbg_errorf(nbg_err, \"dot: the output's shape "
                         "does not match the inputs'\"); goto nbg_fail; }" % " || ".join(
                             "%s_dims[%d] != %s" % (o, d, e) for d, e in enumerate(expect)))
        pa = "nbg_dpk_%s_%s" % (x.type.dtype, suffix)
        pb = "nbg_dpk_%s_%s" % (y.type.dtype, suffix)
        na, nb = int(_native(x.type.dtype, out_dtype)), int(_native(y.type.dtype, out_dtype))
        args = {"S": suffix, "CT": ctype, "a": a, "b": b, "o": o, "pa": pa, "pb": pb,
                "na": na, "nb": nb}
        if x.type.ndim == 2 and y.type.ndim == 2 and _compute(node)[2] == "f":
            call = ("nbg_%(S)s_gemm((const char *)%(a)s, %(a)s_dims[0], %(a)s_dims[1], "
                    "%(a)s_strides[0], %(a)s_strides[1], %(na)d, %(pa)s, (const char *)%(b)s, "
                    "%(b)s_dims[1], %(b)s_strides[0], %(b)s_strides[1], %(nb)d, %(pb)s, "
                    "(%(CT)s *)%(o)s, %(o)s_strides[0], "
                    "%(o)s_strides[1], nbg_err)")
        elif x.type.ndim == 2 and y.type.ndim == 2:
            call = ("nbg_%(S)s_mm((const char *)%(a)s, %(a)s_dims[0], %(a)s_dims[1], "
                    "%(a)s_strides[0], %(a)s_strides[1], %(pa)s, (const char *)%(b)s, "
                    "%(b)s_dims[1], %(b)s_strides[0], %(b)s_strides[1], %(pb)s, "
                    "(%(CT)s *)%(o)s, %(o)s_strides[0], "
                    "%(o)s_strides[1], nbg_err)")
        elif x.type.ndim == 2:
            call = ("nbg_%(S)s_mv((const char *)%(a)s, %(a)s_dims[0], %(a)s_dims[1], "
                    "%(a)s_strides[0], %(a)s_strides[1], %(pa)s, %(na)d, (const char *)%(b)s, "
                    "%(b)s_strides[0], %(pb)s, %(nb)d, (%(CT)s *)%(o)s, %(o)s_strides[0], nbg_err)")
        elif y.type.ndim == 2:
            call = ("nbg_%(S)s_mv((const char *)%(b)s, %(b)s_dims[1], %(b)s_dims[0], "
                    "%(b)s_strides[1], %(b)s_strides[0], %(pb)s, %(nb)d, (const char *)%(a)s, "
                    "%(a)s_strides[0], %(pa)s, %(na)d, (%(CT)s *)%(o)s, %(o)s_strides[0], nbg_err)")
        else:
            call = ("nbg_%(S)s_mv((const char *)%(a)s, 1, %(a)s_dims[0], 0, %(a)s_strides[0], "
                    "%(pa)s, %(na)d, (const char *)%(b)s, %(b)s_strides[0], %(pb)s, %(nb)d, "
                    "(%(CT)s *)%(o)s, 0, nbg_err)")
        lines.append("nbg_status = %s;" % (call % args))
        lines.append("if (nbg_status) goto nbg_fail;")
        return "\n".join(lines)


    def c_code_cache_version(self):
        return (4, bool(C_BLAS), _blas_found())
