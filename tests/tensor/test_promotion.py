"""Broadcasting and dtype promotion held to NumPy 2 (NEP 50) by property tests.

For random dtypes and random broadcast-compatible static shapes (some entries
unknown), the output of an Elemwise op must have the dtype NumPy's ufunc gives
on sample arrays, the static shape NumPy's broadcasting implies where it is
known, and the values NumPy computes.  Python numbers are weak.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import tensor

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64"]

OPS = {
    "add": (nt.add, np.add),
    "mul": (nt.mul, np.multiply),
    "sub": (nt.sub, np.subtract),
    "true_div": (nt.true_div, np.true_divide),
    "maximum": (nt.maximum, np.maximum),
    "lt": (nt.lt, np.less),
}

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# -- strategies ---------------------------------------------------------------------

@st.composite
def broadcastable_shapes(draw, n):
    """``n`` (static_shape, actual_shape) pairs that broadcast together.

    Each input has 0..3 dimensions aligned on the right; in each dimension an
    input has the common size or 1; each static entry is the actual size or None.
    """
    out_ndim = draw(st.integers(0, 3))
    common = draw(st.lists(st.integers(0, 4), min_size=out_ndim, max_size=out_ndim))
    pairs = []
    for _ in range(n):
        ndim = draw(st.integers(0, out_ndim))
        actual = tuple(draw(st.sampled_from([c, 1])) for c in common[out_ndim - ndim:])
        static = tuple(draw(st.sampled_from([a, None])) for a in actual)
        pairs.append((static, actual))
    return pairs


def expected_static_shape(statics):
    """The static output shape NumPy's rules imply from partial static shapes."""
    ndim = max((len(s) for s in statics), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in statics]
    out = []
    for sizes in zip(*padded, strict=True):
        known = {s for s in sizes if s is not None and s != 1}
        if known:
            out.append(known.pop())
        elif all(s == 1 for s in sizes):
            out.append(1)
        else:
            out.append(None)
    return tuple(out)


def sample(dtype, shape, rng):
    """Small positive values (no overflow, no division by zero) of ``dtype``."""
    if dtype == "bool":
        return np.ones(shape, dtype=bool)
    return rng.integers(1, 5, size=shape).astype(dtype)


def numpy_result(ufunc, arrays):
    """The ufunc applied left to right, or the exception type NumPy raises."""
    try:
        with np.errstate(all="ignore"):
            out = arrays[0]
            for a in arrays[1:]:
                out = ufunc(out, a)
        return out
    except TypeError:
        return TypeError


def run(inputs, output, values):
    return nbgraph.function(inputs, output, linker="py")(*values)


def check_elemwise(op_name, dtypes, pairs, seed):
    op, ufunc = OPS[op_name]
    rng = np.random.default_rng(seed)
    arrays = [sample(d, actual, rng) for d, (_, actual) in zip(dtypes, pairs, strict=True)]
    expected = numpy_result(ufunc, arrays)
    variables = [tensor(d, static, "x%d" % i) for i, (d, (static, _)) in
                 enumerate(zip(dtypes, pairs, strict=True))]
    if expected is TypeError:  # NumPy refuses (bool - bool): so must we, at build time
        with pytest.raises(TypeError):
            out = variables[0]
            for v in variables[1:]:
                out = op(out, v)
        return
    out = variables[0]
    for v in variables[1:]:
        out = op(out, v)
    # dtype
    assert out.dtype == expected.dtype.name, (op_name, dtypes)
    # static shape: exactly what the static information implies, and consistent
    # with NumPy's broadcast of the actual shapes
    statics = [static for static, _ in pairs]
    assert out.type.shape == expected_static_shape(statics)
    actual_shape = np.broadcast_shapes(*[a for _, a in pairs])
    assert out.type.ndim == len(actual_shape)
    assert all(s is None or s == a for s, a in zip(out.type.shape, actual_shape, strict=True))
    # values
    result = run(variables, out, arrays)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=1e-6)


# -- pairs and triples of tensors --------------------------------------------------------

