"""Reductions (sum, prod, max, min, mean) and ProdWithoutSelf against NumPy."""

import warnings

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.basic import shape_i
from nbgraph.tensor.reduction import ProdWithoutSelf, Reduce, normalize_axis


def compile_(inputs, outputs, **kwargs):
    return nbgraph.function(inputs, outputs, linker="py", **kwargs)


def sym(value, static=False):
    value = np.asarray(value)
    return nt.tensor(value.dtype, value.shape if static else (None,) * value.ndim)


def eval_infer_shape(inputs, var, *values):
    node = var.owner
    in_shapes = [tuple(shape_i(i, d) for d in range(i.ndim)) for i in node.inputs]
    entries = list(node.op.infer_shape(node, in_shapes)[node.outputs.index(var)])
    if not entries:
        return ()
    f = compile_(inputs, entries, on_unused_input="ignore")
    return tuple(int(v) for v in f(*values))


ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float32", "float64"]
AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 1), (0, 1, 2), ()]
KINDS = ["sum", "prod", "max", "min", "mean"]


def data(dtype, shape=(2, 3, 4)):
    return ((np.arange(int(np.prod(shape))) % 5) + (1 if dtype != "bool" else 0)).reshape(
        shape).astype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduction_dtypes_match_numpy(kind, dtype):
    a = data(dtype)
    x = sym(a)
    out = getattr(nt, kind)(x)
    expected = getattr(np, kind)(a)
    assert out.dtype == expected.dtype.name, (kind, dtype)
    got = compile_([x], out)(a)
    assert isinstance(got, np.ndarray) and got.shape == ()
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "int8", "float32"])
def test_reduction_axes_and_keepdims(kind, axis, keepdims, dtype):
    a = data(dtype)
    x = sym(a)
    out = getattr(nt, kind)(x, axis=axis, keepdims=keepdims)
    expected = getattr(np, kind)(a, axis=axis, keepdims=keepdims)
    got = compile_([x], out)(a)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # the method spelling gives the same
    got = compile_([x], getattr(x, kind)(axis=axis, keepdims=keepdims))(a)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # static shapes
    xs = sym(a, static=True)
    assert getattr(nt, kind)(xs, axis=axis, keepdims=keepdims).type.shape == expected.shape
    if keepdims:
        # the reduced axes are statically of size 1 even with an unknown input shape
        assert all(out.type.shape[i] == 1 for i in normalize_axis(axis, 3))


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_reduce_infer_shape(kind):
    a = data("float64")
    x = sym(a)
    for axis in [(0,), (1, 2), (), (0, 1, 2)]:
        out = Reduce(kind, axis)(x)
        assert eval_infer_shape([x], out, a) == getattr(np, kind)(a, axis=axis).shape


def test_sum_of_small_ints_accumulates_without_overflow():
    a = np.full(1000, 100, dtype="int8")
    x = sym(a)
    got = compile_([x], nt.sum(x))(a)
    assert got.dtype == np.int64 and int(got) == 100000
    u = np.full(1000, 200, dtype="uint8")
    xu = sym(u)
    got = compile_([xu], nt.sum(xu))(u)
    assert got.dtype == np.uint64 and int(got) == 200000
    b = np.array([True, True, False, True])
    xb = sym(b)
    got = compile_([xb], nt.sum(xb))(b)
    assert got.dtype == np.int64 and int(got) == 3
    got = compile_([xb], nt.prod(xb))(b)
    assert got.dtype == np.int64 and int(got) == 0
    got = compile_([xb], nt.max(xb))(b)
    assert got.dtype == np.bool_ and bool(got) is True


def test_mean_dtypes():
    f32 = np.array([1.0, 2.0, 4.0], "float32")
    x = sym(f32)
    out = nt.mean(x)
    assert out.dtype == "float32"
    got = compile_([x], out)(f32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.mean(f32))
    for dtype in ["int8", "int32", "uint64", "bool"]:
        a = data(dtype, (5,))
        xi = sym(a)
        out = nt.mean(xi)
        assert out.dtype == "float64", dtype
        got = compile_([xi], out)(a)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, np.mean(a))


