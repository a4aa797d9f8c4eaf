"""NumPy's promotion with float16, complex and Python numbers, held exhaustively (issue 21).

NumPy makes float16 of float16 operands *and* of bools and 8-bit integers in
its float functions (``np.exp`` of an int8 is float16; ``float16 + int8`` is
float16).  nbgraph's dtypes must be NumPy's for every pair of the 14
supported dtypes, for Python numbers on either side (weak, NEP 50), and for
every float function of one or two operands; the float16 results must be
NumPy's values (computed in float32 and rounded: at most one float16 ulp from
NumPy's own loops, which differ by SIMD level) in every linker.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from ulps import assert_ulp_close

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
BINARY = [("add", nt.add, np.add), ("mul", nt.mul, np.multiply), ("sub", nt.sub, np.subtract),
          ("true_div", nt.true_div, np.true_divide), ("maximum", nt.maximum, np.maximum),
          ("pow", nt.pow, np.power), ("arctan2", nt.arctan2, np.arctan2),
          ("hypot", nt.hypot, np.hypot), ("logaddexp", nt.logaddexp, np.logaddexp),
          ("copysign", nt.copysign, np.copysign), ("int_div", nt.int_div, np.floor_divide),
          ("mod", nt.mod, np.remainder), ("lt", nt.lt, np.less)]
UNARY = [(name, getattr(nt, name), getattr(np, numpy_name)) for name, numpy_name in [
    ("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"), ("sqrt", "sqrt"),
    ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"), ("arcsin", "arcsin"),
    ("arctan", "arctan"), ("sinh", "sinh"), ("log2", "log2"), ("log10", "log10"),
    ("exp2", "exp2"), ("reciprocal", "reciprocal"), ("deg2rad", "deg2rad"),
    ("floor", "floor"), ("sign", "sign"), ("square", "square"), ("isnan", "isnan"),
    ("neg", "negative"), ("abs", "absolute")]]
PYTHON_NUMBERS = [True, 3, -2, 2.5, 1.5j]


def _numpy_dtype(ufunc, *operands):
    """NumPy's result dtype on these operands (arrays or Python numbers), or None if refused."""
    with np.errstate(all="ignore"):
        try:
            return np.asarray(ufunc(*operands)).dtype.name
        except (TypeError, ValueError, OverflowError):
            return None


def _ones(dtype):
    return np.ones(2, dtype=dtype)


def _check(build, want, *operands):
    if want is None:
        with pytest.raises((TypeError, ValueError)):
            build(*operands)
        return
    assert build(*operands).dtype == want


@pytest.mark.parametrize("a", DTYPES)
def test_every_dtype_pair_promotes_as_numpy(a):
    x = nt.tensor(a, (None,), "x")
    for b in DTYPES:
        y = nt.tensor(b, (None,), "y")
        assert (x + y).dtype == np.result_type(a, b).name, (a, b)
        for name, build, ufunc in BINARY:
            want = _numpy_dtype(ufunc, _ones(a), _ones(b))
            try:
                _check(build, want, x, y)
            except AssertionError as exc:
                raise AssertionError("%s(%s, %s): %s" % (name, a, b, exc)) from None


@pytest.mark.parametrize("a", DTYPES)
def test_python_numbers_on_either_side_are_weak_as_in_nep_50(a):
    x = nt.tensor(a, (None,), "x")
    for number in PYTHON_NUMBERS:
        for name, build, ufunc in BINARY[:6]:
            if name == "pow" and number == -2:
                continue  # NumPy refuses integers to negative powers at run time only
            for operands, numpy_operands in [((x, number), (_ones(a), number)),
                                             ((number, x), (number, _ones(a)))]:
                want = _numpy_dtype(ufunc, *numpy_operands)
                try:
                    _check(build, want, *operands)
                except AssertionError as exc:
                    raise AssertionError("%s%r: %s" % (name, numpy_operands, exc)) from None


