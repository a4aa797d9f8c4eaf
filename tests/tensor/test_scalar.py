"""Scalar types, variables, promotion, ops and Composite, with NumPy as the oracle."""

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbgraph.tensor.scalar  # noqa: F401  (nbgraph.tensor.scalar may be shadowed by a constructor)
from nbgraph.core import grad as core_grad
from nbgraph.core.graph import Constant, toposort
from nbgraph.core.op import run_node
from nbgraph.core.type import MethodNotDefined
from ulps import assert_ulp_close, numpy_tolerance

S = sys.modules["nbgraph.tensor.scalar"]

ALL = S.all_dtypes
FLOATS = S.float_dtypes
INTS = S.int_dtypes + S.uint_dtypes


def evaluate(outputs, givens):
    """Values of ``outputs`` given values for their root variables (a tiny Python linker)."""
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)
    env = dict(givens)
    for node in toposort(outputs):
        args = [env[v] if v in env else v.data for v in node.inputs]
        for out, value in zip(node.outputs, run_node(node, args), strict=True):
            env[out] = value
    results = [env[o] if o in env else o.data for o in outputs]
    return results[0] if single else results


def values(dtype):
    """Edge cases of ``dtype``: zeros, signs, extremes, NaN and infinities."""
    if dtype == "bool":
        return np.array([False, True])
    if dtype in FLOATS:
        return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 0.1, 1e10, -1e30,
                         float(np.finfo(dtype).max), float(np.finfo(dtype).tiny),
                         np.inf, -np.inf, np.nan], dtype=dtype)
    info = np.iinfo(dtype)
    raw = [0, 1, -1, 2, -3, 7, -7, 100, -128, 255, 1000, info.min, info.max, info.max - 1]
    return np.array(sorted({v for v in raw if info.min <= v <= info.max}), dtype=dtype)


def grid(*dtypes):
    """Every combination of the dtypes' edge values, one array per input."""
    mesh = np.meshgrid(*[values(d) for d in dtypes], indexing="ij")
    return [m.ravel().astype(d) for m, d in zip(mesh, dtypes, strict=True)]


def same_values(got, want):
    """Exact equality with NaN equal to NaN and signed zeros told apart."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        same = (got == want) & (np.signbit(got) == np.signbit(want))
        return bool(np.all(both_nan | same))
    return bool(np.all(got == want))


UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "true_div": np.true_divide,
    "int_div": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "neq": np.not_equal,
    "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor,
    "neg": np.negative, "abs_": np.absolute, "sign": np.sign, "sqr": np.square,
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "invert": np.invert,
}
BINARY = [n for n, f in UFUNCS.items() if f.nin == 2]
UNARY = [n for n, f in UFUNCS.items() if f.nin == 1]


def numpy_dtype(ufunc, dtypes):
    """NumPy's output dtype (float16 included), or None when NumPy refuses."""
    try:
        resolved = ufunc.resolve_dtypes(tuple(np.dtype(d) for d in dtypes) + (None,))
    except TypeError:
        return None
    return resolved[-1].name


def numpy_values(ufunc, arrays):
    """NumPy's result."""
    with np.errstate(all="ignore"):
        return ufunc(*arrays)


def node_of(op, *dtypes):
    return op.make_node(*[S.get_scalar_type(d)() for d in dtypes])


# ---------------------------------------------------------------------------
# ScalarType


class TestScalarType:
    def test_dtypes_and_c_types(self):
        expected = {"bool": "uint8_t", "int8": "int8_t", "int16": "int16_t",
                    "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t",
                    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
                    "float32": "float", "float64": "double"}
        assert set(ALL) == set(expected)
        for dtype, ctype in expected.items():
            t = S.ScalarType(dtype)
            assert t.dtype == dtype
            assert t.c_type == ctype
            assert t.get_size(t.get_shape_info(np.ones((), dtype)[()])) == np.dtype(dtype).itemsize

    def test_equality_hash_str(self):
        assert S.ScalarType("float32") == S.float32
        assert hash(S.ScalarType(np.float32)) == hash(S.float32)
        assert S.ScalarType("float32") != S.float64
        assert str(S.float32) == repr(S.float32) == "ScalarType(float32)"
        assert S.get_scalar_type("int8") is S.int8
        assert S.bool_.dtype == "bool"
        assert S.float32.clone(dtype="int16") == S.int16

    @pytest.mark.parametrize("bad", ["object", "U3", "S2"])
    def test_unsupported_dtypes(self, bad):
        with pytest.raises(TypeError, match=np.dtype(bad).name):
            S.ScalarType(bad)

    @pytest.mark.parametrize("extended", ["float16", "complex64", "complex128"])
    def test_float16_and_complex_are_supported(self, extended):
        assert S.ScalarType(extended).dtype == extended

    def test_not_a_dtype(self):
        with pytest.raises(TypeError, match="not a NumPy dtype"):
            S.ScalarType("no-such-dtype")

    def test_make_variable(self):
        x = S.float64("x")
        assert isinstance(x, S.ScalarVariable)
        assert x.type is S.float64 and x.name == "x" and x.owner is None
        assert x.dtype == "float64"
        assert repr(S.int8()) == "<ScalarType(int8)>"


class TestFilter:
    def test_strict_accepts_exact_numpy_scalars(self):
        value = np.float32(1.5)
        assert S.float32.filter(value, strict=True) is value
        out = S.float32.filter(np.array(1.5, dtype=np.float32), strict=True)
        assert type(out) is np.float32 and out == 1.5

    @pytest.mark.parametrize("value", [1.5, 1, np.float64(1.5), np.int8(1)])
    def test_strict_refuses_anything_else(self, value):
        with pytest.raises(TypeError, match="float32"):
            S.float32.filter(value, strict=True)

    def test_upcasts(self):
        out = S.int16.filter(np.int8(-5))
        assert type(out) is np.int16 and out == -5
        out = S.float64.filter(np.float32(0.1))
        assert type(out) is np.float64 and out == np.float64(np.float32(0.1))
        out = S.float64.filter(np.uint32(7))
        assert type(out) is np.float64 and out == 7
        assert type(S.int8.filter(True)) is np.int8

    def test_downcasts_need_permission(self):
        with pytest.raises(TypeError, match=r"int64.*int8|int8.*int64"):
            S.int8.filter(np.int64(3))
        with pytest.raises(TypeError, match="float64.*float32|float32.*float64"):
            S.float32.filter(np.float64(0.5))
        assert S.int8.filter(np.int64(300), allow_downcast=True) == np.int8(44)
        assert type(S.float32.filter(np.float64(0.1), allow_downcast=True)) is np.float32

    def test_python_numbers(self):
        assert type(S.float32.filter(0.1)) is np.float32  # allowed with allow_downcast=None
        with pytest.raises(TypeError, match="allow_downcast"):
            S.float32.filter(0.1, allow_downcast=False)
        assert S.float32.filter(0.5, allow_downcast=False) == 0.5  # exact, no loss
        assert S.int8.filter(-128) == -128
        with pytest.raises(TypeError, match="300"):
            S.int8.filter(300)
        assert S.int8.filter(300, allow_downcast=True) == 44
        assert S.uint8.filter(-1, allow_downcast=True) == 255
        with pytest.raises(TypeError, match="float"):
            S.int32.filter(2.0)
        assert S.int32.filter(2.7, allow_downcast=True) == 2
        assert S.bool_.filter(1) is np.True_
        with pytest.raises(TypeError, match="bool"):
            S.bool_.filter(2)
        assert S.float64.filter(2**53) == 2.0**53
        with pytest.raises(TypeError, match="exactly"):
            S.float64.filter(2**53 + 1)
        assert math.isnan(S.float32.filter(float("nan")))

    @pytest.mark.parametrize("bad", ["1.0", None, [1.0], {"a": 1}, 1j, np.complex128(1)])
    def test_non_numbers(self, bad):
        with pytest.raises(TypeError, match="float64"):
            S.float64.filter(bad)

    def test_arrays_must_be_0d(self):
        with pytest.raises(TypeError, match=r"shape \(2,\)"):
            S.float64.filter(np.zeros(2))

    def test_is_valid_value(self):
        assert S.int8.is_valid_value(np.int8(3))
        assert not S.int8.is_valid_value(3)
        assert "int16" in S.int8.value_validity_msg(np.int16(3))


