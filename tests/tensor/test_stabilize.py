"""The ``stabilize`` stage (SPEC 3.1): each rewrite on sweeps through the overflow and
underflow ranges against mpmath, and the documentation's logistic regression.

For each naive formula the graph is compiled twice: ``rewrite="fast"`` (with the
stage) and ``rewrite="exact"`` (without: NumPy's result).  Where the exact value
is finite and representable the stabilised result is finite, and its error
against a 40-digit mpmath reference is never larger than the naive formula's
(up to one ulp: the C library's log1p/expm1/exp are not correctly rounded
either, so where the naive formula is exact to the last bit the stable one may
sit one ulp away).
"""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.mode import Mode

mp = pytest.importorskip("mpmath")


def _both(build, *values, dtype="float64"):
    xs = [nt.tensor(dtype, (None,) * np.ndim(v)) for v in values]
    out = build(*xs)
    with np.errstate(all="ignore"):
        fast = nbgraph.function(xs, out, rewrite="fast")(*values)
        exact = nbgraph.function(xs, out, rewrite="exact")(*values)
    return np.asarray(fast), np.asarray(exact)


def _reference(function, x):
    with mp.workdps(40):
        return np.array([_to_float(function(mp.mpf(float(v)))) for v in np.ravel(x)]).reshape(
            np.shape(x))


def _to_float(v):
    v = mp.re(v)
    if mp.isinf(v) or abs(v) > 1.7976931348623157e308:
        return float(np.sign(float(mp.sign(v))) * np.inf)
    return float(v)


def _errors_in_ulps(got, ref):
    with np.errstate(all="ignore"):
        err = np.abs(got - ref) / np.spacing(np.abs(ref))
    err = np.where(got == ref, 0.0, err)
    return np.where(np.isfinite(err), err, np.inf)


def check_rule(got_fast, got_exact, ref, context):
    finite = np.isfinite(ref)
    assert np.isfinite(got_fast[finite]).all(), "%s: not finite at %r" % (
        context, got_fast[finite & ~np.isfinite(got_fast)][:5])
    e_fast = _errors_in_ulps(got_fast, ref)[finite]
    e_exact = _errors_in_ulps(got_exact, ref)[finite]
    worse = e_fast > np.maximum(e_exact, 1.0)
    assert not worse.any(), "%s: stabilised error %r ulps where naive %r" % (
        context, e_fast[worse][:5], e_exact[worse][:5])


def sweep(low=1e-300, high=1e3, n=300):
    pos = np.geomspace(low, high, n)
    return np.concatenate([-pos[::-1], [0.0], pos])


SIGMOID = lambda v: 1 / (1 + mp.exp(-v))  # noqa: E731


RULES = {
    "hand_written_sigmoid": (lambda x: 1 / (1 + nt.exp(-x)), SIGMOID, sweep()),
    "log_sigmoid": (lambda x: nt.log(nt.sigmoid(x)), lambda v: -mp.log1p(mp.exp(-v)),
                    sweep()),
    "log_one_minus_sigmoid": (lambda x: nt.log(1 - nt.sigmoid(x)),
                              lambda v: -mp.log1p(mp.exp(v)), sweep()),
    "log_of_hand_written_sigmoid": (lambda x: nt.log(1 / (1 + nt.exp(-x))),
                                    lambda v: -mp.log1p(mp.exp(-v)), sweep()),
    "log1p": (lambda x: nt.log(1 + x), lambda v: mp.log1p(v),
              np.concatenate([-np.geomspace(1e-300, 0.999, 300), [0.0],
                              np.geomspace(1e-300, 1e300, 300)])),
    "expm1": (lambda x: nt.exp(x) - 1, lambda v: mp.expm1(v), sweep(1e-300, 800)),
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_is_finite_and_never_less_accurate(name):
    build, exact_function, x = RULES[name]
    fast, exact = _both(build, x)
    check_rule(fast, exact, _reference(exact_function, x), name)


def test_logsumexp_rule():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal((4, 5)), rng.uniform(700, 750, (3, 5)),
                        rng.uniform(-800, -750, (3, 5))])
    fast, exact = _both(lambda v: nt.log(nt.sum(nt.exp(v), axis=1)), x)
    with mp.workdps(40):
        ref = np.array([float(mp.log(mp.fsum(mp.exp(mp.mpf(float(v))) for v in row)))
                        for row in x])
    check_rule(fast, exact, ref, "logsumexp")
    assert not np.isfinite(exact[4:]).any()  # the naive formula overflows / underflows there
    keep, _ = _both(lambda v: nt.log(nt.sum(nt.exp(v), axis=1, keepdims=True)), x)
    np.testing.assert_allclose(keep[:, 0], fast)


