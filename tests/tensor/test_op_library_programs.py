"""The op library inside whole programs, under every linker that can run them: a
softmax-regression step written with argmax and the x[arange(n), y] pick, an
embedding lookup trained by scatter-add, and a normalisation with var/std."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt

LINKERS = ["py", pytest.param("cvm", marks=pytest.mark.needs_cc),
           pytest.param("debug", marks=pytest.mark.needs_cc)]


def softmax_rows(z):
    e = nt.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("linker", LINKERS)
def test_softmax_regression_step_matches_numpy(linker):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 5)), rng.integers(0, 3, size=40)
    W0 = rng.normal(size=(5, 3)) * 0.1
    x, t = nt.dmatrix("x"), nt.lvector("t")
    W = nbgraph.shared(W0.copy(), "W")
    p = softmax_rows(nt.dot(x, W))
    cost = -nt.mean(nt.log(p[nt.arange(t.shape[0]), t]))
    errors = nt.mean(nt.neq(nt.argmax(p, axis=1), t))
    step = nbgraph.function([x, t], [cost, errors], linker=linker,
                            updates=[(W, W - 0.5 * nbgraph.grad(cost, W))])
    for _ in range(3):
        got_cost, got_err = step(X, y)
    # the same three steps in NumPy
    Wn = W0.copy()
    for _ in range(3):
        z = X @ Wn
        e = np.exp(z - z.max(axis=1, keepdims=True))
        pn = e / e.sum(axis=1, keepdims=True)
        want_cost = -np.mean(np.log(pn[np.arange(40), y]))
        want_err = np.mean(pn.argmax(axis=1) != y)
        d = pn.copy()
        d[np.arange(40), y] -= 1
        Wn = Wn - 0.5 * X.T @ d / 40
    np.testing.assert_allclose(got_cost, want_cost, rtol=1e-12)
    assert got_err == want_err
    np.testing.assert_allclose(W.get_value(), Wn, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("linker", LINKERS)
def test_embedding_lookup_trains_by_scatter_add(linker):
    rng = np.random.default_rng(1)
    E0 = rng.normal(size=(6, 4))
    idx = np.array([[1, 3], [3, 3], [0, 5]])
    E = nbgraph.shared(E0.copy(), "E")
    i = nt.lmatrix("i")
    cost = nt.sum(nt.tanh(E[i]).sum(axis=1) ** 2)
    step = nbgraph.function([i], cost, linker=linker,
                            updates=[(E, E - 0.1 * nbgraph.grad(cost, E))])
    step(idx)
    h = np.tanh(E0[idx])
    g_rows = 2 * h.sum(axis=1, keepdims=True) * (1 - h ** 2)
    gE = np.zeros_like(E0)
    np.add.at(gE, idx, g_rows)
    np.testing.assert_allclose(E.get_value(), E0 - 0.1 * gE, rtol=1e-12)


@pytest.mark.parametrize("linker", LINKERS)
def test_standardise_columns_and_cumulative_sums(linker):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(7, 3)) * 5 + 2
    x = nt.dmatrix("x")
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    out = nbgraph.function([x], [z, nt.cumsum(z, axis=0), nt.flatten(nt.tril(x))],
                           linker=linker)(a)
    want = (a - a.mean(axis=0)) / a.std(axis=0, ddof=1)
    np.testing.assert_allclose(out[0], want, rtol=1e-12)
    np.testing.assert_allclose(out[1], np.cumsum(want, axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out[2], np.tril(a).ravel())


def test_op_library_nodes_without_c_are_refused_by_the_c_linker():
    x = nt.dmatrix("x")  # argmax over both axes has no C (one axis has)
    with pytest.raises(Exception, match="Argmax"):
        nbgraph.function([x], nt.argmax(x), linker="c")
