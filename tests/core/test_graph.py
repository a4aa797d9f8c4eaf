"""nbgraph.core.graph: Variable, Constant, Apply and the graph walks."""

import sys

import numpy as np
import pytest

from core_toys import BoundedType, Narrow, add, chain, divmod_, double, evaluate, mul, neg
from nbgraph.core import (
    Apply,
    Constant,
    Scratchpad,
    Variable,
    ancestors,
    applys_between,
    clone,
    clone_get_equiv,
    clone_replace,
    equal_computations,
    generic,
    graph_inputs,
    io_toposort,
    toposort,
    variables_between,
)
from nbgraph.core.graph import is_in_ancestors

DEEP = 100_000


# -- the seed's explicit example ----------------------------------------------

def test_seed_long_example():
    x = Variable(type=double, name="x")
    y = Variable(type=double, name="y")
    z = Variable(type=double, name="z")

    mul_variable = Variable(type=double)
    assert mul_variable.owner is None
    node_mul = Apply(op=mul, inputs=[y, z], outputs=[mul_variable])
    assert mul_variable.owner is node_mul
    assert mul_variable.index == 0

    add_variable = Variable(type=double)
    assert add_variable.owner is None
    node_add = Apply(op=add, inputs=[x, mul_variable], outputs=[add_variable])
    assert add_variable.owner is node_add
    assert add_variable.index == 0

    e = add_variable
    assert e.owner.inputs[0] is x
    assert e.owner.inputs[1] is mul_variable
    assert e.owner.inputs[1].owner.inputs[0] is y
    assert e.owner.inputs[1].owner.inputs[1] is z
    assert x.owner is None and y.owner is None
    # the hand-built graph computes x + y * z
    assert evaluate(e, {x: 1.0, y: 2.0, z: 3.0}) == 7.0


def test_short_example_matches_long_one():
    x, y, z = double("x"), double("y"), double("z")
    e = add(x, mul(y, z))
    assert e.owner.op == add and e.owner.inputs[0] is x
    inner = e.owner.inputs[1]
    assert inner.owner.op == mul and inner.owner.inputs == [y, z]


def test_automatic_wrapping_of_constants():
    x = double("x")
    e = add(x, 1)
    const = e.owner.inputs[1]
    assert isinstance(const, Constant) and const.data == 1.0 and const.type is double


def test_apply_sets_index_of_every_output():
    x = double("x")
    q, r = divmod_(x, 3.0)
    assert q.owner is r.owner
    assert (q.index, r.index) == (0, 1)
    assert q.owner.outputs == [q, r]
    assert q.owner.nin == 2 and q.owner.nout == 2


# -- Apply refusals -------------------------------------------------------------

class TestApplyChecks:
    def test_non_variable_input_named_by_position(self):
        with pytest.raises(TypeError,
                           match="input 1 of Apply\\(Add\\) must be a Variable, got float"):
            Apply(add, [double("x"), 2.0], [double()])

    def test_type_as_input_refused(self):
        with pytest.raises(TypeError, match="input 0 .* got DoubleType"):
            Apply(add, [double, double("y")], [double()])

    def test_non_variable_output_named_by_position(self):
        with pytest.raises(TypeError, match="output 1 of Apply\\(Add\\) must be a Variable"):
            Apply(add, [double("x"), double("y")], [double(), "z"])

    def test_constant_output_refused(self):
        with pytest.raises(TypeError, match="output 0 .* Constant"):
            Apply(add, [double("x"), double("y")], [Constant(double, 1.0)])

    def test_output_owned_by_another_node(self):
        x, y = double("x"), double("y")
        taken = add(x, y)
        first_owner = taken.owner
        with pytest.raises(ValueError, match="already the output of Add"):
            Apply(mul, [x, y], [taken])
        assert taken.owner is first_owner and taken.index == 0

    def test_same_output_twice_refused(self):
        out = double("out")
        with pytest.raises(ValueError, match="twice"):
            Apply(divmod_, [double("x"), double("y")], [out, out])
        assert out.owner is None and out.index is None

    def test_refused_apply_leaves_outputs_untouched(self):
        good = double("good")
        with pytest.raises(TypeError):
            Apply(add, [double("x"), double("y")], [good, 3])
        assert good.owner is None


