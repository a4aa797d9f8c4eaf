"""Gradients of every tensor Op against finite differences, and the grad() API on tensors.

``verify_grad`` builds its inputs with unknown-size dimensions, so a point of
shape (1, n) exercises a broadcast dimension that is only 1 at run time.
"""

import warnings

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph import grad
from nbgraph.core.gradient import DisconnectedInputError
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.testing import GradientError


def compile_(inputs, outputs, **kwargs):
    return nbgraph.function(inputs, outputs, linker="py", **kwargs)


def verify_grad(fun, points, **kwargs):
    """nbgraph.verify_grad on the Python linker (the C linkers have their own tests)."""
    kwargs.setdefault("linker", "py")
    return nbgraph.verify_grad(fun, points, **kwargs)


RNG = np.random.default_rng(20240611)


def r(*shape):
    """Uniform in [-1, 1]."""
    return RNG.uniform(-1.0, 1.0, shape)


def p(*shape):
    """Positive, away from 0: [0.5, 2]."""
    return RNG.uniform(0.5, 2.0, shape)


def apart(*shape):
    """Distinct values at least 0.1 apart (no ties for max/min, no kinks for abs)."""
    n = int(np.prod(shape))
    values = (RNG.permutation(n) - n / 2 + 0.5) * 0.3
    return values.reshape(shape)


# -- elementwise ----------------------------------------------------------------------------

