"""Scalar constants as kernel arguments: a graph whose float constants change
reuses the compiled module, computes with the new values in every linker and
call path, and keeps the constants in its graph (rewrites still see them)."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.c_code.constants import is_structural

A = np.linspace(-1.0, 2.0, 7)
B = np.linspace(0.5, 1.5, 7)


def _build(expr, linker="c", **kw):
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], expr(x, y), linker=linker, **kw)
    getattr(f.program, "wait_compiled", lambda: None)()
    return f


def test_changing_a_float_constant_reuses_the_module():
    f1 = _build(lambda x, y: x * 0.37 + y)
    f2 = _build(lambda x, y: x * 0.38 + y)
    assert f1.program.module is f2.program.module
    np.testing.assert_array_equal(f1(A, B), A * 0.37 + B)
    np.testing.assert_array_equal(f2(A, B), A * 0.38 + B)
    assert "0.38" in str(f2.program.nodes[0].op)  # the graph keeps its constant


@pytest.mark.parametrize("linker", ["c", "cvm", "debug"])
def test_lifted_constants_give_numpys_values_in_every_linker(linker):
    for c in (0.3, 1.7, -2.2e-3):
        f = _build(lambda x, y, c=c: nt.exp(x * c) - y / c, linker)
        np.testing.assert_allclose(f(A, B), np.exp(A * c) - B / c, rtol=1e-15, atol=1e-15)


def test_constants_the_compiler_uses_stay_in_the_c_text():
    assert is_structural(2.0, "float64") and is_structural(-0.25, "float32")
    assert is_structural(0.0, "float64") and is_structural(np.inf, "float64")
    assert is_structural(3, "int64") and not is_structural(0.3, "float64")
    f1 = _build(lambda x, y: x * 2.0 + y)
    f2 = _build(lambda x, y: x * 4.0 + y)
    assert f1.program.module is not f2.program.module
    p1 = _build(lambda x, y: x ** 2.5 + y)
    p2 = _build(lambda x, y: x ** 3.5 + y)
    assert p1.program.module is not p2.program.module  # pow exponents are structure
    np.testing.assert_allclose(p2(np.abs(A), B), np.abs(A) ** 3.5 + B, rtol=1e-15)


def test_float32_and_reductions_and_trusted_calls():
    x = nt.fvector("x")
    for c in (0.3, 0.7):
        f = ng.function([x], (x * np.float32(c) - 1).sum(), linker="c")
        a = np.linspace(0, 1, 9, dtype="float32")
        assert f(a) == pytest.approx(float((a * np.float32(c) - 1).sum()), rel=1e-6)
    for c in (0.3, 0.7):
        f = _build(lambda x, y, c=c: x * c + y, trust_input=True)
        np.testing.assert_array_equal(f(A, B), A * c + B)
        np.testing.assert_array_equal(f(A, B), A * c + B)


def test_an_in_place_update_with_a_lifted_constant():
    for c in (0.3, 0.9):
        w = ng.shared(np.ones(5), name="w")
        g = nt.dvector("g")
        f = ng.function([g], [], updates={w: w - c * g}, linker="c")
        f(np.arange(5.0))
        np.testing.assert_array_equal(w.get_value(), 1 - c * np.arange(5.0))


def test_a_c_error_still_names_the_node():
    f = _build(lambda x, y: x * 0.37 + y)
    with pytest.raises(ValueError, match="0.37"):
        f(A, np.ones(3))
