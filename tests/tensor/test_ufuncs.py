"""The math ufuncs of :mod:`nbgraph.tensor.ufuncs` against NumPy and SciPy.

For every op and every input dtype NumPy (or SciPy) accepts: the output
dtype is NumPy's (float16 included; the special functions follow
``np.exp``'s float rule), Python and C give NumPy's values on edge cases
(bit for bit for the exact ops, within a few ulps for the transcendental
ones, NaN and infinity positions exact), gradients match finite
differences, broadcasting and 0-size shapes follow NumPy (hypothesis), and
bad inputs are refused with a message naming the op.
"""

import os
import shlex
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor import scalar as ps, ufuncs as U
from nbgraph.tensor.scalar_op import element_code
from nbgraph.testing import verify_grad

sp = pytest.importorskip("scipy.special")

ALL = ["bool", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint64", "float32",
       "float64"]
FLOATS = ["float32", "float64"]


def _exp_rule(function):
    """SciPy's function, computed and rounded in the float dtype ``np.exp`` picks."""
    def ref(x):
        dtype = np.exp(np.ones((), x.dtype)).dtype
        with np.errstate(all="ignore"):
            return np.asarray(function(x.astype(np.float64))).astype(dtype)
    return ref


def _mpmath_ref(scipy_function, mp_function):
    """mpmath (30 digits) at finite points, SciPy's values at infinities, NaN and poles.

    SciPy is accurate to a few ulps almost everywhere, but not everywhere:
    erfcx for large negative x (~500 ulps), erfc deep in its tail, psi next
    to its negative poles (~1e-9 relative); mpmath is the reference.
    """
    def ref(x):
        mp = pytest.importorskip("mpmath")
        x = np.asarray(x, dtype=np.float64)
        out = np.array(scipy_function(x), dtype=np.float64)
        regular = np.isfinite(x) & np.isfinite(out)
        with mp.workdps(30):
            out[regular] = [float(mp_function(mp, mp.mpf(float(v)))) for v in x[regular]]
        return out
    ref.__name__ = scipy_function.__name__
    return ref


def _gammaln_scipy(x):
    return np.where(np.isneginf(x), np.inf, sp.gammaln(x))  # C99 lgamma(-inf) = +inf


_erf_ref = _mpmath_ref(sp.erf, lambda mp, v: mp.erf(v))
_erfc_ref = _mpmath_ref(sp.erfc, lambda mp, v: 0.0 if v > 30 else 2.0 if v < -10 else mp.erfc(v))
def _mp_erfcx(mp, v):
    if v < 1000:
        return mp.exp(v * v) * mp.erfc(v)
    t = 1 / (2 * v * v)  # asymptotic series: four terms reach 1e-25 from v = 1000 on
    return (1 - t + 3 * t ** 2 - 15 * t ** 3 + 105 * t ** 4) / (v * mp.sqrt(mp.pi))


_erfcx_ref = _mpmath_ref(sp.erfcx, _mp_erfcx)
_erfinv_ref = _mpmath_ref(sp.erfinv, lambda mp, v: mp.erfinv(v) if abs(v) < 1 else sp.erfinv(
    float(v)))
_gammaln_ref = _mpmath_ref(_gammaln_scipy, lambda mp, v: mp.re(mp.loggamma(v)))
_digamma_ref = _mpmath_ref(sp.psi, lambda mp, v: mp.digamma(v))


def _round_away(x):
    if x.dtype.kind != "f":
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


