"""The scalar ops' C code, compiled with the real C compiler, against NumPy.

One shared library holds a kernel per (op, input dtypes) case: a loop that
reads input arrays, runs the op's ``c_code`` on each element (through
``element_code``: float16 results, as NumPy gives them for bools and 8-bit
integers, are computed in float32 and rounded) and writes the outputs.  It is
compiled once per test module with ``-O2 -fPIC -std=gnu11`` (for ``_Float16``)
(no ``-ffast-math``), in a few translation units built in parallel, linked
with ``-shared -lm`` and loaded through cffi's ABI mode.  Integer and exact
float ops must match NumPy bit for bit; transcendental functions within a
few ulps (NumPy uses its own SIMD versions of some of them), with NaN and
infinity positions exact.
"""

import functools
import os
import platform
import shlex
import shutil
import subprocess
import sys
import zlib

import numpy as np
import pytest
from ulps import numpy_tolerance, ordered

sys.modules.get("nbgraph.tensor.scalar") or __import__("nbgraph.tensor.scalar")
S = sys.modules["nbgraph.tensor.scalar"]
from nbgraph.tensor.scalar_op import element_code  # noqa: E402

cffi = pytest.importorskip("cffi")

pytestmark = pytest.mark.needs_cc

ALL = S.all_dtypes
INTS = S.int_dtypes + S.uint_dtypes
FLOATS = S.float_dtypes


# ---------------------------------------------------------------------------
# input values


def _int_values(dtype):
    info = np.iinfo(dtype)
    base = [0, 1, -1, 2, -2, 3, -3, 5, -5, 7, -7, 10, -10, 100, -100, 127, -128, 255, 1000,
            -1000, 65535, -32768, 2**31 - 1, -2**31, 2**32 - 1, 2**40 + 3, -(2**40) - 3,
            info.min, info.min + 1, info.max, info.max - 1, info.max // 2, info.max // 2 + 1]
    rng = np.random.default_rng(zlib.crc32(dtype.encode()))
    base += [int(v) for v in rng.integers(info.min, info.max, size=8, dtype=dtype,
                                           endpoint=True)]
    kept = sorted({v for v in base if info.min <= v <= info.max})
    return np.array(kept, dtype=dtype)


def _float_values(dtype):
    finfo = np.finfo(dtype)
    base = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 2.5, -2.5, 3.0, -3.0,
            7.0, -7.0, 0.1, -0.1, 1e-3, 10.0, -10.0, 100.0, 1e10, -1e10, 1e30, -1e30,
            20.0, -20.0, 40.0, -40.0, 88.5, -88.5, 710.0, -710.0, 1e-8, np.pi, -np.e,
            float(finfo.max), -float(finfo.max), float(finfo.tiny), float(finfo.smallest_subnormal),
            np.inf, -np.inf, np.nan]
    if dtype == "float64":
        base += [1e300, -1e300, 1e-300]
    return np.array(base, dtype=dtype)


def values(dtype):
    """Edge cases and a few random values of ``dtype``."""
    if dtype == "bool":
        return np.array([False, True])
    if dtype in FLOATS:
        return _float_values(dtype)
    return _int_values(dtype)


def product(*dtypes, limit=100_000):
    """Every combination of the dtypes' values, as one array per input.

    With more than ``limit`` combinations (three or more inputs), every other
    value of the longest lists is dropped until they fit.
    """
    lists = [values(d) for d in dtypes]
    while np.prod([len(v) for v in lists]) > limit:
        longest = max(range(len(lists)), key=lambda k: len(lists[k]))
        lists[longest] = lists[longest][::2]
    grids = np.meshgrid(*lists, indexing="ij")
    return [g.ravel().astype(d) for g, d in zip(grids, dtypes, strict=True)]


# ---------------------------------------------------------------------------
# cases


class Hypot(S.ScalarOp):
    """A user-defined op: only nin, nout, impl and c_code."""

    nin = 2
    nout = 1

    def impl(self, a, b):
        return np.hypot(a, b)

    def c_code(self, node, name, inputs, outputs, sub):
        suffix = "f" if node.outputs[0].type.dtype == "float32" else ""
        return "%s = hypot%s(%s, %s);" % (outputs[0], suffix, inputs[0], inputs[1])


