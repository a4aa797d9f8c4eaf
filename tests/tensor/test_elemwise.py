"""Elemwise, DimShuffle and cast against NumPy: values, dtypes, shapes, broadcasting.

NumPy is the oracle, dtypes included (float16 where NumPy gives it).
"""

import warnings

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.basic import shape_i
from nbgraph.tensor.elemwise import DimShuffle, Elemwise, SumToShape, broadcast_shapes
from ulps import assert_ulp_close


def compile_(inputs, outputs):
    return nbgraph.function(inputs, outputs, linker="py")


def sym(value, static=False):
    """A symbolic input for ``value``: unknown-size dims unless ``static``."""
    value = np.asarray(value)
    return nt.tensor(value.dtype, value.shape if static else (None,) * value.ndim)


def run(fn, *values):
    """Apply ``fn`` to symbolic stand-ins of ``values`` and evaluate."""
    inputs = [sym(v) for v in values]
    out = fn(*inputs)
    return compile_(inputs, out)(*values), out


def expected_dtype(dtype):
    return np.dtype(dtype).name


def check_like_numpy(got, ref, rtol=1e-6):
    ref = np.asarray(ref)
    assert isinstance(got, np.ndarray)
    assert got.dtype.name == expected_dtype(ref.dtype)
    assert got.shape == ref.shape
    if ref.dtype.kind == "f" or got.dtype.kind == "f":
        tol = 1e-3 if np.dtype(expected_dtype(ref.dtype)) == np.float32 else rtol
        np.testing.assert_allclose(got.astype("float64"), ref.astype("float64"), rtol=tol,
                                   atol=tol * 1e-3, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref)


def np_sigmoid(x):
    x = np.asarray(x, dtype=np.result_type(x, np.float32) if x.dtype.kind != "f" else x.dtype)
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x))).astype(x.dtype)


def np_softplus(x):
    x = np.asarray(x, dtype=np.result_type(x, np.float32) if x.dtype.kind != "f" else x.dtype)
    return np.logaddexp(np.zeros((), x.dtype), x)


RNG = np.random.default_rng(1234)


def sample(dtype, shape, low=-3.0, high=3.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) > 0.5
    if dtype.kind == "u":
        return RNG.integers(0, 6, shape).astype(dtype)
    if dtype.kind == "i":
        return RNG.integers(-5, 6, shape).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


# -- unary functions ------------------------------------------------------------------------

UNARY = {
    "neg": (nt.neg, np.negative),
    "abs": (nt.abs, np.abs),
    "exp": (nt.exp, np.exp),
    "log": (nt.log, np.log),
    "log1p": (nt.log1p, np.log1p),
    "expm1": (nt.expm1, np.expm1),
    "sqrt": (nt.sqrt, np.sqrt),
    "sin": (nt.sin, np.sin),
    "cos": (nt.cos, np.cos),
    "tan": (nt.tan, np.tan),
    "tanh": (nt.tanh, np.tanh),
    "sigmoid": (nt.sigmoid, None),
    "softplus": (nt.softplus, None),
}
# functions only defined on a positive domain get positive samples
POSITIVE = {"log", "sqrt", "log1p"}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int32", "int64", "uint8"])
def test_unary_values_and_dtypes(name, dtype):
    fn, nfn = UNARY[name]
    low = 0.1 if name in POSITIVE else -3.0
    value = sample(dtype, (3, 4), low=low)
    if name in POSITIVE and np.dtype(dtype).kind in "iu":
        value = np.abs(value)
    if name == "neg" and np.dtype(dtype).kind == "u":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = np.negative(value)
    elif nfn is None:
        # NumPy itself has no sigmoid: expect a float of the usual promotion of the
        # input, as np.exp gives (int8 -> float16)
        ref = {"sigmoid": np_sigmoid, "softplus": np_softplus}[name](value.astype("float64"))
        ref = ref.astype(expected_dtype(np.exp(value[:0]).dtype))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = nfn(value)
    got, out = run(fn, value)
    assert out.dtype == expected_dtype(ref.dtype)
    check_like_numpy(got, ref)


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "sqrt", "sigmoid", "softplus", "invert"])
def test_unary_on_bool(name):
    value = np.array([True, False, True])
    if name == "neg":
        # NumPy refuses -bool; nbgraph must refuse too (at build time).
        with pytest.raises(TypeError):
            nt.neg(sym(value))
        return
    if name == "invert":
        ref = np.invert(value)
    elif name == "sigmoid":  # np.exp's dtype for a bool: float16, computed in float32
        ref = np_sigmoid(value.astype("float32")).astype("float16")
    elif name == "softplus":
        ref = np_softplus(value.astype("float32")).astype("float16")
    else:
        ref = UNARY[name][1](value)
    got, _ = run(getattr(nt, name), value)
    check_like_numpy(got, ref)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "uint64", "int64", "bool"])
