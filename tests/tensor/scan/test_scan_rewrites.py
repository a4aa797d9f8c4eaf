"""The Scan rewrites of the "fast" pipeline, checked on the compiled graphs, and their
results checked against the same loops compiled without rewrites."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import Scan, reduce as scan_reduce, scan


def scans_of(f):
    return [n for n in f.fgraph.toposort() if isinstance(n.op, Scan)]


def same_results(inputs, outputs, args):
    fast = ng.function(inputs, outputs, linker="py")
    plain = ng.function(inputs, outputs, linker="py", rewrite=None)
    for a, b in zip(fast(*args), plain(*args), strict=True):
        np.testing.assert_array_equal(a, b)
    return fast


def test_only_the_last_step_is_kept_when_only_it_is_read():
    x = nt.dvector("x")
    total, _ = scan_reduce(lambda v, acc: acc + v, x, nt.constant(0.0))
    f = same_results([x], [total], [np.arange(5.0)])
    (node,) = scans_of(f)
    assert node.op.store == ("last",)
    assert node.outputs[0].ndim == 0  # the loop's output is the value, not a stack


def test_last_step_of_zero_steps_still_raises():
    x = nt.dvector("x")
    total, _ = scan_reduce(lambda v, acc: acc + v, x, nt.constant(0.0))
    f = ng.function([x], total, linker="py")
    with pytest.raises(IndexError):
        f(np.zeros(0))


def test_every_step_is_kept_when_the_stack_is_read():
    x = nt.dvector("x")
    run, _ = scan(lambda v, acc: acc + v, sequences=x, outputs_info=nt.constant(0.0))
    f = same_results([x], [run, run[-1]], [np.arange(4.0)])
    assert scans_of(f)[0].op.store == ("all",)


def test_unread_outputs_and_unread_inputs_are_dropped():
    x, w = nt.dvector("x"), nt.dscalar("w")
    (acc, doubled), _ = scan(lambda v, a, w: (a + v, v * w), sequences=x,
                             outputs_info=[nt.constant(0.0), None], non_sequences=w)
    f = ng.function([x, w], acc[-1], linker="py")
    assert f(np.arange(4.0), 3.0) == 6.0
    (node,) = scans_of(f)
    assert node.op.n_nit_sot == 0 and node.op.n_non_seqs == 0


def test_loop_invariant_work_is_computed_once_outside():
    x, W = nt.dvector("x"), nt.dmatrix("W")
    # W.T.dot(W) reads only a non-sequence: it moves out of the loop
    out, _ = scan(lambda v, h, W: nt.dot(nt.dot(W.T, W), h) + v, sequences=x,
                  outputs_info=nt.zeros((2,)), non_sequences=W)
    f = same_results([x, W], [out], [np.arange(3.0), np.array([[1.0, 2.0], [0.5, -1.0]])])
    (node,) = scans_of(f)
    inner_dots = [n for n in node.op.fgraph.apply_nodes if str(n.op) == "Dot"]
    assert len(inner_dots) == 1


def test_hoisting_rewrite_on_a_hand_built_body():
    from nbgraph.core.fgraph import FunctionGraph
    from nbgraph.tensor.scan.rewriting import scan_hoist_invariants

    h, w = nt.dvector("h"), nt.dvector("w")
    body = FunctionGraph([h, w], [h * nt.exp(w)], clone=True)
    op = Scan(body, 0, [(-1,)], 0)
    w_outer, h0 = nt.dvector("w_outer"), nt.dvector("h0")
    out = op.make_node(3, h0.dimshuffle("x", 0), w_outer).outputs[0]
    fg = FunctionGraph([h0, w_outer], [out], clone=True)
    node = fg.outputs[0].owner
    new = scan_hoist_invariants.transform(fg, node)
    inner_ops = {str(n.op) for n in new[0].owner.op.fgraph.apply_nodes}
    assert inner_ops == {"Elemwise{mul}"}
    f = ng.function(list(fg.inputs), new[0], linker="py")
    np.testing.assert_allclose(f(np.ones(2), np.array([0.0, 1.0])),
                               [[1, np.e], [1, np.e ** 2], [1, np.e ** 3]], rtol=1e-15)


def test_loops_over_the_same_sequence_are_merged():
    x = nt.dvector("x")
    doubled, _ = scan(lambda v: v * 2, sequences=x)
    running, _ = scan(lambda v, acc: acc + v, sequences=x, outputs_info=nt.constant(0.0))
    f = same_results([x], [doubled, running], [np.arange(5.0)])
    (node,) = scans_of(f)
    assert node.op.n_seqs == 1  # the shared sequence is read once
    assert node.op.n_states == 1 and node.op.n_nit_sot == 1


def test_dependent_loops_are_not_merged():
    x = nt.dvector("x")
    first, _ = scan(lambda v: v * 2, sequences=x)
    second, _ = scan(lambda v: v + 1, sequences=first, n_steps=x.shape[0])
    f = same_results([x], [second], [np.arange(4.0)])
    assert len(scans_of(f)) == 2


def _elman(linker="py", rewrite="fast"):
    x, h0 = nt.dtensor3("x"), nt.dmatrix("h0")
    W, U = nt.dmatrix("W"), nt.dmatrix("U")
    h, _ = scan(lambda x_t, hp, W, U: nt.tanh(nt.dot(x_t, W) + nt.dot(hp, U)), sequences=x,
                outputs_info=h0, non_sequences=[W, U])
    cost = (h ** 2).sum()
    return ng.function([x, h0, W, U], [cost] + ng.grad(cost, [W, U, h0]), linker=linker,
                       rewrite=rewrite)


def test_matrix_products_with_weights_leave_both_loops():
    """With the opt-in "scan_pushout" rewrites, x_t W is one product before the forward
    loop; the gradient loop's sums of x_t^T d_t and h_{t-1}^T d_t are two products
    after it: each loop body keeps only its recurrent product."""
    from nbgraph.core.rewriting import EquilibriumRewriter
    from nbgraph.tensor.rewriting import rewrites

    fast = _elman()
    fg = fast.fgraph.clone()
    assert EquilibriumRewriter(rewrites.query("scan_pushout")).rewrite(fg) > 0
    f = ng.function(list(fg.inputs), list(fg.outputs), linker="py", rewrite=None)
    loops = scans_of(f)
    assert len(loops) == 2
    from nbgraph.tensor.scan.loop import rewritten_inner

    for node in loops:
        dots = [n for n in rewritten_inner(node.op).apply_nodes if str(n.op) == "Dot"]
        assert len(dots) == 1, node.op
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((6, 3, 4)), rng.standard_normal((3, 5)),
            rng.standard_normal((4, 5)) * 0.5, rng.standard_normal((5, 5)) * 0.5]
    plain = _elman(rewrite=None)
    for a, b in zip(f(*args), plain(*args), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_an_accumulator_read_in_the_body_stays_in_the_loop():
    x = nt.dvector("x")
    # acc is read by the second output too: it cannot become a sum after the loop
    (acc, seen), _ = scan(lambda v, a: (a + v, a * 2), sequences=x,
                          outputs_info=[nt.constant(0.0), None])
    f = same_results([x], [acc[-1], seen], [np.arange(4.0)])
    assert scans_of(f)[0].op.n_states == 1


def _row_shape_reads(node):
    from nbgraph.tensor.basic import ShapeI
    from nbgraph.tensor.scan.rewriting import _row_sources

    sources = _row_sources(node.op, node)
    return [n for n in node.op.fgraph.apply_nodes
            if isinstance(n.op, ShapeI) and n.inputs[0] in sources]


def test_row_sizes_are_read_from_the_outer_values_once():
    """The gradient loop of an Elman net checks broadcasting with the sizes of its
    sequence rows; after rewriting no step reads a row's or a state tap's size."""
    f = _elman()
    loops = scans_of(f)
    assert len(loops) == 2
    assert all(not _row_shape_reads(node) for node in loops)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((5, 3, 4)), rng.standard_normal((3, 6)),
            rng.standard_normal((4, 6)) * 0.5, rng.standard_normal((6, 6)) * 0.5]
    for a, b in zip(f(*args), _elman(rewrite=None)(*args), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("go_backwards", [False, True])
def test_row_sizes_used_as_values_keep_their_meaning(go_backwards):
    x, h0 = nt.dmatrix("x"), nt.dmatrix("h0")
    # sizes of a sequence row and of both taps of a state, read as values in the body
    out, _ = scan(lambda v, h2, h1: h1 * v.shape[0] + h2.shape[0] + 2 * h1.shape[0],
                  sequences=x, outputs_info=dict(initial=h0, taps=[-2, -1]),
                  go_backwards=go_backwards)
    f = same_results([x, h0], [out], [np.arange(12.0).reshape(4, 3), np.ones((2, 3))])
    assert not _row_shape_reads(scans_of(f)[0])
    # zero steps: the sizes come from the (empty) outer values all the same
    (got,) = f(np.zeros((0, 3)), np.ones((2, 3)))
    assert got.shape == (0, 3)
