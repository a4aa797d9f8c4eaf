"""Ops that overwrite an input (destroy_map) are ordered and guarded by the graph."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op


class AddInto(Op):
    """Adds b into a's memory and returns it."""

    __props__ = ()
    destroy_map = {0: [0]}

    def make_node(self, a, b):
        return Apply(self, [a, b], [a.type()])

    def perform(self, node, inputs, output_storage):
        a, b = inputs
        a += b
        output_storage[0][0] = a


@pytest.mark.parametrize("first", [True, False])
def test_destroyer_runs_after_the_other_readers(first):
    a, b = nt.dvector("a"), nt.dvector("b")
    t = a * 2
    outs = [AddInto()(t, b), t * 10] if first else [t * 10, AddInto()(t, b)]
    f = ng.function([a, b], outs, linker="py", rewrite=None)
    arr = np.arange(3.0)
    result = f(arr, np.ones(3))
    if not first:
        result = result[::-1]
    np.testing.assert_array_equal(result[0], arr * 2 + 1)
    np.testing.assert_array_equal(result[1], arr * 20)
    np.testing.assert_array_equal(arr, [0.0, 1.0, 2.0])  # the caller's array is untouched


def test_destroying_an_input_is_refused_naming_the_op():
    a, b = nt.dvector("a"), nt.dvector("b")
    with pytest.raises(ValueError, match="AddInto overwrites a, which is an input"):
        ng.function([a, b], [AddInto()(a, b), a * 10], linker="py")


def test_destroying_a_returned_value_is_refused():
    a, b = nt.dvector("a"), nt.dvector("b")
    t = a * 2
    with pytest.raises(ValueError, match="which is an output"):
        ng.function([a, b], [t, AddInto()(t, b)], linker="py", rewrite=None)


def test_two_destroyers_of_one_value_are_refused():
    a, b = nt.dvector("a"), nt.dvector("b")
    t = a * 2
    with pytest.raises(ValueError, match="overwritten by two nodes"):
        ng.function([a, b], [AddInto()(t, b), AddInto()(t, a)], linker="py", rewrite=None)


def test_the_seeds_long_example_compiles_and_evaluates():
    t = nt.TensorType(dtype="float64", broadcastable=(False, False))
    x, y, z = (Variable(type=t, name=n) for n in "xyz")
    m = Variable(type=t)
    Apply(op=nt.mul, inputs=[y, z], outputs=[m])
    e = Variable(type=t)
    Apply(op=nt.add, inputs=[x, m], outputs=[e])
    f = ng.function([x, y, z], e)
    np.testing.assert_array_equal(f([[1.0]], [[2.0]], [[3.0]]), [[7.0]])
    np.testing.assert_array_equal(e.eval({x: [[1.0]], y: [[2.0]], z: [[3.0]]}), [[7.0]])
