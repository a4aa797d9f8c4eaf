"""C kernels of the neural-net Ops: Softmax, LogSoftmax, LogSumExp (one axis),
SoftmaxCrossentropy(Grad), PickLabels and PickLabelsGrad (``class Softmax(SoftmaxC,
_RowOp)``), and of the
indexed reductions argmax/argmin/max_and_argmax along one axis
(``csrc/argreduce.h``), which walk rows the same way.

The fixed C is in ``csrc/rows.h`` (walking the rows of a tensor along one
axis, the label checks and the label picks, any dtype) and ``csrc/softmax.h``
(the row kernels of one float type: one read of the row for its maximum, one
loop of exp vectorised (``csrc/fastexp.h``), NumPy's pairwise sum, one scaling
loop).  The kernels compute what ``perform`` computes, in the same order,
up to the rounding of ``exp``/``log`` (libm's against NumPy's loops: a few
ulps).  Rows are split across the thread pool when a node has many
elements; each row is computed by one thread, so results never depend on
the thread count.  Labels are checked in C (IndexError naming the first bad
one, like ``perform``); inputs whose float dtype differs from the output's
(integer softmax) run in Python.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, OutputRule, c_source, c_template
from nbgraph.tensor.c_code.float_kernels import FLOAT_SUFFIX, FloatKernelC
from nbgraph.tensor.c_code.parallel import min_parallel
from nbgraph.tensor.dtypes import C_TYPES as _C_TYPES

__all__ = ["SoftmaxC", "LogSoftmaxC", "LogSumExpC", "SoftmaxGradC", "SoftmaxCrossentropyC",
           "SoftmaxCrossentropyGradC",
           "PickLabelsC", "PickLabelsGradC", "ArgReduceC", "MaxAndArgmaxC"]

_PKG = __package__
_SUFFIX = FLOAT_SUFFIX
#: Cost of one element of a softmax row, in adds (an exp, a division, max and sum).
ROW_ELEMENT_COST = 8
_VERSION = (7,)


def _float_support(dtype):
    s = "f" if dtype == "float32" else ""
    return c_source(_PKG, "csrc/fastexp.h") + "\n" + c_template(
        _PKG, "csrc/softmax.h", T=_C_TYPES[dtype], S=_SUFFIX[dtype],
        IT="int32_t" if dtype == "float32" else "int64_t", LOG="log" + s, LOG1P="log1p" + s)


def _label_kind(dtype):
    d = np.dtype(dtype)
    return -d.itemsize if d.kind == "u" else d.itemsize


def _what(op):
    return str(op).replace('"', "'").replace("\\", "/").replace("%", "%%")


def _add(op_name, var, cname, axis, name, what):
    """C statement adding operand ``cname`` (Variable ``var``) to the rows ``nbg_r``."""
    shape = "%s_dims, %s_strides" % (cname, cname) if var.type.ndim else "NULL, NULL"
    return ("if (NBG_UNLIKELY(nbg_rows_add(&nbg_r, %s, %d, %s, %d, \"%s\", \"%s\", "
            "nbg_err))) goto nbg_fail;" % (cname, var.type.ndim, shape, axis, what, name))


def _rows_head(x, xname, axis):
    return ["nbg_rows nbg_r;",
            "nbg_rows_init(&nbg_r, %d, %s_dims, %d, nbg_err);" % (x.type.ndim, xname, axis)]


def _run_rows(task, cost_elements):
    """C statements running ``task`` over the rows (split across the pool when big)."""
    return ["if (nbg_r.rows > 0 && nbg_r.n > 0) {",
            "nbg_parallel(%s, &nbg_r, nbg_r.rows, 1, nbg_rows_min(nbg_r.n, %d));" % (
                task, cost_elements),
            "if (nbg_r.fails.failed) { nbg_status = nbg_r.fails.status; goto nbg_fail; }",
            "}"]


class _FloatRowsC(FloatKernelC):
    """Shared by the float kernels: C for float32/float64 inputs of the output's dtype."""

    c_version = _VERSION

    def float_operands(self, node):
        """The rows' input and the output."""
        return [node.inputs[0], node.outputs[0]]

    def c_support_code(self, node=None):
        if node is None:
            return c_source(_PKG, "csrc/rows.h")
        return c_source(_PKG, "csrc/rows.h") + "\n" + _float_support(node.outputs[0].type.dtype)


