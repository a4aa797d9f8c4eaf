"""2-d convolution of NCHW batches (Theano's ``conv2d``) and, from
:mod:`nbgraph.tensor.pool`, 2-d pooling (``pool_2d``).

``conv2d(input, filters)``: ``input`` is ``(batch, channels, rows, cols)``,
``filters`` is ``(out_channels, channels, filter_rows, filter_cols)``; the
result is ``(batch, out_channels, out_rows, out_cols)`` with, per dimension,
``out = (size + 2 * pad - dilated) // stride + 1`` where
``dilated = (filter - 1) * dilation + 1`` and ``pad`` follows ``border_mode``:

* ``"valid"``: 0 (only windows inside the image);
* ``"full"``: ``dilated - 1`` (every window touching the image);
* ``"half"`` / ``"same"``: ``dilated // 2`` (same size for odd filters);
* an int or a pair ``(p, q)``: that many zeros on each side.

``filter_flip=True`` (Theano's default) computes a true convolution (the
filters are flipped); ``False`` computes a cross-correlation, as deep-learning
libraries call "convolution".  ``subsample`` is the stride, ``filter_dilation``
the spacing of filter taps.

``perform`` gathers the image windows into a matrix (im2col: one strided
copy per filter tap) and multiplies it with the filters through BLAS.  The
gradients are two more Ops: :class:`Conv2dGradWeights` (the output gradient
times the same matrix) and :class:`Conv2dGradInputs` (the filters times the
output gradient, scattered back one tap at a time).  The three have C
kernels for float32 and float64 (:mod:`nbgraph.tensor.c_code.conv`: the same
products over panels packed straight from the image, split across threads
by image).

>>> import numpy as np
>>> import nbgraph.tensor as nt
>>> x, w = nt.dtensor4("x"), nt.dtensor4("w")
>>> out = conv2d(x, w, border_mode="half")
>>> img, filt = np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3))
>>> out.eval({x: img, w: filt})[0, 0]
array([[4., 6., 6., 4.],
       [6., 9., 9., 6.],
       [6., 9., 9., 6.],
       [4., 6., 6., 4.]])
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.c_code.conv import Conv2dC, Conv2dGradInputsC, Conv2dGradWeightsC
from nbgraph.tensor.pool import Pool2d, Pool2dGrad, max_pool_2d, pool_2d
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable
from nbgraph.tensor.grad_rules import input_gradient

__all__ = ["Conv2d", "Conv2dGradWeights", "Conv2dGradInputs", "conv2d", "conv_output_shape",
           "Pool2d", "Pool2dGrad", "pool_2d", "max_pool_2d"]


def _pair(value, what, minimum):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value), int(value))
    try:
        a, b = value
    except (TypeError, ValueError):
        raise TypeError("conv2d: %s must be an int or a pair of ints, got %r" % (
            what, value)) from None
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise ValueError("conv2d: %s entries must be ints >= %d, got %r" % (
                what, minimum, value))
    return int(a), int(b)


def _border(border_mode):
    if isinstance(border_mode, str):
        if border_mode == "same":
            border_mode = "half"
        if border_mode not in ("valid", "full", "half"):
            raise ValueError("conv2d: border_mode must be 'valid', 'full', 'half' or a pair "
                             "of ints, got %r" % (border_mode,))
        return border_mode
    return _pair(border_mode, "border_mode", 0)


def conv_output_shape(size, filt, border, stride, dilation):
    """One output dimension of a convolution (None when ``size`` or ``filt`` is
    unknown), and the padding used."""
    if filt is None:
        return None, None
    dilated = (filt - 1) * dilation + 1
    if border == "valid":
        pad = 0
    elif border == "full":
        pad = dilated - 1
    elif border == "half":
        pad = dilated // 2
    else:
        pad = border
    if size is None:
        return None, pad
    return max((size + 2 * pad - dilated) // stride + 1, 0), pad


class _ConvBase(Op):
    __props__ = ("border_mode", "subsample", "filter_flip", "filter_dilation")

    def __init__(self, border_mode="valid", subsample=(1, 1), filter_flip=True,
                 filter_dilation=(1, 1)):
        self.border_mode = _border(border_mode)
        self.subsample = _pair(subsample, "subsample", 1)
        self.filter_flip = bool(filter_flip)
        self.filter_dilation = _pair(filter_dilation, "filter_dilation", 1)

    def _border_of(self, axis):
        return self.border_mode if isinstance(self.border_mode, str) else \
            self.border_mode[axis]

    def _pads(self, kh, kw):
        return tuple(conv_output_shape(0, k, self._border_of(axis), 1,
                                       self.filter_dilation[axis])[1]
                     for axis, k in enumerate((kh, kw)))

    def _columns(self, x, kh, kw):
        """im2col: ``(cols, rows_out, cols_out)`` where ``cols`` has shape
        ``(C * kh * kw, N * rows_out * cols_out)``: one row per (channel, tap),
        filled with one strided copy per tap."""
        (ph, pw), (sh, sw), (dh, dw) = self._pads(kh, kw), self.subsample, self.filter_dilation
        n, c, h, w = x.shape
        span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
        if h + 2 * ph < span_h or w + 2 * pw < span_w:
            raise ValueError("conv2d: the (padded) image %s is smaller than the (dilated) "
                             "filter (%d, %d)" % ((h + 2 * ph, w + 2 * pw), span_h, span_w))
        if ph or pw:
            x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        rows = (h + 2 * ph - span_h) // sh + 1
        cols = (w + 2 * pw - span_w) // sw + 1
        buf = np.empty((c, kh, kw, n, rows, cols), dtype=x.dtype)
        xt = x.transpose(1, 0, 2, 3)
        for a in range(kh):
            for b in range(kw):
                buf[:, a, b] = xt[:, :, a * dh:a * dh + sh * (rows - 1) + 1:sh,
                                  b * dw:b * dw + sw * (cols - 1) + 1:sw]
        return buf.reshape(c * kh * kw, n * rows * cols), rows, cols

    def _check(self, x, w):
        if x.ndim != 4 or w.ndim != 4:
            raise ValueError("conv2d: input and filters must be 4-d, got %d-d and %d-d" % (
                x.ndim, w.ndim))
        if x.shape[1] != w.shape[1]:
            raise ValueError("conv2d: the input has %d channels, the filters expect %d "
                             "(input shape %s, filters shape %s)" % (
                                 x.shape[1], w.shape[1], x.shape, w.shape))

    def _check_gradient(self, x, w, g):
        """The output gradient must have the convolution's output shape."""
        self._check(x, w)
        span = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], self.filter_dilation, strict=True)]
        pads = self._pads(*w.shape[2:])
        if any(s + 2 * p < k for s, p, k in zip(x.shape[2:], pads, span, strict=True)):
            raise ValueError("conv2d: the (padded) image %s is smaller than the (dilated) "
                             "filter %s" % (tuple(s + 2 * p for s, p in zip(
                                 x.shape[2:], pads, strict=True)), tuple(span)))
        want = (x.shape[0], w.shape[0]) + tuple(
            (s + 2 * p - k) // st + 1 for s, p, k, st in zip(
                x.shape[2:], pads, span, self.subsample, strict=True))
        if g.ndim != 4 or g.shape != want:
            raise ValueError("conv2d: argument gradient has shape %s, the convolution's "
                             "output has shape %s" % (g.shape, want))

    def _oriented(self, w):
        return w[:, :, ::-1, ::-1] if self.filter_flip else w