def test_invert_integers(dtype):
    value = sample(dtype, (5,))
    got, _ = run(nt.invert, value)
    check_like_numpy(got, np.invert(value))


def test_invert_of_float_is_refused():
    with pytest.raises(TypeError):
        nt.invert(nt.dvector())


def test_unary_special_values():
    value = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 1e-300])
    with np.errstate(all="ignore"):
        for name, (fn, nfn) in UNARY.items():
            got, _ = run(fn, value)
            if nfn is None:
                nfn = {"sigmoid": np_sigmoid, "softplus": np_softplus}[name]
            ref = nfn(value)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=name)
            np.testing.assert_allclose(got, ref, rtol=1e-12, equal_nan=True, err_msg=name)
            # signed zeros survive
            zeros = ref == 0
            np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(ref[zeros]),
                                          err_msg=name)


def test_sigmoid_and_softplus_are_stable_at_extremes():
    value = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings leak out
        sig, _ = run(nt.sigmoid, value)
        sp, _ = run(nt.softplus, value)
    np.testing.assert_allclose(sig, [0.0, np_sigmoid(np.array(-50.0)), 0.5, 1.0, 1.0],
                               rtol=1e-12)
    np.testing.assert_allclose(sp, [0.0, np.log1p(np.exp(-50.0)), np.log(2), 50.0, 1000.0],
                               rtol=1e-12)
    assert np.all(np.isfinite(sig)) and np.all(np.isfinite(sp))


def test_sqr():
    value = np.array([-2.0, 3.0])
    got, _ = run(nt.sqr, value)
    np.testing.assert_array_equal(got, value * value)


# -- binary functions -----------------------------------------------------------------------

BINARY = {
    "add": (nt.add, np.add),
    "sub": (nt.sub, np.subtract),
    "mul": (nt.mul, np.multiply),
    "true_div": (nt.true_div, np.true_divide),
    "int_div": (nt.int_div, np.floor_divide),
    "mod": (nt.mod, np.remainder),
    "pow": (nt.pow, np.power),
    "maximum": (nt.maximum, np.maximum),
    "minimum": (nt.minimum, np.minimum),
    "lt": (nt.lt, np.less),
    "le": (nt.le, np.less_equal),
    "gt": (nt.gt, np.greater),
    "ge": (nt.ge, np.greater_equal),
    "eq": (nt.eq, np.equal),
    "neq": (nt.neq, np.not_equal),
    "and_": (nt.and_, np.bitwise_and),
    "or_": (nt.or_, np.bitwise_or),
    "xor": (nt.xor, np.bitwise_xor),
}
BITWISE = {"and_", "or_", "xor"}
DTYPE_PAIRS = [
    ("float64", "float64"), ("float32", "float32"), ("float32", "float64"),
    ("int32", "float32"), ("int64", "float32"), ("int8", "int8"), ("int8", "int32"),
    ("uint8", "int8"), ("uint8", "uint64"), ("int64", "uint64"), ("bool", "int32"),
    ("bool", "float32"), ("bool", "bool"), ("int16", "float64"),
]


