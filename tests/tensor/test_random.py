"""Random streams: reproducible, independent, advanced by default updates; the values are
NumPy Generator draws (exactly, with the documented seeds); dropout and denoising-autoencoder
corruption computed against NumPy; gradients through normal and uniform parameters.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c import CLinkerRefusal
from nbgraph.tensor.random import RandomGeneratorSharedVariable, RandomStream

LINKERS = ["py", "cvm", "debug"]


def numpy_generator(seed, k):
    """The generator RandomStream(seed) gives its k-th draw (module documentation)."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(k + 1)[k])


@pytest.mark.parametrize("linker", LINKERS)
def test_a_seed_gives_numpy_generator_draws_in_every_linker(linker):
    srng = RandomStream(7)
    z = srng.normal(size=(4,))
    b = srng.binomial(5, 0.3, size=(2, 3))
    f = ng.function([], [z, b], linker=linker)
    g0, g1 = numpy_generator(7, 0), numpy_generator(7, 1)
    for _ in range(3):
        got_z, got_b = f()
        np.testing.assert_array_equal(got_z, g0.standard_normal(4))
        np.testing.assert_array_equal(got_b, g1.binomial(5, 0.3, (2, 3)))


def test_same_seed_same_numbers_across_streams_and_linkers():
    results = []
    for linker in LINKERS:
        srng = RandomStream(123)
        x = srng.normal(1.5, 2.0, size=(5,))
        u = srng.uniform(-1.0, 3.0, size=(5,))
        f = ng.function([], [x, u], linker=linker)
        results.append([f(), f()])
    for other in results[1:]:
        for call_a, call_b in zip(results[0], other, strict=True):
            for a, b in zip(call_a, call_b, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)


def test_default_updates_advance_the_stream_and_can_be_turned_off():
    srng = RandomStream(3)
    u = srng.uniform(size=(6,))
    advancing = ng.function([], u, linker="py")
    a, b = advancing(), advancing()
    assert not np.array_equal(a, b)
    state = srng.state_updates[0][0]
    frozen = ng.function([], u, linker="py", no_default_updates=True)
    c, d = frozen(), frozen()
    np.testing.assert_array_equal(c, d)
    listed = ng.function([], u, linker="py", no_default_updates=[state])
    np.testing.assert_array_equal(listed(), c)
    advancing()
    assert not np.array_equal(frozen(), c)  # it reads the state others advanced


def test_an_explicit_update_wins_over_the_default():
    srng = RandomStream(3)
    u = srng.uniform(size=(2,))
    state = srng.state_updates[0][0]
    start = state.get_value()
    f = ng.function([], u, updates=[(state, state)], linker="py")
    np.testing.assert_array_equal(f(), f())
    assert state.get_value().bit_generator.state == start.bit_generator.state


def test_seed_restarts_every_state():
    srng = RandomStream(11)
    a, b = srng.normal(size=(3,)), srng.integers(0, 100, size=(3,))
    f = ng.function([], [a, b], linker="py")
    first = f()
    f()
    srng.seed(11)
    again = f()
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)
    srng.seed(12)
    assert not np.array_equal(f()[0], first[0])


def test_two_streams_and_two_draws_are_independent():
    s1, s2 = RandomStream(1), RandomStream(2)
    a, b, c = s1.normal(size=(20000,)), s2.normal(size=(20000,)), s1.normal(size=(20000,))
    va, vb, vc = ng.function([], [a, b, c], linker="py")()
    for x, y in [(va, vb), (va, vc), (vb, vc)]:
        assert not np.array_equal(x, y)
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.04  # ~5 standard errors of 1/sqrt(n)


N = 40000


