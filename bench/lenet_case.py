"""The LeNet benchmark: one SGD step (loss, gradients, parameter updates) of the deep
learning tutorials' convolutional network on 28x28 images, batch 64, float32,
with nbgraph, a NumPy implementation by hand, and JAX (jit of value_and_grad plus
the update); PyTensor has no 2-d convolution, so it has no entry.

conv 5x5 (20 filters) -> max-pool 2x2 -> tanh -> conv 5x5 (50) -> max-pool 2x2 ->
tanh -> dense 800x500 tanh -> dense 500x10 -> softmax cross-entropy (one-hot
targets, written with a max-shifted log-sum-exp).

``python -m bench.lenet_case [rounds]`` times the three in interleaved rounds of
the same process and prints CPU time (``time.process_time``, all threads) beside
wall time per step: on a loaded machine the CPU time and the ratios of one run
are the figures to compare.  Run it with ``NBGRAPH_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1`` and ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1"`` for single-thread figures.
"""

import sys
import time


import numpy as np

__all__ = ["lenet_setup", "lenet_jax", "lenet_data", "BATCH", "LR"]

BATCH, LR = 64, 0.1
SHAPES = [(20, 1, 5, 5), (20,), (50, 20, 5, 5), (50,), (800, 500), (500,), (500, 10), (10,)]


