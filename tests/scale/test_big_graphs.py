"""Graphs of 100,000 nodes through every path, at Python's default recursion limit.

Two shapes: a chain (``x = x * 1.0001 + 0.5`` repeated, as deep as it is big)
and a wide sum (distinct terms ``x * c_i`` added up by a balanced tree, one
variable read by a third of the nodes).  Each path must finish with NumPy's
values and no RecursionError; nothing here is timed (``python -m bench.scale``
prints the times and peak memory of each path at 100,000 nodes).

Building a 100,000-node graph costs seconds of Python, and so does each
compilation; to keep this module near a minute, the paths that rewrite the
whole graph (``function`` with each linker, ``eval``) run on 10,000 nodes and
the debug linker, which runs every node twice and compares, on 3,000.
"""

import sys

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.display import diagram, render_svg

BIG = 100_000
COMPILED = 10_000
DEBUG = 3_000
VALUE = np.array([0.5, -1.0, 2.0])


def chain(nodes):
    """``(x, out, expected)``: ``x * 1.0001 + 0.5`` repeated, ``nodes`` Apply nodes in all.

    A Python number is a 0-d constant broadcast by a DimShuffle node, so each
    step is four nodes.
    """
    x = nt.dvector("x")
    out, expected = x, VALUE.copy()
    for _ in range(nodes // 4):
        out = out * 1.0001 + 0.5
        expected = expected * 1.0001 + 0.5
    return x, out, expected


def wide(nodes):
    """``(x, out, expected)``: ``nodes // 3`` terms ``x * c_i`` summed by a balanced tree."""
    x = nt.dvector("x")
    coefficients = 1.0 + np.arange(nodes // 3) / nodes
    terms = [x * float(c) for c in coefficients]
    while len(terms) > 1:
        paired = [a + b for a, b in zip(terms[::2], terms[1::2], strict=False)]  # odd: kept
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return x, terms[0], VALUE * coefficients.sum()


SHAPES = {"chain": chain, "wide": wide}
_BUILT = {}


def graph(shape, nodes):
    """The graph ``shape`` of ``nodes`` nodes, built once per session (paths never edit it)."""
    key = (shape, nodes)
    if key not in _BUILT:
        _BUILT[key] = SHAPES[shape](nodes)
    return _BUILT[key]


@pytest.fixture(autouse=True)
def default_recursion_limit():
    """Every path runs at Python's default recursion limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("shape", SHAPES)
def test_function_graph_of_100k_nodes_builds_sorts_clones_and_checks(shape):
    x, out, _ = graph(shape, BIG)
    fg = FunctionGraph([x], [out])
    order = fg.toposort()
    assert len(order) >= BIG - 4
    assert order[-1].outputs[0] is fg.outputs[0]
    fg.check_integrity()
    copy = fg.clone()
    assert len(copy.apply_nodes) == len(fg.apply_nodes)


@pytest.mark.parametrize("shape", SHAPES)
def test_dprint_of_100k_nodes(shape):
    x, out, _ = graph(shape, BIG)
    text = nbgraph.dprint(out, file="str")
    lines = text.splitlines()
    assert len(lines) >= BIG // 2
    assert lines[0].startswith("Elemwise{")
    assert "x [id " in text


@pytest.mark.needs_dot
@pytest.mark.parametrize("shape", SHAPES)
def test_diagram_of_100k_nodes_is_summarised(shape):
    x, out, _ = graph(shape, BIG)
    drawing = diagram(out)
    assert "more" in drawing.source  # the summary node stands for what is left out
    assert "<svg" in str(render_svg(drawing))


@pytest.mark.parametrize("linker", ["py", "c", "cvm"])
@pytest.mark.parametrize("shape", SHAPES)
def test_function_of_a_big_graph_with_each_linker(shape, linker):
    x, out, expected = graph(shape, COMPILED)
    f = nbgraph.function([x], out, linker=linker)
    np.testing.assert_allclose(f(VALUE), expected, rtol=1e-9)


@pytest.mark.parametrize("shape", SHAPES)
def test_function_of_a_big_graph_with_the_debug_linker(shape):
    x, out, expected = graph(shape, DEBUG)
    f = nbgraph.function([x], out, linker="debug")
    np.testing.assert_allclose(f(VALUE), expected, rtol=1e-9)


@pytest.mark.parametrize("shape", SHAPES)
def test_eval_of_a_big_graph(shape):
    x, out, expected = graph(shape, COMPILED)
    np.testing.assert_allclose(out.eval({x: VALUE}), expected, rtol=1e-9)


def _grad_expected(shape, nodes):
    if shape == "chain":
        return np.full(3, 1.0001 ** (nodes // 4))
    return np.full(3, (1.0 + np.arange(nodes // 3) / nodes).sum())


@pytest.mark.parametrize("shape", SHAPES)
def test_grad_of_a_big_graph(shape):
    # (grad of the chain once took quadratic time in the stabilize stage;
    # tests/scale/test_linear_work.py counts the work of this path)
    x, out, _ = graph(shape, COMPILED)
    f = nbgraph.function([x], nbgraph.grad(out.sum(), x), linker="py")
    np.testing.assert_allclose(f(VALUE), _grad_expected(shape, COMPILED), rtol=1e-9)
