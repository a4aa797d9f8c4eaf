"""Float matrix products under linker="c" call the process's BLAS (csrc/dot_blas.h).

NumPy is the oracle within float tolerance everywhere (BLAS and the packed
kernel differ in the last bits); the one exact comparison is of the same
BLAS routine called the same way on one thread (NumPy's ``np.dot`` of
C-contiguous operands and the C's call), which is exact on any CPU.
"""

import collections
import ctypes

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c import codegen
from nbgraph.tensor import blas_threads
from nbgraph.tensor.basic import Dot
from nbgraph.tensor.c_code import dot as dot_c

pytestmark = pytest.mark.needs_cc


def _numpy_cblas():
    """True when NumPy's BLAS exports the ILP64 CBLAS names the C looks for."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return False
    for info in threadpool_info():
        if info.get("internal_api") != "openblas":
            continue
        try:
            lib = ctypes.CDLL(info["filepath"])
        except OSError:
            continue
        if any(hasattr(lib, name) for name in ("scipy_cblas_dgemm64_", "cblas_dgemm64_")):
            return True
    return False


def _fn(dtype="float64", xtype=None):
    x = nt.matrix("x", dtype=xtype or dtype)
    w = nt.matrix("w", dtype=dtype)
    return ng.function([x, w], nt.dot(x, w), linker="c")


def _check(f, a, b):
    got = f(a, b)
    want = np.dot(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-4 if want.dtype == np.float32 else 1e-12
    scale = np.dot(np.abs(a), np.abs(b)) + 1
    assert np.all(np.abs(got - want) <= tol * scale)


def _switch(monkeypatch, on):
    """Set dot.C_BLAS, and forget the kernels generated so far (memoised by structure,
    which the switch is not part of)."""
    monkeypatch.setattr(dot_c, "C_BLAS", on)
    monkeypatch.setattr(codegen, "_KERNELS", collections.OrderedDict())


@pytest.fixture(params=[True, False], ids=["blas", "fallback"])
def use_blas(request, monkeypatch):
    _switch(monkeypatch, request.param)
    return request.param


def _operands(rng, dtype, m, k, n):
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layouts_match_numpy(use_blas, dtype):
    rng = np.random.default_rng(0)
    f = _fn(dtype)
    a, b = _operands(rng, dtype, 70, 90, 50)
    big_a, big_b = _operands(rng, dtype, 150, 200, 120)
    cases = [
        (a, b),                                           # C-contiguous
        (np.asfortranarray(a), b),                        # A transposed in memory
        (a, np.asfortranarray(b)),                        # B transposed in memory
        (np.asfortranarray(a), np.asfortranarray(b)),
        (big_a[:70, :90], big_b[:90, :50]),               # leading dimensions > widths
        (big_a[::2, :90], big_b[:90, :50]),               # row stride of 2 rows
        (big_a[:70, ::2], big_b[::2, :50]),               # no unit stride: packed kernel
        (a[::-1], b[:, ::-1]),                            # negative strides
        (np.broadcast_to(a[:1], a.shape), b),             # zero stride
        (np.asfortranarray(big_a)[:70, :90], b),           # column-major, ld > M
    ]
    for x, y in cases:
        _check(f, x, y)


@pytest.mark.parametrize("shape", [(0, 5, 7), (5, 0, 7), (5, 7, 0), (0, 0, 0), (1, 5, 7),
                                   (7, 5, 1), (1, 1, 1), (600, 40, 300)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sizes_match_numpy(use_blas, dtype, shape):
    f = _fn(dtype)
    rng = np.random.default_rng(1)
    a, b = _operands(rng, dtype, *shape)
    _check(f, a, b)
    if shape[1] == 0:
        assert not f(a, b).any()  # an empty sum is zero, whatever the output held


def test_mixed_dtypes_are_converted_or_take_the_packed_kernel(use_blas):
    rng = np.random.default_rng(2)
    f = _fn("float64", xtype="float32")
    a = rng.standard_normal((40, 60)).astype("float32")
    b = rng.standard_normal((60, 30))
    _check(f, a, b)
    _check(f, a[::2, ::3], b[::3])
    _check(f, np.asfortranarray(a), b[:, ::-2])


def test_the_switch_is_in_the_generated_c(monkeypatch):
    x, w = nt.dmatrix(), nt.dmatrix()
    node = Dot()(x, w).owner
    assert "#define NBG_DOT_USE_BLAS 1" in node.op.c_support_code(node)
    monkeypatch.setattr(dot_c, "C_BLAS", False)
    assert "#define NBG_DOT_USE_BLAS 0" in node.op.c_support_code(node)
    assert node.op.c_code_cache_version() == (4, False, False)


def test_the_packed_kernel_is_left_out_where_the_blas_is_found(monkeypatch):
    x, w = nt.dmatrix(), nt.dmatrix()
    node = Dot()(x, w).owner
    for found in (True, False):
        monkeypatch.setattr(blas_threads, "c_blas_found", lambda found=found: found)
        text = node.op.c_support_code(node)
        assert ("NBG_DOTMM_f64" in text) != found
        assert ("#define NBG_DOT_PACKED_f64 %d" % (not found)) in text
        assert node.op.c_code_cache_version() == (4, True, found)
    int_node = Dot()(nt.lmatrix(), nt.lmatrix()).owner  # integer products keep their kernel
    assert "NBG_DOTMM_u64" in int_node.op.c_support_code(int_node)


def test_without_the_packed_kernel_or_a_blas_the_sums_are_plain_loops(monkeypatch):
    # a module made where the BLAS was found, run where none is (the C's search
    # off): every layout, dtype mix and size still matches NumPy
    _switch(monkeypatch, False)
    monkeypatch.setattr(dot_c, "_blas_found", lambda: True)
    x, w = nt.dmatrix(), nt.dmatrix()
    assert "NBG_DOTMM_f64" not in Dot()(x, w).owner.op.c_support_code(Dot()(x, w).owner)
    rng = np.random.default_rng(6)
    f, g = _fn(), _fn("float64", xtype="float32")
    a, b = _operands(rng, "float64", 70, 90, 50)
    for x_, y_ in [(a, b), (np.asfortranarray(a), b[:, ::-1]), (a[::2, ::3], b[::3]),
                   (a[:, :0], b[:0]), (a[:0], b), (a[:1], b[:, :1])]:
        _check(f, x_, y_)
    _check(g, a.astype("float32")[::-1], b)


@pytest.mark.skipif(not _numpy_cblas(), reason="NumPy's BLAS has no ILP64 CBLAS symbols")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_blas_is_the_one_numpy_calls(monkeypatch, dtype):
    _switch(monkeypatch, True)
    # 20 x 784 x 32 multiply-adds: one call on one BLAS thread in the C (above what
    # OpenBLAS runs on one thread itself, below NBG_BLAS_POOL's row blocks), and
    # NumPy's call held to one thread too: the same routine, the same bits (the packed
    # kernel sums 784 terms in another order: it differed on the machine this was written on)
    rng = np.random.default_rng(3)
    a, b = _operands(rng, dtype, 20, 784, 32)
    got = _fn(dtype)(a, b)
    with blas_threads.one_blas_thread():
        want = np.dot(a, b)
    np.testing.assert_array_equal(got, want)


def test_blas_thread_count_is_restored(monkeypatch):
    _switch(monkeypatch, True)
    before = blas_threads.blas_thread_count()
    rng = np.random.default_rng(4)
    f = _fn()
    for shape in [(64, 256, 64), (300, 300, 300)]:  # one thread, then BLAS's own
        _check(f, *_operands(rng, "float64", *shape))
        assert blas_threads.blas_thread_count() == before


def test_results_agree_with_the_packed_kernel(monkeypatch):
    rng = np.random.default_rng(5)
    a, b = _operands(rng, "float64", 130, 300, 90)
    _switch(monkeypatch, True)
    with_blas = _fn()(a, b)
    _switch(monkeypatch, False)
    own = _fn()(a, b)
    np.testing.assert_allclose(with_blas, own, rtol=1e-12, atol=1e-12)
