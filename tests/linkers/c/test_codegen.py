"""Generated modules: compiler flags, vector math, NaN/inf semantics, module layout."""

import re
import subprocess

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c import codegen, units
from nbgraph.linkers.c.cache import get_cache
from nbgraph.linkers.c.cdef import write_ffi_module
from nbgraph.linkers.c.compiler import probe
from nbgraph.linkers.c.linker import ModulePlan

pytestmark = pytest.mark.needs_cc


def test_flags_keep_ieee_semantics():
    info = probe(get_cache())
    flags = " ".join(info.flags)
    for forbidden in ("-ffast-math", "-ffinite-math-only", "-Ofast", "-funsafe-math",
                      "-fno-signed-zeros", "-freciprocal-math", "-fassociative-math"):
        assert forbidden not in flags
    assert "-ffp-contract=off" in info.flags  # no fused multiply-add: NumPy rounds each op


def test_nan_inf_and_signed_zeros_behave_as_in_numpy():
    x, y = nt.dvector("x"), nt.dvector("y")
    outs = [nt.eq(x, x), x * 0.0, nt.maximum(x, y), nt.minimum(x, y), -x, x.sum(), x.max(),
            nt.exp(x), nt.sqrt(x), x / y, nt.sigmoid(x), nt.tanh(x)]
    f = ng.function([x, y], outs, linker="c")
    xv = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 800.0])
    yv = np.array([1.0, np.nan, 0.0, -0.0, 0.0, np.inf, 2.0, -np.inf])
    got = f(xv, yv)
    with np.errstate(all="ignore"):
        want = [xv == xv, xv * 0.0, np.maximum(xv, yv), np.minimum(xv, yv), -xv, xv.sum(),
                xv.max(), np.exp(xv), np.sqrt(xv), xv / yv, 1 / (1 + np.exp(-xv)), np.tanh(xv)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg="NaN, output %d" % k)
        np.testing.assert_array_equal(np.isinf(g) & (g > 0), np.isinf(w) & (w > 0))
        np.testing.assert_array_equal(np.isinf(g) & (g < 0), np.isinf(w) & (w < 0))
        if g.dtype.kind == "f":
            finite = np.isfinite(w)
            np.testing.assert_allclose(g[finite], w[finite], rtol=1e-14)
            np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]),
                                          err_msg="signed zero, output %d" % k)
        else:
            np.testing.assert_array_equal(g, w)


def test_transcendental_loops_use_vector_math_when_available():
    info = probe(get_cache())
    if not info.mvec:
        pytest.skip("the compiler probe found no libmvec")
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) * nt.sin(x), linker="c")
    with open(f.program.module.path, "rb") as lib:
        data = lib.read()
    assert b"_ZGV" in data  # a call to a vector variant of exp or sin (libmvec)


def test_equal_nodes_share_one_kernel_in_one_module():
    x, y = nt.dvector("x"), nt.dvector("y")
    outs = [nt.exp(x), nt.exp(y), nt.exp(x + 1.0) * 2]
    f = ng.function([x, y], outs, linker="c", rewrite=None)
    plan_nodes = [n for n in f.program.nodes]
    plan = ModulePlan(plan_nodes)
    assert plan.index.count(plan.index[0]) >= 2  # exp(x) and exp(y): one C function
    assert len(re.findall(r"static int nbg_k\d+\(", plan.source)) == len(set(plan.index))
    assert len({id(f.program.module)}) == 1


def test_the_shipped_ffi_module_matches_the_cdef(tmp_path):
    fresh = write_ffi_module(str(tmp_path / "_ffi.py"))
    import nbgraph.linkers.c as pkg
    import os

    shipped = os.path.join(os.path.dirname(pkg.__file__), "_ffi.py")
    with open(fresh) as a, open(shipped) as b:
        assert a.read() == b.read(), "regenerate with nbgraph.linkers.c.cdef.write_ffi_module()"


def test_kernel_source_is_readable():
    x = nt.dmatrix("x")
    node = nt.exp(x + 1).owner
    ks = codegen.node_kernel(node)
    assert "nbg_run_loop" in ks.body and "exp(" in ks.body
    assert "NBG_KERNEL_NAME" in ks.body