@SETTINGS
@given(op_name=st.sampled_from(sorted(OPS)),
       dtypes=st.lists(st.sampled_from(DTYPES), min_size=2, max_size=2),
       pairs=broadcastable_shapes(2), seed=st.integers(0, 2 ** 16))
def test_binary_promotion_and_broadcasting(op_name, dtypes, pairs, seed):
    check_elemwise(op_name, dtypes, pairs, seed)


@SETTINGS
@given(op_name=st.sampled_from(sorted(OPS)),
       dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3),
       pairs=broadcastable_shapes(3), seed=st.integers(0, 2 ** 16))
def test_chained_promotion_of_three_tensors(op_name, dtypes, pairs, seed):
    check_elemwise(op_name, dtypes, pairs, seed)


@SETTINGS
@given(dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3),
       pairs=broadcastable_shapes(3), seed=st.integers(0, 2 ** 16))
def test_variadic_add_of_three_tensors(dtypes, pairs, seed):
    rng = np.random.default_rng(seed)
    arrays = [sample(d, actual, rng) for d, (_, actual) in zip(dtypes, pairs, strict=True)]
    expected = np.add(np.add(arrays[0], arrays[1]), arrays[2])
    variables = [tensor(d, static) for d, (static, _) in zip(dtypes, pairs, strict=True)]
    out = nt.add(*variables)
    assert out.dtype == expected.dtype.name
    assert out.type.shape == expected_static_shape([s for s, _ in pairs])
    np.testing.assert_allclose(run(variables, out, arrays), expected, rtol=1e-6)


@pytest.mark.parametrize("op_name", sorted(OPS))
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_every_dtype_pair(op_name, da, db):
    """The whole table once, deterministically (cheap: no compilation)."""
    op, ufunc = OPS[op_name]
    expected = numpy_result(ufunc, [np.ones(2, da), np.ones(2, db)])
    x, y = tensor(da, (None,)), tensor(db, (None,))
    if expected is TypeError:
        with pytest.raises(TypeError):
            op(x, y)
    else:
        assert op(x, y).dtype == expected.dtype.name


# -- Python numbers are weak ----------------------------------------------------------------

@pytest.mark.parametrize("make, value, dtype", [
    (nt.fvector, 2.0, "float32"),
    (nt.bvector, 1, "int8"),
    (nt.ivector, 2.5, "float64"),
    (nt.fvector, 2, "float32"),
    (nt.wvector, -3, "int16"),
    (nt.dvector, 1, "float64"),
    (nt.fvector, True, "float32"),
])
def test_python_scalars_are_weak(make, value, dtype):
    x = make("x")
    for z in (x * value, value * x, x + value, value + x):
        assert z.dtype == dtype
    a = np.arange(1, 4).astype(x.dtype)
    assert (a * value).dtype.name == dtype  # NumPy agrees
    np.testing.assert_allclose(run([x], x * value, [a]), a * value, rtol=1e-6)


def test_weak_float_with_bool_and_int_tensors():
    assert (nt.tensor("bool", (None,)) + 1.5).dtype == np.result_type(np.bool_, 1.5).name
    assert (nt.tensor("bool", (None,)) + 1).dtype == "int64"
    assert (nt.lvector() * 2.5).dtype == "float64"
    assert (nt.tensor("uint8", (None,)) + 200).dtype == "uint8"


@pytest.mark.parametrize("make, value", [
    (nt.bvector, 300), (nt.bvector, -129), (lambda: tensor("uint8", (None,)), -1),
    (lambda: tensor("uint16", (None,)), 70000), (nt.ivector, 2 ** 31),
])
def test_python_int_that_does_not_fit_raises_value_error(make, value):
    x = make()
    for z in (lambda: x + value, lambda: value + x, lambda: x * value):
        with pytest.raises(ValueError) as info:
            z()
        assert str(value) in str(info.value)


def test_bvector_plus_300():
    with pytest.raises(ValueError, match="300"):
        nt.bvector("b") + 300