class TestValuesEq:
    def test_exact(self):
        assert S.float64.values_eq(np.float64(np.nan), np.float64(np.nan))
        assert S.float64.values_eq(np.float64(1.0), np.float64(1.0))
        assert not S.float64.values_eq(np.float64(1.0), np.float64(1.0 + 1e-15))
        assert S.int8.values_eq(np.int8(3), np.int8(3))

    def test_approx_float64(self):
        t = S.float64
        assert t.values_eq_approx(1.0, 1.0 + 1e-9)
        assert not t.values_eq_approx(1.0, 1.001)
        assert t.values_eq_approx(np.nan, np.nan)
        assert not t.values_eq_approx(np.nan, 1.0)
        assert t.values_eq_approx(np.inf, np.inf)
        assert not t.values_eq_approx(np.inf, -np.inf)
        assert not t.values_eq_approx(np.inf, 1e308)
        assert t.values_eq_approx(0.0, 1e-9)
        assert t.values_eq_approx(1.0, 1.01, rtol=0.1)

    def test_approx_is_looser_for_float32(self):
        assert S.float32.values_eq_approx(np.float32(1.0), np.float32(1.00005))
        assert not S.float64.values_eq_approx(1.0, 1.00005)

    def test_approx_is_exact_for_integers(self):
        assert not S.int64.values_eq_approx(np.int64(10**12), np.int64(10**12 + 1))

    def test_data_signature(self):
        t = S.float64
        assert t.data_signature(np.float64(np.nan)) == t.data_signature(np.float64(np.nan))
        assert t.data_signature(np.float64(0.0)) != t.data_signature(np.float64(-0.0))


class TestCHooks:
    def test_declare_init_extract_sync(self):
        t = S.float64
        sub = {"fail": "return 1;", "slot": "args[3]"}
        assert t.c_declare("v", sub).strip() == "double v;"
        assert t.c_init("v", sub).strip() == "v = 0;"
        assert t.c_extract("v", sub).strip() == "v = *(double *)(args[3]);"
        assert t.c_sync("v", sub).strip() == "*(double *)(args[3]) = v;"
        assert S.bool_.c_declare("b", sub).strip() == "uint8_t b;"
        assert t.c_is_simple() and t.c_code_cache_version()

    def test_literals(self):
        assert S.float64.c_literal(1.5) == "0x1.8000000000000p+0"
        assert S.float32.c_literal(np.float32(-2.0)) == "(-0x1.0000000000000p+1f)"
        assert S.float64.c_literal(np.inf) == "((double)INFINITY)"
        assert S.float32.c_literal(-np.inf) == "((float)-INFINITY)"
        assert S.float64.c_literal(np.nan) == "((double)NAN)"
        assert S.int64.c_literal(-2**63) == "((int64_t)(-9223372036854775807LL - 1))"
        assert S.uint64.c_literal(2**64 - 1) == "((uint64_t)18446744073709551615ULL)"
        assert S.int8.c_literal(-5) == "((int8_t)-5LL)"
        assert S.bool_.c_literal(True) == "((uint8_t)1)"
        assert float.fromhex(S.float64.c_literal(0.1)) == 0.1


# ---------------------------------------------------------------------------
# variables, constants, as_scalar


class TestAsScalar:
    def test_variables_pass_through(self):
        x = S.int16("x")
        assert S.as_scalar(x) is x

    @pytest.mark.parametrize("value, dtype", [
        (True, "bool"), (3, "int64"), (-(2**63), "int64"), (2**63, "uint64"),
        (2.5, "float64")])
    def test_python_numbers_are_weak(self, value, dtype):
        c = S.as_scalar(value, name="c")
        assert isinstance(c, S.ScalarConstant) and c.weak
        assert c.type.dtype == dtype and c.data == value and c.name == "c"

    @pytest.mark.parametrize("value", [np.float32(2), np.int8(-1), np.array(3, np.uint16),
                                       np.bool_(True)])
    def test_numpy_values_are_strong(self, value):
        c = S.as_scalar(value)
        assert isinstance(c, S.ScalarConstant) and not c.weak
        assert c.type.dtype == np.asarray(value).dtype.name

    @pytest.mark.parametrize("bad, word", [
        ("x", "str"), ([1], "list"), (None, "NoneType"), (np.zeros(2), "ndarray"),
        (np.str_("a"), "str"), (b"x", "bytes")])
    def test_refuses_other_things(self, bad, word):
        with pytest.raises(TypeError, match=word):
            S.as_scalar(bad)

    def test_huge_python_ints(self):
        c = S.as_scalar(2**64)
        assert c.weak and c.python_value == 2**64 and c.type == S.float64
        with pytest.raises(ValueError, match="too large"):
            S.as_scalar(10**400)

    def test_non_scalar_variable(self):
        from nbgraph.core.type import Generic

        with pytest.raises(TypeError, match="Generic"):
            S.as_scalar(Generic()("g"))

    def test_constant_behaviour(self):
        c = S.as_scalar(2.0)
        d = c.clone()
        assert d.weak and d.data == 2.0 and d is not c
        assert c.signature() != S.as_scalar(np.float64(2.0)).signature()
        assert S.as_scalar(np.float64("nan")).equals(S.as_scalar(np.float64("nan")))
        assert not S.as_scalar(np.float64(0.0)).equals(S.as_scalar(np.float64(-0.0)))
        assert repr(c) == "2.0"
        with pytest.raises(AttributeError):
            c.data = 3.0


# ---------------------------------------------------------------------------
# promotion


