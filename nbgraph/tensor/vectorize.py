"""``vectorize_graph``: a graph written for single examples, run on batches; and
``graph_replace``: substitution that checks every replacement was used.

>>> import numpy as np
>>> import nbgraph.tensor as nt
>>> x = nt.dvector("x")                         # one example
>>> y = nt.exp(x).sum() / x.shape[0]
>>> xs = nt.dmatrix("xs")                       # a batch of examples, one per row
>>> ys = vectorize_graph(y, {x: xs})
>>> data = np.arange(6.0).reshape(2, 3)
>>> bool(np.allclose(ys.eval({xs: data}), np.exp(data).sum(axis=1) / 3))
True

The new inputs carry extra *leading* (batch) dimensions; each node that reads
a batched value is rebuilt: elementwise Ops broadcast by themselves,
dimension shuffles and reductions shift their axes past the batch dimensions,
matrix products become :func:`~nbgraph.tensor.linalg.matmul`, and every other
Op is wrapped in :class:`Blockwise`, which runs the Op once per batch entry
(correct for any Op; a loop in Python, so slower; no gradient).  Batch
dimensions of different inputs broadcast as NumPy's do.
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.graph import Apply, Variable, clone_replace, io_toposort, ancestors
from nbgraph.core.op import Op, run_node
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable

__all__ = ["vectorize_graph", "graph_replace", "Blockwise"]


def graph_replace(outputs, replace, strict: bool = True):
    """:func:`~nbgraph.core.graph.clone_replace`, refusing (with ``strict``) a
    replacement whose key the graph of ``outputs`` does not contain."""
    pairs = list(replace.items()) if isinstance(replace, dict) else list(replace or ())
    if strict:
        present = set(ancestors(outputs if isinstance(outputs, (list, tuple)) else [outputs]))
        unused = [old for old, _ in pairs if old not in present]
        if unused:
            raise ValueError("graph_replace: %s %s not in the graph of the outputs (pass "
                             "strict=False to ignore)" % (
                                 ", ".join(repr(v) for v in unused),
                                 "is" if len(unused) == 1 else "are"))
    return clone_replace(outputs, pairs)


class Blockwise(Op):
    """``core_op`` applied to every entry of the leading (batch) dimensions.

    ``core_types`` are the Types of the core node's inputs; an input with more
    dimensions than its core type has batch dimensions, which broadcast
    across inputs as in NumPy.  Every output gets the broadcast batch shape
    in front of its core shape (which must be the same for every entry).
    """

    __props__ = ("core_op", "core_types")

    def __init__(self, core_op, core_types):
        self.core_op = core_op
        self.core_types = tuple(core_types)
        self.core_node = core_op.make_node(*[t() for t in self.core_types])

    def __str__(self):
        return "Blockwise{%s}" % (self.core_op,)

    def make_node(self, *inputs):
        if len(inputs) != len(self.core_types):
            raise TypeError("%s takes %d inputs, got %d" % (self, len(self.core_types),
                                                            len(inputs)))
        inputs = [as_tensor_variable(v) for v in inputs]
        batch = []
        for i, (v, t) in enumerate(zip(inputs, self.core_types, strict=True)):
            extra = v.ndim - t.ndim
            if extra < 0 or v.dtype != t.dtype:
                raise TypeError("%s: input %d (%r) must be a batch of %r, got %r" % (
                    self, i, v, t, v.type))
            batch.append(v.type.shape[:extra])
        nb = max((len(b) for b in batch), default=0)
        shape = []
        for d in range(nb):
            sizes = {b[d - (nb - len(b))] for b in batch if d >= nb - len(b)}
            known = {s for s in sizes if s not in (None, 1)}
            shape.append(known.pop() if len(known) == 1 and None not in sizes else
                         (1 if sizes == {1} else None))
        outs = [TensorType(o.type.dtype, tuple(shape) + tuple(o.type.shape))()
                for o in self.core_node.outputs]
        return Apply(self, inputs, outs)

    def perform(self, node, inputs, output_storage):
        extras = [v.ndim - t.ndim for v, t in zip(inputs, self.core_types, strict=True)]
        nb = len(node.outputs[0].type.shape) - self.core_node.outputs[0].ndim
        padded = [v.reshape((1,) * (nb - e) + v.shape) for v, e in zip(inputs, extras, strict=True)]
        batch_shape = np.broadcast_shapes(*[p.shape[:nb] for p in padded])
        results = [None] * len(node.outputs)
        for index in np.ndindex(*batch_shape):
            core_values = [
                p[tuple(i if s != 1 else 0 for i, s in zip(index, p.shape[:nb], strict=True))]
                for p in padded]
            outs = run_node(self.core_node, core_values)
            for k, value in enumerate(outs):
                value = np.asarray(value)
                if results[k] is None:
                    results[k] = np.empty(batch_shape + value.shape,
                                          dtype=node.outputs[k].type.numpy_dtype)
                elif results[k].shape[len(batch_shape):] != value.shape:
                    raise ValueError("%s: output %d has shape %s for batch entry %s and %s "
                                     "for the first; a Blockwise output needs one core shape"
                                     % (self, k, value.shape, index,
                                        results[k].shape[len(batch_shape):]))
                results[k][index] = value
        for k, out in enumerate(node.outputs):
            if results[k] is None:  # an empty batch: core shapes from the static types
                core = tuple(s or 0 for s in self.core_node.outputs[k].type.shape)
                results[k] = np.empty(batch_shape + core, dtype=out.type.numpy_dtype)
            output_storage[k][0] = results[k]

    def grad(self, inputs, output_grads):
        from nbgraph.core.gradient_types import grad_not_implemented

        return [grad_not_implemented(self, i, x, "take the gradient of the core graph first, "
                                     "then vectorize it") for i, x in enumerate(inputs)]


def _batch_ndim(new, old):
    return new.ndim - old.ndim


def _vectorize_node(node, new_inputs):
    """Outputs of ``node`` rebuilt over ``new_inputs`` (some of which are batched)."""
    from nbgraph.tensor.basic import Dot
    from nbgraph.tensor.elemwise import DimShuffle, Elemwise
    from nbgraph.tensor.linalg import matmul
    from nbgraph.tensor.reduction import Reduce

    op = node.op
    nbs = [_batch_ndim(n, o) for n, o in zip(new_inputs, node.inputs, strict=True)]
    nb = max(nbs)
    if isinstance(op, Elemwise):
        out = op(*new_inputs)
        return out if isinstance(out, list) else [out]
    if isinstance(op, DimShuffle):
        order = list(range(nb)) + [e if e == "x" else e + nb for e in op.new_order]
        return [new_inputs[0].dimshuffle(*order)]
    if isinstance(op, Reduce):
        return [Reduce(op.kind, tuple(a + nb for a in op.axis))(new_inputs[0])]
    if isinstance(op, Dot) and all(v.ndim == 2 for v in node.inputs):
        return [matmul(*new_inputs)]
    core_types = [v.type for v in node.inputs]
    out = Blockwise(op, core_types)(*new_inputs)
    return out if isinstance(out, list) else [out]


def vectorize_graph(outputs, replace: dict):
    """``outputs`` recomputed with each key of ``replace`` (a core input) replaced by
    its value (the same Type with extra leading batch dimensions)."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    memo = {}
    for old, new in (replace.items() if isinstance(replace, dict) else replace):
        new = as_tensor_variable(new)
        if not isinstance(old.type, TensorType) or new.ndim < old.ndim or \
                new.dtype != old.dtype:
            raise TypeError("vectorize_graph: %r (%r) must be replaced by a batch of it "
                            "(same dtype, extra leading dimensions), got %r" % (
                                old, old.type, new.type))
        memo[old] = new
    for node in io_toposort(list(memo), outs):
        new_inputs = [memo.get(v, v) for v in node.inputs]
        if all(n is o for n, o in zip(new_inputs, node.inputs, strict=True)):
            continue
        if all(_batch_ndim(n, o) == 0 for n, o in zip(new_inputs, node.inputs, strict=True)):
            new_outs = node.clone_with_new_inputs(new_inputs, strict=False).outputs
        else:
            new_outs = _vectorize_node(node, new_inputs)
        for old, new in zip(node.outputs, new_outs, strict=True):
            memo[old] = new
    result = [memo.get(o, o) for o in outs]
    return result[0] if single else result