@st.composite
def dtype_and_python_number(draw):
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(st.sampled_from(["int", "float", "bool"]))
    if kind == "bool":
        return dtype, draw(st.booleans())
    if kind == "float":
        return dtype, draw(st.floats(-1e6, 1e6, allow_nan=False))
    if dtype in ("bool", "float32", "float64"):
        return dtype, draw(st.integers(-1000, 1000))
    info = np.iinfo(dtype)
    return dtype, draw(st.integers(int(info.min), int(info.max)))


@SETTINGS
@given(op_name=st.sampled_from(sorted(OPS)), case=dtype_and_python_number(),
       scalar_first=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_weak_scalar_promotion_matches_numpy(op_name, case, scalar_first, seed):
    dtype, value = case
    op, ufunc = OPS[op_name]
    a = sample(dtype, (3,), np.random.default_rng(seed))
    args = (value, a) if scalar_first else (a, value)
    try:
        with np.errstate(all="ignore"):
            expected = ufunc(*args)
    except (TypeError, OverflowError):
        assume(False)  # NumPy refuses: covered by the explicit tests
    x = tensor(dtype, (None,), "x")
    z = op(value, x) if scalar_first else op(x, value)
    assert z.dtype == expected.dtype.name, (op_name, dtype, value)
    with np.errstate(all="ignore"):
        result = run([x], z, [a])
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-6)


# -- broadcasting errors --------------------------------------------------------------------

@SETTINGS
@given(op_name=st.sampled_from(sorted(OPS)),
       sizes=st.tuples(st.integers(0, 5), st.integers(0, 5)).filter(
           lambda t: t[0] != t[1] and 1 not in t),
       lead=st.lists(st.sampled_from([None, 1, 3]), max_size=2),
       swap=st.booleans())
def test_static_shapes_that_cannot_broadcast_raise_at_build_time(op_name, sizes, lead, swap):
    op, _ = OPS[op_name]
    x = tensor("float64", tuple(lead) + (sizes[0],), "x")
    y = tensor("float64", (sizes[1],), "y")
    if swap:
        x, y = y, x
    with pytest.raises(ValueError, match="broadcast"):
        op(x, y)


@SETTINGS
@given(op_name=st.sampled_from(sorted(OPS)),
       sizes=st.tuples(st.integers(0, 5), st.integers(0, 5)).filter(
           lambda t: t[0] != t[1] and 1 not in t),
       static_x=st.booleans())
def test_unknown_shapes_that_cannot_broadcast_raise_at_run_time(op_name, sizes, static_x):
    op, _ = OPS[op_name]
    # x may know its last size; y does not, so only the run can tell
    x = tensor("float64", (None, sizes[0] if static_x else None), "x")
    y = tensor("float64", (None,), "y")
    f = nbgraph.function([x, y], op(x, y), linker="py")
    with pytest.raises(ValueError):
        f(np.ones((2, sizes[0])), np.ones(sizes[1]))
    # and the same function still works on shapes that do broadcast
    out = f(np.ones((2, sizes[0])), np.ones(1))
    assert out.shape == (2, sizes[0])


def test_runtime_mismatch_message():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = nbgraph.function([x, y], x + y, linker="py")
    with pytest.raises(ValueError):
        f(np.ones(3), np.ones(4))
    np.testing.assert_array_equal(f(np.ones(3), np.ones(1)), np.full(3, 2.0))


def test_static_conflict_message_names_the_inputs():
    x = TensorType("float64", (2, 3))("x")
    y = TensorType("float64", (4,))("y")
    with pytest.raises(ValueError) as info:
        x + y
    text = str(info.value)
    assert "dimension 1" in text and "x" in text and "y" in text


def test_a_python_float_too_large_for_float32_becomes_inf_as_in_numpy():
    import nbgraph as ng

    v = nt.fvector("v")
    out = v * 1e40
    assert out.dtype == "float32"
    f = ng.function([v], out, linker="py")
    with np.errstate(over="ignore"):
        expected = np.array([1.0, -2.0], dtype="float32") * 1e40
    np.testing.assert_array_equal(f(np.array([1.0, -2.0], dtype="float32")), expected)
