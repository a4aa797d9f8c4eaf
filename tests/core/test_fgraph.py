"""nbgraph.core.fgraph: FunctionGraph bookkeeping, replace, features and history."""

import pytest

from core_toys import (
    BoundedIdentity,
    BoundedType,
    Narrow,
    add,
    chain,
    divmod_,
    double,
    evaluate,
    mul,
    neg,
)
from nbgraph.core import (
    Constant,
    Feature,
    FunctionGraph,
    MissingInputError,
    NarrowingTrace,
    Replacement,
    generic,
    graph_inputs,
)


def graph():
    """x, y and out = (x * y) + neg(x); returns x, y, m, n, out."""
    x, y = double("x"), double("y")
    m = mul(x, y)
    n = neg(x)
    out = add(m, n)
    return x, y, m, n, out


class Recorder(Feature):
    """Logs every callback it receives."""

    def __init__(self):
        self.events = []

    def on_attach(self, fgraph):
        self.events.append(("attach", fgraph))

    def on_detach(self, fgraph):
        self.events.append(("detach", fgraph))

    def on_import(self, fgraph, node, reason):
        self.events.append(("import", node, reason))

    def on_prune(self, fgraph, node, reason):
        self.events.append(("prune", node, reason))

    def on_change_input(self, fgraph, node, i, old, new, reason):
        self.events.append(("change", node, i, old, new, reason))

    def kinds(self):
        return [e[0] for e in self.events]


