"""Complex numbers in the C linkers (issue 21): C99 ``complex.h`` where NumPy uses it,
Python elsewhere, and the function says which.

NumPy's complex ``exp log sqrt sin cos tan tanh sinh cosh arcsin arccos arctan
arcsinh arccosh arctanh`` call the C library's ``cexp clog csqrt ...`` (C99
Annex G: branch cuts, signed zeros, infinities and NaN), so nbgraph's C calls
them too: checked against NumPy on random values, on both sides of every
branch cut (signed zeros) and at every pair of special parts (0, -0, 1, inf,
-inf, nan, huge), within ``SIMD_ULPS`` ulps per part (0 on glibc, where NumPy
calls the same functions: the tolerance is for platforms whose NumPy carries
its own versions) with NaN, infinities and the sign of zero exact.

NumPy computes complex ``log1p expm1 log2 log10 exp2 power``, the reductions
(sum, prod, mean) and ``dot`` of complex operands by its own code: those nodes
run in Python under the default linker, which their kinds, the profile and
the diagram show, and ``linker="c"`` refuses them saying so.  Values agree with
NumPy in every linker.
"""

import itertools

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c.linker import CLinkerRefusal, c_capable
from nbgraph.tensor.scalar_math import C99_COMPLEX
from ulps import SIMD_ULPS, assert_ulp_close

COMPLEX = ["complex64", "complex128"]
C99 = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos",
       "arctan", "arcsinh", "arccosh", "arctanh"]
PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-30, 89.0, 710.0, 1e300, -1e300,
         np.inf, -np.inf, np.nan]


def _points(dtype):
    """Random values, both sides of the branch cuts, and every pair of special parts."""
    rng = np.random.default_rng(7)
    random = rng.standard_normal(200) * 3 + 1j * rng.standard_normal(200) * 3
    axis = np.array([0.3, 0.9, 1.0, 1.5, 4.0, 1e10])
    cuts = [complex(s * a, z) for a in axis for s in (1, -1) for z in (0.0, -0.0)]  # real axis
    cuts += [complex(z, s * a) for a in axis for s in (1, -1) for z in (0.0, -0.0)]  # imaginary
    special = [complex(a, b) for a, b in itertools.product(PARTS, repeat=2)]
    with np.errstate(over="ignore"):
        return np.concatenate([random, cuts, special]).astype(dtype)


def test_the_c99_table_is_the_ops_c_function():
    assert {_scalar_op(name).c_function for name in C99} == C99_COMPLEX


def _scalar_op(name):
    return getattr(nt, name)(nt.zvector()).owner.op.scalar_op


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("linker", ["c", "cvm", "debug"])
def test_complex_functions_run_in_c_and_are_numpys(dtype, linker):
    z = nt.tensor(dtype, (None,), "z")
    value = _points(dtype)
    outputs = [getattr(nt, name)(z) for name in C99]
    assert all(c_capable(out.owner)[0] for out in outputs)
    f = ng.function([z], outputs, linker=linker)
    if linker == "cvm":
        f.program.wait_compiled()
        assert set(f.program.kinds) == {"c"}
    with np.errstate(all="ignore"):
        got = f(value)
        for name, g in zip(C99, got, strict=True):
            want = getattr(np, name)(value)
            assert g.dtype == want.dtype
            assert_ulp_close(g, want, SIMD_ULPS, "%s %s %s" % (name, dtype, linker))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_functions_inside_a_fused_loop(dtype):
    z = nt.tensor(dtype, (None,), "z")
    value = _points(dtype)[:220]
    out = nt.sqrt(nt.exp(z) * 2 + nt.log(z)) - nt.tanh(z)
    f = ng.function([z], out, linker="c")
    assert [type(n.op.scalar_op).__name__ for n in f.program.nodes] == ["Composite"]
    with np.errstate(all="ignore"):
        want = np.sqrt(np.exp(value) * 2 + np.log(value)) - np.tanh(value)
        got = f(value)
    # the same operations in the same order: NaN, infinities and zeros where NumPy's are
    assert_ulp_close(got, want, 2 * SIMD_ULPS, "fused %s" % dtype)


# the complex nodes NumPy computes by its own code: Python, shown as such
FALLBACKS = [
    ("log1p", lambda z, w: nt.log1p(z), lambda v, u: np.log1p(v)),
    ("expm1", lambda z, w: nt.expm1(z), lambda v, u: np.expm1(v)),
    ("log10", lambda z, w: nt.log10(z), lambda v, u: np.log10(v)),
    ("pow", lambda z, w: z ** w, lambda v, u: v ** u),
    ("sum", lambda z, w: z.sum(), lambda v, u: v.sum()),
    ("prod", lambda z, w: z.prod(), lambda v, u: v.prod()),
    ("mean", lambda z, w: z.mean(), lambda v, u: v.mean()),
    ("dot", lambda z, w: nt.dot(z, w), lambda v, u: np.dot(v, u)),
]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name, build, reference", FALLBACKS, ids=[c[0] for c in FALLBACKS])
def test_complex_nodes_without_c_run_in_python_and_say_so(dtype, name, build, reference):
    from nbgraph.display.diagram import diagram

    z, w = nt.tensor(dtype, (None,), "z"), nt.tensor(dtype, (None,), "w")
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(dtype)
    u = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(dtype)
    out = build(z, w)
    node = out.owner.inputs[0].owner if name == "mean" else out.owner  # mean: sum / n
    capable, why = c_capable(node)
    assert not capable and "runs in Python" in why, why
    with pytest.raises(CLinkerRefusal, match="runs in Python"):
        ng.function([z, w], out, linker="c", on_unused_input="ignore")
    want = reference(v, u)
    tolerance = {"complex64": 2e-5, "complex128": 1e-12}[dtype]
    for linker in ["py", "cvm", "debug"]:
        f = ng.function([z, w], out, linker=linker, on_unused_input="ignore", profile=True)
        got = f(v, u)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        if linker != "cvm":
            continue
        f.program.wait_compiled()
        kinds = [(str(n.op), k) for n, k in zip(f.program.nodes, f.program.kinds, strict=True)]
        assert (str(node.op), "py") in kinds, kinds
        f(v, u)
        assert (str(node.op), "py") in [(r["op"], r["kind"]) for r in f.profile.rows()]
        assert "Python" in diagram(f).source
