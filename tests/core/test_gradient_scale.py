"""grad on a graph of 20,000 nodes: no recursion limit, a gradient graph linear in size,
the right value.  (Timings are measured by bench, never asserted here.)"""

import math

from core_toys import Scale, add, double, evaluate
from nbgraph.core import grad, toposort

STEPS = 6_700  # three nodes a step: about 20,000 nodes


def _fan_out_chain(x, steps):
    """Each step reads the previous value twice: y -> 0.5 y + 0.5003 y."""
    y = x
    for _ in range(steps):
        y = add(Scale(0.5)(y), Scale(0.5003)(y))
    return y


def test_grad_of_a_20000_node_graph_is_linear_in_size_and_right():
    x = double("x")
    y = _fan_out_chain(x, STEPS)
    forward = len(toposort([y]))
    assert forward == 3 * STEPS
    g = grad(y, x)
    backward = len(toposort([g]))  # the gradient graph (Scale grads never read y)
    assert backward <= 3 * forward  # each step: two Scales and the sum of their gradients
    assert math.isclose(evaluate(g, {x: 1.0}), 1.0003 ** STEPS, rel_tol=1e-9)
