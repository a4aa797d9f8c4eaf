"""Rop, Lop, jacobian, hessian and grad(known_grads=, disconnected_inputs=).

Oracles: central finite differences of the compiled function (Rop, jacobian),
NumPy's matrix products with that Jacobian (Lop), closed forms (hessian), and
the duality <u, J v> == <J^T u, v> on random shapes (hypothesis).
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.gradient import DisconnectedInputError, Lop, Rop, grad
from nbgraph.tensor.derivatives import hessian, jacobian


def numeric_jacobian(fn, x, eps=1e-6):
    """d fn / d x by central differences, shape fn(x).shape + x.shape."""
    base = np.asarray(fn(x))
    J = np.zeros(base.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        J[(Ellipsis,) + idx] = (np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * eps)
    return J


def _model():
    W, x = nt.dmatrix("W"), nt.dvector("x")
    return W, x, nt.tanh(nt.dot(W, x)) * nt.exp(x[0])


RNG = np.random.default_rng(3)
W_VAL = RNG.normal(size=(4, 3))
X_VAL = RNG.normal(size=3)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_rop_is_the_jacobian_times_a_vector(linker):
    W, x, y = _model()
    v = nt.dvector("v")
    f = ng.function([W, x, v], Rop(y, x, v), linker=linker)
    forward = ng.function([W, x], y, linker="py")
    J = numeric_jacobian(lambda xv: forward(W_VAL, xv), X_VAL)
    vv = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(f(W_VAL, X_VAL, vv), J @ vv, rtol=1e-6, atol=1e-8)


def test_rop_sums_over_several_wrt_and_follows_f_structure():
    W, x, y = _model()
    vW, vx = nt.dmatrix("vW"), nt.dvector("vx")
    out = Rop([y, y.sum()], [W, x], [vW, vx])
    assert isinstance(out, list) and len(out) == 2
    f = ng.function([W, x, vW, vx], out, linker="py")
    forward = ng.function([W, x], y, linker="py")
    dW, dx = RNG.normal(size=W_VAL.shape), RNG.normal(size=3)
    eps = 1e-6
    numeric = (forward(W_VAL + eps * dW, X_VAL + eps * dx)
               - forward(W_VAL - eps * dW, X_VAL - eps * dx)) / (2 * eps)
    got, got_sum = f(W_VAL, X_VAL, dW, dx)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_sum, numeric.sum(), rtol=1e-6, atol=1e-8)


def test_rop_of_a_matrix_output():
    A = nt.dmatrix("A")
    V = nt.dmatrix("V")
    y = nt.dot(A, A.T) * 2 + nt.sin(A).sum()
    f = ng.function([A, V], Rop(y, A, V), linker="py")
    forward = ng.function([A], y, linker="py")
    a, d = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    eps = 1e-6
    numeric = (forward(a + eps * d) - forward(a - eps * d)) / (2 * eps)
    np.testing.assert_allclose(f(a, d), numeric, rtol=1e-6, atol=1e-8)


def test_lop_is_a_vector_times_the_jacobian():
    W, x, y = _model()
    u = nt.dvector("u")
    gW, gx = Lop(y, [W, x], u)
    f = ng.function([W, x, u], [gW, gx], linker="py")
    forward = ng.function([W, x], y, linker="py")
    uv = np.array([1.0, -2.0, 0.5, 3.0])
    Jx = numeric_jacobian(lambda xv: forward(W_VAL, xv), X_VAL)
    JW = numeric_jacobian(lambda wv: forward(wv, X_VAL), W_VAL)
    got_W, got_x = f(W_VAL, X_VAL, uv)
    np.testing.assert_allclose(got_x, uv @ Jx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_W, np.tensordot(uv, JW, axes=1), rtol=1e-6, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_rop_and_lop_are_transposes(n, m, seed):
    rng = np.random.default_rng(seed)
    A, x = nt.dmatrix("A"), nt.dvector("x")
    u, v = nt.dvector("u"), nt.dvector("v")
    y = nt.sigmoid(nt.dot(A, x)) + nt.dot(A, x ** 2)
    jv, ju = Rop(y, x, v), Lop(y, x, u)
    f = ng.function([A, x, u, v], [(u * jv).sum(), (ju * v).sum()], linker="py")
    a, xv = rng.normal(size=(m, n)), rng.normal(size=n)
    left, right = f(a, xv, rng.normal(size=m), rng.normal(size=n))
    assert left == pytest.approx(right, rel=1e-10, abs=1e-12)


def test_rop_of_an_unrelated_output():
    x, y = nt.dvector("x"), nt.dvector("y")
    with pytest.raises(DisconnectedInputError):
        Rop(y * 2, x, nt.dvector("v"))
    z = Rop(y * 2, x, nt.dvector("v"), disconnected_outputs="ignore")
    f = ng.function([y], z, linker="py")
    np.testing.assert_array_equal(f(np.ones(3)), np.zeros(3))


@pytest.mark.parametrize("method", ["unroll", "auto"])
def test_jacobian_against_finite_differences(method):
    W = nt.dmatrix("W")
    x = nt.tensor("float64", (3,), "x")
    y = nt.specify_shape(nt.tanh(nt.dot(W, x)), (4,))
    J = jacobian(y, x, method=method)
    f = ng.function([W, x], J, linker="py")
    forward = ng.function([W, x], y, linker="py")
    np.testing.assert_allclose(f(W_VAL, X_VAL),
                               numeric_jacobian(lambda xv: forward(W_VAL, xv), X_VAL),
                               rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_matrix_with_respect_to_a_list():
    a = nt.tensor("float64", (2, 2), "a")
    b = nt.dvector("b")
    y = nt.dot(a, a) + b.sum()
    Ja, Jb = jacobian(y, [a, b])
    f = ng.function([a, b], [Ja, Jb], linker="py")
    av, bv = RNG.normal(size=(2, 2)), RNG.normal(size=3)
    got_a, got_b = f(av, bv)
    assert got_a.shape == (2, 2, 2, 2) and got_b.shape == (2, 2, 3)
    np.testing.assert_allclose(got_a, numeric_jacobian(lambda v: v @ v + bv.sum(), av),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_b, np.ones((2, 2, 3)))


def test_jacobian_of_a_scalar_is_the_gradient():
    x = nt.dvector("x")
    f = ng.function([x], jacobian((x ** 3).sum(), x), linker="py")
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [3.0, 12.0])


def test_unrolling_needs_a_static_size():
    x = nt.dvector("x")
    with pytest.raises(ValueError, match="static shape"):
        jacobian(x * 2, x, method="unroll")
    with pytest.raises(ValueError, match="method"):
        jacobian(x * 2, x, method="loop")


def test_hessian_of_a_cubic_form():
    A = nt.dmatrix("A")
    x = nt.tensor("float64", (3,), "x")
    H = hessian((nt.dot(A, x) ** 3).sum(), x)
    f = ng.function([A, x], H, linker="py")
    a = RNG.normal(size=(3, 3))
    xv = RNG.normal(size=3)
    np.testing.assert_allclose(f(a, xv), a.T @ np.diag(6 * (a @ xv)) @ a, rtol=1e-10)


def test_hessian_against_finite_differences_of_the_gradient():
    x = nt.tensor("float64", (4,), "x")
    cost = nt.log(1 + nt.exp(x)).sum() * (x ** 2).sum()
    H = hessian(cost, [x])[0]
    f = ng.function([x], H, linker="py")
    g = ng.function([x], grad(cost, x), linker="py")
    xv = RNG.normal(size=4)
    np.testing.assert_allclose(f(xv), numeric_jacobian(g, xv), rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="vectors"):
        hessian(cost, nt.dmatrix("m"))
    with pytest.raises(TypeError, match="scalar"):
        hessian(x * 2, x)


def test_known_grads_start_backpropagation_without_a_cost():
    x = nt.dvector("x")
    h = nt.tanh(x)
    g_h = nt.dvector("g_h")
    gx = grad(None, x, known_grads={h: g_h})
    f = ng.function([x, g_h], gx, linker="py")
    xv, gv = np.array([0.1, -0.5]), np.array([2.0, 3.0])
    np.testing.assert_allclose(f(xv, gv), gv * (1 - np.tanh(xv) ** 2))


def test_a_known_gradient_replaces_what_the_cost_would_send():
    x = nt.dvector("x")
    h = x * 3
    cost = (h ** 2).sum() + x.sum()
    gx = grad(cost, x, known_grads={h: np.array([1.0, 1.0])})
    f = ng.function([x], gx, linker="py")
    # through h: 3 * [1, 1] (the known value, not 2h); directly: ones
    np.testing.assert_allclose(f(np.array([5.0, 7.0])), [4.0, 4.0])
    with pytest.raises(TypeError, match="known_grads"):
        grad(None, x)
    with pytest.raises(TypeError, match="not a value of its type"):
        grad(None, x, known_grads={h: "oops"})


def test_disconnected_inputs_policies():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    with pytest.raises(DisconnectedInputError, match="disconnected"):
        grad(x * 2, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gy = grad(x * 2, y, disconnected_inputs="warn")
    assert any("disconnected" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gy2 = grad(x * 2, y, disconnected_inputs="ignore")
    f = ng.function([y], [gy, gy2], linker="py", on_unused_input="ignore")
    assert [float(v) for v in f(1.0)] == [0.0, 0.0]
    with pytest.raises(ValueError, match="disconnected_inputs"):
        grad(x * 2, x, disconnected_inputs="maybe")


def test_the_gradient_api_module_gathers_everything():
    import nbgraph.gradient as G

    assert G.Rop is Rop and G.jacobian is jacobian and ng.hessian is hessian
    assert ng.Lop is Lop and G.grad is grad


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_jacobian_and_hessian_through_scan_for_run_time_sizes(linker):
    W, x = nt.dmatrix("W"), nt.dvector("x")
    y = nt.tanh(nt.dot(W, x))  # length known only at run time: scan
    J = jacobian(y, x)
    H = hessian((x ** 3).sum() + (nt.dot(W, x) ** 2).sum(), x, method="scan")
    f = ng.function([W, x], [J, H], linker=linker)
    Jv, Hv = f(W_VAL, X_VAL)
    forward = ng.function([W, x], y, linker="py")
    np.testing.assert_allclose(Jv, numeric_jacobian(lambda xv: forward(W_VAL, xv), X_VAL),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(Hv, np.diag(6 * X_VAL) + 2 * W_VAL.T @ W_VAL, rtol=1e-10)
    assert any(type(n.op).__name__ == "Scan" for n in f.fgraph.apply_nodes)


def test_scan_and_unrolled_jacobians_agree():
    x = nt.tensor("float64", (3,), "x")
    y = nt.exp(x) * x.sum()
    f = ng.function([x], [jacobian(y, x, method="scan"), jacobian(y, x, method="unroll")],
                    linker="py")
    a, b = f(np.array([0.1, 0.2, 0.3]))
    np.testing.assert_allclose(a, b, rtol=1e-14)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_vectorized_jacobian_and_hessian(linker):
    W, x = nt.dmatrix("W"), nt.dvector("x")
    y = nt.tanh(nt.dot(W, x)) + x.sum()
    J = jacobian(y, [x, W], method="vectorize")
    H = hessian((x ** 3).sum() + (nt.dot(W, x) ** 2).sum(), x, method="vectorize")
    f = ng.function([W, x], J + [H], linker=linker)
    Jx, JW, Hv = f(W_VAL, X_VAL)
    forward = ng.function([W, x], y, linker="py")
    np.testing.assert_allclose(Jx, numeric_jacobian(lambda xv: forward(W_VAL, xv), X_VAL),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(JW, numeric_jacobian(lambda wv: forward(wv, X_VAL), W_VAL),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(Hv, np.diag(6 * X_VAL) + 2 * W_VAL.T @ W_VAL, rtol=1e-10)
    assert not any(type(n.op).__name__ == "Scan" for n in f.fgraph.apply_nodes)


def test_vectorized_jacobian_of_a_disconnected_wrt_is_zero():
    x, z = nt.dvector("x"), nt.dmatrix("z")
    J = jacobian(x * 2, [x, z], method="vectorize", disconnected_inputs="ignore")
    f = ng.function([x, z], J, linker="py")
    jx, jz = f(np.ones(2), np.ones((3, 1)))
    np.testing.assert_array_equal(jx, 2 * np.eye(2))
    assert jz.shape == (2, 3, 1) and not jz.any()
