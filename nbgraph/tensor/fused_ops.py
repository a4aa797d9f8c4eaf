"""The ops elementwise fusion produces, and how their scalar graphs are built.

:mod:`nbgraph.tensor.fusion` (the rewriters) replaces groups of Elemwise nodes
by ``Elemwise(Composite)`` nodes and reductions of them by
:class:`FusedReduce` nodes.  This module holds what those nodes are made of:

* :class:`FusedReduce` -- ``Reduce(kind, axis)`` of ``Elemwise(scalar_op)``
  as one op, with the structure a C implementation reads;
* :func:`fused_elemwise_structure` -- the parts of a fused
  ``Elemwise(Composite)`` node a code generator needs;
* :func:`build_composite` -- the Composite computing chosen outputs of a
  group of Elemwise nodes, with the dtypes of the original nodes.

>>> import nbgraph.tensor as nt
>>> from nbgraph.tensor import scalar as ps
>>> a, b = ps.float64("a"), ps.float64("b")
>>> op = FusedReduce("sum", (0,), ps.Composite([a, b], [(a - b) ** 2]))
>>> x, y = nt.dvector("x"), nt.dvector("y")
>>> str(op), op(x, y).type
('Sum{axis=0}(Composite{((x0 - x1) ** 2.0)})', TensorType(float64, ()))
"""

import numpy as np

from nbgraph.core.graph import Apply, Constant, io_toposort
from nbgraph.core.op import Op
from nbgraph.tensor.c_code.reduction import FusedReduceC
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.reduction import Reduce, normalize_axis
from nbgraph.tensor.scalar_composite import Composite
from nbgraph.tensor.scalar_type import ScalarConstant
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.grad_rules import zero_gradient

__all__ = ["FusedReduce", "fused_elemwise_structure", "build_composite", "small_constant"]

_KINDS = ("sum", "prod", "max", "min")