def _binary_values(name, d1, d2, shape1, shape2):
    a = sample(d1, shape1)
    b = sample(d2, shape2)
    if name in ("int_div", "mod", "true_div") and np.dtype(d2).kind in "iub":
        b = np.where(b == 0, np.ones((), b.dtype), b) if b.dtype != bool else np.ones_like(b)
    if name == "pow":
        if np.dtype(d2).kind in "iu" or np.dtype(d2).kind == "b":
            b = np.abs(b) % 3 if b.dtype != bool else b
            b = b.astype(d2)
        if np.dtype(d1).kind == "f":
            a = np.abs(a) + 0.5
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("d1,d2", DTYPE_PAIRS)
def test_binary_values_and_dtypes(name, d1, d2):
    fn, nfn = BINARY[name]
    a, b = _binary_values(name, d1, d2, (2, 3), (2, 3))
    try:
        with np.errstate(all="ignore"):
            ref = nfn(a, b)
    except TypeError:
        # NumPy refuses the combination (bitwise ops of floats, ...): so must nbgraph
        with pytest.raises(TypeError):
            fn(sym(a), sym(b))
        return
    got, out = run(fn, a, b)
    assert out.dtype == expected_dtype(ref.dtype)
    check_like_numpy(got, ref)


BROADCAST_SHAPES = [
    ((1, 3), (4, 1)),      # row vs col
    ((), (3, 4)),          # 0-d vs matrix
    ((3, 4), ()),
    ((4,), (3, 4)),        # vector vs matrix
    ((2, 1, 4), (3, 1)),   # different ndim, both broadcasting
    ((0, 3), (1, 3)),      # empty
]


@pytest.mark.parametrize("name", ["add", "sub", "mul", "true_div", "pow", "maximum", "lt",
                                  "eq", "mod", "int_div"])
@pytest.mark.parametrize("shape1,shape2", BROADCAST_SHAPES)
def test_binary_broadcasting(name, shape1, shape2):
    fn, nfn = BINARY[name]
    a, b = _binary_values(name, "float64", "float64", shape1, shape2)
    ref = nfn(a, b)
    got, out = run(fn, a, b)
    assert out.ndim == ref.ndim
    check_like_numpy(got, ref)
    # the same graph with fully static input shapes has the static output shape
    x, y = sym(a, static=True), sym(b, static=True)
    assert fn(x, y).type.shape == ref.shape


def test_broadcast_of_unknown_dim_that_is_one_at_run_time():
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    f = compile_([x, y], x * y)
    a, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(f(a, b), a * b)
    np.testing.assert_array_equal(f(b.T, b), b.T * b)


def test_static_broadcast_shapes():
    assert (nt.drow() + nt.dcol()).type.shape == (None, None)
    a = nt.tensor("float64", (2, 1))
    b = nt.tensor("float64", (1, 3))
    assert (a + b).type.shape == (2, 3)
    assert (a + nt.dscalar()).type.shape == (2, 1)
    assert (nt.tensor("float64", (None, 1)) + nt.tensor("float64", (None, 1))).type.shape \
        == (None, 1)
    assert (nt.tensor("float64", (None, 3)) + nt.dvector()).type.shape == (None, 3)
    assert broadcast_shapes((1, None), (3, 1), (None, 1)) == (3, None)


