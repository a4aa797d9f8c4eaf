"""Shape keys (nbgraph.tensor.shape_keys) and the rewrites that use them:
``sum_to_shape_same_shape`` and ``alloc_to_broadcast``.  Each rewrite must keep
NumPy's results, including when a dimension of unknown size is 1 at run time."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.tensor.basic import Alloc, ShapeI, alloc, shape_i
from nbgraph.tensor.elemwise import SumToShape
from nbgraph.tensor.shape_keys import ShapeKeyCache, shape_keys

LINKERS = ["py", "cvm"]


def op_types(f):
    return [type(n.op) for n in f.fgraph.apply_nodes]


def fused_ops(f):
    return {type(n.op).__name__ for n in f.fgraph.apply_nodes}


def both(inputs, out, linker="py"):
    return (function(inputs, out, linker=linker),
            function(inputs, out, linker=linker, rewrite=None))


def assert_same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_array_equal(a, b)


# -- shape keys --------------------------------------------------------------------------

def test_broadcast_keys_do_not_depend_on_how_the_broadcast_was_grouped():
    # issue 19 item 6: one key system for fusion, in-place and the shape rewrites;
    # broadcasting is associative and commutative, so the keys are flattened
    a, b, c = nt.dvector("a"), nt.dvector("b"), nt.dvector("c")
    left, right = (a + b) + c, a * (c - b)
    fg = FunctionGraph([a, b, c], [left, right], clone=False)
    assert shape_keys(fg, left) == shape_keys(fg, right) != shape_keys(fg, a)


def test_the_key_memo_is_a_feature_the_graph_owns():
    x = nt.dmatrix("x")
    y = nt.exp(x) + 1.0
    fg = FunctionGraph([x], [y], clone=False)
    assert not any(isinstance(f, ShapeKeyCache) for f in fg.features)
    shape_keys(fg, y)
    (cache,) = [f for f in fg.features if isinstance(f, ShapeKeyCache)]
    assert y in cache.shapes
    shape_keys(fg, x)
    assert [f for f in fg.features if isinstance(f, ShapeKeyCache)] == [cache]  # found again
    assert not any(isinstance(f, ShapeKeyCache) for f in fg.clone().features)
    fg.replace(y, nt.exp(x) * 2.0, reason="test")  # y's node leaves the graph
    assert y not in cache.shapes


def test_shape_keys_follow_infer_shape_and_broadcasting():
    X, w, v = nt.dmatrix("X"), nt.dvector("w"), nt.dvector("v")
    z = nt.exp(-nt.dot(X, w))
    fg = FunctionGraph([X, w, v], [z, z * 2.0, z + v, alloc(1.0, shape_i(X, 0))], clone=False)
    kz, kz2, kzv, ka = (shape_keys(fg, o) for o in fg.outputs)
    assert kz == shape_keys(fg, X)[:1] == kz2 == ka
    assert kzv != kz  # v may be 1 (or differ) at run time: nothing is proven
    assert shape_keys(fg, v) != kz


def test_shape_keys_static_sizes_and_dimshuffle():
    x = nt.tensor("float64", (3, None), "x")
    fg = FunctionGraph([x], [x.T, x.dimshuffle("x", 1, 0)], clone=False)
    kt, kd = (shape_keys(fg, o) for o in fg.outputs)
    assert kt[1] == 3 and kd[0] == 1 and kd[2] == 3
    assert kt[0] == kd[1] == shape_keys(fg, x)[1]


def test_shape_keys_deep_chain_without_recursion():
    x = nt.dvector("x")
    y = x
    for _ in range(5000):
        y = y * 1.5
    fg = FunctionGraph([x], [y], clone=False)
    assert shape_keys(fg, y) == shape_keys(fg, x)


# -- SumToShape takes shape entries -------------------------------------------------------

def test_sum_to_shape_takes_entries_or_a_template():
    g, like = nt.dmatrix("g"), nt.dmatrix("like")
    a = np.arange(6.0).reshape(2, 3)
    by_like = function([g, like], SumToShape()(g, like), linker="py")
    n, m = nt.lscalar("n"), nt.lscalar("m")
    by_entries = function([g, n, m], SumToShape()(g, n, m), linker="py")
    for shape in [(1, 3), (2, 1), (1, 1), (2, 3)]:
        want = a.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1), keepdims=True)
        assert_same(by_like(a, np.ones(shape)), want)
        assert_same(by_entries(a, *shape), want)
    with pytest.raises(ValueError):
        by_entries(a, 3, 3)
    with pytest.raises(TypeError):
        SumToShape()(g, n)


@pytest.mark.parametrize("linker", LINKERS)
def test_forward_values_needed_only_for_their_shape_are_not_computed(linker):
    # the mean cross-entropy of a logistic model; t may broadcast against X's rows,
    # so SumToShape stays, but it reads the loss terms' shape from X and t
    X, t, w, b = nt.dmatrix("X"), nt.dvector("t"), nt.dvector("w"), nt.dscalar("b")
    z = X.dot(w) + b
    loss = (nt.softplus(z) - t * z).mean()
    f = function([X, t, w, b], ng.grad(loss, [w, b]), linker=linker)
    assert not any("softplus" in str(n.op) for n in f.fgraph.apply_nodes)
    old = function([X, t, w, b], ng.grad(loss, [w, b]), linker=linker, rewrite=None)
    rng = np.random.default_rng(0)
    wv, bv = rng.standard_normal(3), np.float64(0.3)
    for rows, labels in [(6, 6), (6, 1), (1, 1), (1, 4)]:
        xv, tv = rng.standard_normal((rows, 3)), (rng.random(labels) > 0.5) * 1.0
        got, want = f(xv, tv, wv, bv), old(xv, tv, wv, bv)
        for g, h in zip(got, want, strict=True):
            np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-15)
            assert np.asarray(g).shape == np.asarray(h).shape


def test_sum_to_shape_template_becomes_entries_only_when_unused_otherwise():
    g, x = nt.dmatrix("g"), nt.dmatrix("x")
    like = nt.exp(x)
    only_shape = function([g, x], SumToShape()(g, like), linker="py")
    assert not any("exp" in str(n.op) for n in only_shape.fgraph.apply_nodes)
    both_used = function([g, x], [SumToShape()(g, like), like], linker="py")
    (node,) = [n for n in both_used.fgraph.apply_nodes if isinstance(n.op, SumToShape)]
    assert SumToShape.takes_template(node)
    a = np.arange(6.0).reshape(2, 3)
    for xs in [(1, 3), (2, 1), (2, 3)]:
        want = a.sum(axis=tuple(i for i, s in enumerate(xs) if s == 1), keepdims=True)
        assert_same(only_shape(a, np.zeros(xs)), want)
        assert_same(both_used(a, np.zeros(xs))[0], want)


# -- sum_to_shape_same_shape --------------------------------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_logistic_regression_gradient_has_no_shape_work(linker):
    X, w = nt.dmatrix("X"), nt.dvector("w")
    cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w))))
    f = function([X, w], ng.grad(cost, w), linker=linker)
    kinds = op_types(f)
    assert SumToShape not in kinds and Alloc not in kinds and ShapeI not in kinds
    rng = np.random.default_rng(0)
    for rows in (7, 1, 0):  # one row: every unknown size is 1 at run time
        xv, wv = rng.standard_normal((rows, 4)), rng.standard_normal(4)
        e = np.exp(-xv.dot(wv))
        np.testing.assert_allclose(f(xv, wv), -xv.T.dot(e / (1 + e)), rtol=1e-12)


@pytest.mark.parametrize("linker", LINKERS)
def test_sum_to_shape_stays_when_a_size_may_broadcast(linker):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    f = function([x, y], ng.grad((x * y).sum(), y), linker=linker)
    assert any(isinstance(n.op, SumToShape) or "Reduce" in type(n.op).__name__
               or "Sum" in str(n.op) for n in f.fgraph.apply_nodes)
    xv = np.arange(12.0).reshape(3, 4)
    assert_same(f(xv, np.ones((1, 4))), xv.sum(axis=0, keepdims=True))
    assert_same(f(xv, np.ones((3, 1))), xv.sum(axis=1, keepdims=True))
    assert_same(f(xv, np.ones((1, 1))), xv.sum(keepdims=True))
    assert_same(f(xv, np.ones((3, 4))), xv)


def test_sum_to_shape_same_shape_is_bitwise_neutral():
    x = nt.dvector("x")
    y = nt.exp(x)
    g = SumToShape()(y * 2.0 - x, x)  # same shape as x, provably
    new, old = both([x], g)
    assert SumToShape not in op_types(new)
    for v in (np.array([-np.inf, -0.0, 0.0, 1.0, np.inf, np.nan]), np.array([np.nan]),
              np.zeros(0)):
        assert_same(new(v), old(v))


# -- alloc_to_broadcast -------------------------------------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_alloc_of_a_scalar_becomes_broadcasting(linker):
    x = nt.dvector("x")
    out = alloc(np.float64(np.nan), shape_i(x, 0)) + x
    new, old = both([x], out, linker)
    assert Alloc not in op_types(new) and ShapeI not in op_types(new)
    for v in (np.array([1.0, -np.inf, np.inf]), np.array([2.0]), np.zeros(0)):
        assert_same(new(v), old(v))
        assert np.isnan(new(v)).all()


@pytest.mark.parametrize("linker", LINKERS)
def test_alloc_stays_when_its_shape_is_not_proven(linker):
    x, n = nt.dvector("x"), nt.lscalar("n")
    out = alloc(np.float64(2.0), n) * x  # x may be of size 1 and broadcast to n
    new, old = both([x, n], out, linker)
    assert Alloc in op_types(new)
    assert_same(new(np.array([3.0]), 4), np.full(4, 6.0))
    assert_same(new(np.array([3.0]), 4), old(np.array([3.0]), 4))
    # an Alloc alone sets the shape: it stays
    alone = function([x], alloc(np.float64(1.0), shape_i(x, 0)), linker=linker)
    assert_same(alone(np.zeros(3)), np.ones(3))


@pytest.mark.parametrize("linker", LINKERS)
def test_alloc_with_a_broadcastable_operand_is_kept(linker):
    # the other operand is a row: it cannot fix the number of rows
    X, r = nt.dmatrix("X"), nt.drow("r")
    out = alloc(np.float64(1.0), shape_i(X, 0), shape_i(X, 1)) * r
    new, old = both([X, r], out, linker)
    assert Alloc in op_types(new)
    xv, rv = np.zeros((3, 2)), np.array([[1.0, 2.0]])
    assert_same(new(xv, rv), old(xv, rv))
    assert new(xv, rv).shape == (3, 2)


@pytest.mark.parametrize("linker", LINKERS)
def test_alloc_of_a_vector_into_a_matrix(linker):
    X = nt.dmatrix("X")
    v = X.sum(axis=0)  # provably of X's second size
    out = alloc(v, shape_i(X, 0), shape_i(X, 1)) - X
    new, old = both([X], out, linker)
    assert Alloc not in op_types(new)
    for xs in [(3, 2), (1, 1), (1, 4), (4, 1), (0, 2), (2, 0)]:
        xv = np.arange(np.prod(xs), dtype=float).reshape(xs)
        assert_same(new(xv), old(xv))


@pytest.mark.parametrize("linker", LINKERS)
def test_alloc_of_an_unrelated_vector_stays(linker):
    # v of unknown size: the Alloc checks that v fits X's shape, broadcasting would
    # not (v of size 3 against X of shape (2, 1) must stay an error)
    X, v = nt.dmatrix("X"), nt.dvector("v")
    out = alloc(v, shape_i(X, 0), shape_i(X, 1)) - X
    new, old = both([X, v], out, linker)
    assert Alloc in op_types(new)
    assert_same(new(np.ones((2, 3)), np.array([5.0])), np.full((2, 3), 4.0))
    with pytest.raises(ValueError):
        new(np.ones((2, 1)), np.ones(3))


def test_alloc_dtype_is_kept():
    x = nt.fvector("x")
    out = alloc(np.float64(0.5), shape_i(x, 0)) * x  # float64 * float32 -> float64
    new, old = both([x], out)
    v = np.array([1.0, 2.0], dtype=np.float32)
    assert_same(new(v), old(v))
    assert new(v).dtype == np.float64


# -- sizes read through Subtensor, Reshape and Join --------------------------------------

SIZE_CASES = {
    "slice": (lambda x: x[1:], [0, 1, 5]),
    "reverse_step": (lambda x: x[-2::-3], [0, 1, 5, 7]),
    "reshape": (lambda x: x.reshape((-1, 2)), [0, 4, 6]),
    "join": (lambda x: nt.concatenate([x, x[::2]]), [0, 1, 5]),
}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(SIZE_CASES))
def test_a_value_needed_only_for_its_size_is_not_computed(case, linker):
    build, sizes = SIZE_CASES[case]
    x = nt.dvector("x")
    f = function([x], build(x).shape[0], linker=linker)
    kinds = {type(n.op).__name__ for n in f.fgraph.apply_nodes}
    assert not kinds & {"Subtensor", "Reshape", "Join", "Shape"}, kinds
    old = function([x], build(x).shape[0], linker=linker, rewrite=None)
    for n in sizes:
        a = np.arange(float(n))
        assert_same(f(a), old(a))


def test_a_computed_value_gives_its_size_by_shape_i():
    x = nt.dvector("x")
    view = x[1:]
    f = function([x], [view * 2, view.shape[0], nt.shape_i(view, 0)], linker="py")
    shapes = [n for n in f.fgraph.apply_nodes if isinstance(n.op, ShapeI)]
    assert shapes and all(type(n.inputs[0].owner.op).__name__ == "Subtensor" for n in shapes)
    assert [int(v) for v in f(np.arange(4.0))[1:]] == [3, 3]


def test_shape_index_takes_negative_indices():
    x = nt.dvector("x")
    f = function([x], x.shape[0] + x.shape[-1], linker="py")
    assert int(f(np.ones(3))) == 6
    assert not any(type(n.op).__name__ == "Shape" for n in f.fgraph.apply_nodes)


def test_shape_keys_of_a_slice_and_a_reshape():
    x = nt.dvector("x")
    fg = FunctionGraph([x], [x[1:] + x[1:], x.reshape((-1, 1))])
    a, b = fg.outputs
    assert shape_keys(fg, a) == shape_keys(fg, a.owner.inputs[0])
    assert shape_keys(fg, b)[1] == 1
