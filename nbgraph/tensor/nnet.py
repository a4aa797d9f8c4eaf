"""Neural-network ops: softmax, log_softmax, logsumexp, activations, cross-entropies.

``softmax``, ``log_softmax`` and ``logsumexp`` are Ops of their own (one
node each, so the ``stabilize`` rewrites can find them and so they can get
a one-pass kernel); the activations are small graphs of elementwise ops,
which fusion turns into one loop.  Integer inputs are computed in the float
dtype ``exp`` would give them.

>>> import numpy as np
>>> from nbgraph.tensor.constructors import dmatrix
>>> x = dmatrix("x")
>>> softmax(x).eval({x: np.array([[0.0, np.log(3.0)]])})
array([[0.25, 0.75]])
"""

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor import math as tm
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.c_code.nnet import (
    LogSoftmaxC,
    LogSumExpC,
    PickLabelsC,
    PickLabelsGradC,
    SoftmaxC,
    SoftmaxCrossentropyC,
    SoftmaxCrossentropyGradC,
    SoftmaxGradC,
)
from nbgraph.tensor.reduction import normalize_axis
from nbgraph.tensor.type import DISCRETE_DTYPES, TensorType
from nbgraph.tensor.variable import as_tensor_variable
from nbgraph.tensor.grad_rules import index_gradient, is_discrete, zero_gradient

__all__ = [
    "Softmax", "LogSoftmax", "LogSumExp", "PickLabels", "PickLabelsGrad", "OneHot",
    "SoftmaxCrossentropy", "SoftmaxCrossentropyGrad", "SoftmaxGrad",
    "softmax", "log_softmax", "logsumexp", "relu", "elu", "gelu", "softsign", "sigmoid",
    "softplus", "binary_crossentropy", "categorical_crossentropy", "one_hot", "pick_labels",
    "softmax_crossentropy",
]

sigmoid = tm.sigmoid
softplus = tm.softplus


def _float_dtype(x, where):
    if x.dtype == "bool" or x.dtype not in ps.all_dtypes:
        raise TypeError("%s: x must be a real tensor, got %r of type %r" % (where, x, x.type))
    return ps.exp.output_dtypes(x.dtype)[0]


def _single_axis(axis, ndim, where):
    if ndim == 0:
        raise ValueError("%s needs at least one dimension, got a 0-d tensor" % where)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError("%s: axis must be an int, got %r" % (where, axis))
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError("%s: axis %d is out of range for %d dimensions" % (
            where, axis, ndim))
    return int(axis) % ndim


def _max_shift(x, axis):
    """``max(x, axis, keepdims)`` with non-finite maxima (and empty axes) replaced by 0."""
    if x.shape[axis] == 0 if isinstance(axis, int) else any(x.shape[a] == 0 for a in axis):
        shape = list(x.shape)
        for a in (axis,) if isinstance(axis, int) else axis:
            shape[a] = 1
        return np.zeros(shape, x.dtype)
    m = np.max(x, axis=axis, keepdims=True)
    return np.where(np.isfinite(m), m, 0).astype(x.dtype)


def _log_sum_exp_shifted(shifted, axis):
    """``log(sum(exp(shifted), axis, keepdims))`` for ``shifted = x - max(x)``: the max's
    term is exactly 1, so the rest goes through log1p (accurate when it is tiny)."""
    e = np.exp(shifted)
    total = np.sum(e, axis=axis, keepdims=True)
    if e.size == 0:
        return np.log(total)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    moved = np.moveaxis(e, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (-1,))
    first_max = np.argmax(np.moveaxis(shifted, axes, tuple(range(-len(axes), 0))).reshape(
        flat.shape), axis=-1)
    picked = np.take_along_axis(flat, first_max[..., None], axis=-1)
    rest = np.sum(np.where(np.arange(flat.shape[-1]) == first_max[..., None], 0, flat),
                  axis=-1, keepdims=True)
    accurate = np.where(picked == 1, np.log1p(rest), np.log(picked + rest))
    return accurate.reshape(total.shape).astype(total.dtype, copy=False)


