"""The in-place stage of the fast pipeline (nbgraph.tensor.inplace).

Every compiled graph is checked against NumPy with each linker, and the
caller's arrays must come back untouched.  Structure checks look for
``Elemwise{..., inplace}`` nodes and their ``destroy_map``.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply
from nbgraph.display.text import dprint
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.inplace import InplaceElemwise, destroyable
from nbgraph.tensor.scalar import ScalarOp

RNG = np.random.default_rng(7)
PY_LINKERS = ["py", pytest.param("cvm", marks=pytest.mark.needs_cc),
              pytest.param("debug", marks=pytest.mark.needs_cc)]
ALL_LINKERS = PY_LINKERS + [pytest.param("c", marks=pytest.mark.needs_cc)]


def inplace_nodes(f):
    return [n for n in f.fgraph.toposort() if n.op.destroy_map]


def destroyed_inputs(f):
    """The variables the in-place nodes of ``f`` overwrite."""
    out = []
    for node in inplace_nodes(f):
        for ins in node.op.destroy_map.values():
            out.extend(node.inputs[i] for i in ins)
    return out


def run_checked(f, args, want):
    """Call ``f`` twice; results equal ``want`` and the arguments are unchanged."""
    before = [np.array(a, copy=True) for a in args]
    first = f(*args)
    second = f(*args)
    wants = want if isinstance(want, list) else [want]
    for got in (first, second):
        gots = got if isinstance(got, list) else [got]
        for g, w in zip(gots, wants, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
            assert np.asarray(g).dtype == np.asarray(w).dtype
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)
    # the first call's results were not overwritten by the second call
    gots = first if isinstance(first, list) else [first]
    for g, w in zip(gots, wants, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    return first


# -- where it applies ------------------------------------------------------------------


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_elemwise_overwrites_the_dot_result(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    f = ng.function([A, B], nt.exp(nt.dot(A, B)) + 1, linker=linker)
    (node,) = inplace_nodes(f)
    assert node.op.destroy_map == {0: [0]}
    assert type(node.inputs[0].owner.op).__name__ == "Dot"
    a, b = RNG.random((3, 4)), RNG.random((4, 5))
    run_checked(f, [a, b], np.exp(a @ b) + 1)


def test_dprint_shows_the_inplace_op_and_history_the_reason():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    f = ng.function([A, B], nt.exp(nt.dot(A, B)) + 1, linker="py")
    text = dprint(f, file="str")
    assert text.splitlines()[0].startswith("Elemwise{Composite{(exp(x0) + 1.0)}, inplace}")
    reasons = [e.reason for e in f.fgraph.history]
    assert reasons[-1] == "inplace_elemwise"
    entry = f.fgraph.history[-1]
    assert entry.old.type == entry.new.type


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_elemwise_after_a_reduction_in_every_linker(linker):
    m = nt.dmatrix("m")
    f = ng.function([m], nt.exp(m.sum(axis=1)) * 2.0, linker=linker)
    assert len(inplace_nodes(f)) == 1
    x = RNG.random((4, 3))
    run_checked(f, [x], np.exp(x.sum(axis=1)) * 2.0)


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_small_results_held_by_the_caller_survive_later_calls(linker):
    m = nt.dmatrix("m")
    f = ng.function([m], nt.exp(m.sum(axis=1)) * 2.0, linker=linker)
    x, y = np.ones((2, 3)), np.zeros((2, 3))
    r1 = f(x)
    r2 = f(y)
    r3 = f(x)
    np.testing.assert_allclose(r1, np.exp([3.0, 3.0]) * 2)
    np.testing.assert_allclose(r2, [2.0, 2.0])
    assert r1 is not r3 and not np.shares_memory(r1, r3)
    del r3
    f(y)
    np.testing.assert_allclose(r1, np.exp([3.0, 3.0]) * 2)


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_zero_dimensional_result(linker):
    u, v = nt.dvector("u"), nt.dvector("v")
    f = ng.function([u, v], nt.dot(u, v) * 2.0, linker=linker)
    assert len(inplace_nodes(f)) == 1
    a, b = RNG.random(5), RNG.random(5)
    run_checked(f, [a, b], np.asarray(np.dot(a, b) * 2.0))


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_chain_of_inplace_nodes_through_a_view(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    e = nt.exp(nt.dot(A, B))
    out = e.reshape((-1,)) * 3.0
    f = ng.function([A, B], out, linker=linker)
    nodes = inplace_nodes(f)
    assert len(nodes) == 2
    a, b = RNG.random((2, 3)), RNG.random((3, 4))
    run_checked(f, [a, b], (np.exp(a @ b) * 3.0).reshape(-1))


class PyHalf(ScalarOp):
    """x / 2 with no C code (a Python-only neighbour: not fused with C ops)."""

    nin = 1

    def impl(self, x):
        return x / 2


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_python_only_elemwise_chained_after_a_c_one(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    out = Elemwise(PyHalf())(nt.exp(nt.dot(A, B)))
    f = ng.function([A, B], out, linker=linker)
    assert len(inplace_nodes(f)) == 2
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    run_checked(f, [a, b], np.exp(a @ b) / 2)


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_fused_node_with_several_outputs(linker):
    m = nt.dmatrix("m")
    e = nt.exp(m.sum(axis=1))
    f = ng.function([m], [e + 1, e.sum(), e * 2.0], linker=linker)
    (node,) = inplace_nodes(f)
    assert len(node.outputs) == 3
    x = RNG.random((4, 3))
    want = np.exp(x.sum(axis=1))
    run_checked(f, [x], [want + 1, np.asarray(want.sum()), want * 2])


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_same_value_read_twice_by_one_node(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    f = ng.function([A, B], d * d, linker=linker, rewrite="fast")
    assert len(inplace_nodes(f)) == 1
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    run_checked(f, [a, b], (a @ b) ** 2)


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_switch_in_place(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    f = ng.function([A, B], nt.switch(d > 1.0, d, 0.0), linker=linker)
    assert len(inplace_nodes(f)) == 1
    a, b = RNG.random((3, 3)), RNG.random((3, 3))
    want = np.where(a @ b > 1.0, a @ b, 0.0)
    run_checked(f, [a, b], want)


def test_switch_perform_writes_into_its_input():
    c = nt.bvector("c")
    a, b = nt.dvector("a"), nt.dvector("b")
    node = Elemwise(ps.switch, {0: 1}).make_node(c, a, b)
    target = np.array([1.0, 2.0, 3.0])
    storage = [[None]]
    node.op.perform(node, [np.array([1, 0, 1], dtype=np.int8), target, np.zeros(3)], storage)
    assert storage[0][0] is target
    np.testing.assert_array_equal(target, [1.0, 0.0, 3.0])


# -- where it must not -----------------------------------------------------------------


@pytest.mark.parametrize("linker", PY_LINKERS)
@pytest.mark.parametrize("view", ["transpose", "slice", "reshape", "specify_shape", "row"])
def test_a_view_of_an_input_is_never_overwritten(linker, view):
    A = nt.dmatrix("A")
    v = {"transpose": lambda: A.T, "slice": lambda: A[1:],
         "reshape": lambda: A.reshape((-1,)), "specify_shape": lambda: nt.specify_shape(A, (3, 2)),
         "row": lambda: A[0].dimshuffle("x", 0)}[view]()
    f = ng.function([A], nt.exp(v) + 1, linker=linker)
    assert not inplace_nodes(f)
    a = RNG.random((3, 2))
    want = {"transpose": a.T, "slice": a[1:], "reshape": a.reshape(-1), "specify_shape": a,
            "row": a[0][None]}[view]
    run_checked(f, [a], np.exp(want) + 1)


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_an_input_is_never_overwritten(linker):
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) * 2, linker=linker)
    assert not inplace_nodes(f)
    run_checked(f, [np.arange(3.0)], np.exp(np.arange(3.0)) * 2)


def test_a_shared_variable_is_never_overwritten():
    s = ng.shared(np.arange(3.0), name="s")
    f = ng.function([], nt.exp(s) * 2, linker="py")
    assert not inplace_nodes(f)
    f()
    np.testing.assert_array_equal(s.get_value(), np.arange(3.0))


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_value_with_another_reader_is_not_overwritten(linker):
    A, B, C = nt.dmatrix("A"), nt.dmatrix("B"), nt.dmatrix("C")
    d = nt.dot(A, B)
    f = ng.function([A, B, C], [nt.exp(d) + 1, nt.dot(d, C)], linker=linker)
    assert nt.dot(A, B).owner.op not in [n.op for n in inplace_nodes(f)]
    assert all(v.owner is None or type(v.owner.op).__name__ != "Dot" or
               len(f.fgraph.clients[v]) == 1 for v in destroyed_inputs(f))
    a, b, c = RNG.random((2, 3)), RNG.random((3, 2)), RNG.random((2, 2))
    run_checked(f, [a, b, c], [np.exp(a @ b) + 1, (a @ b) @ c])


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_viewed_value_with_another_reader_is_not_overwritten(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    f = ng.function([A, B], [nt.exp(d.T) + 1, d.sum()], linker=linker)
    assert not inplace_nodes(f)
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    run_checked(f, [a, b], [np.exp((a @ b).T) + 1, np.asarray((a @ b).sum())])


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_graph_output_is_not_overwritten(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    f = ng.function([A, B], [d, nt.exp(d) + 1], linker=linker)
    assert not inplace_nodes(f)
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    run_checked(f, [a, b], [a @ b, np.exp(a @ b) + 1])


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_value_whose_view_is_an_output_is_not_overwritten(linker):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    f = ng.function([A, B], [d.T, nt.exp(d) + 1], linker=linker)
    assert not inplace_nodes(f)
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    run_checked(f, [a, b], [(a @ b).T, np.exp(a @ b) + 1])


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_statically_broadcast_input_is_not_overwritten(linker):
    m, M = nt.dmatrix("m"), nt.dmatrix("M")
    s = m.sum(axis=0)  # a vector, broadcast over M's rows
    f = ng.function([m, M], nt.exp(s) + M, linker=linker)
    assert not inplace_nodes(f)
    a, b = RNG.random((3, 4)), RNG.random((5, 4))
    run_checked(f, [a, b], np.exp(a.sum(axis=0)) + b)


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_an_input_that_may_broadcast_at_run_time_is_not_overwritten(linker):
    m, n = nt.dmatrix("m"), nt.dmatrix("n")
    u, v = m.sum(axis=1), n.sum(axis=1)  # both (None,): either may be 1 at run time
    f = ng.function([m, n], nt.exp(u) + v, linker=linker)
    assert not inplace_nodes(f)
    a, b = RNG.random((1, 3)), RNG.random((4, 3))
    run_checked(f, [a, b], np.exp(a.sum(axis=1)) + b.sum(axis=1))
    run_checked(f, [b, a], np.exp(b.sum(axis=1)) + a.sum(axis=1))


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_value_of_another_dtype_is_not_overwritten(linker):
    A, B = nt.lmatrix("A"), nt.lmatrix("B")
    f = ng.function([A, B], nt.dot(A, B) / 2, linker=linker)
    assert not inplace_nodes(f)
    a, b = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    run_checked(f, [a, b], (a @ b) / 2)


def test_constants_are_never_overwritten():
    x = nt.dvector("x")
    c = nt.constant(np.arange(3.0))
    fg = FunctionGraph([x], [nt.exp(c) + x])
    InplaceElemwise().rewrite(fg)
    for node in fg.apply_nodes:
        for ins in node.op.destroy_map.values():
            assert not isinstance(node.inputs[ins[0]], nt.Constant)


def test_rewrite_none_leaves_the_graph_alone():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    f = ng.function([A, B], nt.exp(nt.dot(A, B)) + 1, linker="py", rewrite=None)
    assert not inplace_nodes(f)


def test_already_inplace_nodes_are_left_alone_and_a_second_run_changes_nothing():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    f = ng.function([A, B], nt.exp(nt.dot(A, B)) + 1, linker="py")
    assert InplaceElemwise().rewrite(f.fgraph) == 0


def test_destroyable_walks_views_back_to_the_owner():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    t = d.T
    out = nt.exp(t)
    fg = FunctionGraph([A, B], [out], clone=False)
    assert destroyable(fg, out.owner, t)
    fg2 = FunctionGraph([A, B], [out, d.sum()], clone=False)
    assert not destroyable(fg2, out.owner, t)  # d has a second reader
    x = nt.dmatrix("x")
    view = x.T
    e = nt.exp(view)
    fg3 = FunctionGraph([x], [e], clone=False)
    assert not destroyable(fg3, e.owner, view)  # the memory is the caller's


def test_hidden_outputs_are_not_overwritten():
    from nbgraph.core.op import Op

    class Buffered(Op):
        """Two outputs, the second a private buffer behind default_output=0."""

        __props__ = ()
        default_output = 0

        def make_node(self, x):
            return Apply(self, [x], [x.type(), x.type()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] * 2
            output_storage[1][0] = inputs[0] * 3

    x = nt.dvector("x")
    y = Buffered()(x)
    fg = FunctionGraph([x], [nt.exp(y)], clone=False)
    assert not destroyable(fg, fg.outputs[0].owner, y)


# -- the destroy checks of FunctionGraph -------------------------------------------------


def _inplace(scalar_op, *inputs, destroyed=0):
    return Elemwise(scalar_op, {0: destroyed})(*inputs)


def test_a_chain_of_destroyers_is_ordered():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    e = _inplace(ps.exp, d)
    g = _inplace(ps.neg, e)
    fg = FunctionGraph([A, B], [g])
    assert [str(n.op) for n in fg.toposort()] == [
        "Dot", "Elemwise{exp, inplace}", "Elemwise{neg, inplace}"]


def test_a_destroyer_of_a_value_viewed_by_an_output_is_refused():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    fg = FunctionGraph([A, B], [d.T, _inplace(ps.exp, d)])
    with pytest.raises(ValueError, match="viewed by .*an output of the graph"):
        fg.toposort()


def test_a_destroyer_of_an_earlier_destroyers_returned_result_is_refused():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    e = _inplace(ps.exp, nt.dot(A, B))
    fg = FunctionGraph([A, B], [e, _inplace(ps.neg, e)])
    with pytest.raises(ValueError, match="which is an output"):
        fg.toposort()


def test_a_destroyer_of_a_view_of_an_input_is_refused():
    A = nt.dmatrix("A")
    fg = FunctionGraph([A], [_inplace(ps.exp, A.T)])
    with pytest.raises(ValueError, match="overwrites A, which is an input"):
        fg.toposort()


def test_readers_of_the_old_value_run_before_the_destroyer():
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    d = nt.dot(A, B)
    total = d.T.sum()
    e = _inplace(ps.exp, d)
    f = ng.function([A, B], [e + 0.0, total], linker="py", rewrite=None)
    order = [str(n.op) for n in f.fgraph.toposort()]
    assert order.index("Sum{axis=0,1}") < order.index("Elemwise{exp, inplace}")
    a, b = RNG.random((2, 3)), RNG.random((3, 2))
    r = f(a, b)
    np.testing.assert_allclose(r[0], np.exp(a @ b))
    np.testing.assert_allclose(r[1], (a @ b).sum())


# -- sizes proven equal by matrix products -------------------------------------------


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_an_sgd_update_overwrites_its_gradient_product(linker):
    # dot(x, W) proves x's columns are W's rows: the update may overwrite dot(x.T, g)
    x = nt.dmatrix("x")
    W = ng.shared(RNG.random((4, 3)), name="W")
    loss = ((nt.dot(x, W) - 1.0) ** 2).sum()
    (g,) = ng.grad(loss, [W])
    f = ng.function([x], loss, updates=[(W, W - 0.1 * g)], linker=linker)
    (update,) = [n for n in inplace_nodes(f) if n.outputs[0] in f.fgraph.outputs]
    assert type(update.inputs[update.op.destroy_map[0][0]].owner.op).__name__ == "Dot"
    a, w = RNG.random((5, 4)), W.get_value().copy()
    for _ in range(3):
        want = ((a @ w - 1.0) ** 2).sum()
        np.testing.assert_allclose(f(a), want, rtol=1e-12)
        w = w - 0.1 * (a.T @ (2 * (a @ w - 1.0)))
        np.testing.assert_allclose(W.get_value(), w, rtol=1e-12)


@pytest.mark.parametrize("linker", PY_LINKERS)
def test_a_backward_product_is_overwritten_when_its_columns_are_aligned(linker):
    # h's columns meet W2's rows in dot(h, W2): dot(d, W2.T) * (1 - h**2) may overwrite
    # the product (d has h's rows: it is computed from dot(h, W2))
    x, W1, b1, W2 = nt.dmatrix("x"), nt.dmatrix("W1"), nt.dvector("b1"), nt.dmatrix("W2")
    h = nt.tanh(nt.dot(x, W1) + b1)
    d = nt.dot(h, W2) * 2.0
    out = nt.dot(d, W2.T) * (1 - h ** 2)
    f = ng.function([x, W1, b1, W2], out, linker=linker)
    (node,) = [n for n in inplace_nodes(f) if n.outputs[0] in f.fgraph.outputs]
    assert type(node.inputs[node.op.destroy_map[0][0]].owner.op).__name__ == "Dot"
    a, w1, bb, w2 = RNG.random((5, 4)), RNG.random((4, 3)), RNG.random(3), RNG.random((3, 2))
    hh = np.tanh(a @ w1 + bb)
    run_checked(f, [a, w1, bb, w2], ((hh @ w2 * 2.0) @ w2.T) * (1 - hh ** 2))
    # b1 broadcast over a W1 of one column: dot(h, W2) still aligns h's columns with W2's rows
    w1c = RNG.random((4, 1))
    hh = np.tanh(a @ w1c + bb)
    run_checked(f, [a, w1c, bb, w2], ((hh @ w2 * 2.0) @ w2.T) * (1 - hh ** 2))


def test_aligned_sizes_only_in_graphs_without_lazy_nodes():
    from nbgraph.tensor.ifelse import ifelse
    from nbgraph.tensor.inplace import AlignedSizes
    from nbgraph.tensor.shape_keys import shape_keys

    x, W, V = nt.dmatrix("x"), nt.dmatrix("W"), nt.dmatrix("V")
    c = nt.bscalar("c")
    eager = FunctionGraph([x, W, V], [nt.dot(x, W) + V])
    aligned = AlignedSizes(eager)
    kx, kw = shape_keys(eager, eager.inputs[0]), shape_keys(eager, eager.inputs[1])
    assert aligned.canonical(kx)[1] == aligned.canonical(kw)[0]
    assert aligned.canonical(kx)[0] != aligned.canonical(kw)[1]
    lazy = FunctionGraph([x, W, V, c], [ifelse(c, nt.dot(x, W), V)])
    aligned = AlignedSizes(lazy)
    kx, kw = shape_keys(lazy, lazy.inputs[0]), shape_keys(lazy, lazy.inputs[1])
    assert aligned.canonical(kx)[1] != aligned.canonical(kw)[0]
