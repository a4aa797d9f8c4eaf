"""Output blocks reused inside a ``distributed`` worker.

A chunk kernel's output is a fresh block (64 MB for the bench's 8e6 float64
elements).  Its pages are faulted in when the kernel first writes them, and
on a virtual machine that hands freed memory back to its host (free page
reporting: a freed 2 MB block is returned about two seconds later), a block
of pages the host has taken back costs far more to fault in than the kernel
takes to compute it: 50-135 ms of CPU per 64 MB block on this machine
against 25 ms for ``x + y*2.0 - z`` in memory already backed (measured
with ``time.process_time`` on one thread; NumPy's own allocation pays the
same).  A worker that computes blocks of the same size again (the next step
of an iterative algorithm, the next call of the same function) would fault
in a new set each time while the previous one was just released.

:class:`BlockPool` keeps the memory of released output blocks for the next
block of the same size:

* only blocks of at least :data:`MIN_BYTES` go through it;
* a block is free when nothing but the pool refers to it: its reference
  count (an ndarray view, a memoryview, a cffi buffer or dask's store all
  hold one), so a block is never handed out while anything can still read it;
* at most ``cap`` bytes of free blocks are kept (1/8 of the worker's memory
  limit, see :func:`worker_pool`), none longer than :data:`KEEP_SECONDS`,
  and none while the worker's memory is within :data:`MARGIN` of the first
  of dask's thresholds it uses (target, spill, pause fractions of its
  limit): the pool never makes dask spill, pause or restart a worker;
  a daemon thread checks once a second while the pool has blocks, so a
  worker that stops computing returns them to the system.

The pool is used by tasks that run in a ``distributed`` worker (a worker of
a ``processes=False`` cluster is one too, inside the program that made it;
dask's local threaded and synchronous schedulers have none), unless the
environment sets ``NBGRAPH_DASK_BLOCK_POOL=0`` when the worker's first
kernel runs.  ``BlockPool.stats`` counts blocks ``made`` and ``reused``.
"""

import os
import sys
import threading
import time

import numpy as np

__all__ = ["BlockPool", "worker_pool", "MIN_BYTES", "KEEP_SECONDS", "FRACTION"]

#: Smallest output block (bytes) that goes through the pool.
MIN_BYTES = 8 << 20

#: Longest time (seconds) a free block is kept.
KEEP_SECONDS = 10.0

#: Share of the worker's memory limit that free blocks may hold.
FRACTION = 1 / 8

#: Free bytes kept when the worker has no memory limit.
DEFAULT_CAP = 512 << 20

#: Free blocks are dropped when the worker's memory is above its first dask
#: threshold (a fraction of its limit) minus this fraction.
MARGIN = 0.05


def _free(entry) -> bool:
    # the references: the entry's slot and getrefcount's argument
    return sys.getrefcount(entry[0]) == 2


class BlockPool:
    """Reusable output blocks of one process (see the module docstring)."""

    def __init__(self, cap: int, clock=time.monotonic, pressure=None):
        self.cap = int(cap)
        self.clock = clock
        self.pressure = pressure  # () -> True when no free block may be kept
        self.stats = {"made": 0, "reused": 0}
        self._lock = threading.Lock()
        self._entries = []  # [raw uint8 block, time it was first seen free, or None]
        self._thread = None

    def empty(self, shape, dtype) -> np.ndarray:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes < MIN_BYTES:
            return np.empty(shape, dtype)
        with self._lock:
            self._trim()
            raw = None
            for entry in self._entries:
                if entry[0].nbytes == nbytes and _free(entry):
                    raw = entry[0]
                    entry[1] = None
                    self.stats["reused"] += 1
                    break
            if raw is None:
                raw = np.empty(nbytes, np.uint8)
                self._entries.append([raw, None])
                self.stats["made"] += 1
            self._watch()
        return raw.view(dtype).reshape(shape)

    def free_bytes(self) -> int:
        """Bytes of the blocks nothing but the pool refers to."""
        with self._lock:
            return sum(e[0].nbytes for e in self._entries if _free(e))

    def held(self) -> int:
        """Number of blocks the pool knows (in use or free)."""
        return len(self._entries)

    def _trim(self):
        """Forget free blocks kept too long, and the oldest beyond the cap."""
        now = self.clock()
        free = []
        for entry in self._entries:
            if _free(entry):
                if entry[1] is None:
                    entry[1] = now
                free.append(entry)
            else:
                entry[1] = None
        if free and self.pressure is not None and self.pressure():
            drop = {id(e) for e in free}
        else:
            drop = {id(e) for e in free if now - e[1] > KEEP_SECONDS}
        kept = 0
        for entry in sorted(free, key=lambda e: e[1], reverse=True):  # newest first
            if id(entry) in drop:
                continue
            kept += entry[0].nbytes
            if kept > self.cap:
                drop.add(id(entry))
        if drop:
            self._entries = [e for e in self._entries if id(e) not in drop]

    def trim(self):
        """Apply the age and size bounds now."""
        with self._lock:
            self._trim()

    def _watch(self):
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="nbgraph-block-pool",
                                            daemon=True)
            self._thread.start()

    def _run(self):
        while True:
            time.sleep(1.0)
            with self._lock:
                self._trim()
                if not self._entries:
                    self._thread = None
                    return


_pool = {"checked": False, "pool": None}
_pool_lock = threading.Lock()


def worker_pool():
    """This process's :class:`BlockPool` when it is a ``distributed`` worker, else None."""
    if _pool["checked"]:
        return _pool["pool"]
    with _pool_lock:
        if not _pool["checked"]:
            _pool["pool"] = _make_worker_pool()
            _pool["checked"] = True
    return _pool["pool"]


def _make_worker_pool():
    if os.environ.get("NBGRAPH_DASK_BLOCK_POOL", "").strip() == "0":
        return None
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    manager = getattr(worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None)
    if not limit:
        return BlockPool(DEFAULT_CAP)
    return BlockPool(int(limit * FRACTION), pressure=_pressure(worker, manager, limit))


def _pressure(worker, manager, limit):
    """``() -> bool``: the worker's memory is within :data:`MARGIN` of the first of
    its dask thresholds (None when it has none)."""
    fractions = [getattr(manager, "memory_%s_fraction" % name, False)
                 for name in ("target", "spill", "pause")]
    fractions = [f for f in fractions if f]
    monitor = getattr(worker, "monitor", None)
    if not fractions or monitor is None:
        return None
    bound = (min(fractions) - MARGIN) * limit

    def pressure():
        return monitor.get_process_memory() > bound

    return pressure


def pooled_prepare(prepare, pool):
    """``prepare`` (a kernel's output allocation) with its big fresh outputs taken
    from ``pool``: an output that is one of the inputs (an in-place kernel) or a
    view of one stays as it is."""

    def prepare_pooled(inputs):
        outs = list(prepare(inputs))
        for j, out in enumerate(outs):
            if type(out) is np.ndarray and out.flags.owndata and out.flags.c_contiguous \
                    and out.nbytes >= MIN_BYTES and not any(out is v for v in inputs):
                outs[j] = pool.empty(out.shape, out.dtype)
        return outs

    return prepare_pooled
