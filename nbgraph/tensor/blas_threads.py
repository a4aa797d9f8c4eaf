"""How many BLAS threads a small matrix product runs on.

NumPy's BLAS (OpenBLAS in NumPy's wheels) splits a matrix product across all
its threads once it has more than 262,144 multiply-adds.  For products of a
few million multiply-adds that costs more than it saves: a product of
``2**23`` multiply-adds takes about 0.5 ms on one core, splitting it saves at
most half of that on an idle machine, and it wakes a worker thread that then
spins, waiting for the next product, on a core someone else could use.  On a
loaded machine the product also waits for the worker to be scheduled.
Measured on 2 busy cores (OpenBLAS 0.3.31, best of 7, CPU time of the
process): ``3200x64 @ 64x8`` took 694 us of CPU on two threads against 180 us
on one, ``128x128 @ 128x128`` 768 against 140 us; the Elman RNN benchmark
(loss and gradients through a 100-step scan) 39-46 ms of CPU against 12 ms;
a softmax-regression SGD step (600x784 @ 784x10 and its transpose, 4.7
million multiply-adds each) 34-46 ms of wall time against 1.2-3.1 ms.  On an
idle machine, though, that step is faster with its products split (``make
bench``, quiet, same code: 0.81-0.97 ms with the limit at ``2**22`` against
1.16 ms at ``2**23``; PyTensor 1.07-1.54 ms), while the Elman benchmark keeps
its gain (14-23 ms against JAX's 11-12.5 ms): the limit is ``2**22``.

:func:`product_function` gives the ``dot`` a :class:`~nbgraph.tensor.basic.Dot`
node calls: for a product of two floating or complex matrices, one that runs
products of at most :data:`SMALL_PRODUCT_MACS` multiply-adds with BLAS held
to one thread (:func:`one_blas_thread`); otherwise NumPy's ``dot`` itself.
A result may differ from NumPy's two-thread one in the last bits: OpenBLAS's
own results depend on its thread count (float32, complex and some float64
shapes round differently on one thread and on two), so no thread count is
"the" NumPy answer; on one machine and thread count, results are repeatable.

Products above the limit go to BLAS's threads, or, when
``blas_split.SPLIT_PRODUCTS`` is set (off by default), are split in two row
blocks computed on two threads of nbgraph's own, BLAS on one thread in each
(:mod:`nbgraph.tensor.blas_split`: OpenBLAS's idle workers busy-wait ~0.1 s
after a product, holding a core the element loops between products want).

Under the C-VM linker, a float matrix product runs in C when
:func:`c_blas_found` says Dot's C calls this BLAS itself
(:mod:`nbgraph.tensor.c_code.dot`): the same limit, and big products split in
two row blocks on nbgraph's own thread pool, BLAS on one thread in each;
:func:`product_function` serves the Python linker and the C-VM without it.

The limit uses ``threadpoolctl`` when it is installed and finds a BLAS; else
nothing is limited.  It is shared by the whole process (BLAS has one thread
count): a product running in another Python thread meanwhile runs on one
thread too, and the count the caller had is restored when the last limited
product ends.  Only the main thread sets it (threadpoolctl, too, lets one
thread control OpenBLAS's shared pool): products computed in other threads
run as BLAS decides.
"""

import ctypes
import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["OPENBLAS_SPLITS_ABOVE", "SMALL_PRODUCT_MACS", "blas_thread_count", "c_blas_found",
           "one_blas_thread", "product_function", "small_product_dot"]

#: Matrix products with at most this many multiply-adds (``m * k * n``) run on one
#: BLAS thread.  Read at every product: 0 turns the policy off.
SMALL_PRODUCT_MACS = 1 << 22

#: OpenBLAS runs products of at most this many multiply-adds on one thread by itself
#: (65536 times its GEMM_MULTITHREAD_THRESHOLD, 4): no need to limit those.
#: (Also the C's rule: :mod:`nbgraph.tensor.c_code.dot`.)
OPENBLAS_SPLITS_ABOVE = 65536 * 4

_lock = threading.Lock()
_MAIN = threading.main_thread().ident
_state: dict[str, Any] = {"controllers": None, "splits_above": None, "depth": 0, "saved": [],
                          "c_blas": None}

#: The symbol sets Dot's C accepts (``csrc/dot_blas.h``): CBLAS with 64-bit integers.
_CBLAS_SETS = (("scipy_cblas_dgemm64_", "scipy_cblas_sgemm64_"),
               ("cblas_dgemm64_", "cblas_sgemm64_"))