# name -> (nbgraph function, oracle, ulps allowed for floats, differentiable)
UNARY = {
    "floor": (U.floor, np.floor, 0, True),
    "ceil": (U.ceil, np.ceil, 0, True),
    "trunc": (U.trunc, np.trunc, 0, True),
    "round": (U.round, np.round, 0, True),
    "round_away": (lambda x: U.round(x, "half_away_from_zero"), _round_away, 0, True),
    "sign": (U.sign, np.sign, 0, True),
    "isnan": (U.isnan, np.isnan, 0, False),
    "isinf": (U.isinf, np.isinf, 0, False),
    "isfinite": (U.isfinite, np.isfinite, 0, False),
    "reciprocal": (U.reciprocal, np.reciprocal, 0, True),
    "square": (U.square, np.square, 0, True),
    "deg2rad": (U.deg2rad, np.deg2rad, 0, True),
    "rad2deg": (U.rad2deg, np.rad2deg, 0, True),
    "log2": (U.log2, np.log2, 2, True),
    "log10": (U.log10, np.log10, 2, True),
    "exp2": (U.exp2, np.exp2, 2, True),
    "arcsin": (U.arcsin, np.arcsin, 2, True),
    "arccos": (U.arccos, np.arccos, 2, True),
    "arctan": (U.arctan, np.arctan, 2, True),
    "sinh": (U.sinh, np.sinh, 2, True),
    "cosh": (U.cosh, np.cosh, 2, True),
    "arcsinh": (U.arcsinh, np.arcsinh, 2, True),
    "arccosh": (U.arccosh, np.arccosh, 2, True),
    "arctanh": (U.arctanh, np.arctanh, 2, True),
    "erf": (U.erf, _exp_rule(_erf_ref), 2, True),
    "erfc": (U.erfc, _exp_rule(_erfc_ref), 4, True),
    "erfcx": (U.erfcx, _exp_rule(_erfcx_ref), 4, True),
    "erfinv": (U.erfinv, _exp_rule(_erfinv_ref), 4, True),
    "gammaln": (U.gammaln, _exp_rule(_gammaln_ref), 8, True),
    "digamma": (U.digamma, _exp_rule(_digamma_ref), 12, False),
}

BINARY = {
    "arctan2": (U.arctan2, np.arctan2, 2),
    "hypot": (U.hypot, np.hypot, 1),
    "logaddexp": (U.logaddexp, np.logaddexp, 2),
    "copysign": (U.copysign, np.copysign, 0),
    "nextafter": (U.nextafter, np.nextafter, 0),
    "left_shift": (U.left_shift, np.left_shift, 0),
    "right_shift": (U.right_shift, np.right_shift, 0),
}


def edge_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in FLOATS:
        base = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1.0, -1.0, 0.25, -0.75, 0.999,
                -0.9999999, 1e-8, -1e-300, 3.0, -3.0, 7.2, -7.5, 12.5, 26.0, -26.0, 30.0,
                100.0, -100.5, 1e10, 1e30, -1e30, 1.4616321449683622, 1.3, 1.7, -0.5043,
                np.pi, 710.0, -710.0, np.inf, -np.inf, np.nan,
                float(np.finfo(dtype).max), float(np.finfo(dtype).tiny)]
        return np.array(base, dtype=dtype)
    info = np.iinfo(dtype)
    base = [0, 1, 2, 3, 5, 7, 8, 10, 31, 63, 64, 100, info.max, info.max - 1, info.min,
            info.min + 1, -1, -2, -3, -8, -100]
    return np.array(sorted({v for v in base if info.min <= v <= info.max}), dtype=dtype)


def expected_dtype(dtype):
    return np.dtype(dtype).name


def _ordered(a):
    """Floats as int64s whose order and spacing follow the floats (exactly: no float rounding)."""
    signed = {8: np.int64, 4: np.int32, 2: np.int16}[a.dtype.itemsize]
    ints = a.view(signed).astype(np.int64)
    low = np.int64(np.iinfo(signed).min)
    return np.where(ints < 0, low - ints, ints)


def _ulp_distance(g, w):
    og, ow = _ordered(g), _ordered(w)
    with np.errstate(all="ignore"):
        return np.where((og >= 0) == (ow >= 0), np.abs(og - ow), np.int64(2) ** 62)