def test_apply_default_output_and_clone():
    x = double("x")
    node = add(x, 1.0).owner
    assert node.default_output is node.outputs[0] is node.out
    copy = node.clone()
    assert copy.op is node.op and copy.inputs == node.inputs
    assert copy.outputs[0] is not node.outputs[0]
    assert copy.outputs[0].owner is copy
    multi = divmod_(x, 2.0)[0].owner
    with pytest.raises(ValueError, match="2 outputs and no default_output"):
        _ = multi.default_output


def test_clone_with_new_inputs():
    x, y = double("x"), double("y")
    node = add(x, 1.0).owner
    new = node.clone_with_new_inputs([y, node.inputs[1]])
    assert new.inputs[0] is y and new.op == add and new is not node
    with pytest.raises(TypeError, match="g"):
        node.clone_with_new_inputs([generic("g"), node.inputs[1]])
    with pytest.raises(ValueError, match="takes 2 inputs"):
        node.clone_with_new_inputs([y])


def test_clone_with_new_inputs_narrows_through_filter_variable():
    wide = BoundedType(0, 10)("w")
    narrow_in = BoundedType(2, 3)("n")
    from core_toys import BoundedIdentity

    node = BoundedIdentity().make_node(narrow_in)
    new = node.clone_with_new_inputs([wide])
    assert new.inputs[0].owner.op == Narrow(2, 3)
    assert new.inputs[0].owner.inputs[0] is wide


# -- Variable -------------------------------------------------------------------

class TestVariable:
    def test_fields(self):
        v = Variable(double, name="v")
        assert (v.type, v.owner, v.index, v.name) == (double, None, None, "v")
        assert isinstance(v.tag, Scratchpad)
        v.tag.trace = "made here"
        assert v.tag.trace == "made here"

    @pytest.mark.parametrize("kwargs, word", [
        (dict(type=3), "Type"),
        (dict(type=double, owner="node"), "owner"),
        (dict(type=double, index="0"), "index"),
        (dict(type=double, name=5), "name"),
    ])
    def test_bad_fields_refused(self, kwargs, word):
        with pytest.raises(TypeError, match=word):
            Variable(**kwargs)

    def test_repr_named(self):
        assert repr(double("x")) == "x"
        assert str(double("x")) == "x"

    def test_repr_unnamed_root_shows_type(self):
        assert repr(double()) == "<DoubleType>"
        assert repr(BoundedType(0, 1)()) == "<BoundedType{0, 1}>"

    def test_repr_apply_output_shows_op_and_index(self):
        x = double("x")
        assert repr(add(x, x)) == "Add.0"
        q, r = divmod_(x, 2.0)
        assert (repr(q), repr(r)) == ("DivMod.0", "DivMod.1")
        assert repr(Narrow(2, 3)(BoundedType(0, 5)())) == "Narrow{2, 3}.0"
        named = add(x, x)
        named.name = "s"
        assert repr(named) == "s"

    def test_clone_copies_type_name_tag_not_owner(self):
        x = double("x")
        out = add(x, x)
        out.name = "out"
        out.tag.note = [1]
        copy = out.clone()
        assert copy is not out
        assert copy.type is out.type and copy.name == "out"
        assert copy.owner is None and copy.index is None
        assert copy.tag.note == [1] and copy.tag is not out.tag
        copy.tag.extra = True
        assert not hasattr(out.tag, "extra")
        assert out.clone(name="renamed").name == "renamed"

    def test_variables_hash_by_identity(self):
        a, b = double("x"), double("x")
        assert a != b and len({a, b}) == 2
        assert a.get_parents() == []
        out = add(a, b)
        assert out.get_parents() == [out.owner]
        assert out.owner.get_parents() == [a, b]


