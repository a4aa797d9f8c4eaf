"""The "c", "cvm" and "debug" linkers: refusals, errors, custom C Ops, threads."""

import time
import warnings

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.core.c_interface import CDataType, CLinkerOp
from nbgraph.linkers.c import CLinkerRefusal, CompileError, background, default_linker
from nbgraph.linkers.debug import OutputMismatch
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.scalar import ScalarOp
from nbgraph.tensor.type import TensorType

pytestmark = pytest.mark.needs_cc


def test_default_linker_is_cvm_when_a_compiler_works():
    assert default_linker() == "cvm"
    x = nt.dvector("x")
    f = ng.function([x], x * 2)
    assert f.linker == "cvm"


def test_linker_c_refuses_an_op_without_c_code_and_names_it():
    a, b = nt.dmatrix("a"), nt.dmatrix("b")
    with pytest.raises(CLinkerRefusal) as info:
        ng.function([a, b], nt.join(0, a, b) + 1, linker="c")
    text = str(info.value)
    assert "Join" in text and "a, b" in text and "no C implementation" in text
    assert isinstance(info.value, TypeError)


def test_cvm_runs_float_matrix_products_with_a_blas_in_c_and_the_rest_in_c(monkeypatch):
    from nbgraph.tensor import blas_threads

    a, b, v = nt.dmatrix("a"), nt.dmatrix("b"), nt.dvector("v")
    # Dot's C calls the process's BLAS when it finds one (NumPy's wheels); without
    # one, NumPy's BLAS computes the product (Dot.c_preferred)
    for found in dict.fromkeys([blas_threads.c_blas_found(), False]):
        monkeypatch.setitem(blas_threads._state, "c_blas", found)
        f = ng.function([a, b, v], nt.tanh(nt.dot(a, b) + v))
        f.program.wait_compiled()
        kinds = {type(n.op).__name__: k
                 for n, k in zip(f.program.nodes, f.program.kinds, strict=True)}
        assert kinds["Dot"] == ("c" if found else "py") and kinds["Elemwise"] == "c"
    # a matrix-vector product is C's (Dot.c_preferred), under "c" every product is
    g = ng.function([a, v], nt.dot(a, v))
    g.program.wait_compiled()
    assert g.program.kinds == ["c"]
    h = ng.function([a, b], nt.dot(a, b), linker="c")
    assert h.program.kinds == ["c"]
    np.testing.assert_allclose(h(np.ones((3, 2)), np.ones((2, 4))), np.full((3, 4), 2.0))
    A, B, V = np.ones((3, 2)), np.ones((2, 4)), np.arange(4.0)
    np.testing.assert_allclose(f(A, B, V), np.tanh(A @ B + V))


def test_c_runtime_errors_are_value_errors_naming_the_node():
    x = nt.dvector("x")
    f = ng.function([x], nt.specify_shape(x, (3,)) * 2, linker="c")
    with pytest.raises(ValueError, match=r"SpecifyShape: expected shape \(3,\), got \(4,\)") \
            as info:
        f(np.ones(4))
    assert "Apply node that caused the error" in str(info.value)
    np.testing.assert_array_equal(f(np.ones(3)), [2, 2, 2])  # still usable after an error

    i, j = nt.lvector("i"), nt.lvector("j")
    g = ng.function([i, j], i ** j, linker="c")
    with pytest.raises(ValueError, match="negative integer powers") as info:
        g(np.array([2, 3]), np.array([1, -1]))
    assert "pow" in str(info.value)

    y = nt.dvector("y")
    h = ng.function([x, y], x + y, linker="c", rewrite=None)
    with pytest.raises(ValueError, match="broadcast") as info:
        h(np.ones(3), np.ones(4))
    assert "Elemwise{add}" in str(info.value)


def test_kernels_reject_bad_values_instead_of_crashing():
    x = nt.dvector("x")
    f = ng.function([x], x + 1, linker="c", trust_input=True)
    with pytest.raises(TypeError, match="dtype float64"):
        f(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match="ndarray"):
        f([1.0, 2.0])
    with pytest.raises(TypeError, match="1 dimensions"):
        f(np.ones((2, 2)))
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)[1:].view(np.float64)  # misaligned data
    raw[:] = [1, 2, 3, 4]
    np.testing.assert_array_equal(f(raw), [2, 3, 4, 5])


