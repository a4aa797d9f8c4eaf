"""Dot's C kernels (nbgraph/tensor/c_code/dot.py) against NumPy.

Every product form (vector·vector, matrix·vector, vector·matrix,
matrix·matrix) runs under linker "c" and under the debug linker (which also
cross-checks ``perform`` against the kernel), with odd and empty sizes,
sizes around the parallel split, transposed / strided / reversed /
broadcast operands, every dtype and mixed dtypes.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.testing import assert_thread_count_independent, verify_grad

pytestmark = pytest.mark.needs_cc


_FUNCS = {}


def _fn(xdtype, xnd, ydtype, ynd, linker):
    """One compiled ``dot(x, y)`` per signature (shapes are dynamic)."""
    key = (xdtype, xnd, ydtype, ynd, linker)
    if key not in _FUNCS:
        x = nt.tensor(xdtype, (None,) * xnd, "x")
        y = nt.tensor(ydtype, (None,) * ynd, "y")
        _FUNCS[key] = ng.function([x, y], nt.dot(x, y), linker=linker)
    return _FUNCS[key]


def _values(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _check(x, y, linker="c"):
    f = _fn(x.dtype.name, x.ndim, y.dtype.name, y.ndim, linker)
    got = f(x, y)
    want = np.dot(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        # summation order differs from BLAS: the output Type's tolerance, and
        # an error bound relative to the sum of the terms' magnitudes
        assert nt.TensorType(want.dtype, want.shape).values_eq_approx(got, want)
        tol = 2e-6 if want.dtype == np.float32 else 1e-14
        scale = np.dot(np.abs(x).astype("float64"), np.abs(y).astype("float64")) + 1.0
        err = np.abs(got.astype("float64") - want.astype("float64"))
        assert np.all(err <= tol * scale * max(1, x.shape[-1]) ** 0.5), \
            float(np.max(err / scale))
    else:
        np.testing.assert_array_equal(got, want)
    return got


SHAPES = [((0,), (0,)), ((1,), (1,)), ((7,), (7,)), ((37,), (37,)),
          ((0, 5), (5,)), ((5, 0), (0,)), ((1, 1), (1,)), ((7, 5), (5,)), ((13, 37), (37,)),
          ((0,), (0, 4)), ((5,), (5, 0)), ((7,), (7, 9)), ((37,), (37, 13)),
          ((0, 3), (3, 4)), ((3, 0), (0, 4)), ((3, 4), (4, 0)), ((1, 1), (1, 1)),
          ((7, 5), (5, 9)), ((13, 37), (37, 11))]


@pytest.mark.parametrize("linker", ["c", "debug"])
@pytest.mark.parametrize("xs,ys", SHAPES)
def test_every_form_and_odd_or_empty_sizes_match_numpy(xs, ys, linker):
    rng = np.random.default_rng(len(xs) * 100 + sum(xs) + sum(ys))
    _check(_values(xs, "float64", rng), _values(ys, "float64", rng), linker)


DTYPES = ["float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_in_every_form(dtype):
    rng = np.random.default_rng(1)
    for xs, ys in [((37,), (37,)), ((13, 37), (37,)), ((37,), (37, 13)), ((13, 37), (37, 11)),
                   ((70, 300), (300, 9))]:
        _check(_values(xs, dtype, rng), _values(ys, dtype, rng), "c")


MIXED = [("float32", "float64"), ("int8", "float32"), ("int32", "float32"),
         ("int64", "float32"), ("bool", "int8"), ("bool", "float64"), ("uint8", "int8"),
         ("uint64", "int64"), ("int32", "uint32"), ("int16", "int64"), ("uint8", "bool")]


@pytest.mark.parametrize("linker", ["c", "debug"])
@pytest.mark.parametrize("dx,dy", MIXED)
def test_mixed_dtypes_compute_in_numpys_result_dtype(dx, dy, linker):
    rng = np.random.default_rng(2)
    for xs, ys in [((9,), (9,)), ((6, 9), (9,)), ((9,), (9, 6)), ((6, 9), (9, 5))]:
        _check(_values(xs, dx, rng), _values(ys, dy, rng), linker)


def _layouts(a):
    """``a``'s values under other memory layouts (same shape)."""
    yield np.ascontiguousarray(a)
    if a.ndim == 2:
        yield np.asfortranarray(a)                              # the transposed view X.T
        yield np.ascontiguousarray(a.T).T[::1, ::1]
        big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
        big[::2, ::3] = a
        yield big[::2, ::3]                                     # strided both ways
        yield np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]   # negative strides
        yield np.ascontiguousarray(a[::-1])[::-1]               # reversed rows only
        yield np.ascontiguousarray(a[:, ::-1])[:, ::-1]         # reversed columns only
    else:
        big = np.zeros(a.shape[0] * 3, a.dtype)
        big[::3] = a
        yield big[::3]
        yield np.ascontiguousarray(a[::-1])[::-1]


