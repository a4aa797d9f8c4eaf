"""Between the scalar and the tensor worlds, and reductions by any binary scalar op.

* :class:`TensorFromScalar` makes a 0-d tensor of a scalar Variable (of a
  :class:`~nbgraph.tensor.scalar_type.ScalarType`); :class:`ScalarFromTensor`
  the reverse.  ``as_tensor_variable`` uses the first on scalar Variables.
* :func:`reduce` folds any two-input ScalarOp over axes: ``reduce(add, x, 0)``
  is ``sum(x, axis=0)`` (the built-in reductions are used for add, mul,
  maximum and minimum, so they keep their C code and gradients); any other op
  (``logaddexp``, ``hypot``, ``bitwise_or``, a user's ScalarOp) runs NumPy's
  ``ufunc.reduce`` when its ``nfunc`` is a ufunc, else a left fold of
  ``nfunc`` along the axes.  An empty reduction needs the ufunc's identity.

>>> import nbgraph.tensor as nt
>>> from nbgraph.tensor import scalar as ps
>>> reduce(ps.logaddexp, nt.dmatrix("m"), axis=1).type
TensorType(float64, (None,))
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.scalar_type import ScalarType, get_scalar_type
from nbgraph.tensor.type import TensorType

__all__ = ["TensorFromScalar", "ScalarFromTensor", "tensor_from_scalar", "scalar_from_tensor",
           "ScalarReduce", "reduce"]


class TensorFromScalar(Op):
    """A 0-d tensor holding the value of a scalar Variable."""

    __props__ = ()

    def make_node(self, s):
        if not isinstance(s, Variable) or not isinstance(s.type, ScalarType):
            raise TypeError("TensorFromScalar: argument s must be a scalar Variable "
                            "(ScalarType), got %r" % (s,))
        return Apply(self, [s], [TensorType(s.type.dtype, ())()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0], dtype=node.outputs[0].type.dtype)

    def infer_shape(self, node, input_shapes):
        return [()]

    def grad(self, inputs, output_grads):
        return [scalar_from_tensor(output_grads[0])]


class ScalarFromTensor(Op):
    """The scalar value of a 0-d tensor."""

    __props__ = ()

    def make_node(self, t):
        from nbgraph.tensor.variable import as_tensor_variable

        t = as_tensor_variable(t)
        if t.ndim != 0:
            raise TypeError("ScalarFromTensor: argument t must be 0-d, got %r with %d "
                            "dimensions" % (t, t.ndim))
        return Apply(self, [t], [get_scalar_type(t.dtype)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0]).reshape(())[()]

    def grad(self, inputs, output_grads):
        return [tensor_from_scalar(output_grads[0])]


tensor_from_scalar = TensorFromScalar()
scalar_from_tensor = ScalarFromTensor()

_BUILT_IN = {"add": "sum", "mul": "prod", "maximum": "max", "minimum": "min"}


class ScalarReduce(Op):
    """Fold ``scalar_op`` (two inputs, one output) over ``axis`` of a tensor.

    The result's dtype is ``scalar_op``'s on two elements of the input's
    dtype; the op must keep that dtype when folding further.
    """

    __props__ = ("scalar_op", "axis")

    def __init__(self, scalar_op, axis):
        if not isinstance(scalar_op, ps.ScalarOp):
            raise TypeError("reduce needs a ScalarOp, got %r" % (scalar_op,))
        if scalar_op.nin not in (2, -1) or scalar_op.nout != 1:
            raise ValueError("reduce needs a scalar op of two inputs and one output, "
                             "got %s (nin=%s, nout=%s)" % (scalar_op, scalar_op.nin,
                                                          scalar_op.nout))
        self.scalar_op = scalar_op
        self.axis = tuple(axis)

    def __str__(self):
        return "Reduce{%s, axis=%s}" % (self.scalar_op, ",".join(map(str, self.axis)))

    def make_node(self, x):
        from nbgraph.tensor.variable import as_tensor_variable

        x = as_tensor_variable(x)
        dtype = self.scalar_op.output_dtypes(x.dtype, x.dtype)[0]
        if self.scalar_op.output_dtypes(dtype, x.dtype)[0] != dtype:
            raise TypeError("reduce: %s on %s gives %s, which it does not keep when folding"
                            % (self.scalar_op, x.dtype, dtype))
        for a in self.axis:
            if not 0 <= a < x.ndim:
                raise np.exceptions.AxisError("reduce: axis %d is out of range for %r with %d "
                                              "dimensions" % (a, x, x.ndim))
        shape = tuple(s for i, s in enumerate(x.type.shape) if i not in self.axis)
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        dtype = node.outputs[0].type.numpy_dtype
        raw = self.scalar_op._raw_nfunc()
        ufunc = getattr(raw, "ufunc", raw)
        with np.errstate(all="ignore"):
            if isinstance(ufunc, np.ufunc) and ufunc.nin == 2:
                result = ufunc.reduce(x, axis=self.axis, dtype=dtype) if self.axis else x
            else:
                result = self.fold_ufunc(x)
        output_storage[0][0] = np.asarray(result, dtype=dtype)

    def fold_ufunc(self, x):
        """A left fold of ``nfunc`` over the reduced axes (moved to the front, flattened)."""
        kept = [i for i in range(x.ndim) if i not in self.axis]
        moved = np.transpose(x, list(self.axis) + kept)
        rows = moved.reshape((-1,) + tuple(x.shape[i] for i in kept))
        if rows.shape[0] == 0:
            raise ValueError("reduce: zero-size reduction with %s, which has no identity"
                             % self.scalar_op)
        acc = rows[0]
        for row in rows[1:]:
            acc = self.scalar_op.nfunc(acc, row)
        return acc

    def infer_shape(self, node, input_shapes):
        return [tuple(s for i, s in enumerate(input_shapes[0]) if i not in self.axis)]


def reduce(scalar_op, x, axis=None, keepdims=False):
    """Fold the two-input ScalarOp ``scalar_op`` over ``axis`` (None: all) of ``x``."""
    from nbgraph.tensor import math
    from nbgraph.tensor.reduction import normalize_axis
    from nbgraph.tensor.variable import as_tensor_variable

    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    name = getattr(scalar_op, "name", None)
    if name in _BUILT_IN and type(scalar_op) is type(getattr(ps, name, None)):
        return getattr(math, _BUILT_IN[name])(x, axis=axes, keepdims=keepdims)
    out = ScalarReduce(scalar_op, axes)(x)
    if keepdims:
        pattern, j = [], 0
        for i in range(x.ndim):
            if i in axes:
                pattern.append("x")
            else:
                pattern.append(j)
                j += 1
        out = out.dimshuffle(*pattern)
    return out