def _moments_case(srng, name):
    """(symbolic draw of N values, a NumPy Generator draw of N values, exact mean, exact var)."""
    rng = np.random.default_rng(99)
    if name == "normal":
        return srng.normal(1.0, 2.0, size=(N,)), rng.normal(1.0, 2.0, N), 1.0, 4.0
    if name == "uniform":
        return srng.uniform(-2.0, 4.0, size=(N,)), rng.uniform(-2.0, 4.0, N), 1.0, 3.0
    if name == "binomial":
        return srng.binomial(10, 0.3, size=(N,)), rng.binomial(10, 0.3, N), 3.0, 2.1
    if name == "bernoulli":
        return srng.bernoulli(0.25, size=(N,)), rng.binomial(1, 0.25, N), 0.25, 0.1875
    if name == "integers":
        return srng.integers(0, 10, size=(N,)), rng.integers(0, 10, N), 4.5, 8.25
    if name == "choice":
        vals = np.array([1.0, 2.0, 5.0])
        p = np.array([0.5, 0.3, 0.2])
        mean = float(vals @ p)
        return (srng.choice(vals, size=(N,), p=p), rng.choice(vals, N, p=p), mean,
                float((vals - mean) ** 2 @ p))
    if name == "multinomial":
        # first column of counts among 3 outcomes: binomial(8, 0.2)
        return (srng.multinomial(8, [0.2, 0.5, 0.3], size=(N,))[:, 0],
                rng.multinomial(8, [0.2, 0.5, 0.3], N)[:, 0], 1.6, 1.28)
    if name == "permutation":
        return (srng.permutation(N).astype("float64"), rng.permutation(N).astype(float),
                (N - 1) / 2, (N * N - 1) / 12)
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["normal", "uniform", "binomial", "bernoulli", "integers",
                                  "choice", "multinomial", "permutation"])
def test_first_two_moments_agree_with_numpy_generator(name):
    srng = RandomStream(2024)
    draw, reference, mean, var = _moments_case(srng, name)
    ours = np.asarray(ng.function([], draw, linker="py")(), dtype=float)
    assert ours.shape == (N,)
    for sample in (ours, np.asarray(reference, dtype=float)):
        # within 5 standard errors of the exact moments (both samples)
        assert abs(sample.mean() - mean) < 5 * np.sqrt(var / N)
        assert abs(sample.var() - var) < 5 * var * np.sqrt(2.0 / N) + 5 * var / N ** 0.5 * 0.5


def test_parameters_broadcast_and_size_may_be_symbolic():
    srng = RandomStream(5)
    loc = nt.dvector("loc")
    x = nt.dmatrix("x")
    z = srng.normal(loc, 0.5, size=x.shape)
    f = ng.function([loc, x], z, linker="py", on_unused_input="ignore")
    got = f(np.array([0.0, 10.0, 100.0]), np.zeros((2, 3)))
    assert got.shape == (2, 3)
    expected = np.array([0.0, 10.0, 100.0]) + 0.5 * numpy_generator(5, 0).standard_normal((2, 3))
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    b = srng.binomial(np.array([1, 10]), np.array([[0.5], [0.9]]))
    assert b.type.shape == (2, 2)
    assert ng.function([], b, linker="py")().shape == (2, 2)


def test_bad_arguments_are_refused_clearly():
    srng = RandomStream(0)
    with pytest.raises(ValueError, match="do not broadcast"):
        srng.normal(np.zeros(3), np.ones(4))
    with pytest.raises(TypeError, match="size"):
        srng.normal(size=nt.dvector())
    with pytest.raises(TypeError, match="float32 or float64"):
        srng.normal(dtype="int32")
    with pytest.raises(ValueError, match="broadcast"):  # static shapes: at build time
        srng.normal(np.zeros(3), 1.0, size=(2,))
    loc = nt.dvector("loc")
    f = ng.function([loc], srng.normal(loc, 1.0, size=(2,)), linker="py")
    with pytest.raises(ValueError, match="do not broadcast to size"):
        f(np.zeros(3))
    with pytest.raises(TypeError, match="Generator"):
        RandomGeneratorSharedVariable(42)


def test_the_c_linker_refuses_random_nodes_and_cvm_runs_them():
    srng = RandomStream(0)
    z = srng.normal(size=(3,)) * 2
    with pytest.raises(CLinkerRefusal, match="RandomVariable"):
        ng.function([], z, linker="c")
    f = ng.function([], z, linker="cvm")
    np.testing.assert_array_equal(f(), 2 * numpy_generator(0, 0).standard_normal(3))


def test_discrete_draws_have_their_structure():
    srng = RandomStream(8)
    perm = srng.permutation(10)
    chosen = srng.choice(20, size=(10,), replace=False)
    counts = srng.multinomial(np.array([5, 7]), [0.1, 0.2, 0.7])
    shuffled = srng.permutation(np.arange(6.0).reshape(3, 2))
    f = ng.function([], [perm, chosen, counts, shuffled], linker="py")
    p, c, m, s = f()
    assert sorted(p) == list(range(10))
    assert len(set(c)) == 10 and c.min() >= 0 and c.max() < 20
    assert m.shape == (2, 3) and list(m.sum(axis=1)) == [5, 7]
    assert sorted(map(tuple, s)) == [(0.0, 1.0), (2.0, 3.0), (4.0, 5.0)]


