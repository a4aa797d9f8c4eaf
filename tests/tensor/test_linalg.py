"""nbgraph.tensor.linalg: values against NumPy, gradients against finite
differences, static and inferred shapes, bad arguments, the inv-dot rewrite."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph import function, verify_grad
from nbgraph.tensor import linalg as la
from nbgraph.tensor.linalg_ops import Inv, Solve

RNG = np.random.default_rng(7)


def _spd(n, rng=RNG, dtype="float64"):
    m = rng.normal(size=(n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


def _run(out, inputs, values, linker="py"):
    return function(inputs, out, linker=linker)(*values)


# -- matmul and friends ---------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 2)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)),
]), st.sampled_from(["float64", "float32", "int32"]))
def test_matmul_follows_numpy_batching_and_dtypes(shapes, dtype):
    sa, sb = shapes
    a = nt.tensor(dtype, (None,) * len(sa), "a")
    b = nt.tensor(dtype, (None,) * len(sb), "b")
    va = (RNG.normal(size=sa) * 3).astype(dtype)
    vb = (RNG.normal(size=sb) * 3).astype(dtype)
    got = _run(a @ b, [a, b], [va, vb])
    want = np.matmul(va, vb)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_matmul_static_shapes_and_errors():
    a = nt.tensor("float64", (5, 2, 3), "a")
    b = nt.tensor("float64", (1, 3, 4), "b")
    assert la.matmul(a, b).type.shape == (5, 2, 4)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        la.matmul(a, nt.tensor("float64", (4, 4), "c"))
    with pytest.raises(ValueError, match="argument a .* is a scalar"):
        la.matmul(nt.dscalar("s"), b)
    # fully static: the shape is a constant, so the inputs are not needed to compute it
    f = function([a, b], la.matmul(a, b).shape, linker="py", on_unused_input="ignore")
    np.testing.assert_array_equal(f(np.zeros((5, 2, 3)), np.zeros((1, 3, 4))), [5, 2, 4])


@pytest.mark.parametrize("sa, sb", [((3, 2, 3), (3, 4)), ((2, 3), (3, 3, 4)),
                                    ((1, 2, 3), (2, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,))])
def test_matmul_grad(sa, sb):
    verify_grad(la.matmul, [RNG.normal(size=sa), RNG.normal(size=sb)], linker="py")


@pytest.mark.parametrize("sa, sb, axes", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), 1),
                                          ((2, 3, 4), (4, 2), [[0, 2], [1, 0]]),
                                          ((3,), (3,), 0), ((2, 3), (2, 3), [[0, 1], [0, 1]])])
def test_tensordot(sa, sb, axes):
    va, vb = RNG.normal(size=sa), RNG.normal(size=sb)
    a, b = nt.tensor("float64", (None,) * len(sa)), nt.tensor("float64", (None,) * len(sb))
    np.testing.assert_allclose(_run(la.tensordot(a, b, axes), [a, b], [va, vb]),
                               np.tensordot(va, vb, axes), rtol=1e-12)
    verify_grad(lambda x, y: la.tensordot(x, y, axes), [va, vb], linker="py")
    with pytest.raises(ValueError, match="out of range"):
        la.tensordot(a, b, 7)


@pytest.mark.parametrize("sa, sb", [((4, 2, 3), (4, 3, 5)), ((4, 3), (4, 3)),
                                    ((4, 2, 3), (4, 3)), ((4, 3), (4, 3, 2))])
def test_batched_dot(sa, sb):
    va, vb = RNG.normal(size=sa), RNG.normal(size=sb)
    a, b = nt.tensor("float64", (None,) * len(sa)), nt.tensor("float64", (None,) * len(sb))
    want = np.stack([np.dot(x, y) for x, y in zip(va, vb, strict=True)])
    np.testing.assert_allclose(_run(la.batched_dot(a, b), [a, b], [va, vb]), want, rtol=1e-12)
    verify_grad(la.batched_dot, [va, vb], linker="py")


def test_trace_and_kron():
    m = RNG.normal(size=(3, 4))
    x = nt.dmatrix("x")
    assert _run(la.trace(x), [x], [m]) == np.trace(m)
    verify_grad(la.trace, [RNG.normal(size=(3, 3))], linker="py")
    for sa, sb in [((2, 3), (3, 2)), ((3,), (2,)), ((2,), (2, 3))]:
        va, vb = RNG.normal(size=sa), RNG.normal(size=sb)
        a, b = nt.tensor("float64", (None,) * len(sa)), nt.tensor("float64", (None,) * len(sb))
        np.testing.assert_allclose(_run(la.kron(a, b), [a, b], [va, vb]), np.kron(va, vb))
    verify_grad(la.kron, [RNG.normal(size=(2, 3)), RNG.normal(size=(2, 2))], linker="py")


# -- LAPACK functions: values ---------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_decomposition_values_match_numpy(dtype):
    a = _spd(4).astype(dtype)
    g = RNG.normal(size=(4, 3)).astype(dtype)
    b = RNG.normal(size=(4,)).astype(dtype)
    A, G, B = nt.tensor(dtype, (None, None), "A"), nt.tensor(dtype, (None, None), "G"), \
        nt.tensor(dtype, (None,), "B")
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    cases = [
        (la.inv(A), [A], [a], np.linalg.inv(a)),
        (la.pinv(G), [G], [g], np.linalg.pinv(g)),
        (la.solve(A, B), [A, B], [a, b], np.linalg.solve(a, b)),
        (la.solve(A, B, assume_a="pos"), [A, B], [a, b], np.linalg.solve(a, b)),
        (la.cholesky(A), [A], [a], np.linalg.cholesky(a)),
        (la.det(A), [A], [a], np.linalg.det(a)),
        (la.slogdet(A)[1], [A], [a], np.linalg.slogdet(a)[1]),
        (la.eigh(A)[0], [A], [a], np.linalg.eigh(a)[0]),
        (la.svd(G, compute_uv=False), [G], [g], np.linalg.svd(g, compute_uv=False)),
        (la.qr(G)[1], [G], [g], np.linalg.qr(g)[1]),
        (la.lstsq(G, B[:4])[0] if False else la.lstsq(G.T, B[:3])[0], [G, B], [g, b],
         np.linalg.lstsq(g.T, b[:3], rcond=None)[0]),
    ]
    for out, ins, vals, want in cases:
        got = _run(out, ins, vals)
        assert got.dtype == np.dtype(dtype), out
        np.testing.assert_allclose(got, want, **tol)


def test_integer_inputs_compute_in_float64():
    m = nt.imatrix("m")
    got = _run(la.inv(m), [m], [np.array([[2, 0], [0, 4]], dtype="int32")])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.linalg.inv([[2, 0], [0, 4]]))


def test_svd_full_and_qr_complete_shapes():
    g = RNG.normal(size=(5, 3))
    G = nt.dmatrix("G")
    u, s, vh = _run(list(la.svd(G)), [G], [g])
    np.testing.assert_allclose((u[:, :3] * s) @ vh, g, atol=1e-12)
    q, r = _run(list(la.qr(G, mode="complete")), [G], [g])
    assert q.shape == (5, 5) and r.shape == (5, 3)
    assert la.svd(nt.tensor("float64", (5, 3)), full_matrices=False)[0].type.shape == (5, 3)


# -- gradients ------------------------------------------------------------------------


def _sym(x):
    return (x + x.T) * 0.5


def test_grads_against_finite_differences():
    a = _spd(4)
    verify_grad(la.inv, [a], linker="py")
    verify_grad(la.det, [a / 3], linker="py")
    verify_grad(lambda x: la.slogdet(x)[1], [a], linker="py")
    verify_grad(la.solve, [a, RNG.normal(size=(4,))], linker="py")
    verify_grad(la.solve, [a, RNG.normal(size=(4, 2))], linker="py")
    verify_grad(lambda x, y: la.solve(_sym(x), y, assume_a="pos"), [a, RNG.normal(size=(4, 2))],
                linker="py")
    verify_grad(lambda x: la.cholesky(_sym(x)), [a], linker="py")
    verify_grad(lambda x: la.eigh(_sym(x))[0], [a], linker="py")
    verify_grad(lambda x: la.eigh(_sym(x))[1][:, -1] ** 2, [a], linker="py")


def test_grads_refused_where_undefined_name_the_op():
    g = nt.dmatrix("g")
    with pytest.raises(NotImplementedError, match="SVD.*has no gradient"):
        nbgraph.grad(la.svd(g, compute_uv=False).sum(), g)


# -- shapes, errors, rewrite ----------------------------------------------------------


def test_static_shapes_and_infer_shape():
    A = nt.tensor("float64", (3, 3), "A")
    assert la.inv(A).type.shape == (3, 3)
    assert la.solve(A, nt.tensor("float64", (3, 2))).type.shape == (3, 2)
    assert la.eigh(A)[0].type.shape == (3,)
    assert la.pinv(nt.tensor("float64", (3, 5))).type.shape == (5, 3)
    B = nt.dmatrix("B")
    f = function([B], [la.inv(B).shape, la.eigh(B)[1].shape, la.det(B).shape], linker="py")
    s1, s2, s3 = f(np.eye(4))
    assert list(s1) == [4, 4] and list(s2) == [4, 4] and list(s3) == []


def test_bad_arguments_name_the_argument():
    with pytest.raises(TypeError, match="inv: argument a .* must have 2 dimensions"):
        la.inv(nt.dvector("v"))
    with pytest.raises(ValueError, match="inv: argument a .* must be square"):
        la.inv(nt.tensor("float64", (2, 3)))
    with pytest.raises(ValueError, match="solve: a .* has 3 rows, b .* has 2"):
        la.solve(nt.tensor("float64", (3, 3)), nt.tensor("float64", (2,)))
    with pytest.raises(ValueError, match="assume_a"):
        la.solve(nt.dmatrix(), nt.dvector(), assume_a="spd")
    A = nt.dmatrix("A")
    with pytest.raises(ValueError, match="must be square"):
        function([A], la.det(A), linker="py")(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="not positive definite"):
        function([A], la.cholesky(A), linker="py")(-np.eye(2))


def test_inv_dot_becomes_solve_and_keeps_the_value():
    A, b = nt.dmatrix("A"), nt.dvector("b")
    f = function([A, b], la.inv(A).dot(b), linker="py")
    ops = [type(n.op) for n in f.fgraph.apply_nodes]
    assert Solve in ops and Inv not in ops
    a, vb = _spd(5), RNG.normal(size=5)
    np.testing.assert_allclose(f(a, vb), np.linalg.solve(a, vb), rtol=1e-12)
    from nbgraph.linkers.mode import Mode

    g = function([A, b], la.inv(A) @ b, mode=Mode(linker="py").excluding("inv_dot_to_solve"))
    assert Inv in [type(n.op) for n in g.fgraph.apply_nodes]


def test_python_and_c_linkers_agree_under_debug():
    a = nt.dtensor3("a")
    b = nt.dmatrix("b")
    f = function([a, b], (la.matmul(a, b) * 2).sum() + la.det(b[:2, :2]), linker="debug")
    va, vb = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4, 4))
    np.testing.assert_allclose(f(va, vb), (va @ vb * 2).sum() + np.linalg.det(vb[:2, :2]))