BINARY = ["add", "sub", "mul", "true_div", "int_div", "mod", "pow", "maximum", "minimum",
          "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor"]
UNARY = ["neg", "abs_", "sign", "sqr", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos",
         "tan", "tanh", "sigmoid", "softplus", "invert", "identity"]
MIXED = [("int8", "uint8"), ("uint8", "int8"), ("int64", "uint64"), ("uint64", "int64"),
         ("int16", "uint32"), ("bool", "int8"), ("int8", "bool"), ("int32", "float32"),
         ("float32", "int32"), ("int16", "float32"), ("uint8", "float64"),
         ("float32", "float64"), ("float64", "float32"), ("int64", "float64"),
         ("uint64", "float32"), ("int8", "uint64"), ("uint32", "int64")]
PAIRS = [(d, d) for d in ALL] + MIXED

NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "true_div": np.true_divide,
    "int_div": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "neq": np.not_equal,
    "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor,
    "neg": np.negative, "abs_": np.absolute, "sign": np.sign, "sqr": np.square,
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "invert": np.invert,
    "identity": lambda x: x.copy(),
}


def _longdouble_float(x, dtype):
    x = x.astype(np.float32 if dtype == "float32" else np.float64)
    return x.astype(np.longdouble), x.dtype


def _ref_sigmoid(x):
    xl, dtype = _longdouble_float(x, None if x.dtype.kind == "f" else "float64")
    e = np.exp(-np.abs(xl))
    return np.where(xl >= 0, 1 / (1 + e), e / (1 + e))


def _ref_softplus(x):
    xl, _ = _longdouble_float(x, None)
    return np.where(xl > 0, xl, 0) + np.log1p(np.exp(-np.abs(xl)))


def _scalar_exponent_power(a, b):
    """np.power, where an exponent of 0.5 means sqrt as for a scalar exponent in NumPy."""
    result = np.power(a, b)
    if result.dtype.kind == "f":
        result = np.where(b == 0.5, np.sqrt(a.astype(result.dtype)), result)
    return result


def numpy_result(name, arrays, out_dtypes):
    """NumPy's answer (float16 where NumPy gives it)."""
    with np.errstate(all="ignore"):
        if name in ("sigmoid", "softplus"):
            arrays = [a.astype(out_dtypes[0]) for a in arrays]
            ref = _ref_sigmoid(arrays[0]) if name == "sigmoid" else _ref_softplus(arrays[0])
            return [ref.astype(out_dtypes[0])]
        if name == "switch":
            return [np.where(*arrays)]
        if name == "hypot":
            return [np.hypot(*arrays)]
        if name.startswith("cast"):
            return [arrays[0].astype(out_dtypes[0])]
        f = NUMPY[name]
        if name == "pow":
            f = _scalar_exponent_power
        return [f(*arrays)]


def _supported(op, dtypes):
    try:
        op.make_node(*[S.get_scalar_type(d)() for d in dtypes])
        return True
    except TypeError:
        return False


def _cases():
    cases = []
    for name in BINARY:
        op = getattr(S, name)
        for pair in PAIRS:
            if _supported(op, pair):
                cases.append((name, op, pair))
    for name in UNARY:
        op = getattr(S, name)
        for d in ALL:
            if _supported(op, (d,)):
                cases.append((name, op, (d,)))
    for src in ALL:
        for dst in ALL:
            cases.append(("cast_" + dst, S.Cast(dst), (src,)))
    for d in FLOATS:
        cases.append(("hypot", Hypot(), (d, d)))
    for dtypes in [("bool", "float32", "float32"), ("bool", "int8", "uint8"),
                   ("float64", "float64", "int64"), ("int8", "uint16", "bool"),
                   ("uint8", "float32", "float64")]:
        cases.append(("switch", S.switch, dtypes))
    for name in ("add", "mul"):
        op = getattr(S, name)
        for dtypes in [("int8", "int8", "float32"), ("bool", "bool", "int8", "uint8"),
                       ("float32", "float32", "float32", "float64"), ("int64", "uint8", "int16")]:
            cases.append((name + "_n", op, dtypes))
    return cases


CASES = _cases()