def test_scratchpad():
    pad = Scratchpad()
    pad.a = 1
    copy = pad.copy()
    copy.b = 2
    assert (copy.a, copy.b) == (1, 2) and not hasattr(pad, "b")
    assert repr(copy) == "Scratchpad(a=1, b=2)"


# -- Constant -----------------------------------------------------------------

class TestConstant:
    def test_data_is_filtered(self):
        c = Constant(double, 3)
        assert c.data == 3.0 and isinstance(c.data, float)
        assert c.value is c.data
        with pytest.raises(TypeError, match="allow_downcast"):
            Constant(double, 2 ** 53 + 1)

    def test_no_owner(self):
        c = Constant(double, 1.0)
        assert c.owner is None and c.index is None
        c.owner = None  # allowed: nothing changes
        with pytest.raises(ValueError, match="cannot have an owner"):
            c.owner = add(double(), double()).owner

    def test_data_settable_once(self):
        c = Constant(double, 1.0)
        with pytest.raises(AttributeError, match="already holds data"):
            c.data = 2.0
        assert c.data == 1.0

    def test_array_is_read_only_and_caller_untouched(self):
        arr = np.arange(4.0)
        c = Constant(generic, arr)
        assert not c.data.flags.writeable
        with pytest.raises(ValueError):
            c.data[0] = 10.0
        assert arr.flags.writeable
        arr[0] = 42.0
        assert c.data[0] == 0.0

    def test_read_only_view_of_writable_array_is_copied(self):
        base = np.arange(3.0)
        view = base.view()
        view.setflags(write=False)
        c = Constant(generic, view)
        base[0] = 99.0
        assert c.data[0] == 0.0

    def test_truly_read_only_array_is_shared(self):
        arr = np.arange(3.0)
        arr.setflags(write=False)
        assert Constant(generic, arr).data is arr

    def test_repr_shows_value(self):
        assert repr(Constant(double, 1.5)) == "1.5"
        assert repr(Constant(generic, np.arange(3))) == "[0, 1, 2]"
        assert repr(Constant(generic, np.float64(2.5))) == "2.5"
        assert repr(Constant(double, 1.5, name="c")) == "c"
        assert repr(Constant(generic, np.zeros(100))) == "Constant{shape=(100,)}"

    def test_signature_and_equals(self):
        a, b = Constant(double, 2.0), Constant(double, 2)
        assert a != b  # == stays identity so constants can key dicts
        assert a.signature() == b.signature()
        assert hash(a.signature()) == hash(b.signature())
        assert a.equals(b) and b.equals(a)
        assert not a.equals(Constant(double, 3.0))
        assert not a.equals(Constant(generic, 2.0))
        assert not a.equals(double("x"))

    def test_signed_zeros_are_different_constants(self):
        # merging 0.0 with -0.0 would change 1 / c
        pos, negz = Constant(double, 0.0), Constant(double, -0.0)
        assert pos.signature() != negz.signature()
        assert not pos.equals(negz)

    def test_unhashable_data_signature(self):
        a = Constant(generic, [1, 2])
        assert a.signature() == a.signature()
        assert a.signature() != Constant(generic, [1, 2]).signature()

    def test_clone_shares_data(self):
        c = Constant(double, 2.0, name="two")
        copy = c.clone()
        assert copy is not c and copy.data == 2.0 and copy.name == "two"
        assert copy.equals(c) and copy.owner is None


# -- walks ----------------------------------------------------------------------

def small_graph():
    """e = (x * y) + neg(x * y); returns x, y, m (x*y), n (neg m), e."""
    x, y = double("x"), double("y")
    m = mul(x, y)
    n = neg(m)
    e = add(m, n)
    return x, y, m, n, e


