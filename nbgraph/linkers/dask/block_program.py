"""The program a row-block plan runs in each task (see :mod:`~nbgraph.linkers.dask.blocks`):
the per-block region of a graph, compiled once per worker thread, called on
one block of rows at a time.

Inside a task whose region has only partial results, the block is cut into
tiles of at most :data:`TILE_BYTES` of input rows, so ``X @ w`` and
``X.T @ r`` read a tile while it is still in the cache (X is read from
memory once per block, not twice), and small enough that every row-sized
intermediate fits the buffer the C-VM keeps between calls
(:func:`keep_bytes`): then no tile allocates (a ``distributed`` worker's
malloc returns freed memory above 64 KB to the system, and a tile that
allocated 95 KB vectors faulted them in anew each call: 23-27 ms per 64 MB
block of the logistic gradient instead of 13 ms).
"""

import threading
import uuid

import numpy as np

__all__ = ["BlockProgram", "ExitItem", "program_stats", "sum_combine", "keep_bytes",
           "TILE_BYTES", "MIN_TILE_ROWS"]

#: Most bytes of row inputs per tile inside a block whose region only has partial results.
TILE_BYTES = 1 << 20

#: Fewest rows per tile that the intermediates' size may ask for (a call costs ~20 us).
MIN_TILE_ROWS = 1024


def keep_bytes() -> int:
    """Largest intermediate the C-VM keeps for the next call (no allocation then)."""
    try:
        from nbgraph.linkers.c.runtime import POINTER_CACHE_BYTES
    except ImportError:  # pragma: no cover - no C layer
        return 1 << 16
    return POINTER_CACHE_BYTES



_lock = threading.Lock()
_local = threading.local()
_STATS = {"compiled": 0, "calls": 0}


def program_stats() -> dict:
    """This process's counts: block programs ``compiled`` (once per program and
    thread) and ``calls`` (tasks run)."""
    return dict(_STATS)


def sum_combine(partials, axis=None, keepdims=False):
    """Partial products merged: their sum (in the partials' dtype)."""
    return np.sum(partials, axis=axis, keepdims=keepdims, dtype=partials.dtype)


class BlockProgram:
    """The region of a graph compiled as one function of a row block: a picklable
    task callable ``program(*row_blocks, *small_values) -> tuple of results``.

    ``inputs``: the program's variables (row blocks, then small values, then
    one "rows" scalar per shape dtype); ``outputs``: the region's exits;
    ``combines``: per exit, None (rows of an output) or the combine merging
    partial results.  A process compiles it once per thread (``linker``:
    "cvm", or "py" without a compiler) and keeps it by ``token``.
    """

    def __init__(self, inputs, outputs, n_rows_in, n_small, rows_dtypes, combines, linker):
        self.token = uuid.uuid4().hex
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.n_rows_in = n_rows_in
        self.n_small = n_small
        self.rows_dtypes = list(rows_dtypes)
        self.combines = list(combines)
        self.linker = linker
        self.row_bytes = None  # set by the plan: bytes of row inputs per row
        self.widest_row = None  # and of the widest row-split value inside it

    def __dask_tokenize__(self):
        return ("nbgraph-block-program", self.token)

    def __repr__(self):
        return "<BlockProgram %s: %d inputs, %d exits>" % (
            self.token[:8], len(self.inputs), len(self.outputs))

    def function(self):
        """This thread's compiled function of the program."""
        cache = getattr(_local, "programs", None)
        if cache is None:
            cache = _local.programs = {}
        fn = cache.get(self.token)
        if fn is None:
            from nbgraph.linkers.dask.kernels import serial_in_workers
            from nbgraph.linkers.function import function

            serial_in_workers()
            with _lock:  # compiling is not reentrant across threads
                fn = function(self.inputs, self.outputs, linker=self.linker,
                              on_unused_input="ignore")
                _wait_compiled(fn)
                _STATS["compiled"] += 1
            cache[self.token] = fn
        return fn

    def _run(self, fn, blocks, small, rows):
        counts = [np.asarray(rows, dtype=d) for d in self.rows_dtypes]
        outs = fn(*blocks, *small, *counts)
        return list(outs) if isinstance(outs, (list, tuple)) else [outs]

    def __call__(self, *args):
        blocks = [np.asarray(_one_block(b)) for b in args[:self.n_rows_in]]
        small = list(args[self.n_rows_in:])
        fn = self.function()
        _STATS["calls"] += 1
        rows = blocks[0].shape[0]
        tile = self.tile_rows()
        if tile is None or tile >= rows:
            return tuple(self._run(fn, blocks, small, rows))
        partials = [[] for _ in self.outputs]
        for start in range(0, rows, tile):
            stop = min(rows, start + tile)
            outs = self._run(fn, [b[start:stop] for b in blocks], small, stop - start)
            for acc, out in zip(partials, outs, strict=True):
                acc.append(np.asarray(out))  # a Function never overwrites returned outputs
        return tuple(combine(np.stack(acc), axis=0, keepdims=False)
                     for acc, combine in zip(partials, self.combines, strict=True))

    def tile_rows(self):
        """Rows per tile (None: the block in one call, when an exit is rows of an output):
        at most :data:`TILE_BYTES` of row inputs, and, down to
        :data:`MIN_TILE_ROWS`, intermediates the C-VM keeps between calls."""
        if any(c is None for c in self.combines) or not self.row_bytes:
            return None
        rows = TILE_BYTES // self.row_bytes
        if self.widest_row:
            rows = min(rows, max(MIN_TILE_ROWS, keep_bytes() // self.widest_row))
        return max(64, rows)


def _one_block(value):
    """The block of a row argument, whole along its other axes: the task gets it
    in nested one-item lists (``concatenate=True`` would copy it)."""
    while isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError("a row-block program got %d blocks along an axis after the "
                             "rows; its arguments must be whole along those axes" % len(value))
        value = value[0]
    return value


def _wait_compiled(fn):
    """Wait for ``fn``'s C module when it compiles in the background: until then
    its nodes would run ``perform`` (NumPy's loops, other roundings and speed)."""
    wait = getattr(getattr(fn, "program", None), "wait_compiled", None)
    if wait is not None:
        wait()


class ExitItem:
    """Task callable: exit ``k`` of a program's result, a partial with a leading axis."""

    def __init__(self, k, leading):
        self.k = k
        self.leading = leading

    def __call__(self, result):
        out = np.asarray(result[self.k])
        return out[None] if self.leading else out

    def __dask_tokenize__(self):
        return ("nbgraph-block-item", self.k, self.leading)
