"""Shared helpers of the Dask linker's tests: the reference (the C-VM linker) and
comparisons with a documented tolerance.

Tolerance (see :mod:`nbgraph.linkers.dask`): elementwise results and
reductions whose reduced axes are each one block are compared bit for bit,
except transcendental functions (the kernel's vector and scalar libm paths
meet at other elements in a block than in the whole array: ``ulps.SIMD_ULPS``);
reductions across blocks add partial results in another order:
``rtol=1e-12`` relative to the sum of magnitudes.
"""

import numpy as np
import pytest

pytest.importorskip("dask.array")

import nbgraph
from nbgraph.linkers.dask import DaskLinker


def sync(chunks, **kw):
    """A DaskLinker on the synchronous scheduler returning NumPy arrays."""
    return DaskLinker(chunks=chunks, compute=True, scheduler="sync", **kw)


def reference(inputs, outputs, args):
    """The C-VM linker's results (a list), from its C kernels: a first call while
    the module compiles in the background would run NumPy's loops instead,
    whose transcendentals round differently."""
    f = nbgraph.function(inputs, outputs, linker="cvm", on_unused_input="ignore")
    f.program.wait_compiled()
    out = f(*args)
    return out if isinstance(out, list) else [out]


def run_dask(inputs, outputs, args, linker):
    f = nbgraph.function(inputs, outputs, linker=linker, on_unused_input="ignore")
    out = f(*args)
    return out if isinstance(out, list) else [out]


def assert_bit_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), np.max(np.abs(got - want))
    # the sign of zero too
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def assert_close_ulps(got, want, ulps=None):
    from ulps import SIMD_ULPS, ulp_mismatches

    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert ulp_mismatches(got, want, SIMD_ULPS if ulps is None else ulps).size == 0


def assert_reduction_close(got, want, magnitude):
    """Equal within 1e-12 of the summed magnitudes (partials merged in another order)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    assert np.all(np.abs(got[finite] - want[finite]) <= 1e-12 * (magnitude[finite] + 1e-300))


class _Helpers:
    sync = staticmethod(sync)
    reference = staticmethod(reference)
    run_dask = staticmethod(run_dask)
    assert_bit_equal = staticmethod(assert_bit_equal)
    assert_close_ulps = staticmethod(assert_close_ulps)
    assert_reduction_close = staticmethod(assert_reduction_close)


@pytest.fixture(scope="session")
def dk():
    """The helpers above (test modules cannot import a conftest under importlib mode)."""
    return _Helpers
