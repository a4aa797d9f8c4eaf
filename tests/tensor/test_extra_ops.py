"""Indexed reductions and scans (argmax/argmin, max_and_argmax, all/any, var/std,
cumsum/cumprod, diff, norm) against NumPy: dtypes, values, shapes, grads, refusals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbgraph
import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

AxisError = np.exceptions.AxisError
rng = np.random.default_rng(3)
DTYPES = ["bool", "int8", "uint8", "int32", "uint64", "float32", "float64"]


def arrays(dtype, min_side=0, min_dims=0):
    elements = None
    if dtype.startswith("float"):
        elements = st.floats(-100, 100, width=32 if dtype == "float32" else 64)
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=min_side,
                                              max_side=4), elements=elements)


def axis_for(data, ndim, allow_none=True):
    choices = ([None] if allow_none else []) + list(range(-ndim, ndim))
    return data.draw(st.sampled_from(choices)) if choices else None


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: arrays(d, min_side=1)), st.data(),
       st.booleans())
def test_argmax_argmin_match_numpy(oracle, a, data, keepdims):
    axis = axis_for(data, a.ndim)
    x = oracle.sym(a)
    for name in ("argmax", "argmin"):
        expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
        oracle.check([x], getattr(nt, name)(x, axis=axis, keepdims=keepdims), [a], expected)
        oracle.check([x], getattr(x, name)(axis=axis, keepdims=keepdims), [a], expected)


def test_argmax_ties_and_nan_give_the_first(oracle):
    a = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan]])
    x = oracle.sym(a)
    oracle.check([x], nt.argmax(x, axis=1), [a], np.argmax(a, axis=1))
    oracle.check([x], nt.argmin(x, axis=1), [a], np.argmin(a, axis=1))


def test_argmax_over_several_axes_flattens_them_in_order(oracle):
    a = rng.normal(size=(2, 3, 4))
    x = oracle.sym(a)
    moved = np.transpose(a, (1, 0, 2)).reshape(3, -1)
    oracle.check([x], nt.argmax(x, axis=(0, 2)), [a], np.argmax(moved, axis=1))


def test_argmax_refusals():
    with pytest.raises(AxisError, match="argmax: axis 2 is out of bounds"):
        nt.argmax(nt.dmatrix(), axis=2)
    with pytest.raises(ValueError, match="empty sequence"):
        nt.argmax(nt.tensor("float64", (0, 3)), axis=0)
    x = nt.dmatrix("x")
    f = nbgraph.function([x], nt.argmax(x, axis=1), linker="py")
    with pytest.raises(ValueError, match="empty sequence"):
        f(np.zeros((2, 0)))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("dtype", ["float64", "int16", "bool"])
def test_max_and_argmax(oracle, axis, dtype):
    a = (rng.integers(0, 5, size=(3, 4))).astype(dtype)
    x = oracle.sym(a)
    mx, arg = nt.max_and_argmax(x, axis=axis)
    oracle.check([x], mx, [a], np.max(a, axis=axis))
    flat = a.reshape(-1) if axis in (None, (0, 1)) else a
    oracle.check([x], arg, [a], np.argmax(flat, axis=None if axis in (None, (0, 1)) else axis))
    if dtype == "float64":
        verify_grad(lambda v: nt.max_and_argmax(v, axis=axis)[0], [rng.normal(size=(3, 4))])


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(arrays), st.data(), st.booleans())
def test_all_any_match_numpy(oracle, a, data, keepdims):
    axis = axis_for(data, a.ndim)
    x = oracle.sym(a)
    for name in ("all", "any"):
        expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
        oracle.check([x], getattr(nt, name)(x, axis=axis, keepdims=keepdims), [a], expected,
                     debug=False)
        oracle.check([x], getattr(x, name)(axis=axis, keepdims=keepdims), [a], expected,
                     debug=False)


@pytest.mark.needs_cc
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "float64"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any_in_c_match_python_and_numpy(oracle, dtype, axis, name):
    a = (np.arange(60).reshape(3, 4, 5) % 3 == 0).astype(dtype)
    if dtype.startswith("float"):
        a[1] = np.nan
    x = oracle.sym(a)
    out = getattr(nt, name)(x, axis=axis)
    expected = getattr(np, name)(a, axis=axis)
    oracle.check([x], out, [a], expected)  # py and debug (Python beside C)
    oracle.same(nbgraph.function([x], out, linker="c")(a), expected)
    empty = np.zeros((3, 0, 5), dtype)
    oracle.same(nbgraph.function([x], out, linker="c")(empty), getattr(np, name)(empty, axis))


def test_any_counts_nan_as_true(oracle):
    a = np.array([0.0, np.nan])
    x = oracle.sym(a)
    oracle.check([x], nt.any(x), [a], np.any(a))
    oracle.check([x], nt.all(x), [a], np.all(a))


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["int8", "int64", "uint8", "bool", "float32", "float64"]).flatmap(
    lambda d: arrays(d, min_side=1)), st.data(), st.integers(0, 2), st.booleans())
def test_var_std_match_numpy(oracle, a, data, ddof, keepdims):
    axis = axis_for(data, a.ndim)
    x = oracle.sym(a)
    for name in ("var", "std"):
        with np.errstate(all="ignore"):
            expected = getattr(np, name)(a, axis=axis, ddof=ddof, keepdims=keepdims)
        out = getattr(nt, name)(x, axis=axis, ddof=ddof, keepdims=keepdims)
        with np.errstate(all="ignore"):
            oracle.check([x], out, [a], expected, ulps=8 if a.dtype == "float64" else 64)


def test_var_std_method_grad_and_corrected(oracle):
    a = rng.normal(size=(3, 4))
    x = oracle.sym(a)
    oracle.check([x], x.var(axis=0, corrected=True), [a], np.var(a, axis=0, ddof=1), ulps=4)
    oracle.check([x], x.std(), [a], np.std(a), ulps=4)
    verify_grad(lambda v: nt.var(v, axis=1, ddof=1), [a])
    verify_grad(lambda v: nt.std(v, axis=0), [a])
    with pytest.raises(TypeError, match="var: ddof must be an int"):
        nt.var(x, ddof=0.5)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(arrays), st.data())
def test_cumsum_cumprod_match_numpy(oracle, a, data):
    axis = axis_for(data, a.ndim)
    if a.dtype.kind == "f":
        a = np.round(a / 25, 1).astype(a.dtype)  # keep products of floats exact
    x = oracle.sym(a)
    for name in ("cumsum", "cumprod"):
        expected = getattr(np, name)(a, axis=axis)
        oracle.check([x], getattr(nt, name)(x, axis=axis), [a], expected, ulps=4)
        oracle.check([x], getattr(x, name)(axis=axis), [a], expected, ulps=4)


def test_cum_static_shapes_and_refusals():
    x = nt.tensor("int8", (2, 3))
    assert nt.cumsum(x).type == nt.TensorType("int64", (6,))
    assert nt.cumprod(x, axis=1).type == nt.TensorType("int64", (2, 3))
    with pytest.raises(AxisError, match="cumsum: axis 2 is out of bounds"):
        nt.cumsum(x, axis=2)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumsum_cumprod_grads(axis):
    a = rng.normal(size=(3, 4))
    verify_grad(lambda v: nt.cumsum(v, axis=axis), [a])
    verify_grad(lambda v: nt.cumprod(v, axis=axis), [a])


def test_cumprod_grad_is_exact_with_zeros():
    a = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 0.0, 1.5, 2.0]])
    verify_grad(lambda v: nt.cumprod(v, axis=1), [a])
    x = nt.dvector("x")
    g = nbgraph.function([x], nbgraph.grad(nt.sum(nt.cumprod(x)), x), linker="py")
    v = np.array([2.0, 0.0, 3.0])
    # d/dx of x0 + x0 x1 + x0 x1 x2 at (2, 0, 3): (1, 2 + 6, 0)
    np.testing.assert_allclose(g(v), [1.0, 8.0, 0.0])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: arrays(d, min_dims=1)), st.data(),
       st.integers(0, 3))
def test_diff_matches_numpy(oracle, a, data, n):
    axis = axis_for(data, a.ndim, allow_none=False)
    x = oracle.sym(a)
    with np.errstate(all="ignore"):
        expected = np.diff(a, n=n, axis=axis)
        oracle.check([x], nt.diff(x, n=n, axis=axis), [a], expected)


def test_diff_grad_and_refusals():
    verify_grad(lambda v: nt.diff(v, n=2, axis=0), [rng.normal(size=(5, 2))])
    with pytest.raises(ValueError, match="order must be non-negative"):
        nt.diff(nt.dvector(), n=-1)
    with pytest.raises(ValueError, match="at least one dimensional"):
        nt.diff(nt.dscalar())


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_vector_norms_match_numpy(oracle, ord, dtype):
    a = (rng.normal(size=(3, 5)) * 4).astype(dtype)
    a[0, 1] = 0
    x = oracle.sym(a)
    with np.errstate(all="ignore"):
        oracle.check([x], nt.norm(x, ord=ord, axis=1), [a], np.linalg.norm(a, ord=ord, axis=1),
                     ulps=16)
        oracle.check([x], nt.norm(x[0], ord=ord), [a], np.linalg.norm(a[0], ord=ord), ulps=16)
        oracle.check([x], nt.norm(x, ord=ord, axis=0, keepdims=True), [a],
                     np.linalg.norm(a, ord=ord, axis=0, keepdims=True), ulps=16)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"])
@pytest.mark.parametrize("axis", [None, (0, 1), (1, 0)])
def test_matrix_norms_match_numpy(oracle, ord, axis):
    a = rng.normal(size=(3, 4))
    x = oracle.sym(a)
    oracle.check([x], nt.norm(x, ord=ord, axis=axis), [a], np.linalg.norm(a, ord=ord, axis=axis),
                 ulps=8)
    oracle.check([x], nt.norm(x, ord=ord, axis=axis, keepdims=True), [a],
                 np.linalg.norm(a, ord=ord, axis=axis, keepdims=True), ulps=8)


def test_norm_of_any_ndim_flattens_grad_and_refusals(oracle):
    a = rng.normal(size=(2, 3, 2))
    x = oracle.sym(a)
    oracle.check([x], nt.norm(x), [a], np.linalg.norm(a), ulps=8)
    oracle.check([x], x.norm(), [a], np.linalg.norm(a), ulps=8)
    verify_grad(lambda v: nt.norm(v, axis=1), [a])
    verify_grad(lambda v: nt.norm(v, ord=1, axis=(0, 1)), [a[:, :, 0]])
    with pytest.raises(ValueError, match="improper number of dimensions"):
        nt.norm(x, ord=1)
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        nt.norm(x, ord="fro", axis=0)
    with pytest.raises(ValueError, match="invalid norm order"):
        nt.norm(x, ord=3, axis=(0, 1))
    with pytest.raises(NotImplementedError, match="only matrices"):
        nt.norm(x, ord="nuc", axis=(0, 1))
