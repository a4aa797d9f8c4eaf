"""Compiled C kernels called on chunks, shipped to workers by content hash.

A :class:`ChunkKernel` runs one node's C kernel on NumPy blocks.  The node it
compiles is a *chunk node*: a copy of the graph's node detached from the
graph, whose input types keep only their size-1 static dimensions (a kernel
compiled for ``(None, 10)`` must accept a ``(n, 5)`` block).  All the chunk
nodes of one function go into one C module (:func:`compile_chunk_kernels`).

Pickling a ChunkKernel never pickles a loaded library: it carries the
module's cache key, the kernel's index in it and the detached node.  A
process that unpickles one (a ``distributed`` worker) loads the module from
its own nbgraph disk cache by that key; when the cache does not have it (a
worker on another machine or with another cache directory), it builds a
module of that one node, once per process.  :func:`kernel_stats` counts
both, per process.

Calls are thread-safe: each thread gets its own call object (the error
buffer of a call is not shared).  cffi releases the GIL while the kernel
runs, so a threaded scheduler runs kernels in parallel.
"""

import os
import threading

import numpy as np

from nbgraph.core.graph import Constant
from nbgraph.linkers.dask.reuse import pooled_prepare, worker_pool

__all__ = ["ChunkKernel", "chunk_node", "compile_chunk_kernels", "kernel_stats",
           "serial_in_workers"]

_STATS = {"loaded": 0, "built": 0}
_lock = threading.Lock()
_modules = {}  # (key, index) -> (module, knode, extra), per process
_local = threading.local()


_serial = {"checked": False}


def serial_in_workers() -> bool:
    """Inside a ``distributed`` worker process whose environment does not set
    ``NBGRAPH_NUM_THREADS``, make nbgraph's C loops run on the calling thread
    only (the worker already runs one task per thread; a pool of its own per
    process would compete with the other workers for the cores).  Checked
    once per process; True when it switched."""
    if _serial["checked"]:
        return False
    _serial["checked"] = True
    if os.environ.get("NBGRAPH_NUM_THREADS", "").strip():
        return False
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    from nbgraph.linkers.c.threads import set_num_threads

    try:
        set_num_threads(1)
    except RuntimeError:  # pragma: no cover - a parallel loop is running right now
        _serial["checked"] = False
        return False
    return True


def kernel_stats() -> dict:
    """This process's counts: modules ``loaded`` from the disk cache by key, and
    one-node modules ``built`` because the cache lacked them."""
    return dict(_STATS)


def _relaxed(ttype):
    shape = getattr(ttype, "shape", None)
    if shape is None:
        return ttype
    return ttype.clone(shape=tuple(1 if s == 1 else None for s in shape))


def is_small_constant(var):
    """A constant the chunk node keeps (its value is the same for every block)."""
    return isinstance(var, Constant) and all(s == 1 for s in np.shape(var.data))


def chunk_node(node):
    """``node`` detached from its graph, with input types relaxed for blocks.

    Constants whose dimensions are all 1 stay constants (the kernel may
    specialise on them); other inputs become fresh Variables."""
    inputs = [var if is_small_constant(var) else _relaxed(var.type)()
              for var in node.inputs]
    new = node.op.make_node(*inputs)
    for old, out in zip(node.outputs, new.outputs, strict=True):
        if getattr(old.type, "dtype", None) != getattr(out.type, "dtype", None):
            raise TypeError("the chunk node of %s computes %s where the graph has %s" % (
                node.op, out.type, old.type))
    return new


def compile_chunk_kernels(nodes):
    """``{node: ChunkKernel}`` for chunk nodes ``nodes``, all in one C module."""
    from nbgraph.linkers.c.linker import compile_nodes

    nodes = list(nodes)
    if not nodes:
        return {}
    module, kernels, plan = compile_nodes(nodes)
    out = {}
    for node in nodes:
        index = plan.index[nodes.index(node)]
        view = plan.views[node]
        with _lock:
            _modules.setdefault((plan.key, index),
                                (module, module.kernels[index], view.knode, view.extra))
        out[node] = ChunkKernel(plan.key, index, node)
    return out


