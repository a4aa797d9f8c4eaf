"""Shape functions (flatten, squeeze, expand_dims, transpose, swapaxes, moveaxis,
broadcast_to, tile, repeat, split, roll) against NumPy, with grads and refusals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbgraph
import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

AxisError = np.exceptions.AxisError
rng = np.random.default_rng(7)


def values(shape, dtype="float64"):
    return (np.arange(int(np.prod(shape))).reshape(shape) % 7).astype(dtype)


shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


@settings(max_examples=40, deadline=None)
@given(shapes, st.data(), st.sampled_from(["float32", "int8", "bool", "uint16"]))
def test_flatten_matches_numpy_reshape(oracle, shape, data, dtype):
    a = values(shape, dtype)
    ndim = data.draw(st.integers(1, max(a.ndim, 1)))
    expected = a.reshape(a.shape[:ndim - 1] + (int(np.prod(a.shape[ndim - 1:])),))
    for static in (False, True):
        x = oracle.sym(a, static)
        oracle.check([x], nt.flatten(x, ndim), [a], expected)
    x = oracle.sym(a)
    oracle.check([x], x.flatten(), [a], a.flatten())
    oracle.check([x], x.ravel(), [a], a.ravel())


def test_flatten_refuses_bad_ndim():
    with pytest.raises(ValueError, match="flatten: ndim must be between 1 and 2"):
        nt.flatten(nt.dmatrix(), 3)
    with pytest.raises(TypeError, match="flatten: ndim must be an int"):
        nt.flatten(nt.dmatrix(), 1.0)


@pytest.mark.parametrize("axis", [None, 1, (1, 3), -1, (0,)])
def test_squeeze_matches_numpy(oracle, axis):
    a = values((1, 1, 2, 1))
    if axis == (0,) or axis is None:
        x = oracle.sym(a, static=True)
    else:
        x = nt.tensor("float64", (None, None, 2, None))
    oracle.check([x], nt.squeeze(x, axis), [a], np.squeeze(a, axis))
    oracle.check([x], x.squeeze(axis), [a], np.squeeze(a, axis))


def test_squeeze_checks_unknown_sizes_at_run_time():
    x = nt.dmatrix("x")
    f = nbgraph.function([x], nt.squeeze(x, 0), linker="py")
    np.testing.assert_array_equal(f(np.ones((1, 3))), np.ones(3))
    with pytest.raises(ValueError):
        f(np.ones((2, 3)))
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        nt.squeeze(nt.tensor("float64", (2, 3)), 0)
    with pytest.raises(AxisError, match="squeeze: axis 2 is out of bounds"):
        nt.squeeze(x, 2)


@pytest.mark.parametrize("axis", [0, 2, -1, (0, 3), (1, -1), (0, 1, 2)])
def test_expand_dims_matches_numpy(oracle, axis):
    a = values((2, 3))
    x = oracle.sym(a, static=True)
    oracle.check([x], nt.expand_dims(x, axis), [a], np.expand_dims(a, axis))


def test_expand_dims_refuses_bad_axes():
    with pytest.raises(AxisError):
        nt.expand_dims(nt.dmatrix(), 3)
    with pytest.raises(ValueError, match="repeated axis"):
        nt.expand_dims(nt.dmatrix(), (0, 0))


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose_matches_numpy(oracle, axes):
    a = values((2, 3, 4))
    x = oracle.sym(a, static=True)
    oracle.check([x], nt.transpose(x, axes), [a], np.transpose(a, axes))
    method = x.transpose() if axes is None else x.transpose(*axes)
    oracle.check([x], method, [a], np.transpose(a, axes))


def test_transpose_swapaxes_moveaxis_refusals():
    x = nt.dtensor3("x")
    with pytest.raises(ValueError, match="axes don't match"):
        nt.transpose(x, (0, 1))
    with pytest.raises(ValueError, match="repeated axis"):
        nt.transpose(x, (0, 1, 1))
    with pytest.raises(AxisError, match="swapaxes: axis2 3"):
        nt.swapaxes(x, 0, 3)
    with pytest.raises(ValueError, match="same number of elements"):
        nt.moveaxis(x, (0, 1), 2)


@pytest.mark.parametrize("a1,a2", [(0, 1), (2, 0), (-1, 1), (1, 1)])
def test_swapaxes_matches_numpy(oracle, a1, a2):
    a = values((2, 3, 4))
    x = oracle.sym(a)
    oracle.check([x], nt.swapaxes(x, a1, a2), [a], np.swapaxes(a, a1, a2))
    oracle.check([x], x.swapaxes(a1, a2), [a], np.swapaxes(a, a1, a2))


@pytest.mark.parametrize("src,dst", [(0, -1), (-1, 0), ((0, 1), (2, 0)), ((0, 2), (1, 0)),
                                     ([], [])])
def test_moveaxis_matches_numpy(oracle, src, dst):
    a = values((2, 3, 4))
    x = oracle.sym(a, static=True)
    oracle.check([x], nt.moveaxis(x, src, dst), [a], np.moveaxis(a, src, dst))


@pytest.mark.parametrize("shape,target", [((3,), (2, 3)), ((1, 3), (4, 3)), ((), (2, 2)),
                                          ((2, 1), (2, 0)), ((1,), (0,)), ((2, 3), (2, 3))])
def test_broadcast_to_matches_numpy(oracle, shape, target):
    a = values(shape)
    x = oracle.sym(a)
    oracle.check([x], nt.broadcast_to(x, target), [a], np.broadcast_to(a, target))


def test_broadcast_to_static_shapes(oracle):
    n = nt.lscalar("n")
    # a static size of x other than 1 fixes the result's size even for a symbolic entry
    out = nt.broadcast_to(nt.tensor("float64", (3,)), (2, n))
    assert out.type.shape == (2, 3)
    assert nt.broadcast_to(nt.tensor("float64", (1, 3)), (n, 3)).type.shape == (None, 3)
    x = nt.tensor("float64", (1, 3))
    a = values((1, 3))
    oracle.check([x, n], nt.broadcast_to(x, (n, 3)), [a, 4], np.broadcast_to(a, (4, 3)))


def test_broadcast_to_refusals_and_grad():
    with pytest.raises(ValueError, match="broadcast_to: input operand has more dimensions"):
        nt.broadcast_to(nt.dmatrix(), (3,))
    with pytest.raises(ValueError, match="cannot broadcast"):
        nt.broadcast_to(nt.tensor("float64", (2,)), (3,))
    x = nt.dvector("x")
    f = nbgraph.function([x], nt.broadcast_to(x, (2, 3)), linker="py")
    with pytest.raises(ValueError):
        f(np.ones(4))
    verify_grad(lambda v: nt.broadcast_to(v, (4, 3)), [rng.normal(size=(1, 3))])


@settings(max_examples=40, deadline=None)
@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       st.lists(st.integers(0, 3), min_size=0, max_size=4))
def test_tile_matches_numpy(oracle, shape, reps):
    a = values(shape, "int16")
    x = oracle.sym(a)
    expected = np.tile(a, reps)
    oracle.check([x], nt.tile(x, reps), [a], expected)
    assert nt.tile(oracle.sym(a, static=True), reps).type.shape == expected.shape


def test_tile_grad_and_symbolic_reps(oracle):
    verify_grad(lambda v: nt.tile(v, (2, 1, 3)), [rng.normal(size=(2, 3))])
    x = nt.dmatrix("x")
    r = nt.lscalar("r")
    a = values((2, 3))
    oracle.check([x, r], nt.tile(x, (r, 2)), [a, 3], np.tile(a, (3, 2)))
    with pytest.raises(ValueError, match="tile: reps entry 0 is negative"):
        nt.tile(x, (-1, 2))


@settings(max_examples=40, deadline=None)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), st.data())
def test_repeat_matches_numpy(oracle, shape, data):
    a = values(shape, "float32")
    axis = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    n = a.size if axis is None else shape[axis]
    repeats = data.draw(st.one_of(st.integers(0, 3),
                                  st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    expected = np.repeat(a, repeats, axis)
    x = oracle.sym(a)
    oracle.check([x], nt.repeat(x, repeats, axis), [a], expected)
    r = nt.lvector("r") if isinstance(repeats, list) else nt.lscalar("r")
    oracle.check([x, r], x.repeat(r, axis), [a, np.asarray(repeats, dtype="int64")], expected)
    xs = oracle.sym(a, static=True)
    assert nt.repeat(xs, repeats, axis).type.shape == expected.shape


def test_repeat_grads():
    verify_grad(lambda v: nt.repeat(v, 3, axis=1), [rng.normal(size=(2, 3))])
    verify_grad(lambda v: nt.repeat(v, [2, 0, 1], axis=0), [rng.normal(size=(3, 2))])
    verify_grad(lambda v: nt.repeat(v, 2), [rng.normal(size=(2, 2))])


def test_repeat_refusals():
    with pytest.raises(ValueError, match="repeats may not contain negative"):
        nt.repeat(nt.dvector(), -1)
    with pytest.raises(TypeError, match="repeats must be an integer"):
        nt.repeat(nt.dvector(), 1.5)
    with pytest.raises(ValueError, match="3 counts for an axis of size 2"):
        nt.repeat(nt.tensor("float64", (2,)), [1, 2, 3])
    with pytest.raises(AxisError):
        nt.repeat(nt.dvector(), 2, axis=1)
    x = nt.dvector("x")
    f = nbgraph.function([x], nt.repeat(x, [1, 2]), linker="py")
    with pytest.raises(ValueError):
        f(np.ones(3))


@pytest.mark.parametrize("spec", [2, 3, [1, 3], [0, 5, 2], [-2], [4, 1]])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_split_matches_numpy(oracle, spec, axis):
    a = values((6, 6, 2))
    if axis == -1 and isinstance(spec, int) and 2 % spec:
        with pytest.raises(ValueError, match="equal division"):
            nt.split(oracle.sym(a, static=True), spec, axis)
        return
    expected = np.split(a, spec, axis)
    x = oracle.sym(a)
    parts = nt.split(x, spec, axis)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected, strict=True):
        oracle.check([x], p, [a], e)
    for p, e in zip(nt.split(oracle.sym(a, static=True), spec, axis), expected, strict=True):
        assert p.type.shape == e.shape


def test_split_unknown_size_checks_the_division_at_run_time():
    x = nt.dvector("x")
    f = nbgraph.function([x], nt.split(x, 3), linker="py")
    assert [p.tolist() for p in f(np.arange(6.0))] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="equal division"):
        f(np.arange(5.0))
    with pytest.raises(ValueError, match="number sections must be larger than 0"):
        nt.split(x, 0)


def test_split_grad():
    def first_and_last(v):
        parts = nt.split(v, 3, axis=1)
        return parts[0] * 2 + parts[2]
    verify_grad(first_and_last, [rng.normal(size=(2, 6))])
    verify_grad(lambda v: nt.split(v, [1, 3])[1], [rng.normal(size=5)])


@pytest.mark.parametrize("shift,axis", [(1, None), (-2, 0), (5, 1), ((1, 2), (0, 1)),
                                        (1, (0, 1)), ((1, -1), 0), (0, None)])
def test_roll_matches_numpy(oracle, shift, axis):
    a = values((3, 4))
    x = oracle.sym(a)
    oracle.check([x], nt.roll(x, shift, axis), [a], np.roll(a, shift, axis))


def test_roll_symbolic_shift_grad_and_empty(oracle):
    x = nt.dmatrix("x")
    s = nt.iscalar("s")
    a = values((3, 4))
    oracle.check([x, s], nt.roll(x, s, 1), [a, np.int32(-7)], np.roll(a, -7, 1))
    e = np.zeros((0, 3))
    oracle.check([x], nt.roll(x, 2, 0), [e], np.roll(e, 2, 0))
    verify_grad(lambda v: nt.roll(v, 2, 1), [rng.normal(size=(2, 3))])
    verify_grad(lambda v: nt.roll(v, -1), [rng.normal(size=(2, 3))])
    with pytest.raises(ValueError, match="same length"):
        nt.roll(x, (1, 2, 3), (0, 1))
    with pytest.raises(TypeError, match="roll: argument shift must be an integer"):
        nt.roll(x, 1.5)


def test_more_methods_match_numpy(oracle):
    a = np.array([[-1.5, 0.5, 2.5], [3.2, -0.4, 1.0]])
    x = oracle.sym(a)
    oracle.check([x], x.clip(-1.0, 2.0), [a], a.clip(-1.0, 2.0))
    oracle.check([x], x.round(), [a], a.round())
    oracle.check([x], round(x), [a], a.round())
    oracle.check([x], x.diff(axis=0), [a], np.diff(a, axis=0))
    oracle.check([x], x.tile((2, 1)), [a], np.tile(a, (2, 1)))
    oracle.check([x], x.roll(1, 1), [a], np.roll(a, 1, 1))
    oracle.check([x], x.max_and_argmax(axis=1)[1], [a], a.argmax(axis=1))
    oracle.check([x], x.diagonal(1), [a], a.diagonal(1))
    oracle.check([x], x.take([0, 0], axis=1), [a], a.take([0, 0], axis=1))
