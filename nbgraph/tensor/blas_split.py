"""Big matrix products split in two by nbgraph itself, each half on one BLAS thread.

NumPy's OpenBLAS runs a big product on all its threads, and after each such
product its worker threads *busy-wait* about 0.1 s for the next one (measured
here: a process that computed one 600x784 @ 784x500 product then slept burnt
a whole core for 100 ms, with no system call).  In a training step, where
big products alternate with element loops that nbgraph's own thread pool
splits across the cores, that spinning worker holds one of the two cores the
element loops want: they wait for the scheduler to hand the core back.

:func:`split_dot` computes such a product as two row blocks of the output:
the calling thread computes one, a helper thread of this module the other,
BLAS held to one thread meanwhile (:func:`~nbgraph.tensor.blas_threads.one_blas_thread`):
OpenBLAS's own workers are not woken, and the helper *sleeps* on a lock
between products.  Each output element is one single-threaded BLAS sum over
the whole inner dimension; as with OpenBLAS's own thread counts, the last
bits may differ from NumPy's two-thread product (and from a one-thread product
of all the rows: BLAS's kernels treat the rows left over by their register
tile differently), never by more than the rounding of the sums.

It splits the products :func:`~nbgraph.tensor.blas_threads.small_product_dot`
would hand to all of BLAS's threads (more than ``SMALL_PRODUCT_MACS``
multiply-adds).  Only the main thread splits (the thread-count limit is
process-wide and only the main thread sets it); a call from another thread, or while the helper is
busy (a product inside a product), computes with ``np.dot`` as usual.  Two
threads are used when BLAS itself would use several (its thread count,
``OPENBLAS_NUM_THREADS`` or threadpoolctl's limits, decides, as it did before;
``NBGRAPH_NUM_THREADS`` does not: it sizes nbgraph's C loops, whose results
never depend on it, and a product's must not either).  After
``fork()`` the child starts its own helper on its first split product.

Splitting is off unless :data:`SPLIT_PRODUCTS` is set: it pays only while
other work competes for the cores (figures at :data:`SPLIT_PRODUCTS`).
"""

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from nbgraph.tensor.blas_threads import blas_thread_count, one_blas_thread

__all__ = ["SPLIT_PRODUCTS", "split_dot"]

#: Whether products of more than ``blas_threads.SMALL_PRODUCT_MACS`` multiply-adds
#: (those NumPy's BLAS would run on all its threads) are split here.  Read at every
#: product.  Off by default: on an idle 2-core machine the MLP SGD step of the bench
#: was 14.1-14.3 ms split against 12.4-13.2 ms left to BLAS (the helper wakes slower
#: than OpenBLAS's spinning worker); on a loaded one splitting was 15-40% faster.
#: Set it True where other work competes for the cores.
SPLIT_PRODUCTS = False

_MAIN = threading.main_thread().ident


class _Helper:
    """One daemon thread that runs one job at a time: ``submit(fn)`` then ``wait()``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.busy = False
        self._start = threading.Lock()
        self._done = threading.Lock()
        self._start.acquire()
        self._done.acquire()
        self._job: Callable[[], Any] | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._loop, name="nbgraph-blas-split", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._start.acquire()
            job, self._job = self._job, None
            try:
                if job is not None:
                    job()
            except BaseException as exc:  # handed to the caller by wait()
                self._error = exc
            del job  # the job's arrays are not kept until the next product
            self._done.release()

    def submit(self, job: Callable[[], Any]) -> None:
        self.busy = True
        self._job = job
        self._start.release()

    def wait(self) -> None:
        self._done.acquire()
        self.busy = False
        error, self._error = self._error, None
        if error is not None:
            raise error


_helper: list[_Helper] = []


def _get_helper() -> _Helper | None:
    if _helper and _helper[0].pid == os.getpid():
        return None if _helper[0].busy else _helper[0]
    _helper[:] = [_Helper()]
    return _helper[0]


def split_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``np.dot(x, y)`` of two float or complex matrices computed in two row blocks on
    two threads (module docstring); None when this call is not split (BLAS on one
    thread, not the main thread, the helper busy, fewer than two rows, mismatched
    shapes):
    the caller then uses ``np.dot``.  The size test is the caller's."""
    m, k = x.shape
    if not SPLIT_PRODUCTS or m < 2 or y.shape[0] != k or threading.get_ident() != _MAIN or \
            blas_thread_count() < 2:
        return None
    helper = _get_helper()
    if helper is None:
        return None
    out = np.empty((m, y.shape[1]), np.result_type(x, y))
    half = m // 2
    top, out_top = x[:half], out[:half]
    with one_blas_thread():
        helper.submit(lambda: np.dot(top, y, out=out_top))
        try:
            np.dot(x[half:], y, out=out[half:])
        finally:
            helper.wait()
    return out
