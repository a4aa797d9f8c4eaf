"""Hidden outputs (an Op's private buffers behind default_output), as the seed describes."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op


class BufferedAdd(Op):
    """x + y written into a hidden buffer twice as large, reused between calls."""

    __props__ = ()
    default_output = 0

    def __init__(self):
        self.allocations = 0

    def make_node(self, x, y):
        return Apply(self, [x, y], [x.type(), x.type()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        z, buffer = output_storage
        if buffer[0] is None or buffer[0].size < x.size:
            self.allocations += 1
            buffer[0] = np.empty(x.size * 2)
        z[0] = buffer[0][:x.size]
        np.add(x, y, out=z[0])


def test_calling_the_op_returns_the_default_output_only():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = BufferedAdd()(x, y)
    assert out is out.owner.outputs[0]
    assert len(out.owner.outputs) == 2


@pytest.mark.parametrize("linker", ["py", "debug"])
def test_the_hidden_buffer_is_reused_and_results_stay_intact(linker):
    op = BufferedAdd()
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], op(x, y), linker=linker)
    first = f(np.ones(3), np.ones(3))
    second = f(np.full(3, 5.0), np.ones(3))
    np.testing.assert_array_equal(first, [2.0, 2.0, 2.0])  # not overwritten by the 2nd call
    np.testing.assert_array_equal(second, [6.0, 6.0, 6.0])
    if linker == "py":
        assert op.allocations == 1