@pytest.mark.parametrize("linker", ["c", "debug"])
@pytest.mark.parametrize("xs,ys", [((7, 5), (5,)), ((5,), (5, 7)), ((9,), (9,)),
                                   ((7, 5), (5, 9)), ((70, 300), (300,)), ((300,), (300, 70))])
def test_transposed_strided_and_negative_stride_views(xs, ys, linker):
    rng = np.random.default_rng(3)
    x0, y0 = _values(xs, "float64", rng), _values(ys, "float64", rng)
    for x in _layouts(x0):
        for y in _layouts(y0):
            _check(x, y, linker)
    for x in _layouts(_values(xs, "int16", rng)):
        _check(x, _values(ys, "int16", rng), linker)


def test_zero_stride_broadcast_operands():
    rng = np.random.default_rng(4)
    row = rng.uniform(-1, 1, 40)
    col = rng.uniform(-1, 1, 30)
    v = rng.uniform(-1, 1, 40)
    _check(np.broadcast_to(row, (30, 40)), v)                   # strides (0, 8)
    _check(np.broadcast_to(col[:, None], (30, 40)), v)          # strides (8, 0)
    _check(np.broadcast_to(np.float64(2.5), (30, 40)), v)       # strides (0, 0)
    _check(np.broadcast_to(np.float64(2.5), (40,)), v)
    _check(v, np.broadcast_to(col[None, :], (40, 30)))
    _check(np.broadcast_to(row, (30, 40)), np.broadcast_to(v[:, None], (40, 30)))


# Row blocks: a power of two (at most 16) of at least 32768 elements and 16 rows each.
@pytest.mark.parametrize("m,k", [(31, 4096), (32, 4096), (33, 4096), (63, 1040), (64, 1024),
                                 (65, 1024), (64, 1023), (127, 1031), (1000, 100), (1001, 99),
                                 (4099, 130), (2, 40000), (40000, 3)])
def test_sizes_around_the_parallel_split(m, k):
    rng = np.random.default_rng(m + k)
    a = rng.uniform(-1, 1, (m, k))
    _check(a, rng.uniform(-1, 1, k))             # rows loop
    _check(a.T, rng.uniform(-1, 1, m))           # axpy loop over a's rows
    _check(rng.uniform(-1, 1, m), a)             # vector . matrix: the axpy loop too
    _check(a.astype("float32"), rng.uniform(-1, 1, k).astype("float32"))
    _check(a.T.astype("int32"), rng.integers(-9, 9, m).astype("int32"))


@pytest.mark.parametrize("m,k,n", [(48, 256, 512), (49, 257, 513), (97, 600, 35),
                                   (5, 700, 530), (200, 130, 300)])
def test_matrix_products_across_cache_blocks(m, k, n):
    rng = np.random.default_rng(m * k)
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    _check(a, b)
    _check(np.asfortranarray(a), b[::-1])
    _check(a.astype("float32"), b.astype("float32"))
    _check((a * 50).astype("int64"), (b * 50).astype("int64"))


