"""The "fast" rewrite pipeline (nbgraph.tensor.rewriting): what it does, and that it
never changes a result NumPy would give."""

import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.core.rewriting import node_rewriter
from nbgraph.tensor import rewriting
from nbgraph.tensor.basic import SpecifyShape
from nbgraph.tensor.elemwise import DimShuffle, Elemwise, SumToShape
from nbgraph.tensor.rewriting import register_rewrite, rewrite_graph, rewrites
from nbgraph.testing import ELEMENTWISE_OPS, GraphOp, random_graph

# Bitwise comparisons of rewritten against unrewritten graphs use the Python
# linker on both sides, so only the rewrites differ.
LINKER = "py"


def ops(f):
    return [str(node.op) for node in f.fgraph.toposort()]


def dprint_text(f):
    return f.dprint(file="str")


def reasons(f):
    return [entry.reason for entry in f.fgraph.history]


def compile_both(inputs, output, linker=LINKER):
    return (function(inputs, output, linker=linker),
            function(inputs, output, linker=linker, rewrite=None))


def assert_bitwise_equal(a, b):
    """Same dtype, shape and bits -- except that any NaN equals any NaN (NumPy itself
    does not promise the sign or payload of a NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        assert (nan_a == nan_b).all(), (a, b)
        a, b = a[~nan_a], b[~nan_b]
    assert a.tobytes() == b.tobytes(), (a, b)


SPECIAL = np.array([-np.inf, -2.5, -1.0, -0.0, 0.0, 1e-300, 1.0, 3.0, np.inf, np.nan])


@pytest.fixture
def no_fusion(monkeypatch):
    """Switch off the graph rewriters tagged "fusion" and "inplace" (the last stages of "fast").

    Tests that look at the structure canonicalisation leaves use it: fusion
    would then merge the remaining elementwise nodes into one Composite, and
    the in-place stage would rename ops (``Elemwise{exp, inplace}``).
    Tests of results run the whole pipeline.
    """
    rewriting.fast_pipeline()  # imports (and so registers) the later stages
    for rewriter in rewrites.query("fusion", "inplace"):
        monkeypatch.setattr(rewriter, "rewrite", lambda fgraph: 0)


@pytest.fixture(autouse=True)
def quiet_numpy():
    with np.errstate(all="ignore"):
        yield


# -- merge and constant folding -------------------------------------------------------


@pytest.mark.usefixtures("no_fusion")
def test_merge_folds_duplicated_subexpressions():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = nt.exp(x * y) + nt.exp(x * y)
    f = function([x, y], out)
    assert ops(f).count("Elemwise{exp}") == 1
    assert ops(f).count("Elemwise{mul}") == 1
    assert "merge" in reasons(f)
    merged = [e for e in f.fgraph.history if e.reason == "merge"]
    assert all(e.old.type == e.new.type for e in merged)
    add_node = f.fgraph.outputs[0].owner
    assert add_node.inputs[0] is add_node.inputs[1]
    np.testing.assert_allclose(f([1.0, 2.0], [0.5, 0.5]), 2 * np.exp([0.5, 1.0]))


@pytest.mark.usefixtures("no_fusion")
def test_merge_folds_equal_constants():
    x = nt.dvector("x")
    f = function([x], [x + 2.5, x * 2.5])
    constants = {id(v) for v in f.fgraph.variables if isinstance(v, nt.Constant)}
    assert len(constants) == 1


@pytest.mark.usefixtures("no_fusion")
def test_constant_folding():
    x = nt.dvector("x")
    f = function([x], x + nt.constant(2.0) * 3.0)
    assert ops(f) == ["Elemwise{add}"]
    assert "fold_constants" in reasons(f)
    (const,) = [v for v in f.fgraph.outputs[0].owner.inputs if isinstance(v, nt.Constant)]
    np.testing.assert_array_equal(const.data, [6.0])
    np.testing.assert_array_equal(f([1.0]), [7.0])


def test_a_whole_constant_graph_folds_to_its_value():
    k = nt.constant(np.arange(4.0))
    f = function([], (nt.exp(k) * 2.0).sum())
    assert f.fgraph.apply_nodes == set()
    assert f() == (np.exp(np.arange(4.0)) * 2.0).sum()


@pytest.mark.usefixtures("no_fusion")
def test_constant_folding_skips_big_results(monkeypatch):
    monkeypatch.setattr(rewriting, "MAX_FOLD_SIZE", 3)
    k = nt.constant(np.arange(10.0))
    f = function([], nt.exp(k))
    assert ops(f) == ["Elemwise{exp}"]
    np.testing.assert_allclose(f(), np.exp(np.arange(10.0)))


class _FailsOnNegatives(Op):
    """Identity that refuses negative values at run time."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        if (inputs[0] < 0).any():
            raise ValueError("negative value")
        output_storage[0][0] = inputs[0].copy()


