"""Symbolic shape keys: proving that two run-time sizes are equal.

``shape_keys(fgraph, var)`` gives one hashable *key* per dimension of a
tensor variable.  A key stands for the run-time size of that dimension:

* an ``int`` for a size known statically (or a constant shape entry);
* ``("dim", v, d)`` for "dimension ``d`` of variable ``v``", when nothing
  better is known (graph inputs, ops without a shape rule);
* ``("bcast", frozenset(keys))`` for the NumPy broadcast of several sizes
  (flattened: broadcasting is associative, commutative and idempotent, so
  ``bcast(a, bcast(b, c))`` and ``bcast(c, b, a)`` get one key; past
  ``MAX_ATOMS`` sizes a fresh ``("dim", v, d)`` stands in);
* ``("op", op, index, input_keys)`` for an integer scalar computed by an
  Elemwise op (deterministic scalar arithmetic) from other keys, as in the
  shape expressions ``infer_shape`` returns;
* ``("val", v)`` for the value of any other integer scalar ``v``.

The rules only ever derive a key from what the run time must produce, so two
dimensions with *equal keys* have equal sizes in every run where the graph
does not fail, whatever sizes (including 1) the unknown dimensions take.
Unequal keys prove nothing.  Rewrites use this to drop shape work
(SumToShape, Alloc) only where it provably changes no result.

This is the one shape-equality system of the tensor rewrites: fusion (which
outputs of a group share the group's run-time shape), in-place (an output the
size of the input it would overwrite) and the shape rewrites (SumToShape,
Alloc) all ask it.

Keys are computed without recursion over the graph (deep chains are fine) and
memoised in a :class:`ShapeKeyCache`, a Feature the first call attaches to the
FunctionGraph (so the graph owns its cache, and a clone starts without one).
Rewrites replace variables by variables of equal value, so a memoised key
stays true after later replacements; the cache forgets the variables of nodes
that leave the graph.
"""

import numpy as np

from nbgraph.core.fgraph import Feature
from nbgraph.core.graph import Constant
from nbgraph.core.type import MethodNotDefined
from nbgraph.tensor.type import TensorType

__all__ = ["shape_keys", "value_key", "ShapeKeyCache", "MAX_ATOMS"]

_MAX_VALUE_DEPTH = 16


MAX_ATOMS = 64  # sizes a broadcast key may name before a fresh key stands in


class ShapeKeyCache(Feature):
    """The memo of :func:`shape_keys` and :func:`value_key` for one FunctionGraph.

    ``shapes`` maps a tensor variable to its keys, ``values`` an integer scalar
    to its value key.  Attached by the first call on a graph and found again
    among ``fgraph.features``; it drops the entries of pruned nodes' outputs.
    """

    def __init__(self):
        self.shapes = {}
        self.values = {}

    def on_prune(self, fgraph, node, reason):
        for out in node.outputs:
            self.shapes.pop(out, None)
            self.values.pop(out, None)


def _memo(fgraph):
    for feature in getattr(fgraph, "features", ()):
        if isinstance(feature, ShapeKeyCache):
            return feature
    memo = ShapeKeyCache()
    attach = getattr(fgraph, "attach_feature", None)
    if attach is not None:  # anything else gets a cache for this call only
        attach(memo)
    return memo


def _is_tensor(var):
    return isinstance(var.type, TensorType)


def shape_keys(fgraph, var):
    """A tuple of keys, one per dimension of the tensor ``var`` (see the module doc)."""
    memo = _memo(fgraph)
    shapes = memo.shapes
    found = shapes.get(var)
    if found is not None:
        return found
    stack = [var]
    while stack:
        v = stack[-1]
        if v in shapes:
            stack.pop()
            continue
        owner = v.owner
        if owner is not None and None in v.type.shape:
            pending = [i for i in owner.inputs if _is_tensor(i) and i not in shapes]
            if pending:
                stack.extend(pending)
                continue
        stack.pop()
        if owner is None or None not in v.type.shape:
            shapes[v] = _fallback(v)
        else:
            for out, keys in zip(owner.outputs, _node_keys(fgraph, memo, owner), strict=True):
                shapes[out] = keys
    return shapes[var]


def _fallback(v):
    return tuple(s if s is not None else ("dim", v, d) for d, s in enumerate(v.type.shape))