class TestPromotion:
    def test_float32_times_python_float_stays_float32(self):
        x = S.float32("x")
        y = x * 2.0
        assert y.type == S.float32
        const = y.owner.inputs[1]
        assert not const.weak and const.type == S.float32 and const.data == 2.0

    def test_int8_plus_300_raises(self):
        with pytest.raises(ValueError, match=r"300.*int8"):
            S.int8("i") + 300

    def test_uint8_plus_negative_raises(self):
        with pytest.raises(ValueError, match=r"-1.*uint8"):
            S.uint8("u") + (-1)

    @pytest.mark.parametrize("dtype, value, expected", [
        ("int8", 2.5, "float64"), ("int32", True, "int32"), ("uint16", 7, "uint16"),
        ("float32", 10**30, "float32"), ("bool", 3, "int64"), ("bool", 1.5, "float64"),
        ("uint64", 2**64 - 1, "uint64")])
    def test_weak_rules(self, dtype, value, expected):
        assert S.add(S.get_scalar_type(dtype)(), value).type.dtype == expected

    @pytest.mark.parametrize("a, b, expected", [
        (1, 2.0, "float64"), (True, True, "bool"), (1, 2, "int64"), (True, 2, "int64")])
    def test_all_weak(self, a, b, expected):
        node = S.add.make_node(a, b)
        assert node.outputs[0].type.dtype == expected
        assert [v.type.dtype for v in node.inputs] == [expected, expected]
        assert not any(v.weak for v in node.inputs)

    def test_promote_weak_helper(self):
        x = S.float32("x")
        out = S.promote_weak([x, 2.0, 3])
        assert out[0] is x
        assert [v.type.dtype for v in out] == ["float32"] * 3
        assert S.weak_promotion_dtype(["int16"], [5]) == "int16"
        with pytest.raises(ValueError, match="70000"):
            S.weak_promotion_dtype(["int16"], [70000])
        assert S.upcast("int8", "uint8") == "int16"
        assert S.upcast("int64", "uint64") == "float64"

    def test_comparisons_accept_out_of_range_python_ints(self):
        u = S.uint8("u")
        for expr, want in [(u < -1, False), (u > -1, True), (u < 1000, True),
                           (S.eq(u, 300), False), (S.neq(u, -5), True)]:
            assert evaluate(expr, {u: np.uint8(200)}) == want

    def test_comparisons_with_ints_beyond_64_bits_are_exact_at_the_extremes(self):
        u, i = S.uint64("u"), S.int64("i")
        umax, imin = np.uint64(2**64 - 1), np.int64(-2**63)
        for expr, value, want in [(u < 2**64, umax, True), (S.eq(u, 2**64), umax, False),
                                  (u >= 2**64, umax, False), (i > -2**63 - 1, imin, True),
                                  (S.neq(i, -2**63 - 1), imin, True), (i < -2**70, imin, False)]:
            var = u if value.dtype == np.uint64 else i
            assert evaluate(expr, {var: value}) == want

    def test_switch_promotes_condition_on_its_own(self):
        x = S.float32("x")
        node = S.switch.make_node(True, x, 0)
        assert [v.type.dtype for v in node.inputs] == ["bool", "float32", "float32"]
        assert node.outputs[0].type == S.float32

    @settings(max_examples=300, deadline=None)
    @given(dtype=st.sampled_from(ALL),
           value=st.one_of(st.booleans(), st.integers(-2**65, 2**65),
                           st.floats(allow_nan=True, allow_infinity=True)),
           name=st.sampled_from(["add", "sub", "mul", "maximum", "true_div", "int_div", "mod",
                                 "pow", "lt", "eq", "and_"]),
           left=st.booleans())
    def test_weak_promotion_matches_numpy(self, dtype, value, name, left):
        ufunc = UFUNCS[name]
        strong = np.ones((), dtype=dtype)
        if name == "pow" and isinstance(value, int) and not isinstance(value, bool):
            value = abs(value)  # NumPy refuses negative integer powers at run time
        args = (value, strong) if left else (strong, value)
        try:
            with np.errstate(all="ignore"):
                want = ufunc(*args)
        except (OverflowError, ValueError):
            if name in ("lt", "eq"):
                # NumPy 2 compares most out-of-range Python ints exactly, but a few
                # combinations (bool against 2**63) still overflow; nbgraph answers.
                out = getattr(S, name)(*[S.as_scalar(a) for a in args])
                py = [a.item() if isinstance(a, np.ndarray) else a for a in args]
                assert evaluate(out, {}) == (py[0] < py[1] if name == "lt" else py[0] == py[1])
                return
            with pytest.raises(ValueError):
                getattr(S, name)(*[S.as_scalar(a) for a in args])
            return
        except TypeError:
            with pytest.raises(TypeError):
                getattr(S, name)(*[S.as_scalar(a) for a in args])
            return
        out = getattr(S, name)(*[S.as_scalar(a) for a in args])
        assert out.type.dtype == want.dtype.name
        got = evaluate(out, {})
        assert same_values(got, want) or (want.dtype.kind == "f" and S.float64.values_eq(
            got, want))


# ---------------------------------------------------------------------------
# output dtypes


class TestOutputDtypes:
    @pytest.mark.parametrize("name", BINARY)
    def test_binary_ops_follow_numpy_for_every_pair(self, name):
        op = getattr(S, name)
        for a in ALL:
            for b in ALL:
                want = numpy_dtype(UFUNCS[name], (a, b))
                if want is None:
                    with pytest.raises(TypeError, match=str(op)):
                        node_of(op, a, b)
                    continue
                node = node_of(op, a, b)
                assert node.outputs[0].type.dtype == want, (name, a, b)

    @pytest.mark.parametrize("name", UNARY)
    def test_unary_ops_follow_numpy(self, name):
        op = getattr(S, name)
        for a in ALL:
            want = numpy_dtype(UFUNCS[name], (a,))
            if want is None:
                with pytest.raises(TypeError, match=str(op)):
                    node_of(op, a)
                continue
            assert node_of(op, a).outputs[0].type.dtype == want, (name, a)

    @pytest.mark.parametrize("name", ["sigmoid", "softplus"])
    def test_sigmoid_and_softplus_follow_exp(self, name):
        for a in ALL:
            want = numpy_dtype(np.exp, (a,))
            assert node_of(getattr(S, name), a).outputs[0].type.dtype == want

    def test_float16_from_bools_and_8_bit_ints_as_numpy(self):
        assert node_of(S.exp, "int8").outputs[0].type.dtype == "float16"
        assert node_of(S.sqrt, "bool").outputs[0].type.dtype == "float16"
        assert node_of(S.sqrt, "uint8").outputs[0].type.dtype == "float16"
        assert node_of(S.exp, "int16").outputs[0].type.dtype == "float32"
        assert node_of(S.exp, "int32").outputs[0].type.dtype == "float64"

    def test_switch_identity_cast(self):
        for a in ALL:
            for b in ALL:
                node = node_of(S.switch, "bool", a, b)
                assert node.outputs[0].type.dtype == np.result_type(a, b).name
            assert node_of(S.identity, a).outputs[0].type.dtype == a
            for d in ALL:
                assert node_of(S.Cast(d), a).outputs[0].type.dtype == d

    def test_variadic_add_folds_pairwise(self):
        node = node_of(S.add, "bool", "bool", "int8", "uint8")
        assert node.outputs[0].type.dtype == "int16"
        assert node_of(S.mul, "int8", "int8", "float32").outputs[0].type.dtype == "float32"
        assert S.add.output_dtypes("int64", "uint64", "float32") == ["float64"]


# ---------------------------------------------------------------------------
# values


PAIRS = [(d, d) for d in ALL] + [
    ("int8", "uint8"), ("int64", "uint64"), ("uint64", "int8"), ("bool", "int8"),
    ("int32", "float32"), ("uint16", "float32"), ("float32", "float64"), ("int64", "float64")]