@pytest.mark.usefixtures("no_fusion")
def test_constant_folding_leaves_errors_to_run_time():
    bad = _FailsOnNegatives()(nt.constant(np.array([1.0, -1.0])))
    f = function([], bad * 2.0, linker=LINKER)  # compiles: folding the node failed quietly
    assert "_FailsOnNegatives" in ops(f)
    with pytest.raises(ValueError, match="negative value") as info:
        f()
    assert "Apply node that caused the error: _FailsOnNegatives" in str(info.value)
    good = _FailsOnNegatives()(nt.constant(np.array([1.0, 2.0])))
    g = function([], good * 2.0, linker=LINKER)
    assert g.fgraph.apply_nodes == set()
    np.testing.assert_array_equal(g(), [2.0, 4.0])


# -- canonicalisations ----------------------------------------------------------------


def test_mul_by_one():
    x = nt.dvector("x")
    for expr in (x * 1, 1 * x, x * 1.0 * 1, x * nt.constant(np.ones(1))):
        f, plain = compile_both([x], expr)
        assert ops(f) == [], dprint_text(f)
        assert "mul_by_one" in reasons(f)
        assert_bitwise_equal(f(SPECIAL), plain(SPECIAL))
        assert_bitwise_equal(f(SPECIAL), SPECIAL * 1.0)


@pytest.mark.usefixtures("no_fusion")
def test_add_zero_only_for_integers():
    i = nt.ivector("i")
    f, plain = compile_both([i], i + 0)
    assert ops(f) == [] and "add_zero" in reasons(f)
    value = np.array([-3, 0, 7], dtype="int32")
    assert_bitwise_equal(f(value), value + np.int32(0))
    x = nt.dvector("x")
    g, plain = compile_both([x], x + 0)
    assert ops(g) == ["Elemwise{add}"]  # x + 0 is not x for x = -0.0
    assert_bitwise_equal(g(SPECIAL), SPECIAL + 0)
    assert_bitwise_equal(g(SPECIAL), plain(SPECIAL))


def test_negative_zero_plus_zero_stays_positive_zero():
    s = nt.dscalar("s")
    f, plain = compile_both([s], s + 0)
    result = f(-0.0)
    assert result == 0.0 and not np.signbit(result)
    assert_bitwise_equal(result, np.float64(-0.0) + 0)
    v = nt.dvector("v")
    g = function([v], 0.0 + v, linker=LINKER)
    assert not np.signbit(g([-0.0])).any()


@pytest.mark.usefixtures("no_fusion")
def test_sub_zero():
    x = nt.dvector("x")
    f, plain = compile_both([x], x - 0)
    assert ops(f) == [] and "add_zero" in reasons(f)
    assert_bitwise_equal(f(SPECIAL), SPECIAL - 0.0)  # -0.0 - 0.0 is -0.0: exact
    i = nt.lvector("i")
    g = function([i], i - 0, linker=LINKER)
    assert ops(g) == []
    # x - (-0.0) is x + 0.0: not removed
    h, plain = compile_both([x], x - nt.constant(-0.0))
    assert ops(h) == ["Elemwise{sub}"]
    assert_bitwise_equal(h(SPECIAL), SPECIAL - (-0.0))