def test_an_elementwise_kernel_is_glue_and_its_strided_row_is_compiled_at_o1():
    """The kernel of an elementwise loop only describes its loop to the runtime
    (NBG_GLUE: the runtime checks the operands and runs the rows), its strided
    row is a scalar loop (NBG_STRIDED_ROW); the row of unit strides, the one
    that vectorises, keeps the module's flags; the kernel reads no operand
    into locals of its own."""
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    ks = codegen.node_kernel((nt.tanh(x) * y + x).owner)
    assert "NBG_GLUE\nstatic int NBG_KERNEL_NAME(void **nbg_ptrs" in ks.body
    assert re.search(r"static NBG_NOINLINE NBG_STRIDED_ROW int \w+_strided\(", ks.body)
    assert re.search(r"^static int \w+_unit\(const void \*nbg_vc, char \*const \*nbg_row, "
                     r"int64_t nbg_len, char \*nbg_err\)", ks.body, re.M)
    assert "i0_dims" not in ks.body and "nbg_run_loop(&nbg_l, " in ks.body
    scalar = codegen.node_kernel((nt.dscalar("a") + nt.dscalar("b")).owner)
    assert "NBG_GLUE" not in scalar.body  # 0-d: the element is computed in the kernel
    head = codegen.prelude(None)
    assert '#define NBG_GLUE __attribute__((optimize("O1")))' in head


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_strided_and_broadcast_rows_give_the_contiguous_values_for_exact_ops(dtype):
    """IEEE-exact element code gives the same bits on every path (the -O1
    strided row, the vectorised unit row, the thread split)."""
    x, y = nt.matrix("x", dtype=dtype), nt.matrix("y", dtype=dtype)
    f = ng.function([x, y], nt.maximum(x * y - x, -abs(y)) + y, linker="c")
    rng = np.random.default_rng(3)
    for rows, cols in ((3, 7), (5, 257), (1, 1), (0, 4), (400, 401)):
        a = (rng.standard_normal((cols, rows)) * 50).astype(dtype).T  # transposed
        b = (rng.standard_normal((rows, cols)) * 50).astype(dtype)
        col = np.ascontiguousarray(b[:, :1])
        for args in ((a, b), (np.ascontiguousarray(a), b), (a[::-1], b[::-1]),
                     (np.broadcast_to(col, b.shape), b)):
            want = f(*[np.ascontiguousarray(v) for v in args])
            np.testing.assert_array_equal(f(*args), want)


def _layers(n):
    x = nt.dmatrix("x")
    h, params = x, []
    rng = np.random.default_rng(0)
    for i in range(n):
        w = ng.shared(rng.standard_normal((5, 5)) * 0.3, name="W%d" % i)
        params.append(w)
        h = nt.tanh(nt.dot(h, w)) * (i + 1.5) + nt.sin(h)
    cost = (h ** 2).mean()
    return x, [cost] + ng.grad(cost, params)


def test_a_big_module_compiles_as_two_translation_units_with_the_same_values(
        monkeypatch, tmp_path, module_sources):
    from nbgraph.config import config

    x, outs = _layers(3)
    xv = np.linspace(-1, 1, 20).reshape(4, 5)
    sources = module_sources
    results = {}
    monkeypatch.setattr(units, "MIN_MOVED_COST", 10**9)  # (no function moved alone)
    for limit in (10**9, 0):  # one unit, then two
        monkeypatch.setattr(codegen, "SPLIT_CHARS", limit)
        with config.change(cache_dir=str(tmp_path / str(limit))):
            f = ng.function([x], outs, linker="c")
            results[limit] = f(xv)
    whole, split = sources[-2], sources[-1]
    assert len(codegen.source_parts(whole)) == 1
    first, second = codegen.source_parts(split)
    assert "nbg_table" in second and "nbg_table" not in first
    assert "void nbg_attach_part(const nbg_runtime *r) { nbg_rt = r; }" in first
    assert re.search(r"^int nbg_k\d+\(void \*\*nbg_ptrs", first, re.M)  # hidden, not static
    for got, want in zip(results[0], results[10**9], strict=True):
        np.testing.assert_array_equal(got, want)  # the same kernels: the same values
    assert codegen.as_standalone(split, probe(get_cache())).count("#define NBG_STANDALONE") == 2


def test_a_failing_translation_unit_names_its_part(tmp_path):
    from nbgraph.linkers.c.compiler import CompileError, build_library

    info = probe(get_cache())
    bad = "int ok(void) { return 1; }" + codegen.PART_MARK + "int broken(void) { return }"
    with pytest.raises(CompileError, match=r"source: .*\.part1\.c"):
        build_library(info, bad, str(tmp_path / "m.c"), str(tmp_path / "m.so"))