def _binary_cases():
    for name in BINARY:
        for pair in PAIRS:
            if numpy_dtype(UFUNCS[name], pair) is not None:
                yield name, pair


class TestValues:
    @pytest.mark.parametrize("name, pair", list(_binary_cases()),
                             ids=lambda v: v if isinstance(v, str) else "-".join(v))
    def test_binary_nfunc_and_perform_match_numpy(self, name, pair):
        op = getattr(S, name)
        a, b = grid(*pair)
        if name == "pow" and np.result_type(*pair).kind in "iu":
            keep = b >= 0 if b.dtype.kind == "i" else np.ones(b.shape, bool)
            a, b = a[keep], b[keep]
        want = numpy_values(UFUNCS[name], [a, b])
        if name == "pow" and want.dtype.kind == "f":
            # NumPy computes x ** 0.5 as sqrt(x) for a scalar exponent (see test_pow_half)
            want = np.where(b == 0.5, np.sqrt(a.astype(want.dtype)), want)
        got = op.nfunc(a, b)
        # exact where NumPy is exact; NumPy's own power loops differ by SIMD level
        # (not at exponent 0.5, which is sqrt: exact on every CPU)
        ulps = numpy_tolerance(name, want.dtype)
        assert_ulp_close(got, want, ulps, "%s%s" % (name, pair))
        if ulps:
            half = b == 0.5
            assert same_values(got[half], want[half])
        node = node_of(op, *pair)
        for k in range(0, len(a), max(1, len(a) // 40)):
            (value,) = run_node(node, [a[k], b[k]])
            assert type(value) is np.dtype(node.outputs[0].type.dtype).type
            assert_ulp_close(value, want[k], ulps, "%s%s at %r, %r" % (name, pair, a[k], b[k]))

    @pytest.mark.parametrize("name", UNARY + ["identity"])
    @pytest.mark.parametrize("dtype", ALL)
    def test_unary_nfunc_and_perform_match_numpy(self, name, dtype):
        op = getattr(S, name)
        ufunc = UFUNCS.get(name)
        if ufunc is not None and numpy_dtype(ufunc, (dtype,)) is None:
            pytest.skip("NumPy has no %s loop for %s" % (name, dtype))
        (x,) = grid(dtype)
        want = x.copy() if ufunc is None else numpy_values(ufunc, [x])
        assert same_values(op.nfunc(x), want)  # the same NumPy loop on the same array
        # one element at a time NumPy may take another (scalar or masked SIMD) loop
        ulps = numpy_tolerance(name, want.dtype)
        node = node_of(op, dtype)
        for k in range(len(x)):
            (value,) = run_node(node, [x[k]])
            assert_ulp_close(value, want[k], ulps, "%s(%s %r)" % (name, dtype, x[k]))

    @pytest.mark.parametrize("dtype", FLOATS + ("int8", "int32", "bool"))
    def test_sigmoid_and_softplus(self, dtype):
        (x,) = grid(dtype)
        out_dtype = node_of(S.sigmoid, dtype).outputs[0].type.dtype
        xl = x.astype(out_dtype).astype(np.longdouble)
        with np.errstate(all="ignore"):
            want_sig = (1 / (1 + np.exp(-xl))).astype(out_dtype)
            want_soft = (np.maximum(xl, 0) + np.log1p(np.exp(-np.abs(xl)))).astype(out_dtype)
        got_sig = S.sigmoid.nfunc(x)
        got_soft = S.softplus.nfunc(x)
        assert got_sig.dtype == got_soft.dtype == out_dtype
        rtol = 1e-6 if out_dtype == "float32" else 1e-14
        np.testing.assert_allclose(got_sig, want_sig, rtol=rtol, atol=0)
        np.testing.assert_allclose(got_soft, want_soft, rtol=rtol, atol=0)
        assert np.all(np.isfinite(got_soft[np.isfinite(x)]))  # never overflows
        node = node_of(S.sigmoid, dtype)
        for k in range(len(x)):
            assert_ulp_close(run_node(node, [x[k]])[0], got_sig[k], context="sigmoid")

    def test_sigmoid_extremes(self):
        x = np.array([-1000.0, -745.0, 0.0, 40.0, 1000.0, -np.inf, np.inf, np.nan])
        got = S.sigmoid.nfunc(x)
        assert got[0] == 0.0 and got[2] == 0.5 and got[4] == 1.0
        assert got[5] == 0.0 and got[6] == 1.0 and np.isnan(got[7])
        soft = S.softplus.nfunc(x)
        assert soft[4] == 1000.0 and soft[0] == 0.0 and soft[6] == np.inf and soft[5] == 0.0

    @pytest.mark.parametrize("src", ALL)
    @pytest.mark.parametrize("dst", ALL)
    def test_cast(self, src, dst):
        (x,) = grid(src)
        if src in FLOATS and dst not in FLOATS + ("bool",):
            info = np.iinfo(dst)
            with np.errstate(all="ignore"):
                keep = np.isfinite(x) & (np.trunc(x) >= info.min) & (np.trunc(x) <= info.max)
            x = x[keep]
        with np.errstate(all="ignore"):
            want = x.astype(dst)
        op = S.Cast(dst)
        assert same_values(op.nfunc(x), want)
        node = node_of(op, src)
        for k in range(len(x)):
            assert same_values(run_node(node, [x[k]])[0], want[k])

    @pytest.mark.parametrize("dtypes", [("bool", "float32", "float32"),
                                        ("float64", "int8", "uint8"),
                                        ("int8", "float64", "bool")])
    def test_switch(self, dtypes):
        c, a, b = grid(*dtypes)
        want = np.where(c, a, b)
        assert same_values(S.switch.nfunc(c, a, b), want)
        node = node_of(S.switch, *dtypes)
        for k in range(0, len(c), 7):
            assert same_values(run_node(node, [c[k], a[k], b[k]])[0], want[k])

    def test_variadic_add_is_a_left_fold(self):
        i = np.array([100, -128], dtype=np.int8)
        x = np.array([0.5, 0.25], dtype=np.float32)
        got = S.add.nfunc(i, i, x)
        with np.errstate(all="ignore"):
            want = (i + i) + x
        assert same_values(got, want)
        node = node_of(S.add, "int8", "int8", "float32")
        assert same_values(run_node(node, [i[0], i[0], x[0]])[0], want[0])

    def test_numpy_corner_cases(self):
        checks = [
            (S.int_div, np.int8(-7), np.int8(2), np.int8(-4)),
            (S.int_div, np.int8(7), np.int8(0), np.int8(0)),
            (S.int_div, np.int8(-128), np.int8(-1), np.int8(-128)),
            (S.mod, np.int8(-7), np.int8(2), np.int8(1)),
            (S.mod, np.int8(7), np.int8(-2), np.int8(-1)),
            (S.mod, np.int32(7), np.int32(0), np.int32(0)),
            (S.mod, np.float64(-1.0), np.float64(np.inf), np.float64(np.inf)),
            (S.mod, np.float64(-0.0), np.float64(3.0), np.float64(0.0)),
            (S.int_div, np.float64(1.0), np.float64(0.0), np.float64(np.inf)),
            (S.add, np.bool_(True), np.bool_(True), np.bool_(True)),
            (S.mul, np.bool_(True), np.bool_(False), np.bool_(False)),
            (S.add, np.int8(127), np.int8(1), np.int8(-128)),
            (S.maximum, np.float64(np.nan), np.float64(1.0), np.float64(np.nan)),
            (S.minimum, np.float64(1.0), np.float64(np.nan), np.float64(np.nan)),
            (S.lt, np.float64(np.nan), np.float64(1.0), np.False_),
            (S.neq, np.float64(np.nan), np.float64(np.nan), np.True_),
            (S.lt, np.int64(-1), np.uint64(2**64 - 1), np.True_),
            (S.true_div, np.int8(1), np.int8(0), np.float64(np.inf)),
            (S.pow, np.int8(3), np.int8(5), np.int8(-13)),
        ]
        for op, a, b, want in checks:
            node = op.make_node(S.as_scalar(a).type(), S.as_scalar(b).type())
            assert same_values(run_node(node, [a, b])[0], want), (op, a, b)

    @pytest.mark.parametrize("dtype", FLOATS)
    def test_pow_half_is_sqrt_as_numpy_does_for_a_scalar_exponent(self, dtype):
        # 3, 2, 0.1, 1e10: not squares, where a SIMD pow may round sqrt differently
        x = np.array([-np.inf, -0.0, 0.0, 4.0, -4.0, 3.0, 2.0, 0.1, 1e10, np.inf, np.nan],
                     dtype=dtype)
        half = np.asarray(0.5, dtype=dtype)
        with np.errstate(all="ignore"):
            want = np.power(x, half)
        assert same_values(want, np.sqrt(x))  # NumPy's own scalar-exponent path
        assert same_values(S.pow.nfunc(x, np.full(x.shape, half)), want)
        assert same_values(S.pow.nfunc(x, half), want)
        node = node_of(S.pow, dtype, dtype)
        for k in range(len(x)):
            assert same_values(run_node(node, [x[k], half[()]])[0], want[k])

    def test_out_of_range_python_ints_in_float_loops(self):
        i = S.int8("i")
        y = i / 300
        assert y.type == S.float64 and y.owner.inputs[1].type == S.float64
        assert evaluate(y, {i: np.int8(3)}) == 0.01
        with np.errstate(all="ignore"):
            assert (np.ones((), np.int8) / 300).dtype == np.float64
        z = S.float32("x") * 10**30
        assert z.type == S.float32
        assert evaluate(z, {z.owner.inputs[0]: np.float32(2)}) == np.float32(2e30)
        assert evaluate(i < 10**30, {i: np.int8(3)})

    def test_nfunc_writes_into_out(self):
        x = np.arange(3, dtype=np.int8)
        target = np.zeros(3, np.float16)
        assert S.exp.nfunc(x, out=target) is target
        assert_ulp_close(target, np.exp(x), context="exp into out")
        a = np.array([1.0, 2.0, 3.0])
        assert S.add.nfunc(a, a, a, out=a) is a and a.tolist() == [3.0, 6.0, 9.0]
        z = np.zeros(2, np.float32)
        assert S.sigmoid.nfunc(z, out=z) is z and z.tolist() == [0.5, 0.5]
        base = np.array([-np.inf, -0.0, 3.0])
        assert same_values(S.pow.nfunc(base, np.full(3, 0.5), out=base),
                           np.array([np.nan, -0.0, np.sqrt(3.0)]))
        f = np.array([1.7, -2.2])
        assert S.Cast("float64").nfunc(np.array([1, 2], np.int8), out=f) is f
        assert f.tolist() == [1.0, 2.0]
        x = S.float64("x")
        comp = S.Composite([x], [x * 2 + 1])
        buf = np.array([1.0, 2.0])
        assert comp.nfunc(buf, out=buf) is buf and buf.tolist() == [3.0, 5.0]

    def test_integer_pow_with_negative_exponent_raises_like_numpy(self):
        node = node_of(S.pow, "int32", "int32")
        with pytest.raises(ValueError, match="negative integer powers"):
            run_node(node, [np.int32(2), np.int32(-1)])

    def test_neg_and_abs_wrap(self):
        assert run_node(node_of(S.neg, "int8"), [np.int8(-128)])[0] == -128
        assert run_node(node_of(S.abs_, "int64"), [np.int64(-2**63)])[0] == -2**63
        assert run_node(node_of(S.invert, "bool"), [np.True_])[0] is np.False_
        assert run_node(node_of(S.invert, "uint8"), [np.uint8(1)])[0] == 254

    def test_perform_does_not_warn(self, recwarn):
        run_node(node_of(S.true_div, "float64", "float64"), [np.float64(1), np.float64(0)])
        run_node(node_of(S.int_div, "int64", "int64"), [np.int64(1), np.int64(0)])
        run_node(node_of(S.log, "float64"), [np.float64(-1)])
        assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# ---------------------------------------------------------------------------
# gradients


def _finite_difference(out, inputs, point, k, eps=1e-6):
    step = eps * max(1.0, abs(point[k]))
    hi = list(point)
    lo = list(point)
    hi[k] += step
    lo[k] -= step
    f_hi = evaluate(out, dict(zip(inputs, map(np.float64, hi), strict=True)))
    f_lo = evaluate(out, dict(zip(inputs, map(np.float64, lo), strict=True)))
    return (float(f_hi) - float(f_lo)) / (2 * step)


GRAD_CASES = {
    "add": (S.add, [(0.3, -1.2), (2.0, 5.0)]),
    "add3": (lambda a, b, c: S.add(a, b, c), [(0.3, -1.2, 4.0)]),
    "sub": (S.sub, [(0.3, -1.2)]),
    "mul": (S.mul, [(0.3, -1.2), (-2.0, 0.5)]),
    "mul3": (lambda a, b, c: S.mul(a, b, c), [(0.3, -1.2, 2.5)]),
    "true_div": (S.true_div, [(0.3, -1.2), (2.0, 0.7)]),
    "mod": (S.mod, [(5.3, 2.1), (-5.3, 2.1)]),
    "pow": (S.pow, [(1.3, 2.2), (0.7, -1.5)]),
    "maximum": (S.maximum, [(0.3, -1.2), (-2.0, 3.0)]),
    "minimum": (S.minimum, [(0.3, -1.2), (-2.0, 3.0)]),
    "neg": (S.neg, [(0.7,)]),
    "abs_": (S.abs_, [(0.7,), (-1.3,)]),
    "sign": (S.sign, [(0.7,), (-1.3,)]),
    "sqr": (S.sqr, [(0.7,), (-1.3,)]),
    "exp": (S.exp, [(0.7,), (-2.3,)]),
    "log": (S.log, [(0.7,), (3.3,)]),
    "log1p": (S.log1p, [(0.7,), (-0.3,)]),
    "expm1": (S.expm1, [(0.7,), (-1e-3,)]),
    "sqrt": (S.sqrt, [(0.7,), (9.0,)]),
    "sin": (S.sin, [(0.7,), (-2.0,)]),
    "cos": (S.cos, [(0.7,), (-2.0,)]),
    "tan": (S.tan, [(0.7,), (-1.2,)]),
    "tanh": (S.tanh, [(0.7,), (-2.0,)]),
    "sigmoid": (S.sigmoid, [(0.7,), (-4.0,), (30.0,)]),
    "softplus": (S.softplus, [(0.7,), (-4.0,), (30.0,)]),
    "identity": (S.identity, [(0.7,)]),
    "cast": (S.Cast("float64"), [(0.7,)]),
    "switch_true": (lambda a, b: S.switch(True, a, b), [(0.7, 2.0)]),
    "switch_false": (lambda a, b: S.switch(False, a, b), [(0.7, 2.0)]),
}


class TestGrad:
    @pytest.mark.parametrize("name", sorted(GRAD_CASES))
    def test_grad_matches_finite_differences(self, name):
        fn, points = GRAD_CASES[name]
        n = len(points[0])
        inputs = [S.float64("x%d" % k) for k in range(n)]
        out = fn(*inputs)
        gz = S.float64("gz")
        grads = out.owner.op.grad(list(out.owner.inputs), [gz])
        grads = [g for g, v in zip(grads, out.owner.inputs, strict=True) if v in inputs]
        assert len(grads) == n
        for point in points:
            for k in range(n):
                assert grads[k] is not None
                givens = dict(zip(inputs, map(np.float64, point), strict=True))
                givens[gz] = np.float64(0.75)
                got = float(evaluate(grads[k], givens))
                want = 0.75 * _finite_difference(out, inputs, point, k)
                assert got == pytest.approx(want, rel=1e-5, abs=1e-7), (name, point, k)

    @pytest.mark.parametrize("name", ["add", "mul", "exp", "sigmoid", "pow", "maximum",
                                      "true_div", "tanh", "abs_", "sqr"])
    def test_float32_gradients_stay_float32(self, name):
        op = getattr(S, name)
        inputs = [S.float32("x%d" % k) for k in range(2 if op.nin in (2, -1) else 1)]
        grads = op.grad(inputs, [S.float32("gz")])
        assert [g.type for g in grads] == [S.float32] * len(inputs)

    def test_mixed_precision_gradients_cast_to_each_input(self):
        x, y = S.float32("x"), S.float64("y")
        gz = S.float64("gz")
        gx, gy = S.mul.grad([x, y], [gz])
        assert gx.type == S.float32 and gy.type == S.float64

    @pytest.mark.parametrize("op, dtypes", [
        (S.lt, ("float64", "float64")), (S.eq, ("float64", "float64")),
        (S.int_div, ("float64", "float64")), (S.and_, ("bool", "bool")),
        (S.invert, ("int8",)), (S.Cast("int8"), ("float64",))])
    def test_piecewise_constant_ops_give_zero_gradients(self, op, dtypes):
        inputs = [S.get_scalar_type(d)() for d in dtypes]
        grads = op.grad(inputs, [S.float64("gz")])
        assert len(grads) == len(inputs)
        assert all(g.type.grad_is_zero(g) and g.type.dtype in FLOATS for g in grads)

    @pytest.mark.parametrize("op, dtypes", [
        (S.add, ("int8", "float64")), (S.exp, ("int32",)), (S.mul, ("int64", "int64"))])
    def test_integer_inputs_get_float_gradients_as_if_real(self, op, dtypes):
        # Theano's convention; an op with integer outputs is zeroed by grad() itself
        inputs = [S.get_scalar_type(d)() for d in dtypes]
        grads = op.grad(inputs, [S.float64("gz")])
        for g in grads:
            assert g.type.dtype in FLOATS and not g.type.grad_is_zero(g)

    def test_switch_condition_has_a_zero_gradient(self):
        c, a, b = S.bool_("c"), S.float64("a"), S.float64("b")
        gc, ga, gb = S.switch.grad([c, a, b], [S.float64("gz")])
        assert gc.type.grad_is_zero(gc)
        assert not ga.type.grad_is_zero(ga) and not gb.type.grad_is_zero(gb)

    def test_core_grad_on_a_scalar_graph(self):
        x, y = S.float64("x"), S.float64("y")
        cost = S.exp(x) * S.sin(y) + x * x * y
        gx, gy = core_grad(cost, [x, y])
        vals = {x: np.float64(0.3), y: np.float64(-1.1)}
        assert float(evaluate(gx, vals)) == pytest.approx(
            math.exp(0.3) * math.sin(-1.1) + 2 * 0.3 * -1.1)
        assert float(evaluate(gy, vals)) == pytest.approx(math.exp(0.3) * math.cos(-1.1) + 0.09)

    def test_core_grad_sums_contributions_with_one_add(self):
        x = S.float32("x")
        g = core_grad(S.sin(x) + S.cos(x) + S.exp(x), x)
        assert g.type == S.float32

    def test_integer_cost_is_refused(self):
        i = S.int32("i")
        with pytest.raises(TypeError, match="int32"):
            core_grad(i * 2, i)


# ---------------------------------------------------------------------------
# errors


class TestErrors:
    def test_arity(self):
        x = S.float64("x")
        with pytest.raises(TypeError, match="add takes 2 or more inputs, got 1"):
            S.add(x)
        with pytest.raises(TypeError, match="exp takes 1 input, got 2"):
            S.exp(x, x)
        with pytest.raises(TypeError, match="true_div takes 2 inputs, got 3"):
            S.true_div(x, x, x)
        with pytest.raises(TypeError, match="switch takes 3 inputs, got 2"):
            S.switch(x, x)

    def test_non_numbers_name_the_op_and_argument(self):
        x = S.float64("x")
        with pytest.raises(TypeError, match=r"add: input 1: .*str 'a'"):
            S.add(x, "a")
        with pytest.raises(TypeError, match=r"exp: input 0: .*list"):
            S.exp([1.0])

    def test_unsupported_dtype_combinations_name_op_and_dtypes(self):
        with pytest.raises(TypeError, match=r"sub does not support inputs of dtype \(bool, bool\)"):
            S.sub(S.bool_(), S.bool_())
        with pytest.raises(TypeError, match=r"and_ .*float64"):
            S.and_(S.float64(), S.float64())
        with pytest.raises(TypeError, match="neg"):
            S.neg(S.bool_())

    def test_operators_with_foreign_objects(self):
        x = S.float64("x")
        with pytest.raises(TypeError):
            x + "a"
        with pytest.raises(TypeError):
            [1] * x

    def test_truth_value_is_refused(self):
        x = S.float64("x")
        with pytest.raises(TypeError, match="switch"):
            if x < 1:
                pass

    def test_op_without_nin(self):
        class NoNin(S.ScalarOp):
            def impl(self, a):
                return a

        with pytest.raises(TypeError, match="nin"):
            NoNin()(S.float64())

    def test_perform_without_impl(self):
        class NoImpl(S.ScalarOp):
            nin = 1

        node = NoImpl().make_node(S.float64())
        with pytest.raises(MethodNotDefined, match="noimpl"):
            run_node(node, [np.float64(1)])
        assert not NoImpl().has_c_code(node)


# ---------------------------------------------------------------------------
# ops as objects


class TestOpObjects:
    def test_names(self):
        names = {S.add: "add", S.sub: "sub", S.mul: "mul", S.true_div: "true_div",
                 S.int_div: "int_div", S.mod: "mod", S.pow: "pow", S.neg: "neg",
                 S.abs_: "abs", S.exp: "exp", S.sigmoid: "sigmoid", S.lt: "lt",
                 S.and_: "and_", S.invert: "invert", S.switch: "switch",
                 S.identity: "identity", S.Cast("float32"): "cast{float32}"}
        for op, name in names.items():
            assert str(op) == repr(op) == name

    def test_equality_by_class_and_props(self):
        assert S.Add() == S.add and hash(S.Add()) == hash(S.add)
        assert S.add != S.mul
        assert S.Cast("int8") == S.Cast(np.int8)
        assert S.Cast("int8") != S.Cast("int16")
        assert hash(S.Cast("int8")) == hash(S.Cast("int8"))

    def test_node_and_output_naming(self):
        x = S.float64("x")
        y = S.exp(x)
        assert repr(y) == "exp.0"
        assert y.owner.inputs == [x]

    def test_has_c_code(self):
        assert S.add.has_c_code(node_of(S.add, "int8", "int8"))
        assert S.Cast("int8").has_c_code(node_of(S.Cast("int8"), "float64"))

    def test_support_code_is_guarded(self):
        block = S.int_div.c_support_code()
        assert block == S.mod.c_support_code()
        assert block.startswith("#ifndef") and "nbg_" in block
        assert S.pow.c_support_code().startswith("#ifndef")

    def test_cast_helper(self):
        x = S.float32("x")
        assert S.cast(x, "float32") is x
        y = S.cast(x, "int16")
        assert y.type == S.int16 and y.owner.op == S.Cast("int16")
        c = S.cast(2.0, "float32")
        assert c.type == S.float32

    def test_nfunc_on_class_is_the_raw_function(self):
        assert S.Add.nfunc(np.int8(1), np.int8(2)) == 3
        assert S.Exp.nfunc is np.exp
        assert S.exp.nfunc(np.int8(1)).dtype == np.float16  # as NumPy
        assert "exp" in repr(S.exp.nfunc)


class TestOperators:
    @pytest.mark.parametrize("build, op", [
        (lambda x: x + 1, "add"), (lambda x: 1 + x, "add"), (lambda x: x - 1, "sub"),
        (lambda x: 1 - x, "sub"), (lambda x: x * 2, "mul"), (lambda x: 2 * x, "mul"),
        (lambda x: x / 2, "true_div"), (lambda x: 2 / x, "true_div"),
        (lambda x: x // 2, "int_div"), (lambda x: 2 // x, "int_div"),
        (lambda x: x % 2, "mod"), (lambda x: 2 % x, "mod"),
        (lambda x: x ** 2, "pow"), (lambda x: 2 ** x, "pow"),
        (lambda x: -x, "neg"), (lambda x: abs(x), "abs"),
        (lambda x: x < 1, "lt"), (lambda x: x <= 1, "le"), (lambda x: x > 1, "gt"),
        (lambda x: x >= 1, "ge"), (lambda x: 1 < x, "gt")])
    def test_operator_builds_op(self, build, op):
        x = S.float32("x")
        y = build(x)
        assert str(y.owner.op) == op
        assert x in y.owner.inputs
        expected = "bool" if op in ("lt", "le", "gt", "ge") else "float32"
        assert y.type.dtype == expected

    def test_reflected_operand_order(self):
        x = S.float64("x")
        y = 3 - x
        assert isinstance(y.owner.inputs[0], Constant) and y.owner.inputs[1] is x
        assert evaluate(y, {x: np.float64(1.0)}) == 2.0

    def test_numpy_scalars_are_strong(self):
        x = S.float32("x")
        y = np.float64(2) * x
        assert y.type == S.float64
        assert y.owner.inputs[0].type == S.float64 and y.owner.inputs[1] is x

    def test_bitwise_operators(self):
        i = S.int8("i")
        assert str((i & 3).owner.op) == "and_"
        assert str((3 | i).owner.op) == "or_"
        assert str((i ^ i).owner.op) == "xor"
        assert str((~i).owner.op) == "invert"

    def test_eq_keeps_identity(self):
        x = S.float64("x")
        assert (x == x) is True
        assert len({x, S.float64("x")}) == 2


# ---------------------------------------------------------------------------
# user-defined ops


class Hypot(S.ScalarOp):
    """A user op with just nin, nout, impl and c_code."""

    nin = 2
    nout = 1

    def impl(self, a, b):
        return math.hypot(a, b)

    def c_code(self, node, name, inputs, outputs, sub):
        return "%s = hypot(%s, %s);" % (outputs[0], inputs[0], inputs[1])


class DivMod(S.ScalarOp):
    """A user op with two outputs."""

    nin = 2
    nout = 2

    def impl(self, a, b):
        return divmod(a, b)


class Cube(S.ScalarOp):
    """A user op with a gradient."""

    nin = 1

    def impl(self, a):
        return a ** 3

    def grad(self, inputs, output_grads):
        (x,) = inputs
        return [output_grads[0] * 3 * x * x]


class TestUserOps:
    def test_minimal_subclass(self):
        op = Hypot()
        x = S.float64("x")
        node = op.make_node(x, 4.0)
        assert node.outputs[0].type == S.float64
        assert node.inputs[1].type == S.float64
        assert run_node(node, [np.float64(3.0), np.float64(4.0)]) == [5.0]
        assert str(op) == "hypot" and op == Hypot() and hash(op) == hash(Hypot())
        assert op.has_c_code(node)
        assert op.nfunc is None
        assert "hypot(a, b)" in op.c_code(node, "n", ["a", "b"], ["o"], {"fail": ""})

    def test_minimal_subclass_follows_dtypes(self):
        node = Hypot().make_node(S.float32("x"), S.float32("y"))
        assert node.outputs[0].type == S.float32
        (value,) = run_node(node, [np.float32(3), np.float32(4)])
        assert type(value) is np.float32 and value == 5
        assert Hypot().make_node(S.int8(), S.float32()).outputs[0].type == S.float32

    def test_two_outputs(self):
        a, b = S.int16("a"), S.int16("b")
        q, r = DivMod()(a, b)
        assert q.type == r.type == S.int16
        assert evaluate([q, r], {a: np.int16(-7), b: np.int16(2)}) == [-4, 1]

    def test_user_grad(self):
        x = S.float64("x")
        (g,) = core_grad(Cube()(x), [x])
        assert float(evaluate(g, {x: np.float64(2.0)})) == 12.0

    def test_user_op_with_nfunc_gets_numpy_dtypes(self):
        class Arctan2(S.ScalarOp):
            nin = 2
            nfunc = np.arctan2

        op = Arctan2()
        assert op.make_node(S.int8(), S.int8()).outputs[0].type == S.float16  # as NumPy
        assert op.make_node(S.int16(), S.int8()).outputs[0].type == S.float32
        got = op.nfunc(np.array([1, -1], np.int16), np.array([1, 1], np.int16))
        assert got.dtype == np.float32
        assert np.allclose(got, [math.pi / 4, -math.pi / 4])
        assert op.impl(np.float64(1), np.float64(1)) == pytest.approx(math.pi / 4)


# ---------------------------------------------------------------------------
# Composite


def _comp(scale=2.0, dtype="float64"):
    t = S.get_scalar_type(dtype)
    x, y = t("x"), t("y")
    return S.Composite([x, y], [x + y * scale])


class TestComposite:
    def test_str(self):
        assert str(_comp()) == "Composite{(x0 + (x1 * 2.0))}"
        x, i = S.float32("x"), S.int8("i")
        comp = S.Composite([x, i], [S.exp(x) - i, -x])
        assert str(comp) == "Composite{(exp(x0) - x1), -x0}"
        e = S.exp(x)
        shared = S.Composite([x], [e * e + S.Cast("float64")(e)])
        assert str(shared) == "Composite{t0 = exp(x0); ((t0 * t0) + cast{float64}(t0))}"
        assert repr(shared) == str(shared)

    def test_equality_and_hash_by_structure(self):
        a, b = _comp(), _comp()
        assert a == b and hash(a) == hash(b)
        assert a != _comp(3.0)
        assert a != _comp(dtype="float32")
        x, y = S.float64("x"), S.float64("y")
        assert a != S.Composite([x, y], [y + x * 2.0])
        assert a != S.Composite([y, x], [x + y * 2.0])
        assert len({a, b, _comp(3.0)}) == 2

    def test_equal_constants_need_not_be_the_same_object(self):
        x, y = S.float64("x"), S.float64("y")
        c = S.as_scalar(np.float64(2.0))
        shared = S.Composite([x], [x * c + x * c])
        distinct = S.Composite([y], [y * S.as_scalar(np.float64(2.0))
                                     + y * S.as_scalar(np.float64(2.0))])
        assert shared == distinct and distinct == shared
        assert hash(shared) == hash(distinct)

    def test_nin_nout_and_dtypes(self):
        x, i = S.float32("x"), S.int8("i")
        comp = S.Composite([x, i], [x * i, i + i])
        assert comp.nin == 2 and comp.nout == 2
        node = comp.make_node(S.float32(), S.int8())
        assert [o.type for o in node.outputs] == [S.float32, S.int8]

    def test_impl_and_nfunc_keep_inner_dtypes(self):
        i, j, x = S.int8("i"), S.int8("j"), S.float32("x")
        comp = S.Composite([i, j, x], [(i * j + 1) * x])
        with np.errstate(all="ignore"):
            want = (np.int8(100) * np.int8(3) + np.int8(1)) * np.float32(0.5)
        got = comp.impl(np.int8(100), np.int8(3), np.float32(0.5))
        assert type(got) is np.float32 and got == want == np.float32(22.5)
        arrays = comp.nfunc(np.array([100, 2], np.int8), np.int8(3), np.array([0.5, 2], np.float32))
        assert arrays.dtype == np.float32 and arrays.tolist() == [22.5, 14.0]
        node = comp.make_node(S.int8(), S.int8(), S.float32())
        assert run_node(node, [np.int8(100), np.int8(3), np.float32(0.5)]) == [22.5]

    def test_inner_graph_is_copied(self):
        x = S.float64("x")
        out = S.exp(x)
        comp = S.Composite([x], [out])
        assert comp.inputs[0] is not x and comp.outputs[0] is not out

    def test_output_may_be_an_input_or_constant(self):
        x = S.float64("x")
        comp = S.Composite([x], [x, S.as_scalar(np.float32(3.5))])
        assert comp.impl(np.float64(2)) == (2.0, 3.5)
        code = comp.c_code(None, "n", ["a"], ["o0", "o1"], {"fail": ""})
        assert "o0 = a;" in code and "0x1.c000000000000p+1f" in code

    def test_make_node_promotes_weak_and_checks_types(self):
        comp = _comp(dtype="float32")
        node = comp.make_node(S.float32("a"), 1.5)
        assert node.inputs[1].type == S.float32 and not node.inputs[1].weak
        with pytest.raises(TypeError, match=r"input 1 must be of type ScalarType\(float32\)"):
            comp.make_node(S.float32(), S.float64())
        with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
            comp.make_node(S.float32())

    def test_weak_int_must_fit_inner_dtype(self):
        i = S.int8("i")
        comp = S.Composite([i], [i + 1])
        with pytest.raises(ValueError, match="300"):
            comp.make_node(300)

    def test_construction_errors(self):
        x, y = S.float64("x"), S.float64("y")
        with pytest.raises(ValueError, match="y"):
            S.Composite([x], [x + y])
        with pytest.raises(TypeError, match="root"):
            S.Composite([S.exp(x)], [x])
        with pytest.raises(TypeError, match="scalar Variable"):
            S.Composite(["x"], [x])
        with pytest.raises(ValueError, match="distinct"):
            S.Composite([x, x], [x])
        with pytest.raises(ValueError, match="at least one output"):
            S.Composite([x], [])

    def test_grad(self):
        x, y = S.float64("x"), S.float64("y")
        comp = S.Composite([x, y], [S.exp(x) * y + x * x])
        a, b = S.float64("a"), S.float64("b")
        out = comp(a, b)
        ga, gb = core_grad(out, [a, b])
        vals = {a: np.float64(0.4), b: np.float64(-2.0)}
        assert float(evaluate(ga, vals)) == pytest.approx(math.exp(0.4) * -2.0 + 0.8)
        assert float(evaluate(gb, vals)) == pytest.approx(math.exp(0.4))

    def test_c_support_code_collects_each_block_once(self):
        i, j = S.int8("i"), S.int8("j")
        comp = S.Composite([i, j], [i // j + i % j, S.sigmoid(i) + (i // 2)])
        support = comp.c_support_code()
        assert support.count("#define NBG_DIVMOD_SUPPORT") == 1
        assert "nbg_sigmoid_float32" in support
        assert comp.c_headers() == ["math.h", "stdint.h"]
        assert comp.c_code_cache_version()
        assert comp.has_c_code(None)

    def test_without_c_code(self):
        x = S.float64("x")
        comp = S.Composite([x], [DivMod()(x, 2.0)[0] + 1])
        assert not comp.has_c_code(None)
        assert comp.c_code_cache_version() == ()
        assert comp.nfunc(np.array([7.0, -7.0])).tolist() == [4.0, -3.0]
        assert comp.impl(np.float64(7.0)) == 4.0

    def test_c_code_uses_fresh_names(self):
        x = S.float64("x")
        comp = S.Composite([x], [S.add(x, x, S.exp(x))])
        code = comp.c_code(None, "k7", ["in0"], ["out0"], {"fail": "return 1;"})
        assert "double k7_t" in code and code.count("{") == code.count("}")
        assert "out0 = k7_t" in code


SCALAR_MODULES = ["scalar", "scalar_type", "scalar_op", "scalar_ops", "scalar_logic",
                  "scalar_math", "scalar_composite"]


@pytest.mark.parametrize("module", SCALAR_MODULES)
def test_public_names_are_documented(module):
    import importlib

    mod = importlib.import_module("nbgraph.tensor." + module)
    assert mod.__doc__
    for name in mod.__all__:
        obj = getattr(mod, name)
        if isinstance(obj, (str, tuple, S.ScalarType)):
            continue
        assert (type(obj).__doc__ if isinstance(obj, S.ScalarOp) else obj.__doc__), name