class TestWalks:
    def test_ancestors(self):
        x, y, m, n, e = small_graph()
        found = list(ancestors([e]))
        assert found[0] is e
        assert set(found) == {e, m, n, x, y, e.owner.inputs[0]}
        assert len(found) == len(set(found))  # each once
        blocked = list(ancestors([e], blockers=[n]))
        assert n in blocked and m in blocked  # m still reached via e's first input
        assert set(ancestors(n, blockers=[n])) == {n}

    def test_graph_inputs(self):
        x, y, m, n, e = small_graph()
        assert graph_inputs([e]) == [x, y]
        c = add(e, 2.0)
        roots = graph_inputs(c)
        assert roots[:2] == [x, y] and isinstance(roots[2], Constant)
        assert graph_inputs([e], blockers=[m]) == [m]

    def test_io_toposort_order(self):
        x, y, m, n, e = small_graph()
        order = io_toposort([x, y], [e])
        assert order == [m.owner, n.owner, e.owner]
        assert toposort(e) == order
        assert io_toposort([m], [e]) == [n.owner, e.owner]
        assert io_toposort([x, y], [x]) == []

    def test_toposort_every_node_after_its_inputs(self):
        x = double("x")
        outs = []
        layer = [x]
        for _ in range(5):
            layer = [add(a, b) for a in layer for b in layer][:6]
            outs.extend(layer)
        order = toposort(outs)
        position = {node: i for i, node in enumerate(order)}
        for node in order:
            for inp in node.inputs:
                if inp.owner is not None:
                    assert position[inp.owner] < position[node]
        assert len(order) == len(set(order))

    def test_toposort_multi_output_node_once(self):
        x = double("x")
        q, r = divmod_(x, 2.0)
        s = add(q, r)
        assert toposort([s]) == [q.owner, s.owner]
        assert len(toposort([q, r])) == 1

    def test_cycle_detected(self):
        x = double("x")
        out = neg(x)
        node = out.owner
        node.inputs[0] = out  # corrupt the graph on purpose
        with pytest.raises(ValueError, match="cycle"):
            toposort(out)

    def test_variables_and_applys_between(self):
        x, y, m, n, e = small_graph()
        assert set(variables_between([x, y], [e])) == {x, y, m, n, e}
        assert set(applys_between([x, y], [e])) == {m.owner, n.owner, e.owner}

    def test_is_in_ancestors(self):
        x, y, m, n, e = small_graph()
        assert is_in_ancestors(e.owner, m.owner)
        assert is_in_ancestors(e.owner, e.owner)
        assert not is_in_ancestors(m.owner, e.owner)