def assert_close_ulps(got, want, ulps, context, atol=0.0):
    assert got.dtype == want.dtype, "%s: dtype %s, want %s" % (context, got.dtype, want.dtype)
    assert got.shape == want.shape, context
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=context)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=context + " (NaN)")
    ok = ~np.isnan(got)
    g, w = got[ok], want[ok]
    inf = np.isinf(g) | np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=context + " (inf)")
    if ulps == 0:
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        assert same.all(), "%s: got %r, want %r" % (context, g[~same][:5], w[~same][:5])
        return
    dist = _ulp_distance(g, w)
    tiny = np.abs(g.astype(np.float64) - w) <= max(atol, 4 * np.finfo(g.dtype).tiny)
    bad = (dist > ulps) & ~tiny
    assert not bad.any(), "%s: %d values off by more than %d ulps: got %r, want %r" % (
        context, bad.sum(), ulps, g[bad][:5], w[bad][:5])


def _supported(function, dtype):
    try:
        function(nt.tensor(dtype, (None,)))
        return True
    except TypeError:
        return False


def _oracle(oracle, *arrays):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(oracle(*arrays))


def _numpy_accepts(oracle, *dtypes):
    try:
        _oracle(oracle, *[np.ones(1, d) for d in dtypes])
        return True
    except TypeError:
        return False


UNARY_CASES = [(name, d) for name, (f, o, _, _) in UNARY.items() for d in ALL
               if _numpy_accepts(o, d)]
BINARY_CASES = [(name, d) for name, (f, o, _) in BINARY.items() for d in ALL
                if _numpy_accepts(o, d, d)]


def _unary_mask(name, x):
    """The inputs compared: NumPy's platform-defined corners left out."""
    if name == "reciprocal" and x.dtype.kind != "f":
        return x != 0  # integer 1 // 0 is platform-defined in NumPy
    if name == "gammaln" and x.dtype.kind == "f":
        return x > -1e20  # SciPy's gammaln far below zero: its own convention
    return np.ones(x.shape, bool)


#: absolute errors allowed besides the ulps: near a root the relative error of
#: lgamma (C library and SciPy alike) and digamma grows.
ATOL = {"gammaln": 1e-15, "digamma": 1e-15}


def _binary_inputs(dtype):
    v = edge_values(dtype)
    return [g.ravel() for g in np.meshgrid(v, v, indexing="ij")]


def _all_cases():
    """(key, output variable, input values) for every case checked against the oracle."""
    cases = []
    for dtype in ALL:
        x = nt.tensor(dtype, (None,))
        a, b = nt.tensor(dtype, (None,)), nt.tensor(dtype, (None,))
        for name, d in UNARY_CASES:
            if d == dtype:
                cases.append(((name, dtype), UNARY[name][0](x), [edge_values(dtype)]))
        for name, d in BINARY_CASES:
            if d == dtype:
                cases.append(((name, dtype), BINARY[name][0](a, b), _binary_inputs(dtype)))
        xs = [nt.tensor(dtype, (None,)) for _ in range(3)]
        cases.append((("clip", dtype), U.clip(*xs), _clip_inputs(dtype)))
    for name, dtypes in MIXED_CASES:
        xa, xb = nt.tensor(dtypes[0], (None,)), nt.tensor(dtypes[1], (None,))
        cases.append(((name, dtypes), BINARY[name][0](xa, xb), _mixed_inputs(dtypes)))
    for name, lo, hi in SWEEPS:
        cases.append((("sweep", name, lo, hi), UNARY[name][0](nt.dvector()), [_sweep(lo, hi)]))
    return cases


def _run_python(cases):
    """Each case through Elemwise.perform (the "py" linker's path)."""
    out = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for key, var, values in cases:
            node = var.owner
            storage = [[None]]
            node.op.perform(node, values, storage)
            out[key] = storage[0][0]
    return out