def test_zero_minus_x_is_not_negation():
    x = nt.dvector("x")
    f, plain = compile_both([x], 0 - x)
    assert_bitwise_equal(f(SPECIAL), 0.0 - SPECIAL)  # 0 - 0.0 is +0.0, -0.0 would differ


@pytest.mark.usefixtures("no_fusion")
def test_double_negation():
    x = nt.dvector("x")
    f, plain = compile_both([x], -(-x))  # noqa: B002 (on purpose)
    assert ops(f) == [] and "double_negation" in reasons(f)
    assert_bitwise_equal(f(SPECIAL), -(-SPECIAL))  # noqa: B002 (on purpose)
    i = nt.bvector("i")
    g = function([i], -(-i), linker=LINKER)  # noqa: B002 (on purpose)
    assert ops(g) == []
    value = np.array([-128, -1, 0, 127], dtype="int8")
    assert_bitwise_equal(g(value), -(-value))  # noqa: B002 (a double negation on purpose); wraps around exactly like NumPy
    triple = function([x], -(-(-x)), linker=LINKER)  # noqa: B002 (on purpose)
    assert ops(triple) == ["Elemwise{neg}"]


def test_exp_of_log_is_not_rewritten():
    # exp(log(x)) == x holds only up to rounding (NumPy gives 3.0000000000000004
    # for x = 3), so replacing it would change NumPy's result: it is kept.
    x = nt.dvector("x")
    f = function([x], nt.exp(nt.log(x)), linker=LINKER)
    assert "exp_of_log" not in reasons(f)
    with np.errstate(all="ignore"):
        expected = np.exp(np.log(SPECIAL))
    assert_bitwise_equal(f(SPECIAL), expected)
    three = np.array([3.0])  # the same NumPy loops on the same shape as f's
    assert f(three)[0] == np.exp(np.log(three))[0]


@pytest.mark.usefixtures("no_fusion")
def test_useless_dimshuffle():
    m = nt.dmatrix("m")
    identity = DimShuffle(2, (0, 1))(m)
    f = function([m], identity * 2.0, linker=LINKER)
    assert "useless_dimshuffle" in reasons(f)
    assert not any(isinstance(n.op, DimShuffle) and n.inputs[0].name == "m"
                   for n in f.fgraph.apply_nodes)
    g = function([m], m.T.T + 1.0, linker=LINKER)
    assert not any(isinstance(n.op, DimShuffle) and not isinstance(n.inputs[0], nt.Constant)
                   for n in g.fgraph.apply_nodes)
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(g(value), value + 1.0)
    # a transpose is not useless
    h = function([m], m.T * 1, linker=LINKER)
    assert ops(h) == ["DimShuffle{1,0}"]
    np.testing.assert_array_equal(h(value), value.T)


@pytest.mark.usefixtures("no_fusion")
def test_dimshuffle_of_dimshuffle_is_composed():
    v = nt.dvector("v")
    out = v.dimshuffle("x", 0).dimshuffle(1, "x")  # (n,) -> (1, n) -> (n, 1)
    f = function([v], out, linker=LINKER)
    shuffles = [n for n in f.fgraph.apply_nodes if isinstance(n.op, DimShuffle)]
    assert len(shuffles) == 1 and shuffles[0].inputs[0] in f.fgraph.inputs
    np.testing.assert_array_equal(f([1.0, 2.0]), [[1.0], [2.0]])


@pytest.mark.usefixtures("no_fusion")
def test_useless_specify_shape_is_removed_but_a_useful_one_stays():
    x = nt.tensor("float64", (2, 3), "x")
    same = SpecifyShape((2, 3))(x)
    f = function([x], same * 2.0, linker=LINKER)
    assert "useless_shape_ops" in reasons(f)
    assert not any(isinstance(n.op, SpecifyShape) for n in f.fgraph.apply_nodes)
    v = nt.dvector("v")
    g = function([v], nt.specify_shape(v, (2,)) * 2.0, linker=LINKER)
    assert any(isinstance(n.op, SpecifyShape) for n in g.fgraph.apply_nodes)
    np.testing.assert_array_equal(g([1.0, 2.0]), [2.0, 4.0])
    with pytest.raises(ValueError):
        g([1.0, 2.0, 3.0])  # the run-time check survives the rewrites


