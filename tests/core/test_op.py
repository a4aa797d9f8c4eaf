"""nbgraph.core.op: Op (make_node, __call__, perform, grad hooks) and run_node."""

import pytest

from core_toys import (
    Add,
    Scale,
    add,
    divmod_,
    double,
    evaluate,
    mul,
    with_scratch,
)
from nbgraph.core import Apply, Constant, MethodNotDefined, Op, Variable, generic, run_node
from nbgraph.core.op import DisconnectedGradient, NullGradient


class TestProps:
    def test_equal_props_equal_ops(self):
        assert Scale(2.0, 1.0) == Scale(2.0, 1.0)
        assert hash(Scale(2.0, 1.0)) == hash(Scale(2.0, 1.0))
        assert Scale(2.0, 1.0) != Scale(2.0, 0.0)
        assert not Scale(2.0, 1.0) != Scale(2.0, 1.0)

    def test_str_lists_prop_values(self):
        assert str(Scale(2.0, 1.0)) == "Scale{2.0, 1.0}"
        assert repr(Scale(3, 0)) == "Scale{3, 0}"

    def test_empty_props_all_instances_equal(self):
        assert Add() == add and hash(Add()) == hash(add)
        assert str(add) == "Add"
        assert add != mul

    def test_no_props_means_identity(self):
        class Plain(Op):
            pass

        a, b = Plain(), Plain()
        assert a == a and a != b
        assert str(a) == "Plain"

    def test_nodes_of_equal_ops_compare_ops_equal(self):
        x = double("x")
        n1 = Scale(2.0)(x).owner
        n2 = Scale(2.0)(x).owner
        assert n1.op == n2.op and n1 is not n2


class TestMakeNodeAndCall:
    def test_seed_make_node_examples(self):
        node1 = add.make_node(double(), double())
        node2 = add.make_node(1, 2)
        node3 = add.make_node(double(), 79)
        for node in (node1, node2, node3):
            assert isinstance(node, Apply) and node.op is add
            assert all(isinstance(i, Variable) and i.type == double for i in node.inputs)
        assert isinstance(node2.inputs[0], Constant) and node2.inputs[0].data == 1.0
        assert node3.inputs[1].data == 79.0
        with pytest.raises(TypeError, match="argument 0 .*Generic"):
            add.make_node(generic(), double())
        with pytest.raises(TypeError, match="argument 1 must be a double, got str"):
            add.make_node(double(), "y")

    def test_call_returns_the_single_output(self):
        x = double("x")
        out = add(x, x)
        assert isinstance(out, Variable) and out.owner.op is add and out.index == 0

    def test_call_returns_all_outputs_without_default(self):
        outs = divmod_(double("x"), 3.0)
        assert isinstance(outs, list) and len(outs) == 2
        assert [o.index for o in outs] == [0, 1]
        assert evaluate(outs, {outs[0].owner.inputs[0]: 7.0}) == [2.0, 1.0]

    def test_default_output_hides_the_others(self):
        x = double("x")
        out = with_scratch(x)
        assert isinstance(out, Variable)
        node = out.owner
        assert out is node.outputs[0] is node.default_output
        assert len(node.outputs) == 2  # the scratch output exists but is hidden
        assert evaluate(out, {x: 1.0}) == 2.0

    def test_default_output_selects_any_index(self):
        class Second(Op):
            default_output = 1

            def make_node(self, x):
                return Apply(self, [x], [double(), double()])

        out = Second()(double("x"))
        assert out.index == 1

    def test_make_node_must_return_an_apply(self):
        class Broken(Op):
            def make_node(self, x):
                return x

        with pytest.raises(TypeError, match="must return an Apply"):
            Broken()(double())

    def test_make_node_is_abstract(self):
        with pytest.raises(MethodNotDefined, match="make_node"):
            Op()(double())


class TestHooks:
    def test_defaults(self):
        op = Op()
        assert op.view_map == {} and op.destroy_map == {}
        assert op.default_output is None
        node = add(double(), double()).owner
        with pytest.raises(MethodNotDefined, match="perform"):
            Op().perform(node, [1.0, 2.0], [[None]])
        with pytest.raises(MethodNotDefined, match="grad"):
            Op().grad(node.inputs, [double()])
        with pytest.raises(MethodNotDefined, match="infer_shape"):
            Op().infer_shape(node, [(), ()])
        assert op.do_constant_folding(node) is True
        assert not hasattr(op, "c_code"), "C hooks belong to CLinkerOp, not Op"

    def test_view_and_destroy_maps(self):
        class AddInplace(Add):
            destroy_map = {0: [0]}

        class Transpose(Op):
            view_map = {0: [0]}

        assert AddInplace().destroy_map == {0: [0]} and Add().destroy_map == {}
        assert Transpose().view_map == {0: [0]}

    def test_gradient_markers(self):
        assert "why" in repr(NullGradient("why"))
        assert repr(DisconnectedGradient()) == "DisconnectedGradient()"


class TestPerformAndRunNode:
    def test_seed_perform_example(self):
        node = add.make_node(double(), double())
        storage = [None]
        add.perform(node, (3.0, 7.0), (storage,))
        assert storage[0] == 10.0

    def test_run_node_returns_values(self):
        node = mul.make_node(double(), double())
        assert run_node(node, [3.0, 4.0]) == [12.0]
        q, r = divmod_(double(), double())
        assert run_node(q.owner, [7.0, 2.0]) == [3.0, 1.0]

    def test_perform_may_reuse_storage(self):
        class Accumulate(Add):
            def perform(self, node, inputs, output_storage):
                previous = output_storage[0][0]
                output_storage[0][0] = (previous or 0.0) + inputs[0]

        node = Accumulate().make_node(double(), double())
        storage = [[None]]
        assert run_node(node, [1.0, 0.0], storage) == [1.0]
        assert run_node(node, [2.0, 0.0], storage) == [3.0]

    def test_wrong_number_of_inputs(self):
        node = add.make_node(double(), double())
        with pytest.raises(ValueError, match="Add takes 2 inputs, got 1 values"):
            run_node(node, [1.0])

    def test_output_left_unset(self):
        class Lazy(Op):
            def make_node(self, x):
                return Apply(self, [x], [double(), double()])

            def perform(self, node, inputs, output_storage):
                output_storage[0][0] = 1.0

        node = Lazy().make_node(double())
        with pytest.raises(ValueError, match="Lazy.perform did not set output 1 of 2"):
            run_node(node, [1.0])
        assert run_node(node, [1.0], check=False) == [1.0, None]

    def test_bad_value_stored(self):
        class Sloppy(Add):
            def perform(self, node, inputs, output_storage):
                output_storage[0][0] = int(inputs[0] + inputs[1])

        node = Sloppy().make_node(double(), double())
        with pytest.raises(TypeError, match="Sloppy.perform stored a bad value for output 0: "
                                           "expected a float, got int"):
            run_node(node, [1.0, 2.0])

    def test_resized_cell(self):
        class Resizer(Add):
            def perform(self, node, inputs, output_storage):
                output_storage[0].append(1.0)

        node = Resizer().make_node(double(), double())
        with pytest.raises(ValueError, match="resized output cell 0"):
            run_node(node, [1.0, 2.0])

    def test_missing_perform(self):
        class NoPerform(Op):
            def make_node(self, x):
                return Apply(self, [x], [double()])

        node = NoPerform().make_node(double())
        with pytest.raises(MethodNotDefined, match="NoPerform has no Python implementation"):
            run_node(node, [1.0])
