"""The computations of classic Theano programs, written through nbgraph.compat.theano
with small synthetic data of the programs' shapes, checked against NumPy.

Programs: the Theano documentation's tutorial pages (baby steps, more
examples, derivatives, conditions, loops, random numbers), the deep-learning
tutorials' logistic regression (``logistic_sgd``), multilayer perceptron
(``mlp``), denoising autoencoder (``dA``) and convolutional network
(``convolutional_mlp``, LeNet), and PyTensor's introduction.  Each test builds
the program's graph as the program does (same calls, same structure) and
compares every value it computes with the same formula evaluated by NumPy.

Programs that need an Op nbgraph does not have yet are skipped with the
name that is missing (they run as soon as it lands).
"""

import numpy as np
import pytest

import nbgraph.compat.theano as theano
import nbgraph.compat.theano.tensor as T
from nbgraph.compat import NoEquivalentError
from nbgraph.compat.theano import In
from nbgraph.compat.theano.ifelse import ifelse
from nbgraph.compat.theano.tensor.shared_randomstreams import RandomStreams
from nbgraph.compat.theano.tensor.signal import pool

floatX = theano.config.floatX
RNG = np.random.default_rng(1234)


def needs(module, *names):
    """Skip unless every ``module.name`` resolves (the Op has landed in nbgraph)."""
    for name in names:
        try:
            getattr(module, name)
        except (NoEquivalentError, AttributeError) as exc:
            pytest.skip("needs %s.%s: %s" % (module.__name__, name, exc))


def np_sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def np_softmax(v):
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- the tutorial: baby steps ------------------------------------------------------


def test_baby_steps_adding_scalars_and_matrices():
    x = T.dscalar("x")
    y = T.dscalar("y")
    z = x + y
    f = theano.function([x, y], z)
    assert f(2, 3) == 5.0 and np.allclose(f(16.3, 12.1), 28.4)
    assert z.eval({x: 16.3, y: 12.1}) == pytest.approx(28.4)
    assert theano.printing.pp(z) == "(x + y)"
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = theano.function([x, y], x + y)
    np.testing.assert_array_equal(f([[1, 2], [3, 4]], [[10, 20], [30, 40]]),
                                  np.array([[11.0, 22.0], [33.0, 44.0]]))
    a = T.vector()
    out = a + a ** 10
    g = theano.function([a], out)
    np.testing.assert_allclose(g([0, 1, 2]), np.array([0, 1, 2.0]) + np.array([0, 1, 2.0]) ** 10)


# -- the tutorial: more examples -----------------------------------------------------


def test_more_examples_logistic_function_two_ways():
    x = T.dmatrix("x")
    s = 1 / (1 + T.exp(-x))
    s2 = (1 + T.tanh(x / 2)) / 2
    logistic, logistic2 = theano.function([x], s), theano.function([x], s2)
    data = [[0, 1], [-1, -2]]
    np.testing.assert_allclose(logistic(data), np_sigmoid(np.array(data, float)))
    np.testing.assert_allclose(logistic2(data), logistic(data), rtol=1e-15)


def test_more_examples_several_outputs_defaults_and_names():
    a, b = T.dmatrix("a"), T.dmatrix("b")
    diff = a - b
    f = theano.function([a, b], [diff, abs(diff), diff ** 2])
    va, vb = np.array([[1, 1], [1, 1.0]]), np.array([[0, 1], [2, 3.0]])
    for got, want in zip(f(va, vb), [va - vb, np.abs(va - vb), (va - vb) ** 2], strict=True):
        np.testing.assert_array_equal(got, want)
    x, y, w = T.dscalar("x"), T.dscalar("y"), T.dscalar("w")
    z = (x + y) * w
    g = theano.function([x, In(y, value=1), In(w, value=2, name="w_by_name")], z)
    assert [g(33), g(33, 2), g(33, 0, 1), g(33, w_by_name=1), g(33, w_by_name=1, y=0)] == \
        [68.0, 70.0, 33.0, 34.0, 33.0]