def test_log_softmax_and_crossentropy_rules():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4)) * np.array([[1], [10], [100], [1000], [1e4], [0.1]])
    y = np.array([0, 1, 2, 3, 0, 1])
    with mp.workdps(40):
        lsm = np.array([[float(mp.mpf(float(v)) - mp.log(mp.fsum(mp.exp(mp.mpf(float(w)))
                                                                  for w in row)))
                         for v in row] for row in x])
    fast, exact = _both(lambda v: nt.log(nt.softmax(v)), x)
    check_rule(fast, exact, lsm, "log_softmax")
    xs, ys = nt.dmatrix(), nt.lvector()
    cost = nt.categorical_crossentropy(nt.softmax(xs), ys)
    with np.errstate(all="ignore"):
        fast = nbgraph.function([xs, ys], cost)(x, y)
        exact = nbgraph.function([xs, ys], cost, rewrite="exact")(x, y)
    check_rule(fast, exact, -lsm[np.arange(6), y], "crossentropy")
    text = nbgraph.dprint(nbgraph.function([xs, ys], cost), file="str")
    assert "SoftmaxCrossentropy" in text


def test_softmax_from_primitives_is_one_node_and_equal():
    x = nt.dmatrix("x")
    e = nt.exp(x - x.max(axis=1, keepdims=True))
    out = e / e.sum(axis=1, keepdims=True)
    f = nbgraph.function([x], out)
    assert "Softmax" in nbgraph.dprint(f, file="str")
    v = np.random.default_rng(2).standard_normal((5, 7)) * 30
    np.testing.assert_allclose(f(v), nbgraph.function([x], out, rewrite="exact")(v),
                               rtol=1e-15, atol=1e-300)


def test_gradients_of_log_sigmoid_stay_finite():
    x = nt.dvector("x")
    for cost in [nt.sum(nt.log(nt.sigmoid(x))), nt.sum(nt.log(1 - nt.sigmoid(x))),
                 nt.sum(nt.log(1 / (1 + nt.exp(-x)))),
                 nt.sum(nt.binary_crossentropy(nt.sigmoid(x), 0.3))]:
        g = nbgraph.grad(cost, x)
        v = np.array([-1000.0, -50.0, -1.0, 0.0, 2.0, 50.0, 1000.0])
        with np.errstate(all="ignore"):
            got = nbgraph.function([x], g)(v)
        assert np.isfinite(got).all(), got


def test_the_stage_can_be_switched_off():
    x = nt.dvector("x")
    out = nt.log(1 - nt.sigmoid(x))
    v = np.array([40.0])
    with np.errstate(all="ignore"):
        assert np.isneginf(nbgraph.function([x], out, rewrite="exact")(v)[0])
        assert np.isneginf(nbgraph.function([x], out, mode=Mode(
            optimizer="fast_run").excluding("stabilize"))(v)[0])
    assert nbgraph.function([x], out)(v)[0] == pytest.approx(-40.0)
    with pytest.raises(ValueError, match="exact"):
        nbgraph.function([x], out, rewrite="stable")


# -- the documentation's logistic regression ---------------------------------------