class TestClone:
    def test_clone_copies_everything(self):
        x, y, m, n, e = small_graph()
        (cx, cy), (ce,) = clone([x, y], [e])
        assert cx is not x and cx.name == "x" and cy.name == "y"
        assert ce is not e and ce.owner is not e.owner
        assert graph_inputs(ce) == [cx, cy]
        assert equal_computations([e], [ce], [x, y], [cx, cy])
        assert evaluate(ce, {cx: 2.0, cy: 3.0}) == evaluate(e, {x: 2.0, y: 3.0}) == 0.0
        # the original is untouched
        assert e.owner.inputs[0] is m and graph_inputs(e) == [x, y]

    def test_clone_without_copying_inputs(self):
        x, y, m, n, e = small_graph()
        (cx, cy), (ce,) = clone([x, y], [e], copy_inputs=False)
        assert (cx, cy) == (x, y)
        assert ce is not e and graph_inputs(ce) == [x, y]

    def test_clone_get_equiv(self):
        x, y, m, n, e = small_graph()
        equiv = clone_get_equiv([x, y], [e])
        for var in (x, y, m, n, e):
            assert equiv[var] is not var and equiv[var].type == var.type
        for node in (m.owner, n.owner, e.owner):
            assert equiv[node].op == node.op
            assert equiv[node].inputs == [equiv[i] for i in node.inputs]
        assert equiv[e].owner is equiv[e.owner]

    def test_constants_shared_and_names_kept(self):
        x = double("x")
        c = Constant(double, 2.0)
        out = mul(x, c)
        out.name = "out"
        equiv = clone_get_equiv([x], [out])
        assert equiv[c] is c
        assert equiv[out].name == "out"

    def test_clone_replace(self):
        x, y, m, n, e = small_graph()
        z = double("z")
        new_e = clone_replace(e, {y: z})
        assert new_e is not e and graph_inputs(new_e) == [x, z]
        assert evaluate(new_e, {x: 2.0, z: 5.0}) == 0.0
        assert graph_inputs(e) == [x, y]  # original graph untouched
        # replace an inner variable; a list in, a list out
        (f,) = clone_replace([e], [(m, add(x, y))])
        assert evaluate(f, {x: 2.0, y: 3.0}) == 0.0
        assert f.owner.inputs[0].owner.op == add
        # a plain number is wrapped as a constant
        g = clone_replace(e, {y: 4})
        assert evaluate(g, {x: 2.0}) == 0.0
        assert evaluate(clone_replace(m, {y: 4}), {x: 2.0}) == 8.0

    def test_clone_replace_refuses_incompatible_replacement(self):
        x, y, m, n, e = small_graph()
        with pytest.raises(TypeError) as info:
            clone_replace(e, {y: generic("g")})
        assert "g" in str(info.value) and "Generic" in str(info.value)
        assert "DoubleType" in str(info.value)
        with pytest.raises(TypeError, match="keys must be Variables"):
            clone_replace(e, {"y": x})

    def test_equal_computations(self):
        x, y = double("x"), double("y")
        a = add(mul(x, y), 2.0)
        b = add(mul(x, y), 2.0)
        assert equal_computations([a], [b])
        assert equal_computations(a, a)
        assert not equal_computations([a], [add(mul(y, x), 2.0)])
        assert not equal_computations([a], [add(mul(x, y), 3.0)])
        assert not equal_computations([a], [mul(mul(x, y), 2.0)])
        assert not equal_computations([a], [a, b])
        u, v = double("u"), double("v")
        c = add(mul(u, v), 2.0)
        assert not equal_computations([a], [c])
        assert equal_computations([a], [c], [x, y], [u, v])
        assert not equal_computations([a], [c], [x, y], [v, u])
        q1, _ = divmod_(x, y)
        _, r2 = divmod_(x, y)
        assert not equal_computations([q1], [r2])


# -- deep graphs --------------------------------------------------------------

class TestDeepGraphs:
    @pytest.fixture(scope="class")
    @classmethod
    def deep(cls):
        x = double("x")
        return x, chain(x, DEEP)

    def test_ancestors_of_a_deep_chain(self, deep):
        x, out = deep
        found = list(ancestors(out))
        assert len(found) == DEEP + 1 and found[-1] is x
        assert graph_inputs(out) == [x]

    def test_toposort_of_a_deep_chain(self, deep):
        x, out = deep
        order = toposort(out)
        assert len(order) == DEEP
        assert order[0].inputs[0] is x and order[-1] is out.owner

    def test_clone_of_a_deep_chain(self, deep):
        x, out = deep
        (cx,), (cout,) = clone([x], [out])
        assert graph_inputs(cout) == [cx]
        assert equal_computations([out], [cout], [x], [cx])

    def test_clone_replace_of_a_deep_chain(self, deep):
        x, out = deep
        new = clone_replace(out, {x: Constant(double, 2.0)})
        assert evaluate(new, {}) == 2.0  # an even number of negations

    def test_no_recursion_limit_reached(self, deep):
        assert DEEP > sys.getrecursionlimit() * 10
        x, out = deep
        assert len(variables_between([x], [out])) == DEEP + 1

    def test_deleting_a_deep_chain(self):
        x = double("x")
        out = chain(x, DEEP)
        del out  # deallocation must not overflow the C stack
