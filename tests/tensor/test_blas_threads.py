"""The BLAS-thread policy of small matrix products (nbgraph.tensor.blas_threads).

Checked: which Dot nodes use it; that a small product runs with BLAS on one thread
and a large one with the caller's count; that the count comes back after nested
and concurrent uses and after an error; that results equal ``np.dot``'s.
"""

import threading

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor import blas_threads
from nbgraph.tensor.blas_skinny import skinny_choice
from nbgraph.tensor.blas_threads import (SMALL_PRODUCT_MACS, one_blas_thread, product_function,
                                         small_product_dot)

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas():
    libs = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    if not libs:
        pytest.skip("no BLAS library found by threadpoolctl")
    return libs[0]


@pytest.fixture
def two_threads():
    """BLAS on two threads for the test (the caller's count restored after)."""
    lib = _blas()
    before = lib.get_num_threads()
    lib.set_num_threads(2)
    yield lib
    lib.set_num_threads(before)


def test_float_and_complex_matrix_products_use_the_policy_others_plain_dot():
    def node(x, y):
        return nt.dot(x, y).owner

    assert product_function(node(nt.dmatrix(), nt.dmatrix())) is small_product_dot
    assert product_function(node(nt.fmatrix(), nt.fmatrix())) is small_product_dot
    complex_node = node(nt.matrix(dtype="complex128"), nt.matrix(dtype="complex128"))
    assert product_function(complex_node) is small_product_dot
    assert product_function(node(nt.dmatrix(), nt.dvector())) is np.dot
    assert product_function(node(nt.dvector(), nt.dvector())) is np.dot
    assert product_function(node(nt.lmatrix(), nt.lmatrix())) is np.dot


def test_a_small_product_runs_on_one_thread_a_large_one_on_the_callers_count(two_threads):
    seen = []

    def spy(x, y):
        seen.append(two_threads.get_num_threads())
        return None

    # sizes only: zero-stride views stand for big operands without the memory
    small = (np.broadcast_to(0.0, (512, 64)), np.broadcast_to(0.0, (64, 64)))
    large = (np.broadcast_to(0.0, (4096, 1024)), np.broadcast_to(0.0, (1024, 4)))
    tiny = (np.zeros((4, 4)), np.zeros((4, 4)))
    assert small[0].size * small[1].shape[1] <= SMALL_PRODUCT_MACS
    assert large[0].size * large[1].shape[1] > SMALL_PRODUCT_MACS
    for x, y in (small, large, tiny):
        small_product_dot(x, y, _dot=spy)
    assert seen == [1, 2, 2]
    assert two_threads.get_num_threads() == 2


def test_the_count_comes_back_after_nesting_errors_and_threads(two_threads):
    # other threads leave the count alone (OpenBLAS ignores theirs), also while the
    # main thread holds it at one
    with one_blas_thread():
        with one_blas_thread():
            assert two_threads.get_num_threads() == 1
        assert two_threads.get_num_threads() == 1
    assert two_threads.get_num_threads() == 2
    with pytest.raises(RuntimeError):
        with one_blas_thread():
            raise RuntimeError("inside")
    assert two_threads.get_num_threads() == 2

    seen = []

    def work():
        for _ in range(20):
            with one_blas_thread():
                seen.append(two_threads.get_num_threads())

    def run_threads():
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run_threads()
    assert set(seen) == {2}
    with one_blas_thread():
        seen.clear()
        run_threads()
        assert set(seen) == {1}
        assert two_threads.get_num_threads() == 1
    assert blas_threads._state["depth"] == 0
    assert two_threads.get_num_threads() == 2


def test_a_caller_on_one_thread_keeps_it():
    lib = _blas()
    before = lib.get_num_threads()
    lib.set_num_threads(1)
    try:
        with one_blas_thread():
            pass
        assert lib.get_num_threads() == 1
    finally:
        lib.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [(3, 4, 5), (1200, 64, 8), (64, 1200, 8), (0, 3, 4)])
def test_compiled_products_equal_numpys_on_one_blas_thread(two_threads, dtype, shape):
    # OpenBLAS rounds differently on one thread and on two (float32, complex): the
    # oracle is NumPy's product on the one thread the policy chose
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    with one_blas_thread():
        want = np.dot(a, b)
        want_f = np.dot(np.asfortranarray(a), b)
    x, y = nt.matrix(dtype=dtype), nt.matrix(dtype=dtype)
    for linker in ("py", "cvm"):
        f = ng.function([x, y], nt.dot(x, y), linker=linker)
        choose = None
        if linker == "cvm":  # a product the skinny C kernel takes is not BLAS's
            f.program.wait_compiled()  # (the C's rule is the per-call choice's)
            choose = skinny_choice(dtype, 2, dtype)
        for xv, expected in ((a, want), (np.asfortranarray(a), want_f)):
            got = f(xv, b)
            assert got.dtype == want.dtype
            if choose is not None and choose(xv, b):
                # summation order only: within twice the K-term rounding bound
                eps = np.finfo(dtype).eps
                bound = 2 * k * eps / (1 - k * eps) * (np.abs(a) @ np.abs(b))
                assert np.all(np.abs(got - expected) <= bound)
            else:
                np.testing.assert_array_equal(got, expected)
    assert two_threads.get_num_threads() == 2