def _case_id(case):
    name, _, dtypes = case
    return "%s-%s" % (name, "-".join(dtypes))


def _composites():
    x, y = S.float32("x"), S.float32("y")
    i, j = S.int8("i"), S.int8("j")
    b = S.bool_("b")
    return {
        # an int8 intermediate that overflows before meeting a float32
        "int8_overflow": S.Composite([i, j, x], [(i * j + 1) * x]),
        "mixed": S.Composite([x, y, i], [S.switch(x > y, S.exp(x) - y, i // 3) + 2.5]),
        "two_outputs": S.Composite([x, b], [S.sigmoid(x) * 2, S.switch(b, x, -x)]),
        "shared": S.Composite([x], [S.sqr(S.tanh(x)) * S.tanh(x) + 1]),
        "constant_output": S.Composite([x], [x + 1, S.as_scalar(np.float32(3.5))]),
        "nested_divmod": S.Composite([i, j], [i // j + i % j, S.cast(i, "float32") / j]),
        "user_op": S.Composite([x, y], [Hypot()(x, y) * 2 - 1]),
    }


COMPOSITES = _composites()

LITERALS = {d: values(d) for d in ALL}


# ---------------------------------------------------------------------------
# compiling


def _compiler():
    cc = os.environ.get("CC", "").strip()
    if cc:
        return shlex.split(cc)
    return [shutil.which("cc") or shutil.which("gcc")]


def _warning_flags():
    """``-Wall -Wextra -Werror`` for GCC, whose warnings we know; just ``-Wall`` otherwise."""
    try:
        version = subprocess.run(_compiler() + ["--version"], capture_output=True,
                                 text=True).stdout
    except OSError:
        version = ""
    if "Free Software Foundation" in version and "clang" not in version:
        return ["-Wall", "-Wextra", "-Werror"]
    return ["-Wall"]


def _kernel(fname, node, code):
    ins = ["const %s *in%d" % (v.type.c_type, k) for k, v in enumerate(node.inputs)]
    outs = ["%s *out%d" % (v.type.c_type, k) for k, v in enumerate(node.outputs)]
    signature = "int %s(long n%s)" % (fname, "".join(", " + a for a in ins + outs))
    body = ["%s {" % signature, "    long i;", "    for (i = 0; i < n; i++) {"]
    for k, v in enumerate(node.inputs):
        body.append("        %s x%d = in%d[i];" % (v.type.c_type, k, k))
    for k, v in enumerate(node.outputs):
        body.append("        %s y%d;" % (v.type.c_type, k))
    body.append("        {\n%s\n        }" % code)
    for k in range(len(node.outputs)):
        body.append("        out%d[i] = y%d;" % (k, k))
    body += ["    }", "    return 0;", "}"]
    return signature + ";", "\n".join(body)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(library, {case id: (function name, node)}), compiled once."""
    support, headers, decls, bodies, kernels = [], ["math.h", "stdint.h"], [], [], {}
    sub = {"fail": "return (int)(i + 1);"}
    items = [(_case_id(c), c[1].make_node(*[S.get_scalar_type(d)() for d in c[2]]))
             for c in CASES]
    for cname, comp in COMPOSITES.items():
        items.append(("composite-" + cname,
                      comp.make_node(*[v.type() for v in comp.inputs])))
    for k, (case_id, node) in enumerate(items):
        op = node.op
        code = element_code(op, node, "node%d" % k, ["x%d" % j for j in range(len(node.inputs))],
                            ["y%d" % j for j in range(len(node.outputs))], sub)
        block = op.c_support_code(node)
        if block and block not in support:
            support.append(block)
        headers += [h for h in op.c_headers() if h not in headers]
        fname = "kernel%d" % k
        decl, body = _kernel(fname, node, code)
        decls.append(decl)
        bodies.append(body)
        kernels[case_id] = (fname, node)
    for dtype, data in LITERALS.items():
        stype = S.get_scalar_type(dtype)
        fname = "literals_%s" % dtype
        lines = ["void %s(%s *out) {" % (fname, stype.c_type)]
        lines += ["    out[%d] = %s;" % (k, stype.c_literal(v)) for k, v in enumerate(data)]
        lines.append("}")
        decls.append("void %s(%s *out);" % (fname, stype.c_type))
        bodies.append("\n".join(lines))
    # several translation units compiled in parallel, linked into one library
    prelude = ["#include <%s>" % h for h in headers] + support
    units = max(1, min(4, os.cpu_count() or 1))
    warnings = _warning_flags()
    workdir = tmp_path_factory.mktemp("scalar_c")
    lib = workdir / "kernels.so"
    jobs, objects = [], []
    for u in range(units):
        src = workdir / ("kernels%d.c" % u)
        src.write_text("\n".join(prelude + bodies[u::units]) + "\n")
        obj = workdir / ("kernels%d.o" % u)
        objects.append(str(obj))
        cmd = _compiler() + ["-O2", "-fPIC", "-std=gnu11"] + warnings + [
            "-c", "-o", str(obj), str(src)]
        jobs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True))
    for job in jobs:
        _, err = job.communicate()
        assert job.returncode == 0, "compilation failed:\n%s" % err[-5000:]
    proc = subprocess.run(_compiler() + ["-shared", "-o", str(lib)] + objects + ["-lm"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, "linking failed:\n%s" % proc.stderr[-5000:]
    ffi = cffi.FFI()
    ffi.cdef("\n".join(decls).replace("_Float16", "uint16_t"))  # cffi has no _Float16
    return ffi, ffi.dlopen(str(lib)), kernels


def _cffi_array(var):
    return "%s[]" % var.type.c_type.replace("_Float16", "uint16_t")


def run_kernel(compiled, case_id, arrays):
    """Run a compiled kernel; returns (status, output arrays)."""
    ffi, lib, kernels = compiled
    fname, node = kernels[case_id]
    n = len(arrays[0])
    args = []
    for a, v in zip(arrays, node.inputs, strict=True):
        a = np.ascontiguousarray(a, dtype=v.type.dtype)
        args.append(ffi.from_buffer(_cffi_array(v), a))
    outs = [np.zeros(n, dtype=v.type.dtype) for v in node.outputs]
    args += [ffi.from_buffer(_cffi_array(v), o) for o, v in zip(outs, node.outputs, strict=True)]
    status = getattr(lib, fname)(n, *args)
    return status, outs, node


# ---------------------------------------------------------------------------
# comparing


def assert_matches(got, want, ulps=0, context="", atol=0.0):
    """``got`` equals ``want``: bit for bit (ints, signed zeros), or within ``ulps``.

    With ``atol``, finite floats may instead differ by up to ``atol``.
    """
    assert got.dtype == want.dtype, "%s: dtype %s, NumPy %s" % (context, got.dtype, want.dtype)
    if got.dtype.kind != "f":
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, "%s: %d mismatches, first at %d: got %r, NumPy %r" % (
            context, bad.size, bad[0], got[bad[0]], want[bad[0]])
        return
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    bad = np.flatnonzero(nan_got != nan_want)
    assert bad.size == 0, "%s: NaN mismatch at %d: got %r, NumPy %r" % (
        context, bad[0], got[bad[0]], want[bad[0]])
    ok = ~nan_got
    g, w = got[ok], want[ok]
    inf = np.isinf(g) | np.isinf(w)
    bad = np.flatnonzero(inf & (g != w))
    assert bad.size == 0, "%s: inf mismatch: got %r, NumPy %r" % (context, g[bad[0]], w[bad[0]])
    if ulps == 0:
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, "%s: %d mismatches: got %r, NumPy %r" % (
            context, bad.size, g[bad[0]], w[bad[0]])
        return
    dist = np.abs(ordered(g) - ordered(w))
    with np.errstate(all="ignore"):
        near = np.abs(g.astype(np.float64) - w) <= atol
    bad = np.flatnonzero((dist > ulps) & ~near)
    assert bad.size == 0, "%s: %d values off by more than %d ulps, e.g. got %r, NumPy %r" % (
        context, bad.size, ulps, g[bad[0]], w[bad[0]])


def _inputs_for(name, dtypes, out_dtype):
    """The test inputs: every combination of edge values, minus NumPy's errors."""
    arrays = product(*dtypes)
    if name == "pow" and out_dtype not in FLOATS:
        keep = arrays[1] >= 0  # NumPy refuses negative integer exponents
        arrays = [a[keep] for a in arrays]
    if name.startswith("cast_") and dtypes[0] in FLOATS and out_dtype in INTS:
        # NaN, inf and out-of-range conversions are platform-defined in NumPy; on
        # x86-64 NumPy is consistent except for uint32, where its SIMD and scalar
        # loops disagree.
        x86 = platform.machine() in ("x86_64", "AMD64")
        if not x86 or out_dtype == "uint32":
            info = np.iinfo(out_dtype)
            low = -2.0 ** 31 if out_dtype == "uint32" else info.min
            with np.errstate(all="ignore"):
                t = np.trunc(arrays[0].astype(np.float64))
                keep = np.isfinite(t) & (t >= low) & (t <= info.max)
            arrays = [arrays[0][keep]]
    return arrays


def _tolerance(name, out_dtype):
    # NumPy's float64 exp/log/pow have AVX-512 loops of their own too (tests/ulps.py)
    return numpy_tolerance(name, out_dtype)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_c_matches_numpy(compiled, case):
    name, op, dtypes = case
    _, node = compiled[2][_case_id(case)]
    out_dtype = node.outputs[0].type.dtype
    arrays = _inputs_for(name, dtypes, out_dtype)
    status, outs, node = run_kernel(compiled, _case_id(case), arrays)
    assert status == 0
    if name.endswith("_n"):
        with np.errstate(all="ignore"):
            want = functools.reduce(NUMPY[name[:-2]], arrays)
    else:
        want = numpy_result(name, arrays, [out_dtype])[0]
    assert_matches(outs[0], np.asarray(want), _tolerance(name, out_dtype), _case_id(case))


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_c_matches_python(compiled, name):
    comp = COMPOSITES[name]
    dtypes = [v.type.dtype for v in comp.inputs]
    arrays = product(*dtypes)
    status, outs, node = run_kernel(compiled, "composite-" + name, arrays)
    assert status == 0
    want = comp.nfunc(*arrays)
    want = want if isinstance(want, tuple) else (want,)
    for k, (got, expected) in enumerate(zip(outs, want, strict=True)):
        expected = np.broadcast_to(expected, got.shape)
        atol = 1e-6 if got.dtype == np.float32 else 1e-13
        assert_matches(got, np.ascontiguousarray(expected), 4, "%s output %d" % (name, k), atol)


def test_composite_int8_intermediate_wraps_in_c(compiled):
    i = np.array([100, -128, 7], dtype=np.int8)
    j = np.array([3, -1, 2], dtype=np.int8)
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    status, (out,), _ = run_kernel(compiled, "composite-int8_overflow", [i, j, x])
    with np.errstate(all="ignore"):
        want = (i * j + np.int8(1)) * x
    assert status == 0
    assert want.dtype == np.float32
    assert_matches(out, want, 0, "int8_overflow")
    assert out[0] == np.float32(np.int8(45) * 0.5)  # 100 * 3 + 1 = 301 wraps to 45


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "bool"])
def test_c_integer_pow_refuses_negative_exponents(compiled, dtype):
    case = "pow-%s-%s" % (dtype, dtype)
    base = np.array([2, 3, 2], dtype=dtype)
    exponent = np.array([1, -1, 2] if dtype != "bool" else [1, 0, 1], dtype=dtype)
    status, outs, _ = run_kernel(compiled, case, [base, exponent])
    if dtype == "bool":
        assert status == 0
        assert outs[0].tolist() == np.power(base, exponent).tolist()
    else:
        assert status == 2  # sub["fail"] ran at element 1
        with pytest.raises(ValueError, match="negative integer powers"):
            np.power(base, exponent)


@pytest.mark.parametrize("dtype", ALL)
def test_c_literals_round_trip(compiled, dtype):
    ffi, lib, _ = compiled
    data = LITERALS[dtype]
    out = np.zeros(len(data), dtype=dtype)
    getattr(lib, "literals_%s" % dtype)(ffi.from_buffer(
        "%s[]" % S.get_scalar_type(dtype).c_type, out))
    assert_matches(out, data, 0, "literals of %s" % dtype)