@pytest.mark.parametrize("name", ["maximum", "minimum", "add", "mul", "lt", "eq", "neq", "ge"])
def test_binary_nan_and_inf(name):
    fn, nfn = BINARY[name]
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
    a, b = np.meshgrid(specials, specials)
    with np.errstate(invalid="ignore"):
        ref = nfn(a, b)
    got, _ = run(fn, a, b)
    check_like_numpy(got, ref)
    if ref.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def test_division_by_zero_follows_numpy():
    a = np.array([1.0, -1.0, 0.0])
    b = np.zeros(3)
    with np.errstate(all="ignore"):
        got, _ = run(nt.true_div, a, b)
        np.testing.assert_array_equal(got, a / b)
        ai, bi = np.array([7, -7, 0], "int32"), np.array([0, 0, 0], "int32")
        got, _ = run(nt.int_div, ai, bi)
        np.testing.assert_array_equal(got, np.floor_divide(ai, bi))
        got, _ = run(nt.mod, ai, bi)
        np.testing.assert_array_equal(got, np.remainder(ai, bi))


def test_int_div_and_mod_of_negatives_floor_like_numpy():
    a = np.array([-7, 7, -7, 7, -1], "int64")
    b = np.array([2, -2, -2, 2, 3], "int64")
    got, _ = run(nt.int_div, a, b)
    np.testing.assert_array_equal(got, a // b)
    got, _ = run(nt.mod, a, b)
    np.testing.assert_array_equal(got, a % b)
    af, bf = a.astype("float64") + 0.5, b.astype("float64")
    got, _ = run(nt.mod, af, bf)
    np.testing.assert_array_equal(got, np.remainder(af, bf))
    got, _ = run(lambda x, y: x // y, af, bf)
    np.testing.assert_array_equal(got, af // bf)


def test_integer_overflow_wraps_like_numpy():
    a = np.array([127, -128], "int8")
    got, _ = run(lambda x: x + x, a)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, a + a)
    assert got.dtype == np.int8


def test_operators_match_functions():
    a = np.array([[1.5, -2.0], [3.0, 4.0]])
    b = np.array([2.0, 0.5])
    p = np.abs(a)
    cases = [
        (lambda x, y: x + y, a, a + b), (lambda x, y: x - y, a, a - b),
        (lambda x, y: x * y, a, a * b), (lambda x, y: x / y, a, a / b),
        (lambda x, y: x // y, a, a // b), (lambda x, y: x % y, a, a % b),
        (lambda x, y: x ** y, p, p ** b), (lambda x, y: -x + 0 * y, a, -a + 0 * b),
        (lambda x, y: abs(x) + 0 * y, a, abs(a) + 0 * b), (lambda x, y: x < y, a, a < b),
        (lambda x, y: x >= y, a, a >= b), (lambda x, y: 2 - x + y, a, 2 - a + b),
        (lambda x, y: 1 / x + y, a, 1 / a + b), (lambda x, y: 2 ** y + x, a, 2 ** b + a),
    ]
    for fn, first, ref in cases:
        got, _ = run(fn, first, b)
        check_like_numpy(got, ref)


@pytest.mark.parametrize("dtype,value,expected", [
    ("float32", 2.0, "float32"), ("float32", 2, "float32"), ("int32", 1, "int32"),
    ("int8", 1.5, "float64"), ("int32", 1.5, "float64"), ("uint8", 3, "uint8"),
    ("float64", True, "float64"), ("bool", 1, "int64"), ("bool", 1.0, "float64"),
])
def test_python_numbers_are_weak(dtype, value, expected):
    x = nt.tensor(dtype, (None,))
    out = x * value
    assert out.dtype == expected
    data = sample(dtype, (4,))
    ref = data * value
    assert ref.dtype.name == expected
    check_like_numpy(compile_([x], out)(data), ref)


def test_python_number_that_does_not_fit_is_refused():
    with pytest.raises(ValueError, match="300"):
        nt.bvector() + 300


# -- switch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cdtype", ["bool", "int8", "float64"])
@pytest.mark.parametrize("d1,d2", [("float64", "float64"), ("float32", "int32"),
                                   ("int8", "uint8"), ("float32", "float32")])
def test_switch_values_dtypes_and_broadcasting(cdtype, d1, d2):
    cond = sample(cdtype, (3, 1))
    a = sample(d1, (1, 4))
    b = sample(d2, (3, 4))
    ref = np.where(cond, a, b)
    got, out = run(nt.switch, cond, a, b)
    assert out.dtype == expected_dtype(ref.dtype)
    check_like_numpy(got, ref)
    got, _ = run(nt.where, cond, a, b)
    check_like_numpy(got, ref)


def test_switch_with_scalars_and_nan():
    x = nt.dvector("x")
    out = nt.switch(x > 0, x, 0.0)
    assert out.dtype == "float64"
    value = np.array([-1.0, 2.0, np.nan, np.inf])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(compile_([x], out)(value), np.where(value > 0, value, 0.0))


# -- cast -----------------------------------------------------------------------------------

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"]


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ["bool", "int8", "int64", "uint8", "uint64", "float32",
                                 "float64"])
def test_cast_matches_astype(src, dst):
    value = sample(src, (6,))
    if np.dtype(src).kind == "f":
        value = np.array([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25], dtype=src)
        if np.dtype(dst).kind == "u":
            value = np.abs(value)
    x = sym(value)
    out = nt.cast(x, dst)
    assert out.dtype == dst
    if src == dst:
        assert out is x
    got = compile_([x], out)(value)
    check_like_numpy(got, value.astype(dst))
    np.testing.assert_array_equal(compile_([x], x.astype(dst))(value), value.astype(dst))


def test_cast_keeps_nan_and_inf_in_floats():
    value = np.array([np.nan, np.inf, -np.inf, 1e300])
    got, _ = run(lambda x: nt.cast(x, "float32"), value)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, value.astype("float32"))


def test_cast_accepts_numpy_dtypes_and_refuses_unknown():
    x = nt.dvector()
    assert nt.cast(x, np.float32).dtype == "float32"
    assert nt.cast(x, np.dtype("int16")).dtype == "int16"
    with pytest.raises(TypeError):
        nt.cast(x, "complex512")


# -- Elemwise as an Op ----------------------------------------------------------------------

def test_elemwise_pads_lower_dimensional_inputs_with_dimshuffle():
    x, v = nt.dmatrix(), nt.dvector()
    node = (x + v).owner
    assert isinstance(node.op, Elemwise)
    padded = node.inputs[1]
    assert isinstance(padded.owner.op, DimShuffle)
    assert padded.owner.op.new_order == ("x", 0)


def test_elemwise_result_is_a_new_array():
    x = nt.dvector()
    f = compile_([x], nt.exp(x))
    a = np.zeros(3)
    r1 = f(a)
    r2 = f(a)
    assert not np.shares_memory(r1, a)
    assert not np.shares_memory(r1, r2)


def test_elemwise_with_explicit_op_instance_and_apply():
    x, y = nt.dvector("x"), nt.dvector("y")
    node = nt.add.make_node(x, y)
    assert node.op == nt.add and node.inputs == [x, y]
    assert str(nt.add) == "Elemwise{add}"
    assert Elemwise(nt.scalar.mul) == nt.mul
    f = compile_([x, y], node.outputs[0])
    np.testing.assert_array_equal(f([1.0, 2.0], [3.0, 4.0]), [4.0, 6.0])


def test_elemwise_wrong_input_count():
    with pytest.raises(TypeError, match="2 inputs"):
        nt.sub(nt.dvector())


def symbolic_shape(var):
    """The shape of ``var`` computed by its owner's infer_shape, as one vector variable
    per dimension (inputs' shapes come from shape_i)."""
    node = var.owner
    in_shapes = [tuple(shape_i(i, d) for d in range(i.ndim)) for i in node.inputs]
    out_shapes = node.op.infer_shape(node, in_shapes)
    return list(out_shapes[node.outputs.index(var)])


def eval_infer_shape(inputs, var, *values):
    entries = symbolic_shape(var)
    if not entries:
        return ()
    f = nbgraph.function(inputs, entries, linker="py", on_unused_input="ignore")
    return tuple(int(v) for v in f(*values))


@pytest.mark.parametrize("shape1,shape2", BROADCAST_SHAPES)
def test_elemwise_infer_shape(shape1, shape2):
    a, b = np.ones(shape1), np.ones(shape2)
    x, y = sym(a), sym(b)
    out = x + y
    assert eval_infer_shape([x, y], out, a, b) == (a + b).shape


def test_elemwise_infer_shape_with_broadcastable_inputs():
    x, y = nt.drow("x"), nt.dcol("y")
    out = nt.maximum(x, y)
    a, b = np.ones((1, 5)), np.ones((4, 1))
    assert eval_infer_shape([x, y], out, a, b) == (4, 5)
    s = nt.tensor("float64", (3, None), "s")
    assert eval_infer_shape([s, x], s * x, np.ones((3, 5)), a) == (3, 5)


# -- DimShuffle -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,pattern,ref", [
    ((2, 3), (1, 0), lambda a: a.T),
    ((2, 3, 4), (2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ((2, 3), ("x", 0, 1), lambda a: a[None]),
    ((2, 3), (0, "x", 1, "x"), lambda a: a[:, None, :, None]),
    ((3,), ("x", 0), lambda a: a[None]),
    ((3,), (0, "x"), lambda a: a[:, None]),
    ((), ("x", "x"), lambda a: a.reshape(1, 1)),
    ((1, 3), (1,), lambda a: a[0]),
    ((2, 1), (0,), lambda a: a[:, 0]),
    ((1, 1), (), lambda a: a.reshape(())),
    ((1, 3, 1), ("x", 1, "x"), lambda a: a[0, :, 0][None, :, None]),
    ((4, 1, 3), (2, "x", 0), lambda a: a[:, 0, :].T[:, None, :]),
])
def test_dimshuffle_values_and_views(shape, pattern, ref):
    a = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape)
    x = nt.tensor("float64", tuple(1 if s == 1 else None for s in shape))
    out = x.dimshuffle(*pattern)
    assert out.ndim == len(pattern)
    assert out.type.shape == tuple(
        1 if p == "x" else x.type.shape[p] for p in pattern)
    got = compile_([x], out)(a)
    expected = ref(a)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if a.size:
        assert np.shares_memory(got, a)
    assert eval_infer_shape([x], out, a) == expected.shape


