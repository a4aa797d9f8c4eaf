"""Exact rewrites toward the neural-net Ops: the label picks written with advanced indexing.

Programs written for Theano pick one probability per row as ``p[arange(n), y]``
(or ``log(p)[arange(n), y]``); the gradient of that is an
:class:`~nbgraph.tensor.advanced_indexing.AdvancedScatterAdd`.  These
canonicalisations turn them into :class:`~nbgraph.tensor.nnet.PickLabels` and
:class:`~nbgraph.tensor.nnet.PickLabelsGrad` (one pass in C, no index arrays),
which the ``stabilize`` stage then fuses with a softmax and a log into the
cross-entropy Ops.  They keep NumPy's result, errors included:

* ``x[arange(S), y]`` (``x`` a matrix, ``y`` a vector of integers, the
  arange from 0 by 1) is ``pick_labels(x[:S], y')``, where ``x[:S]`` is ``x``
  itself when ``S`` is provably ``x``'s row count, and ``y'`` takes a
  negative label ``-m <= y < 0`` to ``y + m`` as NumPy's indexing does
  (``m`` the column count; other labels out of range still raise IndexError);
* ``f(z)[arange(S), y]`` for a one-input elementwise ``f`` picks first:
  ``f(pick(z))`` (the same values, ``f`` computed on ``S`` values);
  not when ``z`` is a softmax: ``log(softmax(x))`` is left whole for the
  ``stabilize`` stage (``log_softmax``, finite where the softmax underflows);
* the gradient ``AdvancedScatterAdd(z, g, arange(S), y)`` (zeros like ``z``
  with ``g`` added at ``(i, y[i])``) is ``PickLabelsGrad(g, y', z)`` when ``S``
  is provably ``z``'s row count (each row then gets exactly one value), and
  ``set_subtensor(zeros_like(z)[:S], PickLabelsGrad(g, y', z[:S]))`` when ``S``
  is provably ``len(y)`` (the gradient of ``x[:S]``, which the ``stabilize``
  patterns look through); any
  AdvancedScatterAdd reads ``z`` only for its shape, so ``z = f(v)`` (one-input
  elementwise ``f``, a softmax) becomes ``v`` there: ``f(v)`` is not kept
  alive, or computed, for its shape.
"""

from nbgraph.core.rewriting import loaded_class, node_rewriter
from nbgraph.tensor import math as tm
from nbgraph.tensor.basic import zeros_like
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.rewriting import register_rewrite
from nbgraph.tensor.shape_keys import shape_keys, value_key
from nbgraph.tensor.stabilize import owner_of, same_type
from nbgraph.tensor.subtensor import IncSubtensor, Subtensor

__all__ = ["pick_labels_from_indexing", "pick_labels_grad_from_scatter"]

_INTEGER_KINDS = "iu"

# Registered with every fast pipeline, these rewrites import neither advanced indexing
# nor the neural-net Ops (~1.5 ms of a first function()): they track advanced indexing's
# classes by name (no graph holds such a node before that module is loaded), and take
# the rest when one matches.
_INDEXING = "nbgraph.tensor.advanced_indexing"


def _row_indexing(fgraph, idx_list, x, indices):
    """``(S, y)`` when ``x[indices]`` is ``x[arange(0, S, 1), y]`` with ``x`` a matrix and
    ``y`` an integer vector, else None."""
    if tuple(idx_list) != ("a", "a") or x.ndim != 2 or len(indices) != 2:
        return None
    rows, y = indices
    owner = rows.owner
    arange = loaded_class("nbgraph.tensor.creation:ARange")
    if owner is None or arange is None or not isinstance(owner.op, arange) or \
            rows.type.numpy_dtype.kind not in _INTEGER_KINDS:
        return None
    if y.ndim != 1 or y.type.numpy_dtype.kind not in _INTEGER_KINDS:
        return None
    start, stop, step = owner.inputs
    if value_key(fgraph, start) != 0 or value_key(fgraph, step) != 1:
        return None
    return stop, y


