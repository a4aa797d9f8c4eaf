"""PythonLinker and Program: thunks over storage cells, release of intermediates, errors."""

import numpy as np
import pytest

import nbgraph.tensor as nt
import nbgraph
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Constant
from nbgraph.core.op import Op
from nbgraph.linkers import PythonLinker
from nbgraph.linkers.python import Program


def function(inputs, outputs, **kwargs):
    """function() with the Python linker: these tests are about PythonLinker."""
    return nbgraph.function(inputs, outputs, linker="py", **kwargs)


class Unset(Op):
    """A broken Op whose perform forgets to store its output."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        pass


class HalfSet(Op):
    """Two outputs; perform stores only the first."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type(), x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0].copy()


class Fails(Op):
    """Raises the exception it was built with."""

    __props__ = ("kind",)

    def __init__(self, kind="value"):
        self.kind = kind

    def make_node(self, x, y):
        return Apply(self, [x, y], [x.type()])

    def perform(self, node, inputs, output_storage):
        if self.kind == "value":
            raise ValueError("the inputs do not agree")
        if self.kind == "key":
            raise KeyError("missing entry")
        raise OddError(1, 2)


class OddError(Exception):
    """An exception whose constructor does not take a single message."""

    def __init__(self, code, detail):
        super().__init__(code, detail)