def test_more_examples_shared_state_givens_and_copy():
    state = theano.shared(0)
    inc = T.iscalar("inc")
    accumulator = theano.function([inc], state, updates=[(state, state + inc)])
    assert accumulator(1) == 0 and state.get_value() == 1
    accumulator(300)
    assert state.get_value() == 301
    state.set_value(-1)
    accumulator(3)
    assert state.get_value() == 2
    decrementor = theano.function([inc], state, updates=[(state, state - inc)])
    decrementor(2)
    assert state.get_value() == 0
    fn_of_state = state * 2 + inc
    foo = T.scalar(dtype=state.dtype)
    skip_shared = theano.function([inc, foo], fn_of_state, givens=[(state, foo)])
    assert skip_shared(1, 3) == 7 and state.get_value() == 0
    new_state = theano.shared(0)
    new_accumulator = accumulator.copy(swap={state: new_state})
    new_accumulator(100)
    assert new_state.get_value() == 100 and state.get_value() == 0
    null_accumulator = accumulator.copy(delete_updates=True)
    assert null_accumulator(9000) == 0 and state.get_value() == 0


def test_more_examples_random_numbers():
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform((2, 2))
    rv_n = srng.normal((2, 2))
    f = theano.function([], rv_u)
    g = theano.function([], rv_n, no_default_updates=True)
    nearly_zeros = theano.function([], rv_u + rv_u - 2 * rv_u)
    f_val0, f_val1 = f(), f()
    assert not np.array_equal(f_val0, f_val1)
    np.testing.assert_array_equal(g(), g())  # no default updates: the same numbers
    np.testing.assert_allclose(nearly_zeros(), np.zeros((2, 2)), atol=1e-15)
    # copying random state from one stream to another
    rng_state = srng.updates()[0][0]
    saved = rng_state.get_value()
    v1 = f()
    rng_state.set_value(saved)
    np.testing.assert_array_equal(f(), v1)


def test_more_examples_logistic_regression_training():
    N, feats = 40, 7
    D = (RNG.normal(size=(N, feats)), RNG.integers(0, 2, size=N).astype(float))
    x, y = T.dmatrix("x"), T.dvector("y")
    w0, b0 = RNG.normal(size=feats), 0.0
    w = theano.shared(w0.copy(), name="w")
    b = theano.shared(b0, name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    prediction = p_1 > 0.5
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    train = theano.function([x, y], [prediction, xent],
                            updates=((w, w - 0.1 * gw), (b, b - 0.1 * gb)))
    predict = theano.function([x], prediction)
    nw, nb = w0.copy(), b0
    for _ in range(10):
        pred, err = train(D[0], D[1])
        p = np_sigmoid(D[0] @ nw + nb)
        np.testing.assert_array_equal(pred, p > 0.5)
        np.testing.assert_allclose(err, -D[1] * np.log(p) - (1 - D[1]) * np.log(1 - p),
                                   rtol=1e-12)
        gw_np = D[0].T @ (p - D[1]) / N + 0.02 * nw
        gb_np = (p - D[1]).mean()
        nw, nb = nw - 0.1 * gw_np, nb - 0.1 * gb_np
    np.testing.assert_allclose(w.get_value(), nw, rtol=1e-11)
    np.testing.assert_allclose(b.get_value(), nb, rtol=1e-11)
    np.testing.assert_array_equal(predict(D[0]), np_sigmoid(D[0] @ nw + nb) > 0.5)


# -- the tutorial: derivatives -------------------------------------------------------


def test_derivatives_grad_rop_lop():
    x = T.dscalar("x")
    gy = T.grad(x ** 2, x)
    f = theano.function([x], gy)
    assert f(4) == 8.0 and f(94.2) == pytest.approx(188.4)
    m = T.dmatrix("x")
    s = T.sum(1 / (1 + T.exp(-m)))
    dlogistic = theano.function([m], T.grad(s, m))
    data = np.array([[0, 1], [-1, -2.0]])
    np.testing.assert_allclose(dlogistic(data), np_sigmoid(data) * (1 - np_sigmoid(data)))
    W, V = T.dmatrix("W"), T.dmatrix("V")
    xv = T.dvector("x")
    y = T.dot(xv, W)
    rop = theano.function([W, V, xv], theano.gradient.Rop(y, W, V))
    np.testing.assert_allclose(rop([[1, 1], [1, 1]], [[2, 2], [2, 2]], [0, 1]), [2.0, 2.0])
    vv = T.dvector("v")
    lop = theano.function([vv, xv], theano.gradient.Lop(y, W, vv))
    np.testing.assert_allclose(lop([2, 2], [0, 1]), [[0, 0], [2, 2.0]])


def test_derivatives_jacobian_and_hessian():
    needs(theano, "scan")  # both loop (scan) over the expression's entries (arange)
    needs(T, "arange")
    v = T.dvector("x")
    jac = theano.function([v], T.jacobian(v ** 2, v))
    np.testing.assert_allclose(jac([4, 4]), np.diag([8.0, 8.0]))
    hess = theano.function([v], T.hessian(T.sum(v ** 2), v))
    np.testing.assert_allclose(hess([4, 4]), 2 * np.eye(2))


def test_derivatives_jacobian_with_scan():
    needs(theano, "scan")
    needs(T, "arange")
    x = T.dvector("x")
    y = x ** 2
    J, updates = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]),
                             non_sequences=[y, x])
    f = theano.function([x], J, updates=updates)
    np.testing.assert_allclose(f([4, 4]), np.diag([8.0, 8.0]))


