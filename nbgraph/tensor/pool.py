"""2-d pooling over the last two dimensions (Theano's ``pool_2d`` and
``max_pool_2d``).

``pool_2d(input, ws, ignore_border, stride, pad, mode)``: windows of ``ws``
rows and columns, ``stride`` apart (default: ``ws``), over the input padded
with ``pad`` on each side.  Output size per dimension:

* ``ignore_border=True``: ``(size + 2 * pad - ws) // stride + 1`` (only whole
  windows);
* ``ignore_border=False`` (no padding allowed): also the last, partial
  window: ``(size - 1) // stride + 1`` when ``stride >= ws``, else
  ``max(0, (size - 1 - ws + stride) // stride) + 1``.

Modes: ``"max"`` and ``"sum"`` over the window's image elements (padding is
never the maximum); ``"average_exc_pad"`` divides the sum by the number of
image elements in the window; ``"average_inc_pad"`` by the number of elements
of the padded image in it (padding counts, the area past a partial window's
edge does not).  The gradient of the maximum goes to every element equal to
it.  Both Ops have C kernels for float32 and float64
(:mod:`nbgraph.tensor.c_code.pool`, the same values to the bit).

>>> import numpy as np
>>> import nbgraph.tensor as nt
>>> x = nt.dtensor4("x")
>>> img = np.arange(16.0).reshape(1, 1, 4, 4)
>>> pool_2d(x, (2, 2), ignore_border=True).eval({x: img})[0, 0]
array([[ 5.,  7.],
       [13., 15.]])
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.gradient_types import grad_not_implemented
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.c_code.pool import Pool2dC, Pool2dGradC
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable
from nbgraph.tensor.grad_rules import is_discrete, zero_gradient

__all__ = ["Pool2d", "Pool2dGrad", "pool_2d", "max_pool_2d", "pool_output_size"]

MODES = ("max", "sum", "average_inc_pad", "average_exc_pad")


def pool_output_size(size, ws, stride, pad, ignore_border):
    """One output dimension of a pooling (None when ``size`` is unknown)."""
    if size is None:
        return None
    if ignore_border:
        return max((size + 2 * pad - ws) // stride + 1, 0)
    if size == 0:
        return 0
    if stride >= ws:
        return (size - 1) // stride + 1
    return max(0, (size - 1 - ws + stride) // stride) + 1


def _pair(value, what, minimum):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value), int(value))
    try:
        a, b = value
    except (TypeError, ValueError):
        raise TypeError("pool_2d: %s must be a pair of ints, got %r" % (what, value)) from None
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise ValueError("pool_2d: %s entries must be ints >= %d, got %r" % (
                what, minimum, value))
    return int(a), int(b)


class _PoolBase(Op):
    __props__ = ("ws", "ignore_border", "stride", "pad", "mode")

    def __init__(self, ws, ignore_border=False, stride=None, pad=(0, 0), mode="max"):
        self.ws = _pair(ws, "ws", 1)
        self.stride = self.ws if stride is None else _pair(stride, "stride", 1)
        self.pad = _pair(pad, "pad", 0)
        self.ignore_border = bool(ignore_border)
        if mode == "average":
            mode = "average_inc_pad"
        if mode not in MODES:
            raise ValueError("pool_2d: mode must be one of %s, got %r" % (
                ", ".join(MODES), mode))
        self.mode = mode
        if self.pad != (0, 0) and not self.ignore_border:
            raise ValueError("pool_2d: padding %r needs ignore_border=True" % (self.pad,))
        if self.pad[0] >= self.ws[0] or self.pad[1] >= self.ws[1]:
            raise ValueError("pool_2d: pad %r must be smaller than ws %r" % (self.pad, self.ws))

    def _out_sizes(self, shape):
        """The output's last two sizes for an input of ``shape``."""
        return tuple(pool_output_size(shape[-2 + axis], self.ws[axis], self.stride[axis],
                                      self.pad[axis], self.ignore_border) for axis in range(2))

    def _geometry(self, shape):
        """Output sizes and, per dimension, each window's [start, end) in padded
        coordinates clipped for counting, plus the padded+extended size."""
        out, spans = [], []
        for axis in range(2):
            size, ws, st, pad = shape[-2 + axis], self.ws[axis], self.stride[axis], \
                self.pad[axis]
            n = pool_output_size(size, ws, st, pad, self.ignore_border)
            starts = np.arange(n) * st
            ends = starts + ws
            inc = np.minimum(ends, size + 2 * pad) - starts
            exc = np.minimum(ends, size + pad) - np.maximum(starts, pad)
            extended = max(size + 2 * pad, (n - 1) * st + ws if n else ws)
            out.append(n)
            spans.append((inc, np.maximum(exc, 0), extended))
        return out, spans

    def _padded(self, x, spans, fill):
        (ph, pw), (_, _, eh), (_, _, ew) = self.pad, spans[0], spans[1]
        shape = x.shape[:-2] + (eh, ew)
        buf = np.full(shape, fill, dtype=x.dtype)
        buf[..., ph:ph + x.shape[-2], pw:pw + x.shape[-1]] = x
        return buf

    def _fill(self, dtype):
        if self.mode != "max":
            return 0
        if dtype.kind == "f":
            return -np.inf
        if dtype.kind == "b":
            return False
        return np.iinfo(dtype).min

    def _counts(self, spans):
        inc_h, exc_h, _ = spans[0]
        inc_w, exc_w, _ = spans[1]
        if self.mode == "average_inc_pad":
            return np.outer(inc_h, inc_w)
        return np.outer(exc_h, exc_w)

    def _taps(self, buf, rows, cols):
        """For each position (a, b) inside a window: the buffer's elements at that
        position of every window, as a strided view of shape (..., rows, cols)."""
        (sh, sw) = self.stride
        for a in range(self.ws[0]):
            for b in range(self.ws[1]):
                yield (slice(a, a + sh * (rows - 1) + 1, sh) if rows else slice(0, 0),
                       slice(b, b + sw * (cols - 1) + 1, sw) if cols else slice(0, 0))

    def _check(self, x):
        if x.ndim < 2:
            raise ValueError("pool_2d: input needs at least 2 dimensions, got %d" % x.ndim)


