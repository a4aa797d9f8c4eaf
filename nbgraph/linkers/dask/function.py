"""DaskLinker and DaskFunction: ``function(..., linker="dask")``.

>>> import numpy as np, nbgraph, nbgraph.tensor as nt
>>> x = nt.dvector("x")
>>> f = nbgraph.function([x], (x * 2.0).sum(), linker=DaskLinker(chunks=3, scheduler="sync"))
>>> out = f(np.arange(10.0))          # a lazy dask array
>>> float(out.compute())
90.0
"""

import itertools
import threading
import uuid
from typing import NamedTuple

import numpy as np

from nbgraph.core.graph import Constant
from nbgraph.linkers.dask.kernels import ChunkKernel, chunk_node, compile_chunk_kernels
from nbgraph.linkers.dask.lowering import SMALL_BYTES, LazyFull, Lowering, is_dask

__all__ = ["DaskLinker", "DaskFunction", "RowBlockPlan", "split_multi_output_nodes",
           "REWRITE_EXCLUDE"]

#: Rewrite stages left out for this linker: a block may be read by several
#: tasks, so no kernel may overwrite its input.
REWRITE_EXCLUDE = ("inplace",)

_SCHEDULERS = (None, "sync", "synchronous", "single-threaded", "threads", "threading",
               "processes", "multiprocessing")


class DaskLinker:
    """Options of the Dask linker (``function(..., linker=DaskLinker(...))``;
    ``linker="dask"`` is ``DaskLinker()``).

    ``chunks``: how NumPy arguments are split (dask's ``chunks=``; default
    "auto"); dask and zarr arguments keep theirs.  ``compute``: return NumPy
    arrays (one ``dask.compute`` per call) instead of lazy dask arrays.
    ``scheduler``: dask's ``scheduler=`` ("sync", "threads", "processes", a
    ``distributed.Client``; None: dask's default, an active Client included).
    ``progress``: show dask's progress bar while computing.  ``row_blocks``:
    run a graph whose arguments are split along their rows only as one task
    per row block where it can (:mod:`~nbgraph.linkers.dask.blocks`).
    """

    name = "dask"
    links_functions = True

    def __init__(self, chunks="auto", compute: bool = False, scheduler=None,
                 progress: bool = False, row_blocks: bool = True):
        if isinstance(scheduler, str) and scheduler not in _SCHEDULERS:
            raise ValueError("DaskLinker(scheduler=%r): use one of %s or a distributed "
                             "Client" % (scheduler, ", ".join(s for s in _SCHEDULERS if s)))
        self.chunks = chunks
        self.compute = bool(compute)
        self.scheduler = scheduler
        self.progress = bool(progress)
        self.row_blocks = bool(row_blocks)

    def _key(self):
        chunks = self.chunks
        if isinstance(chunks, (list, tuple)):
            chunks = tuple(tuple(c) if isinstance(c, (list, tuple)) else c for c in chunks)
        sched = self.scheduler if isinstance(self.scheduler, (str, type(None))) \
            else id(self.scheduler)
        return (chunks, self.compute, sched, self.progress, self.row_blocks)

    def __eq__(self, other):
        return isinstance(other, DaskLinker) and self._key() == other._key()

    def __hash__(self):
        return hash((DaskLinker, self._key()))

    def __repr__(self):
        return "DaskLinker(chunks=%r, compute=%r, scheduler=%r)" % (
            self.chunks, self.compute, self.scheduler)


def split_multi_output_nodes(fgraph):
    """Replace each multi-output elementwise node whose outputs read different input
    sets by one node per set, so no block of one output waits for inputs only
    another needs (e.g. a global reduction).  Returns the number of splits."""
    count = 0
    for node in list(fgraph.toposort()):
        if len(node.outputs) < 2 or node not in fgraph.apply_nodes:
            continue
        sem = node.op.chunk_semantics(node)
        if sem is None or sem.kind != "elementwise" or sem.subset is None:
            continue
        groups = {}
        for i in range(len(node.outputs)):
            single = sem.subset(node, [i])
            if single is None:
                groups = {}
                break
            groups.setdefault(tuple(id(v) for v in single.inputs), []).append(i)
        if len(groups) < 2:
            continue
        pairs = []
        for indices in groups.values():
            new = sem.subset(node, indices)
            pairs += [(node.outputs[i], out)
                      for i, out in zip(indices, new.outputs, strict=True)]
        fgraph.replace_all(pairs, reason="dask: split outputs reading different inputs")
        count += 1
    return count