class _RowOpC(_FloatRowsC):
    """Softmax and LogSoftmax: rows along ``self.axis``, output of the input's shape."""

    _task = None

    def c_output_rule(self, node):
        """A fresh output of the input's shape."""
        return OutputRule.broadcast()

    def c_code(self, node, name, inputs, outputs, sub):
        (x,) = node.inputs
        what = _what(self)
        S = _SUFFIX[node.outputs[0].type.dtype]
        L = ["{"] + _rows_head(x, inputs[0], self.axis)
        L.append(_add(self, x, inputs[0], self.axis, "x", what))
        L.append(_add(self, node.outputs[0], outputs[0], self.axis, "the output", what))
        L += _run_rows("nbg_%s_task_%s" % (self._task, S), min_parallel(ROW_ELEMENT_COST))
        L.append("}")
        return "\n".join(L)


class SoftmaxC(_RowOpC):
    """The C side of Softmax: ``exp(x - max) / sum(exp(x - max))`` per row."""

    _task = "softmax"


class LogSoftmaxC(_RowOpC):
    """The C side of LogSoftmax: ``x - max - log(sum(exp(x - max)))`` per row."""

    _task = "log_softmax"


class LogSumExpC(_FloatRowsC):
    """The C side of LogSumExp over one axis (several axes: Python): per row
    ``m + log(sum(exp(x - m)))`` as the cross-entropy computes it (m the maximum, 0 where
    it is not finite; the first maximal term out of the sum, log1p of the rest); an empty
    axis gives -inf."""

    def has_c_code(self, node):
        return len(self.axis) == 1 and super().has_c_code(node)

    def c_output_rule(self, node):
        """The input's shape less the axis."""
        return OutputRule.drop_axes(self.axis)

    def c_code(self, node, name, inputs, outputs, sub):
        (x,) = node.inputs
        (axis,) = self.axis
        what = _what(self)
        S = _SUFFIX[node.outputs[0].type.dtype]
        L = ["{"] + _rows_head(x, inputs[0], axis)
        L.append(_add(self, x, inputs[0], axis, "x", what))
        L.append(_add(self, node.outputs[0], outputs[0], -1, "the output", what))
        L.append("if (nbg_r.n == 0) nbg_logsumexp_empty_%s(&nbg_r);" % S)
        L += _run_rows("nbg_logsumexp_task_%s" % S, min_parallel(ROW_ELEMENT_COST))
        L.append("}")
        return "\n".join(L)


class SoftmaxGradC(_FloatRowsC):
    """The C side of SoftmaxGrad: per row, ``sm * (gz - s)`` with ``s`` the pairwise sum of
    ``gz * sm`` (NumPy's order); gz and sm of one shape (a ValueError otherwise)."""

    def float_operands(self, node):
        """gz, sm and the output."""
        return list(node.inputs) + list(node.outputs)

    def c_output_rule(self, node):
        """A fresh output of the inputs' shape."""
        return OutputRule.broadcast()

    def c_code(self, node, name, inputs, outputs, sub):
        gz, sm = node.inputs
        what = _what(self)
        S = _SUFFIX[node.outputs[0].type.dtype]
        L = ["{", "if (!nbg_same_dims(%d, %s_dims, %s_dims)) { char nbg_b1[200], nbg_b2[200]; "
             "nbg_errorf(nbg_err, \"%s: gz of shape %%s and sm of shape %%s must have one "
             "shape\", nbg_shape_text(nbg_b1, 200, %d, %s_dims), nbg_shape_text(nbg_b2, 200, "
             "%d, %s_dims)); nbg_status = NBG_VALUE_ERROR; goto nbg_fail; }" % (
                 sm.type.ndim, inputs[0], inputs[1], what, gz.type.ndim, inputs[0],
                 sm.type.ndim, inputs[1])]
        L += _rows_head(sm, inputs[1], self.axis)
        L.append(_add(self, gz, inputs[0], self.axis, "gz", what))
        L.append(_add(self, sm, inputs[1], self.axis, "sm", what))
        L.append(_add(self, node.outputs[0], outputs[0], self.axis, "the output", what))
        L += _run_rows("nbg_softmax_grad_task_%s" % S, min_parallel(4))
        L.append("}")
        return "\n".join(L)


