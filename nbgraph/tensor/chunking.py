"""The tensor Ops' chunk semantics (:class:`nbgraph.core.chunks.ChunkSemantics`).

Each tensor Op that can run on blocks answers ``op.chunk_semantics(node)``
with one of these declarations; the functions here build them.  Every
callable in a declaration is a module-level function or a small class, so it
pickles (a distributed scheduler ships it to worker processes), and works on
NumPy and Dask arrays alike (array methods and indexing only).

>>> import nbgraph.tensor as nt
>>> x = nt.dmatrix("x")
>>> x.sum(axis=0).owner.op.chunk_semantics(x.sum(axis=0).owner).kind
'reduction'
>>> x.T.owner.op.chunk_semantics(x.T.owner).kind
'view'
"""

import functools

import numpy as np

from nbgraph.core.chunks import ChunkSemantics
from nbgraph.core.graph import ancestors

__all__ = ["ReduceCombine", "reduction", "elementwise", "dimshuffle", "reshape",
           "subtensor", "sum_to_shape", "same_as_input"]

_REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
_IDENTITY = {"sum": 0, "prod": 1, "max": None, "min": None}


class ReduceCombine:
    """Merges partial reductions: ``combine(partials, axis, keepdims)`` with NumPy's
    ``sum``/``prod`` (in ``dtype``) or ``max``/``min`` (NaN propagates)."""

    def __init__(self, kind: str, dtype: str):
        self.kind = kind
        self.dtype = str(dtype)

    def __call__(self, partials, axis=None, keepdims=False):
        func = _REDUCERS[self.kind]
        if self.kind in ("sum", "prod"):
            return func(partials, axis=axis, keepdims=keepdims, dtype=self.dtype)
        return func(partials, axis=axis, keepdims=keepdims)

    def __repr__(self):
        return "ReduceCombine(%r, %r)" % (self.kind, self.dtype)


def reduction(kind: str, axes, node) -> ChunkSemantics:
    """A ``kind`` reduction over ``axes`` producing ``node``'s output dtype."""
    return ChunkSemantics.reduction(axes, ReduceCombine(kind, node.outputs[0].dtype),
                                    _IDENTITY[kind])


def _elemwise_subset(node, indices):
    """An Elemwise node computing only outputs ``indices`` of ``node``, reading only
    the inputs those outputs need."""
    from nbgraph.tensor.elemwise import Elemwise
    from nbgraph.tensor.scalar_composite import Composite

    sop = node.op.scalar_op
    if not isinstance(sop, Composite):
        return None
    chosen = [sop.outputs[i] for i in indices]
    needed = set(ancestors(chosen))
    keep = [j for j, v in enumerate(sop.inputs) if v in needed]
    if not keep:
        return None
    new = Composite([sop.inputs[j] for j in keep], chosen)
    return Elemwise(new).make_node(*[node.inputs[j] for j in keep])


def elementwise() -> ChunkSemantics:
    """Elementwise semantics, with the multi-output split of fused nodes."""
    return ChunkSemantics.elementwise(subset=_elemwise_subset)


def _dimshuffle(shuffle, dropped, augment, x):
    out = x.transpose(tuple(shuffle) + tuple(dropped))
    if dropped:
        if any(out.shape[len(shuffle) + k] != 1 for k in range(len(dropped))):
            raise ValueError("DimShuffle: dimensions %s must have size 1, got shape %s" % (
                dropped, x.shape))
        out = out[(slice(None),) * len(shuffle) + (0,) * len(dropped)]
    if augment:
        index = [slice(None)] * len(shuffle)
        for i in sorted(augment):
            index.insert(i, None)
        out = out[tuple(index)]
    return out


def dimshuffle(op) -> ChunkSemantics:
    """DimShuffle as transpose, dropping and inserting size-1 axes."""
    return ChunkSemantics.view(functools.partial(_dimshuffle, tuple(op.shuffle),
                                                 tuple(op.dropped), tuple(op.augment)))


def _reshape(x, *shape):
    shape = tuple(int(s) for s in shape)
    try:
        return x.reshape(shape)
    except NotImplementedError:
        # a blocked array may only merge or split dimensions: flatten (a merge),
        # then split into the new shape
        return x.reshape(-1).reshape(shape)


def reshape() -> ChunkSemantics:
    """Reshape to the shape given by the 0-d inputs after ``x``."""
    return ChunkSemantics.view(_reshape)


def _subtensor(op, x, *indices):
    return x[op.index_tuple(indices)]


def subtensor(op) -> ChunkSemantics:
    """Basic indexing with the run-time index values."""
    return ChunkSemantics.view(functools.partial(_subtensor, op))


def _sum_to_shape(op, g, *rest):
    target = op.target_shape([g] + list(rest))
    pairs = enumerate(zip(g.shape, target, strict=True))
    axes = tuple(i for i, (a, b) in pairs if b == 1 and a != 1)
    return g.sum(axis=axes, keepdims=True, dtype=g.dtype) if axes else g


def sum_to_shape(op) -> ChunkSemantics:
    """Sum over the dimensions where the target shape is 1."""
    return ChunkSemantics.view(functools.partial(_sum_to_shape, op))


def _same(x, *rest):
    return x


def same_as_input() -> ChunkSemantics:
    """The output is the first input (a shape assertion, checked by the linker)."""
    return ChunkSemantics.view(_same)
