"""The declared C interface: CLinkerOp's hooks and their defaults, OutputRule values,
and that the tensor Ops declare their C in their class line (nothing patched on)."""

import inspect

import pytest

from nbgraph.core.c_interface import CDataType, CLinkerOp, CLinkerType, OutputRule
from nbgraph.core.op import Op
from nbgraph.core.type import MethodNotDefined


class Bare(CLinkerOp, Op):
    pass


class WithC(CLinkerOp, Op):
    def c_code(self, node, name, inputs, outputs, sub):
        return "*%s = 1;" % outputs[0]


class Custom(WithC):
    def c_prepare_outputs(self, node, inputs):
        return [None]


def test_every_hook_has_a_documented_default():
    op = Bare()
    with pytest.raises(MethodNotDefined, match="C implementation"):
        op.c_code(None, "n", [], ["z"], {})
    with pytest.raises(MethodNotDefined, match="c_prepare_outputs"):
        op.c_prepare_outputs(None, [])
    assert op.has_c_code(None) is False
    assert op.c_support_code() == "" and op.c_headers() == []
    assert op.c_code_cache_version() == ()
    assert op.c_view_only(None) is False and op.c_preferred(None) is True
    for name, member in inspect.getmembers(CLinkerOp, inspect.isfunction):
        assert member.__doc__, name
    for name, member in inspect.getmembers(CLinkerType, inspect.isfunction):
        if not name.startswith("_"):
            assert member.__doc__, name


def test_the_default_output_rule_follows_the_class():
    assert WithC().has_c_code(None) is True
    assert WithC().c_output_rule(None) == OutputRule.STATIC
    assert Custom().c_output_rule(None) == OutputRule.CUSTOM


def test_output_rules_are_frozen_values():
    rule = OutputRule.broadcast((1, -1))
    assert rule == OutputRule("broadcast", targets=(1, -1)) and rule.in_place
    assert hash(rule) == hash(OutputRule.broadcast([1, -1]))
    assert OutputRule.broadcast(nout=2).targets == (-1, -1)
    assert not OutputRule.broadcast(nout=2).in_place
    assert OutputRule.drop_axes((0, 2)) != OutputRule.drop_axes((0,))
    assert repr(OutputRule.same_as(1)) == "OutputRule('same_as', input=1)"
    with pytest.raises(AttributeError, match="frozen"):
        rule.kind = "static"
    with pytest.raises(ValueError, match="kind"):
        OutputRule("sideways")


def test_tensor_ops_declare_their_c_in_the_class_line():
    import nbgraph.tensor as nt
    from nbgraph.tensor.basic import Alloc, Dot, Reshape, Shape, ShapeI, SpecifyShape
    from nbgraph.tensor.elemwise import DimShuffle, Elemwise, SumToShape
    from nbgraph.tensor.fused_ops import FusedReduce
    from nbgraph.tensor.reduction import Reduce
    from nbgraph.tensor.scalar_op import ScalarOp
    from nbgraph.tensor.type import TensorType

    for cls in (Alloc, Dot, Reshape, Shape, ShapeI, SpecifyShape, DimShuffle, Elemwise,
                SumToShape, FusedReduce, Reduce, ScalarOp):
        assert issubclass(cls, CLinkerOp), cls
        # the C comes from a base class; the Op's own body defines none of it
        assert "c_code" not in vars(cls) or cls is ScalarOp, cls
    assert issubclass(TensorType, CLinkerType)
    x = nt.dvector("x")
    assert (x + 1).owner.op.c_output_rule((x + 1).owner) == OutputRule.broadcast()
    s = x.sum().owner
    assert s.op.c_output_rule(s) == OutputRule.drop_axes((0,))


def test_cdata_type_lives_beside_the_interface():
    t = CDataType("struct foo *")
    assert isinstance(t, CLinkerType) and t.c_arg_kind == "cdata"
    assert t.c_declare("p", {}) == "struct foo * p;\n"


def test_element_cost_is_data_on_scalar_ops_and_composite_sums_it():
    from nbgraph.tensor import scalar as ps
    from nbgraph.tensor.c_code.parallel import element_weight, min_parallel
    from nbgraph.tensor.c_code.elemwise import scalar_element, scalar_node
    from nbgraph.tensor.scalar_composite import Composite
    import nbgraph.tensor as nt

    assert ps.add.element_cost == 1 and ps.true_div.element_cost == 2
    assert ps.exp.element_cost == 5 and ps.sqrt.element_cost == 2
    a, b = ps.float64("a"), ps.float64("b")
    comp = Composite([a, b], [ps.exp(a) * b + ps.sqrt(b) / a])
    assert comp.element_cost == 1 + 4 + 1 + 1
    assert Composite([a, b], [a * b + a]).element_cost == 1
    node = nt.Elemwise(comp).make_node(nt.dvector("x"), nt.dvector("y"))
    element = scalar_element(comp, scalar_node(node.op, node), "n", {})
    assert element_weight(element) == 7
    assert min_parallel(7) < min_parallel(1)