# -- the tutorial: conditions --------------------------------------------------------


def test_conditions_ifelse_and_switch():
    a, b = T.dscalar("a"), T.dscalar("b")
    x, y = T.dmatrix("x"), T.dmatrix("y")
    z_switch = T.switch(T.lt(a, b), T.mean(x), T.mean(y))
    z_lazy = ifelse(T.lt(a, b), T.mean(x), T.mean(y))
    f_switch = theano.function([a, b, x, y], z_switch, mode=theano.Mode(linker="vm"))
    f_lazy = theano.function([a, b, x, y], z_lazy, mode=theano.Mode(linker="vm"))
    big1, big2 = np.ones((100, 100)), np.zeros((100, 100)) + 3
    assert f_switch(1, 2, big1, big2) == 1.0 and f_lazy(1, 2, big1, big2) == 1.0
    assert f_switch(2, 1, big1, big2) == 3.0 and f_lazy(2, 1, big1, big2) == 3.0


def _has(module, name):
    try:
        getattr(module, name)
        return True
    except (NoEquivalentError, AttributeError):
        return False


# -- the tutorial: loops -------------------------------------------------------------


def test_loop_power():
    needs(theano, "scan")
    k = T.iscalar("k")
    A = T.dvector("A")
    result, updates = theano.scan(fn=lambda prior_result, A: prior_result * A,
                                  outputs_info=T.ones_like(A), non_sequences=A, n_steps=k)
    power = theano.function([A, k], result[-1], updates=updates)
    np.testing.assert_allclose(power(np.arange(10.0), 2), np.arange(10.0) ** 2)
    np.testing.assert_allclose(power(np.arange(5.0), 3), np.arange(5.0) ** 3)


def test_loop_polynomial():
    needs(theano, "scan")
    needs(T, "arange")
    coefficients = T.dvector("coefficients")
    x = T.dscalar("x")
    components, _ = theano.scan(fn=lambda c, p, x: c * (x ** p), outputs_info=None,
                                sequences=[coefficients, T.arange(10000)], non_sequences=x)
    poly = theano.function([coefficients, x], components.sum())
    assert poly(np.asarray([1, 0, 2.0]), 3) == 19.0


