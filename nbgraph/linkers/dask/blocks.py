"""Row-block programs: a whole graph run as one task per block of rows.

When every chunked argument is split along its first axis only, with the
same row blocks (a tall design matrix and its targets, several long
vectors), a graph made of elementwise work, products with small operands
and reductions over the rows can run as *one task per row block*: the
per-block part of the graph (the *region*) is compiled as one nbgraph
function (C-VM) and called on each block, and its results are either rows
of an output (``"row"``) or partial results (``"part"``) that a tree of
tasks merges with the reduction's ``combine`` (a sum for a product that
contracts the rows).  Nodes after the merge (``"post"``: a mean's division,
an SGD step) and small values (``"rep"``: shapes, shared variables,
constants) are lowered as usual.  The logistic-regression gradient
``X.T @ (sigmoid(X @ w) - t) / n`` thus becomes one task per block of ``X``
plus a tree of additions, instead of one task per product and per fused
elementwise group.  What runs in each task, tile by tile, is a
:class:`~nbgraph.linkers.dask.block_program.BlockProgram`.  Partial results
merge in one task when they are small (:data:`MERGE_ONCE_BYTES`), else in a
tree.

Layouts, decided per call from the arguments' chunks and the Ops' chunk
semantics (:mod:`nbgraph.core.chunks`), never from which Op a node is:

==========  =================================================================
``row``     axis 0 is split like the row blocks of the arguments
``rowT``    a 2-d value whose axis 1 is the row axis (a transposed ``row``)
``part``    one partial result per row block; the value is their ``combine``
``rep``     small, computed on the driver (no row-split value upstream)
``post``    computed after the merge from ``part`` and ``rep`` values
==========  =================================================================

A shape entry equal to the number of rows that a fill or a view inside the
region reads becomes, in the block program, the block's (or tile's) number of
rows; everywhere else (a mean's ``1/n``) it keeps the full count.  A view is
accepted as ``row``/``rowT`` only when it maps row ``i`` of a probe block to
row ``i`` (a reversal or a shifted slice is not per-block).  Anything else
gives no plan, and the node-by-node lowering runs instead.
"""

import numpy as np

from nbgraph.core.graph import Constant
from nbgraph.linkers.dask.block_program import BlockProgram, ExitItem, sum_combine
from nbgraph.linkers.dask.lowering import LazyFull, already_reduced, is_dask
from nbgraph.linkers.dask.shortcuts import is_identity_view, shortcuts

__all__ = ["plan_row_blocks", "build_program", "lower_program",
           "ROW", "ROWT", "PART", "REP", "POST"]

ROW, ROWT, PART, REP, POST = "row", "rowT", "part", "rep", "post"

#: Partial results up to this many bytes in all are merged by one task (no tree).
MERGE_ONCE_BYTES = 1 << 20

#: Largest block (bytes) made by rechunking an argument to whole rows.
MAX_BLOCK_BYTES = 512 << 20

#: Rows of the probe block used to classify views (a prime, unlikely to be a trailing size).
PROBE_ROWS = 1031

class _Unsupported(Exception):
    """The graph is not a row-block program for these arguments."""


# -- planning ---------------------------------------------------------------
def _row_inputs(fgraph_inputs, env):
    """``(rows, row_chunks, {var})``: the chunked arguments, all with the same number
    of rows; the row blocks are those of the biggest one split along its rows,
    and the others are rechunked to them (whole along their other axes) in
    ``env``, as dask would align them for an elementwise operation."""
    split = [v for v in fgraph_inputs if is_dask(env.get(v)) and env[v].ndim >= 1
             and env[v].numblocks[0] > 1]
    if not split:
        raise _Unsupported("no argument is split along its rows")
    first = env[max(split, key=lambda v: env[v].size)]
    rows, chunks = first.shape[0], first.chunks[0]
    found = set()
    for v in fgraph_inputs:
        value = env.get(v)
        if not is_dask(value):
            continue
        if value.ndim == 0 or value.shape[0] != rows or np.isnan(value.size):
            raise _Unsupported("argument %r does not have the %d rows" % (v, rows))
        if value.chunks[0] != chunks or any(n != 1 for n in value.numblocks[1:]):
            row_bytes = value.dtype.itemsize * int(np.prod(value.shape[1:], dtype=np.int64))
            if max(chunks) * row_bytes > MAX_BLOCK_BYTES:
                raise _Unsupported("argument %r: whole rows make blocks too big" % (v,))
            env[v] = value.rechunk((chunks,) + tuple(value.shape[1:]))
        found.add(v)
    return rows, chunks, found


