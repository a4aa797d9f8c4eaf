"""C kernels of the 2-d convolutions: ``Conv2d``, ``Conv2dGradWeights`` and
``Conv2dGradInputs`` (``class Conv2d(Conv2dC, _ConvBase)``), float32 and
float64, every ``border_mode``, ``subsample``, ``filter_flip`` and
``filter_dilation`` the Ops take.

Each is a matrix product over packed panels run by the register-blocked
micro-kernel of the matrix product (``csrc/dot_mm.h``); ``csrc/conv.h``
packs the panels straight from the image (the windows are never stored as
a matrix) and scatters the input gradient back from each tile:

* forward, per image: ``out[n] = F . cols(x[n])`` (F: the filters as a
  ``K x C*KH*KW`` matrix, flipped when ``filter_flip``);
* input gradient, per image: ``F^T . g[n]``, added into the windows it came
  from (the padding's share dropped);
* filter gradient: ``g[n] . cols(x[n])^T`` summed over fixed blocks of images
  (at most 8, fewer for big filters, chosen from the sizes only), the blocks'
  partial sums added in block order.

Tasks own whole images or blocks, so results never depend on the thread
count (nor on the matrix product's back-off, which this shares: after a split
whose caller waited on a late worker, the next ones run serially); they
differ from ``perform`` (NumPy's BLAS) by the order of the summation only
(fused multiply-adds where the CPU has them).  Operands of mixed dtypes (a
float32 input with float64 filters) and other dtypes run in Python.  Shapes
are checked in C with the messages of ``perform``.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, c_template
from nbgraph.tensor.c_code.dot import float_matrix_support
from nbgraph.tensor.dtypes import C_TYPES

__all__ = ["Conv2dC", "Conv2dGradWeightsC", "Conv2dGradInputsC"]

_PKG = __package__
_SUFFIX = {"float32": "f32", "float64": "f64"}
#: Multiply-adds from which a convolution is split across threads.
MIN_WORK = 1 << 18
#: The filter gradient's blocks of images (fixed: results do not depend on threads).
GW_BLOCKS = 8
#: ... fewer when their partial sums would hold more elements than this.
GW_PARTIALS = 1 << 22
_VERSION = (3,)


def _support(dtype):
    return "\n".join([
        float_matrix_support(dtype),
        "#ifndef NBG_CONV_MINWORK\n#define NBG_CONV_MINWORK %dLL\n#define NBG_CONV_GW_BLOCKS %d\n"
        "#define NBG_CONV_GW_PARTIALS %dLL\n#endif" % (MIN_WORK, GW_BLOCKS, GW_PARTIALS),
        c_template(_PKG, "csrc/conv.h", S=_SUFFIX[dtype], CT=C_TYPES[dtype])])


def _pad_expr(border, filt_dims, axis, dilation):
    """The C expression of the padding along ``axis`` (0 rows, 1 columns)."""
    span = "((%s[%d] - 1) * %d)" % (filt_dims, 2 + axis, dilation)
    if border == "valid":
        return "0"
    if border == "full":
        return span
    if border == "half":
        return "((%s + 1) / 2)" % span
    return "%d" % border


class _ConvC(CLinkerOp):
    """Shared by the three kernels: the props' C and the dtype rule."""

    _kernel = None

    def has_c_code(self, node):
        """True when every operand is float32, or every one float64."""
        dtypes = {v.type.dtype for v in node.inputs + node.outputs}
        return len(dtypes) == 1 and dtypes <= set(_SUFFIX)

    def c_code_cache_version(self):
        return _VERSION

    def c_headers(self):
        return ["stdlib.h"]

    def c_support_code(self, node=None):
        if node is None:
            return ""
        return _support(node.outputs[0].type.dtype)

    def c_code(self, node, name, inputs, outputs, sub):
        S = _SUFFIX[node.outputs[0].type.dtype]
        x, f = inputs[0], inputs[1]
        (o,) = outputs
        borders = [self.border_mode if isinstance(self.border_mode, str)
                   else self.border_mode[axis] for axis in range(2)]
        L = ["{", "nbg_conv_%s_ctx nbg_cv;" % S,
             "nbg_cv.sh = %d; nbg_cv.sw = %d;" % self.subsample,
             "nbg_cv.dh = %d; nbg_cv.dw = %d;" % self.filter_dilation,
             "nbg_cv.flip = %d;" % int(self.filter_flip),
             "nbg_cv.ph = %s;" % _pad_expr(borders[0], f + "_dims", 0, self.filter_dilation[0]),
             "nbg_cv.pw = %s;" % _pad_expr(borders[1], f + "_dims", 1, self.filter_dilation[1])]
        operands = [("x", x), ("f", f), ("o", o)]
        if len(inputs) == 3:
            operands.append(("g", inputs[2]))
        for field, cname in operands:
            L.append("nbg_cv.%s = (%schar *)%s; memcpy(nbg_cv.%ss, %s_strides, "
                     "sizeof nbg_cv.%ss);" % (field, "" if field == "o" else "const ",
                                              cname, field, cname, field))
        dims = {"forward": "%s_dims, %s_dims, %s_dims" % (x, f, o),
                "grad_inputs": "%s_dims, %s_dims, %s_dims, %s_dims" % (x, f, inputs[-1], o),
                "grad_weights": "%s_dims, %s_dims, %s_dims, %s_dims" % (x, f, inputs[-1], o)}
        L.append('nbg_status = nbg_conv_%s_%s(&nbg_cv, %s, "conv2d", nbg_err);' % (
            S, self._kernel, dims[self._kernel]))
        L += ["if (nbg_status) goto nbg_fail;", "}"]
        return "\n".join(L)


class Conv2dC(_ConvC):
    """The C side of Conv2d (module docstring)."""

    _kernel = "forward"

    def c_prepare_outputs(self, node, inputs):
        x, w = inputs
        rows = self._out_size(x.shape[2], w.shape[2], 0)
        cols = self._out_size(x.shape[3], w.shape[3], 1)
        return [np.empty((x.shape[0], w.shape[0], rows, cols), node.outputs[0].type.numpy_dtype)]


class Conv2dGradWeightsC(_ConvC):
    """The C side of Conv2dGradWeights: the filter gradient (module docstring)."""

    _kernel = "grad_weights"

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[1].shape, node.outputs[0].type.numpy_dtype)]


class Conv2dGradInputsC(_ConvC):
    """The C side of Conv2dGradInputs: the input gradient (module docstring)."""

    _kernel = "grad_inputs"

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[0].shape, node.outputs[0].type.numpy_dtype)]
