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


def eval_infer_shape(inputs, var, *values):
    """Evaluate the shape ``var.owner.op.infer_shape`` gives for ``var``."""
    node = var.owner
    in_shapes = [tuple(nt.shape_i(i, d) for d in range(i.ndim)) for i in node.inputs]
    entries = list(node.op.infer_shape(node, in_shapes)[node.outputs.index(var)])
    if not entries:
        return ()
    f = compile_(inputs, entries, on_unused_input="ignore")
    return tuple(int(v) for v in f(*values))


def _subtensor_of(out):
    """The Subtensor node behind ``out`` (indexing with None adds a DimShuffle on top)."""
    node = out.owner
    while node is not None and not isinstance(node.op, Subtensor):
        node = node.inputs[0].owner
    return node


SHAPES = [(3, 4, 5), (0, 4, 5), (1, 1, 1), (6, 0, 2)]


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_subtensor_infer_shape_matches_numpy(index, shape):
    a = np.zeros(shape)
    try:
        expected = a[index]
    except IndexError:
        return  # an integer index out of range for this shape
    x = nt.dtensor3("x")
    node = _subtensor_of(x[index])
    if node is None:
        return  # x[()] and x[...] are x itself
    view = node.outputs[0]
    want = np.shape(a[tuple(_numpy_index(node.op, node.inputs[1:]))])
    assert eval_infer_shape([x], view, a) == want
    assert x[index].ndim == expected.ndim


def _numpy_index(op, inputs):
    return op.index_tuple([int(v.data) for v in inputs])


BOUNDS = [None, -9, -4, -1, 0, 1, 2, 3, 7]
STEPS = [None, -3, -2, -1, 1, 2, 5]


@pytest.mark.parametrize("step", STEPS)
def test_subtensor_infer_shape_with_symbolic_bounds(step):
    """Start, stop and step given at run time (negative steps, clamping, empty slices)."""
    x = nt.dvector("x")
    i, j, k = nt.lscalar("i"), nt.iscalar("j"), nt.bscalar("k")
    parts = [i, j, None if step is None else k]
    for start_given in (False, True):
        for stop_given in (False, True):
            index = slice(i if start_given else None, j if stop_given else None, parts[2])
            view = x[index]
            node = view.owner
            in_shapes = [(nt.shape_i(x, 0),)] + [()] * (len(node.inputs) - 1)
            (shape,) = node.op.infer_shape(node, in_shapes)
            f = compile_([x, i, j, k], list(shape), on_unused_input="ignore")
            for n in (0, 1, 5):
                a = np.zeros(n)
                for start in BOUNDS[1:] if start_given else [None]:
                    for stop in BOUNDS[1:] if stop_given else [None]:
                        args = [np.int64(start or 0), np.int32(stop or 0), np.int8(step or 1)]
                        want = len(a[start:stop:step])
                        assert int(f(a, *args)[0]) == want, (n, start, stop, step)


def test_subtensor_infer_shape_with_a_symbolic_index_and_static_input():
    x = nt.tensor("float64", (3, None, 5))
    i = nt.lscalar("i")
    out = x[i, 1:, ::-2]
    assert out.type.shape == (None, 3)
    assert eval_infer_shape([x, i], out, np.zeros((3, 4, 5)), np.int64(-1)) == (3, 3)


def test_slice_length_folds_constants_and_matches_python():
    from nbgraph.tensor.subtensor import slice_length

    for start in BOUNDS:
        for stop in BOUNDS:
            for step in STEPS:
                for n in (0, 1, 4):
                    got = slice_length(start, stop, step, n)
                    assert isinstance(got, nt.Constant)
                    assert int(got.data) == len(range(*slice(start, stop, step).indices(n)))
    n = nt.lscalar("n")
    assert slice_length(None, None, None, n) is n  # x[:] keeps the size itself
    with pytest.raises(ValueError, match="zero"):
        slice_length(None, None, 0, 3)


def test_equal_subtensors_merge():
    x = nt.dvector("x")
    assert hash(x[1:].owner.op) == hash(x[1:].owner.op)
    f = compile_([x], [x[1:] * 2, x[1:] + 1])
    assert sum(isinstance(n.op, Subtensor) for n in f.fgraph.apply_nodes) == 1
    assert len({IncSubtensor((slice("i", None),)), IncSubtensor((slice("i", None),))}) == 1


@pytest.mark.parametrize("index", [(0,), (-1, 0), (slice(1, None), 2)], ids=repr)
def test_subtensor_of_unknown_shape_keeps_unknown_dims(index):
    x = nt.tensor("float64", (None, 4, None))
    out = x[index]
    expected = A[index].shape
    for static, actual in zip(out.type.shape, expected, strict=True):
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