def _logistic_data(n=400, feats=784, seed=7):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, feats)), rng.integers(0, 2, n).astype("float64"), \
        rng.standard_normal(feats)


def _numpy_reference(data, labels, w, steps, lr=0.1):
    """A careful NumPy version of the same training: stable log-sigmoid and gradient."""
    w, b = w.copy(), 0.0
    n = len(labels)
    for _ in range(steps):
        z = data @ w + b
        s = np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) /
                     (1 + np.exp(-np.abs(z))))
        g = (s - labels) / n  # d(mean xent)/dz, without dividing by s or 1 - s
        gw = data.T @ g + 0.02 * w
        gb = g.sum()
        w, b = w - lr * gw, b - lr * gb
    return w, b


def test_documentation_logistic_regression_stays_finite_and_matches_numpy():
    data, labels, w0 = _logistic_data()
    x, y = nt.dmatrix("x"), nt.dvector("y")
    w = nt.shared(w0.copy(), name="w")
    b = nt.shared(0.0, name="b")
    p_1 = 1 / (1 + nt.exp(-nt.dot(x, w) - b))
    prediction = p_1 > 0.5
    xent = -y * nt.log(p_1) - (1 - y) * nt.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = nbgraph.grad(cost, [w, b])
    train = nbgraph.function([x, y], [prediction, xent],
                             updates=((w, w - 0.1 * gw), (b, b - 0.1 * gb)))
    z0 = data @ w0
    assert (1 / (1 + np.exp(-z0)) == 1.0).sum() > 10  # p = 1.0 exactly for many samples
    steps = 40
    for _ in range(steps):
        pred, err = train(data, labels)
    assert np.isfinite(w.get_value()).all() and np.isfinite(err).all()
    w_ref, b_ref = _numpy_reference(data, labels, w0, steps)
    np.testing.assert_allclose(w.get_value(), w_ref, rtol=1e-9, atol=1e-12)
    assert float(b.get_value()) == pytest.approx(b_ref, rel=1e-9, abs=1e-12)
    # without the stage the same program computes NaN weights (the documented failure)
    w.set_value(w0.copy())
    b.set_value(0.0)
    naive = nbgraph.function([x, y], [prediction, xent], rewrite="exact",
                             updates=((w, w - 0.1 * gw), (b, b - 0.1 * gb)))
    with np.errstate(all="ignore"):
        naive(data, labels)
        naive(data, labels)
    assert not np.isfinite(w.get_value()).all()


def test_a_fresh_process_loads_nnet_only_for_a_graph_that_needs_it():
    """The stage looks for nnet's Ops without importing nbgraph.tensor.nnet (no graph
    holds one before); a softmax written with primitives still becomes one (the rewrite
    imports the module), and a picked log-softmax its cross-entropy."""
    from fresh_python import run_python

    script = (
        "import sys, nbgraph, nbgraph.tensor as nt\n"
        "x, y = nt.dmatrix('x'), nt.lvector('y')\n"
        "nbgraph.function([x], nt.tanh(x).sum() * 2, linker='py')\n"
        "print('nbgraph.tensor.nnet' in sys.modules)\n"
        "e = nt.exp(x - x.max(axis=1, keepdims=True))\n"
        "f = nbgraph.function([x], e / e.sum(axis=1, keepdims=True), linker='py')\n"
        "print(sorted({type(n.op).__name__ for n in f.fgraph.apply_nodes}))\n"
        "from nbgraph.tensor import nnet\n"
        "lp = nnet.log_softmax(x)[nt.arange(x.shape[0]), y]\n"
        "f = nbgraph.function([x, y], lp, linker='py')\n"
        "print(sorted({type(n.op).__name__ for n in f.fgraph.apply_nodes}))\n")
    lines = run_python(script).splitlines()
    assert lines[:2] == ["False", "['Softmax']"]
    assert "SoftmaxCrossentropy" in lines[2], lines