def _wrapped(y, x):
    """``y`` with NumPy's negative indices taken to ``y + m`` (``m``: ``x``'s column count)."""
    if y.type.numpy_dtype.kind == "u":
        return y
    return tm.switch(tm.lt(y, 0), y + x.shape[1], y)


def _unary(var):
    """The input of ``var``'s one-input Elemwise node (not in place), else None."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, Elemwise) and len(owner.inputs) == 1 and \
            not owner.op.inplace_pattern and owner.inputs[0].ndim == var.ndim:
        return owner
    return None


@register_rewrite("pick_labels_from_indexing", "fast", "canonicalize", position=30)
@node_rewriter([_INDEXING + ":AdvancedSubtensor"])
def pick_labels_from_indexing(fgraph, node):
    """``x[arange(S), y] -> pick_labels(x[:S], y)``; ``f(z)[...] -> f(pick_labels(z[:S], y))``."""
    from nbgraph.tensor import nnet

    x, *indices = node.inputs
    found = _row_indexing(fgraph, node.op.idx_list, x, indices)
    if found is None:
        return None
    stop, y = found
    base, lift = x, _unary(x)
    if lift is not None and owner_of(lift.inputs[0], (nnet.Softmax, nnet.LogSoftmax)) is None:
        base = lift.inputs[0]
    else:
        lift = None
    rows = shape_keys(fgraph, base)[0]
    if value_key(fgraph, stop) != rows:
        if value_key(fgraph, stop) != shape_keys(fgraph, y)[0]:
            return None  # y is broadcast: S decides the length, which x[:S] may not have
        base = base[:stop]
    out = nnet.pick_labels(base, _wrapped(y, base))
    if lift is not None:
        out = lift.op(out)
    out = same_type(out, node.outputs[0])
    return [out] if out is not None else None


def _shape_source(var):
    """A variable with ``var``'s shape and type that is cheaper to have: through one-input
    Elemwise nodes and the softmax Ops (their output has their input's shape)."""
    from nbgraph.tensor import nnet

    while var.owner is not None:
        owner = var.owner
        step = owner.inputs[0] if (_unary(var) is not None or isinstance(
            owner.op, (nnet.Softmax, nnet.LogSoftmax))) else None
        if step is None or step.type != var.type:
            break
        var = step
    return var


@register_rewrite("pick_labels_grad_from_scatter", "fast", "canonicalize", position=30)
@node_rewriter([_INDEXING + ":AdvancedScatterAdd"])
def pick_labels_grad_from_scatter(fgraph, node):
    """``AdvancedScatterAdd(z, g, arange(S), y) -> PickLabelsGrad(g, y, z)`` when ``S`` is
    ``z``'s row count (one value per row, so adding is putting)."""
    from nbgraph.tensor import nnet

    z, g, *indices = node.inputs
    template = _shape_source(z)
    found = _row_indexing(fgraph, node.op.idx_list, z, indices)
    stop = None if found is None or g.ndim > 1 else value_key(fgraph, found[0])
    if stop is not None and stop == shape_keys(fgraph, z)[0]:
        out = nnet.PickLabelsGrad()(g, _wrapped(found[1], template), template)
    elif stop is not None and stop == shape_keys(fgraph, found[1])[0]:
        # S is len(y), maybe not z's rows: the labels' rows, zeros below them (S larger
        # than z's rows fails: PickLabelsGrad's rows and g's length differ)
        rows = Subtensor((slice(None, found[0], None),))
        picked = nnet.PickLabelsGrad()(g, _wrapped(found[1], template),
                                       rows(template, found[0]))
        out = IncSubtensor(rows.idx_list, True)(zeros_like(template), picked, found[0])
    elif template is z:
        return None
    else:
        return [node.op(template, g, *indices)]  # z is read only for its shape
    out = same_type(out, node.outputs[0])
    return [out] if out is not None else None