def _run_c(cases, workdir):
    """Each case's scalar C code in a plain loop, all compiled into one library.

    (A compiled function holding every case would also build each kernel's
    parallel and strided paths: minutes of compiler time for ~500 kernels.
    The C linker itself runs these ops in the debug-linker test below.)
    """
    cffi = pytest.importorskip("cffi")
    cc = shlex.split(os.environ.get("CC", "") or "") or [shutil.which("cc") or "gcc"]
    support, decls, bodies, built = [], [], [], []
    for key, var, values in cases:
        k = len(built)
        node = var.owner.op.scalar_op.make_node(*[ps.get_scalar_type(v.dtype)() for v in values])
        if not node.op.c_handles_restricted(node):
            continue  # runs in Python (float16 nextafter): no C to check
        code = element_code(node.op, node, "n%d" % k, ["x%d" % j for j in range(len(values))],
                            ["y"], {"fail": "return 1;"})
        block = node.op.c_support_code(node)
        if block and block not in support:
            support.append(block)
        args = "".join(", const %s *in%d" % (v.type.c_type, j) for j, v in enumerate(node.inputs))
        decl = "int kernel%d(long n%s, %s *out)" % (k, args, node.outputs[0].type.c_type)
        loads = " ".join("%s x%d = in%d[i];" % (v.type.c_type, j, j)
                         for j, v in enumerate(node.inputs))
        bodies.append("%s {\n long i;\n for (i = 0; i < n; i++) {\n %s %s y;\n{%s}\n"
                      " out[i] = y; }\n return 0; }" % (decl, loads,
                                                          node.outputs[0].type.c_type, code))
        decls.append(decl.replace("_Float16", "uint16_t") + ";")  # cffi has no _Float16
        built.append((key, values, node))
    src = workdir / "ufuncs.c"
    src.write_text("#include <math.h>\n#include <stdint.h>\n" + "\n".join(support + bodies))
    lib = workdir / "ufuncs.so"
    proc = subprocess.run(cc + ["-O1", "-fPIC", "-std=gnu11", "-shared", "-o", str(lib), str(src),
                                "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ffi = cffi.FFI()
    ffi.cdef("\n".join(decls))
    library = ffi.dlopen(str(lib))
    out = {}
    for k, (key, values, node) in enumerate(built):
        arrays = [np.ascontiguousarray(v) for v in values]
        result = np.zeros(len(arrays[0]), node.outputs[0].type.dtype)
        ptrs = [ffi.from_buffer(_cffi_type(v), a) for a, v in zip(arrays, node.inputs, strict=True)]
        status = getattr(library, "kernel%d" % k)(
            len(result), *ptrs, ffi.from_buffer(_cffi_type(node.outputs[0]), result))
        assert status == 0, key
        out[key] = result
    return out


def _cffi_type(var):
    return "%s[]" % var.type.c_type.replace("_Float16", "uint16_t")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = _all_cases()
    out = {"py": _run_python(cases)}
    if os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc"):
        out["c"] = _run_c(cases, tmp_path_factory.mktemp("ufuncs"))
    return out


@pytest.mark.parametrize("name,dtype", UNARY_CASES)
def test_unary_dtype_and_values_follow_the_oracle(results, name, dtype):
    function, oracle, ulps, _ = UNARY[name]
    x = edge_values(dtype)
    want = _oracle(oracle, x)
    out = function(nt.tensor(dtype, (None,)))
    assert out.dtype == expected_dtype(want.dtype)
    keep = _unary_mask(name, x)
    for linker, table in results.items():
        if (name, dtype) not in table:
            continue  # no C for this node (it runs in Python)
        got = table[(name, dtype)]
        assert_close_ulps(got[keep], want.astype(out.dtype)[keep], ulps,
                          "%s(%s) %s" % (name, dtype, linker), ATOL.get(name, 0.0))


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary_dtype_and_values_follow_numpy(results, name, dtype):
    function, oracle, ulps = BINARY[name]
    a, b = _binary_inputs(dtype)
    want = _oracle(oracle, a, b)
    out = function(nt.tensor(dtype, (None,)), nt.tensor(dtype, (None,)))
    assert out.dtype == expected_dtype(want.dtype)
    for linker, table in results.items():
        if (name, dtype) not in table:
            continue  # no C for this node (it runs in Python)
        _check_binary(name, table[(name, dtype)], want.astype(out.dtype), ulps, a, b,
                      "%s(%s) %s" % (name, dtype, linker))


def _check_binary(name, got, want, ulps, a, b, context):
    if name == "logaddexp" and got.dtype.kind == "f":
        # x + log1p(exp(y - x)) cancels when the result is much smaller than the
        # operands: NumPy's and C's float32 log1p differ by an ulp there, which
        # the cancellation scales up.  Compare relative to the operands.
        with np.errstate(all="ignore"):
            scale = np.maximum(np.abs(a), np.abs(b)).astype(np.float64)
            finite = np.isfinite(want) & np.isfinite(scale)
            err = np.abs(got.astype(np.float64) - want)
        assert_close_ulps(got[~finite], want[~finite], ulps, context)
        assert (err[finite] <= 4 * np.finfo(got.dtype).eps * np.maximum(scale[finite], 1e-30)
                ).all() or np.array_equal(got[finite], want[finite]), context
        return
    assert_close_ulps(got, want, ulps, context)


MIXED = [("int8", "uint8"), ("int16", "float32"), ("float32", "float64"), ("uint8", "int64")]
MIXED_CASES = [(name, d) for name in ["arctan2", "hypot", "logaddexp", "copysign", "left_shift"]
               for d in MIXED if _numpy_accepts(BINARY[name][1], *d)]


def _mixed_inputs(dtypes):
    a = edge_values(dtypes[0])
    return [a, np.resize(edge_values(dtypes[1]), a.shape)]


def _clip_inputs(dtype):
    v = edge_values(dtype)
    rng = np.random.default_rng(0)
    return [v, rng.choice(v, v.size), rng.choice(v, v.size)]


@pytest.mark.parametrize("name,dtypes", MIXED_CASES)
def test_binary_mixed_dtypes(results, name, dtypes):
    function, oracle, ulps = BINARY[name]
    want = _oracle(oracle, *_mixed_inputs(dtypes))
    out = function(nt.tensor(dtypes[0], (None,)), nt.tensor(dtypes[1], (None,)))
    assert out.dtype == expected_dtype(want.dtype)
    for linker, table in results.items():
        _check_binary(name, table[(name, dtypes)], want.astype(out.dtype), ulps,
                      *_mixed_inputs(dtypes), "%s%s %s" % (name, dtypes, linker))


def test_mixed_dtypes_numpy_refuses_are_refused():
    with pytest.raises(TypeError, match="left_shift"):
        U.left_shift(nt.tensor("int16", (None,)), nt.tensor("float32", (None,)))


@pytest.mark.parametrize("dtype", ALL)
def test_clip_follows_numpy_with_nan_bounds(results, dtype):
    want = _oracle(np.clip, *_clip_inputs(dtype))
    assert U.clip(*[nt.tensor(dtype, (None,)) for _ in range(3)]).dtype == want.dtype.name
    for linker, table in results.items():
        assert_close_ulps(table[("clip", dtype)], want, 0, "clip(%s) %s" % (dtype, linker))


def test_clip_with_python_bounds_keeps_float32():
    x = nt.fvector("x")
    out = U.clip(x, 0, 1.5)
    assert out.dtype == "float32"
    v = np.array([-1, 0.5, 3, np.nan], np.float32)
    np.testing.assert_array_equal(out.eval({x: v}), np.clip(v, 0, 1.5))


# -- special functions against SciPy and mpmath on wide sweeps --------------------


def test_scipy_agrees_with_mpmath_where_we_compare():
    """The oracle itself: SciPy's special functions against 30-digit mpmath."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    xs = [0.1, 0.7, 1.4616, 3.3, 9.5, 27.0]
    for x in xs:
        assert abs(sp.erfcx(x) - float(mp.exp(x * x) * mp.erfc(x))) <= 4e-16 * sp.erfcx(x)
        assert abs(sp.psi(x) - float(mp.digamma(x))) <= 1e-15 * max(1, abs(sp.psi(x))) + 1e-17
        assert abs(sp.gammaln(x) - float(mp.loggamma(x))) <= 1e-15 * max(1, abs(sp.gammaln(x)))
    for y in [-0.999999, -0.3, 1e-10, 0.5, 0.9999999999]:
        assert abs(sp.erfinv(y) - float(mp.erfinv(y))) <= 4e-16 * abs(sp.erfinv(y))


SWEEPS = [
    ("erfcx", -26.6, 50.0), ("erfcx", 1e3, 1e300), ("erfinv", -1.0, 1.0),
    ("gammaln", 1e-10, 1e5), ("gammaln", -50.5, -0.01), ("digamma", 1e-8, 1e6),
    ("digamma", -30.3, -0.01), ("digamma", 1.2, 1.75), ("erf", -6, 6), ("erfc", -6, 27)]


def _sweep(lo, hi):
    if lo > 0 and hi / lo > 1e3:
        return np.geomspace(lo, hi, 2001)
    return np.linspace(lo, hi, 2001)


@pytest.mark.parametrize("name,lo,hi", SWEEPS)
def test_special_functions_on_sweeps(results, name, lo, hi):
    ulps = UNARY[name][2]
    want = _oracle(UNARY[name][1], _sweep(lo, hi))
    for linker, table in results.items():
        got = table[("sweep", name, lo, hi)]
        if name in ("digamma", "gammaln") and lo < 0:
            # near the negative roots only the absolute error is small
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
            continue
        assert_close_ulps(got, want, ulps, "%s on [%g, %g] %s" % (name, lo, hi, linker),
                          ATOL.get(name, 0.0))


def test_special_edge_values():
    x = nt.dvector("x")
    v = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(U.digamma(x).eval({x: v}),
                                      [-np.inf, np.inf, np.nan, np.nan, np.inf, np.nan, np.nan])
        np.testing.assert_array_equal(U.gammaln(x).eval({x: v}),
                                      [np.inf, np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
    y = np.array([1.0, -1.0, 1.5, 0.0, -0.0, np.nan])
    got = U.erfinv(x).eval({x: y})
    np.testing.assert_array_equal(got, [np.inf, -np.inf, np.nan, 0.0, -0.0, np.nan])
    assert np.signbit(got[4])
    np.testing.assert_array_equal(U.erfcx(x).eval({x: np.array([np.inf, -np.inf, -27.0])}),
                                  [0.0, np.inf, np.inf])


# -- gradients --------------------------------------------------------------------

GRAD_POINTS = {
    "arcsin": [-0.6, 0.1, 0.7], "arccos": [-0.6, 0.1, 0.7], "arctanh": [-0.6, 0.1, 0.7],
    "erfinv": [-0.6, 0.1, 0.7], "arccosh": [1.5, 2.0, 3.5], "log2": [0.3, 1.5, 4.0],
    "log10": [0.3, 1.5, 4.0], "gammaln": [0.3, 1.5, 4.0], "reciprocal": [0.3, -1.5, 4.0],
    "floor": [0.3, -1.4, 4.2], "ceil": [0.3, -1.4, 4.2], "trunc": [0.3, -1.4, 4.2],
    "round": [0.3, -1.4, 4.2], "round_away": [0.3, -1.4, 4.2], "sign": [0.3, -1.4, 4.2],
}


@pytest.mark.parametrize("name", [n for n, (_, _, _, d) in UNARY.items() if d])
def test_unary_gradients(name):
    function = UNARY[name][0]
    point = np.array(GRAD_POINTS.get(name, [-0.8, 0.3, 1.1]))
    verify_grad(function, [point])


@pytest.mark.parametrize("name", ["arctan2", "hypot", "logaddexp", "copysign", "nextafter"])
def test_binary_gradients(name):
    function = BINARY[name][0]
    verify_grad(function, [np.array([0.5, -1.2, 2.0]), np.array([1.5, 0.7, -0.4])])


def test_clip_gradient_goes_to_the_active_argument():
    verify_grad(U.clip, [np.array([-2.0, 0.3, 5.0, 0.5]), np.array([-1.0, 0.0, 0.0, 2.0]),
                         np.array([1.0, 1.0, 1.0, 1.0])])


def test_digamma_says_it_has_no_gradient():
    x = nt.dscalar("x")
    with pytest.raises(Exception, match="digamma"):
        nbgraph.grad(U.digamma(x), x)


# -- debug linker, shapes, bad input ---------------------------------------------


@pytest.mark.needs_cc
def test_python_and_c_agree_under_the_debug_linker():
    x, y = nt.dmatrix("x"), nt.dvector("y")
    outs = [f(x) for f, _, _, _ in UNARY.values()] + [f(x, y) for name, (f, _, _) in
                                                      BINARY.items() if "shift" not in name]
    outs.append(U.clip(x, -0.5, y))
    f = nbgraph.function([x, y], outs, linker="debug")
    rng = np.random.default_rng(1)
    xv = rng.uniform(-0.99, 0.99, (3, 4))
    with np.errstate(all="ignore"):
        f(xv, rng.uniform(-2, 2, 4))
    i, j = nt.lmatrix("i"), nt.lvector("j")
    g = nbgraph.function([i, j], [U.left_shift(i, j), U.right_shift(i, j)], linker="debug")
    g(rng.integers(-100, 100, (3, 4)), np.array([0, 3, 63, 70]))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["arctan2", "hypot", "logaddexp", "copysign"]),
       st.sampled_from([((2, 3), (3,)), ((0, 3), (1, 3)), ((4, 1), (1, 5)), ((), (2,)),
                        ((1, 0), (3, 1))]),
       st.sampled_from(["float32", "float64", "int16"]), st.integers(0, 2**32 - 1))
def test_broadcasting_and_zero_size_follow_numpy(name, shapes, dtype, seed):
    function, oracle, ulps = BINARY[name]
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shapes[0]) * 10).astype(dtype)
    b = (rng.standard_normal(shapes[1]) * 10).astype(dtype)
    xa, xb = nt.tensor(dtype, (None,) * a.ndim), nt.tensor(dtype, (None,) * b.ndim)
    got = nbgraph.function([xa, xb], function(xa, xb), linker="py")(a, b)
    want = _oracle(oracle, a, b)
    assert_close_ulps(got, want.astype(got.dtype), ulps, name)


def test_bad_inputs_are_refused_with_the_op_named():
    with pytest.raises(TypeError, match="left_shift"):
        U.left_shift(nt.dvector("x"), 2)
    with pytest.raises(TypeError, match="right_shift"):
        U.right_shift(nt.lvector("x"), nt.fvector("y"))
    with pytest.raises(ValueError, match="mode"):
        U.round(nt.dvector("x"), "banker")
    with pytest.raises(TypeError, match="sign"):
        U.sign(nt.bvector("b").astype("bool"))
    with pytest.raises(TypeError):
        U.clip(nt.dvector("x"), 0)
    with pytest.raises(ValueError, match="broadcast|shape"):
        U.hypot(nt.tensor("float64", (2,)), nt.tensor("float64", (3,)))


def test_reachable_from_nbgraph_tensor():
    for name in U.__all__:
        assert getattr(nt, name) is getattr(U, name)
    x = nt.lvector("x")
    assert (x << 2).owner.op == U.left_shift
    assert (x >> 1).owner.op == U.right_shift