def test_dimshuffle_keeps_static_shape_and_dtype():
    x = nt.tensor("int16", (2, 1, None))
    out = x.dimshuffle(2, "x", 0)
    assert out.type == nt.TensorType("int16", (None, 1, 2))
    assert nt.tensor("float32", (2, 3)).T.type.shape == (3, 2)
    assert str(DimShuffle(2, (1, "x", 0))) == "DimShuffle{1,x,0}"


def test_dimshuffle_op_equality():
    assert DimShuffle(2, (1, 0)) == DimShuffle(2, [1, 0])
    assert DimShuffle(2, (1, 0)) != DimShuffle(2, (0, 1))
    assert hash(DimShuffle(2, (1, 0))) == hash(DimShuffle(2, (1, 0)))


def test_dimshuffle_dropping_an_unknown_dim_checks_at_run_time():
    # An unknown-size dim cannot be dropped at build time; a static 1 is checked again at
    # run time in case the value given is wrong.
    x = nt.tensor("float64", (1, None))
    f = compile_([x], x.dimshuffle(1))
    np.testing.assert_array_equal(f(np.ones((1, 3))), np.ones(3))
    with pytest.raises((TypeError, ValueError)):
        f(np.ones((2, 3)))


def test_transpose_property():
    x = nt.dtensor3()
    a = np.arange(24.0).reshape(2, 3, 4)
    got = compile_([x], x.T)(a)
    np.testing.assert_array_equal(got, a.T)
    assert np.shares_memory(got, a)