class _PerformKernel:
    """Runs a chunk node's ``perform`` on blocks (an Op without C code)."""

    def __init__(self, node, keepdims_axes=None, select=None):
        self.node = node
        self.keepdims_axes = keepdims_axes
        self.select = select

    def reducing(self, axes):
        return _PerformKernel(self.node, tuple(axes), self.select)

    def output(self, i):
        return _PerformKernel(self.node, self.keepdims_axes, i)

    def __dask_tokenize__(self):
        return ("nbgraph-perform", str(self.node.op), self.keepdims_axes, self.select)

    def __call__(self, *blocks):
        from nbgraph.core.op import run_node
        from nbgraph.linkers.dask.kernels import fill_inputs, is_small_constant, kept_shape

        values = [var.data if is_small_constant(var) else b
                  for var, b in zip(self.node.inputs, fill_inputs(self.node, blocks), strict=True)]
        outs = run_node(self.node, values, check=False)
        if self.keepdims_axes is not None:
            return outs[0].reshape(kept_shape(outs[0].shape, self.keepdims_axes))
        if self.select is not None:
            return outs[self.select]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _chunk_kernels(nodes):
    """``{graph node: ChunkKernel or _PerformKernel}`` for the per-block nodes."""
    from nbgraph.linkers.c import compiler_works
    from nbgraph.linkers.c.linker import c_capable

    chunk_nodes = {node: chunk_node(node) for node in nodes}
    use_c = compiler_works()[0]
    compiled = [cn for cn in chunk_nodes.values() if use_c and c_capable(cn)[0]]
    kernels = compile_chunk_kernels(compiled)
    return {node: kernels.get(cn) or _PerformKernel(cn) for node, cn in chunk_nodes.items()}


