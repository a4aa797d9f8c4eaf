"""vectorize_graph and graph_replace: batched graphs equal the core graph applied
to each batch entry (NumPy loop as the oracle)."""

import numpy as np
import pytest

import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.tensor import linalg as la
from nbgraph.tensor.vectorize import Blockwise, graph_replace, vectorize_graph

RNG = np.random.default_rng(3)


def _per_entry(core_fn, *batches):
    return np.stack([core_fn(*args) for args in zip(*batches, strict=True)])


def test_elementwise_reduction_and_dimshuffle():
    x = nt.dmatrix("x")
    y = (nt.exp(x.T) * 2).sum(axis=0) + x.max()
    xs = nt.dtensor3("xs")
    ys = vectorize_graph(y, {x: xs})
    assert ys.ndim == 2
    data = RNG.normal(size=(4, 2, 3))
    want = _per_entry(lambda a: (np.exp(a.T) * 2).sum(axis=0) + a.max(), data)
    np.testing.assert_allclose(function([xs], ys, linker="py")(data), want, rtol=1e-13)
    # no Blockwise was needed
    assert not any(isinstance(n.op, Blockwise) for n in
                   function([xs], ys, linker="py").fgraph.apply_nodes)


def test_matrix_product_becomes_matmul_and_batches_broadcast():
    a, b = nt.dmatrix("a"), nt.dmatrix("b")
    y = nt.tanh(nt.dot(a, b))
    A = nt.dtensor3("A")          # a batch of a, b stays shared
    B = nt.dtensor4("B")          # two batch dims for b
    va, vb = RNG.normal(size=(5, 2, 3)), RNG.normal(size=(3, 3, 4))
    y1 = vectorize_graph(y, {a: A})
    np.testing.assert_allclose(function([A, b], y1, linker="py")(va, vb[0]),
                               np.tanh(va @ vb[0]), rtol=1e-13)
    y2 = vectorize_graph(y, {a: A, b: B})
    vB = RNG.normal(size=(7, 1, 3, 4))
    np.testing.assert_allclose(function([A, B], y2, linker="py")(va, vB),
                               np.tanh(va @ vB), rtol=1e-13)


def test_other_ops_run_blockwise():
    m = nt.dmatrix("m")
    y = la.det(m) + la.inv(m).sum()
    ms = nt.dtensor3("ms")
    ys = vectorize_graph(y, {m: ms})
    data = RNG.normal(size=(6, 3, 3)) + 3 * np.eye(3)
    want = _per_entry(lambda a: np.linalg.det(a) + np.linalg.inv(a).sum(), data)
    f = function([ms], ys, linker="py")
    np.testing.assert_allclose(f(data), want, rtol=1e-10)
    assert any(isinstance(n.op, Blockwise) for n in f.fgraph.apply_nodes)
    assert f(np.zeros((0, 3, 3))).shape == (0,)
    from nbgraph.gradient import NullGradientError, grad

    with pytest.raises(NullGradientError, match="Blockwise.*not implemented"):
        grad(ys.sum(), ms)


def test_bad_replacements_and_graph_replace():
    x = nt.dmatrix("x")
    with pytest.raises(TypeError, match="must be replaced by a batch"):
        vectorize_graph(x + 1, {x: nt.dvector("v")})
    with pytest.raises(TypeError, match="must be replaced by a batch"):
        vectorize_graph(x + 1, {x: nt.ftensor3("f")})
    y = nt.dmatrix("y")
    out = graph_replace(x * 2, {x: y})
    np.testing.assert_array_equal(out.eval({y: np.ones((1, 2))}), [[2.0, 2.0]])
    with pytest.raises(ValueError, match="not in the graph"):
        graph_replace(x * 2, {y: x})
    assert graph_replace(x * 2, {y: x}, strict=False).owner.inputs[0] is x