class Hypot(ScalarOp):
    """A user-defined scalar op: nin, impl and c_code only."""

    nin = 2

    def impl(self, a, b):
        return np.hypot(a, b)

    def c_code(self, node, name, inputs, outputs, sub):
        return "%s = hypot(%s, %s);" % (outputs[0], inputs[0], inputs[1])


def test_a_custom_scalar_op_runs_in_c_and_fuses():
    x, y = nt.dvector("x"), nt.dvector("y")
    hyp = Elemwise(Hypot())
    f = ng.function([x, y], hyp(x, y), linker="c")
    assert f.program.kinds == ["c"]
    np.testing.assert_allclose(f(np.array([3.0, 5.0]), np.array([4.0, 12.0])), [5, 13])
    g = ng.function([x, y], hyp(x, y) * 2 + nt.exp(x), linker="debug")
    assert len(g.program.nodes) == 1 and "hypot" in str(g.program.nodes[0].op)
    assert g.program.kinds == ["c"]
    np.testing.assert_allclose(g(np.array([3.0]), np.array([4.0])), 10 + np.exp(3.0))


class WrongInC(ScalarOp):
    nin = 1

    def impl(self, a):
        return a + 1

    def c_code(self, node, name, inputs, outputs, sub):
        return "%s = %s + 2;" % (outputs[0], inputs[0])


def test_debug_linker_names_the_op_and_shows_both_values():
    x = nt.dvector("x")
    f = ng.function([x], Elemwise(WrongInC())(x), linker="debug")
    with pytest.raises(OutputMismatch) as info:
        f(np.array([1.0, 2.0]))
    text = str(info.value)
    assert "Elemwise{wronginc}" in text
    assert "Python (perform) gave" in text and "C gave" in text
    assert "[2. 3.]" in text and "[3. 4.]" in text


class Broken(ScalarOp):
    nin = 1

    def impl(self, a):
        return a * 3

    def c_code(self, node, name, inputs, outputs, sub):
        return "%s = %s * ;" % (outputs[0], inputs[0])


def test_a_compile_error_is_clear_and_cvm_falls_back_to_python():
    x = nt.dvector("x")
    with pytest.raises(CompileError, match="error"):
        ng.function([x], Elemwise(Broken())(x), linker="c")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = ng.function([x], Elemwise(Broken())(x) + 1.5, linker="cvm")
        np.testing.assert_array_equal(f(np.ones(2)), [4.5, 4.5])
        f.program.wait_compiled(timeout=120)
        np.testing.assert_array_equal(f(np.ones(2)), [4.5, 4.5])
    if f.program.compiling is False and f.program.module is None:
        assert any("keeps running in Python" in str(w.message) for w in caught)
    assert set(f.program.kinds) == {"py"}


# -- CDataType between two custom C Ops -------------------------------------------

_COUNTER_SUPPORT = """
#ifndef NBG_TEST_COUNTER
#define NBG_TEST_COUNTER
struct counter { int64_t value; int64_t *frees; };
static void counter_free(struct counter *c) {
    if (c->frees) c->frees[0] += 1;
    free(c);
}
#endif
"""

COUNTER = CDataType("struct counter *", freefunc="counter_free")


class MakeCounter(CLinkerOp, Op):
    """counter = {start, frees}: ``frees`` (an int64 array) counts the releases."""

    __props__ = ()

    def make_node(self, frees, start):
        frees, start = nt.as_tensor_variable(frees), nt.as_tensor_variable(start)
        return Apply(self, [frees, start], [COUNTER()])

    def c_support_code(self, node=None):
        return _COUNTER_SUPPORT

    def c_headers(self):
        return ["stdlib.h"]

    def c_code(self, node, name, inputs, outputs, sub):
        frees, start = inputs
        return """%(o)s = (struct counter *)malloc(sizeof(struct counter));
if (!%(o)s) { nbg_set_error(nbg_err, "out of memory"); %(fail)s }
%(o)s->value = *%(start)s;
%(o)s->frees = %(frees)s;""" % {"o": outputs[0], "start": start, "frees": frees,
                                "fail": sub["fail"]}