def test_mean_with_static_and_unknown_sizes():
    a = np.arange(12.0, dtype="float32").reshape(3, 4)
    for x in (sym(a), sym(a, static=True), nt.tensor("float32", (3, None))):
        for axis in (None, 0, 1, (0, 1)):
            out = nt.mean(x, axis=axis)
            assert out.dtype == "float32"
            got = compile_([x], out)(a)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, np.mean(a, axis=axis), rtol=1e-6)


@pytest.mark.parametrize("kind", ["max", "min", "sum", "prod", "mean"])
def test_nan_propagates(kind):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]])
    x = sym(a)
    for axis in (None, 0, 1):
        got = compile_([x], getattr(nt, kind)(x, axis=axis))(a)
        with np.errstate(invalid="ignore"):
            expected = getattr(np, kind)(a, axis=axis)
        np.testing.assert_array_equal(got, expected)


def test_max_min_with_infinities_and_signed_zero_count():
    a = np.array([-np.inf, np.inf, 0.0])
    x = sym(a)
    assert compile_([x], nt.max(x))(a) == np.inf
    assert compile_([x], nt.min(x))(a) == -np.inf


def test_max_of_empty_raises_at_run_time_naming_the_node():
    x = nt.dvector("x")
    f = compile_([x], nt.max(x))
    with pytest.raises(ValueError, match="Apply node"):
        f(np.zeros(0))


def test_sum_and_prod_of_empty():
    a = np.zeros((0, 3))
    x = sym(a)
    np.testing.assert_array_equal(compile_([x], nt.sum(x, axis=0))(a), np.zeros(3))
    np.testing.assert_array_equal(compile_([x], nt.prod(x, axis=0))(a), np.ones(3))
    assert compile_([x], nt.sum(x, axis=1))(a).shape == (0,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compile_([x], nt.mean(x))(a)
    assert np.isnan(got)


def test_reduction_of_a_scalar():
    x = nt.dscalar("x")
    for kind in ("sum", "prod", "max", "min", "mean"):
        out = getattr(nt, kind)(x)
        assert out.type.shape == ()
        assert float(compile_([x], out)(2.5)) == 2.5
        out = getattr(nt, kind)(x, keepdims=True)
        assert out.type.shape == ()


def test_reduce_op_identity_and_str():
    assert Reduce("sum", (0, 1)) == Reduce("sum", [0, 1])
    assert Reduce("sum", (0,)) != Reduce("prod", (0,))
    assert str(Reduce("max", (0, 2))) == "Max{axis=0,2}"
    # negative axes are normalised when a node is made
    node = Reduce("sum", (-1,)).make_node(nt.dmatrix())
    assert node.op.axis == (1,)


def test_normalize_axis():
    assert normalize_axis(None, 3) == (0, 1, 2)
    assert normalize_axis(-1, 3) == (2,)
    assert normalize_axis((2, -3), 3) == (0, 2)
    assert normalize_axis(np.int64(1), 2) == (1,)


# -- ProdWithoutSelf ------------------------------------------------------------------------

def _prod_without_self_reference(a, axis):
    out = np.empty_like(a)
    for index in np.ndindex(a.shape):
        mask = np.zeros(a.shape, dtype=bool)
        # the other elements of the same reduction group
        group = tuple(slice(None) if d in axis else index[d] for d in range(a.ndim))
        mask[group] = True
        mask[index] = False
        out[index] = np.prod(a[mask])
    return out


@pytest.mark.parametrize("axis", [(0,), (1,), (0, 1), (1, 2), (0, 2), (2,)])
def test_prod_without_self(axis):
    a = np.array([[[1.0, 2.0, 0.0, 3.0], [2.0, -1.0, 4.0, 0.5], [0.0, 0.0, 3.0, 1.0]],
                  [[2.0, 2.0, 2.0, 2.0], [0.0, 1.0, 1.0, 1.0], [5.0, -2.0, 1.0, 3.0]]])
    x = sym(a)
    out = ProdWithoutSelf(axis)(x)
    got = compile_([x], out)(a)
    np.testing.assert_allclose(got, _prod_without_self_reference(a, axis))
    assert got.dtype == a.dtype and got.shape == a.shape
    assert eval_infer_shape([x], out, a) == a.shape


def test_prod_without_self_of_empty_axis():
    a = np.zeros((0, 3))
    x = sym(a)
    got = compile_([x], ProdWithoutSelf((0,))(x))(a)
    assert got.shape == (0, 3)
