"""The recurrent-net benchmark: an Elman RNN's loss and gradients (forward + backward
through time) per call, with nbgraph's scan, a NumPy loop, PyTensor's scan and JAX's
``lax.scan`` (each skipped when not installed).

h_t = tanh(x_t W + h_{t-1} U + b) for 100 steps, batch 32, 32 inputs, 64 hidden
units, a linear read-out V of every state and a mean squared error; the gradients
of W, U, b and V.

``python -m bench.scan_cases`` prints wall and CPU time per call of each side
(nbgraph with and without its small-product BLAS policy, NumPy, PyTensor, JAX)
in interleaved rounds of one process.
"""

import numpy as np

__all__ = ["rnn_setup", "rnn_pytensor", "rnn_jax", "T", "B", "N_IN", "N_HID", "N_OUT"]

T, B, N_IN, N_HID, N_OUT = 100, 32, 32, 64, 8


def rnn_data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal((N_IN, N_HID)) * 0.2,
              rng.standard_normal((N_HID, N_HID)) * (0.9 / np.sqrt(N_HID)),
              rng.standard_normal(N_HID) * 0.1,
              rng.standard_normal((N_HID, N_OUT)) * 0.3]
    x = rng.standard_normal((T, B, N_IN))
    y = rng.standard_normal((T, B, N_OUT))
    return params, x, y


def numpy_loss_and_grads(W, U, b, V, x, y):
    """The same computation as a NumPy loop with backpropagation by hand."""
    hs = [np.zeros((x.shape[1], W.shape[1]))]
    for t in range(x.shape[0]):
        hs.append(np.tanh(x[t] @ W + hs[-1] @ U + b))
    H = np.stack(hs[1:])
    err = H @ V - y
    loss = np.mean(err ** 2)
    dpred = 2 * err / err.size
    gV = np.tensordot(H, dpred, axes=([0, 1], [0, 1]))
    dH = dpred @ V.T
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros_like(hs[0])
    for t in range(x.shape[0] - 1, -1, -1):
        da = (dH[t] + carry) * (1 - hs[t + 1] ** 2)
        gW += x[t].T @ da
        gU += hs[t].T @ da
        gb += da.sum(axis=0)
        carry = da @ U.T
    return loss, gW, gU, gb, gV


def rnn_function(linker=None):
    """nbgraph: function (x, y, W, U, b, V) -> [loss, gW, gU, gb, gV]."""
    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.tensor.scan import scan

    x, y = nt.dtensor3("x"), nt.dtensor3("y")
    W, U, V = nt.dmatrix("W"), nt.dmatrix("U"), nt.dmatrix("V")
    b = nt.dvector("b")
    h0 = nt.zeros((x.shape[1], U.shape[0]), dtype="float64")
    H, _ = scan(lambda x_t, h, W, U, b: nt.tanh(nt.dot(x_t, W) + nt.dot(h, U) + b),
                sequences=x, outputs_info=h0, non_sequences=[W, U, b])
    pred = nt.dot(H.reshape((-1, U.shape[0])), V).reshape(y.shape)
    loss = ((pred - y) ** 2).mean()
    return ng.function([x, y, W, U, b, V], [loss] + ng.grad(loss, [W, U, b, V]),
                       linker=linker)


def rnn_setup(linker):
    """(nbgraph callable, NumPy callable, None) for bench.cases."""
    params, x, y = rnn_data()
    f = rnn_function(linker)
    f(x, y, *params)
    return (lambda: f(x, y, *params)), (lambda: numpy_loss_and_grads(*params, x, y)), None


def rnn_pytensor():
    """PyTensor's scan (its C linker) for the same work."""
    import pytensor
    import pytensor.tensor as pt

    params, x, y = rnn_data()
    X, Y = pt.dtensor3("x"), pt.dtensor3("y")
    W, U, V = pt.dmatrix("W"), pt.dmatrix("U"), pt.dmatrix("V")
    b = pt.dvector("b")
    h0 = pt.zeros((X.shape[1], U.shape[0]), dtype="float64")
    H, _ = pytensor.scan(lambda x_t, h, W, U, b: pt.tanh(pt.dot(x_t, W) + pt.dot(h, U) + b),
                         sequences=X, outputs_info=h0, non_sequences=[W, U, b])
    pred = pt.dot(H.reshape((-1, U.shape[0])), V).reshape(Y.shape)
    loss = ((pred - Y) ** 2).mean()
    f = pytensor.function([X, Y, W, U, b, V], [loss] + pytensor.grad(loss, [W, U, b, V]))
    f(x, y, *params)
    return lambda: f(x, y, *params)


def rnn_jax():
    """JAX's lax.scan, jitted, for the same work (None when JAX is missing)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    params, x, y = rnn_data()

    def loss_fn(W, U, b, V, x, y):
        def step(h, x_t):
            h = jnp.tanh(x_t @ W + h @ U + b)
            return h, h
        _, H = jax.lax.scan(step, jnp.zeros((x.shape[1], U.shape[0])), x)
        return jnp.mean((H @ V - y) ** 2)

    f = jax.jit(jax.value_and_grad(loss_fn, argnums=(0, 1, 2, 3)))
    args = [jnp.asarray(a) for a in params] + [jnp.asarray(x), jnp.asarray(y)]

    def run():
        loss, grads = f(*args)
        jax.block_until_ready(grads)
        return loss
    run()
    return run


def _best(fn, number, repeat):
    """(wall, CPU) seconds per call, each the best of ``repeat`` runs of ``number`` calls.
    CPU time is the whole process's (every thread's)."""
    import time

    fn()
    wall = cpu = float("inf")
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(number):
            fn()
        wall = min(wall, (time.perf_counter() - w0) / number)
        cpu = min(cpu, (time.process_time() - c0) / number)
    return wall, cpu


def _without_blas_policy(fn):
    """``fn`` run with nbgraph's small-product BLAS policy off (BLAS threads as NumPy
    leaves them): the "before" of nbgraph.tensor.blas_threads."""
    from nbgraph.tensor import blas_threads

    def run():
        saved = blas_threads.SMALL_PRODUCT_MACS
        blas_threads.SMALL_PRODUCT_MACS = 0
        try:
            return fn()
        finally:
            blas_threads.SMALL_PRODUCT_MACS = saved
    return run


def main(argv=None):
    """``python -m bench.scan_cases``: wall and CPU time per call of every side, in
    interleaved rounds of one process (a loaded machine slows all sides alike)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.scan_cases", description=main.__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    ours, numpy_side, _ = rnn_setup(None)
    sides = [("nbgraph", ours), ("nbgraph, no BLAS policy", _without_blas_policy(ours)),
             ("numpy", numpy_side)]
    try:
        sides.append(("pytensor", rnn_pytensor()))
    except ImportError:
        pass
    jax_side = rnn_jax()
    if jax_side is not None:
        sides.append(("jax", jax_side))
    print("%-26s %12s %12s" % ("Elman RNN T%d B%d H%d" % (T, B, N_HID), "wall ms", "CPU ms"))
    for _ in range(args.rounds):
        for label, fn in sides:
            wall, cpu = _best(fn, args.number, args.repeat)
            print("%-26s %12.2f %12.2f" % (label, wall * 1e3, cpu * 1e3), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
