"""C kernels of 2-d pooling: ``Pool2d`` and ``Pool2dGrad`` (``class
Pool2d(Pool2dC, _PoolBase)``), float32 and float64, every mode, window,
stride, padding and ``ignore_border`` the Ops take, any number of leading
dimensions (``csrc/pool.h``).

One pass over each plane's windows.  The max gradient recomputes which
elements equal the window's maximum from the forward output (as ``perform``
does) instead of keeping an argmax: one output less to allocate and carry,
and the comparison costs about what reading an index would.  The kernels
add in ``perform``'s order, so both give the same bits (signed zeros aside:
``perform`` also adds the padding's zeros).  Other dtypes (integer max
pooling) run in Python.
"""

import numpy as np

from nbgraph.core.c_interface import c_template
from nbgraph.tensor.c_code.float_kernels import FLOAT_SUFFIX, FloatKernelC

__all__ = ["Pool2dC", "Pool2dGradC"]

_PKG = __package__
_CTYPE = {"float32": "float", "float64": "double"}
_MODE = {"max": 0, "sum": 1, "average_inc_pad": 2, "average_exc_pad": 3}
#: Elements visited from which planes are split across threads.
MIN_WORK = 1 << 17
_VERSION = (1,)


class _PoolC(FloatKernelC):
    """Shared by the two kernels (every operand float32, or every one float64)."""

    _grad = 0
    c_version = _VERSION

    def c_support_code(self, node=None):
        if node is None:
            return ""
        dtype = node.outputs[0].type.dtype
        return "#ifndef NBG_POOL_MINWORK\n#define NBG_POOL_MINWORK %dLL\n#endif\n" % (
            MIN_WORK) + c_template(_PKG, "csrc/pool.h", S=FLOAT_SUFFIX[dtype], CT=_CTYPE[dtype],
                                    IT="uint32_t" if dtype == "float32" else "uint64_t")

    def c_code(self, node, name, inputs, outputs, sub):
        S = FLOAT_SUFFIX[node.outputs[0].type.dtype]
        nd = node.inputs[0].type.ndim
        x, r = inputs[0], outputs[0]
        out, g = (inputs[1], inputs[2]) if self._grad else (x, x)
        L = ["{", "nbg_pool_%s_ctx nbg_pc;" % S,
             "nbg_pc.mode = %d; nbg_pc.ignore_border = %d;" % (_MODE[self.mode],
                                                               int(self.ignore_border)),
             "nbg_pc.wsh = %d; nbg_pc.wsw = %d;" % self.ws,
             "nbg_pc.sth = %d; nbg_pc.stw = %d;" % self.stride,
             "nbg_pc.ph = %d; nbg_pc.pw = %d;" % self.pad,
             "nbg_pc.x = (const char *)%s; nbg_pc.out = (const char *)%s;" % (x, out),
             "nbg_pc.g = (const char *)%s; nbg_pc.r = (char *)%s;" % (g, r),
             "nbg_status = nbg_pool_%s_run(&nbg_pc, %d, %d, %s);" % (
                 S, self._grad, nd, ", ".join("%s_dims, %s_strides" % (v, v)
                                              for v in (x, out, g, r)) + ", nbg_err"),
             "if (nbg_status) goto nbg_fail;", "}"]
        return "\n".join(L)


class Pool2dC(_PoolC):
    """The C side of Pool2d (module docstring)."""

    def c_prepare_outputs(self, node, inputs):
        (x,) = inputs
        rows, cols = self._out_sizes(x.shape)
        return [np.empty(x.shape[:-2] + (rows, cols), node.outputs[0].type.numpy_dtype)]


class Pool2dGradC(_PoolC):
    """The C side of Pool2dGrad (module docstring)."""

    _grad = 1

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[0].shape, node.outputs[0].type.numpy_dtype)]