class DaskFunction:
    """A graph lowered onto ``dask.array`` at each call (see :mod:`nbgraph.linkers.dask`).

    Calling it with one value per input (NumPy, dask or zarr arrays) returns
    dask arrays (lazy) or, with ``compute=True`` (the linker's or the call's),
    NumPy arrays.  Updates of shared variables are computed with the outputs
    in one ``dask.compute`` and written after it (a call with updates always
    computes).  ``dask_graph`` is the task graph of the last call;
    ``lower(*args)`` returns the lazy outputs without computing anything.
    ``last_plan`` is the :class:`RowBlockPlan` of the last call (None when it
    was lowered node by node).
    """

    def __init__(self, fgraph, inputs, outputs, single, shared_inputs, updates, linker,
                 name=None, input_specs=None):
        self.fgraph = fgraph
        self.inputs = inputs
        self.outputs = outputs
        self.single = single
        self.shared_inputs = shared_inputs
        self.updates = updates
        self.dask_linker = linker if isinstance(linker, DaskLinker) else DaskLinker()
        self.linker = "dask"
        self.name = name
        self.input_specs = input_specs
        self.splits = split_multi_output_nodes(fgraph)
        self.order = fgraph.toposort()
        per_block = [node for node in self.order
                     if _kind(node) in ("elementwise", "reduction")]
        self.kernels = _chunk_kernels(per_block)
        self.program = _Program(self.order, [_run_kind(node, self.kernels)
                                             for node in self.order])
        self._last = None
        self._programs = {}  # row-block programs by plan
        self.last_plan = None
        self._calls = itertools.count()
        self._uid = uuid.uuid4().hex
        self._lock = threading.Lock()

    # -- arguments --------------------------------------------------------
    def _argument(self, i, var, value):
        """``value`` for input ``var`` as a dask array, checked from its metadata."""
        import dask.array as da

        ttype = var.type
        what = "argument %d (%s) of the dask function" % (i, var.name or "unnamed")
        if not is_dask(value) and hasattr(value, "chunks") and hasattr(value, "dtype") \
                and not isinstance(value, np.ndarray):  # a zarr (or h5py) array
            value = da.from_array(value, chunks=value.chunks)
        if is_dask(value):
            dtype = getattr(value, "dtype", None)
            if dtype != ttype.numpy_dtype:
                raise TypeError("%s: expected dtype %s, got a dask array of dtype %s (cast it "
                                "with .astype)" % (what, ttype.numpy_dtype, dtype))
            if value.ndim != ttype.ndim:
                raise TypeError("%s: expected %d dimensions, got a dask array of shape %s"
                                % (what, ttype.ndim, value.shape))
            for s, n in zip(ttype.shape, value.shape, strict=True):
                if s is not None and not np.isnan(n) and s != n:
                    raise ValueError("%s: expected shape %s, got a dask array of shape %s"
                                     % (what, ttype.shape, value.shape))
            return value
        try:
            arr = ttype.filter(value)
        except (TypeError, ValueError) as exc:
            raise TypeError("%s: expected %r: %s" % (what, ttype, exc)) from None
        if arr.ndim == 0:
            return arr
        return da.from_array(arr, chunks=chunks_for(self.dask_linker.chunks, arr.shape),
                             name=False)

    def _bind(self, args, kwargs):
        args = list(args)
        names = [getattr(spec, "name", None) for spec in (self.input_specs or [])]
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError("the dask function has no input named %r" % (key,))
            pos = names.index(key)
            while len(args) <= pos:
                args.append(None)
            args[pos] = value
        if len(args) != len(self.inputs):
            raise TypeError("the dask function expects %d arguments (%s), got %d" % (
                len(self.inputs), ", ".join(repr(v) for v in self.inputs), len(args)))
        return args

    # -- lowering and calling ----------------------------------------------
    def lower(self, *args, **kwargs):
        """The lazy outputs and update values for these arguments: two lists."""
        args = self._bind(args, kwargs)
        graph_ins = self.fgraph.inputs
        env = {}
        # (graph_ins continues with the shared variables: shorter args win)
        for i, (var, value) in enumerate(zip(graph_ins, args, strict=False)):
            env[var] = self._argument(i, var, value)
        for var, shared in zip(graph_ins[len(args):], self.shared_inputs, strict=True):
            value = shared.container[0]
            env[var] = value if not isinstance(value, np.ndarray) \
                or value.nbytes <= SMALL_BYTES else self._argument(-1, var, value)
        salt = (self._uid, next(self._calls))
        lowering = Lowering(self.kernels, self.dask_linker.chunks, salt, self._gather)
        skip = self._row_blocks(env, lowering, salt) if self.dask_linker.row_blocks else ()
        for position, node in enumerate(self.order):
            if node in skip or all(o in env for o in node.outputs):
                continue  # run per row block, or a small value computed while planning
            values = [v.data if isinstance(v, Constant) else env[v] for v in node.inputs]
            lowered = lowering.lower(node, position, values)
            for var, value in zip(node.outputs, lowered, strict=True):
                env[var] = value
        n_out = len(self.outputs)
        results = [self._final(v, env, lowering) for v in self.fgraph.outputs]
        self._last = [r for r in results if is_dask(r)]
        return results[:n_out], results[n_out:]

    def _row_blocks(self, env, lowering, salt):
        """Lower the row-block region of the graph, if these arguments allow one
        (:mod:`~nbgraph.linkers.dask.blocks`): its exits go into ``env``; returns
        the region's nodes (empty without a plan)."""
        from dask.base import tokenize

        from nbgraph.linkers.dask import blocks

        found = blocks.plan_row_blocks(self.order, env, lowering, self.fgraph)
        if found is None:
            self.last_plan = None
            return set()
        planner, exits = found
        positions = {node: k for k, node in enumerate(self.order)}
        key = (tuple((positions[n], planner.subst.get(n, ())) for n in planner.region),
               tuple(self.fgraph.inputs.index(v) if v in self.fgraph.inputs
                     else -1 for v in planner.layout if planner.layout[v] == blocks.ROW),
               tuple(id(v) for v in exits))
        built = self._programs.get(key)
        if built is None:
            built = self._programs[key] = blocks.build_program(
                planner, exits, self._program_linker())
        program, rows_in, small_in = built
        lowered = blocks.lower_program(
            program, rows_in, small_in, exits, planner,
            lambda tag: "nbgraph_blocks%s-%s" % (tag, tokenize(salt, tag)))
        env.update(lowered)
        self.last_plan = RowBlockPlan(tuple(planner.region), tuple(exits),
                                      tuple(planner.layout[v] for v in exits))
        return set(planner.region)

    @staticmethod
    def _program_linker():
        from nbgraph.linkers.c import compiler_works

        return "cvm" if compiler_works()[0] else "py"

    def _final(self, var, env, lowering):
        value = var.data if isinstance(var, Constant) else env[var]
        if isinstance(value, LazyFull):
            return lowering.as_dask(value)
        return value

    def _gather(self, values):
        return self._compute(values)

    def _compute(self, values):
        import dask

        kwargs = {}
        if self.dask_linker.scheduler is not None:
            sched = self.dask_linker.scheduler
            kwargs["scheduler"] = sched
        if self.dask_linker.progress:
            from nbgraph.linkers.dask.progress import compute_with_progress

            return compute_with_progress(values, self.dask_linker.scheduler)
        return list(dask.compute(*values, **kwargs))

    def __call__(self, *args, compute=None, **kwargs):
        outs, updates = self.lower(*args, **kwargs)
        compute = self.dask_linker.compute if compute is None else compute
        if compute or updates:
            flat = outs + updates
            lazy = [k for k, v in enumerate(flat) if is_dask(v)]
            done = self._compute([flat[k] for k in lazy])
            for k, value in zip(lazy, done, strict=True):
                flat[k] = value
            flat = [np.asarray(v, dtype=var.type.numpy_dtype)
                    for v, var in zip(flat, self.fgraph.outputs, strict=True)]
            outs, updates = flat[:len(outs)], flat[len(outs):]
            for (target, _), value in zip(self.updates, updates, strict=True):
                target.container[0] = target.type.filter(value)
            if not compute:
                outs = [self._lazy(v) for v in outs]
        else:
            outs = [self._lazy(v) for v in outs]
        return outs[0] if self.single else outs

    def _lazy(self, value):
        import dask.array as da

        return value if is_dask(value) else da.from_array(np.asarray(value), name=False)

    @property
    def dask_graph(self):
        """The task graph (a dask HighLevelGraph) of the last call's outputs, or None
        before the first call (the graph depends on the arguments' chunks)."""
        if not self._last:
            return None
        from dask.highlevelgraph import HighLevelGraph

        graphs = [v.__dask_graph__() for v in self._last]
        return graphs[0] if len(graphs) == 1 else HighLevelGraph.merge(*graphs)

    def dprint(self, file=None, print_type=False, **kwargs):
        """dprint of the rewritten graph."""
        from nbgraph.display.text import dprint

        return dprint(self.fgraph, file=file, print_type=print_type, **kwargs)

    @property
    def profile(self):
        """Profiling is not collected by the Dask linker (use dask's diagnostics)."""
        return None

    def __repr__(self):
        n = len(self.fgraph.apply_nodes)
        chunked = self.program.kinds.count("chunked")
        return "<DaskFunction%s (%s), linker=dask, %d node%s, %d chunked kernel%s>" % (
            " " + self.name if self.name else "", ", ".join(repr(v) for v in self.inputs),
            n, "" if n == 1 else "s", chunked, "" if chunked == 1 else "s")