def _raw_openblas(lib: Any) -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's own get/set of its (process-wide, pthreads) thread count, called
    through ctypes: about 0.3 us a call, where threadpoolctl's wrappers take 1.5-3."""
    if lib.internal_api != "openblas" or getattr(lib, "threading_layer", None) != "pthreads":
        return None
    try:
        dll = ctypes.CDLL(lib.filepath)  # loaded already: the same library
    except OSError:
        return None
    # builds rename the symbols: scipy_openblas_get_num_threads64_ in NumPy's wheels
    for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
        get = getattr(dll, "%sopenblas_get_num_threads%s" % (prefix, suffix), None)
        put = getattr(dll, "%sopenblas_set_num_threads%s" % (prefix, suffix), None)
        if get is not None and put is not None:
            get.argtypes, get.restype = [], ctypes.c_int
            put.argtypes, put.restype = [ctypes.c_int], None
            return get, put
    return None


def _controllers() -> list[tuple[Callable[[], int | None], Callable[[int], Any]]]:
    """(get, set) of the thread count of each BLAS library loaded (found once)."""
    found = _state["controllers"]
    if found is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional at run time: nothing is limited
            libs = []
        else:
            libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        found = [_raw_openblas(lib) or (lib.get_num_threads, lib.set_num_threads)
                 for lib in libs]
        _state["controllers"] = found
        # products BLAS runs on one thread anyway need no limit; with no BLAS found,
        # none gets one (an empty range)
        openblas = libs and all(lib.internal_api == "openblas" for lib in libs)
        _state["splits_above"] = (OPENBLAS_SPLITS_ABOVE if openblas else 0) if libs \
            else SMALL_PRODUCT_MACS
    return found


def _lower() -> None:
    if threading.get_ident() != _MAIN:
        return
    with _lock:
        if _state["depth"] == 0:
            saved = []
            for get, put in _controllers():
                count = get()
                if count is not None and count > 1:
                    put(1)
                    saved.append((put, count))
            _state["saved"] = saved
        _state["depth"] += 1


def _restore() -> None:
    if threading.get_ident() != _MAIN:
        return
    with _lock:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            for put, count in _state["saved"]:
                put(count)
            _state["saved"] = []


def _loaded_cblas() -> bool:
    """Whether an object loaded in this process, its path naming a BLAS, exports one of
    :data:`_CBLAS_SETS`: the search ``csrc/dot_blas.h`` makes (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {fields[5].strip() for fields in (line.split(None, 5) for line in maps)
                     if len(fields) == 6 and "blas" in fields[5]}
    except OSError:
        return False
    for path in sorted(paths):
        try:  # loaded already: RTLD_NOLOAD only looks it up
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        if any(all(hasattr(lib, name) for name in names) for names in _CBLAS_SETS):
            return True
    return False


def c_blas_found() -> bool:
    """Whether Dot's C finds a BLAS to call in this process (looked for once, ~0.5 ms).

    >>> isinstance(c_blas_found(), bool)
    True
    """
    found = _state["c_blas"]
    if found is None:
        found = _state["c_blas"] = _loaded_cblas()
    return found


def blas_thread_count() -> int:
    """The largest thread count of the BLAS libraries loaded (1 when none is found).

    >>> blas_thread_count() >= 1
    True
    """
    counts = [get() for get, _ in _controllers()]
    return max([c for c in counts if c is not None], default=1)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the body with BLAS on one thread (nested uses are counted; the previous
    thread count comes back when the outermost ends).  Only in the main thread
    (module docstring); elsewhere it changes nothing.

    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float(np.ones((2, 3)) @ np.ones(3) @ np.ones(2))
    6.0
    """
    _lower()
    try:
        yield
    finally:
        _restore()


def small_product_dot(x: np.ndarray, y: np.ndarray, _dot: Callable[..., Any] = np.dot) -> Any:
    """``np.dot(x, y)`` of two matrices, on one BLAS thread when the product has at most
    :data:`SMALL_PRODUCT_MACS` multiply-adds (and BLAS would otherwise split it).

    >>> small_product_dot(np.eye(2), np.arange(4.0).reshape(2, 2)).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    macs = x.size * y.shape[-1]  # m * k * n
    lowest = _state["splits_above"]
    if lowest is None:
        _controllers()
        lowest = _state["splits_above"]
    if lowest < macs <= SMALL_PRODUCT_MACS:
        _lower()
        try:
            return _dot(x, y)
        finally:
            _restore()
    if SMALL_PRODUCT_MACS and macs > SMALL_PRODUCT_MACS and _state["controllers"] and \
            _dot is np.dot and x.ndim == 2 and y.ndim == 2:
        out = split_dot(x, y)  # on two threads of ours, not BLAS's (blas_split)
        if out is not None:
            return out
    return _dot(x, y)


def product_function(node: Any) -> Callable[..., Any]:
    """The ``dot`` a Dot node should call: :func:`small_product_dot` for a product of
    two floating or complex matrices (BLAS's case), else ``np.dot``."""
    x, y = node.inputs
    if x.type.ndim == 2 and y.type.ndim == 2 and \
            node.outputs[0].type.numpy_dtype.kind in "fc":
        return small_product_dot
    return np.dot


from nbgraph.tensor.blas_split import split_dot  # noqa: E402  (it uses one_blas_thread)
