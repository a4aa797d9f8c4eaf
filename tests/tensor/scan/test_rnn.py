"""An Elman recurrent net trained with scan matches the same net written in NumPy.

h_t = tanh(x_t W + h_{t-1} U + b) over 100 steps, batch 32, 64 hidden units,
a linear read-out of every state and a mean squared error; three steps of
gradient descent through shared variables and updates.  The NumPy twin does
the forward loop and backpropagation through time by hand.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import scan

T, B, N_IN, N_HID, N_OUT = 100, 32, 8, 64, 4
LR = 0.05


def make_data(seed=3):
    rng = np.random.default_rng(seed)
    params = {
        "W": rng.standard_normal((N_IN, N_HID)) * 0.3,
        "U": rng.standard_normal((N_HID, N_HID)) * (0.9 / np.sqrt(N_HID)),
        "b": rng.standard_normal(N_HID) * 0.1,
        "V": rng.standard_normal((N_HID, N_OUT)) * 0.3,
    }
    x = rng.standard_normal((T, B, N_IN))
    y = rng.standard_normal((T, B, N_OUT))
    return params, x, y


def numpy_step(params, x, y):
    """Loss and gradients of the net, forward and backward loops in NumPy."""
    W, U, b, V = params["W"], params["U"], params["b"], params["V"]
    hs = [np.zeros((B, N_HID))]
    for t in range(T):
        hs.append(np.tanh(x[t] @ W + hs[-1] @ U + b))
    H = np.stack(hs[1:])
    pred = H @ V
    err = pred - y
    loss = np.mean(err ** 2)
    dpred = 2 * err / err.size
    gV = np.einsum("tbh,tbo->ho", H, dpred)
    dH = dpred @ V.T
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros((B, N_HID))
    for t in range(T - 1, -1, -1):
        da = (dH[t] + carry) * (1 - hs[t + 1] ** 2)
        gW += x[t].T @ da
        gU += hs[t].T @ da
        gb += da.sum(axis=0)
        carry = da @ U.T
    return loss, {"W": gW, "U": gU, "b": gb, "V": gV}


def build(params, linker):
    shared = {k: ng.shared(v.copy(), name=k) for k, v in params.items()}
    x, y = nt.dtensor3("x"), nt.dtensor3("y")
    h0 = nt.zeros((x.shape[1], N_HID), dtype="float64")

    def step(x_t, h_prev, W, U, b):
        return nt.tanh(nt.dot(x_t, W) + nt.dot(h_prev, U) + b)

    H, _ = scan(step, sequences=x, outputs_info=h0,
                non_sequences=[shared["W"], shared["U"], shared["b"]])
    pred = nt.dot(H.reshape((-1, N_HID)), shared["V"]).reshape(y.shape)
    loss = ((pred - y) ** 2).mean()
    names = ["W", "U", "b", "V"]
    grads = ng.grad(loss, [shared[k] for k in names])
    updates = [(shared[k], shared[k] - LR * g) for k, g in zip(names, grads, strict=True)]
    train = ng.function([x, y], [loss] + grads, updates=updates, linker=linker)
    return train, shared


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_elman_rnn_trains_like_numpy(linker):
    params, x, y = make_data()
    train, shared = build(params, linker)
    ref = {k: v.copy() for k, v in params.items()}
    for _ in range(3):
        loss, *grads = train(x, y)
        ref_loss, ref_grads = numpy_step(ref, x, y)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-11)
        for k, g in zip(["W", "U", "b", "V"], grads, strict=True):
            np.testing.assert_allclose(g, ref_grads[k], rtol=1e-9, atol=1e-13)
        for k in ref:
            ref[k] = ref[k] - LR * ref_grads[k]
    for k in ref:
        np.testing.assert_allclose(shared[k].get_value(), ref[k], rtol=1e-10, atol=1e-13)
