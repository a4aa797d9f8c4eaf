"""nbgraph.core.rewriting: node/graph rewriters, fixed points, merge, registry."""

import pytest

from core_toys import Add, Neg, Scale, add, chain, double, evaluate, mul, neg
from nbgraph.core import (
    Constant,
    EquilibriumRewriter,
    FunctionGraph,
    GraphRewriter,
    MergeRewriter,
    NodeRewriter,
    RewriteRegistry,
    SequentialRewriter,
    WalkingRewriter,
    generic,
    node_rewriter,
)


@node_rewriter([Neg])
def double_negation(fgraph, node):
    """neg(neg(x)) -> x"""
    inner = node.inputs[0]
    if inner.owner is not None and isinstance(inner.owner.op, Neg):
        return [inner.owner.inputs[0]]
    return None


@node_rewriter([Scale])
def fold_scales(fgraph, node):
    """Scale(a, 0)(Scale(b, 0)(x)) -> Scale(a * b, 0)(x)"""
    inner = node.inputs[0]
    if (inner.owner is not None and isinstance(inner.owner.op, Scale)
            and node.op.offset == 0 and inner.owner.op.offset == 0):
        return [Scale(node.op.factor * inner.owner.op.factor)(inner.owner.inputs[0])]
    return None


@node_rewriter([Scale(1.0)], name="drop_unit_scale")
def unit_scale(fgraph, node):
    """Scale(1, 0)(x) -> x"""
    return [node.inputs[0]]


def fgraph_of(outputs, inputs=None):
    return FunctionGraph(inputs, outputs, clone=False)


class TestNodeRewriter:
    def test_decorator(self):
        assert double_negation.name == "double_negation"
        assert "neg(neg(x))" in double_negation.__doc__
        assert double_negation.tracks() == [Neg]
        assert unit_scale.name == "drop_unit_scale"
        x = double("x")
        assert double_negation.applies_to(neg(x).owner)
        assert not double_negation.applies_to(add(x, x).owner)
        # instances are matched by equality
        assert unit_scale.applies_to(Scale(1.0)(x).owner)
        assert not unit_scale.applies_to(Scale(2.0)(x).owner)

    def test_untracked_rewriter_applies_everywhere(self):
        @node_rewriter()
        def anything(fgraph, node):
            return None

        assert anything.tracks() is None
        assert anything.applies_to(add(double(), double()).owner)

    def test_subclass(self):
        class DropAdds(NodeRewriter):
            name = "drop_adds"

            def tracks(self):
                return [Add]

            def transform(self, fgraph, node):
                return {node.outputs[0]: node.inputs[0]}

        x, y = double("x"), double("y")
        fg = fgraph_of([neg(add(x, y))])
        assert WalkingRewriter(DropAdds()).rewrite(fg) == 1
        assert fg.outputs[0].owner.inputs[0] is x
        assert fg.history[0].reason == "drop_adds"
        assert "DropAdds" in repr(DropAdds())

    def test_tracks_a_class_by_name_once_its_module_is_loaded(self, monkeypatch):
        import sys
        import types

        from nbgraph.core.rewriting import loaded_class

        @node_rewriter(["toy_ops_not_loaded:Late", Neg])
        def late(fgraph, node):
            return None

        x = double("x")
        monkeypatch.delitem(sys.modules, "toy_ops_not_loaded", raising=False)
        assert late.tracks() == [Neg]          # the module is never imported by asking
        assert "toy_ops_not_loaded" not in sys.modules
        assert loaded_class("toy_ops_not_loaded:Late") is None

        module = types.ModuleType("toy_ops_not_loaded")

        class Late(Neg):
            pass

        module.Late = Late
        module.helper = len
        monkeypatch.setitem(sys.modules, "toy_ops_not_loaded", module)
        assert late.tracks() == [Late, Neg]
        assert late.applies_to(Late()(x).owner)
        assert not late.applies_to(add(x, x).owner)
        with pytest.raises(ValueError, match="package.module:Name"):
            loaded_class("toy_ops_not_loaded.Late")
        with pytest.raises(TypeError, match="not a class"):
            loaded_class("toy_ops_not_loaded:helper")
        with pytest.raises(AttributeError):
            loaded_class("toy_ops_not_loaded:Missing")

    def test_transform_is_abstract(self):
        with pytest.raises(NotImplementedError, match="transform"):
            NodeRewriter().transform(None, None)