#: An operand's axis along the row in ``_label_rows_code``: its last one.
LAST = "last"


def _label_rows_code(op, node, inputs, outputs, rows_of, operands, run):
    """The C block of a kernel over the rows of input ``rows_of`` (its last axis) with one
    label per row.  ``operands``: ``(where, k, along, name)`` in the order the row
    kernel expects, ``where`` "in" or "out" (``k`` the index there), ``along`` LAST
    or -1 (one value per row); the one named "labels" must be operand 1.  The labels
    are checked (an IndexError naming the first bad one) before ``run`` (C lines)."""
    x = node.inputs[rows_of]
    what = _what(op)
    L = ["{"] + _rows_head(x, inputs[rows_of], x.type.ndim - 1)
    for where, k, along, name in operands:
        var, cname = (node.inputs[k], inputs[k]) if where == "in" else \
            (node.outputs[k], outputs[k])
        if name == "labels":
            L.append("nbg_r.label_kind = %d;" % _label_kind(var.type.dtype))
        axis = var.type.ndim - 1 if along == LAST else along
        L.append(_add(op, var, cname, axis, name, what))
    L.append("nbg_status = nbg_rows_check_labels(&nbg_r, 1, nbg_r.n, nbg_err);")
    L.append("if (nbg_status) goto nbg_fail;")
    L += run
    L.append("}")
    return "\n".join(L)


class _ValuePerRow:
    """Kernels with one output value per row of input 0 (its shape less the last axis)."""

    def c_prepare_outputs(self, node, inputs):
        """An empty output of input 0's shape less its last axis."""
        return [np.empty(inputs[0].shape[:-1], node.outputs[0].type.numpy_dtype)]


class SoftmaxCrossentropyC(_ValuePerRow, _FloatRowsC):
    """The C side of SoftmaxCrossentropy: ``logsumexp(x) - x[label]`` per row."""

    def has_c_code(self, node):
        return super().has_c_code(node) and node.inputs[1].type.dtype in _C_TYPES

    def c_code(self, node, name, inputs, outputs, sub):
        task = "nbg_xent_task_%s" % _SUFFIX[node.outputs[0].type.dtype]
        operands = [("in", 0, LAST, "x"), ("in", 1, -1, "labels"), ("out", 0, -1, "the output")]
        return _label_rows_code(self, node, inputs, outputs, 0, operands,
                                _run_rows(task, min_parallel(ROW_ELEMENT_COST)))


class SoftmaxCrossentropyGradC(_FloatRowsC):
    """The C side of SoftmaxCrossentropyGrad: ``gz * (softmax(x) - one_hot(label))`` per row."""

    def float_operands(self, node):
        """gz, x and the output (the labels: any integer dtype)."""
        gz, x, _ = node.inputs
        return [gz, x, node.outputs[0]]

    def has_c_code(self, node):
        return super().has_c_code(node) and node.inputs[2].type.dtype in _C_TYPES

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[1].shape, node.outputs[0].type.numpy_dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        task = "nbg_xent_grad_task_%s" % _SUFFIX[node.outputs[0].type.dtype]
        operands = [("in", 1, LAST, "x"), ("in", 2, -1, "labels"),
                    ("out", 0, LAST, "the output"), ("in", 0, -1, "gz")]
        return _label_rows_code(self, node, inputs, outputs, 1, operands,
                                _run_rows(task, min_parallel(ROW_ELEMENT_COST)))


class _PickC(CLinkerOp):
    """Shared by the label picks: any dtype (elements are copied byte for byte)."""

    def has_c_code(self, node):
        return all(v.type.dtype in _C_TYPES for v in node.inputs + node.outputs) and \
            node.outputs[0].type.ndim <= 32

    def c_code_cache_version(self):
        return _VERSION

    def c_support_code(self, node=None):
        return c_source(_PKG, "csrc/rows.h")


