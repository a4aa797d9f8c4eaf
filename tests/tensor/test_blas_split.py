"""Big matrix products split in two row blocks on two threads (nbgraph.tensor.blas_split).

Checked: results equal NumPy's product up to the order of the K-term sums, for
float64, float32 and complex operands, odd row counts and transposed views;
which calls are split and which are left to ``np.dot``; that BLAS's thread
count comes back; that an error in the helper thread reaches the caller; that a
forked child gets a helper of its own; that a compiled function's big product
takes this path.
"""

import os
import threading

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor import blas_split, blas_threads
from nbgraph.tensor.blas_split import split_dot
from nbgraph.tensor.blas_threads import SMALL_PRODUCT_MACS, small_product_dot

threadpoolctl = pytest.importorskip("threadpoolctl")


def _close(got, a, b):
    """``got`` is ``a @ b`` up to the order of the sums: within twice the K-term
    rounding bound of each element (NumPy as the oracle)."""
    want = np.dot(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    k = a.shape[1]
    eps = np.finfo(want.dtype).eps
    bound = 2 * k * eps / (1 - k * eps) * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(got - want) <= bound)


@pytest.fixture
def two_threads(monkeypatch):
    """Every BLAS library on two threads for the test (the counts restored after),
    splitting switched on (it is off by default)."""
    monkeypatch.setattr(blas_split, "SPLIT_PRODUCTS", True)
    libs = threadpoolctl.ThreadpoolController().select(user_api="blas")
    if not libs.lib_controllers:
        pytest.skip("no BLAS library found by threadpoolctl")
    with libs.limit(limits=2):  # restores the counts after
        for lib in libs.lib_controllers:
            lib.set_num_threads(2)
        yield libs


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("m, k, n", [(2, 3, 4), (601, 784, 50), (37, 300, 29)])
@pytest.mark.parametrize("layout", ["C", "F", "T"])
def test_split_products_equal_numpys(two_threads, dtype, m, k, n, layout):
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)) + (1j * rng.standard_normal((m, k))
                                       if dtype == "complex128" else 0)
    a = a.astype(dtype)
    if layout == "F":
        a = np.asfortranarray(a)
    elif layout == "T":  # the X.T of a gradient: a transposed view
        a = np.ascontiguousarray(a.T).T
    b = rng.standard_normal((k, n)).astype(dtype)
    got = split_dot(a, b)
    assert got is not None and got.flags.c_contiguous
    _close(got, a, b)
    assert all(lib.get_num_threads() == 2 for lib in two_threads.lib_controllers)


def test_calls_left_to_numpy(monkeypatch, two_threads):
    a, b = np.ones((1, 5)), np.ones((5, 3))
    assert split_dot(a, b) is None  # one row
    assert split_dot(np.ones((4, 5)), np.ones((6, 3))) is None  # mismatched: np.dot's error
    monkeypatch.setattr(blas_split, "SPLIT_PRODUCTS", False)
    assert split_dot(np.ones((4, 5)), b) is None
    monkeypatch.setattr(blas_split, "SPLIT_PRODUCTS", True)
    seen = []
    t = threading.Thread(target=lambda: seen.append(split_dot(np.ones((4, 5)), b)))
    t.start()
    t.join()
    assert seen == [None]  # only the main thread splits


def test_small_product_dot_splits_only_big_products(monkeypatch, two_threads):
    calls = []
    real = blas_split.split_dot

    def spy(x, y):
        calls.append(x.shape[0] * x.shape[1] * y.shape[1])
        return real(x, y)

    monkeypatch.setattr(blas_threads, "split_dot", spy)
    rng = np.random.default_rng(0)
    big = rng.standard_normal((300, 200)), rng.standard_normal((200, 100))
    small = rng.standard_normal((30, 20)), rng.standard_normal((20, 10))
    assert 300 * 200 * 100 > SMALL_PRODUCT_MACS
    _close(small_product_dot(*big), *big)
    _close(small_product_dot(*small), *small)
    assert calls == [300 * 200 * 100]
    monkeypatch.setattr(blas_threads, "SMALL_PRODUCT_MACS", 0)  # the policy off: no split
    small_product_dot(*big)
    assert len(calls) == 1


def test_an_error_in_the_helper_reaches_the_caller_and_the_helper_goes_on():
    helper = blas_split._Helper()

    def fail():
        raise MemoryError("helper job")

    helper.submit(fail)
    with pytest.raises(MemoryError, match="helper job"):
        helper.wait()
    assert not helper.busy
    done = []
    helper.submit(lambda: done.append(1))
    helper.wait()
    assert done == [1]


def test_a_busy_helper_is_not_shared(monkeypatch, two_threads):
    a, b = np.ones((4, 5)), np.ones((5, 3))
    assert split_dot(a, b) is not None  # the helper exists now
    monkeypatch.setattr(blas_split._helper[0], "busy", True)
    assert split_dot(a, b) is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_splits_with_a_helper_of_its_own(two_threads):
    a, b = np.arange(12.0).reshape(4, 3), np.ones((3, 2))
    assert split_dot(a, b) is not None
    pid = os.fork()
    if pid == 0:  # the child: the parent's helper thread does not exist here
        try:
            got = split_dot(a, b)
            ok = got is not None and np.array_equal(got, a @ b) and \
                blas_split._helper[0].pid == os.getpid()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_a_compiled_big_product_is_split(monkeypatch, two_threads):
    calls = []
    real = blas_split.split_dot

    def spy(x, y):
        calls.append(x.shape)
        return real(x, y)

    monkeypatch.setattr(blas_threads, "split_dot", spy)
    x, w = nt.dmatrix("x"), nt.dmatrix("w")
    rng = np.random.default_rng(1)
    xv, wv = rng.standard_normal((600, 784)), rng.standard_normal((784, 40))
    for linker in ("py", "cvm"):
        f = ng.function([x, w], [nt.dot(x, w), nt.dot(x.T, xv @ wv)], linker=linker)
        got, grad = f(xv, wv)
        _close(got, xv, wv)
        _close(grad, xv.T, xv @ wv)
    assert (600, 784) in calls and (784, 600) in calls


def test_blas_on_one_thread_means_no_split(two_threads):
    a, b = np.ones((4, 5)), np.ones((5, 3))
    assert split_dot(a, b) is not None
    with two_threads.limit(limits=1):
        assert split_dot(a, b) is None