class TestWalkingRewriter:
    def test_one_pass(self):
        x = double("x")
        fg = fgraph_of([neg(neg(x))])
        assert WalkingRewriter(double_negation).rewrite(fg) == 1
        assert fg.outputs == [x] and not fg.apply_nodes
        fg.check_integrity()
        assert [h.reason for h in fg.history] == ["double_negation"]

    def test_tracks_limit_the_nodes_visited(self):
        seen = []

        @node_rewriter([Neg])
        def spy(fgraph, node):
            seen.append(node.op)
            return None

        x = double("x")
        fg = fgraph_of([add(neg(x), mul(x, x))])
        assert WalkingRewriter(spy).rewrite(fg) == 0
        assert seen == [neg]

    def test_a_single_walk_can_stop_short_of_the_fixed_point(self):
        x = double("x")
        out = Scale(0.5)(Scale(2.0)(x))
        fg = fgraph_of([out])
        WalkingRewriter(fold_scales, unit_scale).rewrite(fg)
        # the folded Scale{1.0, 0} was created during the walk and not revisited
        assert fg.outputs[0].owner.op == Scale(1.0)

    def test_wrong_number_of_replacements(self):
        @node_rewriter([Neg])
        def broken(fgraph, node):
            return [node.inputs[0], node.inputs[0]]

        fg = fgraph_of([neg(double("x"))])
        with pytest.raises(ValueError, match="broken returned 2 replacements for the 1 outputs"):
            WalkingRewriter(broken).rewrite(fg)

    def test_bare_variable_instead_of_a_list(self):
        @node_rewriter([Neg])
        def forgot_brackets(fgraph, node):
            return node.inputs[0]

        fg = fgraph_of([neg(double("x"))])
        with pytest.raises(TypeError, match="forgot_brackets must return a list .* got Variable x"):
            WalkingRewriter(forgot_brackets).rewrite(fg)

    def test_incompatible_replacement_refused(self):
        @node_rewriter([Neg])
        def to_generic(fgraph, node):
            return [generic("g")]

        fg = fgraph_of([neg(double("x"))])
        with pytest.raises(TypeError, match="cannot replace Neg.0 of type DoubleType by g of "
                                            "type Generic \\(to_generic\\)"):
            WalkingRewriter(to_generic).rewrite(fg)
        fg.check_integrity()


class TestEquilibrium:
    def test_reaches_a_fixed_point_through_a_rewrite_chain(self):
        x = double("x")
        out = Scale(0.5)(Scale(2.0)(Scale(4.0)(Scale(0.25)(x))))
        fg = fgraph_of([out])
        changes = EquilibriumRewriter([fold_scales, unit_scale]).rewrite(fg)
        assert fg.outputs == [x] and not fg.apply_nodes
        assert changes == len(fg.history) == 4
        fg.check_integrity()
        # a second run finds nothing to do
        assert EquilibriumRewriter([fold_scales, unit_scale]).rewrite(fg) == 0

    def test_new_nodes_are_revisited(self):
        x = double("x")
        fg = fgraph_of([chain(x, 9)])
        EquilibriumRewriter([double_negation]).rewrite(fg)
        assert fg.outputs[0].owner.op == neg and fg.outputs[0].owner.inputs[0] is x
        assert evaluate(fg.outputs[0], {x: 3.0}) == -3.0

    def test_with_graph_rewriters(self):
        x = double("x")
        a = Scale(2.0)(Scale(0.5)(x))
        b = Scale(1.0)(x)
        fg = fgraph_of([add(a, b)])
        EquilibriumRewriter([fold_scales, unit_scale], [MergeRewriter()]).rewrite(fg)
        final = fg.outputs[0]
        assert final.owner.op == add and final.owner.inputs == [x, x]
        fg.check_integrity()

    def test_runaway_rewriter_is_stopped(self):
        @node_rewriter([Neg])
        def grow(fgraph, node):
            return [neg(neg(neg(node.inputs[0])))]

        fg = fgraph_of([neg(double("x"))])
        with pytest.raises(ValueError, match="did not reach a fixed point after .*grow"):
            EquilibriumRewriter([grow], max_changes=50).rewrite(fg)
        assert fg.features == []  # its work-list listener was detached

    def test_thousand_node_graph(self):
        x = double("x")
        fg = fgraph_of([chain(x, 1000)])
        changes = EquilibriumRewriter([double_negation]).rewrite(fg)
        assert fg.outputs == [x] and changes == 500
        fg.check_integrity()

    def test_thousand_node_fold(self):
        x = double("x")
        fg = fgraph_of([chain(x, 1000, Scale(1.0))])
        EquilibriumRewriter([unit_scale]).rewrite(fg)
        assert fg.outputs == [x]


class TestSequential:
    def test_runs_in_order(self):
        calls = []

        class Mark(GraphRewriter):
            def __init__(self, tag):
                self.tag = tag

            def apply(self, fgraph):
                calls.append(self.tag)
                return 1

        fg = fgraph_of([neg(double("x"))])
        assert SequentialRewriter(Mark("a"), Mark("b"), name="both").rewrite(fg) == 2
        assert calls == ["a", "b"]

    def test_graph_rewriter_is_abstract(self):
        with pytest.raises(NotImplementedError, match="apply"):
            GraphRewriter().rewrite(None)