class ReadCounter(CLinkerOp, Op):
    """10 * counter->value, as an int64 scalar."""

    __props__ = ()

    def make_node(self, c):
        return Apply(self, [c], [TensorType("int64", ())()])

    def c_support_code(self, node=None):
        return _COUNTER_SUPPORT

    def c_headers(self):
        return ["stdlib.h"]

    def c_code(self, node, name, inputs, outputs, sub):
        return "*%s = %s->value * 10;" % (outputs[0], inputs[0])


@pytest.mark.parametrize("linker", ["c", "cvm", "debug"])
def test_cdata_passes_between_two_c_ops_and_is_freed(linker):
    frees = nt.lvector("frees")
    start = nt.lscalar("start")
    out = ReadCounter()(MakeCounter()(frees, start))
    f = ng.function([frees, start], out, linker=linker)
    assert f.program.kinds == ["c", "c"]
    counts = np.zeros(1, dtype=np.int64)
    for k in range(3):
        assert int(f(counts, np.int64(k + 4))) == 10 * (k + 4)
        if linker != "debug":  # the debug linker hands C copies of the inputs
            assert counts[0] == k + 1  # released right after its last use: freefunc ran


def test_a_cdata_output_returned_to_the_caller_is_freed_when_dropped():
    import gc

    frees, start = nt.lvector("frees"), nt.lscalar("start")
    f = ng.function([frees, start], MakeCounter()(frees, start), linker="c")
    counts = np.zeros(1, dtype=np.int64)
    value = f(counts, np.int64(1))
    assert counts[0] == 0
    del value
    gc.collect()
    assert counts[0] == 1


# -- the GIL ----------------------------------------------------------------------

def test_the_gil_is_released_while_a_kernel_runs(rendezvous):
    RendezvousOp, meet_inside_kernels = rendezvous
    # Two kernels in two threads each wait inside C until this thread, having seen
    # both start, lets them go: both ran C at once while Python ran (no timing).
    box = nt.dvector("box")
    fs = [ng.function([box], RendezvousOp(k)(box), linker="c") for k in range(2)]
    results, _ = meet_inside_kernels(fs)
    assert results == [1.0, 1.0], "a kernel did not see Python run while it ran"


# -- programs -----------------------------------------------------------------------

def test_intermediates_are_released_after_their_last_use():
    x = nt.dvector("x")
    y = nt.exp(x)
    z = nt.dot(y, y) + y.sum()
    f = ng.function([x], z, linker="cvm", rewrite=None)
    f.program.wait_compiled()
    f(np.ones(5))
    storage = f.program.storage
    outputs = set(f.program.fgraph.outputs) | set(f.program.fgraph.inputs)
    for var, cell in storage.items():
        if var.owner is not None and var not in outputs:
            assert cell[0] is None, var


def test_background_compilation_switches_to_c_and_keeps_results(monkeypatch):
    from nbgraph.tensor.c_code import constants

    monkeypatch.setattr(constants, "ENABLED", False)  # k gives a module no cache has
    x = nt.dvector("x")
    k = 1.0 + time.time() % 1.0  # a module no cache has
    f = ng.function([x], nt.sin(x) * k + 1, linker="cvm")
    first = f(np.arange(3.0))
    assert f.program.wait_compiled(timeout=120)
    assert f.program.kinds == ["c"]
    np.testing.assert_allclose(f(np.arange(3.0)), first)
    assert background.wait_all(timeout=120)


def test_profile_reports_c_kinds():
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) + 1, linker="c", profile=True)
    f(np.ones(10))
    assert f.profile.kinds == ["c"]
    assert f.profile.node_calls == [1]