class TestConstruction:
    def test_clients_bookkeeping(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.check_integrity()
        assert fg.inputs == [x, y] and fg.outputs == [out]
        assert fg.apply_nodes == {m.owner, n.owner, out.owner}
        assert fg.variables == {x, y, m, n, out}
        assert fg.clients[x] == [(m.owner, 0), (n.owner, 0)]
        assert fg.clients[y] == [(m.owner, 1)]
        assert fg.clients[m] == [(out.owner, 0)]
        assert fg.clients[n] == [(out.owner, 1)]
        assert fg.clients[out] == [("output", 0)]
        assert fg.get_clients(x) == fg.clients[x] and fg.get_clients(x) is not fg.clients[x]
        assert fg.get_clients(double()) == []

    def test_unused_input_has_no_clients(self):
        x, y, z = double("x"), double("y"), double("z")
        fg = FunctionGraph([x, y, z], [add(x, y)], clone=False)
        assert fg.clients[z] == [] and z in fg.variables
        fg.check_integrity()

    def test_constants_are_tracked(self):
        x = double("x")
        c = Constant(double, 2.0)
        out = mul(x, c)
        fg = FunctionGraph([x], [out], clone=False)
        assert c in fg.variables and fg.clients[c] == [(out.owner, 1)]
        fg.check_integrity()

    def test_default_inputs_are_the_non_constant_roots(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph(outputs=[add(out, 1.0)], clone=False)
        assert fg.inputs == [x, y]

    def test_single_output_and_toposort(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], out, clone=False)
        assert fg.outputs == [out]
        order = fg.toposort()
        assert order[-1] is out.owner and set(order) == fg.apply_nodes
        assert list(fg) == order
        assert out in fg and out.owner in fg and double() not in fg
        assert repr(fg) == "FunctionGraph(Add.0)"

    def test_constants_refused_as_inputs(self):
        c = Constant(double, 1.0)
        with pytest.raises(TypeError, match="input 1 of FunctionGraph, 1.0, is a Constant"):
            FunctionGraph([double("x"), c], [add(c, 1.0)])

    def test_bad_arguments(self):
        x = double("x")
        with pytest.raises(TypeError, match="needs outputs"):
            FunctionGraph([x])
        with pytest.raises(TypeError, match="output 0 .* must be a Variable"):
            FunctionGraph([x], [3.0])
        with pytest.raises(TypeError, match="input 0 .* must be a Variable"):
            FunctionGraph([double], [x])
        with pytest.raises(ValueError, match="same variable twice"):
            FunctionGraph([x, x], [neg(x)])

    def test_owned_input_needs_clone(self):
        x = double("x")
        mid = neg(x)
        out = neg(mid)
        with pytest.raises(ValueError, match="inputs must be roots"):
            FunctionGraph([mid], [out], clone=False)
        fg = FunctionGraph([mid], [out])  # cloning cuts the graph at mid
        assert fg.inputs[0].owner is None and fg.inputs[0] is not mid
        assert len(fg.apply_nodes) == 1
        fg.check_integrity()

    def test_output_that_is_an_input(self):
        x = double("x")
        fg = FunctionGraph([x], [x], clone=False)
        assert fg.clients[x] == [("output", 0)] and not fg.apply_nodes
        fg.check_integrity()


class TestMissingInput:
    def test_names_the_missing_variable_and_path(self):
        x, y = double("x"), double("y")
        inner = neg(y)
        inner.name = "inner"
        out = add(x, neg(inner))
        out.name = "out"
        for clone in (False, True):
            with pytest.raises(MissingInputError) as info:
                FunctionGraph([x], [out], clone=clone)
            err = info.value
            assert err.variable is y  # the caller's variable, even after cloning
            assert [v.name for v in err.path] == ["out", None, "inner", "y"]
            assert err.path[0] is out and err.path[-1] is y
            assert "input y is needed but was not given" in str(err)
            assert "out -> Neg.0 -> inner -> y" in str(err)
            assert isinstance(err, ValueError)

    def test_missing_input_through_replace(self):
        x, y = double("x"), double("y")
        fg = FunctionGraph([x], [neg(x)], clone=False)
        bad = add(x, neg(y))
        with pytest.raises(MissingInputError) as info:
            fg.replace(fg.outputs[0], bad)
        assert info.value.variable is y
        assert info.value.path[0] is bad and info.value.path[-1] is y
        fg.check_integrity()  # nothing half-imported
        assert bad.owner not in fg.apply_nodes


class TestClone:
    def test_clone_true_leaves_the_caller_graph_untouched(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out])
        assert fg.inputs[0] is not x and fg.outputs[0] is not out
        assert fg.equiv[x] is fg.inputs[0] and fg.equiv[out] is fg.outputs[0]
        fx, fy = fg.inputs
        fm = fg.equiv[m]
        fg.replace(fm, add(fx, fy), reason="test")
        fg.check_integrity()
        # the caller's graph is as built
        assert out.owner.inputs == [m, n] and m.owner.op == mul
        assert graph_inputs(out) == [x, y]
        assert evaluate(out, {x: 2.0, y: 3.0}) == 4.0
        assert evaluate(fg.outputs[0], {fx: 2.0, fy: 3.0}) == 3.0

    def test_clone_false_edits_in_place(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        assert fg.equiv is None and fg.outputs[0] is out
        replacement = add(x, y)
        fg.replace(m, replacement, reason="test")
        assert out.owner.inputs[0] is replacement
        assert evaluate(out, {x: 2.0, y: 3.0}) == 3.0

    def test_fgraph_clone(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False, name="g")
        copy = fg.clone()
        assert copy.name == "g" and copy.outputs[0] is not out
        assert len(copy.apply_nodes) == 3 and copy.history == []
        copy.check_integrity()


class TestReplace:
    def test_import_and_prune(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        old_node = m.owner
        new = neg(add(y, 1.0))
        fg.replace(m, new, reason="swap")
        fg.check_integrity()
        assert old_node not in fg.apply_nodes and m not in fg.variables
        assert new.owner in fg.apply_nodes and new.owner.inputs[0].owner in fg.apply_nodes
        assert fg.clients[new] == [(out.owner, 0)]
        assert fg.clients[x] == [(n.owner, 0)]  # m's use of x is gone
        assert fg.clients[y] == [(new.owner.inputs[0].owner, 0)]
        # the constant 1.0 came in with the new node
        const = new.owner.inputs[0].owner.inputs[1]
        assert const in fg.variables
        # replace again: the constant is pruned with its only client
        fg.replace(new, mul(x, y), reason="back")
        fg.check_integrity()
        assert const not in fg.variables and len(fg.apply_nodes) == 3

    def test_replace_output(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.replace(out, m, reason="shortcut")
        fg.check_integrity()
        assert fg.outputs == [m]
        assert fg.apply_nodes == {m.owner}
        assert fg.clients[m] == [("output", 0)]

    def test_replace_by_an_input(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.replace(out, y)
        fg.check_integrity()
        assert fg.outputs == [y] and not fg.apply_nodes
        assert fg.clients[x] == [] and fg.clients[y] == [("output", 0)]

    def test_replacement_depending_on_the_old_variable(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        wrapped = neg(neg(m))
        fg.replace(m, wrapped)
        fg.check_integrity()
        assert m in fg.variables and fg.clients[m] == [(wrapped.owner.inputs[0].owner, 0)]
        assert out.owner.inputs[0] is wrapped
        assert evaluate(out, {x: 2.0, y: 3.0}) == 4.0

    def test_partially_used_multi_output_node_survives(self):
        x = double("x")
        q, r = divmod_(x, 2.0)
        out = add(q, r)
        fg = FunctionGraph([x], [out], clone=False)
        fg.replace(q, neg(x))
        fg.check_integrity()
        assert q.owner in fg.apply_nodes  # r still needs it
        assert fg.clients[q] == []
        fg.replace(r, x)
        fg.check_integrity()
        assert q.owner not in fg.apply_nodes

    def test_replace_refuses_incompatible_type(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        g = generic("g")
        with pytest.raises(TypeError) as info:
            fg.replace(m, g, reason="bad idea")
        message = str(info.value)
        assert "cannot replace Mul.0 of type DoubleType by g of type Generic" in message
        assert "bad idea" in message
        assert fg.history == [] and out.owner.inputs[0] is m
        fg.check_integrity()
        with pytest.raises(TypeError, match="needs a Variable"):
            fg.replace(m, 3.0)

    def test_replace_unknown_variable(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        with pytest.raises(ValueError, match="not part of this FunctionGraph"):
            fg.replace(double("stranger"), x)

    def test_replace_by_itself_is_a_no_op(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.replace(m, m)
        assert fg.history == []

    def test_history_records_reason_and_trace(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        new = add(x, y)
        fg.replace(m, new, reason="mul_to_add")
        fg.replace(n, x, reason="drop_neg")
        assert len(fg.history) == 2
        first, second = fg.history
        assert isinstance(first, Replacement)
        assert (first.step, first.reason, first.old, first.new, first.requested) == (
            0, "mul_to_add", m, new, new)
        assert first.changes == [(out.owner, 0)]
        assert isinstance(first.trace, NarrowingTrace)
        assert first.trace.result is new and first.trace.accepted
        assert first.trace.steps[0].question == "same type?"
        assert (second.step, second.reason, second.old, second.new) == (1, "drop_neg", n, x)
        assert repr(first) == "<Replacement 0: Mul.0 -> Add.0 (mul_to_add)>"

    def test_replace_narrows_a_wider_replacement(self):
        narrow_t, wide_t = BoundedType(2, 3), BoundedType(0, 10)
        a = narrow_t("a")
        mid = BoundedIdentity()(a)
        out = BoundedIdentity()(mid)
        wide = wide_t("w")
        fg = FunctionGraph([a, wide], [out], clone=False)
        fg.replace(mid, BoundedIdentity()(wide), reason="widen")
        fg.check_integrity()
        entry = fg.history[0]
        assert entry.new is not entry.requested
        assert entry.new.owner.op == Narrow(2, 3) and entry.new.type == narrow_t
        assert entry.new.owner.inputs[0] is entry.requested
        assert [s.question for s in entry.trace.steps][-1] == "converted by"
        assert out.owner.inputs[0] is entry.new

    def test_replace_keeps_a_narrower_replacement(self):
        wide_t = BoundedType(0, 10)
        w = wide_t("w")
        out = BoundedIdentity()(BoundedIdentity()(w))
        a = BoundedType(2, 3)("a")
        fg = FunctionGraph([w, a], [out], clone=False)
        mid = out.owner.inputs[0]
        fg.replace(mid, a)
        assert fg.history[0].new is a and out.owner.inputs[0] is a

    def test_replace_all(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.replace_all([(m, x), (n, y)], reason="both")
        fg.check_integrity()
        assert out.owner.inputs == [x, y]
        assert [h.reason for h in fg.history] == ["both", "both"]

    def test_remove_output(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [m, out, n], clone=False)
        fg.remove_output(1)
        fg.check_integrity()
        assert fg.outputs == [m, n]
        assert fg.clients[n] == [("output", 1)] and fg.clients[m] == [("output", 0)]
        assert out.owner not in fg.apply_nodes

    def test_add_output(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [m], clone=False)
        fg.add_output(out)
        fg.check_integrity()
        assert fg.outputs == [m, out] and len(fg.apply_nodes) == 3

    def test_check_integrity_detects_corruption(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        fg.clients[x].pop()
        with pytest.raises(ValueError, match="clients of x"):
            fg.check_integrity()
        fg2 = FunctionGraph([x, y], [out], clone=False)
        fg2.apply_nodes.discard(n.owner)
        with pytest.raises(ValueError, match="apply_nodes disagree"):
            fg2.check_integrity()


class TestFeatures:
    def test_attach_detach(self):
        x, y, m, n, out = graph()
        rec = Recorder()
        fg = FunctionGraph([x, y], [out], clone=False, features=[rec])
        assert rec.events == [("attach", fg)] and fg.features == [rec]
        fg.attach_feature(rec)  # attaching twice is a no-op
        assert fg.features == [rec] and len(rec.events) == 1
        fg.remove_feature(rec)
        assert rec.events[-1] == ("detach", fg) and fg.features == []

    def test_callbacks_on_replace(self):
        x, y, m, n, out = graph()
        rec = Recorder()
        fg = FunctionGraph([x, y], [out], clone=False, features=[rec])
        inner = add(y, 1.0)
        new = neg(inner)
        fg.replace(m, new, reason="why")
        events = rec.events[1:]
        # the new nodes come in, the old one is pruned as its last client
        # leaves, then the change itself is announced
        assert [e[0] for e in events] == ["import", "import", "prune", "change"]
        assert events[0] == ("import", inner.owner, "why")
        assert events[1] == ("import", new.owner, "why")
        assert events[2] == ("prune", m.owner, "why")
        assert events[3] == ("change", out.owner, 0, m, new, "why")

    def test_change_of_an_output(self):
        x, y, m, n, out = graph()
        rec = Recorder()
        fg = FunctionGraph([x, y], [out], clone=False, features=[rec])
        fg.replace(out, x, reason="r")
        kinds = rec.kinds()
        assert ("change", "output", 0, out, x, "r") in rec.events
        assert sorted(e[1].op.__class__.__name__ for e in rec.events if e[0] == "prune") == [
            "Add", "Mul", "Neg"]
        assert kinds == ["attach", "prune", "prune", "prune", "change"]

    def test_plain_object_feature_with_some_hooks(self):
        class OnlyPrune:
            def __init__(self):
                self.pruned = []

            def on_prune(self, fgraph, node, reason):
                self.pruned.append(node)

        x, y, m, n, out = graph()
        feature = OnlyPrune()
        fg = FunctionGraph([x, y], [out], clone=False, features=[feature])
        fg.replace(n, x)
        assert feature.pruned == [n.owner]

    def test_version_changes_and_toposort_cache(self):
        x, y, m, n, out = graph()
        fg = FunctionGraph([x, y], [out], clone=False)
        before = fg.version
        order = fg.toposort()
        fg.replace(n, x)
        assert fg.version > before
        assert fg.toposort() != order and n.owner not in fg.toposort()


class TestDeep:
    DEEP = 100_000

    @pytest.fixture(scope="class")
    @classmethod
    def deep(cls):
        x = double("x")
        return x, chain(x, cls.DEEP)

    def test_build_and_check_a_deep_graph(self, deep):
        x, out = deep
        fg = FunctionGraph([x], [out], clone=False)
        assert len(fg.apply_nodes) == self.DEEP
        assert len(fg.toposort()) == self.DEEP
        fg.check_integrity()

    def test_clone_and_prune_a_deep_graph(self, deep):
        x, out = deep
        fg = FunctionGraph([x], [out])
        assert fg.outputs[0] is not out
        fg.replace(fg.outputs[0], fg.inputs[0], reason="collapse")
        assert not fg.apply_nodes and fg.outputs == fg.inputs
        fg.check_integrity()

    def test_many_inputs_pruned(self):
        # pruning tests input membership once per variable: it must not scan the inputs
        xs = [double("x%d" % i) for i in range(20_000)]
        out = xs[0]
        for x in xs[1:]:
            out = add(out, x)
        fg = FunctionGraph(xs, [out], clone=False)
        fg.replace(out, xs[0])
        assert not fg.apply_nodes and fg.inputs == xs
        assert all(fg.clients[x] == [] for x in xs[1:])
        fg.check_integrity()

    def test_missing_input_deep_down(self, deep):
        x, out = deep
        with pytest.raises(MissingInputError) as info:
            FunctionGraph([double("other")], [out], clone=False)
        assert info.value.variable is x
        assert len(info.value.path) == self.DEEP + 1
        assert info.value.path[0] is out
        assert "(99991 more)" in str(info.value) and len(str(info.value)) < 300