# -- SumToShape -----------------------------------------------------------------------------

def test_sum_to_shape_undoes_broadcasting_at_run_time():
    g, like = nt.dmatrix("g"), nt.dmatrix("like")
    f = compile_([g, like], SumToShape()(g, like))
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(a, np.ones((1, 3))), a.sum(0, keepdims=True))
    np.testing.assert_array_equal(f(a, np.ones((2, 1))), a.sum(1, keepdims=True))
    np.testing.assert_array_equal(f(a, np.ones((1, 1))), a.sum(keepdims=True))
    np.testing.assert_array_equal(f(a, np.ones((2, 3))), a)
    with pytest.raises(ValueError, match="Apply node"):
        f(a, np.ones((3, 3)))


@pytest.mark.needs_cc
@pytest.mark.parametrize("linker", ["c", "cvm", "debug"])
def test_sum_to_shape_in_c_sums_or_passes_the_gradient_through(linker):
    # nothing to sum: the C kernel's output is its input (the view_map allows it)
    g, like = nt.dmatrix("g"), nt.dmatrix("like")
    f = nbgraph.function([g, like], SumToShape()(g * 3.0, like) * 2.0, linker=linker)
    a = np.arange(6.0).reshape(2, 3) / 7
    for target in [(2, 3), (1, 3), (2, 1), (1, 1), (2, 3)]:
        want = 2.0 * (a * 3.0).sum(axis=tuple(i for i, s in enumerate(target) if s == 1),
                                   keepdims=True)
        np.testing.assert_array_equal(f(a, np.ones(target)), want)
    with pytest.raises(ValueError):
        f(a, np.ones((3, 3)))
    # the gradient of a broadcasting add, equal run-time shapes and a broadcast row
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    grads = nbgraph.grad((nt.tanh(x + y) ** 2).sum(), [x, y])
    fg = nbgraph.function([x, y], grads, linker=linker)
    fp = nbgraph.function([x, y], grads, linker="py")
    for b in (a[::-1].copy(), a[:1].copy()):
        for got, want in zip(fg(a, b), fp(a, b), strict=True):
            assert got.shape == want.shape
            assert_ulp_close(got, want)  # (C's tanh against NumPy's)