class Pair(Op):
    """Two outputs (x + 1, x * 10)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type(), x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = x + 1
        output_storage[1][0] = x * 10


def _link(inputs, outputs):
    fgraph = FunctionGraph(inputs, outputs)
    return fgraph, PythonLinker().link(fgraph)


def test_link_builds_a_program_with_cells_for_every_variable():
    x = nt.dvector("x")
    z = nt.exp(x) * 2.0 + 1.0
    fgraph, program = _link([x], [z])
    assert isinstance(program, Program)
    assert set(program.storage) == fgraph.variables
    assert all(isinstance(c, list) and len(c) == 1 for c in program.storage.values())
    assert program.nodes == fgraph.toposort()
    assert len(program.thunks) == len(program.nodes)
    assert program.kinds == ["py"] * len(program.nodes)
    # constants are stored once, at link time
    for var, cell in program.storage.items():
        if isinstance(var, Constant):
            assert cell[0] is var.data
    program.input_cells[0][0] = np.array([0.0, 1.0])
    program.run()
    np.testing.assert_allclose(program.output_cells[0][0], np.exp([0.0, 1.0]) * 2 + 1)


def test_intermediates_are_released_after_their_last_use():
    x = nt.dvector("x")
    z = ((x + 1.0) * 2.0 - 3.0).sum()
    f = function([x], z, rewrite=None)
    assert f(np.arange(3.0)) == 3.0
    fgraph = f.fgraph
    intermediates = [v for v in fgraph.variables
                     if v.owner is not None and v not in fgraph.outputs]
    assert len(intermediates) >= 6  # three DimShuffles of constants, add, mul, sub
    storage = f.program.storage
    assert all(storage[v][0] is None for v in intermediates)
    # inputs and outputs are emptied by the Function after the call too ...
    assert storage[fgraph.inputs[0]][0] is None
    assert storage[fgraph.outputs[0]][0] is None
    # ... while constants keep their data for the next call
    for var in fgraph.variables:
        if isinstance(var, Constant):
            assert storage[var][0] is var.data


def test_release_happens_during_the_run_not_after():
    # Spy on the cells while the program runs: when the last node runs, the
    # first intermediate (read only by the second node) has already been freed.
    x = nt.dvector("x")
    a = nt.exp(x)
    b = nt.log(a)
    c = b * 3.0
    fgraph, program = _link([x], [c])
    order = program.nodes
    a_cell = program.storage[order[0].outputs[0]]
    seen = []
    last = program.thunks[-1]

    def spy():
        seen.append(a_cell[0])
        last()

    program.thunks[-1] = spy
    program.input_cells[0][0] = np.array([1.0, 2.0])
    program.run()
    assert seen == [None]
    np.testing.assert_allclose(program.output_cells[0][0], [3.0, 6.0])


def test_unread_output_of_a_multi_output_node_is_released():
    x = nt.dvector("x")
    first, second = Pair()(x)
    f = function([x], first * 2.0, rewrite=None)
    np.testing.assert_array_equal(f(np.array([1.0])), [4.0])
    unread = [v for v in f.fgraph.variables if v.owner is not None
              and isinstance(v.owner.op, Pair) and v.index == 1][0]
    assert f.program.storage[unread][0] is None


def test_keep_protects_variables_from_release():
    x = nt.dvector("x")
    a = x + 1.0
    z = a * 2.0
    fgraph = FunctionGraph([x], [z])
    kept = fgraph.outputs[0].owner.inputs[0]
    program = PythonLinker().link(fgraph, keep=[kept])
    program.input_cells[0][0] = np.array([1.0])
    program.run()
    np.testing.assert_array_equal(program.storage[kept][0], [2.0])


def test_exception_names_the_node_and_the_inputs_shapes_and_dtypes():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], (x + y) * 2.0, rewrite=None)
    with pytest.raises(ValueError) as info:
        f(np.ones(3), np.ones(4))
    message = str(info.value)
    assert "could not be broadcast" in message
    assert "Apply node that caused the error: Elemwise{add}(x, y)" in message
    assert "x: shape (3,), dtype float64" in message
    assert "y: shape (4,), dtype float64" in message
    assert info.value.node.op == nt.add
    # the failed run holds on to nothing, and the next call works
    assert all(cell[0] is None for var, cell in f.program.storage.items()
               if not isinstance(var, Constant))
    np.testing.assert_array_equal(f(np.ones(2), np.ones(2)), [4.0, 4.0])
    # the same with the rewritten (possibly fused) graph
    g = function([x, y], (x + y) * 2.0)
    with pytest.raises(ValueError) as info:
        g(np.ones(3), np.ones(4))
    message = str(info.value)
    assert "Apply node that caused the error: %s" % g.program.nodes[0] in message
    assert "x: shape (3,), dtype float64; y: shape (4,), dtype float64" in message


def test_exception_from_a_custom_op_keeps_its_type():
    x, y = nt.dmatrix("x"), nt.ivector("y")
    f = function([x, y], Fails("value")(x, y))
    with pytest.raises(ValueError) as info:
        f(np.ones((2, 3)), np.arange(5, dtype="int32"))
    message = str(info.value)
    assert message.startswith("the inputs do not agree")
    assert "Fails{value}(x, y)" in message
    assert "x: shape (2, 3), dtype float64" in message
    assert "y: shape (5,), dtype int32" in message
    # one exception, the Op's own: no chained copy of it
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_key_error_and_unusual_exceptions_still_carry_the_node():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], Fails("key")(x, y))
    with pytest.raises(KeyError) as info:
        f(np.ones(2), np.ones(2))
    assert info.value.node.op == Fails("key")
    g = function([x, y], Fails("odd")(x, y))
    with pytest.raises(OddError) as info:
        g(np.ones(2), np.ones(2))
    assert info.value.args == (1, 2)
    assert info.value.node.op == Fails("odd")
    notes = getattr(info.value, "__notes__", None)
    if hasattr(info.value, "add_note"):  # Python >= 3.11
        assert notes and "Fails{odd}(x, y)" in notes[0]


def test_perform_that_leaves_its_output_unset_is_reported():
    x = nt.dvector("x")
    f = function([x], Unset()(x) * 2.0)
    with pytest.raises(ValueError, match=r"Unset.perform did not set output 0") as info:
        f(np.ones(2))
    assert "Apply node that caused the error: Unset(x)" in str(info.value)
    # also when the unset value is the function's output
    g = function([x], Unset()(x))
    with pytest.raises(ValueError, match="did not set output 0"):
        g(np.ones(2))


def test_unset_second_output_is_reported():
    x = nt.dvector("x")
    first, second = HalfSet()(x)
    f = function([x], [first, second])
    with pytest.raises(ValueError, match=r"HalfSet.perform did not set output 1"):
        f(np.ones(2))


def test_multi_output_node_runs_once():
    x = nt.dvector("x")
    first, second = Pair()(x)
    f = function([x], [first, second, first + second])
    a, b, c = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(a, [2.0, 3.0])
    np.testing.assert_array_equal(b, [10.0, 20.0])
    np.testing.assert_array_equal(c, [12.0, 23.0])
    assert sum(isinstance(n.op, Pair) for n in f.program.nodes) == 1


def test_program_reused_over_many_calls():
    x = nt.dvector("x")
    f = function([x], nt.sqrt(x * x + 1.0))
    for k in range(20):
        value = np.full(3, float(k))
        np.testing.assert_allclose(f(value), np.sqrt(value * value + 1.0))