def value_key(fgraph, var, _depth=0, _memo_obj=None):
    """A key for the value of an integer scalar ``var`` (a shape entry)."""
    if isinstance(var, (int, np.integer)):
        return int(var)
    memo = _memo_obj or _memo(fgraph)
    found = memo.values.get(var)
    if found is not None:
        return found
    key = ("val", var)
    if isinstance(var, Constant):
        data = getattr(var, "data", None)
        if getattr(data, "ndim", None) == 0 and getattr(data.dtype, "kind", "") in "iu":
            key = int(data)
    elif var.owner is not None:
        from nbgraph.tensor.basic import ShapeI

        owner = var.owner
        if isinstance(owner.op, ShapeI) and _is_tensor(owner.inputs[0]):
            key = shape_keys(fgraph, owner.inputs[0])[owner.op.i]
        elif (_depth < _MAX_VALUE_DEPTH and _is_elemwise(owner.op) and var.ndim == 0
              and all(_is_tensor(i) and i.ndim == 0 for i in owner.inputs)):
            # scalar arithmetic (deterministic): equal ops on equal values agree
            candidate = ("op", owner.op, var.index,
                         tuple(value_key(fgraph, i, _depth + 1, memo) for i in owner.inputs))
            try:
                hash(candidate)
                key = candidate
            except TypeError:
                pass
    memo.values[var] = key
    return key


def _is_elemwise(op):
    from nbgraph.tensor.elemwise import Elemwise

    return isinstance(op, Elemwise)


def _node_keys(fgraph, memo, node):
    """Keys of each output of ``node``, its tensor inputs' keys being memoised: the
    rule for the node's Op (below), else its ``infer_shape`` read back as keys."""
    from nbgraph.tensor.basic import Alloc, SpecifyShape
    from nbgraph.tensor.elemwise import DimShuffle, Elemwise, SumToShape

    op = node.op
    if isinstance(op, Elemwise):
        return _elemwise_keys(memo.shapes, node)
    if isinstance(op, DimShuffle):
        inner = memo.shapes[node.inputs[0]]
        return [tuple(1 if e == "x" else inner[e] for e in op.new_order)]
    if isinstance(op, SpecifyShape):
        return [_merge_static(node.outputs[0], memo.shapes[node.inputs[0]])]
    if isinstance(op, SumToShape) and op.takes_template(node):
        return [_merge_static(node.outputs[0], memo.shapes[node.inputs[1]])]
    if isinstance(op, (Alloc, SumToShape)):
        return [_merge_static(node.outputs[0], tuple(value_key(fgraph, e, 0, memo)
                                                     for e in node.inputs[1:]))]
    return _inferred_keys(fgraph, memo, node)


def _elemwise_keys(shapes, node):
    """An Elemwise output's size: static, else the broadcast of the inputs' sizes
    (inputs statically 1 there do not count)."""
    out = node.outputs[0]
    keys = []
    for d, size in enumerate(out.type.shape):
        if size is not None:
            keys.append(size)
            continue
        cands = []
        for inp in node.inputs:
            if inp.type.shape[d] != 1 and shapes[inp][d] not in cands:
                cands.append(shapes[inp][d])
        keys.append(_broadcast_key(cands, out, d))
    return [tuple(keys)] * len(node.outputs)


def _inferred_keys(fgraph, memo, node):
    """Keys from ``node.op.infer_shape`` (fresh keys where it has none)."""
    from nbgraph.tensor.basic import shape_i

    outs = node.outputs
    if not all(_is_tensor(o) for o in outs):
        return [_fallback(o) if _is_tensor(o) else () for o in outs]
    in_shapes = [tuple(shape_i(i, d) for d in range(i.ndim)) if _is_tensor(i) else None
                 for i in node.inputs]
    try:
        out_shapes = node.op.infer_shape(node, in_shapes)
    except (MethodNotDefined, NotImplementedError, TypeError, ValueError, AttributeError):
        return [_fallback(o) for o in outs]
    result = []
    for o, shp in zip(outs, out_shapes, strict=False):
        if shp is None or len(shp) != o.ndim:
            result.append(_fallback(o))
            continue
        result.append(_merge_static(o, tuple(value_key(fgraph, e, 0, memo) for e in shp)))
    return result


def _broadcast_key(cands, out, d):
    """The key of the broadcast of the sizes ``cands`` (dimension ``d`` of ``out``)."""
    if len(cands) == 1:
        return cands[0]
    atoms = set()
    for k in cands:
        if isinstance(k, tuple) and k and k[0] == "bcast":
            atoms |= k[1]
        else:
            atoms.add(k)
    if len(atoms) > MAX_ATOMS:
        return ("dim", out, d)
    return ("bcast", frozenset(atoms)) if len(atoms) > 1 else next(iter(atoms))


def _merge_static(var, keys):
    """``keys`` with the statically known sizes of ``var`` put in."""
    return tuple(s if s is not None else k for s, k in zip(var.type.shape, keys, strict=True))
