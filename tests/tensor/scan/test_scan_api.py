"""scan's argument checks, its shapes, its exports and how its loops are displayed."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import Scan, scan, until


def test_exported_as_theano_users_expect():
    import nbgraph.tensor.scan as scan_module

    x = nt.dvector("x")
    for build in (ng.scan, nt.scan, scan_module, scan_module.scan):
        out, updates = build(lambda v: v + 1, sequences=x)
        np.testing.assert_array_equal(ng.function([x], out, linker="py")(np.arange(2.0)),
                                      [1.0, 2.0])


def test_return_list_and_several_outputs():
    x = nt.dvector("x")
    out, _ = scan(lambda v: v + 1, sequences=x, return_list=True)
    assert isinstance(out, list) and len(out) == 1
    outs, _ = scan(lambda v: [v + 1, v * 2], sequences=x)
    assert isinstance(outs, list) and len(outs) == 2


def test_step_may_return_updates_first_or_as_pairs():
    counter = ng.shared(np.int64(0), name="counter")
    out, updates = scan(lambda: ({counter: counter + 1}, counter * 2), n_steps=3)
    _, pair_updates = scan(lambda: [(counter, counter + 1)], n_steps=3)
    f = ng.function([], out, updates=updates, linker="py")
    np.testing.assert_array_equal(f(), [0, 2, 4])
    assert counter.get_value() == 3
    assert list(pair_updates) == [counter]


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_infer_shape_of_stacked_outputs(linker):
    x, W = nt.dmatrix("x"), nt.dmatrix("W")
    (h, y), _ = scan(lambda v, hp, W: (nt.tanh(nt.dot(v, W) + hp), nt.dot(v, W).sum()),
                     sequences=x, outputs_info=[nt.zeros((W.shape[1],)), None],
                     non_sequences=W)
    f = ng.function([x, W], [h.shape, y.shape], linker=linker)
    hs, ys = f(np.ones((5, 3)), np.ones((3, 4)))
    np.testing.assert_array_equal(hs, [5, 4])
    np.testing.assert_array_equal(ys, [5])
    op = h.owner.op
    shapes = op.infer_shape(h.owner, [()] + [tuple(nt.shape_i(i, d) for d in range(i.ndim))
                                            for i in h.owner.inputs[1:]])
    assert len(shapes) == 2


def test_infer_shape_refuses_with_until():
    x = nt.dscalar("x")
    out, _ = scan(lambda p: (p * 2, until(p > 10)), outputs_info=x, n_steps=10)
    node = out.owner
    with pytest.raises(NotImplementedError, match="condition"):
        node.op.infer_shape(node, [()] + [tuple(nt.shape_i(i, d) for d in range(i.ndim))
                                         for i in node.inputs[1:]])
    assert ng.function([x], out.shape, linker="py")(1.0)[0] == 5  # 2, 4, 8, 16, 32


def test_bad_arguments_are_refused_with_clear_errors():
    x = nt.dvector("x")
    with pytest.raises(TypeError, match="callable"):
        scan(3, sequences=x)
    with pytest.raises(ValueError, match="needs n_steps"):
        scan(lambda p: p + 1, outputs_info=x)
    with pytest.raises(ValueError, match="n_steps must be >= 0"):
        scan(lambda p: p + 1, outputs_info=x, n_steps=-2)
    with pytest.raises(ValueError, match="truncate_gradient"):
        scan(lambda v: v, sequences=x, truncate_gradient=0)
    with pytest.raises(ValueError, match="returned 2 outputs but outputs_info describes 1"):
        scan(lambda v, p: [p + v, v], sequences=x, outputs_info=nt.constant(0.0))
    with pytest.raises(ValueError, match="must be negative"):
        scan(lambda p: p, outputs_info=dict(initial=x, taps=[1]), n_steps=2)
    with pytest.raises(TypeError, match="at least one dimension"):
        scan(lambda v: v, sequences=nt.dscalar("s"))
    with pytest.raises(TypeError, match="downcast"):
        scan(lambda p: p * 0.5, outputs_info=nt.constant(np.int8(1)), n_steps=3)
    with pytest.raises(TypeError, match="number of dimensions"):
        scan(lambda p: nt.stack([p, p]), outputs_info=nt.dscalar("p0"), n_steps=3)
    with pytest.raises(ValueError, match="taps .* need 3 initial rows"):
        scan(lambda a, b: a + b, outputs_info=dict(initial=nt.tensor("float64", (2,)),
                                                   taps=[-3, -1]), n_steps=2)
    with pytest.raises(TypeError, match="shared variables"):
        scan(lambda v: (v, {x: v}), sequences=x)
    with pytest.raises(TypeError, match="scalar"):
        until(nt.dvector("c"))


def test_strict_requires_every_outer_value_in_non_sequences():
    w = ng.shared(np.float64(2.0), name="w")
    x = nt.dvector("x")
    with pytest.raises(ValueError, match="strict=True.*w"):
        scan(lambda v: v * w, sequences=x, strict=True)
    out, _ = scan(lambda v, w: v * w, sequences=x, non_sequences=w, strict=True)
    np.testing.assert_array_equal(ng.function([x], out, linker="py")(np.arange(3.0)),
                                  [0.0, 2.0, 4.0])


def test_integer_steps_accept_numpy_ints_and_symbolic_sizes():
    x = nt.dvector("x")
    out, _ = scan(lambda p: p * 2, outputs_info=x, n_steps=np.int32(2))
    np.testing.assert_array_equal(ng.function([x], out, linker="py")(np.ones(1)),
                                  [[2.0], [4.0]])
    with pytest.raises(TypeError, match="n_steps"):
        scan(lambda p: p * 2, outputs_info=x, n_steps=2.5)


def test_runtime_shape_change_of_a_state_is_an_error():
    x = nt.dvector("x")
    out, _ = scan(lambda p: nt.concatenate([p, p]), outputs_info=x, n_steps=2)
    with pytest.raises(ValueError, match="rows of shape"):
        ng.function([x], out, linker="py")(np.ones(2))


def test_the_scan_op_checks_its_outer_inputs():
    x = nt.dvector("x")
    out, _ = scan(lambda v: v * 2, sequences=x)
    op = out.owner.op
    with pytest.raises(TypeError, match="n_steps"):
        op.make_node(nt.dscalar("n"), x)
    with pytest.raises(TypeError, match="sequence 0"):
        op.make_node(3, nt.dmatrix("m"))
    with pytest.raises(TypeError, match="takes n_steps and 1 inputs"):
        op.make_node(3, x, x)
    assert isinstance(op, Scan) and op.inner_graphs() == [op.fgraph]


def test_dprint_shows_the_inner_graph_under_the_outer_one():
    A = nt.dvector("A")
    out, _ = scan(lambda p, A: p * A, outputs_info=nt.ones_like(A), non_sequences=A,
                  n_steps=3, name="power")
    text = ng.dprint(out, file="str")
    outer, inner = text.split("\nInner graphs:\n")
    assert outer.startswith("Scan{power} [id A] ''")
    assert inner.splitlines()[1:] == [
        "Scan{power}",
        " >Elemwise{mul} [id A] ''",
        " > |out0[t-1] [id B]",
        " > |A [id C]",
    ]


def test_dprint_of_nested_loops_nests_the_inner_graphs():
    x = nt.dmatrix("x")
    out, _ = scan(lambda row: scan(lambda v: v + 1, sequences=row, name="inner")[0],
                  sequences=x, name="outer")
    text = ng.dprint(out, file="str")
    assert "\nScan{outer}\n >Scan{inner}" in text
    assert "\n >Scan{inner}\n > >Elemwise{add}" in text


@pytest.mark.needs_dot
def test_diagram_draws_the_body_as_a_cluster():
    from nbgraph.display import diagram

    A = nt.dvector("A")
    out, _ = scan(lambda p, A: p * A, outputs_info=nt.ones_like(A), non_sequences=A,
                  n_steps=3, name="power")
    source = diagram(out).source
    assert "subgraph cluster_" in source and "Scan{power}: inner graph" in source
    assert "compound=true" in source and "Elemwise{mul}" in source
    assert diagram(out).source == source  # deterministic


def test_a_compiled_loop_pickles_and_runs_again():
    import pickle

    A, k = nt.dvector("A"), nt.iscalar("k")
    steps, _ = scan(lambda p, A: p * A, outputs_info=nt.ones_like(A), non_sequences=A,
                    n_steps=k)
    f = ng.function([A, k], steps[-1], linker="py")
    a = np.array([2.0, 3.0])
    expected = f(a, 3)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(a, 3), expected)
    np.testing.assert_array_equal(expected, a ** 3)