@pytest.mark.usefixtures("no_fusion")
def test_useless_sum_to_shape():
    a = nt.tensor("float64", (2, 3), "a")
    b = nt.tensor("float64", (2, 3), "b")
    # only b's static shape is used: the node is built with constant shape entries
    f = function([a, b], SumToShape()(a, b) * 2.0, linker=LINKER, on_unused_input="ignore")
    assert "useless_shape_ops" in reasons(f)
    assert not any(isinstance(n.op, SumToShape) for n in f.fgraph.apply_nodes)
    g_in = nt.dmatrix("g")
    like = nt.tensor("float64", (1, None), "like")
    g = function([g_in, like], SumToShape()(g_in, like), linker=LINKER)
    assert any(isinstance(n.op, SumToShape) for n in g.fgraph.apply_nodes)
    np.testing.assert_array_equal(g(np.ones((3, 2)), np.ones((1, 2))), [[3.0, 3.0]])


# -- no rewrite changes a NumPy result ------------------------------------------------


@pytest.mark.usefixtures("no_fusion")
def test_mul_by_zero_is_kept():
    x = nt.dvector("x")
    f, plain = compile_both([x], x * 0)
    assert "Elemwise{mul}" in ops(f)
    result = f(SPECIAL)
    assert np.isnan(result[SPECIAL == np.inf]).all()  # inf * 0 is NaN
    assert np.isnan(result[-1])  # NaN * 0 is NaN
    assert_bitwise_equal(result, SPECIAL * 0)  # -2.5 * 0 is -0.0
    assert_bitwise_equal(result, plain(SPECIAL))


@pytest.mark.parametrize("dtype, other", [
    ("int8", 1.0), ("int8", 1), ("uint8", 1), ("int16", 0), ("float32", 1.0),
    ("float32", 1), ("int32", 1.0), ("bool", 1), ("bool", True), ("int64", 0.0),
])
def test_dtypes_follow_numpy(dtype, other):
    x = nt.tensor(dtype, (None,), "x")
    value = np.array([0, 1, 1], dtype=dtype) if dtype == "bool" else \
        np.array([1, 2, 3], dtype=dtype)
    for build, reference in ((lambda a: a * other, lambda a: a * other),
                             (lambda a: other * a, lambda a: other * a),
                             (lambda a: a + other, lambda a: a + other)):
        f, plain = compile_both([x], build(x))
        assert_bitwise_equal(f(value), reference(value))
        assert_bitwise_equal(plain(value), reference(value))


def test_broadcasting_is_kept_when_multiplying_by_ones():
    x = nt.tensor("float64", (1,), "x")
    for ones in (nt.ones((3,)), nt.constant(np.ones(3)), np.ones(3)):
        f, plain = compile_both([x], x * ones)
        assert f.fgraph.outputs[0].type.shape == (3,)
        result = f(np.array([2.0]))
        assert result.shape == (3,)
        np.testing.assert_array_equal(result, [2.0, 2.0, 2.0])
    m = nt.dmatrix("m")
    g = function([m], m * np.ones((1, 4)), linker=LINKER)
    assert g(np.ones((2, 1))).shape == (2, 4)
    h = function([x], x + np.zeros((2, 3), dtype="int64"), linker=LINKER)
    assert h(np.array([1.5])).shape == (2, 3)


# Each case is written once against a namespace ``m``: nbgraph.tensor (symbolic) or
# NumPy (the reference).
SYMBOLIC = SimpleNamespace(exp=nt.exp, log=nt.log, maximum=nt.maximum, const=nt.constant)
NUMERIC = SimpleNamespace(exp=np.exp, log=np.log, maximum=np.maximum, const=np.float64)