def test_gradients_flow_through_normal_and_uniform_parameters():
    srng = RandomStream(4)
    mu, sigma = nt.dvector("mu"), nt.dvector("sigma")
    lo, hi = nt.dscalar("lo"), nt.dscalar("hi")
    z = srng.normal(mu, sigma)
    u = srng.uniform(lo, hi, size=(3,))
    cost = (z ** 2).sum() + (u * 2).sum()
    grads = ng.grad(cost, [mu, sigma, lo, hi])
    f = ng.function([mu, sigma, lo, hi], [z, u] + grads, linker="py")
    m, s = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.1, 3.0])
    zv, uv, gmu, gsigma, glo, ghi = f(m, s, -1.0, 2.0)
    eps = (zv - m) / s
    np.testing.assert_allclose(gmu, 2 * zv)
    np.testing.assert_allclose(gsigma, 2 * zv * eps)
    frac = (uv + 1.0) / 3.0
    np.testing.assert_allclose(glo, 2 * (1 - frac).sum())
    np.testing.assert_allclose(ghi, 2 * frac.sum())


def test_dropout_matches_numpy():
    srng = RandomStream(21)
    x = nt.dmatrix("x")
    keep = 0.8
    mask = srng.binomial(1, keep, size=x.shape, dtype="float64")
    dropped = x * mask / keep
    f = ng.function([x], dropped, linker="cvm")
    xv = np.random.default_rng(0).normal(size=(50, 40))
    gen = numpy_generator(21, 0)
    for _ in range(3):
        expected = xv * gen.binomial(1, keep, xv.shape) / keep
        np.testing.assert_allclose(f(xv), expected, rtol=1e-15)
    kept = (f(xv) != 0).mean()
    assert abs(kept - keep) < 0.05


def test_denoising_autoencoder_corruption_and_cost_match_numpy():
    srng = RandomStream(5)
    x = nt.dmatrix("x")
    rng = np.random.default_rng(1)
    W = ng.shared(rng.normal(scale=0.1, size=(6, 4)), name="W")
    b, b_prime = ng.shared(np.zeros(4), name="b"), ng.shared(np.zeros(6), name="b_prime")
    level = 0.3
    corrupted = srng.binomial(n=1, p=1 - level, size=x.shape, dtype="float64") * x
    hidden = nt.sigmoid(nt.dot(corrupted, W) + b)
    recon = nt.sigmoid(nt.dot(hidden, W.T) + b_prime)
    cost = -(x * nt.log(recon) + (1 - x) * nt.log(1 - recon)).sum(axis=1).mean()
    gW = ng.grad(cost, W)
    train = ng.function([x], cost, updates=[(W, W - 0.1 * gW)], linker="py")
    xv = (rng.random((10, 6)) > 0.5).astype(float)
    gen = numpy_generator(5, 0)
    Wv = W.get_value()
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for _ in range(2):
        cx = gen.binomial(1, 1 - level, xv.shape) * xv
        h = sig(cx @ Wv)
        r = sig(h @ Wv.T)
        expected = -(xv * np.log(r) + (1 - xv) * np.log(1 - r)).sum(axis=1).mean()
        np.testing.assert_allclose(train(xv), expected, rtol=1e-10)
        # NumPy's gradient of the same cost (W is used twice: encoder and decoder)
        d_r = (r - xv) / len(xv)
        d_h = d_r @ Wv * h * (1 - h)
        Wv = Wv - 0.1 * (cx.T @ d_h + d_r.T @ h)
        np.testing.assert_allclose(W.get_value(), Wv, rtol=1e-10)


def test_shared_state_value_is_copied_unless_borrowed():
    srng = RandomStream(0)
    srng.normal()
    state = srng.state_updates[0][0]
    g = state.get_value()
    g.standard_normal(10)
    assert state.get_value().bit_generator.state != g.bit_generator.state
    assert state.get_value(borrow=True) is state.container[0]


# -- properties over shapes, sizes and dtypes -----------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 3), max_size=3), seed=st.integers(0, 2 ** 20),
       dtype=st.sampled_from(["float32", "float64"]), pshape_len=st.integers(0, 3))
