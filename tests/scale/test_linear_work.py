"""The work of the big-graph paths grows linearly with the graph: counted, not timed.

Work here is the number of Python function calls a path makes (counted with
``sys.setprofile``): the same on every machine and at every load, unlike
seconds.  Each path runs on a graph of N nodes and on one of 2N, both built
the same way; linear work doubles, quadratic work quadruples.  The bound is
2.5 times (the constant part - module imports, per-dtype caches filled on
first use - is paid beforehand on a small graph, so it does not hide a
quadratic part).  A step that looked at every node of a product chain once per
node (the sigmoid-gradient stabilisation on ``grad`` of a chain) made ``grad +
function`` quadratic: 190 s of CPU at 20,000 nodes.
"""

import sys

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt

N = 800  # at 800 nodes the quadratic step above made the ratio 3.3; now 2.0
VALUE = np.array([0.5, -1.0, 2.0])


def chain(nodes):
    """``x * 1.0001 + 0.5`` repeated: four Apply nodes a step (with the constants'
    DimShuffles), as in tests/scale/test_big_graphs.py."""
    x = nt.dvector("x")
    out = x
    for _ in range(nodes // 4):
        out = out * 1.0001 + 0.5
    return x, out


def tanh_chain(nodes):
    """``tanh(y) * 1.5`` repeated (an op with a non-trivial gradient in the chain)."""
    x = nt.dvector("x")
    out = x
    for _ in range(nodes // 3):
        out = nt.tanh(out) * 1.5
    return x, out


def wide(nodes):
    """``nodes // 3`` terms ``x * c_i`` summed by a balanced tree."""
    x = nt.dvector("x")
    terms = [x * (1.0 + i / nodes) for i in range(nodes // 3)]
    while len(terms) > 1:
        paired = [a + b for a, b in zip(terms[::2], terms[1::2], strict=False)]  # odd: kept
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return x, terms[0]


def grad_and_function(x, out):
    g = nbgraph.grad(out.sum(), x)
    return nbgraph.function([x], g, linker="py")(VALUE)


def function_py(x, out):
    return nbgraph.function([x], out, linker="py")(VALUE)


def function_debug(x, out):
    return nbgraph.function([x], out, linker="debug")(VALUE)


def evaluate(x, out):
    return out.eval({x: VALUE})


def calls_made(run, *args):
    """The number of Python function calls ``run(*args)`` makes."""
    count = [0]

    def profile(frame, event, arg):
        if event == "call":
            count[0] += 1

    sys.setprofile(profile)
    try:
        run(*args)
    finally:
        sys.setprofile(None)
    return count[0]


CASES = [pytest.param(shape, path, id="%s-%s" % (shape.__name__, path.__name__),
                      marks=[pytest.mark.needs_cc] if path is function_debug else [])
         for shape, path in [(chain, grad_and_function), (tanh_chain, grad_and_function),
                             (wide, grad_and_function), (chain, function_py),
                             (wide, function_py), (chain, function_debug), (wide, evaluate)]]


@pytest.mark.parametrize(("shape", "path"), CASES)
def test_work_grows_linearly_with_the_graph(shape, path):
    path(*shape(N // 4))  # the constant part: imports, caches filled on first use
    small = calls_made(path, *shape(N))
    big = calls_made(path, *shape(2 * N))
    assert big < 2.5 * small, "%s of %s: %d calls at %d nodes, %d at %d (ratio %.2f)" % (
        path.__name__, shape.__name__, small, N, big, 2 * N, big / small)