class FusedReduce(FusedReduceC, Op):
    """``Reduce(kind, axis)`` applied to ``Elemwise(scalar_op)(*inputs)``, as one op.

    Structure (what a C implementation reads):

    * ``kind``: ``"sum"``, ``"prod"``, ``"max"`` or ``"min"``;
    * ``axis``: sorted tuple of distinct non-negative dimensions reduced;
    * ``scalar_op``: a single-output :class:`~nbgraph.tensor.scalar.Composite`
      (any single-output ScalarOp is accepted) applied elementwise, with NumPy
      broadcasting, to the node's inputs;
    * node inputs: tensors that all have the same ndim (padding was done by
      ``make_node``, as Elemwise does); ``scalar_op.inputs[i].type.dtype`` is
      ``node.inputs[i].dtype``;
    * :meth:`elemwise_dtype`: the dtype of the Composite's value (before
      reduction); the output dtype ``node.outputs[0].dtype`` is the
      accumulator dtype, chosen like :class:`Reduce` (NumPy's: int8 sums
      accumulate in int64, float32 stays float32).  Each element value is
      converted to the accumulator dtype, then summed/multiplied/compared;
      max/min propagate NaN (like ``np.max``) and refuse empty reductions;
      sum/prod of nothing are 0/1.

    ``str`` reads like ``Sum{axis=0}(Composite{((x0 - x1) ** 2)})``.
    """

    __props__ = ("kind", "axis", "scalar_op")

    def __init__(self, kind, axis, scalar_op):
        if kind not in _KINDS:
            raise ValueError("FusedReduce kind must be one of %s, got %r" % (_KINDS, kind))
        if not isinstance(scalar_op, ps.ScalarOp):
            raise TypeError("FusedReduce needs a ScalarOp, got %r" % (scalar_op,))
        if getattr(scalar_op, "nout", 1) != 1:
            raise ValueError("FusedReduce needs a single-output scalar op, %s has %d outputs" % (
                scalar_op, scalar_op.nout))
        self.kind = kind
        self.axis = tuple(int(a) for a in axis)
        self.scalar_op = scalar_op

    def __str__(self):
        return "%s{axis=%s}(%s)" % (self.kind.capitalize(), ",".join(map(str, self.axis)),
                                    self.scalar_op)

    def elemwise_node(self, inputs):
        """The Apply of ``Elemwise(scalar_op)`` on ``inputs`` (not part of any graph)."""
        return Elemwise(self.scalar_op).make_node(*inputs)

    def elemwise_dtype(self, node=None):
        """The dtype of the elementwise value, before it is reduced."""
        if isinstance(self.scalar_op, Composite):
            return self.scalar_op.outputs[0].type.dtype
        return self.elemwise_node(node.inputs).outputs[0].dtype

    def make_node(self, *inputs):
        elem = self.elemwise_node(inputs)
        value = elem.outputs[0]
        axis = normalize_axis(self.axis, value.ndim)
        if axis != self.axis:
            return FusedReduce(self.kind, axis, self.scalar_op).make_node(*elem.inputs)
        reduced = Reduce(self.kind, axis).make_node(value).outputs[0]
        return Apply(self, list(elem.inputs), [reduced.type()])

    def perform(self, node, inputs, output_storage):
        dtype = node.outputs[0].type.numpy_dtype
        inner = np.dtype(self.elemwise_dtype(node))
        with np.errstate(all="ignore"):
            nfunc = getattr(self.scalar_op, "nfunc", None)
            if nfunc is not None:
                value = nfunc(*inputs)
            else:
                value = np.vectorize(self.scalar_op.impl, otypes=[inner])(*inputs)
        value = np.asarray(value)
        if value.dtype != inner:
            value = value.astype(inner)
        shape = np.broadcast_shapes(*[np.shape(i) for i in inputs])
        if value.shape != shape:
            value = np.broadcast_to(value, shape)
        if self.kind == "sum":
            out = np.sum(value, axis=self.axis, dtype=dtype)
        elif self.kind == "prod":
            out = np.prod(value, axis=self.axis, dtype=dtype)
        else:
            func = np.max if self.kind == "max" else np.min
            try:
                out = func(value, axis=self.axis)
            except ValueError as exc:
                raise ValueError("%s of an empty array (shape %s) has no value" % (
                    self, value.shape)) from exc
        if type(out) is not np.ndarray or out.dtype != dtype:
            out = np.asarray(out, dtype=dtype)
        output_storage[0][0] = out

    def chunk_semantics(self, node):
        """A reduction whose block partials merge with the same kind."""
        from nbgraph.tensor import chunking

        return chunking.reduction(self.kind, self.axis, node)

    def infer_shape(self, node, input_shapes):
        elem = self.elemwise_node(node.inputs)
        (shape,) = elem.op.infer_shape(elem, input_shapes)[:1]
        return [tuple(s for i, s in enumerate(shape) if i not in self.axis)]

    def unfused(self, inputs):
        """The same value built from plain ops: ``Reduce(kind, axis)(Elemwise(scalar_op)(...))``."""
        return Reduce(self.kind, self.axis)(Elemwise(self.scalar_op)(*inputs))

    def grad(self, inputs, output_grads):
        value = Elemwise(self.scalar_op)(*inputs)
        (g_value,) = Reduce(self.kind, self.axis).grad([value], output_grads)
        if g_value.type.grad_is_zero(g_value):
            return [zero_gradient(x) for x in inputs]
        return value.owner.op.grad(list(value.owner.inputs), [g_value])


def fused_elemwise_structure(node):
    """Describe a fused ``Elemwise(Composite)`` node the way a code generator sees it.

    Returns a dict: ``inputs`` (the node's input Variables, all of the
    node's ndim, each with its own broadcast pattern), ``scalar_inputs``
    (the Composite's inner roots, ``scalar_inputs[i]`` standing for one
    element of ``inputs[i]``, same dtype), ``order`` (the inner Apply nodes in
    execution order; inner constants are ScalarConstants), ``scalar_outputs``
    and ``outputs`` (paired).  Every output has the node's broadcast shape.
    """
    if not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, Composite):
        raise TypeError("%s is not a fused Elemwise(Composite) node" % (node.op,))
    comp = node.op.scalar_op
    return {
        "inputs": list(node.inputs),
        "scalar_inputs": list(comp.inputs),
        "order": io_toposort(comp.inputs, comp.outputs),
        "scalar_outputs": list(comp.outputs),
        "outputs": list(node.outputs),
    }