class TestMerge:
    def test_equal_apply_nodes(self):
        x, y = double("x"), double("y")
        a, b = add(x, y), add(x, y)
        fg = fgraph_of([a, b])
        assert len(fg.apply_nodes) == 2
        assert MergeRewriter().rewrite(fg) == 1
        assert fg.outputs[0] is fg.outputs[1] and len(fg.apply_nodes) == 1
        assert fg.history[0].reason == "merge"
        fg.check_integrity()

    def test_merge_cascades_down_equal_chains(self):
        x = double("x")
        fg = fgraph_of([add(chain(x, 50), chain(x, 50))])
        MergeRewriter().rewrite(fg)
        assert len(fg.apply_nodes) == 51
        top = fg.outputs[0].owner
        assert top.inputs[0] is top.inputs[1]

    def test_equal_constants(self):
        x = double("x")
        c1, c2 = Constant(double, 2.0), Constant(double, 2)
        fg = fgraph_of([mul(x, c1), mul(x, c2)])
        MergeRewriter().rewrite(fg)
        assert fg.outputs[0] is fg.outputs[1]
        assert len(fg.apply_nodes) == 1
        assert len([v for v in fg.variables if isinstance(v, Constant)]) == 1
        fg.check_integrity()

    def test_params_and_inputs_must_match(self):
        x, y = double("x"), double("y")
        fg = fgraph_of([Scale(2.0)(x), Scale(3.0)(x), add(x, y), add(y, x), mul(x, y)])
        assert MergeRewriter().rewrite(fg) == 0
        assert len(fg.apply_nodes) == 5

    def test_different_constants_not_merged(self):
        x = double("x")
        fg = fgraph_of([mul(x, 2.0), mul(x, 3.0), mul(x, 0.0), mul(x, -0.0)])
        assert MergeRewriter().rewrite(fg) == 0
        assert len(fg.apply_nodes) == 4

    def test_thousand_node_merge(self):
        x = double("x")
        outs = [Scale(float(i % 10))(x) for i in range(1000)]
        fg = fgraph_of(outs)
        MergeRewriter().rewrite(fg)
        assert len(fg.apply_nodes) == 10
        assert fg.outputs[0] is fg.outputs[10]


class TestRegistry:
    def test_register_and_lookup(self):
        reg = RewriteRegistry()
        walker = WalkingRewriter(double_negation)
        assert reg.register("negneg", walker, "fast", "canonicalize") is walker
        assert "negneg" in reg and reg["negneg"] is walker and len(reg) == 1
        assert walker.name == "negneg"  # a nameless rewriter takes the registered name

    def test_registering_a_name_twice_replaces(self):
        reg = RewriteRegistry()
        first, second = WalkingRewriter(double_negation), WalkingRewriter(unit_scale)
        reg.register("cleanup", first, "fast")
        reg.register("cleanup", second, "fast")  # a notebook cell run again
        assert len(reg) == 1 and reg["cleanup"] is second
        assert reg.query("fast") == [second]

    def test_altered_while_the_entries_differ_from_nbgraphs(self, monkeypatch):
        import nbgraph.core.rewriting as core_rewriting

        reg = RewriteRegistry()
        native, other = WalkingRewriter(double_negation), WalkingRewriter(unit_scale)
        monkeypatch.setattr(core_rewriting, "_from_nbgraph", lambda rw: rw is native)
        reg.register("user", other, "fast")  # a user's rewrite...
        assert reg.altered
        reg.unregister("user")
        assert not reg.altered  # ...gone again
        reg.register("negneg", native, "fast")
        assert not reg.altered
        reg.register("user", other, "fast")  # a user's rewrite, then removed
        assert reg.altered
        reg.unregister("user")
        assert not reg.altered
        reg.register("negneg", other, "fast")  # one of nbgraph's replaced, then restored
        assert reg.altered
        reg.register("negneg", native, "fast")
        assert not reg.altered
        reg.unregister("negneg")  # one of nbgraph's removed
        assert reg.altered

    def test_query_by_tags_and_order(self):
        reg = RewriteRegistry()
        a, b, c = MergeRewriter(), WalkingRewriter(double_negation), WalkingRewriter(unit_scale)
        reg.register("merge", a, "fast", "stable", position=0)
        reg.register("negneg", b, "fast", position=10)
        reg.register("unit", c, "slow", position=5)
        assert reg.names() == ["merge", "unit", "negneg"]
        assert reg.query("fast") == [a, b]
        assert reg.query("fast", "slow") == [a, c, b]
        assert reg.query("fast", exclude=["stable"]) == [b]
        assert reg.query("unit") == [c]  # a rewrite's name is one of its tags
        assert reg.query("nothing") == []
        reg.unregister("unit")
        assert "unit" not in reg
        with pytest.raises(KeyError):
            reg.unregister("unit")

    def test_name_must_be_a_string(self):
        with pytest.raises(TypeError, match="non-empty name"):
            RewriteRegistry().register("", MergeRewriter())

    def test_named_rewriter_keeps_its_name(self):
        reg = RewriteRegistry()
        reg.register("alias", double_negation)
        assert double_negation.name == "double_negation"

    def test_objects_without_a_name_attribute(self):
        class Bare:
            def rewrite(self, fgraph):
                return 0

        reg = RewriteRegistry()
        bare = Bare()
        reg.register("bare", bare, "fast")
        assert reg.query("fast") == [bare]