@pytest.mark.needs_cc
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
def test_sum_to_shape_column_sums_in_c_are_numpys(dtype):
    # unit-stride rows summed into one row (a bias gradient), row after row as NumPy does
    g = nt.tensor(dtype, (None, None, None), "g")
    like = nt.tensor(dtype, (1, None, None), "like")
    f = nbgraph.function([g, like], SumToShape()(g, like), linker="c")
    rng = np.random.default_rng(3)
    for shape in [(600, 1, 10), (7, 3, 5), (1, 2, 3), (0, 2, 3), (33, 1, 1), (4, 1, 700)]:
        a = (rng.standard_normal(shape) * 50).astype(dtype)
        for v in (a, a[:, :, ::-1], np.asfortranarray(a)):
            want = v.sum(axis=0, keepdims=True, dtype=dtype)
            got = f(v, np.ones((1,) + shape[1:], dtype))
            assert got.dtype == want.dtype and got.shape == want.shape
            if not dtype.startswith("float") or (v.flags.c_contiguous and v[:1].size != 1):
                np.testing.assert_array_equal(got, want)
            else:  # NumPy sums in another order: within the rounding of the sums
                bound = np.finfo(dtype).eps * shape[0] * np.abs(v).sum(axis=0, keepdims=True)
                assert np.all(np.abs(got - want) <= bound)


def test_sum_to_shape_infer_shape_and_static_type():
    g, like = nt.dmatrix("g"), nt.drow("like")
    out = SumToShape()(g, like)
    assert out.type.shape == (1, None)
    a, b = np.ones((4, 3)), np.ones((1, 3))
    assert eval_infer_shape([g, like], out, a, b) == (1, 3)
    np.testing.assert_array_equal(compile_([g, like], out)(a, b), np.full((1, 3), 4.0))