def test_a_module_declares_the_math_it_uses_instead_of_parsing_math_h(tmp_path,
                                                                    module_sources):
    from nbgraph.config import config

    sources = module_sources
    x = nt.dvector("x")
    v = np.array([-np.inf, -2.5, -0.0, 0.0, 1e-310, 0.5, 3.0, np.inf, np.nan])
    outs = [nt.exp(x), nt.isnan(x), nt.isinf(x), nt.sqrt(abs(x)), nt.floor(x), x ** 2.5]
    with config.change(cache_dir=str(tmp_path)):
        f = ng.function([x], outs, linker="c")
        got = f(v)
    head = codegen.source_parts(sources[-1])[0][:2000]
    assert "#include <math.h>" not in head.split("#else")[0]
    assert "double exp(double);" in head and "#define isinf(x) __builtin_isinf_sign(x)" in head
    with np.errstate(all="ignore"):
        want = [np.exp(v), np.isnan(v), np.isinf(v), np.sqrt(abs(v)), np.floor(v), v ** 2.5]
    for g, w in zip(got[:-1], want[:-1], strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[-1], want[-1], rtol=4e-16)  # libmvec's pow: an ulp


def test_a_module_using_more_of_math_h_includes_it():
    assert codegen.math_used("y = j0(x) + M_PI + exp(x); int expx;") == {"j0", "M_PI", "exp"}
    assert codegen.math_used("/* finite, j0 */ y = exp(x); // log1p\n") == {"exp"}
    assert codegen.math_block({"exp", "isnan"}).count("#include <math.h>") == 1  # other compilers
    assert codegen.math_block({"exp", "j0"}) == codegen.MATH_H
    assert codegen.math_block({"math.h"}) == codegen.MATH_H
    assert codegen.math_block(set()).startswith("/* math.h")



def test_the_head_parses_stdint_and_stddef_only_for_names_it_does_not_define(tmp_path):
    """The fixed-width types, size_t, ptrdiff_t, NULL and offsetof come from the
    compiler's macros; another name of the two headers brings them in, and a
    header included later may declare the same types again."""
    assert codegen.math_used("int64_t a; size_t n; uint8_t *p = NULL; offsetof(s, m)") == set()
    used = codegen.math_used("int64_t a = INT64_MAX; exp(a);")
    assert used == {"INT64_MAX", "exp"}
    block = codegen.math_block(used)
    assert block.startswith(codegen.STD_HEADERS + "\n") and "double exp(double);" in block
    assert codegen.STD_HEADERS not in codegen.math_block({"exp"})
    info = probe(get_cache())
    body = ("typedef struct { int a; double b; } pair;\n"
            "int64_t f(const uint8_t *p, size_t n) { return p == NULL ? (int64_t)n : "
            "(int64_t)offsetof(pair, b) + (intptr_t)(ptrdiff_t)p[0]; }\n")
    cases = [(set(), ""), ({"INT64_MIN"}, "int64_t g(void) { return INT64_MIN; }\n"),
             (set(), "#include <stdint.h>\n#include <stdlib.h>\n")]
    for used, more in cases:
        src = tmp_path / "head.c"
        src.write_text(codegen.prelude(info, math=codegen.math_block(used)) + more + body)
        flags = ["-Wall", "-Werror", "-fsyntax-only", str(src)]
        proc = subprocess.run(info.argv + info.flags + flags, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]

def test_the_two_units_balance_estimated_compile_work_not_text():
    """A kernel's loops weigh most (codegen.LOOP_CHARS): one loop-heavy kernel
    faces the long loop-free ones, and each unit keeps table order."""
    loopy = "static int nbg_kX(void **nbg_ptrs, const int64_t *nbg_dims) {%s}" % (
        "for (i = 0; i < n; i++) s += p[i];\n" * 6)
    flat = "x" * 9_000
    bodies = [flat, loopy, flat, flat, "y" * 30_000]
    first, last = codegen._split(bodies)
    assert (first, last) == ([1], [0, 2, 3, 4])  # by text: [0, 1, 2] and [3, 4]
    costs = [codegen._cost(b) for b in bodies]
    held = sum(costs[k] for k in first), sum(costs[k] for k in last)
    assert abs(held[0] - held[1]) <= max(costs)
    assert codegen._split(["a" * 100, "b" * 100]) == ([], [0, 1])  # below SPLIT_CHARS