BITWISE_CASES = {
    "x*1": lambda m, x, y: x * 1,
    "x*0": lambda m, x, y: x * 0,
    "x+0": lambda m, x, y: x + 0,
    "x-0": lambda m, x, y: x - 0,
    "0-x": lambda m, x, y: 0 - x,
    "--x": lambda m, x, y: -(-x),  # noqa: B002 (on purpose)
    "x*1+y*1": lambda m, x, y: x * 1 + y * 1,
    "(x+y)*(x+y)": lambda m, x, y: (x + y) * (x + y),
    "x/1": lambda m, x, y: x / 1,
    "x*y*1-0": lambda m, x, y: (x * y * 1) - 0,
    "exp(log(x))*0": lambda m, x, y: m.exp(m.log(x)) * 0,
    "max(x,y)*1": lambda m, x, y: m.maximum(x, y) * 1,
    "-(-(x*y))": lambda m, x, y: -(-(x * y)),  # noqa: B002 (on purpose)
    "x*(2*0.5)": lambda m, x, y: x * (m.const(2.0) * 0.5),
    "(x*1)*(y+0)": lambda m, x, y: (x * 1) * (y + 0),
}


@pytest.mark.parametrize("linker", ["py", pytest.param("cvm", marks=pytest.mark.needs_cc)])
@pytest.mark.parametrize("name", sorted(BITWISE_CASES))
def test_rewritten_graph_gives_the_unrewritten_result_bitwise(name, linker):
    build = BITWISE_CASES[name]
    x, y = nt.dvector("x"), nt.dvector("y")
    xs = np.repeat(SPECIAL, len(SPECIAL))
    ys = np.tile(SPECIAL, len(SPECIAL))
    f, plain = compile_both([x, y] if "y" in name else [x], build(SYMBOLIC, x, y),
                            linker=linker)
    args = (xs, ys) if "y" in name else (xs,)
    result = f(*args)
    assert_bitwise_equal(result, plain(*args))
    assert_bitwise_equal(result, build(NUMERIC, xs, ys))


# -- history, registry ----------------------------------------------------------------


def test_history_records_each_rewrite_with_its_reason():
    x = nt.dvector("x")
    f = function([x], -(-(x * 1)) + nt.exp(x) + nt.exp(x), linker=LINKER)  # noqa: B002 (on purpose)
    found = reasons(f)
    for reason in ("merge", "mul_by_one", "double_negation"):
        assert reason in found, found
    for entry in f.fgraph.history:
        assert entry.reason
        assert entry.old.type == entry.new.type or entry.old.type.is_super(entry.new.type)
        assert entry.trace is not None
    steps = [e.step for e in f.fgraph.history]
    assert steps == list(range(len(steps)))


def test_rewrite_graph_counts_changes():
    x = nt.dvector("x")
    fg = FunctionGraph([x], [(x * 1) * 1])
    changes = rewrite_graph(fg)
    assert changes >= 2
    assert fg.outputs[0] is fg.inputs[0]
    fg.check_integrity()
    assert rewrite_graph(fg) == 0  # a fixed point


@pytest.mark.usefixtures("no_fusion")
def test_registering_a_rewrite_twice_under_one_name_replaces_it():
    name = "test_rewriting_tan_swap"
    x = nt.dvector("x")
    try:
        @register_rewrite(name, "fast")
        @node_rewriter([Elemwise])
        def first(fgraph, node):
            if node.op.scalar_op == nt.tan.scalar_op:
                return [nt.sin(node.inputs[0])]
            return None

        count = len(rewrites)
        assert ops(function([x], nt.tan(x))) == ["Elemwise{sin}"]

        @register_rewrite(name, "fast")  # the cell run again, edited
        @node_rewriter([Elemwise])
        def second(fgraph, node):
            if node.op.scalar_op == nt.tan.scalar_op:
                return [nt.cos(node.inputs[0])]
            return None

        assert len(rewrites) == count
        assert rewrites[name] is second
        assert rewrites.names().count(name) == 1
        assert rewrites.query("fast").count(second) == 1 and first not in rewrites.query("fast")
        f = function([x], nt.tan(x))
        assert ops(f) == ["Elemwise{cos}"]
        assert name in reasons(f)
        np.testing.assert_allclose(f([0.0]), [1.0])
    finally:
        if name in rewrites:
            rewrites.unregister(name)
    assert ops(function([x], nt.tan(x))) == ["Elemwise{tan}"]


