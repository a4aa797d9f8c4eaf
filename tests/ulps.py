"""Comparing floats with NumPy where NumPy's own answer depends on the CPU.

NumPy picks its loops at run time by SIMD level (baseline, AVX2, AVX-512 on x86-64;
NEON/SVE on aarch64).  Its transcendental functions (exp, log, sin, tanh, power, ...)
are rounded differently by these loops, and differently again from the C library that
nbgraph's C code calls: one machine's NumPy result is no oracle for another's.  Such
results are compared within ``SIMD_ULPS`` units in the last place, while NaN, the
infinities and the sign of zero must still match exactly (every loop agrees on those).
Exact operations (+, -, *, /, sqrt, comparisons, integer ops, casts) stay bit for bit.

``tests/conftest.py`` puts this directory on ``sys.path``: ``from ulps import ...``.
"""

from __future__ import annotations

import numpy as np

# NumPy's SIMD transcendentals are documented and tested to within 1-4 ulps of the
# correctly rounded value; two such loops may therefore differ by a few ulps.
SIMD_ULPS = 4

# Elementwise functions whose float results NumPy computes with CPU-dependent loops.
TRANSCENDENTAL = frozenset({
    "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "pow", "power",
    "sigmoid", "softplus", "hypot", "arctan2", "logaddexp",
})


def ordered(a: np.ndarray) -> np.ndarray:
    """Floats mapped to float64 integers whose order and spacing are the floats' ulps."""
    a = np.asarray(a)
    bits = {np.dtype(np.float16): 15, np.dtype(np.float32): 31}.get(a.dtype, 63)
    ints = a.view({15: np.int16, 31: np.int32, 63: np.int64}[bits]).astype(np.float64)
    top = 2.0 ** bits
    return np.where(ints < 0, -(ints + top), ints)


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype, counted exactly.

    (``ordered``'s float64 integers are rounded to multiples of 512 for float64
    values: their differences are not ulps.)  Same sign: the difference of the bit
    patterns' magnitudes, in int64; opposite signs: the sum of the magnitudes (as
    float64, which only rounds when the values are far apart anyway).
    """
    got, want = np.asarray(got), np.asarray(want)
    bits = {np.dtype(np.float16): 15, np.dtype(np.float32): 31}.get(got.dtype, 63)
    view = {15: np.int16, 31: np.int32, 63: np.int64}[bits]
    mask = np.int64(2 ** bits - 1)
    ig = got.view(view).astype(np.int64)
    iw = want.view(view).astype(np.int64)
    mg, mw = ig & mask, iw & mask
    same = (ig < 0) == (iw < 0)
    return np.where(same, np.abs(mg - mw).astype(np.float64),
                    mg.astype(np.float64) + mw.astype(np.float64))


def ulp_mismatches(got, want, ulps: int = SIMD_ULPS) -> np.ndarray:
    """Flat indices where ``got`` and ``want`` differ beyond ``ulps``.

    Same dtype and shape required (a difference is reported at index -1).  NaN must
    meet NaN, an infinity the same infinity, and two zeros must have the same sign;
    other finite values may differ by up to ``ulps`` units in the last place
    (``ulps=0``: bit for bit, NaN payloads aside).  Non-float dtypes compare exactly.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return np.array([-1])
    got, want = got.ravel(), want.ravel()
    if got.dtype.kind == "c":  # each part within ulps of its own
        return np.union1d(ulp_mismatches(got.real, want.real, ulps),
                          ulp_mismatches(got.imag, want.imag, ulps))
    if got.dtype.kind != "f":
        return np.flatnonzero(got != want)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    special = nan_g | nan_w | np.isinf(got) | np.isinf(want)
    bad_special = special & ~((got == want) | (nan_g & nan_w))
    zeros = (got == 0) & (want == 0)
    bad_zero = zeros & (np.signbit(got) != np.signbit(want))
    with np.errstate(invalid="ignore"):
        far = ulp_distance(got, want) > ulps
    return np.flatnonzero(bad_special | bad_zero | (~special & far))


def assert_ulp_close(got, want, ulps: int = SIMD_ULPS, context: str = "") -> None:
    """Raise AssertionError naming the first value that :func:`ulp_mismatches` reports."""
    bad = ulp_mismatches(got, want, ulps)
    if bad.size:
        g, w = np.asarray(got), np.asarray(want)
        if bad[0] < 0:
            raise AssertionError("%s: got %s%s, want %s%s" % (context, g.dtype, g.shape,
                                                             w.dtype, w.shape))
        k = bad[0]
        raise AssertionError("%s: %d value(s) differ by more than %d ulps, first at %d: "
                             "got %r, want %r" % (context, bad.size, ulps, k,
                                                  g.ravel()[k], w.ravel()[k]))


def numpy_tolerance(name: str, dtype) -> int:
    """The ulps allowed against NumPy for op ``name`` giving ``dtype``: 0 unless both
    the op is transcendental and the result is a float."""
    return SIMD_ULPS if name in TRANSCENDENTAL and np.dtype(dtype).kind in "fc" else 0
