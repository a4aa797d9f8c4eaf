"""When a float matrix product runs as Dot's *skinny* C kernel instead of BLAS.

A product whose output has few columns (``X @ W`` with W 784x10) or its
gradient's shape (``X.T @ G`` with G 600x10) is mostly a pass over the big
operand: OpenBLAS first packs all of X (3.7 MB for 600x784) into panels for
ten columns, where the C kernel of :mod:`nbgraph.tensor.c_code.dot`
(``csrc/dot_skinny.h``) streams X once through register tiles of the few
columns.  Measured on one Zen 4 core (AVX-512, 256-bit vectors; minimum
times, one thread each, the two interleaved on a loaded machine):

kernel / OpenBLAS, ``X @ W`` then ``X.T @ G``:

* float64 600x784x10: 183 / 410 us, 193 / 445 us;
* float64 600x784x3: 109 / 491 us, 130 / 563 us;
* float64 600x784x1: 56 / 60 us, 100 / 71 us;
* float32 600x784x10: 109 / 199 us, 143 / 329 us;
* float32 600x784x24: 266 / 300 us, 322 / 309 us

(the float64 600x784x10 pair in a C harness on a quiet machine, the rest
through ``linker="c"`` with the call's overhead.)

The C-VM linker runs Dot's float matrix products in C, skinny kernel or
BLAS, when the C finds the process's BLAS
(:func:`~nbgraph.tensor.blas_threads.c_blas_found`); otherwise with NumPy's
BLAS (``c_preferred`` is False), and :func:`skinny_choice` gives it, through
``Dot.c_call_choice``, the per-call test that sends a product to the C
kernel instead, decided from the shapes and strides of the call:

* the first operand of the output dtype (no conversion), one of its axes
  with unit stride (``X`` C-contiguous, or ``X.T`` of one), strides whole
  multiples of the item size;
* at most :data:`MAX_COLUMN_BYTES` bytes of output row (12 float64 or 24
  float32 columns), a shared dimension of at least :data:`MIN_DEPTH` and at
  least :data:`MIN_WORK` multiply-adds (smaller products stay with NumPy, as
  before);
* a CPU with AVX (the C is compiled with ``-march=native``; with 16-byte
  vectors BLAS is faster).  float32 takes both layouts since the kernel's
  vectors run along the shared dimension in ``X @ W`` (the earlier kernel,
  vectors along the output row, was 1.4-1.6x slower than sgemm there).

``csrc/dot_skinny.h`` applies the same layout rule (``nbg_*_is_skinny``), so
under ``linker="c"`` these products take the skinny kernel too.  Results
differ from BLAS's only by the order of the sums (both within
``K * eps * sum|x||y|`` of the exact product) and never depend on the thread
count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAX_COLUMN_BYTES", "MIN_DEPTH", "MIN_WORK", "skinny_choice"]

#: At most this many bytes of an output row (``NBG_<S>_SKN``): 12 float64 columns.
MAX_COLUMN_BYTES = 96
#: The shared dimension must be at least this long (``NBG_DOT_SK_MINK``).
MIN_DEPTH = 16
#: Products with fewer multiply-adds stay with NumPy.
MIN_WORK = 1 << 15


def _has_avx() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - NumPy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return False
    return bool(features.get("AVX"))


_AVX = _has_avx()


def skinny_choice(x_dtype: Any, y_ndim: int, out_dtype: Any) -> Callable[[Any, Any], bool] | None:
    """The per-call test ``(x, y) -> bool`` for a product of a ``x_dtype`` matrix
    and a ``y_ndim``-d operand into ``out_dtype``; None when no call can qualify."""
    x_dtype, out_dtype = np.dtype(x_dtype), np.dtype(out_dtype)
    if not _AVX or y_ndim != 2 or out_dtype.kind != "f" or out_dtype.itemsize not in (4, 8) \
            or x_dtype != out_dtype:
        return None
    item = out_dtype.itemsize
    max_n = MAX_COLUMN_BYTES // item
    ndarray = np.ndarray

    def choose(x: Any, y: Any) -> bool:
        if type(x) is not ndarray or type(y) is not ndarray or x.ndim != 2 or y.ndim != 2:
            return False
        m, k = x.shape
        n = y.shape[1]
        if not 0 < n <= max_n or k < MIN_DEPTH or m * k * n < MIN_WORK or y.shape[0] != k:
            return False
        s0, s1 = x.strides
        if s0 % item or s1 % item or x.dtype != out_dtype:
            return False
        return s1 == item or (s0 == item and m > 1)

    return choose
