"""complex64/complex128 and float16 through nbgraph (issue 21, item 12), NumPy as the oracle.

What is checked: promotion (NumPy's rules, Python complex weak as in NEP 50);
every elementwise op NumPy defines on these dtypes, in the Python, C, C-VM and
debug linkers (exact where NumPy is exact, a few ulps for transcendental
functions; float16 is computed in float32 and rounded, as NumPy does);
reductions and dot; gradients of real costs of complex graphs on Theano's terms
(``dC/dRe(z) + i dC/dIm(z)``, checked by finite differences); refusals that
say why (a complex cost, an op NumPy does not define on complex numbers, the C
linker on a node without complex C); and that a node running in Python under
the C-VM linker shows as such in the function's kinds, profile and diagram.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c.linker import CLinkerRefusal
from ulps import assert_ulp_close

REAL = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64"]
EXTENDED = ["float16", "complex64", "complex128"]
LINKERS = ["py", "c", "cvm", "debug"]


def _values(dtype, n=12, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(n) * 2 + 1j * rng.standard_normal(n) * 2).astype(dtype)
    return (rng.standard_normal(n) * 2).astype(dtype)


@pytest.mark.parametrize("a", REAL + EXTENDED)
@pytest.mark.parametrize("b", EXTENDED)
def test_binary_promotion_is_numpys(a, b):
    x, y = nt.tensor(a, (None,), "x"), nt.tensor(b, (None,), "y")
    assert (x + y).dtype == np.result_type(a, b).name
    assert (y * x).dtype == np.result_type(b, a).name


@pytest.mark.parametrize("dtype", REAL + EXTENDED)
@pytest.mark.parametrize("weak", [2, 2.5, 1j])
def test_python_numbers_stay_weak_next_to_extended_dtypes(dtype, weak):
    x = nt.tensor(dtype, (None,), "x")
    with np.errstate(all="ignore"):
        expected = (np.ones(2, dtype=dtype) * weak).dtype
    if dtype == "bool" and isinstance(weak, int):
        expected = np.dtype("int64")
    assert (x * weak).dtype == expected.name


# (name, function, NumPy's function, arity, tolerance in ulps)
OPS = [
    ("add", lambda a, b: a + b, np.add, 2, 0),
    ("sub", lambda a, b: a - b, np.subtract, 2, 0),
    ("mul", lambda a, b: a * b, np.multiply, 2, 0),
    ("true_div", lambda a, b: a / b, np.true_divide, 2, 0),
    ("neg", lambda a: -a, np.negative, 1, 0),
    ("sqr", nt.sqr, np.square, 1, 0),
    ("abs", nt.abs, np.abs, 1, 2),
    ("real", nt.real, np.real, 1, 0),
    ("imag", nt.imag, np.imag, 1, 0),
    ("conj", nt.conj, np.conj, 1, 0),
    ("angle", nt.angle, np.angle, 1, 4),
    ("exp", nt.exp, np.exp, 1, 4),
    ("log", nt.log, np.log, 1, 4),
    ("sqrt", nt.sqrt, np.sqrt, 1, 4),
    ("sin", nt.sin, np.sin, 1, 4),
    ("tanh", nt.tanh, np.tanh, 1, 4),
    ("pow", lambda a, b: a ** b, np.power, 2, 4),
    ("eq", nt.eq, np.equal, 2, 0),
    ("maximum", nt.maximum, np.maximum, 2, 0),
]


@pytest.mark.parametrize("dtype", EXTENDED)
@pytest.mark.parametrize("linker", LINKERS)
def test_elementwise_ops_agree_with_numpy(dtype, linker):
    # one function per dtype and linker, every op an output (linker="c": the ops with C)
    from nbgraph.linkers.c.linker import c_capable

    x, y = nt.tensor(dtype, (None,), "x"), nt.tensor(dtype, (None,), "y")
    xv, yv = _values(dtype, seed=0), _values(dtype, seed=1)
    outputs, expected, names, tolerances = [], [], [], []
    for name, build, reference, arity, ulps in OPS:
        args, values = [x, y][:arity], [xv, yv][:arity]
        if name == "pow" and dtype == "float16":
            args, values = [x, nt.abs(y)], [xv, np.abs(yv)]
        out = build(*args)
        if linker == "c" and not c_capable(out.owner)[0]:
            continue  # refused by linker="c" (test_refusals_say_why), run by the others
        with np.errstate(all="ignore"):
            expected.append(reference(*values))
        outputs.append(out)
        names.append(name)
        # float16: NumPy and C both compute in float32 and round, at most a half ulp apart
        tolerances.append(min(ulps, 1) if dtype == "float16" else ulps)
    assert {"add", "mul", "true_div", "abs"} <= set(names)
    f = ng.function([x, y], outputs, linker=linker, on_unused_input="ignore")
    with np.errstate(all="ignore"):
        results = f(xv, yv)
    for name, got, want, ulps in zip(names, results, expected, tolerances, strict=True):
        assert got.dtype == want.dtype, name
        assert_ulp_close(got, want, ulps, "%s %s %s" % (name, dtype, linker))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_c_complex_arithmetic_is_numpys_bit_for_bit(dtype):
    # NumPy's multiplication and (Smith's) division, including tiny and huge parts
    rng = np.random.default_rng(1)
    scale = 10.0 ** rng.integers(-30, 30, 400)
    a = ((rng.standard_normal(400) + 1j * rng.standard_normal(400)) * scale).astype(dtype)
    b = ((rng.standard_normal(400) + 1j * rng.standard_normal(400)) * scale[::-1]).astype(dtype)
    b[:5] = [0, 1j, 1, np.inf, complex(0, -np.inf)]
    x, y = nt.tensor(dtype, (None,), "x"), nt.tensor(dtype, (None,), "y")
    f = ng.function([x, y], [x * y, x / y, x + y, -(x - y)], linker="c")
    with np.errstate(all="ignore"):
        for got, want in zip(f(a, b), [a * b, a / b, a + b, -(a - b)], strict=True):
            assert_ulp_close(got, want, 0, dtype)


def test_float16_is_computed_in_float32_and_rounded_like_numpy():
    h = nt.tensor("float16", (None,), "h")
    x = _values("float16", 200)
    f = ng.function([h], [h * h + 1, (h + 0.1) / 3, nt.exp(h) - h], linker="c")
    with np.errstate(all="ignore"):
        got = f(x)
        want = [x * x + np.float16(1), (x + np.float16(0.1)) / np.float16(3), np.exp(x) - x]
    assert_ulp_close(got[0], want[0], 0, "h*h+1")
    assert_ulp_close(got[1], want[1], 0, "(h+0.1)/3")
    assert_ulp_close(got[2], want[2], 1, "exp(h)-h")
    assert all(g.dtype == np.float16 for g in got)


@pytest.mark.parametrize("dtype", EXTENDED)
@pytest.mark.parametrize("kind", ["sum", "prod", "mean"])
@pytest.mark.parametrize("linker", ["py", "cvm", "debug"])
def test_reductions_agree_with_numpy(dtype, kind, linker):
    x = nt.tensor(dtype, (None, None), "x")
    value = _values(dtype, 12).reshape(3, 4) / 2
    for axis in [None, 0, 1, (0, 1)]:
        got = ng.function([x], getattr(x, kind)(axis=axis), linker=linker)(value)
        want = getattr(value, kind)(axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == "float16" else 1e-5)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dot_of_complex_matrices_and_its_gradient(dtype):
    a, b = nt.tensor(dtype, (None, None), "a"), nt.tensor(dtype, (None, None), "b")
    av, bv = _values(dtype, 6).reshape(2, 3), _values(dtype, 12, 1).reshape(3, 4)
    np.testing.assert_allclose(ng.function([a, b], nt.dot(a, b))(av, bv), av @ bv, rtol=1e-5)
    cost = nt.abs(nt.dot(a, b)).sum()
    ga = ng.function([a, b], ng.grad(cost, a))(av, bv)
    np.testing.assert_allclose(ga, _numeric_grad(lambda v: np.abs(v @ bv).sum(), av),
                               rtol=1e-3 if dtype == "complex64" else 1e-6, atol=1e-3)


def _numeric_grad(cost, value, eps=1e-6):
    """dC/dRe + i dC/dIm by central differences (in complex128)."""
    value = value.astype(np.complex128)
    grad = np.zeros_like(value)
    for index in np.ndindex(*value.shape):
        for unit in (1, 1j):
            step = np.zeros_like(value)
            step[index] = eps * unit
            grad[index] += unit * (cost(value + step) - cost(value - step)) / (2 * eps)
    return grad


GRAD_CASES = [
    ("abs of a polynomial", lambda z: nt.abs(z * z + 1).sum(), lambda v: np.abs(v * v + 1).sum()),
    ("real of exp", lambda z: nt.real(nt.exp(z)).sum(), lambda v: np.exp(v).real.sum()),
    ("imag of a quotient", lambda z: nt.imag(z / (z + 2)).sum(),
     lambda v: (v / (v + 2)).imag.sum()),
    ("angle", lambda z: nt.angle(z).sum(), lambda v: np.angle(v).sum()),
    ("conj", lambda z: nt.real(nt.conj(z) * z * 3j).sum(),
     lambda v: (np.conj(v) * v * 3j).real.sum()),
    ("abs of a sum", lambda z: nt.abs(z.sum()), lambda v: abs(v.sum())),
    ("power", lambda z: nt.real(z ** 2.5).sum(), lambda v: (v ** 2.5).real.sum()),
    ("log times sin", lambda z: nt.real(nt.log(z) * nt.sin(z)).sum(),
     lambda v: (np.log(v) * np.sin(v)).real.sum()),
]


@pytest.mark.parametrize("what, build, reference", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_gradients_of_real_costs_follow_theanos_convention(what, build, reference, linker):
    z = nt.tensor("complex128", (None,), "z")
    value = np.array([1 + 2j, -3 + 0.5j, 0.3 - 0.7j])
    got = ng.function([z], ng.grad(build(z), z), linker=linker)(value)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, _numeric_grad(reference, value), rtol=1e-6, atol=1e-8)


def test_a_real_input_mixed_with_complex_gets_the_real_part_of_the_gradient():
    x = nt.dvector("x")
    cost = nt.abs(x * (1 + 2j) + 1j).sum()
    value = np.array([0.5, -1.0, 2.0])
    got = ng.function([x], ng.grad(cost, x))(value)
    assert got.dtype == np.float64
    numeric = _numeric_grad(lambda v: np.abs(v * (1 + 2j) + 1j).sum(), value).real
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def test_float16_gradients_are_float16():
    h = nt.tensor("float16", (None,), "h")
    g = ng.function([h], ng.grad((h * h).sum(), h))(np.array([1, 2, 3], dtype="float16"))
    assert g.dtype == np.float16
    np.testing.assert_array_equal(g, [2, 4, 6])


def test_refusals_say_why():
    z = nt.tensor("complex128", (None,), "z")
    with pytest.raises(TypeError, match="real cost"):
        ng.grad(z.sum(), z)
    with pytest.raises(TypeError, match="floor does not support inputs of dtype .complex128"):
        nt.floor(z)
    with pytest.raises(TypeError, match="not defined for complex"):
        nt.sigmoid(z)
    with pytest.raises(TypeError):
        nt.dvector("x").type.filter(np.array([1 + 1j]))
    with pytest.raises(CLinkerRefusal, match="complex128.*runs in Python"):
        ng.function([z], nt.log1p(z), linker="c")  # NumPy's own complex log1p: no C


def test_a_python_fallback_node_shows_in_kinds_profile_and_diagram():
    z = nt.tensor("complex128", (None,), "z")
    f = ng.function([z], [nt.log1p(z), z * 2j], linker="cvm", profile=True)
    f.program.wait_compiled()  # cvm compiles in the background (Python meanwhile)
    value = _values("complex128", 5)
    got = f(value)
    np.testing.assert_allclose(got[0], np.log1p(value))
    program = f.program
    kinds = {str(node.op): kind for node, kind in zip(program.nodes, program.kinds, strict=True)}
    assert kinds["Elemwise{log1p}"] == "py"
    assert kinds["Elemwise{mul}"] == "c"
    from nbgraph.linkers.c.linker import c_capable

    log1p_node = [n for n in f.program.nodes if str(n.op) == "Elemwise{log1p}"][0]
    assert "runs in Python" in c_capable(log1p_node)[1]
    assert {row["op"]: row["kind"] for row in f.profile.rows()}["Elemwise{log1p}"] == "py"
    from nbgraph.display.diagram import diagram

    assert "Python" in diagram(f).source


@pytest.mark.parametrize("linker", ["cvm", "debug"])
def test_fused_loops_with_complex_or_float16_intermediates_stay_right(linker):
    # real inputs and outputs, complex or float16 values inside one fused Composite
    x = nt.dvector("x")
    f32 = nt.fvector("f")
    xv = np.array([1.0, 2.0, -0.5])
    fv = np.array([1.1, 2.3, -0.7], dtype="float32")
    f = ng.function([x, f32], [nt.real(nt.exp(x * 1j)) * 2, nt.abs(x * (1 + 2j) + 1j) * 2,
                               nt.cast(nt.cast(f32, "float16") * 3 + 1, "float32") * 2],
                    linker=linker)
    got = f(xv, fv)
    np.testing.assert_allclose(got[0], np.exp(xv * 1j).real * 2, rtol=1e-13)
    np.testing.assert_allclose(got[1], np.abs(xv * (1 + 2j) + 1j) * 2, rtol=1e-13)
    want = (fv.astype("float16") * np.float16(3) + np.float16(1)).astype("float32") * 2
    np.testing.assert_array_equal(got[2], want)


def test_views_shapes_and_reshapes_of_complex_and_float16_run_in_c():
    z = nt.tensor("complex64", (None, None), "z")
    w = nt.tensor("complex64", (None,), "w")
    h = nt.tensor("float16", (None, None), "h")
    zv = (np.arange(6).reshape(2, 3) + 1j).astype("complex64")
    wv = np.array([1j, 2, 3 - 1j], "complex64")
    hv = np.ones((2, 3), "float16")
    f = ng.function([z, w, h], [z * w, z.T.reshape((6,)) + 1j, (h * w.real).reshape((3, 2)),
                                z.shape[0] * 2, w.conj().imag], linker="c")
    expected = [zv * wv, zv.T.reshape(6) + 1j, (hv * wv.real).reshape(3, 2), 4, wv.conj().imag]
    for got, want in zip(f(zv, wv, hv), expected, strict=True):
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool", "complex64", "float16"])
@pytest.mark.parametrize("linker", ["py", "c"])
def test_casting_complex_is_numpys_astype_without_its_warning(dtype, linker):
    import warnings

    z = nt.tensor("complex128", (None,), "z")
    value = np.array([1.5 + 2j, -3.7 - 1j, 0j, 2j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = value.astype(dtype)
    f = _compile_or_none(z, nt.cast(z, dtype), linker)
    if f is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning from nbgraph
        got = f(value)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _compile_or_none(z, out, linker):
    try:
        return ng.function([z], out, linker=linker)
    except CLinkerRefusal:
        return None


KINDS = ["scalar", "vector", "matrix", "row", "col", "tensor3", "tensor4"]
PLURALS = {"scalar": "scalars", "vector": "vectors", "matrix": "matrices", "row": "rows",
           "col": "cols", "tensor3": "tensor3s", "tensor4": "tensor4s"}


@pytest.mark.parametrize("prefix, dtype", [("c", "complex64"), ("z", "complex128")])
@pytest.mark.parametrize("kind", KINDS)
def test_complex_typed_constructors_are_theanos(prefix, dtype, kind):
    # cmatrix / zmatrix ...: the float64 twin's static shape with a complex dtype, a Type too
    make, twin = getattr(nt, prefix + kind), getattr(nt, "d" + kind)
    made = make("v")
    assert (made.name, made.dtype, made.type.shape) == ("v", dtype, twin.shape)
    assert made.type == make and make.__doc__ and dtype in make.__doc__
    assert prefix + kind in nt.__all__ and PLURALS[kind].join([prefix, ""]) in nt.__all__
    several = getattr(nt, prefix + PLURALS[kind])("a, b")
    assert [(v.name, v.type) for v in several] == [("a", make), ("b", make)]
    with pytest.raises(ValueError, match="dimension"):
        make(shape=(2,) * (len(twin.shape) + 1))
    value = np.full((1,) * len(twin.shape), 1 + 2j, dtype=dtype)
    np.testing.assert_array_equal(ng.function([made], made * 2)(value), value * 2)