# -- deep-learning tutorials -----------------------------------------------------------


class LogisticRegression:
    """The tutorial's class, as written there (softmax layer, NLL, errors)."""

    def __init__(self, input, n_in, n_out, W=None, b=None):
        if W is None:
            W = theano.shared(np.zeros((n_in, n_out), dtype=floatX), name="W", borrow=True)
        if b is None:
            b = theano.shared(np.zeros((n_out,), dtype=floatX), name="b", borrow=True)
        self.W, self.b = W, b
        self.p_y_given_x = T.nnet.softmax(T.dot(input, self.W) + self.b)
        self.y_pred = T.argmax(self.p_y_given_x, axis=1)
        self.params = [self.W, self.b]

    def negative_log_likelihood(self, y):
        return -T.mean(T.log(self.p_y_given_x)[T.arange(y.shape[0]), y])

    def errors(self, y):
        return T.mean(T.neq(self.y_pred, y))


def _needs_classifier():
    needs(T.nnet, "softmax")
    needs(T, "argmax", "arange")


def _np_nll_step(xv, yv, W, b, lr):
    p = np_softmax(xv @ W + b)
    onehot = np.eye(W.shape[1])[yv]
    nll = -np.mean(np.log(p[np.arange(len(yv)), yv]))
    g = (p - onehot) / len(yv)
    return nll, W - lr * xv.T @ g, b - lr * g.sum(axis=0), p