class Pool2d(Pool2dC, _PoolBase):
    """``pool_2d`` as an Op (see the module docstring)."""

    def make_node(self, x):
        x = _argument(x)
        if self.mode.startswith("average") and x.dtype not in ("float32", "float64"):
            raise TypeError("pool_2d(mode=%r): input %r must be float, got %s" % (
                self.mode, x, x.dtype))
        sizes = [pool_output_size(s, w, st, p, self.ignore_border) for s, w, st, p in zip(
            x.type.shape[-2:], self.ws, self.stride, self.pad, strict=True)]
        return Apply(self, [x], [TensorType(x.dtype, x.type.shape[:-2] + tuple(sizes))()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        self._check(x)
        (rows, cols), spans = self._geometry(x.shape)
        buf = self._padded(x, spans, self._fill(x.dtype))
        reduce = np.maximum if self.mode == "max" else np.add
        out = None
        for rsl, csl in self._taps(buf, rows, cols):
            part = buf[..., rsl, csl]
            out = part.copy() if out is None else reduce(out, part, out=out)
        if self.mode.startswith("average"):
            out = out / self._counts(spans).astype(x.dtype)
        output_storage[0][0] = np.ascontiguousarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.basic import constant_shape_entry
        from nbgraph.tensor.math import maximum

        (shape,) = input_shapes
        static = node.outputs[0].type.shape
        dims = []
        for axis in range(2):
            if static[-2 + axis] is not None:
                dims.append(constant_shape_entry(static[-2 + axis]))
                continue
            size, ws, st, pad = shape[-2 + axis], self.ws[axis], self.stride[axis], \
                self.pad[axis]
            if self.ignore_border:
                dims.append(maximum((size + 2 * pad - ws) // st + 1, 0))
            elif st >= ws:
                dims.append(maximum((size - 1) // st + 1, 0))
            else:
                dims.append(maximum(0, (size - 1 - ws + st) // st) + 1)
        return [tuple(shape[:-2]) + tuple(dims)]

    def grad(self, inputs, output_grads):
        (x,) = inputs
        if is_discrete(x):  # integer outputs
            return [zero_gradient(x)]
        out = self(x)
        params = (self.ws, self.ignore_border, self.stride, self.pad, self.mode)
        return [Pool2dGrad(*params)(x, out, output_grads[0])]


class Pool2dGrad(Pool2dGradC, _PoolBase):
    """The gradient of :class:`Pool2d` from ``(input, output, output_gradient)``."""

    def make_node(self, x, out, g):
        x, out, g = _argument(x), _argument(out), _argument(g)
        return Apply(self, [x, out, g], [TensorType(x.dtype, x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, out, g = inputs
        self._check(x)
        want = x.shape[:-2] + self._out_sizes(x.shape)
        for what, value in (("output", out), ("gradient", g)):
            if value.shape != want:
                raise ValueError("pool_2d: argument %s has shape %s, the pooling's output has "
                                 "shape %s" % (what, value.shape, want))
        (rows, cols), spans = self._geometry(x.shape)
        (ph, pw) = self.pad
        buf = self._padded(x, spans, self._fill(x.dtype)) if self.mode == "max" else None
        gbuf = np.zeros(x.shape[:-2] + (spans[0][2], spans[1][2]), dtype=g.dtype)
        if self.mode.startswith("average"):
            g = g / self._counts(spans).astype(g.dtype)
        for rsl, csl in self._taps(gbuf, rows, cols):
            if self.mode == "max":
                gbuf[..., rsl, csl] += np.where(buf[..., rsl, csl] == out, g, 0)
            else:
                gbuf[..., rsl, csl] += g
        gx = gbuf[..., ph:ph + x.shape[-2], pw:pw + x.shape[-1]]
        output_storage[0][0] = np.ascontiguousarray(gx, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def grad(self, inputs, output_grads):
        return [grad_not_implemented(self, i, x, "pool_2d in nbgraph is differentiable once")
                for i, x in enumerate(inputs)]


def _argument(value):
    try:
        var = as_tensor_variable(value)
    except TypeError as exc:
        raise TypeError("pool_2d: argument input: %s" % (exc,)) from exc
    if var.ndim < 2:
        raise TypeError("pool_2d: argument input (%r) needs at least 2 dimensions, got %d" % (
            var, var.ndim))
    return var


def pool_2d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0), mode="max",
            ds=None, st=None, padding=None):
    """Pool the last two dimensions of ``input`` (see the module docstring).
    ``ds``, ``st`` and ``padding`` are Theano's older names of ``ws``,
    ``stride`` and ``pad``; ``ignore_border=None`` means False, as in Theano."""
    if ws is None:
        ws = ds
    elif ds is not None:
        raise TypeError("pool_2d: give ws or its old name ds, not both")
    if ws is None:
        raise TypeError("pool_2d: the window size ws is required, e.g. ws=(2, 2)")
    if st is not None:
        if stride is not None:
            raise TypeError("pool_2d: give stride or its old name st, not both")
        stride = st
    if padding is not None:
        pad = padding
    return Pool2d(ws, bool(ignore_border), stride, pad, mode)(input)


def max_pool_2d(input, ds, ignore_border=None, st=None, padding=(0, 0), mode="max"):
    """Theano's ``downsample.max_pool_2d``: :func:`pool_2d` with the old names."""
    return pool_2d(input, ws=ds, ignore_border=ignore_border, stride=st, pad=padding,
                   mode=mode)