def _value(var, env):
    return var.data if isinstance(var, Constant) else env[var]


def _broadcasts_rows(value, ndim):
    """A small value that broadcasts along the row axis of an ndim-d result."""
    shape = np.shape(value.value if isinstance(value, LazyFull) else value)
    shape = (1,) * (ndim - len(shape)) + tuple(shape)
    return ndim == 0 or shape[0] == 1


def _as_small(value):
    if isinstance(value, LazyFull):
        return np.broadcast_to(np.asarray(value.value), value.shape).astype(value.dtype)
    return np.asarray(value)


class _Planner:
    def __init__(self, order, env, lowering, fgraph):
        self.order = order
        self.env = env
        self.lowering = lowering
        self.fgraph = fgraph
        self.rows, self.chunks, row_vars = _row_inputs(fgraph.inputs, env)
        self.layout = {v: ROW if v in row_vars else REP for v in fgraph.inputs}
        self.shapes = {v: tuple(env[v].shape) for v in row_vars}  # of row/part values
        self.region = []
        self.subst = {}  # node -> input positions reading the row count
        self.identity = set()  # views that return their row input unchanged
        self.post = []

    def layout_of(self, var):
        return REP if isinstance(var, Constant) else self.layout[var]

    def run(self):
        for position, node in enumerate(self.order):
            self.visit(position, node)

    def visit(self, position, node):
        sem = node.op.chunk_semantics(node)
        kind = None if sem is None else sem.kind
        ls = [self.layout_of(v) for v in node.inputs]
        values = [_value(v, self.env) if lay == REP else None
                  for v, lay in zip(node.inputs, ls, strict=True)]
        if all(lay == REP for lay in ls):
            return self._visit_small(node, position, kind, values)
        if any(lay in (PART, POST) for lay in ls):
            return self._visit_post(node, ls)
        rule = self._RULES.get(kind)
        if rule is None:
            raise _Unsupported("%s has no row-block rule" % node.op)
        return rule(self, node, position, sem, ls, values)

    def _set_small(self, node, outs):
        for var, out in zip(node.outputs, outs, strict=True):
            self.env[var] = out
            self.layout[var] = REP

    def _visit_small(self, node, position, kind, values):
        """No row-split input: a fill of the rows enters the region, the rest runs now."""
        if kind == "fill" and self._fills_rows(node, values):
            shape = tuple(int(np.asarray(v)) for v in values[1:])
            return self._add(node, ROW, subst=(1,), shape=shape)
        self._set_small(node, self.lowering.lower(node, position, values))
        return None

    def _visit_post(self, node, ls):
        """A node reading merged results runs after the merge."""
        if any(lay in (ROW, ROWT) for lay in ls):
            raise _Unsupported("%s mixes rows with merged results" % node.op)
        self.post.append(node)
        for var in node.outputs:
            self.layout[var] = POST

    def _visit_metadata(self, node, position, sem, ls, values):
        """On the full shapes: a mean's 1/n keeps the full count."""
        dummies = [self._dummy(v) if lay != REP else val
                   for v, lay, val in zip(node.inputs, ls, values, strict=True)]
        self._set_small(node, self.lowering.lower(node, position, dummies))

    def _visit_elementwise(self, node, position, sem, ls, values):
        """Elementwise work and reductions: rows, or partials when axis 0 is reduced."""
        reducing = sem.kind == "reduction"
        ndim = node.inputs[0].ndim if reducing else node.outputs[0].ndim
        for lay, val in zip(ls, values, strict=True):
            if lay == ROWT or (lay == REP and not _broadcasts_rows(val, ndim)):
                raise _Unsupported("%s reads a value not split like the rows" % node.op)
        shape = np.broadcast_shapes(*[self._shape(v, ndim) for v in node.inputs])
        if reducing:
            shape = tuple(s for i, s in enumerate(shape) if i not in sem.axes)
        out = PART if reducing and 0 in sem.axes else ROW
        return self._add(node, out, shape=shape)

    def _visit_dot(self, node, position, sem, ls, values):
        return self._add(node, *self._dot(node, ls))

    def _visit_view(self, node, position, sem, ls, values):
        if ls[0] != ROW or any(lay not in (REP, ROW) for lay in ls[1:]):
            raise _Unsupported("%s has no row-block rule" % node.op)
        lay, subst, shape = self._view(node, sem, values, ls)
        return self._add(node, lay, subst=subst, shape=shape)

    _RULES = {"metadata": _visit_metadata, "elementwise": _visit_elementwise,
              "reduction": _visit_elementwise, "dot": _visit_dot, "view": _visit_view}

    def _add(self, node, lay, subst=(), shape=None):
        self.region.append(node)
        if subst:
            self.subst[node] = tuple(subst)
        for var in node.outputs:
            self.layout[var] = lay
            self.shapes[var] = tuple(int(s) for s in shape)
        return None

    def _shape(self, var, ndim=None):
        """The full shape of ``var`` (padded with leading 1s to ``ndim``)."""
        if self.layout_of(var) == REP:
            value = _value(var, self.env)
            shape = value.shape if isinstance(value, LazyFull) else np.shape(value)
        else:
            shape = self.shapes[var]
        return (1,) * ((ndim or len(shape)) - len(shape)) + tuple(shape)

    def _dummy(self, var):
        """A zero-stride array of ``var``'s full shape and dtype (for metadata)."""
        return np.broadcast_to(np.zeros((), var.type.numpy_dtype), self.shapes[var])

    def _fills_rows(self, node, values):
        shape = values[1:]
        if not shape or int(np.asarray(shape[0])) != self.rows:
            return False
        return _broadcasts_rows(values[0], len(shape))

    def _dot(self, node, ls):
        a, b = node.inputs
        la, lb = ls
        sa, sb = self._shape(a), self._shape(b)
        if sa[-1] != sb[0]:
            raise _Unsupported("%s: shapes %s and %s do not match" % (node.op, sa, sb))
        shape = sa[:-1] + sb[1:]
        if la == ROW and lb == REP and a.ndim == 2:
            return ROW, (), shape
        if (la == ROW and a.ndim == 1 or la == ROWT) and lb == ROW:
            return PART, (), shape
        raise _Unsupported("%s: a product not split along the rows" % node.op)

    def _view(self, node, sem, values, ls):
        """The layout of a view of a row value, checked on probe blocks (other row
        inputs, a shape template, are given as zero-stride arrays)."""
        x = node.inputs[0]
        dtype = x.type.numpy_dtype
        if dtype.kind not in "fiu" or (dtype.kind in "iu" and
                                       np.iinfo(dtype).max < max(self.rows, PROBE_ROWS)):
            raise _Unsupported("%s: cannot probe a view of %s" % (node.op, dtype))
        trailing = self.shapes[x][1:]
        subst = tuple(i for i, (v, lay) in enumerate(zip(values, ls, strict=True))
                      if i > 0 and lay == REP and np.ndim(v) == 0
                      and int(np.asarray(v)) == self.rows)
        n = PROBE_ROWS if PROBE_ROWS != self.rows else PROBE_ROWS + 2
        full_others, probe_others = self._view_others(node, values, ls, subst, n)
        full = sem.apply(np.broadcast_to(np.zeros((), dtype), (self.rows,) + trailing),
                         *full_others)
        ids = np.arange(n, dtype=dtype).reshape((-1,) + (1,) * len(trailing))
        probe = np.asarray(sem.apply(np.broadcast_to(ids, (n,) + trailing), *probe_others))
        lay = self._probed_layout(full, probe, n)
        if lay is None:
            raise _Unsupported("%s is not a per-block view of the rows" % node.op)
        if lay == ROW and tuple(full.shape) == self.shapes[x] and \
                is_identity_view(sem, x, probe_others, n, trailing):
            self.identity.add(node)
        return lay, subst, full.shape

    def _view_others(self, node, values, ls, subst, n):
        """The view's other inputs: on the full shapes, and on a probe block of ``n`` rows."""
        full_others, probe_others = [], []
        for i, (v, lay, val) in enumerate(zip(node.inputs, ls, values, strict=True)):
            if i == 0:
                continue
            if lay == ROW:
                full_others.append(self._dummy(v))
                probe_others.append(np.broadcast_to(np.zeros((), v.type.numpy_dtype),
                                                    (n,) + self.shapes[v][1:]))
            else:
                full_others.append(_as_small(val))
                probe_others.append(np.asarray(n, dtype=np.asarray(val).dtype)
                                    if i in subst else _as_small(val))
        return full_others, probe_others

    def _probed_layout(self, full, probe, n):
        """ROW when probe row ``i`` is block row ``i``, ROWT when its column ``i`` is, else None."""
        want_rows = np.arange(n).reshape((-1,) + (1,) * (probe.ndim - 1))
        if full.shape[:1] == (self.rows,) and probe.shape[:1] == (n,) \
                and full.shape[1:] == probe.shape[1:] and np.all(probe == want_rows):
            return ROW
        if full.ndim == 2 and full.shape[1] == self.rows and probe.shape == (full.shape[0], n) \
                and np.all(probe == np.arange(n)[None, :]):
            return ROWT
        return None

    def exits(self, outputs):
        region_vars = {o for node in self.region for o in node.outputs}
        found = []
        for node in self.post:
            found += [v for v in node.inputs if v in region_vars and v not in found]
        found += [v for v in outputs if v in region_vars and v not in found]
        for v in found:
            if self.layout[v] == ROWT:
                raise _Unsupported("a transposed row value leaves the region")
        return found