class PickLabelsC(_ValuePerRow, _PickC):
    """The C side of PickLabels: ``x[..., labels]`` per row."""

    def c_code(self, node, name, inputs, outputs, sub):
        item = "sizeof(%s)" % _C_TYPES[node.inputs[0].type.dtype]
        operands = [("in", 0, LAST, "x"), ("in", 1, -1, "labels"), ("out", 0, -1, "the output")]
        return _label_rows_code(self, node, inputs, outputs, 0, operands,
                                ["nbg_pick_labels(&nbg_r, %s);" % item])


class PickLabelsGradC(_PickC):
    """The C side of PickLabelsGrad: zeros of x's shape with ``gz`` at the labels."""

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[2].shape, node.outputs[0].type.numpy_dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        out = node.outputs[0]
        ctype = _C_TYPES[out.type.dtype]
        run = ["if (!nbg_contiguous(%d, %s_dims, %s_strides, sizeof(%s))) { nbg_errorf("
               "nbg_err, \"%s: the output must be C-contiguous\"); goto nbg_fail; }" % (
                   out.type.ndim, outputs[0], outputs[0], ctype, _what(self)),
               "nbg_pick_labels_grad(&nbg_r, (char *)%s, sizeof(%s));" % (outputs[0], ctype)]
        operands = [("in", 0, -1, "the gradient"), ("in", 1, -1, "labels"),
                    ("out", 0, LAST, "the output")]
        return _label_rows_code(self, node, inputs, outputs, 2, operands, run)


# -- argmax / argmin / max_and_argmax along one axis ------------------------------------


def _argreduce_support(dtype, kind):
    float_kind = np.dtype(dtype).kind == "f"
    return c_source(_PKG, "csrc/rows.h") + "\n" + c_template(
        _PKG, "csrc/argreduce.h", T=_C_TYPES[dtype], S=dtype, K=kind,
        CMP=">" if kind == "argmax" else "<",
        NAN="NBG_ISNAN_F" if float_kind else "NBG_ISNAN_NONE")


class ArgReduceC(CLinkerOp):
    """The C side of ArgReduce over one axis (several axes: Python): one pass per row,
    ties and NaN as NumPy (the first wins); an empty axis fails like NumPy."""

    def has_c_code(self, node):
        x = node.inputs[0]
        return len(self.axis) == 1 and x.type.dtype in _C_TYPES and x.type.ndim <= 32

    def c_code_cache_version(self):
        return _VERSION

    def c_output_rule(self, node):
        """The input's shape less the axis."""
        return OutputRule.drop_axes(self.axis)

    def c_support_code(self, node=None):
        if node is None:
            return c_source(_PKG, "csrc/rows.h")
        return _argreduce_support(node.inputs[0].type.dtype, self._c_kind())

    def _c_kind(self):
        return getattr(self, "kind", "argmax")

    def c_code(self, node, name, inputs, outputs, sub):
        x = node.inputs[0]
        (axis,) = self.axis
        what = _what(self)
        L = ["{"] + _rows_head(x, inputs[0], axis)
        L.append(_add(self, x, inputs[0], axis, "x", what))
        for k, out in enumerate(node.outputs[::-1]):  # indices first
            L.append(_add(self, out, outputs[len(outputs) - 1 - k], -1, "the output", what))
        L.append("if (nbg_r.n == 0) { char nbg_b1[200]; nbg_errorf(nbg_err, \"%s of an array "
                 "of shape %%s: attempt to get %s of an empty sequence\", nbg_shape_text("
                 "nbg_b1, 200, %d, %s_dims)); goto nbg_fail; }" % (
                     what, self._c_kind(), x.type.ndim, inputs[0]))
        L.append("nbg_%s_rows_%s(&nbg_r, %d);" % (self._c_kind(), x.type.dtype,
                                                 int(len(node.outputs) == 2)))
        L.append("}")
        return "\n".join(L)


class MaxAndArgmaxC(ArgReduceC):
    """The C side of MaxAndArgmax over one axis: the maximum is the value at the index."""

    def c_output_rule(self, node):
        """Both outputs: the input's shape less the axis (made in Python)."""
        return OutputRule.CUSTOM

    def c_prepare_outputs(self, node, inputs):
        x = inputs[0]
        shape = tuple(s for i, s in enumerate(x.shape) if i not in self.axis)
        return [np.empty(shape, x.dtype), np.empty(shape, np.int64)]