class Conv2d(Conv2dC, _ConvBase):
    """``conv2d`` as an Op (see the module docstring for the parameters)."""

    def make_node(self, x, w):
        x, w = _tensor4(x, "input"), _tensor4(w, "filters")
        c1, c2 = x.type.shape[1], w.type.shape[1]
        if c1 is not None and c2 is not None and c1 != c2:
            raise ValueError("conv2d: input %r has %d channels, filters %r expect %d" % (
                x, c1, w, c2))
        rows = self._out_size(x.type.shape[2], w.type.shape[2], 0)
        cols = self._out_size(x.type.shape[3], w.type.shape[3], 1)
        dtype = np.result_type(x.dtype, w.dtype).name
        return Apply(self, [x, w], [TensorType(dtype, (x.type.shape[0], w.type.shape[0],
                                                       rows, cols))()])

    def _out_size(self, size, filt, axis):
        return conv_output_shape(size, filt, self._border_of(axis), self.subsample[axis],
                                 self.filter_dilation[axis])[0]

    def perform(self, node, inputs, output_storage):
        x, w = inputs
        self._check(x, w)
        k, _, kh, kw = w.shape
        cols, rows, ncols = self._columns(x, kh, kw)
        wmat = np.ascontiguousarray(self._oriented(w)).reshape(k, -1)
        out = np.dot(wmat, cols).reshape(k, x.shape[0], rows, ncols).transpose(1, 0, 2, 3)
        output_storage[0][0] = np.ascontiguousarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import constant_shape_entry

        (n, _, h, wd), (k, _, kh, kw) = input_shapes
        out = node.outputs[0].type.shape
        dims = []
        for axis, (size, filt) in enumerate(((h, kh), (wd, kw))):
            if out[2 + axis] is not None:
                dims.append(constant_shape_entry(out[2 + axis]))
                continue
            stride, dil = self.subsample[axis], self.filter_dilation[axis]
            dilated = (filt - 1) * dil + 1
            border = self._border_of(axis)
            if isinstance(border, str):
                pad = {"valid": 0, "full": dilated - 1, "half": dilated // 2}[border]
            else:
                pad = border
            dims.append((size + 2 * pad - dilated) // stride + 1)
        return [(n, k) + tuple(dims)]

    def grad(self, inputs, output_grads):
        x, w = inputs
        (g,) = output_grads
        params = (self.border_mode, self.subsample, self.filter_flip, self.filter_dilation)
        gx = Conv2dGradInputs(*params)(x, w, g)
        gw = Conv2dGradWeights(*params)(x, w, g)
        return [input_gradient(gx, x), input_gradient(gw, w)]


class Conv2dGradWeights(Conv2dGradWeightsC, _ConvBase):
    """The gradient of :class:`Conv2d` with respect to the filters, from
    ``(input, filters, output_gradient)`` (the filters only give the shape)."""

    def make_node(self, x, w, g):
        x, w, g = _tensor4(x, "input"), _tensor4(w, "filters"), _tensor4(g, "gradient")
        return Apply(self, [x, w, g], [TensorType(w.dtype, w.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, w, g = inputs
        self._check_gradient(x, w, g)
        k, c, kh, kw = w.shape
        cols, _, _ = self._columns(x, kh, kw)
        gmat = np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(k, -1)
        gw = self._oriented(np.dot(gmat, cols.T).reshape(k, c, kh, kw))
        output_storage[0][0] = np.ascontiguousarray(gw, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]

    def grad(self, inputs, output_grads):
        raise NotImplementedError("Conv2dGradWeights has no gradient: conv2d in nbgraph is "
                                  "differentiable once")


class Conv2dGradInputs(Conv2dGradInputsC, _ConvBase):
    """The gradient of :class:`Conv2d` with respect to the input, from
    ``(input, filters, output_gradient)`` (the input only gives the shape)."""

    def make_node(self, x, w, g):
        x, w, g = _tensor4(x, "input"), _tensor4(w, "filters"), _tensor4(g, "gradient")
        return Apply(self, [x, w, g], [TensorType(x.dtype, x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, w, g = inputs
        self._check_gradient(x, w, g)
        k, c, kh, kw = w.shape
        (ph, pw), (sh, sw), (dh, dw) = self._pads(kh, kw), self.subsample, self.filter_dilation
        n, _, rows, cols = g.shape
        wmat = np.ascontiguousarray(self._oriented(w)).reshape(k, -1)
        gmat = np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(k, -1)
        dcols = np.dot(wmat.T, gmat).reshape(c, kh, kw, n, rows, cols)
        gpad = np.zeros((c, n, x.shape[2] + 2 * ph, x.shape[3] + 2 * pw),
                        dtype=np.result_type(g.dtype, w.dtype))
        for a in range(kh):
            for b in range(kw):
                r0, c0 = a * dh, b * dw
                gpad[:, :, r0:r0 + sh * (rows - 1) + 1:sh, c0:c0 + sw * (cols - 1) + 1:sw] += \
                    dcols[:, a, b]
        gpad = gpad.transpose(1, 0, 2, 3)
        gx = gpad[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]
        output_storage[0][0] = np.ascontiguousarray(gx, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        raise NotImplementedError("Conv2dGradInputs has no gradient: conv2d in nbgraph is "
                                  "differentiable once")


def _tensor4(value, what):
    try:
        var = as_tensor_variable(value)
    except TypeError as exc:
        raise TypeError("conv2d: argument %s: %s" % (what, exc)) from exc
    if var.ndim != 4:
        raise TypeError("conv2d: argument %s (%r) must be 4-d (batch, channels, rows, cols), "
                        "got %d dimensions" % (what, var, var.ndim))
    return var


def conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid",
           subsample=(1, 1), filter_flip=True, image_shape=None, filter_dilation=(1, 1),
           num_groups=1, unshared=False, **kwargs):
    """2-d convolution of an NCHW ``input`` with ``filters`` (see the module
    docstring).  ``input_shape``/``image_shape`` and ``filter_shape`` (Theano's
    hints; None entries allowed) are checked against the values at run time
    through :func:`~nbgraph.tensor.basic.specify_shape`."""
    from nbgraph.tensor.basic import specify_shape

    if kwargs:
        raise TypeError("conv2d got unexpected arguments %s" % sorted(kwargs))
    if num_groups != 1:
        raise NotImplementedError("conv2d(num_groups=%r): grouped convolution is not in "
                                  "nbgraph; split the channels and join the results" % (
                                      num_groups,))
    if unshared:
        raise NotImplementedError("conv2d(unshared=True) is not in nbgraph")
    input, filters = _tensor4(input, "input"), _tensor4(filters, "filters")
    shape = input_shape if input_shape is not None else image_shape
    if shape is not None:
        input = specify_shape(input, tuple(shape))
    if filter_shape is not None:
        filters = specify_shape(filters, tuple(filter_shape))
    return Conv2d(border_mode, subsample, filter_flip, filter_dilation)(input, filters)