def lenet_data(seed=0):
    """Initial parameters, a batch of images and one-hot targets (float32)."""
    rng = np.random.default_rng(seed)
    params = []
    for shape in SHAPES:
        if len(shape) == 1:
            params.append(np.zeros(shape, dtype="float32"))
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
            params.append((rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32"))
    x = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    y = np.eye(10, dtype="float32")[rng.integers(0, 10, size=BATCH)]
    return params, x, y


def _nbgraph_step(params, linker):
    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.tensor.conv import conv2d
    from nbgraph.tensor.pool import pool_2d

    shared = [ng.shared(p, name="p%d" % i) for i, p in enumerate(params)]
    w0, b0, w1, b1, w2, b2, w3, b3 = shared
    x, y = nt.ftensor4("x"), nt.fmatrix("y")
    h = nt.tanh(pool_2d(conv2d(x, w0), (2, 2), ignore_border=True)
                + b0.dimshuffle("x", 0, "x", "x"))
    h = nt.tanh(pool_2d(conv2d(h, w1), (2, 2), ignore_border=True)
                + b1.dimshuffle("x", 0, "x", "x"))
    h = nt.tanh(nt.dot(h.reshape((x.shape[0], 800)), w2) + b2)
    z = nt.dot(h, w3) + b3
    zs = z - z.max(axis=1, keepdims=True)
    logp = zs - nt.log(nt.exp(zs).sum(axis=1, keepdims=True))
    cost = -(y * logp).sum(axis=1).mean()
    grads = ng.grad(cost, shared)
    return ng.function([x, y], cost, updates=[(p, p - np.float32(LR) * g)
                                              for p, g in zip(shared, grads, strict=True)],
                       linker=linker)


def _numpy_step(params, x, y):
    """The same step by hand (im2col convolutions, pooling masks, backprop)."""
    w0, b0, w1, b1, w2, b2, w3, b3 = params

    def conv(a, w):
        win = np.lib.stride_tricks.sliding_window_view(a, w.shape[2:], axis=(2, 3))
        return np.tensordot(win, w[:, :, ::-1, ::-1], axes=([1, 4, 5], [1, 2, 3])) \
            .transpose(0, 3, 1, 2), win

    def pool(a):
        n, c, hh, ww = a.shape
        blocks = a.reshape(n, c, hh // 2, 2, ww // 2, 2)
        out = blocks.max(axis=(3, 5))
        mask = blocks == out[:, :, :, None, :, None]
        return out, mask

    c0, win0 = conv(x, w0)
    p0, m0 = pool(c0)
    h0 = np.tanh(p0 + b0[None, :, None, None])
    c1, win1 = conv(h0, w1)
    p1, m1 = pool(c1)
    h1 = np.tanh(p1 + b1[None, :, None, None])
    f1 = h1.reshape(len(x), 800)
    h2 = np.tanh(f1 @ w2 + b2)
    z = h2 @ w3 + b3
    zs = z - z.max(axis=1, keepdims=True)
    logp = zs - np.log(np.exp(zs).sum(axis=1, keepdims=True))
    cost = -(y * logp).sum(axis=1).mean()
    dz = (np.exp(logp) - y) / len(x)
    g3, gb3 = h2.T @ dz, dz.sum(axis=0)
    dh2 = dz @ w3.T * (1 - h2 ** 2)
    g2, gb2 = f1.T @ dh2, dh2.sum(axis=0)
    dp1 = (dh2 @ w2.T).reshape(h1.shape) * (1 - h1 ** 2)
    gb1 = dp1.sum(axis=(0, 2, 3))
    dc1 = (m1 * dp1[:, :, :, None, :, None]).reshape(c1.shape)
    g1 = np.tensordot(dc1, win1, axes=([0, 2, 3], [0, 2, 3]))[:, :, ::-1, ::-1]
    dwin = np.tensordot(dc1, w1[:, :, ::-1, ::-1], axes=([1], [0]))  # n,r,c,C,kh,kw
    dh0 = np.zeros_like(h0)
    for a in range(5):
        for b in range(5):
            dh0[:, :, a:a + 8, b:b + 8] += dwin[:, :, :, :, a, b].transpose(0, 3, 1, 2)
    dp0 = dh0 * (1 - h0 ** 2)
    gb0 = dp0.sum(axis=(0, 2, 3))
    dc0 = (m0 * dp0[:, :, :, None, :, None]).reshape(c0.shape)
    g0 = np.tensordot(dc0, win0, axes=([0, 2, 3], [0, 2, 3]))[:, :, ::-1, ::-1]
    grads = [g0, gb0, g1, gb1, g2, gb2, g3, gb3]
    params[:] = [p - np.float32(LR) * g for p, g in zip(params, grads, strict=True)]
    return cost


def lenet_setup(linker):
    """(nbgraph callable, NumPy callable, None) for bench.cases."""
    params, x, y = lenet_data()
    f = _nbgraph_step([p.copy() for p in params], linker)
    wait = getattr(f.program, "wait_compiled", None)
    if wait is not None:  # time the C kernels, not the first calls' perform
        wait()
    f(x, y)
    theirs = [p.copy() for p in params]
    return (lambda: f(x, y)), (lambda: _numpy_step(theirs, x, y)), None


def lenet_jax():
    """JAX: a jitted step returning the new parameters (None when JAX is missing)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    params, x, y = lenet_data()

    def conv(a, w):
        return jax.lax.conv_general_dilated(a, w[:, :, ::-1, ::-1], (1, 1), "VALID")

    def pool(a):
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                     "VALID")

    def loss(ps, x, y):
        w0, b0, w1, b1, w2, b2, w3, b3 = ps
        h = jnp.tanh(pool(conv(x, w0)) + b0[None, :, None, None])
        h = jnp.tanh(pool(conv(h, w1)) + b1[None, :, None, None])
        h = jnp.tanh(h.reshape(x.shape[0], 800) @ w2 + b2)
        z = h @ w3 + b3
        return -(y * jax.nn.log_softmax(z)).sum(axis=1).mean()

    @jax.jit
    def step(ps, x, y):
        cost, grads = jax.value_and_grad(loss)(ps, x, y)
        return cost, [p - LR * g for p, g in zip(ps, grads, strict=True)]

    state = {"ps": [jnp.asarray(p) for p in params]}
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def run():
        cost, state["ps"] = step(state["ps"], xj, yj)
        jax.block_until_ready(state["ps"])
        return cost
    run()
    return run


def _per_step(fn, steps):
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(steps):
        fn()
    return ((time.process_time() - cpu) / steps * 1e3,
            (time.perf_counter() - wall) / steps * 1e3)


def main(rounds=5, steps=5):
    """Print nbgraph's, NumPy's and JAX's CPU and wall ms per step (min and median
    over ``rounds`` interleaved rounds of ``steps`` steps) and the ratios."""
    ours, numpy_step, _ = lenet_setup(None)
    runs = {"nbgraph": ours, "numpy": numpy_step}
    jax_step = lenet_jax()
    if jax_step is not None:
        runs["jax"] = jax_step
    times = {name: [] for name in runs}
    for fn in runs.values():
        fn()
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_per_step(fn, steps))
    best = {}
    for name, values in times.items():
        cpu, wall = sorted(v[0] for v in values), sorted(v[1] for v in values)
        best[name] = cpu[0]
        print("%-8s cpu min %7.2f  median %7.2f ms | wall min %7.2f  median %7.2f ms" % (
            name, cpu[0], cpu[len(cpu) // 2], wall[0], wall[len(wall) // 2]))
    for name in best:
        if name != "nbgraph":
            print("nbgraph / %s (min cpu): %.2fx" % (name, best["nbgraph"] / best[name]))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