class ChunkKernel:
    """A picklable reference to one compiled kernel: ``kernel(*blocks) -> outputs``.

    ``key`` is the C module's cache key, ``index`` the kernel's position in
    it, ``node`` the detached chunk node (what a process lacking the module
    compiles instead).  ``keepdims_axes``: see :meth:`reducing`.
    """

    __slots__ = ("key", "index", "node", "keepdims_axes", "select")

    def __init__(self, key, index, node, keepdims_axes=None, select=None):
        self.key = key
        self.index = index
        self.node = node
        self.keepdims_axes = keepdims_axes
        self.select = select

    def reducing(self, axes):
        """This kernel returning its single output with ``axes`` kept as size 1."""
        return ChunkKernel(self.key, self.index, self.node, tuple(axes), self.select)

    def output(self, i):
        """This kernel returning only output ``i``."""
        return ChunkKernel(self.key, self.index, self.node, self.keepdims_axes, i)

    def __getstate__(self):
        return (self.key, self.index, self.node, self.keepdims_axes, self.select)

    def __setstate__(self, state):
        self.key, self.index, self.node, self.keepdims_axes, self.select = state

    def __dask_tokenize__(self):
        return ("nbgraph-kernel", self.key, self.index, self.keepdims_axes, self.select)

    def __repr__(self):
        return "<ChunkKernel %s#%d %s>" % (self.key[:10], self.index, self.node.op)

    def _call(self):
        calls = getattr(_local, "calls", None)
        if calls is None:
            calls = _local.calls = {}
        ident = (self.key, self.index)
        call = calls.get(ident)
        if call is None:
            call = calls[ident] = _make_call(self.key, self.index, self.node)
        return call

    def __call__(self, *blocks):
        run, extra = self._call()
        values = [var.data if is_small_constant(var) else np.asarray(b)
                  for var, b in zip(self.node.inputs, fill_inputs(self.node, blocks), strict=True)]
        outs = run(values + extra)
        if self.keepdims_axes is not None:
            out = outs[0]
            return out.reshape(kept_shape(out.shape, self.keepdims_axes))
        if self.select is not None:
            return outs[self.select]
        return outs[0] if len(outs) == 1 else tuple(outs)


def fill_inputs(node, blocks):
    """Blocks for every input (constants kept by the chunk node take no block)."""
    blocks = iter(blocks)
    return [None if is_small_constant(var) else next(blocks) for var in node.inputs]


def kept_shape(shape, axes):
    """``shape`` with a size-1 dimension put back at each of ``axes`` (a reduction's keepdims)."""
    shape = list(shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return tuple(shape)


def _make_call(key, index, node):
    """``(run(values) -> outputs, extra values)`` for kernel ``index`` of module ``key``."""
    from nbgraph.linkers.c.runtime import NodeCall

    serial_in_workers()
    with _lock:
        found = _modules.get((key, index))
    if found is None:
        found = _load(key, index, node)
    module, kernel, knode, extra = found
    call = NodeCall(knode, kernel, module)
    pool = worker_pool()
    if pool is not None:  # a distributed worker: big outputs reuse released blocks
        call.prepare = pooled_prepare(call.prepare, pool)
    return call, list(extra)


def _load(key, index, node):
    """Kernel ``index`` of module ``key`` from this process's disk cache, else a
    module of ``node`` alone, built here (once per process)."""
    from nbgraph.linkers.c.cache import get_cache
    from nbgraph.linkers.c.compiler import probe
    from nbgraph.linkers.c.kernel_nodes import kernel_view
    from nbgraph.linkers.c.linker import compile_nodes

    cache = get_cache()
    module = cache.lookup(None, probe(cache), key)
    if module is not None:
        view = kernel_view(node)
        found = (module, module.kernels[index], view.knode, view.extra)
        _STATS["loaded"] += 1
    else:
        module, kernels, plan = compile_nodes([node])
        view = plan.views[node]
        found = (module, kernels[0], view.knode, view.extra)
        _STATS["built"] += 1
    with _lock:
        return _modules.setdefault((key, index), found)