def test_without_a_compiler_the_default_is_python_with_one_warning(python_process, tmp_path):
    code = """
import warnings, json
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import CompilerUnavailable
x = nt.dvector("x")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = ng.function([x], x + 1)
    g = ng.function([x], x * 2)
    r = (f(np.ones(2)) + g(np.ones(2))).tolist()
try:
    ng.function([x], x + 1, linker="c")
    refused = None
except CompilerUnavailable as exc:
    refused = str(exc)
print(json.dumps({"linkers": [f.linker, g.linker], "result": r, "refused": refused,
                  "warnings": [str(w.message) for w in caught]}))
"""
    proc = python_process(code, cache_dir=tmp_path, extra_env={"CC": "/nonexistent/cc"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["linkers"] == ["py", "py"]
    assert out["result"] == [4.0, 4.0]
    assert len([w for w in out["warnings"] if "no working C compiler" in w]) == 1
    assert out["refused"] and "C compiler" in out["refused"]


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_small_outputs_are_reused_only_when_nobody_holds_them(linker):
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], [x + y, (x * y).dimshuffle("x", 0)], linker=linker)
    if hasattr(f.program, "wait_compiled"):
        f.program.wait_compiled()
    a, b = np.arange(3.0), np.ones(3)
    first = f(a, b)
    kept = [r.copy() for r in first]
    view = first[1][0, 1:]  # a view keeps its base alive: its buffer is never reused
    held = first[0]
    del first
    for k in range(5):
        out = f(a * (k + 2), b)
        np.testing.assert_array_equal(out[0], a * (k + 2) + 1)
        np.testing.assert_array_equal(out[1], (a * (k + 2))[None, :])
        assert not np.shares_memory(out[0], held) and not np.shares_memory(out[1], view)
        np.testing.assert_array_equal(held, kept[0])
        np.testing.assert_array_equal(view, kept[1][0, 1:])
    # a dropped result may be reused; the new value is right either way
    del out
    again = f(a, b)
    np.testing.assert_array_equal(again[0], a + 1)
    np.testing.assert_array_equal(again[1], a[None, :])


def _direct(f):
    """True when calls run the single kernel directly (C Kernel object or generated Python)."""
    call = type(f).__call__
    if type(call).__name__ == "Kernel":
        return True
    return "<nbgraph direct call>" == call.__code__.co_filename


def test_trust_input_single_kernel_calls_it_directly():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    f = ng.function([x, y], x + y, linker="c", trust_input=True)
    assert _direct(f)
    a, b = np.array(1.5), np.array(2.5)
    r1 = f(a, b)
    r2 = f(a, b)
    r3 = f(np.array(3.0), b)
    assert r1 is not r2 and r2 is not r3
    assert float(r1) == 4.0 and float(r2) == 4.0 and float(r3) == 5.5
    f(a, b)  # a dropped result may be reused; held ones never are
    assert float(r1) == 4.0 and float(r3) == 5.5
    assert f(x=a, y=np.array(1.0)) == 2.5  # keywords still work
    with pytest.raises(TypeError):
        f(a)
    with pytest.raises(TypeError, match="dtype float64"):
        f(np.array(1.0, dtype=np.float32), b)
    g = ng.function([x, y], [x + y], linker="c", trust_input=True)
    out = g(a, b)
    assert isinstance(out, list) and float(out[0]) == 4.0
    u, v = nt.dvector("u"), nt.dvector("v")
    h = ng.function([u, v], u * v, linker="c", trust_input=True)
    assert _direct(h)
    np.testing.assert_array_equal(h(np.arange(3.0), np.ones(3) * 2), np.arange(3.0) * 2)
    with pytest.raises(ValueError, match="Elemwise") as info:
        h(np.ones(3), np.ones(4))
    assert "Apply node that caused the error" in str(info.value)


def test_trust_input_direct_call_installed_after_background_compile(monkeypatch):
    from nbgraph.tensor.c_code import constants

    monkeypatch.setattr(constants, "ENABLED", False)  # k gives a module no cache has
    x, y = nt.dscalar("x"), nt.dscalar("y")
    k = 1.0 + time.time() % 1.0  # a module no cache has
    f = ng.function([x, y], x * y + k, linker="cvm", trust_input=True)
    if f.program.compiling:
        assert not _direct(f)
        assert float(f(np.array(2.0), np.array(3.0))) == 6.0 + k
    assert f.program.wait_compiled(timeout=120)
    f(np.array(2.0), np.array(3.0))
    assert _direct(f)
    assert float(f(np.array(2.0), np.array(4.0))) == 8.0 + k
    assert background.wait_all(timeout=120)