def plan_row_blocks(order, env, lowering, fgraph):
    """``(region nodes, exits, layouts, substitutions)`` for a row-block program of
    these arguments, or None (the node-by-node lowering runs).  Small values
    computed while planning are left in ``env``."""
    try:
        planner = _Planner(order, env, lowering, fgraph)
        planner.run()
        exits = planner.exits(fgraph.outputs)
    except _Unsupported:
        return None
    if len(planner.region) < 2 or not any(planner.layout[v] == PART for v in exits):
        return None
    return planner, exits


def build_program(planner, exits, linker):
    """The :class:`BlockProgram` of a plan, and the outside variables it reads
    (row arguments, then small values, in the program's input order)."""
    skip = shortcuts(planner, exits)
    rows_in, small_in = _outside_inputs(planner, skip)
    new = {v: _relaxed(v.type)() for v in rows_in}
    new.update({v: v.type() for v in small_in})
    counts = _rebuild_region(planner, new, skip)
    combines = [_combine_of(v) if planner.layout[v] == PART else None for v in exits]
    program = BlockProgram([new[v] for v in rows_in] + [new[v] for v in small_in]
                           + list(counts.values()), [new[v] for v in exits], len(rows_in),
                           len(small_in), [t.numpy_dtype for t in counts], combines, linker)
    program.row_bytes = sum(v.type.numpy_dtype.itemsize * int(np.prod(
        planner.env[v].shape[1:], dtype=np.int64)) for v in rows_in)
    program.widest_row = max([_row_size(v, planner.shapes[v]) for node in planner.region
                              for v in node.outputs if planner.layout[v] == ROW], default=0)
    return program, rows_in, small_in