ELEMWISE_CASES = {
    "add": (lambda a, b: a + b, [r(3, 4), r(3, 4)]),
    "sub": (lambda a, b: a - b, [r(3, 4), r(3, 4)]),
    "mul": (lambda a, b: a * b, [r(3, 4), r(3, 4)]),
    "true_div": (lambda a, b: a / b, [r(3, 4), p(3, 4)]),
    "pow": (lambda a, b: a ** b, [p(3, 4), r(3, 4)]),
    "pow_const_exponent": (lambda a: a ** 3, [r(3, 4)]),
    "pow_const_base": (lambda a: 2.0 ** a, [r(3, 4)]),
    "rtruediv": (lambda a: 2.0 / a, [p(3, 4)]),
    "neg": (nt.neg, [r(5)]),
    "abs": (nt.abs, [apart(6)]),
    "exp": (nt.exp, [r(3, 4)]),
    "log": (nt.log, [p(3, 4)]),
    "log1p": (nt.log1p, [p(3, 4)]),
    "expm1": (nt.expm1, [r(3, 4)]),
    "sqrt": (nt.sqrt, [p(3, 4)]),
    "sqr": (nt.sqr, [r(3, 4)]),
    "sin": (nt.sin, [r(3, 4) * 3]),
    "cos": (nt.cos, [r(3, 4) * 3]),
    "tan": (nt.tan, [r(3, 4)]),
    "tanh": (nt.tanh, [r(3, 4) * 2]),
    "sigmoid": (nt.sigmoid, [r(3, 4) * 5]),
    "softplus": (nt.softplus, [r(3, 4) * 5]),
    "maximum": (nt.maximum, [apart(3, 4), apart(3, 4) + 0.05]),
    "minimum": (nt.minimum, [apart(3, 4), apart(3, 4) + 0.05]),
    "mod": (lambda a, b: a % b, [p(3, 4) * 3, p(3, 4)]),
    "switch": (lambda a, b: nt.switch(a > 0, a * 2, b), [apart(3, 4), r(3, 4)]),
    "switch_bool_times": (lambda a: a * (a > 0), [apart(3, 4)]),
    "where_scalar_branch": (lambda a: nt.where(a > 0, a, 0.0), [apart(4)]),
    "chain": (lambda a, b: nt.exp(nt.sin(a) * b) / (1 + b ** 2), [r(2, 3), r(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(ELEMWISE_CASES))
def test_elemwise_grad(name):
    fn, points = ELEMWISE_CASES[name]
    verify_grad(fn, points)


BROADCAST_POINTS = [
    ("row_vs_matrix", (3, 4), (1, 4)),
    ("col_vs_matrix", (3, 4), (3, 1)),
    ("row_vs_col", (1, 4), (3, 1)),
    ("scalar_vs_matrix", (), (3, 4)),
    ("vector_vs_matrix", (4,), (3, 4)),
    ("ones_vs_tensor3", (1, 1, 1), (2, 3, 4)),
    ("vector_vs_tensor3", (3, 1), (2, 1, 4)),
]


@pytest.mark.parametrize("name,s1,s2", BROADCAST_POINTS, ids=[b[0] for b in BROADCAST_POINTS])
@pytest.mark.parametrize("op", ["add", "mul", "true_div", "maximum", "pow"])
def test_broadcast_grads_are_summed_back_to_the_input_shape(name, s1, s2, op):
    fn = {"add": nt.add, "mul": nt.mul, "true_div": nt.true_div,
          "maximum": nt.maximum, "pow": nt.pow}[op]
    a = p(*s1) if op == "pow" else r(*s1)
    b = p(*s2) + 1.0 if op in ("true_div",) else r(*s2)
    if op == "maximum":
        a, b = apart(*s1), apart(*s2) + 0.05
    verify_grad(fn, [a, b])
    # and the gradient has exactly each input's shape
    x, y = nt.tensor("float64", (None,) * a.ndim), nt.tensor("float64", (None,) * b.ndim)
    gx, gy = grad(nt.sum(fn(x, y)), [x, y])
    vx, vy = compile_([x, y], [gx, gy])(a, b)
    assert vx.shape == a.shape and vy.shape == b.shape


def test_broadcast_grad_with_static_broadcastable_input():
    x, row = nt.dmatrix("x"), nt.drow("row")
    g = grad(nt.sum(x * row), row)
    assert g.type.shape[0] == 1
    a, b = r(3, 4), r(1, 4)
    np.testing.assert_allclose(compile_([x, row], g)(a, b), a.sum(axis=0, keepdims=True))


def test_unknown_dim_that_is_one_at_run_time_is_summed():
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    gy = grad(nt.sum(x * y), y)
    f = compile_([x, y], gy)
    a = r(3, 4)
    np.testing.assert_allclose(f(a, np.ones((1, 4))), a.sum(axis=0, keepdims=True))
    np.testing.assert_allclose(f(a, np.ones((3, 1))), a.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(f(a, np.ones((1, 1))), a.sum(keepdims=True))
    np.testing.assert_allclose(f(a, np.ones((3, 4))), a)


def test_grad_of_comparisons_and_integer_ops_is_zero():
    x = nt.dvector("x")
    for out in (x > 0, nt.eq(x, 1.0), x // 1.0, nt.cast(x, "int32")):
        g = grad(nt.sum(out) * 1.0, x)
        got = compile_([x], g)(np.array([0.5, -1.5, 2.0]))
        np.testing.assert_array_equal(got, np.zeros(3))


def test_cast_grad():
    verify_grad(lambda a: nt.cast(a, "float64") ** 2, [r(3).astype("float32")])
    x = nt.dvector("x")
    g = grad(nt.sum(nt.cast(x, "float32") * 3.0), x)
    assert g.dtype == "float64"
    np.testing.assert_allclose(compile_([x], g)(r(4)), np.full(4, 3.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float32_grads_with_float32_points(dtype):
    verify_grad(lambda a, b: nt.tanh(a * b) + nt.exp(a), [r(3, 2).astype(dtype),
                                                          r(1, 2).astype(dtype)])


# -- reductions -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 0), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_grads(kind, axis, keepdims):
    point = apart(2, 3, 4) if kind in ("max", "min") else r(2, 3, 4)
    if kind == "prod":
        point = np.sign(point) * (np.abs(point) * 0.5 + 0.5)  # in +-[0.5, 1]
    verify_grad(lambda a: getattr(nt, kind)(a, axis=axis, keepdims=keepdims), [point])


def test_sum_of_int_gives_no_gradient_through_the_cast():
    x = nt.dvector("x")
    i = nt.cast(x, "int64")
    g = grad(nt.sum(i) + nt.sum(x), x)
    np.testing.assert_array_equal(compile_([x], g)(r(3)), np.ones(3))


def _analytic_prod_grad(a, axis):
    out = np.empty_like(a)
    for index in np.ndindex(a.shape):
        group = tuple(slice(None) if d in axis else index[d] for d in range(a.ndim))
        mask = np.zeros(a.shape, dtype=bool)
        mask[group] = True
        mask[index] = False
        out[index] = np.prod(a[mask])
    return out


@pytest.mark.parametrize("value", [
    [2.0, 0.0, 3.0, 4.0],        # one zero: only the zero's gradient is non-zero
    [0.0, 0.0, 3.0, 4.0],        # two zeros: all gradients are zero
    [0.0, 1.0, 1.0, 1.0],
    [-2.0, 0.5, 3.0, -1.0],      # no zero
])
def test_prod_grad_with_zeros_is_exact(value):
    x = nt.dvector("x")
    a = np.array(value)
    g = compile_([x], grad(nt.prod(x), x))(a)
    np.testing.assert_array_equal(g, _analytic_prod_grad(a, (0,)))
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("axis", [0, 1, (0, 1), None])
def test_prod_grad_with_zeros_over_axes(axis):
    a = np.array([[0.0, 2.0, 3.0], [4.0, 0.0, 0.0], [1.0, 2.0, -1.0]])
    x = nt.dmatrix("x")
    reduced_shape = np.prod(a, axis=axis).shape
    upstream = np.arange(1.0, 1.0 + int(np.prod(reduced_shape))).reshape(reduced_shape)
    w = nt.constant(upstream)
    g = compile_([x], grad(nt.sum(nt.prod(x, axis=axis) * w), x))(a)
    axes = (0, 1) if axis is None else (axis,) if isinstance(axis, int) else axis
    expected = _analytic_prod_grad(a, axes) * np.expand_dims(upstream, axes)
    np.testing.assert_allclose(g, expected, rtol=0, atol=0)


def _with_zeros(shape, count, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    a.reshape(-1)[rng.choice(a.size, size=count, replace=False)] = 0.0
    return a


def _brute_prod_without_self_grad(a, gz, axes):
    """sum over i != j of gz[i] * prod(a[k] for k not in {i, j}), group by group."""
    out = np.zeros_like(a)
    for j in np.ndindex(a.shape):
        group = [i for i in np.ndindex(a.shape)
                 if all(i[d] == j[d] for d in range(a.ndim) if d not in axes)]
        for i in group:
            if i != j:
                out[j] += gz[i] * np.prod([a[k] for k in group if k not in (i, j)])
    return out


PWS_AXES = [(0,), (1,), (0, 1), (0, 2), (2,), ()]


@pytest.mark.parametrize("axis", PWS_AXES)
@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_prod_without_self_grad_against_finite_differences(axis, zeros):
    from nbgraph.tensor.reduction import ProdWithoutSelf

    a = _with_zeros((2, 3, 4), zeros, seed=zeros)
    verify_grad(lambda x: ProdWithoutSelf(axis)(x), [a])


@pytest.mark.parametrize("axis", PWS_AXES)
@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_prod_without_self_grad_is_exact_with_zeros(axis, zeros):
    from nbgraph.tensor.reduction import ProdWithoutSelf

    a = _with_zeros((2, 3, 4), zeros, seed=10 + zeros)
    gz = RNG.uniform(-1.0, 1.0, a.shape)
    x = nt.tensor("float64", (None, None, None), "x")
    cost = nt.sum(ProdWithoutSelf(axis)(x) * nt.constant(gz))
    g = compile_([x], grad(cost, x))(a)
    np.testing.assert_allclose(g, _brute_prod_without_self_grad(a, gz, axis), rtol=1e-12,
                               atol=1e-15)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("linker", ["py", pytest.param("cvm", marks=pytest.mark.needs_cc)])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_second_derivative_of_prod(linker, axis, zeros):
    a = _with_zeros((3, 4), zeros, seed=20 + zeros)

    def grad_norm(x):
        (g,) = grad(nt.sum(nt.prod(x, axis=axis) ** 2), [x])
        return nt.sum(g ** 2)

    verify_grad(grad_norm, [a], linker=linker)


def test_hessian_of_prod_is_exact_with_zeros():
    x = nt.dvector("x")
    v = nt.dvector("v")
    (g,) = grad(nt.prod(x), [x])
    hv = grad(nt.sum(g * v), x)  # the Hessian times v
    f = compile_([x, v], hv)
    a = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    for k in range(a.size):
        e = np.zeros(a.size)
        e[k] = 1.0
        want = [0.0 if i == k else np.prod([a[m] for m in range(a.size) if m not in (i, k)])
                for i in range(a.size)]
        np.testing.assert_array_equal(f(a, e), want)


def test_prod_without_self_grad_of_empty_and_float32_groups():
    from nbgraph.tensor.reduction import ProdWithoutSelf

    x = nt.fmatrix("x")
    g = grad(nt.sum(ProdWithoutSelf((1,))(x)), x)
    f = compile_([x], g)
    assert f(np.zeros((3, 0), "float32")).shape == (3, 0)
    out = f(np.array([[1.0, 2.0, 0.0]], "float32"))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[2.0, 1.0, 3.0]])


def test_third_derivative_of_prod_names_the_op_without_grad():
    x = nt.dvector("x")
    (g,) = grad(nt.prod(x), [x])
    (h,) = grad(nt.sum(g), [x])
    with pytest.raises(NotImplementedError, match="ProdWithoutSelfGrad"):
        grad(nt.sum(h), x)


def test_prod_without_self_grad_refuses_a_mismatched_gz():
    from nbgraph.tensor.reduction import ProdWithoutSelfGrad

    with pytest.raises(TypeError, match="gz"):
        ProdWithoutSelfGrad((0,))(nt.dvector("x"), nt.fvector("g"))


def test_max_grad_goes_to_the_maximum():
    x = nt.dmatrix("x")
    a = np.array([[1.0, 5.0, 2.0], [7.0, -1.0, 3.0]])
    g = compile_([x], grad(nt.sum(nt.max(x, axis=1)), x))(a)
    np.testing.assert_array_equal(g, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    g = compile_([x], grad(nt.min(x), x))(a)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


# -- structural ops -------------------------------------------------------------------------

STRUCTURAL_CASES = {
    "dot_vv": (nt.dot, [r(3), r(3)]),
    "dot_mv": (nt.dot, [r(2, 3), r(3)]),
    "dot_vm": (nt.dot, [r(3), r(3, 4)]),
    "dot_mm": (nt.dot, [r(2, 3), r(3, 4)]),
    "dot_inner_one": (nt.dot, [r(2, 1), r(1, 4)]),
    "dot_chain": (lambda a, b: nt.tanh(nt.dot(nt.dot(a, b), a.T)), [r(2, 3), r(3, 3)]),
    "outer": (nt.outer, [r(3), r(2)]),
    "reshape": (lambda a: a.reshape((3, -1)) ** 2, [r(2, 6)]),
    "reshape_flatten": (lambda a: nt.sin(a.flatten()), [r(2, 3, 2)]),
    "reshape_symbolic": (lambda a: nt.reshape(a, (a.shape[1], a.shape[0])) ** 2, [r(2, 3)]),
    "transpose": (lambda a: a.T ** 2, [r(2, 3)]),
    "dimshuffle": (lambda a: a.dimshuffle(1, "x", 0) ** 2, [r(2, 3)]),
    "dimshuffle_3d": (lambda a: nt.exp(a.dimshuffle(2, 0, 1)), [r(2, 3, 4)]),
    "dimshuffle_drop": (lambda a: nt.specify_shape(a, (1, None)).dimshuffle(1) ** 2,
                        [r(1, 3)]),
    "specify_shape": (lambda a: nt.specify_shape(a, (2, 3)) ** 2, [r(2, 3)]),
    "subtensor_slice": (lambda a: a[1:, ::-2] ** 2, [r(3, 4)]),
    "subtensor_int": (lambda a: a[-1] ** 2, [r(3, 4)]),
    "subtensor_scalar": (lambda a: a[1, 2] ** 2, [r(3, 4)]),
    "subtensor_none_ellipsis": (lambda a: a[None, 0, ..., None] ** 2, [r(3, 4)]),
    "subtensor_overlapping": (lambda a: a[1:] * a[:-1], [r(5)]),
    "inc_subtensor": (lambda a, b: nt.inc_subtensor(a[1:], b) ** 2, [r(3, 4), r(2, 4)]),
    "inc_subtensor_bcast": (lambda a, b: nt.inc_subtensor(a[1:], b) ** 2, [r(3, 4), r(4)]),
    "inc_subtensor_bcast_one": (lambda a, b: nt.inc_subtensor(a[:, ::2], b) ** 2,
                                [r(3, 4), r(1, 1)]),
    "set_subtensor": (lambda a, b: nt.set_subtensor(a[:, 1], b) ** 2, [r(3, 4), r(3)]),
    "set_subtensor_bcast": (lambda a, b: nt.set_subtensor(a[:, 1:], b) ** 2,
                            [r(3, 4), r(1, 1)]),
    "join_axis0": (lambda a, b: nt.concatenate([a, b, a], axis=0) ** 2, [r(2, 3), r(1, 3)]),
    "join_axis1": (lambda a, b: nt.concatenate([a, b], axis=-1) ** 2, [r(2, 3), r(2, 2)]),
    "stack": (lambda a, b: nt.stack([a, b], axis=1) ** 2, [r(2, 3), r(2, 3)]),
    "stack_scalars": (lambda a, b: nt.stack([a, b, a * b]) ** 2, [r(), r()]),
    "alloc": (lambda a: nt.alloc(a, 3, 4) ** 2, [r(4)]),
    "alloc_bcast_one": (lambda a: nt.alloc(a, 3, 4) ** 2, [r(1, 4)]),
    "alloc_scalar": (lambda a: nt.alloc(a, 2, 2) ** 2, [r()]),
    "zeros_like_plus": (lambda a: nt.zeros_like(a) + a ** 2, [r(3)]),
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL_CASES))
def test_structural_grad(name):
    fn, points = STRUCTURAL_CASES[name]
    verify_grad(fn, points)


@pytest.mark.parametrize("xs,ys", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((2, 3), (3, 4))])
def test_dot_grad_closed_form(xs, ys):
    x = nt.tensor("float64", (None,) * len(xs))
    y = nt.tensor("float64", (None,) * len(ys))
    a, b = r(*xs), r(*ys)
    out = nt.dot(x, y)
    upstream = r(*np.dot(a, b).shape)
    gx, gy = grad(nt.sum(out * nt.constant(upstream)), [x, y])
    vx, vy = compile_([x, y], [gx, gy])(a, b)
    # d<U, A B>/dA = U B^T, d/dB = A^T U (with 1-d operands as outer/inner products)
    a2, b2 = np.atleast_2d(a), b.reshape(b.shape[0], -1)
    u2 = upstream.reshape(a2.shape[0], b2.shape[1])
    np.testing.assert_allclose(vx, (u2 @ b2.T).reshape(a.shape))
    np.testing.assert_allclose(vy, (a2.T @ u2).reshape(b.shape))


def test_grad_dtypes_and_static_shapes_match_the_inputs():
    f32 = nt.tensor("float32", (None, None), "f32")
    v64 = nt.tensor("float64", (None,), "v64")
    m64 = nt.tensor("float64", (None, None), "m64")
    s23 = nt.tensor("float32", (2, 3), "s23")
    cases = [
        (nt.dot(f32, m64), [f32, m64]),
        (nt.dot(f32, v64), [f32, v64]),
        (nt.dot(v64, nt.cast(m64, "float32")), [v64]),
        (nt.inc_subtensor(f32[1:], v64), [f32, v64]),
        (nt.set_subtensor(m64[0], f32[0]), [f32, m64]),
        (nt.concatenate([s23, s23]) * 2.0, [s23]),
        (nt.stack([s23, s23]) * 2.0, [s23]),
        (s23.reshape((6,)) * v64, [s23, v64]),
        (nt.alloc(f32, 3, 2, 2) * v64, [f32, v64]),
        (nt.max(s23, axis=0) * v64, [s23, v64]),
        (nt.prod(f32, axis=1) * v64, [f32, v64]),
    ]
    for out, wrt in cases:
        grads = grad(nt.sum(out), wrt)
        for var, g in zip(wrt, grads, strict=True):
            assert g.dtype == var.dtype, (out, var)
            assert all(gs == vs or vs is None
                       for gs, vs in zip(g.type.shape, var.type.shape, strict=True)), \
                (out, var, g.type)


def test_second_derivatives():
    def grad_norm(fn):
        def h(*xs):
            gs = grad(nt.sum(fn(*xs)), list(xs))
            return nt.sum(nt.stack([nt.sum(g ** 2) for g in gs]))
        return h

    verify_grad(grad_norm(lambda a: a ** 3), [r(2, 3)])
    verify_grad(grad_norm(lambda a, b: nt.sin(a * b)), [r(2, 3), r(1, 3)])
    verify_grad(grad_norm(lambda a, b: nt.tanh(nt.dot(a, b))), [r(2, 3), r(3)])
    verify_grad(grad_norm(lambda a: nt.sigmoid(a) * nt.softplus(a)), [r(4) * 3])
    verify_grad(grad_norm(lambda a: nt.exp(a[1:, ::-1])), [r(3, 3)])
    verify_grad(grad_norm(lambda a: nt.concatenate([a, a ** 2]) ** 2), [r(3, 2)])
    verify_grad(grad_norm(lambda a: nt.mean(a ** 2, axis=1)), [r(2, 5)])


# -- logistic regression --------------------------------------------------------------------

def test_logistic_regression_gradient_matches_the_closed_form():
    X = nt.dmatrix("X")
    w = nt.dvector("w")
    cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w))))
    g = grad(cost, w)
    f = compile_([X, w], [cost, g])
    xv, wv = r(20, 5), r(5)
    cost_v, g_v = f(xv, wv)
    e = np.exp(-xv @ wv)
    np.testing.assert_allclose(cost_v, np.sum(np.log1p(e)))
    np.testing.assert_allclose(g_v, -xv.T @ (e / (1 + e)), rtol=1e-12)
    verify_grad(lambda a, b: nt.sum(nt.log1p(nt.exp(-nt.dot(a, b)))), [xv, wv])


def test_logistic_regression_with_bias_and_labels():
    X, y = nt.dmatrix("X"), nt.dvector("y")
    w, b = nt.dvector("w"), nt.dscalar("b")
    p1 = nt.sigmoid(nt.dot(X, w) + b)
    cost = -nt.mean(y * nt.log(p1) + (1 - y) * nt.log(1 - p1))
    gw, gb = grad(cost, [w, b])
    xv, wv, bv = r(30, 4), r(4), 0.3
    yv = (RNG.random(30) > 0.5).astype("float64")
    gwv, gbv = compile_([X, y, w, b], [gw, gb])(xv, yv, wv, bv)
    pv = 1 / (1 + np.exp(-(xv @ wv + bv)))
    np.testing.assert_allclose(gwv, xv.T @ (pv - yv) / 30, rtol=1e-10)
    np.testing.assert_allclose(gbv, np.mean(pv - yv), rtol=1e-10)


# -- the grad() API on tensors --------------------------------------------------------------

def test_wrt_structure_is_preserved():
    x, y = nt.dvector("x"), nt.dscalar("y")
    cost = nt.sum(x * y)
    g = grad(cost, x)
    assert isinstance(g, nt.TensorVariable) and g.type == x.type
    gl = grad(cost, [x, y])
    assert isinstance(gl, list) and len(gl) == 2
    gt = grad(cost, (y, x))
    assert isinstance(gt, tuple) and len(gt) == 2
    f = compile_([x, y], list(gt))
    gy, gx = f(np.array([1.0, 2.0]), 3.0)
    assert gy == 3.0
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    one = grad(cost, [x])
    assert isinstance(one, list) and len(one) == 1


def test_consider_constant_blocks_the_flow():
    x = nt.dvector("x")
    h = x ** 2
    cost = nt.sum(h * x)  # x^3, dcost/dx = 3x^2; with h held constant: h = x^2
    a = np.array([1.0, 2.0, -3.0])
    np.testing.assert_allclose(compile_([x], grad(cost, x))(a), 3 * a ** 2)
    np.testing.assert_allclose(compile_([x], grad(cost, x, consider_constant=[h]))(a), a ** 2)
    with pytest.raises(DisconnectedInputError):
        grad(nt.sum(h), x, consider_constant=[h])


def test_disconnected_inputs_raise_warn_ignore():
    x, y = nt.dvector("x"), nt.dmatrix("y")
    cost = nt.sum(x ** 2)
    with pytest.raises(DisconnectedInputError, match="y"):
        grad(cost, [x, y])
    with pytest.raises(ValueError):  # DisconnectedInputError is a ValueError
        grad(cost, y)
    with pytest.warns(UserWarning, match="does not depend on y"):
        gx, gy = grad(cost, [x, y], disconnected_inputs="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gy2 = grad(cost, y, disconnected_inputs="ignore")
    for g in (gy, gy2):
        assert g.type.dtype == "float64" and g.ndim == 2
        got = compile_([y], g)(np.ones((2, 3)))
        np.testing.assert_array_equal(got, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'raise', 'warn' or 'ignore'"):
        grad(cost, x, disconnected_inputs="nope")


def test_non_scalar_cost_says_to_reduce():
    x = nt.dvector("x")
    with pytest.raises(TypeError, match=r"scalar cost.*\.sum\(\)"):
        grad(x * 2, x)
    with pytest.raises(TypeError, match="scalar"):
        grad(nt.dot(nt.dmatrix(), x), x)


def test_op_without_grad_is_named():
    class Twice(Op):
        __props__ = ()

        def make_node(self, v):
            v = nt.as_tensor_variable(v)
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] * 2

    x = nt.dvector("x")
    with pytest.raises(NotImplementedError, match="Twice"):
        grad(nt.sum(Twice()(x)), x)
    # off the differentiated path it does not matter
    y = nt.dvector("y")
    g = grad(nt.sum(Twice()(y)) + nt.sum(x), x)
    np.testing.assert_array_equal(compile_([x], g)(np.zeros(2)), np.ones(2))


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint8", "bool"])
def test_integer_inputs_are_differentiated_as_if_real(dtype):
    x = nt.dvector("x")
    i = nt.tensor(dtype, (None,), "i")
    cost = nt.sum(x * i)
    # Theano's convention: d(sum(x * i))/di is x, in the float dtype of the product
    gx, gi = grad(cost, [x, i])
    assert gi.dtype == "float64"
    iv = np.array([1, 0, 1]).astype(dtype)
    vx, vi = compile_([x, i], [gx, gi])(np.array([1.0, 2.0, 3.0]), iv)
    np.testing.assert_array_equal(vx, iv.astype("float64"))
    np.testing.assert_array_equal(vi, [1.0, 2.0, 3.0])
    # the Ops give a gradient (never None) for the integer input; switch's condition
    # is piecewise constant: zeros
    for out in (x * i, nt.switch(i, x, 0.0)):
        node = out.owner
        grads = node.op.grad(node.inputs, [nt.dvector()])
        assert all(g is not None for g in grads)


def test_grad_through_integer_dot_and_subtensor_indices():
    x = nt.dmatrix("x")
    k = nt.lscalar("k")
    m = nt.lmatrix("m")
    cost = nt.sum(x[k:] ** 2) + nt.sum(nt.dot(m, nt.cast(x, "int64")))
    # an index is disconnected (Theano's convention); the integer product passes zeros
    with pytest.raises(DisconnectedInputError, match="k"):
        grad(cost, [x, k, m])
    gx, gk, gm = grad(cost, [x, k, m], disconnected_inputs="ignore")
    a = r(3, 2)
    vx, vk, vm = compile_([x, k, m], [gx, gk, gm])(a, 1, np.ones((2, 3), "int64"))
    expected = 2 * a
    expected[0] = 0
    np.testing.assert_allclose(vx, expected)
    assert vk == 0
    np.testing.assert_array_equal(vm, np.zeros((2, 3)))


def test_grad_with_respect_to_an_intermediate():
    x = nt.dvector("x")
    h = nt.exp(x)
    g = grad(nt.sum(h ** 2), h)
    a = r(3)
    np.testing.assert_allclose(compile_([x], g)(a), 2 * np.exp(a))


def test_grad_of_float32_cost_stays_float32():
    x = nt.fvector("x")
    g = grad(nt.sum(x * 2.0), x)
    assert g.dtype == "float32"
    got = compile_([x], g)(np.ones(3, "float32"))
    assert got.dtype == np.float32


# -- verify_grad itself ---------------------------------------------------------------------

class BadGradOp(Op):
    """x * 3 whose grad wrongly claims 2."""

    __props__ = ()

    def make_node(self, v):
        v = nt.as_tensor_variable(v)
        return Apply(self, [v], [v.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 3

    def grad(self, inputs, output_grads):
        return [output_grads[0] * 2]


def test_verify_grad_catches_a_wrong_gradient():
    with pytest.raises(GradientError, match="argument 0"):
        verify_grad(BadGradOp(), [r(3)])
    assert issubclass(GradientError, AssertionError)


def test_verify_grad_refuses_integer_points():
    with pytest.raises(TypeError, match="float"):
        verify_grad(nt.exp, [np.array([1, 2])])


def test_verify_grad_with_scalar_output_and_several_inputs():
    verify_grad(lambda a, b, c: nt.sum(a * b) * c, [r(3), r(3), np.array(0.7)])
