"""Every Op and every scalar op under the debug linker: Python and C must agree.

The debug linker runs ``perform`` and the C kernel of each node on copies of
its inputs and raises when they disagree (or when a kernel writes where it
should not).  Each dtype gets ONE compiled function holding every scalar op
that supports it (one C module), called on contiguous, strided, reversed,
broadcast and 0-d inputs, with NaN and infinities among the values; results
are also compared with NumPy.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import Elemwise

pytestmark = pytest.mark.needs_cc

UNARY = ["neg", "abs_", "sign", "sqr", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos",
         "tan", "tanh", "sigmoid", "softplus", "invert", "identity"]
BINARY = ["add", "sub", "mul", "true_div", "int_div", "mod", "pow", "maximum", "minimum",
          "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor"]
DTYPES = ["float64", "float32", "int8", "int32", "int64", "uint8", "uint64", "bool"]
N = 24


def _values(dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if np.dtype(dtype).kind == "f":
        base = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, -100.0, 1e10, -1e-3, np.nan,
                np.inf, -np.inf, 2.0, 0.25, 88.5, -30.0, 1e-30, 5.0, -7.0, 0.75, 12.0, -0.5]
        v = np.array(base, dtype=dtype)
        return v[rng.permutation(N)] if seed else v
    info = np.iinfo(dtype)
    base = [0, 1, -1, 2, -2, 3, 7, -7, 100, -100, info.max, info.min, info.max - 1,
            info.min + 1, 5, -5, 13, -13, 64, 10, -3, 4, 9, -9]
    v = np.array([b for b in base if info.min <= b <= info.max] * 2, dtype=dtype)[:N]
    return v[rng.permutation(N)] if seed else v


def _supported(op, dtypes):
    try:
        op.make_node(*[ps.get_scalar_type(d)() for d in dtypes])
        return True
    except TypeError:
        return False


def _build(dtype):
    """One debug function per dtype over vectors x, y, e (e: a non-negative exponent), a
    matrix m broadcast against them, and 0-d s, t.

    Each broadcast pattern is ONE ``Elemwise(Composite)`` node whose outputs are every
    scalar op's result (a few kernels per module keep compile times short); the plain
    one-op Elemwise loops are covered by :func:`test_plain_elemwise_loops`.
    """
    tt = lambda shape, name: nt.tensor(dtype, shape, name)  # noqa: E731
    x, y, e, m = tt((None,), "x"), tt((None,), "y"), tt((None,), "e"), tt((None, None), "m")
    s, t = tt((), "s"), tt((), "t")
    st = ps.get_scalar_type(dtype)
    groups = {"x": ([x, y, e], [st("a"), st("b"), st("c")], [], []),
              "m": ([m, y, e], [st("a"), st("b"), st("c")], [], []),
              "s": ([s, t], [st("a"), st("b")], [], [])}
    for name in UNARY:
        op = getattr(ps, name)
        if _supported(op, (dtype,)):
            for key, pattern in (("x", "x"), ("s", "s")):
                _, (a, *_), outs, names = groups[key]
                outs.append(op(a))
                names.append((name, pattern))
    for name in BINARY:
        op = getattr(ps, name)
        if not _supported(op, (dtype, dtype)):
            continue
        for key, pattern in (("x", "xy"), ("m", "mx"), ("s", "st")):
            _, inner, outs, names = groups[key]
            second = inner[2] if name == "pow" and key != "s" else inner[1]
            outs.append(op(inner[0], second))
            names.append((name, pattern))
    _, (a, b, c), outs, names = groups["x"]
    for dst in ["float64", "float32", "int16", "uint32", "bool"]:
        outs.append(ps.Cast(dst)(a))
        names.append(("cast_" + dst, "x"))
    _, (a, b, c), outs, names = groups["m"]
    outs.append(ps.switch(b, c, a))
    names.append(("switch", "yem"))
    all_outs, all_names = [], []
    for _key, (tensors, inner, outs, names) in groups.items():
        comp = ps.Composite(inner, outs)
        results = Elemwise(comp)(*tensors)
        all_outs += results if isinstance(results, list) else [results]
        all_names += names
    f = ng.function([x, y, e, m, s, t], all_outs, linker="debug", rewrite=None)
    return f, all_names


_FUNCTIONS = {}


def function_for(dtype):
    if dtype not in _FUNCTIONS:
        _FUNCTIONS[dtype] = _build(dtype)
    return _FUNCTIONS[dtype]


def _layouts(a):
    """The same values as a contiguous, a strided and a reversed (negative-stride) array."""
    big = np.zeros(2 * len(a), dtype=a.dtype)
    big[::2] = a
    rev = a[::-1].copy()
    return {"contiguous": a, "strided": big[::2], "reversed": rev[::-1]}


def _numpy(name, args, dtype):
    with np.errstate(all="ignore"):
        if name.startswith("cast_"):
            return args[0].astype(name[5:])
        if name == "switch":
            return np.where(*args)
        return getattr(ps, name).nfunc(*args)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_scalar_op_python_and_c_agree(dtype):
    f, names = function_for(dtype)
    assert all(k == "c" for k in f.program.kinds), f.program.kinds
    assert sum("Composite" in str(node.op) for node in f.program.nodes) == 3
    x = _values(dtype, 0)
    y = _values(dtype, 1)
    e = np.abs(_values(dtype, 2)) % 5 if np.dtype(dtype).kind in "iu" else _values(dtype, 2)
    if dtype == "bool":
        e = _values(dtype, 2)
    m = np.stack([_values(dtype, 3), _values(dtype, 4), x])
    if np.dtype(dtype).kind == "f":  # float -> int casts of NaN/inf/huge are platform-defined
        x_cast = np.where(np.isfinite(x) & (np.abs(x) < 100), x, 1).astype(dtype)
    else:
        x_cast = x
    for layout, (xa, ya, ea) in zip(
            ["contiguous", "strided", "reversed"],
            zip(_layouts(x_cast).values(), _layouts(y).values(), _layouts(e).values(),
                strict=True), strict=True):
        for s_val, t_val in [(x[0], y[0]), (x[5], y[11]), (x[11], y[12])]:
            s, t = np.asarray(s_val), np.asarray(t_val)
            mm = m.copy()
            mm[2] = x_cast
            if layout == "strided":
                mm = np.asfortranarray(mm)
            elif layout == "reversed":
                mm = mm[:, ::-1].copy()[:, ::-1]
            results = f(xa, ya, ea, mm, s, t)  # the debug linker checks Python against C
            for (name, pattern), got in zip(names, results, strict=True):
                args = {"x": [xa], "s": [s], "xy": [xa, ya], "mx": [mm, ea if name == "pow"
                                                                    else ya],
                        "st": [s, t], "yem": [ya, ea, mm]}[pattern]
                if pattern == "xy" and name == "pow":
                    args = [xa, ea]
                want = np.asarray(_numpy(name, args, dtype))
                assert got.shape == want.shape, (name, pattern, layout)
                np.testing.assert_allclose(got, want, rtol=1e-5 if "32" in str(got.dtype)
                                           else 1e-12, equal_nan=True,
                                           err_msg="%s(%s) %s" % (name, pattern, layout))


@pytest.mark.parametrize("dtype", ["float64", "int16"])
def test_plain_elemwise_loops(dtype):
    """Unfused Elemwise nodes (one kernel each) on every layout, with broadcasting."""
    x, y = nt.tensor(dtype, (None,), "x"), nt.tensor(dtype, (None,), "y")
    m = nt.tensor(dtype, (None, None), "m")
    c = nt.tensor(dtype, (None, 1), "c")
    s = nt.tensor(dtype, (), "s")
    outs = [x + y, nt.maximum(m, x), m * c, nt.exp(m), x - s, s * s, m // c,
            nt.cast(m, "float32"), nt.switch(x > y, x, y), (m + 1) % (c + 3)]
    f = ng.function([x, y, m, c, s], outs, linker="debug", rewrite=None)
    assert set(f.program.kinds) == {"c"} or "py" not in [
        k for k, nd in zip(f.program.kinds, f.program.nodes, strict=True)
        if isinstance(nd.op, Elemwise)]
    xv, yv = _values(dtype, 0)[:6], _values(dtype, 1)[:6]
    mv = np.stack([_values(dtype, 2)[:6], _values(dtype, 3)[:6], xv])
    cv = _values(dtype, 4)[:3].reshape(3, 1)
    sv = np.asarray(_values(dtype, 5)[3])
    layouts = [(xv, yv, mv, cv), (_layouts(xv)["strided"], _layouts(yv)["reversed"],
                                  np.asfortranarray(mv), cv[::-1].copy()[::-1]),
               (xv, yv, mv[:, ::-1].copy()[:, ::-1], np.ascontiguousarray(cv))]
    for xa, ya, ma, ca in layouts:
        res = f(xa, ya, ma, ca, sv)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(res[0], xa + ya)
            np.testing.assert_array_equal(res[2], ma * ca)
            np.testing.assert_array_equal(res[6], ma // ca)


MIXED = [("int8", "float32"), ("int64", "uint64"), ("bool", "int8"), ("uint8", "int8"),
         ("float32", "float64"), ("int32", "float64"), ("uint64", "float32")]


def test_mixed_dtype_binary_ops():
    xs, ys, outs = [], [], []
    for a, b in MIXED:
        x, y = nt.tensor(a, (None,), "x_" + a), nt.tensor(b, (None,), "y_" + b)
        xs.append(x)
        ys.append(y)
        for name in ["add", "sub", "mul", "true_div", "maximum", "lt", "eq", "int_div", "mod"]:
            op = getattr(ps, name)
            if _supported(op, (a, b)):
                outs.append(Elemwise(op)(x, y))
    f = ng.function(xs + ys, outs, linker="debug", rewrite=None)
    assert set(f.program.kinds) == {"c"}
    args = [_values(a, 7) for a, _ in MIXED] + [_values(b, 8) for _, b in MIXED]
    f(*args)


def test_composites_from_fusion_agree():
    x, y = nt.fvector("x"), nt.fvector("y")
    i = nt.bvector("i")
    outs = [nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y,
            nt.switch(x > y, nt.log1p(nt.abs(x)), nt.sigmoid(y)) - i // 3,
            (i * i + 1) * x,
            nt.tanh(x) ** 2 * nt.tanh(x) + nt.softplus(y)]
    f = ng.function([x, y, i], outs, linker="debug")
    assert any("Composite" in str(n.op) for n in f.program.nodes)
    xv, yv = _values("float32", 1), _values("float32", 2)
    iv = _values("int8", 3)
    for layout in ("contiguous", "strided", "reversed"):
        f(_layouts(xv)[layout], _layouts(yv)[layout], _layouts(iv)[layout])


def _check_reductions(dtype, m):
    ops = []
    for kind in ["sum", "prod", "max", "min"]:
        for axis in [None, 0, 1, (0, 2), (), (1, 2), 2]:
            ops.append((kind, axis))
    t = nt.tensor(dtype, (None, None, None), "t")
    outs = [getattr(nt, kind)(t, axis=axis) for kind, axis in ops]
    f = ng.function([t], outs, linker="debug", rewrite=None)
    assert set(f.program.kinds) == {"c"}
    for got, (kind, axis) in zip(f(m), ops, strict=True):
        with np.errstate(all="ignore"):
            want = getattr(np, kind)(m, axis=axis)
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-10,
                                   equal_nan=True, err_msg="%s %s" % (kind, axis))
    return f


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "uint16", "bool"])
def test_reductions_over_any_axes(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        base = rng.integers(0, 2, (4, 5, 6)).astype(bool)
    elif np.dtype(dtype).kind == "f":
        base = rng.standard_normal((4, 5, 6)).astype(dtype)
    else:
        base = rng.integers(-3, 4, (4, 5, 6)).astype(dtype) if np.dtype(dtype).kind == "i" \
            else rng.integers(0, 4, (4, 5, 6)).astype(dtype)
    _check_reductions(dtype, base)
    _check_reductions(dtype, base.transpose(2, 0, 1).copy().transpose(1, 2, 0))
    _check_reductions(dtype, base[:, ::-1, ::2])
    _check_reductions(dtype, np.broadcast_to(base[:, :1, :], (4, 5, 6)))
    if np.dtype(dtype).kind == "f":
        nanny = base.copy()
        nanny[1, 2, 3] = np.nan
        nanny[0, 0, 0] = np.inf
        nanny[3, 4, 5] = -np.inf
        _check_reductions(dtype, nanny)


def test_empty_reductions():
    t = nt.dtensor3("t")
    f = ng.function([t], [t.sum(axis=1), t.prod(axis=(0, 1)), t.max(axis=2)], linker="debug",
                    rewrite=None)
    a, b, c = f(np.zeros((0, 3, 2)))
    assert a.shape == (0, 2) and np.all(b == 1) and c.shape == (0, 3)
    g = ng.function([t], t.max(axis=1), linker="c", rewrite=None)
    with pytest.raises(ValueError, match="empty"):
        g(np.zeros((2, 0, 3)))


def test_large_float_sum_is_pairwise_accurate():
    x = nt.fvector("x")
    f = ng.function([x], x.sum(), linker="c")
    v = np.full(10 ** 6, 0.1, dtype=np.float32)
    got = f(v)
    assert got.dtype == np.float32
    assert abs(float(got) - 1e5) / 1e5 < 1e-5  # naive float32 accumulation is off by ~1%


def test_structural_ops_agree():
    m = nt.dmatrix("m")
    v = nt.dvector("v")
    n = nt.lscalar("n")
    outs = [
        m.T,                                   # DimShuffle (transpose)
        m.dimshuffle(0, "x", 1),               # DimShuffle (new axis)
        nt.specify_shape(m, (3, None)),        # SpecifyShape
        m.reshape((2, -1)),                    # Reshape
        m.T.reshape((12,)),                    # Reshape of a non-contiguous input (a copy)
        m.shape,                               # Shape
        m.shape[1],                            # ShapeI (lifted)
        nt.alloc(v, 2, 3, 4),                  # Alloc with broadcasting
        nt.zeros((n, 2)),                      # Alloc of a constant
        nt.ones_like(m) * 2,
        (m * v).sum(axis=0),                   # FusedReduce
    ]
    f = ng.function([m, v, n], outs, linker="debug", on_unused_input="ignore")
    kinds = dict(zip([type(nd.op).__name__ for nd in f.program.nodes], f.program.kinds,
                     strict=True))
    for name in ["DimShuffle", "SpecifyShape", "Reshape", "Alloc"]:
        assert kinds.get(name) == "c", (name, kinds)
    M = np.arange(12.0).reshape(3, 4)
    for arg in [M, M[::-1], np.asfortranarray(M)]:
        res = f(arg, np.arange(4.0), np.asarray(5))
        np.testing.assert_array_equal(res[0], arg.T)
        np.testing.assert_array_equal(res[3], arg.reshape(2, -1))
        np.testing.assert_array_equal(res[4], arg.T.reshape(12))
        np.testing.assert_array_equal(res[5], [3, 4])
        np.testing.assert_array_equal(res[7], np.broadcast_to(np.arange(4.0), (2, 3, 4)))
        np.testing.assert_array_equal(res[8], np.zeros((5, 2)))
        np.testing.assert_allclose(res[10], (arg * np.arange(4.0)).sum(axis=0))


def test_gradients_run_in_c_and_agree():
    x, w = nt.dmatrix("x"), nt.dvector("w")
    b = nt.dscalar("b")
    cost = nt.sum(nt.softplus(-(nt.dot(x, w) + b))) + (w ** 2).sum() * 0.5
    gw, gb = ng.grad(cost, [w, b])
    f = ng.function([x, w, b], [cost, gw, gb], linker="debug")
    rng = np.random.default_rng(1)
    X, W = rng.standard_normal((20, 5)), rng.standard_normal(5)
    c, g1, g2 = f(X, W, np.asarray(0.3))
    z = X @ W + 0.3
    np.testing.assert_allclose(c, np.logaddexp(0, -z).sum() + 0.5 * (W ** 2).sum())
    np.testing.assert_allclose(g2, -(1 / (1 + np.exp(z))).sum())
    # row/column broadcasting in the gradient (SumToShape)
    r = nt.drow("r")
    h = ng.function([x, r], ng.grad((x * r).sum(), r), linker="debug")
    np.testing.assert_allclose(h(X, np.ones((1, 5))), X.sum(axis=0, keepdims=True))


def test_inplace_elemwise_agrees():
    from nbgraph.core.fgraph import FunctionGraph
    from nbgraph.linkers.debug import DebugLinker

    x, y = nt.dvector("x"), nt.dvector("y")
    z = Elemwise(ps.add, {0: 0})(x * 2, y)
    fg = FunctionGraph([x, y], [z])
    program = DebugLinker().link(fg)
    program.input_cells[0][0] = np.arange(4.0)
    program.input_cells[1][0] = np.ones(4)
    program.run()
    np.testing.assert_array_equal(program.output_cells[0][0], np.arange(4.0) * 2 + 1)