class _RowOp(Op):
    """Shared by Softmax and LogSoftmax: one axis, output of x's shape, float dtype."""

    __props__ = ("axis",)

    def __init__(self, axis=-1):
        self.axis = axis

    def __str__(self):
        return "%s{axis=%s}" % (type(self).__name__, self.axis)

    def make_node(self, x):
        x = as_tensor_variable(x)
        axis = _single_axis(self.axis, x.ndim, type(self).__name__.lower())
        if axis != self.axis:
            return type(self)(axis).make_node(x)
        dtype = _float_dtype(x, str(self))
        return Apply(self, [x], [TensorType(dtype, x.type.shape)()])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs, output_storage):
        x = inputs[0].astype(node.outputs[0].type.dtype, copy=False)
        with np.errstate(all="ignore"):
            output_storage[0][0] = np.empty_like(x) if x.size == 0 else self._rows(x)

    def _rows(self, x):
        """The result for a non-empty float ``x`` of the output's dtype (NumPy)."""
        raise NotImplementedError


class Softmax(SoftmaxC, _RowOp):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (each slice sums to 1)."""

    def _rows(self, x):
        e = np.exp(x - np.max(x, axis=self.axis, keepdims=True))
        return e / np.sum(e, axis=self.axis, keepdims=True)

    def grad(self, inputs, output_grads):
        (x,) = inputs  # an integer x is differentiated as if real (the output is float)
        sm = self(x)
        gz = output_grads[0]
        return [sm * (gz - tm.sum(gz * sm, axis=self.axis, keepdims=True))]


class SoftmaxGrad(SoftmaxGradC, Op):
    """``sm * (gz - sum(gz * sm, axis, keepdims))``: the gradient of a softmax ``sm`` along
    ``axis`` for the output gradient ``gz`` (same shape and float dtype), one pass per
    row in C.  The ``stabilize`` stage puts it where a softmax's gradient is not part
    of a cross-entropy's."""

    __props__ = ("axis",)

    def __init__(self, axis=-1):
        self.axis = axis

    def __str__(self):
        return "SoftmaxGrad{axis=%s}" % self.axis

    def make_node(self, gz, sm):
        gz, sm = as_tensor_variable(gz), as_tensor_variable(sm)
        axis = _single_axis(self.axis, sm.ndim, "softmax_grad")
        if axis != self.axis:
            return SoftmaxGrad(axis).make_node(gz, sm)
        for name, v in (("gz", gz), ("sm", sm)):
            if v.dtype not in ("float16", "float32", "float64"):
                raise TypeError("softmax_grad: %s must be a float tensor, got %r of type %r" % (
                    name, v, v.type))
        if gz.dtype != sm.dtype or gz.ndim != sm.ndim:
            raise TypeError("softmax_grad: gz and sm must have one dtype and ndim, got %s and %s"
                            % (gz.type, sm.type))
        shape = tuple(a if a is not None else b
                      for a, b in zip(sm.type.shape, gz.type.shape, strict=True))
        return Apply(self, [gz, sm], [TensorType(sm.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        gz, sm = inputs
        if gz.shape != sm.shape:
            raise ValueError("softmax_grad: gz of shape %s and sm of shape %s must have one "
                             "shape" % (gz.shape, sm.shape))
        total = np.sum(gz * sm, axis=self.axis, keepdims=True)
        output_storage[0][0] = np.asarray(sm * (gz - total), dtype=node.outputs[0].type.dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]

    def grad(self, inputs, output_grads):
        gz, sm = inputs
        (g,) = output_grads
        s = tm.sum(gz * sm, axis=self.axis, keepdims=True)
        t = tm.sum(g * sm, axis=self.axis, keepdims=True)
        return [SoftmaxGrad(self.axis)(g, sm), g * (gz - s) - gz * t]


class LogSoftmax(LogSoftmaxC, _RowOp):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``: log(softmax(x)), never -inf
    where the softmax merely underflows."""

    def _rows(self, x):
        shifted = x - _max_shift(x, self.axis)
        return shifted - _log_sum_exp_shifted(shifted, self.axis)

    def grad(self, inputs, output_grads):
        (x,) = inputs  # an integer x is differentiated as if real (the output is float)
        gz = output_grads[0]
        return [gz - tm.exp(self(x)) * tm.sum(gz, axis=self.axis, keepdims=True)]


class LogSumExp(LogSumExpC, Op):
    """``log(sum(exp(x), axis))`` computed as ``m + log(sum(exp(x - m)))`` (m the max):
    no overflow, and -inf only where every term is 0."""

    __props__ = ("axis",)

    def __init__(self, axis):
        self.axis = tuple(axis)

    def __str__(self):
        return "LogSumExp{axis=%s}" % ",".join(map(str, self.axis))

    def make_node(self, x):
        x = as_tensor_variable(x)
        axis = normalize_axis(self.axis, x.ndim)
        if axis != self.axis:
            return LogSumExp(axis).make_node(x)
        dtype = _float_dtype(x, "logsumexp")
        shape = tuple(s for i, s in enumerate(x.type.shape) if i not in axis)
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        x = inputs[0].astype(node.outputs[0].type.dtype, copy=False)
        with np.errstate(all="ignore"):
            m = _max_shift(x, self.axis)
            out = np.squeeze(_log_sum_exp_shifted(x - m, self.axis) + m, axis=self.axis)
        output_storage[0][0] = np.asarray(out, dtype=x.dtype)

    def infer_shape(self, node, input_shapes):
        return [tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)]

    def grad(self, inputs, output_grads):
        (x,) = inputs  # an integer x is differentiated as if real (the output is float)
        out = tm._keep(self(x), self.axis, x.ndim, True)
        gz = tm._keep(output_grads[0], self.axis, x.ndim, True)
        return [gz * tm.exp(x - out)]


def softmax(x, axis=-1):
    """The softmax of ``x`` along ``axis`` (default: the last, the rows of a matrix)."""
    return Softmax(axis)(x)


def log_softmax(x, axis=-1):
    """``log(softmax(x, axis))``, computed without underflow to -inf."""
    return LogSoftmax(axis)(x)


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis, keepdims))`` without overflow (``scipy.special.logsumexp``)."""
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    return tm._keep(LogSumExp(axes)(x), axes, x.ndim, keepdims)


def relu(x, alpha=0):
    """``max(x, 0)``; with ``alpha``, the leaky version ``x if x > 0 else alpha * x``."""
    x = as_tensor_variable(x)
    if isinstance(alpha, (int, float)) and alpha == 0:
        return tm.maximum(x, 0)
    return tm.switch(tm.gt(x, 0), x, alpha * x)


def elu(x, alpha=1.0):
    """``x if x > 0 else alpha * (exp(x) - 1)``."""
    x = as_tensor_variable(x)
    return tm.switch(tm.gt(x, 0), x, alpha * tm.expm1(x))


def gelu(x, approximate="none"):
    """``x * Phi(x)`` (Phi the normal CDF, as ``0.5 * erfc(-x / sqrt(2))``, accurate for
    very negative x); ``approximate="tanh"`` gives the tanh approximation."""
    x = as_tensor_variable(x)
    if approximate == "none":
        from nbgraph.tensor.ufuncs import erfc  # (the ufuncs load on first use: ~0.5 ms)

        return 0.5 * x * erfc(-x * float(1 / np.sqrt(2.0)))
    if approximate == "tanh":
        inner = float(np.sqrt(2 / np.pi)) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + tm.tanh(inner))
    raise ValueError("gelu: approximate must be 'none' or 'tanh', got %r" % (approximate,))


def softsign(x):
    """``x / (1 + |x|)``."""
    x = as_tensor_variable(x)
    return x / (1 + tm.abs(x))


def binary_crossentropy(output, target):
    """``-(target * log(output) + (1 - target) * log(1 - output))`` elementwise.

    With ``output = sigmoid(z)`` the ``stabilize`` rewrites compute it from
    ``z`` through softplus, so it stays finite where ``output`` rounds to 0 or 1.
    """
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return -(target * tm.log(output) + (1 - target) * tm.log(1 - output))


class PickLabels(PickLabelsC, Op):
    """``x[..., labels]`` per row: for each index of ``labels`` (one dimension less than
    ``x``), the element of the last axis of ``x`` that the label names."""

    __props__ = ()

    def make_node(self, x, labels):
        x, labels = as_tensor_variable(x), as_tensor_variable(labels)
        if labels.dtype not in DISCRETE_DTYPES or labels.dtype == "bool":
            raise TypeError("pick_labels: labels must be integers, got %r of type %r" % (
                labels, labels.type))
        if x.ndim != labels.ndim + 1:
            raise ValueError("pick_labels: x (%d-d) must have one dimension more than labels "
                             "(%d-d)" % (x.ndim, labels.ndim))
        shape = [a if a is not None else b
                 for a, b in zip(x.type.shape[:-1], labels.type.shape, strict=True)]
        return Apply(self, [x, labels], [TensorType(x.dtype, tuple(shape))()])

    def perform(self, node, inputs, output_storage):
        x, labels = inputs
        _check_labels(labels, x.shape[-1])
        labels = np.broadcast_to(labels, x.shape[:-1])
        out = np.take_along_axis(x, labels[..., None].astype(np.intp), axis=-1)[..., 0]
        output_storage[0][0] = np.array(out, order="C")  # (ascontiguousarray makes 0-d 1-d)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0][:-1]]

    def grad(self, inputs, output_grads):
        x, labels = inputs
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x), index_gradient()]
        return [PickLabelsGrad()(output_grads[0], labels, x), index_gradient()]


