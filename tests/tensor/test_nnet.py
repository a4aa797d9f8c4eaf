"""nbgraph.tensor.nnet against SciPy/NumPy: values, dtypes, shapes (0-size included),
gradients against finite differences, the debug linker, and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

sp = pytest.importorskip("scipy.special")


def _run(build, *values, linker="py", rewrite="exact"):
    xs = [nt.tensor(np.asarray(v).dtype, (None,) * np.ndim(v)) for v in values]
    with np.errstate(all="ignore"):
        return nbgraph.function(xs, build(*xs), linker=linker, rewrite=rewrite)(*values)


def _float_dtype(dtype):
    d = np.exp(np.ones((), dtype)).dtype
    return np.float32 if d == np.float16 else d


SHAPES = [(3, 4), (1, 5), (2, 3, 4), (0, 3), (3, 0), (5,), (2, 1, 3)]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(SHAPES), st.sampled_from(["float64", "float32", "int16", "int64"]),
       st.integers(-3, 2), st.integers(0, 2**32 - 1))
def test_softmax_family_follows_scipy(shape, dtype, axis, seed):
    ndim = len(shape)
    axis = axis % ndim
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 20).astype(dtype)
    xf = x.astype(_float_dtype(dtype))
    tol = 1e-5 if xf.dtype == np.float32 else 1e-12
    for build, ref in [(lambda v: nt.softmax(v, axis), lambda: sp.softmax(xf, axis=axis)),
                       (lambda v: nt.log_softmax(v, axis),
                        lambda: sp.log_softmax(xf, axis=axis)),
                       (lambda v: nt.logsumexp(v, axis=axis),
                        lambda: sp.logsumexp(xf, axis=axis)),
                       (lambda v: nt.logsumexp(v, axis=axis, keepdims=True),
                        lambda: sp.logsumexp(xf, axis=axis, keepdims=True))]:
        got = _run(build, x)
        if x.size == 0:  # SciPy refuses empty reductions: the answer is empty or -inf
            want = _empty_reference(build, xf, axis, got)
        else:
            with np.errstate(all="ignore"):
                want = np.asarray(ref()).astype(xf.dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _empty_reference(build, xf, axis, got):
    """What NumPy's formulas give for an empty x: an empty softmax, -inf for a logsumexp
    over an empty axis, an empty logsumexp over a non-empty one."""
    if got.shape == xf.shape:
        return np.empty_like(xf)
    with np.errstate(all="ignore"):
        return np.log(np.sum(np.exp(xf), axis=axis, keepdims=got.ndim == xf.ndim))


def test_logsumexp_extremes_and_all_axes():
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf], [-np.inf, -np.inf], [np.inf, 1.0]])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(_run(lambda v: nt.logsumexp(v, axis=1), x),
                                   sp.logsumexp(x, axis=1))
    v = np.random.default_rng(0).standard_normal((3, 4))
    assert _run(lambda a: nt.logsumexp(a), v) == pytest.approx(sp.logsumexp(v))


def test_log_softmax_keeps_tiny_values():
    x = np.array([[0.0, -50.0], [40.0, 0.0]])
    got = _run(lambda v: nt.log_softmax(v), x)
    np.testing.assert_allclose(got, [[-np.log1p(np.exp(-50.0)), -50 - np.log1p(np.exp(-50))],
                                     [-np.log1p(np.exp(-40.0)), -40 - np.log1p(np.exp(-40))]],
                               rtol=1e-15)
    assert got[0, 0] < 0


ACTIVATIONS = {
    "relu": (nt.relu, lambda x: np.maximum(x, 0)),
    "leaky_relu": (lambda x: nt.relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (nt.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "gelu": (nt.gelu, lambda x: x * 0.5 * sp.erfc(-x / np.sqrt(2))),
    "gelu_tanh": (lambda x: nt.gelu(x, "tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    "softsign": (nt.softsign, lambda x: x / (1 + np.abs(x))),
    "sigmoid": (nt.sigmoid, sp.expit),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activations(name, dtype):
    build, ref = ACTIVATIONS[name]
    x = np.array([-800.0, -40, -3, -0.5, 0, 0.25, 2, 40, 800, np.inf, -np.inf]).astype(dtype)
    got = _run(build, x)
    with np.errstate(all="ignore"):
        want = ref(x).astype(dtype)
    assert got.dtype == dtype
    # (float32: 1 + tanh(...) cancels for negative x in the tanh approximation)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-14,
                               atol=1e-6 if dtype == "float32" else 1e-300)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradients(name):
    verify_grad(ACTIVATIONS[name][0], [np.array([-2.0, -0.3, 0.4, 1.7])])


def test_softmax_family_gradients():
    rng = np.random.default_rng(3)
    v = rng.standard_normal((3, 4))
    verify_grad(nt.softmax, [v])
    verify_grad(lambda a: nt.softmax(a, axis=0), [v])
    verify_grad(nt.log_softmax, [v])
    verify_grad(lambda a: nt.logsumexp(a, axis=1), [v])
    verify_grad(lambda a: nt.logsumexp(a, axis=(0, 1), keepdims=True), [v])
    labels = np.array([0, 3, 1])
    verify_grad(lambda a: nt.softmax_crossentropy(a, labels), [v])
    verify_grad(lambda a: nt.categorical_crossentropy(nt.softmax(a), labels), [v])
    targets = sp.softmax(rng.standard_normal((3, 4)), axis=1)
    verify_grad(lambda a: nt.categorical_crossentropy(nt.softmax(a), targets), [v])
    verify_grad(lambda p: nt.binary_crossentropy(p, np.array([0.0, 1.0, 0.3])),
                [np.array([0.2, 0.6, 0.9])])


def test_second_derivative_of_softmax():
    x = nt.dvector("x")
    g = nbgraph.grad(nt.softmax(x)[0], x)
    h = nbgraph.grad(g[1], x)
    v = np.array([0.1, -0.4, 0.9])
    s = sp.softmax(v)
    # d2 s0 / dx1 dx_j
    want = -s[0] * s[1] * (np.eye(3)[1] - s) - s[0] * s[1] * (np.eye(3)[0] - s)
    np.testing.assert_allclose(h.eval({x: v}), want, rtol=1e-12)


def test_crossentropies_follow_numpy():
    rng = np.random.default_rng(4)
    p = sp.softmax(rng.standard_normal((5, 3)), axis=1)
    y = np.array([0, 2, 1, 1, 0])
    np.testing.assert_allclose(_run(nt.categorical_crossentropy, p, y),
                               -np.log(p[np.arange(5), y]), rtol=1e-15)
    t = np.eye(3)[y]
    np.testing.assert_allclose(_run(nt.categorical_crossentropy, p, t),
                               -np.log(p[np.arange(5), y]), rtol=1e-15)
    q, z = rng.uniform(0.01, 0.99, 6), rng.uniform(0, 1, 6)
    np.testing.assert_allclose(_run(nt.binary_crossentropy, q, z),
                               -(z * np.log(q) + (1 - z) * np.log(1 - q)), rtol=1e-15)
    x = rng.standard_normal((5, 3)) * 100
    np.testing.assert_allclose(_run(nt.softmax_crossentropy, x, y),
                               -sp.log_softmax(x, axis=1)[np.arange(5), y], rtol=1e-13)


def test_one_hot_and_pick_labels():
    y = np.array([[0, 2], [1, 1]])
    got = _run(lambda v: nt.one_hot(v, 3, "int8"), y)
    np.testing.assert_array_equal(got, np.eye(3, dtype="int8")[y])
    x = np.arange(12.0).reshape(2, 2, 3)
    np.testing.assert_array_equal(_run(nt.nnet.pick_labels, x, y),
                                  np.take_along_axis(x, y[..., None], -1)[..., 0])
    assert _run(lambda v: nt.one_hot(v, 4), np.zeros(0, "int64")).shape == (0, 4)


@pytest.mark.needs_cc
def test_debug_linker_runs_the_nnet_graph():
    x, y = nt.dmatrix("x"), nt.lvector("y")
    w = nt.shared(np.random.default_rng(5).standard_normal((4, 3)), name="w")
    z = nt.dot(x, w)
    cost = nt.mean(nt.categorical_crossentropy(nt.softmax(z), y)) + nt.sum(nt.gelu(z)) + \
        nt.sum(nt.logsumexp(z, axis=0)) + nt.sum(nt.elu(z) + nt.relu(z) + nt.softsign(z))
    g = nbgraph.grad(cost, w)
    f = nbgraph.function([x, y], [cost, g], linker="debug")
    rng = np.random.default_rng(6)
    c, gw = f(rng.standard_normal((5, 4)), np.array([0, 1, 2, 1, 0]))
    assert np.isfinite(c) and np.isfinite(gw).all()


def test_bad_inputs():
    x = nt.dmatrix("x")
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        nt.softmax(x, axis=2)
    with pytest.raises(TypeError, match="axis must be an int"):
        nt.log_softmax(x, axis=(0, 1))
    with pytest.raises(ValueError, match="at least one dimension"):
        nt.softmax(nt.dscalar())
    with pytest.raises(TypeError, match="real tensor"):
        nt.softmax(nt.tensor("bool", (None,)))
    with pytest.raises(TypeError, match="labels must be integers"):
        nt.one_hot(nt.dvector(), 3)
    with pytest.raises(ValueError, match="n must be"):
        nt.one_hot(nt.lvector(), -1)
    with pytest.raises(TypeError, match="true_dist"):
        nt.categorical_crossentropy(x, nt.dvector())
    with pytest.raises(ValueError, match="approximate"):
        nt.gelu(x, "erf")
    y = nt.lvector("y")
    f = nbgraph.function([x, y], nt.categorical_crossentropy(nt.softmax(x), y))
    with pytest.raises(IndexError, match=r"labels must be in \[0, 3\)"):
        f(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(IndexError, match="labels"):
        _run(lambda v: nt.one_hot(v, 2), np.array([-1]))