# -- big graphs -----------------------------------------------------------------------


def _squashed(name, sym, num):
    # tanh after each unary step keeps a thousand-step chain finite
    return GraphOp(name, 1, lambda rng, a: (lambda v: nt.tanh(sym(v)), lambda v: np.tanh(num(v))))


# binary ops on a recent operand and any other (connected), repeated subexpressions (merge)
_CHAIN_OPS = [op for op in ELEMENTWISE_OPS if op.name in ("add", "mul", "sub")] + [
    GraphOp("maximum", 2, lambda rng, a, b: (nt.maximum, np.maximum)),
    _squashed("tanh", nt.tanh, np.tanh), _squashed("sin", nt.sin, np.sin),
    _squashed("neg", lambda a: -a, np.negative), _squashed("times_one", lambda a: a * 1,
                                                           lambda a: a * 1),
    _squashed("minus_zero", lambda a: a - 0, lambda a: a - 0)]


def _random_graph(n_nodes, seed=0):
    """A random chain-like DAG of elementwise ops over two vectors, and NumPy's value."""
    graph = random_graph(np.random.default_rng(seed), n_nodes=n_nodes, n_inputs=2,
                         input_specs=[((None,), (5,))], ops=_CHAIN_OPS, window=3,
                         duplicate=0.2, extra_outputs=(0, 1))
    return graph.inputs, graph.outputs[0], graph.values, graph.expected[0]


def test_thousand_node_graph_is_rewritten_and_compiled_correctly():
    inputs, out, args, expected = _random_graph(1000)
    start = time.perf_counter()
    f = function(inputs, out, linker=LINKER)
    elapsed = time.perf_counter() - start
    print("1,000-node graph rewritten and compiled in %.3f s (%d nodes left)" % (
        elapsed, len(f.fgraph.apply_nodes)))
    plain = function(inputs, out, linker=LINKER, rewrite=None)
    assert len(plain.fgraph.apply_nodes) >= 1000
    assert len(f.fgraph.apply_nodes) < len(plain.fgraph.apply_nodes)
    assert "merge" in reasons(f)
    np.testing.assert_allclose(f(*args), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(plain(*args), expected, rtol=1e-12, atol=1e-15)
    f.fgraph.check_integrity()


def test_deep_chain_compiles_and_runs_without_recursion_error():
    depth = 5000
    assert depth > sys.getrecursionlimit()
    x = nt.dvector("x")
    out = x
    for k in range(depth):
        out = out * 1.0000001 if k % 2 else out + 1e-4
    start = time.perf_counter()
    f = function([x], out, linker=LINKER)
    print("5,000-deep chain compiled in %.3f s" % (time.perf_counter() - start))
    plain = function([x], out, linker=LINKER, rewrite=None)
    assert len(plain.fgraph.apply_nodes) >= depth
    value = np.array([0.0, 1.0])
    expected = value.copy()
    for k in range(depth):
        expected = expected * 1.0000001 if k % 2 else expected + 1e-4
    np.testing.assert_array_equal(plain(value), expected)
    np.testing.assert_allclose(f(value), expected, rtol=1e-12)
    f.dprint(file="str")  # printing the compiled graph needs no recursion either


def test_deep_chain_of_removable_nodes_collapses():
    x = nt.dvector("x")
    out = x
    for _ in range(2500):  # 5,000 nodes
        out = -(out * 1)
    f = function([x], out, linker=LINKER)
    assert f.fgraph.apply_nodes == set()  # an even number of negations, all * 1 removed
    assert f.fgraph.outputs[0] in f.fgraph.inputs
    np.testing.assert_array_equal(f([1.5, -0.0]), [1.5, -0.0])