class RowBlockPlan(NamedTuple):
    """How the last call ran per row block (``DaskFunction.last_plan``): the nodes
    run inside the block program, the values leaving it, and their layouts
    ("row": rows of a value, "part": merged partial results)."""

    region: tuple
    exits: tuple
    layouts: tuple


class _Program:
    """``nodes`` and ``kinds`` ("chunked": a C kernel per block, "dask": a dask.array
    operation, "driver": run on the driver), as diagrams read them."""

    def __init__(self, nodes, kinds):
        self.nodes = list(nodes)
        self.kinds = list(kinds)


def _kind(node):
    sem = node.op.chunk_semantics(node)
    return None if sem is None else sem.kind


def _run_kind(node, kernels):
    kind = _kind(node)
    if isinstance(kernels.get(node), ChunkKernel):
        return "chunked"
    return "driver" if kind in (None, "metadata") else "dask"


def chunks_for(chunks, shape):
    """The linker's ``chunks`` for an argument of ``shape``.  A per-dimension spec
    is aligned on the trailing dimensions, as NumPy broadcasting aligns shapes
    (missing leading entries: "auto"), and gives size-1 dimensions one block."""
    if not isinstance(chunks, (list, tuple)):
        return chunks
    chunks = tuple(chunks)
    if len(chunks) < len(shape):
        chunks = ("auto",) * (len(shape) - len(chunks)) + chunks
    chunks = chunks[len(chunks) - len(shape):]
    out = []
    for entry, n in zip(chunks, shape, strict=True):
        if n == 1:
            out.append(1)
        elif isinstance(entry, (list, tuple)) and sum(entry) != n:
            raise ValueError("DaskLinker(chunks=%r): blocks %r do not add up to the "
                             "argument's size %d (shape %s)" % (chunks, entry, n, shape))
        else:
            out.append(entry)
    return tuple(out)
