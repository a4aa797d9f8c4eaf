"""The label picks written with advanced indexing (nbgraph/tensor/nnet_rewrites.py):
``x[arange(S), y]`` -> PickLabels, its gradient -> PickLabelsGrad, and the
stabilize patterns that then find the cross-entropy of a softmax in the Theano
tutorials' ``-mean(log(p)[arange(n), y])`` and ``-mean(log(p[arange(n), y]))``.

NumPy (``x[np.arange(S), y]``) is the oracle: values bit for bit, negative labels
wrapped, errors where NumPy raises (labels out of range, lengths that do not
broadcast), the first S rows when x has more.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor import nnet
from nbgraph.tensor.advanced_indexing import AdvancedScatterAdd, AdvancedSubtensor

LINKERS = ["py", "cvm"]


def _ops(f):
    return {type(n.op) for n in f.fgraph.apply_nodes}


def _matrix(dtype="float64"):
    return nt.tensor(dtype, (None, None), name="x")


@pytest.fixture(params=LINKERS)
def pick_rows_of(request):
    """``(rows, f, xv)``: ``rows(x, y)`` picks ``x[arange(rows(x, y)), y]``; ``f`` the
    compiled pick (checked to be a PickLabels) and ``xv`` a 5 x 4 matrix."""

    def build(rows):
        x, y = _matrix(), nt.lvector("y")
        f = nbgraph.function([x, y], x[nt.arange(rows(x, y)), y], linker=request.param)
        assert nnet.PickLabels in _ops(f) and AdvancedSubtensor not in _ops(f)
        return f, np.arange(20.0).reshape(5, 4)
    return build


def test_rows_of_x_pick_one_label_each(pick_rows_of):
    f, xv = pick_rows_of(lambda x, y: x.shape[0])
    yv = np.array([0, 3, -1, 2, -4])  # NumPy wraps negative indices
    np.testing.assert_array_equal(f(xv, yv), xv[np.arange(5), yv])
    np.testing.assert_array_equal(f(xv, np.array([2])), xv[np.arange(5), np.array([2])])
    for bad in (np.array([0, 4, 1, 1, 1]), np.array([0, -5, 1, 1, 1])):
        with pytest.raises(IndexError):
            xv[np.arange(5), bad]
        with pytest.raises(IndexError):
            f(xv, bad)
    with pytest.raises((IndexError, ValueError)):
        f(xv, np.array([0, 1]))


def test_an_arange_as_long_as_the_labels_takes_the_first_rows(pick_rows_of):
    f, xv = pick_rows_of(lambda x, y: y.shape[0])
    for yv in (np.array([1, 2, 3]), np.array([1, 2, 3, 0, 1]), np.array([3]), np.zeros(0, int)):
        np.testing.assert_array_equal(f(xv, yv), xv[np.arange(len(yv)), yv])
    with pytest.raises((IndexError, ValueError)):
        f(xv, np.zeros(6, int))  # more labels than rows: NumPy raises IndexError


def test_an_elementwise_function_is_applied_to_the_picked_values():
    x, y = _matrix(), nt.lvector("y")
    f = nbgraph.function([x, y], nt.log(x)[nt.arange(x.shape[0]), y], linker="cvm")
    assert nnet.PickLabels in _ops(f)
    big = [n for n in f.fgraph.apply_nodes if n.outputs[0].ndim == 2]
    assert not big, big  # no log of the whole matrix
    xv = np.random.default_rng(0).random((6, 3)) + 0.1
    yv = np.array([0, 1, 2, 2, 1, 0])
    np.testing.assert_array_equal(f(xv, yv), np.log(xv)[np.arange(6), yv])


def test_other_indexings_are_left_alone():
    x, y = _matrix(), nt.lvector("y")
    for out in (x[nt.arange(1, x.shape[0]), y], x[nt.arange(0, x.shape[0], 2), y],
                x[y, nt.arange(x.shape[0])], x[nt.arange(x.shape[0]), y > 0]):
        f = nbgraph.function([x, y], out, linker="py", on_unused_input="ignore")
        assert nnet.PickLabels not in _ops(f)


@given(st.integers(0, 6), st.integers(1, 5), st.sampled_from(["int8", "int32", "int64", "uint8"]),
       st.sampled_from(["float32", "float64", "int64"]), st.integers(0, 2**31))
@settings(max_examples=30, deadline=None)
def test_picks_match_numpy(n, m, label_dtype, dtype, seed):
    rng = np.random.default_rng(seed)
    xv = (rng.standard_normal((n, m)) * 10).astype(dtype)
    low = 0 if label_dtype == "uint8" else -m
    yv = rng.integers(low, m, n).astype(label_dtype)
    x, y = _matrix(dtype), nt.tensor(label_dtype, (None,), name="y")
    want = xv[np.arange(n), yv]
    for linker in ("py", "c"):
        f = nbgraph.function([x, y], x[nt.arange(x.shape[0]), y], linker=linker)
        got = f(xv, yv)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_the_gradient_is_a_label_put_when_the_arange_covers_the_rows():
    x, y = _matrix(), nt.lvector("y")
    w = nt.dvector("w")
    cost = (x[nt.arange(x.shape[0]), y] * w).sum()
    g = nbgraph.grad(cost, x)
    f = nbgraph.function([x, y, w], g, linker="cvm")
    assert AdvancedScatterAdd not in _ops(f) and nnet.PickLabelsGrad in _ops(f)
    xv = np.zeros((4, 3))
    yv, wv = np.array([2, -1, 0, 1]), np.array([1.0, 2.0, 3.0, 4.0])
    want = np.zeros((4, 3))
    np.add.at(want, (np.arange(4), yv), wv)
    np.testing.assert_array_equal(f(xv, yv, wv), want)
    exact = nbgraph.function([x, y, w], g, linker="py", rewrite="exact")
    np.testing.assert_array_equal(exact(xv, yv, wv), want)


@pytest.mark.parametrize("linker", LINKERS)
def test_the_gradient_of_an_arange_as_long_as_the_labels_puts_the_first_rows(linker):
    x, y = _matrix(), nt.lvector("y")
    w = nt.dvector("w")
    g = nbgraph.grad((x[nt.arange(y.shape[0]), y] * w).sum(), x)
    f = nbgraph.function([x, y, w], g, linker=linker)
    assert AdvancedScatterAdd not in _ops(f) and nnet.PickLabelsGrad in _ops(f)
    xv = np.zeros((4, 3))
    for yv in (np.array([2, -1, 0, 1]), np.array([1, -3]), np.array([2]), np.zeros(0, int)):
        wv = np.arange(1.0, len(yv) + 1)
        want = np.zeros((4, 3))
        np.add.at(want, (np.arange(len(yv)), yv), wv)
        np.testing.assert_array_equal(f(xv, yv, wv), want)
    for yv in (np.zeros(5, int), np.array([0, 3])):  # more labels than rows, a label too big
        with pytest.raises(IndexError):
            np.add.at(np.zeros((4, 3)), (np.arange(len(yv)), yv), 1.0)
        with pytest.raises((IndexError, ValueError)):
            f(xv, yv, np.ones(len(yv)))


@pytest.mark.parametrize("form", ["log_then_pick", "pick_then_log"])
@pytest.mark.parametrize("rows", ["x", "y"])
def test_the_tutorials_cost_becomes_the_crossentropy_ops(form, rows):
    x, y = _matrix(), nt.lvector("y")
    n = (x if rows == "x" else y).shape[0]
    p = nt.softmax(x)
    if form == "log_then_pick":
        cost = -nt.mean(nt.log(p)[nt.arange(n), y])
    else:
        cost = -nt.mean(nt.log(p[nt.arange(n), y]))
    g = nbgraph.grad(cost, x)
    f = nbgraph.function([x, y], [cost, g], linker="cvm")
    ops = _ops(f)
    assert AdvancedSubtensor not in ops
    if form == "log_then_pick" or rows == "x":
        assert nnet.SoftmaxCrossentropy in ops
    # the gradient too; with rows == "y" only the first len(y) rows (zeros below)
    assert nnet.SoftmaxCrossentropyGrad in ops and AdvancedScatterAdd not in ops
    assert nnet.SoftmaxGrad not in ops
    if form == "log_then_pick" or rows == "x":
        assert nnet.Softmax not in ops
    rng = np.random.default_rng(3)
    xv, yv = rng.standard_normal((7, 5)), rng.integers(0, 5, 7)
    e = np.exp(xv - xv.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    want_cost = -np.mean(np.log(sm[np.arange(7), yv]))
    want_g = (sm - np.eye(5)[yv]) / 7
    got_cost, got_g = f(xv, yv)
    np.testing.assert_allclose(got_cost, want_cost, rtol=1e-13)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-12, atol=1e-16)
    # logits far apart: the softmax underflows to 0 at the label, the exact cost is finite
    far = xv * 1000
    far_cost, far_g = f(far, yv)
    if form == "log_then_pick" or rows == "x":
        assert np.isfinite(far_cost)
        assert np.all(np.isfinite(far_g))
        np.testing.assert_allclose(far_g, (np.eye(5)[far.argmax(1)] - np.eye(5)[yv]) / 7,
                                   atol=1e-15)
        m = far.max(1)
        lse = m + np.log(np.exp(far - m[:, None]).sum(1))
        np.testing.assert_allclose(far_cost, np.mean(lse - far[np.arange(7), yv]), rtol=1e-12)


@pytest.mark.parametrize("rows", ["x", "y"])
def test_debug_linker_runs_the_rewritten_graph_both_ways(rows):
    x, y = _matrix(), nt.lvector("y")
    n = (x if rows == "x" else y).shape[0]
    cost = -nt.mean(nt.log(nt.softmax(x))[nt.arange(n), y])
    f = nbgraph.function([x, y], [cost, nbgraph.grad(cost, x)], linker="debug")
    ref = nbgraph.function([x, y], [cost, nbgraph.grad(cost, x)], linker="py", rewrite="exact")
    xv = np.random.default_rng(1).standard_normal((6, 4))
    for yv in (np.array([0, 1, 2, 3, -1, -2]), np.array([3, 0, -1])[:4 if rows == "y" else 0]):
        if rows == "x" and len(yv) != 6:
            continue
        c, g = f(xv, yv)
        rc, rg = ref(xv, yv)
        np.testing.assert_allclose(c, rc, rtol=1e-13)
        np.testing.assert_allclose(g, rg, rtol=1e-12, atol=1e-16)


def test_a_fresh_process_loads_advanced_indexing_and_nnet_only_when_a_graph_needs_them():
    """Every fast pipeline has the label picks, but they track advanced indexing's Ops by
    name: a first function() imports neither that module nor the neural-net Ops, and a
    graph that indexes with arrays still gets its pick."""
    from fresh_python import run_python

    script = (
        "import sys, nbgraph, nbgraph.tensor as nt\n"
        "x = nt.dmatrix('x')\n"
        "nbgraph.function([x], nt.tanh(x) * 2, linker='py')\n"
        "print('nbgraph.tensor.nnet_rewrites' in sys.modules,"
        " 'nbgraph.tensor.advanced_indexing' in sys.modules,"
        " 'nbgraph.tensor.nnet' in sys.modules)\n"
        "y = nt.lvector('y')\n"
        "f = nbgraph.function([x, y], x[nt.arange(x.shape[0]), y], linker='py')\n"
        "from nbgraph.tensor import nnet\n"
        "print(any(isinstance(n.op, nnet.PickLabels) for n in f.fgraph.apply_nodes))\n")
    assert run_python(script).split() == ["True", "False", "False", "True"]