def _row_size(var, shape):
    return var.type.numpy_dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))


def _outside_inputs(planner, skip):
    """The variables the region reads from outside: (row values, small values);
    a node left out (``skip``: see :mod:`~nbgraph.linkers.dask.shortcuts`) reads
    only the input standing for its output."""
    inside = {o for node in planner.region for o in node.outputs}
    rows_in, small_in = [], []
    for node in planner.region:
        subst = planner.subst.get(node, ())
        kept = skip.get(node.outputs[0])
        for i, v in enumerate(node.inputs):
            if kept is not None and v is not kept:
                continue
            if v in inside or isinstance(v, Constant) or i in subst:
                continue
            target = rows_in if planner.layout_of(v) == ROW else small_in
            if v not in target:
                target.append(v)
    return rows_in, small_in


def _rebuild_region(planner, new, skip):
    """Remake the region's nodes on the program's inputs (``new`` maps the graph's
    variables to the program's and is filled in; a node whose output is in ``skip``
    becomes the input standing for it); returns ``{type: "rows" scalar}``."""
    counts = {}  # type -> the program's "rows" scalar
    for node in planner.region:
        kept = skip.get(node.outputs[0])
        if kept is not None:
            new[node.outputs[0]] = kept if isinstance(kept, Constant) else new[kept]
            continue
        subst = planner.subst.get(node, ())
        ins = []
        for i, v in enumerate(node.inputs):
            if i in subst:
                ins.append(counts.setdefault(v.type, v.type()))
            else:
                ins.append(v if isinstance(v, Constant) else new[v])
        made = node.op.make_node(*ins)
        for old, out in zip(node.outputs, made.outputs, strict=True):
            if getattr(old.type, "dtype", None) != getattr(out.type, "dtype", None):
                raise TypeError("the block program of %s computes %s where the graph has %s"
                                % (node.op, out.type, old.type))
            new[old] = out
    return counts


