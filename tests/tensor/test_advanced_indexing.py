"""Advanced indexing against NumPy: integer arrays and boolean masks mixed with slices,
integers, None and Ellipsis; set/inc_subtensor (repeated indices add up like
np.add.at); take and take_along_axis; grads; static shapes; refusals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

rng = np.random.default_rng(11)
A = np.arange(60, dtype="float64").reshape(3, 4, 5)
I2 = np.array([2, 0, 2, -1])
M3 = np.array([True, False, True])
M34 = (A[:, :, 0] % 3) == 0


def symbolic(index):
    """The index with its arrays as symbolic inputs: (symbolic index, inputs, values)."""
    entries = index if isinstance(index, tuple) else (index,)
    sym, inputs, values = [], [], []
    for e in entries:
        if isinstance(e, np.ndarray):
            v = nt.tensor(e.dtype, (None,) * e.ndim)
            sym.append(v)
            inputs.append(v)
            values.append(e)
        else:
            sym.append(e)
    return tuple(sym), inputs, values


INDICES = [
    I2, (I2,), (slice(None), [0, 3]), ([0, 2], None, [1, 1]), (0, slice(None), I2[:3]),
    (Ellipsis, I2), (I2, slice(1, 3), 0), (M3,), (M34,), (M3, slice(None), [0, 1]),
    (slice(None), [[0, 1], [2, 3]], slice(None, None, 2)), (np.array([], dtype="int64"),),
    ([1], [2], [3]), (slice(None), M34[0]), (None, I2, None), (I2[:, None], [0, 3]),
    (np.array([[0], [2]]), slice(None), np.array([[1, 2, 3]])), (-1, [0, -1], Ellipsis),
]


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
def test_getitem_matches_numpy(oracle, index):
    x = oracle.sym(A)
    sym_index, inputs, values = symbolic(index)
    expected = A[index]
    oracle.check([x] + inputs, x[sym_index], [A] + values, expected)
    # constant indices, and a statically shaped x, give static sizes where NumPy's are known
    xs = oracle.sym(A, static=True)
    out = xs[index]
    assert out.type.shape == expected.shape
    oracle.check([xs], out, [A], expected)


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
def test_getitem_grad(index):
    verify_grad(lambda v: v[index] * 1.5, [rng.normal(size=A.shape)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 2), min_size=0, max_size=6),
       st.sampled_from(["int8", "int32", "uint8", "int64"]),
       st.sampled_from(["float32", "int16", "bool", "float64"]))
def test_gather_rows_of_any_dtype(oracle, idx, idx_dtype, dtype):
    if idx_dtype == "uint8":
        idx = [i % 3 for i in idx]
    table = (np.arange(12) % 5).reshape(3, 4).astype(dtype)
    i = np.array(idx, dtype=idx_dtype)
    x, iv = oracle.sym(table), oracle.sym(i)
    oracle.check([x, iv], x[iv], [table, i], table[i])
    oracle.check([x, iv], nt.take(x, iv, axis=0), [table, i], np.take(table, i, axis=0))


def test_cross_entropy_pick(oracle):
    p = rng.uniform(size=(5, 3))
    y = np.array([0, 2, 1, 1, 0])
    P, Y = nt.dmatrix("P"), nt.lvector("Y")
    out = -nt.mean(nt.log(P[nt.arange(Y.shape[0]), Y]))
    oracle.check([P, Y], out, [p, y], -np.mean(np.log(p[np.arange(5), y])), ulps=4)
    verify_grad(lambda q: nt.log(q[nt.arange(5), y]), [p])


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
def test_set_and_inc_subtensor_match_numpy(oracle, index):
    x = oracle.sym(A)
    sym_index, inputs, values = symbolic(index)
    shape = A[index].shape
    y_value = rng.normal(size=shape[1:] if len(shape) > 1 else shape)
    y = oracle.sym(y_value)
    expected = A.copy()
    expected[index] = y_value
    oracle.check([x, y] + inputs, nt.set_subtensor(x[sym_index], y), [A, y_value] + values,
                 expected)
    expected = A.copy()
    np.add.at(expected, index if isinstance(index, tuple) else (index,), y_value)
    oracle.check([x, y] + inputs, nt.inc_subtensor(x[sym_index], y), [A, y_value] + values,
                 expected)


def test_repeated_indices_accumulate_like_add_at(oracle):
    x, i, y = nt.dvector("x"), nt.lvector("i"), nt.dvector("y")
    xv, iv, yv = np.zeros(4), np.array([1, 1, 3, 1]), np.array([1.0, 2.0, 3.0, 4.0])
    expected = xv.copy()
    np.add.at(expected, iv, yv)
    oracle.check([x, i, y], nt.inc_subtensor(x[i], y), [xv, iv, yv], expected)
    assert expected.tolist() == [0.0, 7.0, 0.0, 3.0]


def test_embedding_gradient_scatter_adds():
    W = rng.normal(size=(6, 3))
    idx = np.array([1, 4, 1, 1, 0])
    verify_grad(lambda w: nt.tanh(w[idx]), [W])
    Wv, iv = nt.dmatrix("W"), nt.lvector("i")
    g = nbgraph.function([Wv, iv], nbgraph.grad(nt.sum(Wv[iv]), Wv), linker="py")
    np.testing.assert_array_equal(g(W, idx)[:, 0], [1, 3, 0, 0, 1, 0])


def test_set_and_inc_grads():
    idx = np.array([0, 2, 2])
    verify_grad(lambda a, b: nt.inc_subtensor(a[idx], b), [rng.normal(size=(3, 2)),
                                                           rng.normal(size=(3, 2))])
    verify_grad(lambda a, b: nt.set_subtensor(a[[0, 2]], b), [rng.normal(size=(3, 2)),
                                                              rng.normal(size=(2,))])
    verify_grad(lambda a: nt.set_subtensor(a[a > 0], 0.0), [rng.normal(size=(4, 3))])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_matches_numpy(oracle, axis):
    a = rng.normal(size=(3, 4))
    i = np.array([[0, 2], [1, -1]])
    x, iv = oracle.sym(a), oracle.sym(i)
    oracle.check([x, iv], nt.take(x, iv, axis), [a, i], np.take(a, i, axis))
    oracle.check([x, iv], x.take(iv, axis), [a, i], np.take(a, i, axis))
    verify_grad(lambda v: nt.take(v, i, axis), [a])


@pytest.mark.parametrize("axis,ishape", [(0, (2, 4)), (1, (3, 2)), (1, (1, 5)), (-1, (3, 1)),
                                         (None, (5,)), (0, (0, 4))])
def test_take_along_axis_matches_numpy(oracle, axis, ishape):
    a = rng.normal(size=(3, 4))
    n = a.size if axis is None else a.shape[axis]
    i = rng.integers(-n, n, size=ishape)
    x, iv = oracle.sym(a), oracle.sym(i)
    expected = np.take_along_axis(a, i, axis)
    oracle.check([x, iv], nt.take_along_axis(x, iv, axis), [a, i], expected)
    verify_grad(lambda v: nt.take_along_axis(v, i, axis), [a])


def test_argsort_style_gather_with_argmax(oracle):
    a = rng.normal(size=(4, 5))
    x = oracle.sym(a)
    best = nt.take_along_axis(x, nt.argmax(x, axis=1, keepdims=True), axis=1)
    oracle.check([x], best, [a], np.max(a, axis=1, keepdims=True))


def test_refusals():
    x = nt.tensor("float64", (3, 4), "x")
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 4"):
        x[:, [0, 5]]
    with pytest.raises(IndexError, match="could not be broadcast together"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean index did not match indexed array along "
                                         "axis 0; size of axis is 3"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="must be of integer"):
        x[nt.dvector("f")]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(TypeError, match="cannot add .* of dtype float64 into .* int32"):
        nt.inc_subtensor(nt.imatrix("m")[[0]], 1.5)
    with pytest.raises(ValueError, match="cannot broadcast"):
        nt.set_subtensor(x[[0, 1]], nt.tensor("float64", (3,)))
    with pytest.raises(ValueError, match="take_along_axis: `indices` and `arr` must have the "
                                         "same number of dimensions"):
        nt.take_along_axis(x, nt.lvector(), 1)
    with pytest.raises(IndexError, match="take: indices must be integers"):
        nt.take(x, np.array([True]))
    v, i = nt.dvector("v"), nt.lvector("i")
    f = nbgraph.function([v, i], v[i], linker="py")
    with pytest.raises(IndexError, match="AdvancedSubtensor.*index 7 is out of bounds"):
        f(np.zeros(3), np.array([7]))
    g = nbgraph.function([v, i], nt.inc_subtensor(v[i], 1.0), linker="py")
    with pytest.raises(IndexError, match="AdvancedIncSubtensor"):
        g(np.zeros(3), np.array([-4]))


def test_names_read_well():
    x, i = nt.dmatrix("x"), nt.lvector("i")
    assert str(x[i, 1:].owner.op) == "AdvancedSubtensor{idx, i:}"
    assert str(nt.set_subtensor(x[:, i], 0.0).owner.op) == "AdvancedSetSubtensor{:, idx}"
    assert str(nt.inc_subtensor(x[i], 1.0).owner.op) == "AdvancedIncSubtensor{idx}"


def test_scatter_add_gradient_op_and_its_own_grad(oracle):
    x, i, y = nt.dmatrix("x"), nt.lvector("i"), nt.dmatrix("y")
    xv, iv, yv = np.ones((4, 2)), np.array([3, 0, 3]), rng.normal(size=(3, 2))
    out = nt.AdvancedScatterAdd(x[i].owner.op.idx_list)(x, y, i)
    expected = np.zeros((4, 2))
    np.add.at(expected, iv, yv)
    oracle.check([x, i, y], out, [xv, iv, yv], expected)
    assert str(out.owner.op) == "AdvancedScatterAdd{idx}"
    # second derivatives flow through it
    verify_grad(lambda w: nbgraph.grad(nt.sum(w[[0, 2, 2]] ** 3), w), [rng.normal(size=(3, 2))])


@st.composite
def mixed_indices(draw):
    """An array shape and an index mixing int arrays, masks, ints, slices, None and ...;
    every int array of one index shares one broadcastable shape, so most indices are valid."""
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    common = tuple(draw(st.lists(st.integers(0, 2), min_size=0, max_size=2)))
    r = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    entries, dim = [], 0
    while dim < len(shape):
        n = shape[dim]
        kind = draw(st.sampled_from(["array", "array", "slice", "int", "mask", "none",
                                     "ellipsis"]))
        if kind == "none":
            entries.append(None)
            continue
        if kind == "ellipsis":
            if not any(e is Ellipsis for e in entries):
                entries.append(Ellipsis)
                break
            continue
        if kind == "array" and n:
            sub = tuple(s if draw(st.booleans()) else 1 for s in common)
            entries.append(r.integers(-n, n, size=sub))
        elif kind == "mask":
            entries.append(r.random(n) < 0.5)
        elif kind == "int" and n:
            entries.append(int(draw(st.integers(-n, n - 1))))
        else:
            entries.append(slice(draw(st.sampled_from([None, 0, 1, -1])),
                                 draw(st.sampled_from([None, 2, -1])),
                                 draw(st.sampled_from([None, 1, 2, -1]))))
        dim += 1
    return shape, tuple(entries)


@settings(max_examples=60, deadline=None)
@given(mixed_indices(), st.sampled_from(["float64", "int8", "bool", "float32"]))
def test_mixed_indices_read_and_write_as_numpy_does(oracle, case, dtype):
    shape, index = case
    a = (np.arange(int(np.prod(shape))) % 7).reshape(shape).astype(dtype)
    x = oracle.sym(a)
    sym_index, inputs, values = symbolic(index)
    try:
        expected = a[index]
    except IndexError:
        with pytest.raises(IndexError):
            nbgraph.function([x] + inputs, x[sym_index], linker="py")(a, *values)
        return
    out = x[sym_index]
    oracle.check([x] + inputs, out, [a] + values, expected)
    assert oracle.sym(a, static=True)[index].type.shape == expected.shape
    if dtype == "float64" and isinstance(out.owner.op, nt.AdvancedSubtensor):
        y_value = np.ones(expected.shape[1:], dtype)
        want = a.copy()
        np.add.at(want, index, y_value)
        oracle.check([x] + inputs, nt.inc_subtensor(out, y_value), [a] + values, want)
