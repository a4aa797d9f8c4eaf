"""SoftmaxGrad: ``sm * (gz - sum(gz * sm, axis, keepdims))`` in one Op (C: one pass per row),
and the stabilize-stage rewrite that puts it where a softmax's gradient is not a
cross-entropy's.

NumPy (the Op's perform, the formula itself) is the oracle: the C kernel sums
``gz * sm`` in NumPy's pairwise order, so it is compared within a few ulps of the
row's scale (``sm * (gz - s)`` may cancel)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor import nnet
from nbgraph.testing import verify_grad


def _want(gz, sm, axis):
    return sm * (gz - np.sum(gz * sm, axis=axis, keepdims=True))


def _close(got, want, gz, sm, axis):
    assert got.dtype == want.dtype and got.shape == want.shape
    eps = np.finfo(got.dtype).eps
    scale = np.abs(sm) * (np.abs(gz) + np.sum(np.abs(gz * sm), axis=axis, keepdims=True))
    assert np.all(np.abs(got - want) <= 8 * eps * scale + np.finfo(got.dtype).tiny)


@st.composite
def _cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    gz = rng.standard_normal(shape).astype(dtype)
    sm = rng.random(shape).astype(dtype)
    if draw(st.booleans()) and ndim:  # strided views
        gz = np.repeat(gz, 2, axis=-1)[..., ::2]
        sm = np.repeat(sm, 2, axis=0)[::2]
    return gz, sm, draw(st.integers(-ndim, ndim - 1))


@settings(max_examples=30, deadline=None)
@given(_cases())
def test_softmax_grad_follows_numpy(case):
    gz, sm, axis = case
    g = nt.tensor(gz.dtype.name, (None,) * gz.ndim, "gz")
    s = nt.tensor(sm.dtype.name, (None,) * sm.ndim, "sm")
    out = nnet.SoftmaxGrad(axis)(g, s)
    want = _want(gz, sm, axis)
    py = nbgraph.function([g, s], out, linker="py")(gz, sm)
    np.testing.assert_array_equal(py, want)
    _close(nbgraph.function([g, s], out, linker="c")(gz, sm), want, gz, sm, axis)
    nbgraph.function([g, s], out, linker="debug")(gz, sm)  # Python vs C side by side


def test_softmax_grad_gradients():
    rng = np.random.default_rng(0)
    gz, sm = rng.standard_normal((3, 4)), rng.random((3, 4))
    verify_grad(lambda g, s: nnet.SoftmaxGrad(1)(g, s), [gz, sm])
    verify_grad(lambda g, s: nnet.SoftmaxGrad(0)(g, s), [gz, sm])


def test_bad_inputs_are_refused():
    g, s = nt.dmatrix("gz"), nt.dmatrix("sm")
    with pytest.raises(TypeError, match="gz must be a float"):
        nnet.SoftmaxGrad()(nt.lmatrix("gz"), s)
    with pytest.raises(TypeError, match="one dtype and ndim"):
        nnet.SoftmaxGrad()(nt.fmatrix("gz"), s)
    with pytest.raises(ValueError, match="out of range"):
        nnet.SoftmaxGrad(2)(g, s)
    for linker in ("py", "c"):
        f = nbgraph.function([g, s], nnet.SoftmaxGrad()(g, s), linker=linker)
        with pytest.raises(ValueError):
            f(np.ones((2, 3)), np.ones((2, 4)))


def test_the_gradient_of_a_softmax_becomes_one_op():
    x, t = nt.dmatrix("x"), nt.dmatrix("t")
    cost = ((nt.softmax(x) - t) ** 2).sum()
    g = nbgraph.grad(cost, x)
    f = nbgraph.function([x, t], g, linker="cvm")
    assert any(isinstance(n.op, nnet.SoftmaxGrad) for n in f.fgraph.apply_nodes)
    exact = nbgraph.function([x, t], g, linker="py", rewrite="exact")
    assert not any(isinstance(n.op, nnet.SoftmaxGrad) for n in exact.fgraph.apply_nodes)
    rng = np.random.default_rng(2)
    xv, tv = rng.standard_normal((6, 5)), rng.random((6, 5))
    np.testing.assert_allclose(f(xv, tv), exact(xv, tv), rtol=1e-12, atol=1e-15)
    # a cross-entropy's gradient is still the cross-entropy's own Op
    y = nt.lvector("y")
    xent = nt.mean(nt.categorical_crossentropy(nt.softmax(x), y))
    h = nbgraph.function([x, y], nbgraph.grad(xent, x), linker="cvm")
    ops = {type(n.op) for n in h.fgraph.apply_nodes}
    assert nnet.SoftmaxCrossentropyGrad in ops and nnet.SoftmaxGrad not in ops