def _combine_of(var):
    """How partial results of ``var`` merge: its reduction's combine, or a sum (a product)."""
    sem = var.owner.op.chunk_semantics(var.owner)
    return sem.combine if sem.kind == "reduction" else sum_combine


def _relaxed(ttype):
    shape = getattr(ttype, "shape", None)
    if shape is None:
        return ttype
    return ttype.clone(shape=tuple(1 if s == 1 else None for s in shape))


def lower_program(program, rows_in, small_in, exits, planner, name):
    """The exits' dask arrays: one task per row block, then a merge tree per partial."""
    import dask.array as da

    env = planner.env
    small = [_as_small(_value(v, env)) for v in small_in]
    probe = [np.ones((min(2, planner.rows),) + tuple(env[v].shape[1:]),
                     dtype=v.type.numpy_dtype) for v in rows_in]
    with np.errstate(all="ignore"):
        shapes = [np.shape(o) for o in program(*probe, *small)]
    args = []
    for j, v in enumerate(rows_in):
        args += [env[v], (0,) + tuple(1000 * (j + 1) + a for a in range(1, env[v].ndim))]
    for value in small:
        args += [value, None]
    # no concatenate=True: it copies even one block (into memory it must fault in)
    blocks = da.blockwise(program, (0,), *args, dtype=np.float64,
                          meta=np.empty((0,), np.float64), name=name("_blocks"))
    out = {}
    for k, (v, shape) in enumerate(zip(exits, shapes, strict=True)):
        dtype = v.type.numpy_dtype
        if planner.layout[v] == PART:
            ind = tuple(range(len(shape) + 1))
            parts = da.blockwise(ExitItem(k, True), ind, blocks, (0,), dtype=dtype,
                                 new_axes={i + 1: s for i, s in enumerate(shape)},
                                 adjust_chunks={0: 1}, meta=np.empty((0,) * len(ind), dtype),
                                 name=name("_part%d" % k))
            combine = program.combines[k]
            small = parts.size * dtype.itemsize <= MERGE_ONCE_BYTES  # one task merges them
            out[v] = da.reduction(parts, already_reduced, combine, combine=combine, axis=0,
                                  keepdims=False, dtype=dtype,
                                  split_every=max(2, parts.numblocks[0]) if small else None,
                                  meta=np.empty((0,) * len(shape), dtype),
                                  name=name("_merge%d" % k))
        else:
            ind = tuple(range(len(shape)))
            out[v] = da.blockwise(ExitItem(k, False), ind, blocks, (0,), dtype=dtype,
                                  new_axes={i: s for i, s in enumerate(shape) if i},
                                  meta=np.empty((0,) * len(ind), dtype),
                                  name=name("_rows%d" % k))
    return out