def _check_labels(labels, n):
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= n):
        bad = labels[(labels < 0) | (labels >= n)].ravel()[0]
        raise IndexError("labels must be in [0, %d) (the size of the last axis), got %d" % (
            n, bad))


class PickLabelsGrad(PickLabelsGradC, Op):
    """Zeros shaped like ``x`` with ``gz`` put where :class:`PickLabels` picked."""

    __props__ = ()

    def make_node(self, gz, labels, x):
        gz, labels, x = [as_tensor_variable(v) for v in (gz, labels, x)]
        if gz.dtype != x.dtype:
            gz = tm.cast(gz, x.dtype)
        return Apply(self, [gz, labels, x], [x.type()])

    def perform(self, node, inputs, output_storage):
        gz, labels, x = inputs
        _check_labels(labels, x.shape[-1])
        out = np.zeros(x.shape, x.dtype)
        labels = np.broadcast_to(labels, x.shape[:-1])[..., None].astype(np.intp)
        np.put_along_axis(out, labels, np.broadcast_to(gz, x.shape[:-1])[..., None], axis=-1)
        output_storage[0][0] = out

    def infer_shape(self, node, input_shapes):
        return [input_shapes[2]]

    def grad(self, inputs, output_grads):
        gz, labels, x = inputs  # x gives only the shape and dtype
        return [PickLabels()(output_grads[0], labels), index_gradient(), zero_gradient(x)]


