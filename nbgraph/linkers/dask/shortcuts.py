"""Passes a row-block program leaves out (see :mod:`~nbgraph.linkers.dask.blocks`).

A gradient graph carries nodes that only matter when the shapes they relate
could differ: a fill of the rows with a seed value (the gradient of a mean
broadcast to ``x.shape[0]`` rows) read by elementwise nodes that get the
rows from another argument anyway, and a view that sums a value back to a
shape it already has.  In the full graph those shapes come from different
arguments (``X.shape[0]`` and ``len(t)``) and cannot be proved equal; inside
a row-block program every row argument has the block's rows, so:

* a **fill of the rows** whose value broadcasts to the fill's shape (same
  number of dimensions) is replaced by that value when every reader is an
  elementwise node of the region with another input that has the reader's
  full shape and is not such a fill (broadcasting then gives the same
  result, without writing and reading a row-sized buffer);
* a **view that maps every element to itself** (same full shape, and a
  probe block of distinct values comes back unchanged) is replaced by its
  input.

Each shortcut is decided from layouts, shapes and probes, never from which
Op a node is.  :func:`shortcuts` returns ``{output variable: the input that
stands for it}``.
"""

import numpy as np

__all__ = ["shortcuts", "is_identity_view"]


def is_identity_view(sem, x, probe_others, n, trailing):
    """True when the view ``sem`` returns a probe block of ``n`` rows of distinct
    values (``x``'s dtype, ``trailing`` dimensions) unchanged."""
    dtype = x.type.numpy_dtype
    size = n * int(np.prod(trailing, dtype=np.int64))
    if dtype.kind == "f":
        exact = size < 2 ** min(24, np.finfo(dtype).nmant + 1)
    elif dtype.kind in "iu":
        exact = size <= np.iinfo(dtype).max
    else:
        exact = False
    if not exact:
        return False
    block = np.arange(size).astype(dtype).reshape((n,) + tuple(trailing))
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(sem.apply(block, *probe_others))
    except (ValueError, TypeError, IndexError):
        return False
    return out.shape == block.shape and out.dtype == block.dtype \
        and bool(np.array_equal(out, block))


def shortcuts(planner, exits):
    """``{graph variable: graph variable}``: the region's outputs the block program
    takes from one of the node's inputs instead of computing them."""
    out = {}
    exits = set(exits)
    for node in planner.region:
        if node in planner.identity and node.outputs[0] not in exits:
            out[node.outputs[0]] = node.inputs[0]
    fills = [node for node in planner.region if _row_fill(planner, node)]
    dropped = {node.outputs[0] for node in fills}
    for node in fills:
        var = node.outputs[0]
        if var not in exits and _readers_broadcast(planner, var, dropped):
            out[var] = node.inputs[0]
    return out


def _row_fill(planner, node):
    """A fill of the rows (its row count substituted) whose value has its dimensions."""
    if planner.subst.get(node) != (1,) or len(node.outputs) != 1:
        return False
    sem = node.op.chunk_semantics(node)
    if sem is None or sem.kind != "fill":
        return False
    value, out = node.inputs[0], node.outputs[0]
    return getattr(value, "ndim", -1) == out.ndim and \
        getattr(value.type, "dtype", None) == getattr(out.type, "dtype", None)


def _readers_broadcast(planner, var, dropped):
    """Every reader of ``var`` is an elementwise node of the region that has
    another input of its full shape (not a fill being left out)."""
    region = set(planner.region)
    readers = planner.fgraph.clients.get(var, ())
    if not readers:
        return False
    for reader, _ in readers:
        if reader == "output" or reader not in region:
            return False
        sem = reader.op.chunk_semantics(reader)
        if sem is None or sem.kind != "elementwise":
            return False
        want = planner.shapes.get(reader.outputs[0])
        if not any(v is not var and v not in dropped and v in planner.shapes
                   and planner.shapes[v] == want for v in reader.inputs):
            return False
    return True