def small_constant(var):
    """The value of a size-1 constant (possibly behind DimShuffles) as a 0-d array, or None."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    if isinstance(var, Constant) and isinstance(var.type, TensorType):
        data = np.asarray(var.data)
        if data.size == 1:
            return data.reshape(())
    return None


def build_composite(order, exports):
    """``(Composite, tensor_inputs)`` computing ``exports`` from the Elemwise nodes ``order``.

    ``order`` is topologically sorted.  Inner scalars keep the dtypes of the
    tensors they stand for; size-1 constants become inner ScalarConstants
    (unless every input is such a constant: one is kept as a tensor input).
    Returns None when an inner op would produce a different dtype.
    """
    externals = _external_inputs(order, exports)
    scalar_of, tensor_inputs, scalar_inputs = _scalar_roots(externals)
    for node in order:
        outs = _scalar_outputs(node, [scalar_of[v] for v in node.inputs])
        for tensor_out, scalar_out in zip(node.outputs, outs, strict=True):
            if scalar_out.type.dtype != tensor_out.type.dtype:
                return None
            scalar_of[tensor_out] = scalar_out
    composite = Composite(scalar_inputs, [scalar_of[v] for v in exports])
    return composite, tensor_inputs


def _external_inputs(order, exports):
    """The variables the nodes ``order`` read from outside, numbered as met reading
    the exported expressions left to right, then those only unexported outputs need."""
    members = set(order)
    externals = []
    stack = list(reversed(exports))
    seen = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v.owner is not None and v.owner in members:
            stack.extend(reversed(v.owner.inputs))
        else:
            externals.append(v)
    for node in order:  # inputs that only unexported outputs need
        for v in node.inputs:
            if (v.owner is None or v.owner not in members) and v not in seen:
                seen.add(v)
                externals.append(v)
    return externals


def _scalar_roots(externals):
    """``(scalar_of, tensor_inputs, scalar_inputs)``: each external's inner scalar, a
    ScalarConstant for a size-1 constant (unless all are: the first stays an input)."""
    scalar_of = {}
    tensor_inputs = []
    scalar_inputs = []
    kept_constant = None
    if all(small_constant(v) is not None for v in externals):
        kept_constant = externals[0]
    for v in externals:
        value = None if v is kept_constant else small_constant(v)
        if value is not None:
            scalar_of[v] = ScalarConstant(_scalar_type(v.type.dtype),
                                          np.asarray(value, dtype=v.type.dtype)[()])
        else:
            s = _scalar_type(v.type.dtype)()
            scalar_of[v] = s
            tensor_inputs.append(v)
            scalar_inputs.append(s)
    return scalar_of, tensor_inputs, scalar_inputs


def _scalar_outputs(node, args):
    """The inner scalar outputs of Elemwise ``node`` applied to the scalars ``args``."""
    sop = node.op.scalar_op
    if isinstance(sop, Composite):
        return _inline_composite(sop, args)
    if type(sop).make_node is ps.ScalarOp.make_node:
        # what make_node would build: the Elemwise node was made from the
        # same op on scalars of these very dtypes
        return Apply(sop, args, [_scalar_type(o.type.dtype)() for o in node.outputs]).outputs
    return sop.make_node(*args).outputs


_SCALAR_TYPES = {}


def _scalar_type(dtype):
    found = _SCALAR_TYPES.get(dtype)
    if found is None:
        found = _SCALAR_TYPES[dtype] = ps.get_scalar_type(dtype)
    return found


def _inline_composite(comp, args):
    env = dict(zip(comp.inputs, args, strict=True))
    for inner in io_toposort(comp.inputs, comp.outputs):
        new = inner.op.make_node(*[env.get(v, v) for v in inner.inputs])
        env.update(zip(inner.outputs, new.outputs, strict=True))
    return [env.get(v, v) for v in comp.outputs]
