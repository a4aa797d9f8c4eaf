"""Dot's skinny-product path (csrc/dot_skinny.h, nbgraph/tensor/blas_skinny.py).

Products whose output has few columns (``X @ W``, W 784x10) and the gradient's
``X.T @ G`` run a C kernel that streams X instead of BLAS.  Its sums run in
another order than BLAS's, so results are compared with NumPy within the
rounding bound both satisfy: each is within ``gamma_K * (|x| @ |y|)`` of the
exact product (``gamma_K = K eps / (1 - K eps)``), so they are within twice
that of each other, whatever the CPU, its vector width or FMA.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor import blas_skinny, blas_threads
from nbgraph.tensor.basic import Dot
from nbgraph.testing import assert_thread_count_independent, verify_grad

pytestmark = pytest.mark.needs_cc

_FUNCS = {}


def _fn(dtype, linker, ydtype=None):
    key = (dtype, linker, ydtype, blas_threads.c_blas_found())
    if key not in _FUNCS:
        x = nt.matrix("x", dtype=dtype)
        y = nt.matrix("y", dtype=ydtype or dtype)
        f = ng.function([x, y], nt.dot(x, y), linker=linker)
        wait = getattr(f.program, "wait_compiled", None)  # (the debug linker has none)
        if wait is not None:
            wait()
        _FUNCS[key] = f
    return _FUNCS[key]


@pytest.fixture
def numpys_blas(monkeypatch):
    """As where Dot's C finds no BLAS: the C-VM runs float matrix products with NumPy's,
    the skinny ones (chosen per call) excepted."""
    monkeypatch.setitem(blas_threads._state, "c_blas", False)


def _bound(x, y, dtype):
    """Twice the worst-case rounding error of a K-term dot product, per element."""
    k = x.shape[1]
    eps = np.finfo(dtype).eps
    gamma = k * eps / (1 - k * eps)
    mag = np.abs(x).astype("float64") @ np.abs(y).astype("float64")
    return 2 * gamma * mag + np.finfo(dtype).tiny


def _check(x, y, linker, ydtype=None):
    f = _fn(x.dtype.name, linker, ydtype)
    got = f(x, y)
    want = np.dot(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    err = np.abs(got.astype("float64") - want.astype("float64"))
    bound = _bound(x, y, want.dtype)
    assert np.all(err <= bound), float(np.max(err / bound))
    return got


def _layouts(a):
    """``a`` (2-d) as C-contiguous, a transposed view, strided, reversed rows/columns."""
    yield np.ascontiguousarray(a)
    yield np.asfortranarray(a)                               # the X.T of a C-contiguous X
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    big[::2, ::3] = a
    yield big[::2, ::3]                                      # no unit stride: not skinny
    yield big[::2, ::3].copy()[:, :]                         # contiguous again
    yield np.ascontiguousarray(a[::-1])[::-1]                # rows reversed (negative stride)
    yield np.ascontiguousarray(a[:, ::-1])[:, ::-1]          # columns reversed
    wide = np.zeros((a.shape[0], a.shape[1] + 5), a.dtype)
    wide[:, 2:-3] = a
    yield wide[:, 2:-3]                                      # rows of a wider matrix


SHAPES = [(1, 16, 1), (2, 16, 10), (3, 17, 12), (4, 31, 4), (5, 63, 8), (7, 100, 9),
          (63, 64, 10), (64, 65, 11), (65, 33, 5), (257, 40, 10), (600, 784, 10),
          (784, 600, 10), (9, 16, 13), (6, 15, 10), (30, 40, 24), (30, 40, 25)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_skinny_shapes_in_every_layout_match_numpy_under_c(m, k, n, dtype):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    x = rng.uniform(-1, 1, (m, k)).astype(dtype)
    y = rng.uniform(-1, 1, (k, n)).astype(dtype)
    for xl in _layouts(x):
        _check(xl, y, "c")
    for yl in _layouts(y):
        _check(x, yl, "c")
    _check(np.asfortranarray(x), np.asfortranarray(y), "c")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("m,k,n", [(600, 784, 10), (784, 600, 10), (500, 600, 10), (64, 512, 3),
                                   (600, 784, 13), (600, 784, 24), (3, 20, 2)])
@pytest.mark.parametrize("c_blas", [False, True])
def test_cvm_picks_per_call_and_matches_numpy(m, k, n, dtype, c_blas, monkeypatch):
    if not c_blas:  # else the C runs them all (skinny kernel or BLAS)
        monkeypatch.setitem(blas_threads._state, "c_blas", False)
    rng = np.random.default_rng(m + k + n)
    x = rng.uniform(-1, 1, (m, k)).astype(dtype)
    y = rng.uniform(-1, 1, (k, n)).astype(dtype)
    for xl in _layouts(x):
        _check(xl, y, "cvm")
    _check(np.ascontiguousarray(x.T).T, y, "cvm")


def test_cvm_runs_the_c_kernel_for_skinny_calls_and_blas_for_others(numpys_blas):
    f = _fn("float64", "cvm")
    node = f.program.nodes[0]
    assert isinstance(node.op, Dot) and f.program.kinds == ["py"]
    # the node's kernel is compiled where the choice exists (CPUs with AVX)
    assert (f.program.module is not None) == blas_skinny._AVX
    c = _fn("float64", "c")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((600, 784)), rng.standard_normal((784, 10))
    # the same kernel (deterministic): bit-identical to linker "c"
    np.testing.assert_array_equal(f(x, y), c(x, y))
    np.testing.assert_array_equal(f(x[:40].T, y[:40]), c(x[:40].T, y[:40]))
    choose = node.op.c_call_choice(node)
    assert choose is not None
    # inside a bigger program the node's thunk chooses too
    xs, ys = nt.dmatrix("xs"), nt.dmatrix("ys")
    g = ng.function([xs, ys], nt.dot(xs, ys) * 2.0, linker="cvm")
    g.program.wait_compiled()
    np.testing.assert_array_equal(g(x, y), 2.0 * c(x, y))
    wide = rng.standard_normal((784, 13))  # not skinny: BLAS, as perform computes it
    np.testing.assert_array_equal(g(x, wide), 2.0 * ng.function(
        [xs, ys], nt.dot(xs, ys), linker="py")(x, wide))
    if blas_skinny._AVX:
        assert choose(x, y) and choose(x[:40].T, y[:40])
    assert not choose(x, rng.standard_normal((784, 13)))          # 13 columns: BLAS
    assert not choose(x[:, ::2], y[::2])                          # no unit stride
    assert not choose(x[:2, :16], y[:16])                         # too little work
    assert not choose(x, y[:100])                                 # misaligned: perform's error
    assert not choose(x.astype("float32"), y)
    f32 = _fn("float32", "cvm").program.nodes[0]
    choose32 = f32.op.c_call_choice(f32)
    if blas_skinny._AVX:  # float32: both layouts
        x32, y32 = x.astype("float32"), y.astype("float32")
        assert choose32(x32, y32) and choose32(x32[:40].T, y32[:40])


def test_choice_is_only_offered_for_float_matrix_products(numpys_blas):
    def node(dx, nx, dy, ny):
        return nt.dot(nt.tensor(dx, (None,) * nx), nt.tensor(dy, (None,) * ny)).owner

    for args in [("float64", 2, "float64", 1), ("int64", 2, "int64", 2),
                 ("float32", 2, "float64", 2), ("int32", 2, "float32", 2),
                 ("bool", 2, "bool", 2)]:
        n = node(*args)
        assert n.op.c_call_choice(n) is None, args
    for args in [("float64", 2, "float64", 2), ("float32", 2, "float32", 2),
                 ("float64", 2, "float32", 2)]:
        n = node(*args)
        assert (n.op.c_call_choice(n) is None) == (not blas_skinny._AVX), args


def test_mixed_dtypes_and_converted_operands():
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (70, 300))
    y = rng.uniform(-1, 1, (300, 9)).astype("float32")
    for linker in ("c", "cvm", "debug"):
        _check(x, y, linker, "float32")


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_empty_and_degenerate_sizes(linker):
    for m, k, n in [(0, 784, 10), (600, 0, 10), (600, 784, 0), (1, 784, 10), (600, 1, 10)]:
        x, y = np.ones((m, k)), np.ones((k, n))
        _check(x, y, linker)
        _check(np.asfortranarray(x), y, linker)


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_misaligned_shapes_are_refused_naming_the_shapes(linker):
    f = _fn("float64", linker)
    with pytest.raises(ValueError, match=r"dot: shapes \(600, 784\) and \(100, 10\)"):
        f(np.ones((600, 784)), np.ones((100, 10)))


def test_nonfinite_values_propagate():
    x = np.ones((64, 40))
    x[3, 7], x[10, 2] = np.nan, np.inf
    y = np.ones((40, 5))
    for linker in ("c", "cvm"):
        got, want = _fn("float64", linker)(x, y), x @ y
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        got_t, want_t = _fn("float64", linker)(np.asfortranarray(x), y), x @ y
        np.testing.assert_array_equal(np.isnan(got_t), np.isnan(want_t))


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 70), k=st.integers(16, 90), n=st.integers(1, 26),
       dtype=st.sampled_from(["float64", "float32"]), transposed=st.booleans(),
       seed=st.integers(0, 2**16))
def test_property_skinny_products_match_numpy_python_vs_c(m, k, n, dtype, transposed, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (k, m) if transposed else (m, k)).astype(dtype)
    x = x.T if transposed else x
    y = rng.uniform(-2, 2, (k, n)).astype(dtype)
    _check(x, y, "c")
    _check(x, y, "debug")  # perform (BLAS) against the C kernel, and both against NumPy


@pytest.mark.parametrize("transposed", [False, True])
def test_grad_through_a_skinny_product_passes_verify_grad(transposed):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((20, 6) if transposed else (6, 20))

    def fn(a, b):
        return nt.dot(a.T if transposed else a, b)

    for linker in ("c", "debug"):
        verify_grad(fn, [x, rng.standard_normal((20, 3))], linker=linker)


_THREADS_SCRIPT = r"""
import hashlib, numpy as np, nbgraph as ng, nbgraph.tensor as nt
rng = np.random.default_rng(7)
h = hashlib.sha256()
for dtype in ("float64", "float32"):
    A, B = nt.matrix("A", dtype=dtype), nt.matrix("B", dtype=dtype)
    for linker in ("c", "cvm"):
        f = ng.function([A, B], nt.dot(A, B), linker=linker)
        f.program.wait_compiled()
        for m, k, n in [(600, 784, 10), (784, 600, 10), (600, 500, 10), (1000, 64, 3),
                        (97, 600, 24), (3000, 400, 10), (2000, 300, 24)]:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            h.update(f(a, b).tobytes())
            h.update(f(np.ascontiguousarray(a.T).T, b).tobytes())
print(h.hexdigest())
"""


def test_results_do_not_depend_on_the_thread_count(c_cache_dir):
    assert_thread_count_independent(_THREADS_SCRIPT,
                                    env={"NBGRAPH_CACHE_DIR": str(c_cache_dir)})