def test_draws_equal_numpy_for_any_size_and_broadcast_parameters(shape, seed, dtype,
                                                                 pshape_len):
    shape = tuple(shape)
    # parameters shaped like a suffix of size (with some size-1 dims): they broadcast
    pshape = tuple(1 if i % 2 else s for i, s in enumerate(shape[len(shape) - min(
        pshape_len, len(shape)):]))
    loc = np.arange(int(np.prod(pshape)), dtype=dtype).reshape(pshape)
    srng = RandomStream(seed)
    z = srng.normal(loc, 2.0, size=shape, dtype=dtype)
    u = srng.uniform(size=shape, dtype=dtype)
    i = srng.integers(-3, 4, size=shape)
    zv, uv, iv = ng.function([], [z, u, i], linker="py")()
    g0, g1, g2 = (numpy_generator(seed, k) for k in range(3))
    expected_z = loc + np.asarray(2.0, dtype) * g0.standard_normal(shape, dtype=dtype)
    np.testing.assert_array_equal(zv, expected_z)
    np.testing.assert_array_equal(uv, g1.random(shape, dtype=dtype))
    np.testing.assert_array_equal(iv, g2.integers(-3, 4, shape))
    assert zv.dtype == dtype and uv.dtype == dtype and iv.dtype == np.int64
    assert zv.shape == uv.shape == iv.shape == shape
    assert z.type.shape == shape


def test_shape_of_a_draw_is_known_without_drawing():
    srng = RandomStream(0)
    n, m = nt.lscalar("n"), nt.lscalar("m")
    z = srng.normal(size=(n, m))
    # (without the default update, which would still advance the state)
    f = ng.function([n, m], [z.shape[0], z.shape[1]], linker="py", no_default_updates=True)
    assert list(f(2, 5)) == [2, 5]
    assert not any(type(node.op).__name__ == "RandomVariable" for node in f.fgraph.apply_nodes)
    assert z.ndim == 2 and srng.choice(5).ndim == 0
    with pytest.raises(TypeError, match=r"size\[1\]"):
        srng.normal(size=(n, nt.dscalar()))


def test_random_numbers_in_a_loop_advance_per_step_or_come_as_a_sequence():
    from nbgraph.tensor.scan import scan

    srng = RandomStream(9)
    # drawn inside the step: the state advances from step to step (scan's updates carry
    # it out of the loop), so the steps read NumPy's stream in order
    draws, updates = scan(lambda: srng.normal(size=(2,)), n_steps=3)
    f0 = ng.function([], draws, updates=updates, linker="py")
    gen0 = numpy_generator(9, 0)
    np.testing.assert_array_equal(f0(), [gen0.normal(size=2) for _ in range(3)])
    np.testing.assert_array_equal(f0(), [gen0.normal(size=2) for _ in range(3)])
    # per-step dropout masks: one draw for all steps, read as a sequence
    xs = nt.dmatrix("xs")
    masks = srng.binomial(1, 0.5, size=xs.shape, dtype="float64")
    total, _ = scan(lambda x, m, acc: acc + (x * m).sum(), sequences=[xs, masks],
                    outputs_info=nt.constant(0.0))
    f = ng.function([xs], total[-1], linker="py")
    xv = np.arange(12.0).reshape(4, 3)
    gen = numpy_generator(9, 1)  # stream 0 is the loop's above
    assert float(f(xv)) == pytest.approx((xv * gen.binomial(1, 0.5, xv.shape)).sum())


def test_the_random_numbers_tutorial_in_short():
    """Theano's random-numbers page, as computations: one draw used three times in a call
    is one value; a function without default updates repeats itself; a state copied from
    one variable to another makes the second repeat the first's numbers."""
    srng = RandomStream(seed=234)
    rv_u = srng.uniform(size=(2, 2))
    rv_n = srng.normal(size=(2, 2))
    f = ng.function([], rv_u, linker="py")
    g = ng.function([], rv_n, linker="py", no_default_updates=True)
    nearly_zeros = ng.function([], rv_u + rv_u - 2 * rv_u, linker="py")
    assert not np.array_equal(f(), f())
    np.testing.assert_array_equal(g(), g())
    np.testing.assert_allclose(nearly_zeros(), np.zeros((2, 2)), atol=1e-15)
    assert rv_u.rng is srng.state_updates[0][0] and rv_u.update[0] is rv_u.rng
    assert rv_n.rng is srng.state_updates[1][0]
    # copy the state of rv_u's generator into rv_n's: both then draw from equal generators
    saved = rv_u.rng.get_value(borrow=True)
    rv_n.rng.set_value(saved)  # a copy: the two states stay independent objects
    a = ng.function([], srng.uniform(size=(3,)), linker="py")  # a third state, not involved
    a()
    u_state, n_state = rv_u.rng.get_value(), rv_n.rng.get_value()
    assert u_state.bit_generator.state == n_state.bit_generator.state
    assert rv_n.rng.container[0] is not rv_u.rng.container[0]