def test_logistic_sgd_minibatch_training_with_givens():
    _needs_classifier()
    n, n_in, n_out, batch = 60, 28 * 28 // 16, 10, 20
    data_x = RNG.random((n, n_in))
    data_y = RNG.integers(0, n_out, size=n).astype("int32")
    train_set_x = theano.shared(data_x, borrow=True)
    train_set_y = T.cast(theano.shared(data_y.astype(floatX), borrow=True), "int32")
    index, x, y = T.lscalar(), T.matrix("x"), T.ivector("y")
    classifier = LogisticRegression(input=x, n_in=n_in, n_out=n_out)
    cost = classifier.negative_log_likelihood(y)
    g_W, g_b = T.grad(cost=cost, wrt=classifier.W), T.grad(cost=cost, wrt=classifier.b)
    updates = [(classifier.W, classifier.W - 0.13 * g_W), (classifier.b, classifier.b - 0.13 * g_b)]
    train_model = theano.function(
        inputs=[index], outputs=cost, updates=updates,
        givens={x: train_set_x[index * batch:(index + 1) * batch],
                y: train_set_y[index * batch:(index + 1) * batch]})
    test_model = theano.function([index], classifier.errors(y), givens={
        x: train_set_x[index * batch:(index + 1) * batch],
        y: train_set_y[index * batch:(index + 1) * batch]})
    W, b = np.zeros((n_in, n_out)), np.zeros(n_out)
    for _epoch in range(2):
        for i in range(n // batch):
            xs, ys = data_x[i * batch:(i + 1) * batch], data_y[i * batch:(i + 1) * batch]
            nll, W, b, _ = _np_nll_step(xs, ys, W, b, 0.13)
            assert train_model(i) == pytest.approx(nll, rel=1e-10)
    np.testing.assert_allclose(classifier.W.get_value(), W, rtol=1e-9, atol=1e-12)
    pred = np.argmax(data_x[:batch] @ W + b, axis=1)
    assert test_model(0) == pytest.approx(np.mean(pred != data_y[:batch]))


class HiddenLayer:
    """The tutorial's tanh layer."""

    def __init__(self, rng, input, n_in, n_out, W_values=None, activation=T.tanh):
        if W_values is None:
            bound = np.sqrt(6.0 / (n_in + n_out))
            W_values = rng.uniform(-bound, bound, size=(n_in, n_out)).astype(floatX)
        self.W = theano.shared(value=W_values, name="W", borrow=True)
        self.b = theano.shared(value=np.zeros((n_out,), dtype=floatX), name="b", borrow=True)
        lin_output = T.dot(input, self.W) + self.b
        self.output = lin_output if activation is None else activation(lin_output)
        self.params = [self.W, self.b]


def test_mlp_one_sgd_step_with_l1_l2():
    _needs_classifier()
    n_in, n_hidden, n_out, batch = 20, 8, 5, 12
    rng = np.random.default_rng(5)
    x, y = T.matrix("x"), T.ivector("y")
    hidden = HiddenLayer(rng, x, n_in, n_hidden)
    W1 = hidden.W.get_value()
    W2 = rng.normal(size=(n_hidden, n_out)) * 0.1
    out = LogisticRegression(hidden.output, n_hidden, n_out,
                             W=theano.shared(W2.copy(), name="W"))
    L1 = abs(hidden.W).sum() + abs(out.W).sum()
    L2_sqr = (hidden.W ** 2).sum() + (out.W ** 2).sum()
    cost = out.negative_log_likelihood(y) + 0.001 * L1 + 0.0001 * L2_sqr
    params = hidden.params + out.params
    gparams = [T.grad(cost, p) for p in params]
    train = theano.function([x, y], cost,
                            updates=[(p, p - 0.01 * g)
                                     for p, g in zip(params, gparams, strict=True)])
    xv, yv = rng.normal(size=(batch, n_in)), rng.integers(0, n_out, size=batch).astype("int32")
    h = np.tanh(xv @ W1)
    p = np_softmax(h @ W2)
    nll = -np.mean(np.log(p[np.arange(batch), yv]))
    want = nll + 0.001 * (np.abs(W1).sum() + np.abs(W2).sum()) + 0.0001 * (
        (W1 ** 2).sum() + (W2 ** 2).sum())
    assert train(xv, yv) == pytest.approx(want, rel=1e-10)
    g_out = (p - np.eye(n_out)[yv]) / batch
    gW2 = h.T @ g_out + 0.001 * np.sign(W2) + 0.0002 * W2
    gh = g_out @ W2.T * (1 - h ** 2)
    gW1 = xv.T @ gh + 0.001 * np.sign(W1) + 0.0002 * W1
    np.testing.assert_allclose(out.W.get_value(), W2 - 0.01 * gW2, rtol=1e-9)
    np.testing.assert_allclose(hidden.W.get_value(), W1 - 0.01 * gW1, rtol=1e-9)


class dA:
    """The denoising autoencoder, as the tutorial writes it (tied weights)."""

    def __init__(self, numpy_rng, theano_rng, input, n_visible, n_hidden):
        bound = 4 * np.sqrt(6.0 / (n_hidden + n_visible))
        initial_W = numpy_rng.uniform(-bound, bound, size=(n_visible, n_hidden)).astype(floatX)
        self.W = theano.shared(value=initial_W, name="W", borrow=True)
        self.b = theano.shared(value=np.zeros(n_hidden, dtype=floatX), name="b", borrow=True)
        self.b_prime = theano.shared(value=np.zeros(n_visible, dtype=floatX), name="b'",
                                     borrow=True)
        self.W_prime = self.W.T
        self.theano_rng = theano_rng
        self.x = input
        self.params = [self.W, self.b, self.b_prime]

    def get_corrupted_input(self, input, corruption_level):
        return self.theano_rng.binomial(size=input.shape, n=1, p=1 - corruption_level,
                                        dtype=floatX) * input

    def get_hidden_values(self, input):
        return T.nnet.sigmoid(T.dot(input, self.W) + self.b)

    def get_reconstructed_input(self, hidden):
        return T.nnet.sigmoid(T.dot(hidden, self.W_prime) + self.b_prime)

    def get_cost_updates(self, corruption_level, learning_rate):
        tilde_x = self.get_corrupted_input(self.x, corruption_level)
        y = self.get_hidden_values(tilde_x)
        z = self.get_reconstructed_input(y)
        L = -T.sum(self.x * T.log(z) + (1 - self.x) * T.log(1 - z), axis=1)
        cost = T.mean(L)
        gparams = T.grad(cost, self.params)
        updates = [(p, p - learning_rate * g) for p, g in zip(self.params, gparams, strict=True)]
        return cost, updates, tilde_x


def test_denoising_autoencoder_training_steps():
    n_visible, n_hidden, batch = 28 * 28 // 4, 50, 20
    rng = np.random.default_rng(123)
    data = rng.random((3 * batch, n_visible))
    train_set_x = theano.shared(data, borrow=True)
    index, x = T.lscalar(), T.matrix("x")
    da = dA(rng, RandomStreams(rng.integers(2 ** 30)), x, n_visible, n_hidden)
    W = da.W.get_value()
    b, bp = np.zeros(n_hidden), np.zeros(n_visible)
    cost, updates, tilde_x = da.get_cost_updates(corruption_level=0.3, learning_rate=0.1)
    train_da = theano.function([index], [cost, tilde_x], updates=updates,
                               givens={x: train_set_x[index * batch:(index + 1) * batch]})
    for i in range(3):
        got_cost, corrupted = train_da(i)
        xv = data[i * batch:(i + 1) * batch]
        kept = corrupted != 0
        assert np.all(corrupted[kept] == xv[kept])  # the mask keeps or zeroes entries
        assert 0.5 < kept.mean() < 0.9  # about 70% kept
        y = np_sigmoid(corrupted @ W + b)
        z = np_sigmoid(y @ W.T + bp)
        L = -np.sum(xv * np.log(z) + (1 - xv) * np.log(1 - z), axis=1)
        assert got_cost == pytest.approx(L.mean(), rel=1e-10)
        dz = (z - xv) / batch                   # d cost / d (pre-sigmoid of z)
        dy = dz @ W * y * (1 - y)               # ... of y
        gW = corrupted.T @ dy + dz.T @ y
        W, b, bp = W - 0.1 * gW, b - 0.1 * dy.sum(axis=0), bp - 0.1 * dz.sum(axis=0)
    np.testing.assert_allclose(da.W.get_value(), W, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(da.b.get_value(), b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(da.b_prime.get_value(), bp, rtol=1e-9, atol=1e-12)


class LeNetConvPoolLayer:
    """The tutorial's convolution + max-pooling layer."""

    def __init__(self, rng, input, filter_shape, image_shape, poolsize=(2, 2)):
        fan_in = np.prod(filter_shape[1:])
        fan_out = filter_shape[0] * np.prod(filter_shape[2:]) // np.prod(poolsize)
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        self.W = theano.shared(rng.uniform(-bound, bound, size=filter_shape).astype(floatX),
                               borrow=True)
        self.b = theano.shared(np.zeros((filter_shape[0],), dtype=floatX), borrow=True)
        conv_out = T.nnet.conv2d(input=input, filters=self.W, filter_shape=filter_shape,
                                 input_shape=image_shape)
        pooled_out = pool.pool_2d(input=conv_out, ws=poolsize, ignore_border=True)
        self.output = T.tanh(pooled_out + self.b.dimshuffle("x", 0, "x", "x"))
        self.params = [self.W, self.b]


def _np_conv_valid(x, w):
    win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,kcij->nkhw", win, w[:, :, ::-1, ::-1])


def _np_maxpool2(x):
    n, c, h, w = x.shape
    return x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_lenet_forward_and_one_sgd_step():
    _needs_classifier()
    rng = np.random.default_rng(23455)
    batch, nkerns = 4, (3, 5)
    x, y = T.matrix("x"), T.ivector("y")
    layer0_input = x.reshape((batch, 1, 28, 28))
    layer0 = LeNetConvPoolLayer(rng, layer0_input, (nkerns[0], 1, 5, 5), (batch, 1, 28, 28))
    layer1 = LeNetConvPoolLayer(rng, layer0.output, (nkerns[1], nkerns[0], 5, 5),
                                (batch, nkerns[0], 12, 12))
    layer2 = HiddenLayer(rng, layer1.output.flatten(2) if _has(T, "flatten") else
                         layer1.output.reshape((batch, nkerns[1] * 16)), nkerns[1] * 16, 10)
    layer3 = LogisticRegression(layer2.output, 10, 10,
                                W=theano.shared(rng.normal(size=(10, 10)) * 0.1))
    cost = layer3.negative_log_likelihood(y)
    params = layer3.params + layer2.params + layer1.params + layer0.params
    grads = T.grad(cost, params)
    train_model = theano.function([x, y], cost,
                                  updates=[(p, p - 0.1 * g)
                                           for p, g in zip(params, grads, strict=True)])
    xv = rng.random((batch, 28 * 28))
    yv = rng.integers(0, 10, size=batch).astype("int32")
    W0, b0, W1, b1 = (p.get_value() for p in layer0.params + layer1.params)
    W2, W3 = layer2.W.get_value(), layer3.W.get_value()
    h0 = np.tanh(_np_maxpool2(_np_conv_valid(xv.reshape(batch, 1, 28, 28), W0)) +
                 b0[None, :, None, None])
    h1 = np.tanh(_np_maxpool2(_np_conv_valid(h0, W1)) + b1[None, :, None, None])
    h2 = np.tanh(h1.reshape(batch, -1) @ W2)
    p = np_softmax(h2 @ W3)
    want = -np.mean(np.log(p[np.arange(batch), yv]))
    assert train_model(xv, yv) == pytest.approx(want, rel=1e-10)
    g3 = (p - np.eye(10)[yv]) / batch
    np.testing.assert_allclose(layer3.W.get_value(), W3 - 0.1 * h2.T @ g3, rtol=1e-9)


# -- PyTensor's introduction -------------------------------------------------------------


def test_pytensor_introduction():
    import nbgraph.compat.pytensor as pytensor
    import nbgraph.compat.pytensor.tensor as pt

    x = pt.scalar(name="x")
    y = pt.vector(name="y")
    z = x + y
    w = z * 2
    f = pytensor.function([x, y], w)
    np.testing.assert_array_equal(f(0.0, [1, 2.0]), [2.0, 4.0])
    text = pytensor.dprint(w, file="str")
    assert text.splitlines()[0].startswith("Elemwise{mul}")
    assert "x [id" in text and "y [id" in text
    assert pytensor.pp(w) == "((x + y) * 2.0)"
    np.testing.assert_array_equal(w.eval({x: 0.0, y: [1, 2.0]}), [2.0, 4.0])
    s = pytensor.shared(np.array([1.0, 2.0]), name="s")
    f2 = pytensor.function([x], s * x, updates={s: s + 1})
    np.testing.assert_array_equal(f2(2.0), [2.0, 4.0])
    np.testing.assert_array_equal(s.get_value(), [2.0, 3.0])
    gx = pytensor.grad((x ** 2 + pt.exp(x)), x)
    assert gx.eval({x: 1.0}) == pytest.approx(2 + np.e)
    m = pt.tensor("m", shape=(None, 3), dtype="float64")
    out = pt.linalg.solve(m.T @ m + pt.eye(3) if _has(pt, "eye") else m.T @ m, pt.ones(3))
    mv = RNG.normal(size=(6, 3))
    a = mv.T @ mv + (np.eye(3) if _has(pt, "eye") else 0)
    np.testing.assert_allclose(out.eval({m: mv}), np.linalg.solve(a, np.ones(3)), rtol=1e-10)
