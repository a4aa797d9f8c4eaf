"""Neural-net benchmarks (issue 13): softmax over a 1000x1000 float64 matrix as the Op and
written in primitives (which the stabilize stage turns into the Op), and one SGD step of a
softmax regression 784->10 and of a 784-500-10 tanh MLP on a batch of 600, each beside
NumPy, PyTensor and JAX when installed."""

import numpy as np

__all__ = ["cases"]

N_SOFTMAX = 1000
#: Timing repeats (the best is kept) of the softmax and training-step rows: each
#: repeat is a few ms to 0.4 s, and a shared machine's memory bandwidth comes and goes
#: over seconds; more repeats spread over more time (every peer gets the same count).
#: The training steps time their peers interleaved (``Case(interleave=True)``: one
#: block of calls of each peer in turn, each after a short rest), so a slow spell
#: of the machine, or the CPU still held by the previous peer's BLAS threads, does
#: not fall on one column only.
REPEAT = 9
BATCH, N_IN, N_HID, N_OUT, LR = 600, 784, 500, 10, 0.1


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_data():
    return np.random.default_rng(0).standard_normal((N_SOFTMAX, N_SOFTMAX))


def softmax_op(linker):
    import nbgraph as ng
    import nbgraph.tensor as nt

    x = nt.dmatrix("x")
    f = ng.function([x], nt.softmax(x), linker=linker)
    v = _softmax_data()
    return (lambda: f(v)), (lambda: _np_softmax(v)), None


def softmax_primitives(linker):
    import nbgraph as ng
    import nbgraph.tensor as nt

    x = nt.dmatrix("x")
    e = nt.exp(x - x.max(axis=1, keepdims=True))
    f = ng.function([x], e / e.sum(axis=1, keepdims=True), linker=linker)
    v = _softmax_data()
    return (lambda: f(v)), (lambda: _np_softmax(v)), None


def softmax_pytensor():
    import pytensor
    import pytensor.tensor as pt

    x = pt.dmatrix("x")
    e = pt.exp(x - x.max(axis=1, keepdims=True))
    f = pytensor.function([x], e / e.sum(axis=1, keepdims=True))
    v = _softmax_data()
    return lambda: f(v)


def softmax_jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda x: jax.nn.softmax(x, axis=1))
    v = jnp.asarray(_softmax_data())
    f(v).block_until_ready()
    return lambda: f(v).block_until_ready()


def _data(hidden):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, N_IN))
    y = rng.integers(0, N_OUT, BATCH)
    if hidden:
        params = [rng.standard_normal((N_IN, N_HID)) * 0.03, np.zeros(N_HID),
                  rng.standard_normal((N_HID, N_OUT)) * 0.05, np.zeros(N_OUT)]
    else:
        params = [rng.standard_normal((N_IN, N_OUT)) * 0.01, np.zeros(N_OUT)]
    return x, y, params


def _numpy_step(hidden):
    x, y, params = _data(hidden)
    onehot = np.eye(N_OUT)[y]

    def step():
        if hidden:
            W1, b1, W2, b2 = params
            h = np.tanh(x @ W1 + b1)
            p = _np_softmax(h @ W2 + b2)
        else:
            W, b = params
            p = _np_softmax(x @ W + b)
        loss = -np.mean(np.log(p[np.arange(BATCH), y]))
        d = (p - onehot) / BATCH
        if hidden:
            gW2, gb2 = h.T @ d, d.sum(0)
            dh = (d @ W2.T) * (1 - h * h)
            grads = [x.T @ dh, dh.sum(0), gW2, gb2]
        else:
            grads = [x.T @ d, d.sum(0)]
        for p_, g in zip(params, grads, strict=True):
            p_ -= LR * g
        return loss
    return step


def _nbgraph_step(hidden, linker):
    import nbgraph as ng
    import nbgraph.tensor as nt

    xv, yv, values = _data(hidden)
    x, y = nt.dmatrix("x"), nt.lvector("y")
    params = [ng.shared(v.copy()) for v in values]
    if hidden:
        h = nt.tanh(nt.dot(x, params[0]) + params[1])
        p = nt.softmax(nt.dot(h, params[2]) + params[3])
    else:
        p = nt.softmax(nt.dot(x, params[0]) + params[1])
    loss = nt.mean(nt.categorical_crossentropy(p, y))
    grads = ng.grad(loss, params)
    f = ng.function([x, y], loss, linker=linker,
                    updates=[(v, v - LR * g) for v, g in zip(params, grads, strict=True)])
    return lambda: f(xv, yv)


def _pytensor_step(hidden):
    import pytensor
    import pytensor.tensor as pt

    xv, yv, values = _data(hidden)
    x, y = pt.dmatrix("x"), pt.lvector("y")
    params = [pytensor.shared(v.copy()) for v in values]
    if hidden:
        h = pt.tanh(pt.dot(x, params[0]) + params[1])
        p = pt.special.softmax(pt.dot(h, params[2]) + params[3], axis=1)
    else:
        p = pt.special.softmax(pt.dot(x, params[0]) + params[1], axis=1)
    loss = -pt.mean(pt.log(p[pt.arange(y.shape[0]), y]))
    grads = pytensor.grad(loss, params)
    f = pytensor.function([x, y], loss,
                          updates=[(v, v - LR * g) for v, g in zip(params, grads, strict=True)])
    return lambda: f(xv, yv)


def _jax_step(hidden):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    xv, yv, values = _data(hidden)
    x, y = jnp.asarray(xv), jnp.asarray(yv)
    state = [[jnp.asarray(v) for v in values]]

    def loss_fn(params):
        if hidden:
            h = jnp.tanh(x @ params[0] + params[1])
            logits = h @ params[2] + params[3]
        else:
            logits = x @ params[0] + params[1]
        logp = jax.nn.log_softmax(logits, axis=1)
        return -jnp.mean(logp[jnp.arange(BATCH), y])

    @jax.jit
    def step(params):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return loss, [p - LR * g for p, g in zip(params, grads, strict=True)]

    def run():
        loss, state[0] = step(state[0])
        loss.block_until_ready()
    run()
    return run


def cases():
    from bench.cases import Case

    def step_setup(hidden):
        return lambda linker: (_nbgraph_step(hidden, linker), _numpy_step(hidden), None)

    return [
        Case("softmax 1000x1000, the Op", softmax_op, number=20, peer=softmax_pytensor,
             jax=softmax_jax, target={"numpy": 0.5, "jax": 1.0}, repeat=REPEAT),
        Case("softmax 1000x1000, in primitives", softmax_primitives, number=20,
             peer=softmax_pytensor, jax=softmax_jax, target={"numpy": 0.5, "jax": 1.0},
             repeat=REPEAT),
        Case("softmax regression 784->10, SGD step, b600", step_setup(False), number=50,
             peer=lambda: _pytensor_step(False), jax=lambda: _jax_step(False),
             target={"pytensor": 0.8, "numpy": 1.0}, repeat=REPEAT, interleave=True),
        Case("MLP 784-500-10 tanh, SGD step, b600", step_setup(True), number=10,
             peer=lambda: _pytensor_step(True), jax=lambda: _jax_step(True),
             target={"pytensor": 0.8, "numpy": 1.0}, repeat=REPEAT, interleave=True),
    ]
