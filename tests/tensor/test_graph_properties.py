"""Property tests on random graphs (issue 19 item 7, issue 21): NumPy is the oracle.

Every graph comes from the one generator, :func:`nbgraph.testing.random_graph`,
or draws its ops from the same tables.  Checked, with complex64/complex128 and
float16 among the dtypes:

* one elementwise op on random dtypes and broadcastable shapes (declared
  static, unknown, or 1 at run time; Python numbers on either side) gives
  NumPy's dtype, shape and value in the Python, C and debug linkers (exact
  where NumPy is exact, a few ulps for transcendental functions, one half ulp
  for float16; ``linker="c"`` may refuse a node without C for these dtypes,
  and must then say that it runs in Python);
* a reduction over any set of axes (0-size arrays included) gives NumPy's;
* the rewrites (``rewrite="fast"``: merge, canonicalisation, folding, fusion,
  in place) never change a value of a random graph;
* static shapes (of random graphs' outputs, of ``zeros(out.shape)``,
  ``reshape(out, out.shape)`` and ``alloc`` from ``out.shape[i]``) are at least as
  precise as PyTensor's for the same graph, and always the run-time shape.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c.linker import CLinkerRefusal
from nbgraph.testing import ELEMENTWISE_OPS, GRAPH_OPS, numpy_inputs, random_graph
from ulps import assert_ulp_close, ulp_mismatches

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
COUNTS = {}


def _count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


def _compile(inputs, outputs, linker, **kwargs):
    """The function, or None when linker="c" refuses a node without C (said so)."""
    try:
        return ng.function(inputs, outputs, linker=linker, on_unused_input="ignore", **kwargs)
    except CLinkerRefusal as exc:
        assert linker == "c", exc
        assert "runs in Python" in str(exc) or "no C implementation" in str(exc), exc
        return None


def _ulps(op_name, dtype, in_dtypes=()):
    kind = np.dtype(dtype).kind
    if kind not in "fc":
        return 0
    # abs of a complex number: NumPy's SIMD hypot and libm's may differ in the last bit
    complex_in = any(np.dtype(d).kind == "c" for d in in_dtypes) or kind == "c"
    inexact = op_name in ("exp", "tanh", "sin") or (complex_in and op_name == "abs")
    if dtype == "float16":
        return 1 if inexact else 0
    return 4 if inexact else 0


@st.composite
def broadcast_case(draw, arity):
    """Run-time shapes that broadcast, the declared shapes (static, None or 1), dtypes."""
    ndim = draw(st.integers(0, 3))
    out = [draw(st.integers(0, 3)) for _ in range(ndim)]
    shapes, declared = [], []
    for _ in range(arity):
        nd = draw(st.integers(0, ndim))
        runtime = tuple(1 if draw(st.booleans()) else s for s in out[ndim - nd:])
        decl = tuple(s if (s == 1 or draw(st.booleans())) and draw(st.booleans()) else None
                     for s in runtime)
        shapes.append(runtime)
        declared.append(decl)
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in range(arity)]
    weak = draw(st.sampled_from([None, 0, 1])) if arity == 2 else None
    number = draw(st.sampled_from([2, 0.5, 1.5j]))
    return shapes, declared, dtypes, weak, number, draw(st.integers(0, 2**32 - 1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("linker", ["py", "c", "debug"])
@SETTINGS
@given(op_index=st.integers(0, len(ELEMENTWISE_OPS) - 1), data=st.data())
def test_one_elementwise_op_is_numpys_in_every_linker(linker, op_index, data):
    op = ELEMENTWISE_OPS[op_index]
    shapes, declared, dtypes, weak, number, seed = data.draw(broadcast_case(op.arity))
    rng = np.random.default_rng(seed)
    values = [numpy_inputs(rng, d, s) for d, s in zip(dtypes, shapes, strict=True)]
    symbols = [nt.tensor(d, decl, "x%d" % k)
               for k, (d, decl) in enumerate(zip(dtypes, declared, strict=True))]
    sym_fn, num_fn = op.build(rng, *symbols)
    if weak is not None:  # a Python number in place of one operand: weak, as in NEP 50
        values[weak], symbols[weak] = number, number
    inputs = [s for s in symbols if not isinstance(s, (int, float, complex))]
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(num_fn(*values))
    except (TypeError, ValueError, OverflowError):
        with pytest.raises((TypeError, ValueError)):
            sym_fn(*symbols)
        return
    try:
        out = sym_fn(*symbols)
    except (TypeError, ValueError) as exc:
        pytest.fail("NumPy computes %s on %s but nbgraph refused: %s" % (op.name, dtypes, exc))
    assert out.dtype == expected.dtype.name
    assert all(s is None or s == e for s, e in zip(out.type.shape, expected.shape, strict=True))
    f = _compile(inputs, out, linker)
    if f is None:
        _count("refused by linker c")
        return
    with np.errstate(all="ignore"):
        got = f(*arrays)
    assert got.shape == expected.shape
    context = "%s %s %s" % (op.name, dtypes, linker)
    if expected.dtype.kind == "c":
        _assert_complex_close(got, expected, _ulps(op.name, expected.dtype.name, dtypes),
                              context)
    else:
        assert_ulp_close(got, expected, _ulps(op.name, expected.dtype.name, dtypes), context)
    _count("elementwise %s" % linker)


def _assert_complex_close(got, want, ulps, context):
    """Complex results: each part within ``ulps`` of NumPy's, except where a complex
    product or quotient (four real operations, rounded differently by NumPy's scalar
    and SIMD loops, with or without FMA) cancels in one part: there the error is
    measured against the magnitude, within 4 epsilons of ``|want|``."""
    bad = ulp_mismatches(got, want, ulps)
    if not bad.size:
        return
    g, w = np.asarray(got).ravel()[bad], np.asarray(want).ravel()[bad]
    eps = np.finfo(w.real.dtype).eps
    ok = np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= 4 * eps * np.abs(w))
    if not ok.all():
        assert_ulp_close(got, want, ulps, context)


REDUCTIONS = ["sum", "prod", "max", "min", "mean"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("linker", ["py", "c", "debug"])
@SETTINGS
@given(kind=st.sampled_from(REDUCTIONS), dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(0, 3), min_size=0, max_size=3), data=st.data())
def test_a_reduction_over_any_axes_is_numpys(linker, kind, dtype, shape, data):
    ndim = len(shape)
    subsets = [c for r in range(ndim + 1) for c in itertools.combinations(range(ndim), r)]
    axis = data.draw(st.sampled_from(subsets + [None]))
    keepdims = data.draw(st.booleans())
    value = numpy_inputs(np.random.default_rng(data.draw(st.integers(0, 999))), dtype, shape)
    x = nt.tensor(dtype, tuple(data.draw(st.sampled_from([s, None])) for s in shape), "x")
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(getattr(np, kind)(value, axis=axis, keepdims=keepdims))
    except ValueError:  # max/min of an empty selection
        expected = None
    if kind == "mean" and dtype == "bool":
        return  # NumPy's mean of bools is float64; nt.mean's dtype rules are checked elsewhere
    try:
        out = getattr(nt, kind)(x, axis=axis, keepdims=keepdims)
    except ValueError:  # max/min over a statically empty axis: refused when built
        assert expected is None
        return
    f = _compile([x], out, linker)
    if f is None:
        _count("refused by linker c")
        return
    if expected is None:
        with pytest.raises(ValueError):
            f(value)
        return
    with np.errstate(all="ignore"):
        got = f(value)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind in "fc":
        rtol = {"float16": 1e-2, "float32": 1e-5, "complex64": 1e-5}.get(dtype, 1e-12)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)
    _count("reduction %s" % linker)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1),
       dtypes=st.sampled_from([("float64",), ("float64", "float32", "int8"),
                               ("complex128", "float64"), ("complex64", "float32"),
                               ("float16", "float32")]))
def test_rewrites_keep_the_values_of_random_graphs(seed, dtypes):
    complex_in = any(d.startswith("complex") for d in dtypes)
    graph = random_graph(np.random.default_rng(seed), dtypes=dtypes,
                         ops=ELEMENTWISE_OPS if complex_in else GRAPH_OPS)
    fast = _compile(graph.inputs, graph.outputs, "cvm")
    plain = _compile(graph.inputs, graph.outputs, "py", rewrite=None)
    with np.errstate(all="ignore"):
        got, want = fast(*graph.values), plain(*graph.values)
    for g, w, numpy_value in zip(got, want, graph.expected, strict=True):
        assert g.dtype == w.dtype == numpy_value.dtype and g.shape == w.shape
        tight = {"float16": 2e-2, "float32": 1e-4, "complex64": 1e-4}.get(g.dtype.name, 1e-7)
        np.testing.assert_allclose(g, w, rtol=tight, atol=tight, equal_nan=True)
        np.testing.assert_allclose(w, numpy_value, rtol=tight, atol=tight, equal_nan=True)
    _count("random graph")


# -- static shapes: never less precise than PyTensor's, always the run-time shape ------------


def _in_pytensor(outputs, inputs):
    """The same graph built with PyTensor (its own static-shape rules), output by output."""
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt

    from nbgraph.core.graph import Constant, toposort

    mapped = {v: pt.tensor(v.name, dtype=v.dtype, shape=v.type.shape) for v in inputs}
    elementwise = {"add": pt.add, "mul": pt.mul, "sub": pt.sub, "true_div": pt.true_div,
                   "neg": pt.neg, "abs": pt.abs, "exp": pt.exp, "tanh": pt.tanh, "sin": pt.sin,
                   "maximum": pt.maximum, "gt": pt.gt, "switch": pt.switch}
    for node in toposort(outputs):
        for v in node.inputs:
            if v not in mapped and isinstance(v, Constant):
                mapped[v] = pt.constant(np.asarray(v.data))
        args = [mapped[v] for v in node.inputs]
        op = node.op
        kind = type(op).__name__
        if kind == "Elemwise":
            name = str(op.scalar_op).split("{")[0]
            out = (pt.cast(args[0], op.scalar_op.dtype) if name == "cast"
                   else elementwise[name](*args))
        elif kind == "DimShuffle":
            out = args[0].dimshuffle(*op.new_order)
        elif kind == "Reduce":
            out = getattr(pt, op.kind)(args[0], axis=op.axis)
        elif kind == "Dot":
            out = pt.dot(*args)
        else:
            raise AssertionError("no PyTensor translation for %s" % op)
        mapped[node.outputs[0]] = out
    del pytensor
    return [mapped[o] for o in outputs]


def _with_shape_uses(out, lib):
    """``out``, ``zeros(out.shape)``, ``reshape(out, out.shape)`` and ``out.shape[i]``-built
    ``alloc`` in nbgraph (``lib`` = nt) or PyTensor (``lib`` = pytensor.tensor)."""
    derived = [out, lib.zeros(out.shape), out.reshape(out.shape)]
    if out.ndim:
        derived.append(lib.alloc(lib.constant(0.5), *[out.shape[i] for i in range(out.ndim)]))
    return derived


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_static_shapes_are_as_precise_as_pytensors_and_true(seed):
    pt = pytest.importorskip("pytensor.tensor")
    graph = random_graph(np.random.default_rng(seed), dtypes=("float64", "float32", "int8"))
    theirs = _in_pytensor(graph.outputs, graph.inputs)
    ours, pyt = [], []
    for o, p in zip(graph.outputs, theirs, strict=True):
        ours += _with_shape_uses(o, nt)
        pyt += _with_shape_uses(p, pt)
    for mine, other in zip(ours, pyt, strict=True):
        assert mine.ndim == other.ndim
        for k, (m, t) in enumerate(zip(mine.type.shape, other.type.shape, strict=True)):
            assert t is None or m == t, "dim %d of %r: nbgraph %s, PyTensor %s" % (
                k, mine, mine.type.shape, other.type.shape)
    f = _compile(graph.inputs, ours, "py")
    with np.errstate(all="ignore"):
        values = f(*graph.values)
    for mine, value in zip(ours, values, strict=True):
        pairs = zip(mine.type.shape, value.shape, strict=True)
        assert all(s is None or s == v for s, v in pairs), (mine.type.shape, value.shape)
    _count("static shapes")


def test_report_example_counts():
    # not a check: the counts of examples the property tests above ran (printed with -s)
    print("property-test examples:", dict(sorted(COUNTS.items())))
