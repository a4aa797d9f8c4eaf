"""ifelse: only the taken branch is computed, in every linker; values, types, grad, rewrites.

Laziness is observed with a counting Op (its perform counts its calls) and
with a branch whose Op raises when run: a branch not taken must leave the
counter unchanged and must not raise.  The counting Op has no C code, so for
the "c" linker the raising branch is made of C kernels (an addition of
vectors whose lengths differ fails in C as in Python).
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.tensor.ifelse import IfElse, ifelse
from nbgraph.tensor.type import TensorType

ALL_LINKERS = ["py", "cvm", "c", "debug"]
PERFORM_LINKERS = ["py", "cvm", "debug"]


class Counting(Op):
    """x + 1, counting how many times it ran (each instance distinct, never merged)."""

    __props__ = ("tag",)
    _made = 0

    def __init__(self):
        Counting._made += 1
        self.tag = Counting._made
        self.calls = 0

    def make_node(self, x):
        x = nt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        self.calls += 1
        output_storage[0][0] = np.asarray(inputs[0] + 1, dtype=node.outputs[0].type.dtype)


class Exploding(Op):
    """Raises whenever it runs."""

    __props__ = ()

    def make_node(self, x):
        x = nt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        raise RuntimeError("the untaken branch was computed")


@pytest.mark.parametrize("linker", PERFORM_LINKERS)
def test_only_the_taken_branch_runs(linker):
    c, x = nt.dscalar("c"), nt.dvector("x")
    then_op, else_op = Counting(), Counting()
    out = ifelse(c > 0, then_op(x) * 2, else_op(x) - 3)
    f = ng.function([c, x], out, linker=linker)
    v = np.arange(3.0)
    np.testing.assert_array_equal(f(1.0, v), (v + 1) * 2)
    assert (then_op.calls, else_op.calls) == (1, 0)
    np.testing.assert_array_equal(f(-1.0, v), v + 1 - 3)
    assert (then_op.calls, else_op.calls) == (1, 1)
    f(0.0, v)
    assert (then_op.calls, else_op.calls) == (1, 2)


@pytest.mark.parametrize("linker", PERFORM_LINKERS)
def test_a_raising_branch_is_harmless_when_not_taken(linker):
    c, x = nt.dscalar("c"), nt.dvector("x")
    f = ng.function([c, x], ifelse(c > 0, x + 1, Exploding()(x)), linker=linker)
    np.testing.assert_array_equal(f(1.0, np.ones(2)), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="untaken branch"):
        f(-1.0, np.ones(2))


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_c_kernels_of_the_untaken_branch_do_not_run(linker):
    # adding vectors of different lengths fails in perform and in C alike:
    # only when that branch is computed
    c, a, b = nt.lscalar("c"), nt.dvector("a"), nt.dvector("b")
    f = ng.function([c, a, b], ifelse(c > 0, nt.exp(a) + b, a * 2), linker=linker)
    np.testing.assert_array_equal(f(0, np.ones(3), np.ones(2)), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(f(1, np.zeros(2), np.ones(2)), [2.0, 2.0])
    with pytest.raises(ValueError):
        f(1, np.ones(3), np.ones(2))
    assert f.program.steps is not None


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_values_match_numpy_for_lists_of_branches(linker):
    c = nt.lscalar("c")
    a, b = nt.dmatrix("a"), nt.dmatrix("b")
    outs = ifelse(c, [nt.exp(a).sum(), a.dot(b)], [nt.tanh(b).sum(), b - a])
    f = ng.function([c, a, b], outs, linker=linker)
    rng = np.random.default_rng(0)
    av, bv = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    s, m = f(1, av, bv)
    np.testing.assert_allclose(s, np.exp(av).sum())
    np.testing.assert_allclose(m, av @ bv)
    s, m = f(0, av, bv)
    np.testing.assert_allclose(s, np.tanh(bv).sum())
    np.testing.assert_allclose(m, bv - av)


@pytest.mark.parametrize("linker", PERFORM_LINKERS)
def test_nested_conditionals_run_only_their_path(linker):
    c1, c2, x = nt.dscalar("c1"), nt.dscalar("c2"), nt.dscalar("x")
    ops = [Counting() for _ in range(3)]
    inner = ifelse(c2 > 0, ops[0](x), ops[1](x))
    f = ng.function([c1, c2, x], ifelse(c1 > 0, inner, ops[2](x)), linker=linker)
    assert float(f(1.0, 1.0, 5.0)) == 6.0
    assert [o.calls for o in ops] == [1, 0, 0]
    f(1.0, -1.0, 5.0)
    assert [o.calls for o in ops] == [1, 1, 0]
    f(-1.0, 1.0, 5.0)
    assert [o.calls for o in ops] == [1, 1, 1]


@pytest.mark.parametrize("linker", PERFORM_LINKERS)
def test_a_value_both_branches_use_is_computed_once_either_way(linker):
    c, x = nt.dscalar("c"), nt.dscalar("x")
    shared_op = Counting()
    y = shared_op(x)
    f = ng.function([c, x], [ifelse(c > 0, y * 2, y * 3), y], linker=linker)
    assert [float(v) for v in f(1.0, 1.0)] == [4.0, 2.0]
    assert [float(v) for v in f(-1.0, 1.0)] == [6.0, 2.0]
    assert shared_op.calls == 2


def test_the_result_never_aliases_an_input():
    c, x = nt.dscalar("c"), nt.dvector("x")
    f = ng.function([c, x], ifelse(c > 0, x, x * 2), linker="py")
    v = np.ones(3)
    r = f(1.0, v)
    r[0] = 7
    assert v[0] == 1.0


def test_output_type_keeps_what_both_branches_share():
    x = nt.tensor("float64", (2, None))
    y = nt.tensor("float64", (2, 3))
    out = ifelse(nt.dscalar("c"), x, y)
    assert out.type == TensorType("float64", (2, None))
    assert ifelse(nt.iscalar(), nt.fscalar(), 0.5).dtype == "float32"


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="condition must be a scalar"):
        ifelse(nt.dvector("c"), nt.dscalar(), nt.dscalar())
    with pytest.raises(TypeError, match=r"then_branch\[0\].*else_branch\[0\]"):
        ifelse(nt.dscalar("c"), nt.dvector("a"), nt.fvector("b"))
    with pytest.raises(ValueError, match="2 values and else_branch 1"):
        ifelse(nt.dscalar("c"), [nt.dscalar(), nt.dscalar()], [nt.dscalar()])
    with pytest.raises(TypeError, match="both"):
        ifelse(nt.dscalar("c"), [nt.dscalar()], nt.dscalar())


@pytest.mark.parametrize("cond", [1.0, -1.0])
def test_grad_flows_into_the_taken_branch_only(cond):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=3), rng.normal(size=3)
    ng.verify_grad(lambda x, y: ifelse(nt.constant(cond) > 0, nt.exp(x) * y, x - y ** 2),
                   [a, b])
    c, x, y = nt.dscalar("c"), nt.dvector("x"), nt.dvector("y")
    cost = ifelse(c > 0, (x * y).sum(), (x ** 2).sum())
    gx, gy = ng.grad(cost, [x, y])
    f = ng.function([c, x, y], [gx, gy], linker="py")
    got_x, got_y = f(cond, a, b)
    if cond > 0:
        np.testing.assert_allclose(got_x, b)
        np.testing.assert_allclose(got_y, a)
    else:
        np.testing.assert_allclose(got_x, 2 * a)
        np.testing.assert_allclose(got_y, 0.0)


def test_infer_shape_picks_the_branch_shape():
    c, x, y = nt.dscalar("c"), nt.dvector("x"), nt.dvector("y")
    out = ifelse(c > 0, x, y)
    f = ng.function([c, x, y], out.shape, linker="py")
    assert list(f(1.0, np.ones(2), np.ones(5))) == [2]
    assert list(f(-1.0, np.ones(2), np.ones(5))) == [5]


def test_constant_condition_is_folded_away():
    x = nt.dvector("x")
    f = ng.function([x], ifelse(nt.constant(1), x * 2, x * 3), linker="py")
    assert not any(isinstance(n.op, IfElse) for n in f.fgraph.apply_nodes)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_scalar_switch_with_array_work_becomes_lazy():
    c, x = nt.dscalar("c"), nt.dmatrix("x")
    f = ng.function([c, x], nt.switch(c > 0, nt.exp(x).sum(), x.max()), linker="py")
    assert any(isinstance(n.op, IfElse) for n in f.fgraph.apply_nodes)
    v = np.arange(4.0).reshape(2, 2)
    assert float(f(1.0, v)) == pytest.approx(np.exp(v).sum())
    assert float(f(-1.0, v)) == 3.0


def test_switch_stays_eager_where_ifelse_would_not_be_the_same():
    c, x, y = nt.dscalar("c"), nt.dmatrix("x"), nt.fmatrix("y")
    cases = [
        nt.switch(nt.dvector("v") > 0, x.sum(), x.max()),   # elementwise condition
        nt.switch(c > 0, x.sum(), y.max()),                 # the dtypes differ (upcast)
        nt.switch(c > 0, c * 2, c + 1),                     # nothing to save
        nt.switch(c > 0, x, x * 2),                         # not scalar
    ]
    for out in cases:
        inputs = [v for v in ng.core.graph.graph_inputs([out])
                  if not isinstance(v, ng.core.graph.Constant)]
        f = ng.function(inputs, out, linker="py")
        assert not any(isinstance(n.op, IfElse) for n in f.fgraph.apply_nodes), out


def test_in_place_work_inside_a_branch_stays_lazy():
    c, a = nt.dscalar("c"), nt.dmatrix("a")
    out = ifelse(c > 0, nt.exp(nt.dot(a, a)) + 1, a * 2)
    f = ng.function([c, a], out, linker="py")
    assert any(n.op.destroy_map for n in f.fgraph.apply_nodes)
    (lazy_step,) = [s for s in f.program.steps if not isinstance(s, int)]
    then_block = lazy_step[1][0][1]
    assert len(then_block) == 2  # Dot and the in-place Composite run only when taken
    v = np.eye(2)
    np.testing.assert_allclose(f(1.0, v), np.exp(v @ v) + 1)
    np.testing.assert_allclose(f(-1.0, v), 2 * v)


def test_profiled_lazy_function_records_the_nodes_that_ran():
    c, x = nt.dscalar("c"), nt.dvector("x")
    f = ng.function([c, x], ifelse(c > 0, nt.exp(x), nt.log(x)), linker="py", profile=True)
    f(1.0, np.ones(2))
    assert f.profile.calls == 1


# -- properties over dtypes and shapes ------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DTYPES = ["bool", "int8", "int32", "uint16", "int64", "float32", "float64"]


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES),
       then_shape=st.lists(st.integers(0, 3), max_size=3),
       else_extra=st.integers(0, 2), cond=st.booleans(), seed=st.integers(0, 1000))
def test_ifelse_returns_the_chosen_array_for_every_dtype_and_shape(dtype, then_shape, else_extra,
                                                                   cond, seed):
    rng = np.random.default_rng(seed)
    ndim = len(then_shape)
    else_shape = [s + else_extra for s in then_shape]  # a different shape (0-size included)
    a = nt.tensor(dtype, (None,) * ndim, "a")
    b = nt.tensor(dtype, (None,) * ndim, "b")
    c = nt.bscalar("c")
    f = ng.function([c, a, b], ifelse(c, a, b), linker="py")
    av = (rng.integers(0, 2, then_shape) if dtype == "bool" else
          rng.integers(0, 100, then_shape)).astype(dtype)
    bv = (rng.integers(0, 2, else_shape) if dtype == "bool" else
          rng.integers(0, 100, else_shape)).astype(dtype)
    got = f(cond, av, bv)
    expected = av if cond else bv
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert not np.shares_memory(got, expected)


@pytest.mark.parametrize("linker", ["debug", "c"])
def test_ifelse_of_broadcastable_branches_in_c_linkers(linker):
    c = nt.lscalar("c")
    row = nt.tensor("float64", (1, None), "row")
    mat = nt.dmatrix("mat")
    out = ifelse(c, row + 1, mat * 2)
    assert out.type.shape == (None, None)
    f = ng.function([c, row, mat], out, linker=linker)
    np.testing.assert_array_equal(f(1, np.ones((1, 3)), np.ones((0, 2))), np.full((1, 3), 2.0))
    assert f(0, np.ones((1, 3)), np.ones((0, 2))).shape == (0, 2)


@pytest.mark.parametrize("linker", ["py", "debug", "c"])
def test_private_branch_values_are_returned_without_a_copy(linker):
    c, a = nt.dscalar("c"), nt.dmatrix("a")
    out = ifelse(c > 0, nt.exp(a), a * 2) + 1   # the + 1 may then work in place too
    f = ng.function([c, a], out, linker=linker)
    (node,) = [n for n in f.fgraph.apply_nodes if isinstance(n.op, IfElse)]
    assert node.op.as_view and str(node.op) == "IfElse{1, view}"
    v = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(f(1.0, v), np.exp(v) + 1)
    np.testing.assert_allclose(f(-1.0, v), 2 * v + 1)
    np.testing.assert_array_equal(v, np.arange(4.0).reshape(2, 2))


def test_values_others_can_see_are_still_copied():
    c, a = nt.dscalar("c"), nt.dmatrix("a")
    e = nt.exp(a)
    f = ng.function([c, a], [ifelse(c > 0, e, a), e], linker="py")
    (node,) = [n for n in f.fgraph.apply_nodes if isinstance(n.op, IfElse)]
    assert not node.op.as_view
    r, ev = f(1.0, np.ones((1, 1)))
    assert not np.shares_memory(r, ev)


@pytest.mark.parametrize("depth", [3, 45])
def test_deeply_nested_conditionals(depth):
    # beyond MAX_GENERATED_DEPTH the program walks its schedule instead of generated code
    from nbgraph.linkers.schedule import MAX_GENERATED_DEPTH

    c, x = nt.lscalar("c"), nt.dscalar("x")
    out = x
    for level in range(depth):
        out = ifelse(c > level, out + 1, x * 0 - level)
    f = ng.function([c, x], out, linker="py")
    generated = getattr(f.program.run, "__name__", "") == "run" and \
        not hasattr(f.program.run, "__self__")
    assert generated == (depth <= MAX_GENERATED_DEPTH + 1)
    assert float(f(depth, 0.0)) == depth
    assert float(f(depth - 1, 0.0)) == -(depth - 1)


def test_background_compilation_installs_kernels_into_a_lazy_program():
    c, x = nt.dscalar("c"), nt.dvector("x")
    f = ng.function([c, x], ifelse(c > 0, nt.exp(x) * 2, nt.log(x) + 1), linker="cvm")
    v = np.ones(3)
    np.testing.assert_allclose(f(1.0, v), 2 * np.e)
    assert f.program.wait_compiled(timeout=120)
    np.testing.assert_allclose(f(1.0, v), 2 * np.e)
    np.testing.assert_allclose(f(-1.0, v), 1.0)
    assert "c" in f.program.kinds