@pytest.mark.parametrize("a", DTYPES)
def test_float_functions_of_one_operand_give_numpys_dtype(a):
    x = nt.tensor(a, (None,), "x")
    for name, build, ufunc in UNARY:
        try:
            _check(build, _numpy_dtype(ufunc, _ones(a)), x)
        except AssertionError as exc:
            raise AssertionError("%s(%s): %s" % (name, a, exc)) from None


def test_the_float16_results_of_small_integers():
    # the cases the issue names, spelled out
    b, i8, u8, i16 = (nt.tensor(d, (None,)) for d in ("bool", "int8", "uint8", "int16"))
    h = nt.tensor("float16", (None,))
    assert [v.dtype for v in (nt.exp(i8), nt.sqrt(u8), nt.sin(b), h + i8, h * u8, h - b,
                              nt.arctan2(i8, u8), nt.exp(i16), h + i16, i8 / i8)] == [
        "float16", "float16", "float16", "float16", "float16", "float16", "float16",
        "float32", "float32", "float64"]


SMALL = ["bool", "int8", "uint8", "float16"]
# (name, build, NumPy, ulps of float16): exact ops bit for bit, libm ones within 1
VALUE_OPS = [("exp", nt.exp, np.exp, 1, 1), ("sqrt", nt.sqrt, np.sqrt, 1, 0),
             ("sin", nt.sin, np.sin, 1, 1), ("tanh", nt.tanh, np.tanh, 1, 1),
             ("log1p", nt.log1p, np.log1p, 1, 1), ("add", nt.add, np.add, 2, 0),
             ("mul", nt.mul, np.multiply, 2, 0), ("arctan2", nt.arctan2, np.arctan2, 2, 1),
             ("hypot", nt.hypot, np.hypot, 2, 0), ("nextafter", nt.nextafter, np.nextafter, 2, 0)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("linker", ["py", "c", "cvm", "debug"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_index=st.integers(0, len(VALUE_OPS) - 1), dtypes=st.tuples(*[st.sampled_from(SMALL)] * 2),
       seed=st.integers(0, 2**32 - 1))
def test_float16_values_of_small_integers_are_numpys_in_every_linker(linker, op_index, dtypes,
                                                                    seed):
    name, build, ufunc, arity, ulps = VALUE_OPS[op_index]
    rng = np.random.default_rng(seed)
    values = [(rng.standard_normal(7) * 40).clip(-128, 127).astype(d) for d in dtypes[:arity]]
    if name in ("sqrt", "log1p"):
        values = [np.abs(v) if v.dtype.kind != "b" else v for v in values]
    symbols = [nt.tensor(d, (None,), "x%d" % k) for k, d in enumerate(dtypes[:arity])]
    with np.errstate(all="ignore"):
        want = ufunc(*values)
    out = build(*symbols)
    assert out.dtype == want.dtype.name
    try:
        f = ng.function(symbols, out, linker=linker)
    except ng.linkers.c.linker.CLinkerRefusal as exc:  # nextafter of float16: Python only
        assert linker == "c" and name == "nextafter" and "runs in Python" in str(exc)
        return
    assert_ulp_close(f(*values), want, ulps, "%s%s %s" % (name, dtypes[:arity], linker))


def test_float16_of_small_integers_runs_in_c():
    i8, u8 = nt.tensor("int8", (None,), "i"), nt.tensor("uint8", (None,), "u")
    f = ng.function([i8, u8], [nt.exp(i8) * u8, nt.sqrt(u8)], linker="cvm")
    f.program.wait_compiled()  # cvm compiles in the background, running Python meanwhile
    assert set(f.program.kinds) == {"c"}
    iv, uv = np.arange(-5, 5, dtype="int8"), np.arange(10, dtype="uint8")
    got = f(iv, uv)
    assert_ulp_close(got[0], np.exp(iv) * uv, 1, "exp(i) * u")
    assert_ulp_close(got[1], np.sqrt(uv), 0, "sqrt(u)")