def test_integer_overflow_wraps_like_numpy():
    x8 = np.array([100, 100, 100], np.int8)
    y8 = np.array([2, 2, 2], np.int8)
    assert _check(x8, y8) == np.int8(600 - 512)
    big = np.iinfo(np.int64).max
    _check(np.array([big, big, 3], np.int64), np.array([big, 2, big], np.int64))
    _check(np.array([[200, 100], [255, 255]], np.uint8), np.array([250, 3], np.uint8))
    _check(np.array([[30000, 30000]], np.int16), np.array([[30000], [3]], np.int16))
    _check(np.array([2 ** 31 - 1, 5], np.int32), np.array([[7, 1], [2 ** 30, 3]], np.int32))
    u = np.full((5, 40), 2 ** 63 + 12345, np.uint64)
    _check(u, np.full(40, 3, np.uint64))


def test_bool_products_are_or_of_and():
    x = np.array([[True, False, True], [False, False, False]])
    y = np.array([False, True, True])
    np.testing.assert_array_equal(_check(x, y), [True, False])
    # values other than 0/1 in a bool array still count as True
    weird = np.array([0, 2, 0], np.uint8).view(bool)
    assert _check(weird, np.array([False, True, False])) == np.True_


@pytest.mark.parametrize("linker", ["c", "debug"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_and_inf_propagate(linker):
    nan, inf = np.nan, np.inf
    x = np.array([[1.0, 2.0, 3.0], [nan, 1.0, 1.0], [inf, 1.0, 1.0], [inf, -inf, 0.0],
                  [1e308, 1e308, 0.0], [0.0, 0.0, 0.0]])
    v = np.array([0.5, 2.0, -1.0])
    f = _fn("float64", 2, "float64", 1, linker)
    got = f(x, v)
    np.testing.assert_array_equal(np.isnan(got), [False, True, False, True, False, False])
    assert got[2] == inf and got[4] == inf and got[0] == 1.5
    got_t = _fn("float64", 1, "float64", 2, linker)(v, np.ascontiguousarray(x.T))
    np.testing.assert_array_equal(np.isnan(got_t), np.isnan(got))
    w = np.array([0.0, 1.0, 1.0])  # inf * 0 is NaN
    assert np.isnan(f(x, w)[2])
    big = np.tile(x, (400, 1))  # the parallel paths
    np.testing.assert_array_equal(np.isnan(f(big, v)), np.isnan(np.tile(got, 400)))
    np.testing.assert_array_equal(np.isnan(_fn("float64", 2, "float64", 2, linker)(x, x.T)),
                                  np.isnan(x @ x.T))


@pytest.mark.parametrize("linker", ["c", "debug"])
@pytest.mark.parametrize("xs,ys", [((3, 4), (5,)), ((4,), (5,)), ((4,), (5, 2)),
                                   ((3, 4), (5, 2))])
def test_misaligned_shapes_raise_a_value_error_at_run_time(xs, ys, linker):
    f = _fn("float64", len(xs), "float64", len(ys), linker)
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones(xs), np.ones(ys))
    assert np.array_equal(f(np.ones(xs[:-1] + (2,)), np.ones((2,) + ys[1:])),
                          np.dot(np.ones(xs[:-1] + (2,)), np.ones((2,) + ys[1:])))


def test_the_c_error_names_the_node():
    x, y = nt.dmatrix("x"), nt.dvector("y")
    f = ng.function([x, y], nt.dot(x, y), linker="c")
    with pytest.raises(ValueError, match=r"dot: shapes \(3, 4\) and \(5,\) are not aligned") \
            as info:
        f(np.ones((3, 4)), np.ones(5))
    assert "Dot" in str(info.value)


def test_c_preferred_runs_float_matrix_products_in_c_only_with_the_blas(monkeypatch):
    from nbgraph.tensor import blas_threads
    from nbgraph.tensor.c_code import dot

    def node(xd, xn, yd, yn):
        return nt.dot(nt.tensor(xd, (None,) * xn), nt.tensor(yd, (None,) * yn)).owner

    floats = [node("float64", 2, "float64", 2), node("float32", 2, "float32", 2)]
    for n in floats:  # the C calls the BLAS itself when it finds one
        assert n.op.c_preferred(n) == blas_threads.c_blas_found()
    for found, switch in [(False, True), (True, False)]:
        monkeypatch.setitem(blas_threads._state, "c_blas", found)
        monkeypatch.setattr(dot, "C_BLAS", switch)
        for n in floats:  # no BLAS for the C: NumPy's
            assert not n.op.c_preferred(n)
    monkeypatch.setattr(dot, "C_BLAS", True)
    for args in [("float64", 2, "float32", 2), ("int32", 2, "float32", 2)]:
        n = node(*args)  # converted operands: NumPy's
        assert not n.op.c_preferred(n), args
    for args in [("float64", 2, "float64", 1), ("float64", 1, "float64", 2),
                 ("float32", 1, "float32", 1), ("int64", 2, "int64", 2),
                 ("bool", 2, "bool", 2)]:
        n = node(*args)
        assert n.op.c_preferred(n), args


_THREADS_SCRIPT = r"""
import hashlib, numpy as np, nbgraph as ng, nbgraph.tensor as nt
rng = np.random.default_rng(7)
h = hashlib.sha256()
A, B, v = nt.dmatrix("A"), nt.dmatrix("B"), nt.dvector("v")
S, s = nt.fmatrix("S"), nt.fvector("s")
mv = ng.function([A, v], nt.dot(A, v), linker="c")
mm = ng.function([A, B], nt.dot(A, B), linker="c")
fmv = ng.function([S, s], nt.dot(S, s), linker="c")
for m, k in [(1000, 100), (4099, 130), (200, 3000), (64, 512), (40000, 3)]:
    a = rng.standard_normal((m, k))
    for out in (mv(a, rng.standard_normal(k)), mv(a.T, rng.standard_normal(m)),
                fmv(a.astype("float32"), rng.standard_normal(k).astype("float32")),
                fmv(a.T.astype("float32"), rng.standard_normal(m).astype("float32"))):
        h.update(out.tobytes())
cmm = ng.function([A, B], nt.dot(A, B), linker="cvm")  # BLAS's products in C too
cmm.program.wait_compiled()
for m, k, n in [(300, 300, 300), (97, 600, 35), (64, 300, 40), (600, 784, 500)]:
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    h.update(mm(a, b).tobytes())
    h.update(cmm(a, b).tobytes())
    h.update(cmm(np.asfortranarray(a), np.asfortranarray(b)).tobytes())
print(h.hexdigest())
"""


def test_results_do_not_depend_on_the_thread_count(c_cache_dir):
    assert_thread_count_independent(_THREADS_SCRIPT,
                                    env={"NBGRAPH_CACHE_DIR": str(c_cache_dir)})


@pytest.mark.parametrize("xs,ys", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)),
                                   ((3, 4), (4, 2))])
def test_grad_through_dot_passes_verify_grad(xs, ys):
    rng = np.random.default_rng(5)
    verify_grad(nt.dot, [rng.standard_normal(xs), rng.standard_normal(ys)], linker="c")
    verify_grad(nt.dot, [rng.standard_normal(xs), rng.standard_normal(ys)], linker="debug")


def test_logistic_regression_gradient_in_c():
    X, w = nt.dmatrix("X"), nt.dvector("w")
    cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w))))
    f = ng.function([X, w], ng.grad(cost, w), linker="c")
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((1000, 100)), rng.standard_normal(100) * 0.1
    e = np.exp(-xv.dot(wv))
    np.testing.assert_allclose(f(xv, wv), -xv.T.dot(e / (1 + e)), rtol=1e-10, atol=1e-12)
