"""Basic indexing (Subtensor) and inc_subtensor / set_subtensor against NumPy."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.subtensor import IncSubtensor, Subtensor


def compile_(inputs, outputs, **kwargs):
    return nbgraph.function(inputs, outputs, linker="py", **kwargs)


A = np.arange(60.0).reshape(3, 4, 5)

INDICES = [
    0, -1, 2, (1, 2), (0, -1, 4), (1, 2, -5),
    slice(None), slice(1, None), slice(None, -1), slice(None, None, -1), slice(None, None, 2),
    slice(-1, None, -2), slice(10, 20), slice(-10, 2), slice(2, 1), slice(0, 0),
    (slice(None), slice(3, 0, -2)), (slice(None), slice(None, None, -1), 0),
    (Ellipsis, 1), (1, Ellipsis), (1, Ellipsis, 2), (Ellipsis,), (),
    (None,), (None, 0, Ellipsis, None), (slice(-2, None), None, slice(None, None, 2), -1),
    (Ellipsis, None), (0, None, None, slice(1, 3)), (slice(None), None, 1),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_subtensor_matches_numpy(index):
    x = nt.dtensor3("x")
    out = x[index]
    expected = A[index]
    assert out.ndim == expected.ndim
    assert out.dtype == "float64"
    got = compile_([x], out)(A)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if expected.ndim and expected.size and out is not x:
        assert np.shares_memory(got, A)  # basic indexing gives a view
    # static shapes are computed exactly
    xs = nt.tensor("float64", A.shape)
    assert xs[index].type.shape == expected.shape


@pytest.mark.parametrize("index", [(0,), (-1, 0), (slice(1, None), 2)], ids=repr)
def test_subtensor_of_unknown_shape_keeps_unknown_dims(index):
    x = nt.tensor("float64", (None, 4, None))
    out = x[index]
    expected = A[index].shape
    for static, actual in zip(out.type.shape, expected):
        assert static is None or static == actual


def test_symbolic_indices_and_slices():
    x = nt.dtensor3("x")
    i, j = nt.lscalar("i"), nt.iscalar("j")
    f = compile_([x, i, j], x[i, j:, ::j])
    for iv, jv in [(0, 1), (-1, 2), (2, -1), (1, -2)]:
        np.testing.assert_array_equal(f(A, iv, jv), A[iv, jv:, ::jv])
    f = compile_([x, i], x[i:i + 2])
    np.testing.assert_array_equal(f(A, 1), A[1:3])
    b = nt.bscalar("b")
    f = compile_([x, b], x[..., b])
    np.testing.assert_array_equal(f(A, np.int8(-2)), A[..., -2])


def test_chained_indexing():
    x = nt.dtensor3("x")
    got = compile_([x], x[0][1][::-1])(A)
    np.testing.assert_array_equal(got, A[0][1][::-1])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "bool", "float32"])
def test_subtensor_keeps_dtype(dtype):
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    x = nt.tensor(dtype, (None, None))
    out = x[1:, ::-1]
    assert out.dtype == dtype
    got = compile_([x], out)(a)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, a[1:, ::-1])


def test_scalar_result_is_a_0d_array():
    x = nt.dtensor3("x")
    got = compile_([x], x[1, 2, 3])(A)
    assert isinstance(got, np.ndarray) and got.shape == () and got == A[1, 2, 3]


def test_runtime_index_out_of_bounds_raises_naming_the_node():
    x = nt.dmatrix("x")
    i = nt.lscalar("i")
    f = compile_([x, i], x[i])
    with pytest.raises(IndexError, match="Apply node"):
        f(np.ones((2, 3)), 5)


def test_subtensor_str_and_equality():
    x = nt.dmatrix()
    node = x[1:, 0].owner
    assert isinstance(node.op, Subtensor)
    assert str(node.op) == "Subtensor{i:, i}"
    assert node.op == x[2:, 1].owner.op  # index values are inputs, not props
    assert str(x[::2].owner.op) == "Subtensor{::i}"


# -- inc_subtensor / set_subtensor ----------------------------------------------------------

WRITE_INDICES = [
    0, -1, (1, 2), slice(None, None, -1), (slice(None), slice(3, 0, -2)), (Ellipsis, 1),
    (1, Ellipsis, 2), (slice(1, None), slice(None, 2), slice(None, None, -2)), (0, 1, 2),
    slice(5, 9),
]


def _region_value(index, dtype="float64"):
    shape = A[index].shape
    return (np.arange(int(np.prod(shape))) * 0.5 + 1).reshape(shape).astype(dtype)


@pytest.mark.parametrize("index", WRITE_INDICES, ids=repr)
@pytest.mark.parametrize("set_", [False, True])
def test_inc_and_set_subtensor_match_numpy(index, set_):
    x, y = nt.dtensor3("x"), nt.tensor("float64", (None,) * A[index].ndim, "y")
    op = nt.set_subtensor if set_ else nt.inc_subtensor
    out = op(x[index], y)
    assert isinstance(out.owner.op, IncSubtensor)
    assert out.type == x.type
    value = _region_value(index)
    expected = A.copy()
    if set_:
        expected[index] = value
    else:
        expected[index] += value
    a = A.copy()
    got = compile_([x, y], out)(a, value)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(a, A)  # the input is not modified
    assert not np.shares_memory(got, a)


@pytest.mark.parametrize("set_", [False, True])
def test_inc_and_set_subtensor_broadcast_the_value(set_):
    x = nt.dmatrix("x")
    a = np.arange(12.0).reshape(3, 4)
    op = nt.set_subtensor if set_ else nt.inc_subtensor
    for view, value, index in [
        (x[1:], 5.0, slice(1, None)),
        (x[:, ::2], np.array([1.0, 2.0]), (slice(None), slice(None, None, 2))),
        (x[:, 1:3], np.array([[10.0], [20.0], [30.0]]), (slice(None), slice(1, 3))),
    ]:
        y = nt.constant(value)
        got = compile_([x], op(view, y))(a)
        expected = a.copy()
        if set_:
            expected[index] = value
        else:
            expected[index] += value
        np.testing.assert_array_equal(got, expected)


def test_inc_subtensor_with_symbolic_index():
    x = nt.dmatrix("x")
    i = nt.lscalar("i")
    f = compile_([x, i], nt.inc_subtensor(x[i, i:], 1.0))
    a = np.zeros((3, 3))
    expected = a.copy()
    expected[-1, -1:] += 1.0
    np.testing.assert_array_equal(f(a, -1), expected)


def test_set_subtensor_on_integers_and_weak_values():
    m = nt.imatrix("m")
    a = np.arange(6, dtype="int32").reshape(2, 3)
    out = nt.set_subtensor(m[0], 7)
    assert out.dtype == "int32"
    got = compile_([m], out)(a)
    expected = a.copy()
    expected[0] = 7
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    out = nt.inc_subtensor(m[:, 1], 2)
    expected = a.copy()
    expected[:, 1] += 2
    np.testing.assert_array_equal(compile_([m], out)(a), expected)


def test_inc_subtensor_op_str():
    x = nt.dmatrix()
    assert str(nt.inc_subtensor(x[1:, 0], 1.0).owner.op) == "IncSubtensor{i:, i}"
    assert str(nt.set_subtensor(x[0], 1.0).owner.op) == "SetSubtensor{i}"
    assert IncSubtensor(("i",), True) != IncSubtensor(("i",), False)


def test_inc_subtensor_runtime_shape_mismatch_raises_naming_the_node():
    x, v = nt.dmatrix("x"), nt.dvector("v")
    f = compile_([x, v], nt.set_subtensor(x[0], v))
    with pytest.raises(ValueError, match="Apply node"):
        f(np.ones((2, 3)), np.ones(4))