def pick_labels(x, labels):
    """``x[i, labels[i]]`` for every row ``i`` (any leading dimensions)."""
    return PickLabels()(x, labels)


class SoftmaxCrossentropy(SoftmaxCrossentropyC, Op):
    """``-log(softmax(x)[..., labels])`` as ``logsumexp(x) - x[..., labels]``: one pass,
    finite wherever the exact value is.  Gradient: ``softmax(x) - one_hot(labels)``."""

    __props__ = ()

    def make_node(self, x, labels):
        x, labels = as_tensor_variable(x), as_tensor_variable(labels)
        picked = PickLabels().make_node(x, labels).outputs[0]
        dtype = _float_dtype(x, "softmax_crossentropy")
        return Apply(self, [x, labels], [TensorType(dtype, picked.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, labels = inputs
        x = x.astype(node.outputs[0].type.dtype, copy=False)
        _check_labels(labels, x.shape[-1])
        with np.errstate(all="ignore"):
            m = _max_shift(x, x.ndim - 1)
            lse = _log_sum_exp_shifted(x - m, x.ndim - 1)[..., 0] + m[..., 0]
            labels = np.broadcast_to(labels, x.shape[:-1])[..., None].astype(np.intp)
            picked = np.take_along_axis(x, labels, axis=-1)[..., 0]
        output_storage[0][0] = np.asarray(lse - picked, dtype=x.dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0][:-1]]

    def grad(self, inputs, output_grads):
        x, labels = inputs
        gz = output_grads[0]
        sm = softmax(x)
        return [gz.dimshuffle(*range(gz.ndim), "x") * sm - PickLabelsGrad()(gz, labels, sm),
                index_gradient()]


class SoftmaxCrossentropyGrad(SoftmaxCrossentropyGradC, Op):
    """``gz[..., None] * (softmax(x) - one_hot(labels))``: the gradient of
    :class:`SoftmaxCrossentropy` with respect to ``x`` (``gz`` and ``labels``
    broadcast to ``x.shape[:-1]``), one pass over each row.  The ``stabilize``
    stage puts it in place of the chain that differentiates
    ``-log(softmax(x)[.., y])`` through the division by the picked probability."""

    __props__ = ()

    def make_node(self, gz, x, labels):
        gz, x, labels = [as_tensor_variable(v) for v in (gz, x, labels)]
        PickLabels().make_node(x, labels)  # the labels' checks
        dtype = _float_dtype(x, "softmax_crossentropy_grad")
        if gz.ndim != x.ndim - 1:
            raise ValueError("softmax_crossentropy_grad: gz must have one dimension less than x "
                             "(%d-d), got %d-d" % (x.ndim, gz.ndim))
        if gz.dtype != dtype:
            gz = tm.cast(gz, dtype)
        return Apply(self, [gz, x, labels], [TensorType(dtype, x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        gz, x, labels = inputs
        dtype = node.outputs[0].type.dtype
        x = x.astype(dtype, copy=False)
        _check_labels(labels, x.shape[-1])
        lead = x.shape[:-1]
        with np.errstate(all="ignore"):
            if x.size == 0:
                sm = np.empty_like(x)
            else:
                e = np.exp(x - np.max(x, axis=-1, keepdims=True))
                sm = e / np.sum(e, axis=-1, keepdims=True)
            hot = np.broadcast_to(labels, lead)[..., None] == np.arange(x.shape[-1])
            out = np.broadcast_to(gz, lead)[..., None] * (sm - hot)
        output_storage[0][0] = np.asarray(out, dtype=dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]

    def grad(self, inputs, output_grads):
        gz, x, labels = inputs
        u = output_grads[0]
        sm = softmax(x)
        v = u * gz.dimshuffle(*range(gz.ndim), "x")
        g_x = sm * (v - tm.sum(v * sm, axis=-1, keepdims=True))
        g_gz = tm.sum(u * sm, axis=-1) - PickLabels()(u, labels)
        spread = [d for d, s in enumerate(gz.type.shape) if s == 1]
        if spread:  # gz was broadcast along these
            g_gz = tm.sum(g_gz, axis=spread, keepdims=True)
        return [g_gz, g_x, None]


def softmax_crossentropy(x, labels):
    """``-log(softmax(x)[..., labels])`` from the logits ``x`` in one stable Op."""
    return SoftmaxCrossentropy()(x, labels)


def categorical_crossentropy(coding_dist, true_dist):
    """The cross-entropy of each row of ``coding_dist`` (probabilities on the last axis).

    ``true_dist`` is either integer labels (one dimension less: ``-log(p[i, y[i]])``)
    or a distribution of the same shape (``-sum(t * log(p), axis=-1)``).  With
    ``coding_dist = softmax(z)`` the ``stabilize`` rewrites compute it from ``z``.
    """
    p, t = as_tensor_variable(coding_dist), as_tensor_variable(true_dist)
    if t.ndim == p.ndim - 1 and t.dtype in DISCRETE_DTYPES and t.dtype != "bool":
        return -tm.log(pick_labels(p, t))
    if t.ndim == p.ndim:
        return -tm.sum(t * tm.log(p), axis=-1)
    raise TypeError("categorical_crossentropy: true_dist must be integer labels with one "
                    "dimension less than coding_dist (%d-d) or a distribution of the same "
                    "shape; got %r of type %r" % (p.ndim, t, t.type))


class OneHot(Op):
    """``labels`` as one-hot rows of length ``n`` (a new last axis) of ``dtype``."""

    __props__ = ("n", "dtype")

    def __init__(self, n, dtype="float64"):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError("one_hot: n must be a non-negative int, got %r" % (n,))
        self.n = int(n)
        self.dtype = np.dtype(dtype).name

    def make_node(self, labels):
        labels = as_tensor_variable(labels)
        if labels.dtype not in DISCRETE_DTYPES or labels.dtype == "bool":
            raise TypeError("one_hot: labels must be integers, got %r of type %r" % (
                labels, labels.type))
        return Apply(self, [labels], [TensorType(self.dtype, labels.type.shape + (self.n,))()])

    def perform(self, node, inputs, output_storage):
        (labels,) = inputs
        _check_labels(labels, self.n)
        output_storage[0][0] = (labels[..., None] == np.arange(self.n)).astype(self.dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import constant_shape_entry

        return [tuple(input_shapes[0]) + (constant_shape_entry(self.n),)]

    def grad(self, inputs, output_grads):
        return [index_gradient()]  # labels say where the ones go


def one_hot(labels, n, dtype="float64"):
    """One-hot rows: ``out[..., k] = (labels[...] == k)`` for ``k < n``."""
    return OneHot(n, dtype)(labels)
