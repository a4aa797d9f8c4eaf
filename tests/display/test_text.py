"""Tests for nbgraph.display.text: dprint and dprint_text.

The graphs are built from tiny Ops and a tiny Type defined here, so the
expected text depends only on the display code and the core graph classes.
"""

import io
import sys

import pytest

from nbgraph.core import Apply, Constant, FunctionGraph, Op, Type
from nbgraph.display import dprint, dprint_text
from nbgraph.display import text as text_module


class Arr(Type):
    """A stand-in array Type whose repr mimics the seed's TensorType."""

    __props__ = ("dtype", "shape")

    def __init__(self, dtype="float64", shape=(None,)):
        self.dtype = dtype
        self.shape = tuple(shape)

    def filter(self, data, strict=False, allow_downcast=None):
        return data

    def __str__(self):
        return "Arr(%s, %s)" % (self.dtype, self.shape)


VEC = Arr("float64", (None,))


class Binary(Op):
    __props__ = ()

    def make_node(self, a, b):
        return Apply(self, [a, b], [a.type()])


class Add(Binary):
    pass


class Mul(Binary):
    pass


class Neg(Op):
    __props__ = ()

    def make_node(self, a):
        return Apply(self, [a], [a.type()])


class Split(Op):
    """Two outputs from one input."""

    __props__ = ()

    def make_node(self, a):
        return Apply(self, [a], [a.type(), a.type()])


class Many(Op):
    """Any number of inputs, one output."""

    __props__ = ()

    def make_node(self, *inputs):
        return Apply(self, list(inputs), [inputs[0].type()])


class Narrow(Op):
    """Gives its input a fully static shape (like SpecifyShape)."""

    __props__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape)

    def make_node(self, a):
        return Apply(self, [a], [Arr(a.type.dtype, self.shape)()])

    def __str__(self):
        return "Narrow"


add, mul, neg, split, many = Add(), Mul(), Neg(), Split(), Many()


def variables(*names):
    return [VEC(name) for name in names]


def lines(*rows):
    return "".join(row + "\n" for row in rows)


# ---------------------------------------------------------------------------
# layout


def test_root_variable_alone():
    (x,) = variables("x")
    assert dprint_text(x) == "x [id A]\n"


def test_single_node():
    x, y = variables("x", "y")
    assert dprint_text(add(x, y)) == lines(
        "Add [id A] ''",
        " |x [id B]",
        " |y [id C]",
    )


def test_named_output_shows_its_name_in_quotes():
    x, y = variables("x", "y")
    out = add(x, y)
    out.name = "total"
    assert dprint_text(out) == lines(
        "Add [id A] 'total'",
        " |x [id B]",
        " |y [id C]",
    )


def test_nested_graph_prefixes():
    x, y, z = variables("x", "y", "z")
    out = add(mul(y, z), x)
    assert dprint_text(out) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " | |y [id C]",
        " | |z [id D]",
        " |x [id E]",
    )


def test_last_child_subtree_is_indented_with_spaces():
    w, x, y, z = variables("w", "x", "y", "z")
    out = add(mul(y, neg(z)), neg(add(w, x)))
    assert dprint_text(out) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " | |y [id C]",
        " | |Neg [id D] ''",
        " |   |z [id E]",
        " |Neg [id F] ''",
        "   |Add [id G] ''",
        "     |w [id H]",
        "     |x [id I]",
    )


def test_constants_print_their_value():
    (x,) = variables("x")
    out = mul(Constant(VEC, 2.5), x)
    assert dprint_text(out, print_type=True) == lines(
        "Mul [id A] <Arr(float64, (None,))> ''",
        " |2.5 [id B] <Arr(float64, (None,))>",
        " |x [id C] <Arr(float64, (None,))>",
    )


def test_unnamed_intermediate_and_root():
    x = VEC()
    out = neg(x)
    assert dprint_text(out) == lines(
        "Neg [id A] ''",
        " |<Arr(float64, (None,))> [id B]",
    )


# ---------------------------------------------------------------------------
# ids and shared subgraphs


def test_shared_subgraph_printed_once_then_referenced():
    x, y = variables("x", "y")
    shared = mul(x, y)
    out = add(shared, neg(shared))
    assert dprint_text(out) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " | |x [id C]",
        " | |y [id D]",
        " |Neg [id E] ''",
        "   |Mul [id B] ''",
    )


def test_repeated_root_keeps_its_id():
    (x,) = variables("x")
    assert dprint_text(mul(x, x)) == lines(
        "Mul [id A] ''",
        " |x [id B]",
        " |x [id B]",
    )


def test_multi_output_node_shares_one_id():
    (x,) = variables("x")
    first, second = split(x)
    out = add(first, second)
    assert dprint_text(out) == lines(
        "Add [id A] ''",
        " |Split.0 [id B] ''",
        " | |x [id C]",
        " |Split.1 [id B] ''",
    )


def test_apply_prints_each_of_its_outputs():
    (x,) = variables("x")
    first, second = split(x)
    second.name = "rest"
    expected = lines(
        "Split.0 [id A] ''",
        " |x [id B]",
        "Split.1 [id A] 'rest'",
    )
    assert dprint_text(first.owner) == expected
    assert dprint_text([first, second]) == expected
    assert dprint_text((first.owner,)) == expected


def test_list_of_outputs_shares_the_id_namespace():
    x, y = variables("x", "y")
    shared = mul(x, y)
    assert dprint_text([add(shared, x), neg(shared)]) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " | |x [id C]",
        " | |y [id D]",
        " |x [id C]",
        "Neg [id E] ''",
        " |Mul [id B] ''",
    )


def test_empty_list_prints_nothing():
    assert dprint_text([]) == ""


def test_ids_go_past_z():
    names = ["v%d" % i for i in range(30)]
    out = many(*variables(*names))
    text = dprint_text(out)
    got = text.splitlines()
    assert got[0] == "Many [id A] ''"
    assert got[25] == " |v24 [id Z]"
    assert got[26] == " |v25 [id AA]"
    assert got[27] == " |v26 [id AB]"
    assert got[30] == " |v29 [id AE]"


@pytest.mark.parametrize("n, label", [
    (0, "A"), (25, "Z"), (26, "AA"), (27, "AB"), (51, "AZ"), (52, "BA"),
    (701, "ZZ"), (702, "AAA"),
])
def test_char_ids(n, label):
    assert text_module._char_id(n) == label


def test_int_ids_and_no_ids():
    x, y = variables("x", "y")
    out = add(mul(x, y), x)
    assert dprint_text(out, ids="int") == lines(
        "Add [id 0] ''",
        " |Mul [id 1] ''",
        " | |x [id 2]",
        " | |y [id 3]",
        " |x [id 2]",
    )
    assert dprint_text(out, ids="") == lines(
        "Add ''",
        " |Mul ''",
        " | |x",
        " | |y",
        " |x",
    )


# ---------------------------------------------------------------------------
# print_type and depth


def test_print_type_matches_the_seed_layout():
    v1 = Arr("float64", (2, None))()
    v3 = Narrow((2, 1))(v1)
    assert dprint_text(v3, print_type=True) == lines(
        "Narrow [id A] <Arr(float64, (2, 1))> ''",
        " |<Arr(float64, (2, None))> [id B] <Arr(float64, (2, None))>",
    )


def test_print_type_with_multi_output_and_name():
    (x,) = variables("x")
    first, second = split(x)
    first.name = "head"
    assert dprint_text(first, print_type=True) == lines(
        "Split.0 [id A] <Arr(float64, (None,))> 'head'",
        " |x [id B] <Arr(float64, (None,))>",
    )


def test_depth_limits_levels():
    x, y, z = variables("x", "y", "z")
    out = add(mul(y, neg(z)), x)
    assert dprint_text(out, depth=1) == "Add [id A] ''\n"
    assert dprint_text(out, depth=2) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " |x [id C]",
    )
    assert dprint_text(out, depth=3) == lines(
        "Add [id A] ''",
        " |Mul [id B] ''",
        " | |y [id C]",
        " | |Neg [id D] ''",
        " |x [id E]",
    )
    assert dprint_text(out, depth=4) == dprint_text(out)


def test_node_cut_by_depth_is_expanded_where_depth_allows():
    x, y = variables("x", "y")
    shared = mul(x, y)
    out = add(neg(shared), shared)
    assert dprint_text(out, depth=3) == lines(
        "Add [id A] ''",
        " |Neg [id B] ''",
        " | |Mul [id C] ''",
        " |Mul [id C] ''",
        "   |x [id D]",
        "   |y [id E]",
    )


def test_depth_one_on_several_outputs():
    x, y = variables("x", "y")
    assert dprint_text([add(x, y), neg(x)], depth=1) == lines(
        "Add [id A] ''",
        "Neg [id B] ''",
    )


# ---------------------------------------------------------------------------
# where the text goes


def _small_graph():
    x, y = variables("x", "y")
    return add(x, y)


SMALL = lines("Add [id A] ''", " |x [id B]", " |y [id C]")


def test_file_str_returns_text_and_prints_nothing(capsys):
    assert dprint(_small_graph(), file="str") == SMALL
    assert capsys.readouterr().out == ""


def test_default_prints_to_stdout_and_returns_none(capsys):
    result = dprint(_small_graph())
    assert capsys.readouterr().out == SMALL
    assert result is None  # a notebook cell ending with dprint(x) shows only the tree


def test_stdout_is_looked_up_at_call_time(monkeypatch):
    buffer = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buffer)
    assert dprint(_small_graph()) is None
    assert buffer.getvalue() == SMALL


def test_file_like_object_is_written_and_returned(capsys):
    buffer = io.StringIO()
    buffer.write("before\n")
    assert dprint(_small_graph(), file=buffer) is buffer
    assert buffer.getvalue() == "before\n" + SMALL
    assert capsys.readouterr().out == ""


def test_dprint_text_is_dprint_to_str():
    out = _small_graph()
    assert dprint_text(out, print_type=True, depth=1) == dprint(
        out, print_type=True, depth=1, file="str")
    with pytest.raises(TypeError, match="no file argument"):
        dprint_text(out, file=io.StringIO())


# ---------------------------------------------------------------------------
# FunctionGraph and compiled functions


def test_function_graph_prints_its_outputs_in_order():
    x, y = variables("x", "y")
    shared = mul(x, y)
    shared.name = "xy"
    fgraph = FunctionGraph([x, y], [neg(shared), add(shared, y)])
    assert dprint_text(fgraph) == lines(
        "Neg [id A] ''",
        " |Mul [id B] 'xy'",
        "   |x [id C]",
        "   |y [id D]",
        "Add [id E] ''",
        " |Mul [id B] 'xy'",
        " |y [id D]",
    )


def test_function_graph_prints_its_own_clone():
    x, y = variables("x", "y")
    out = add(x, y)
    fgraph = FunctionGraph([x, y], [out])
    assert fgraph.outputs[0] is not out
    assert dprint_text(fgraph) == dprint_text(out)


def test_object_with_fgraph_attribute():
    class FakeFunction:
        def __init__(self, fgraph):
            self.fgraph = fgraph

    x, y = variables("x", "y")
    fn = FakeFunction(FunctionGraph([x, y], [add(x, y)]))
    assert dprint_text(fn) == SMALL


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("bad", [3, "x", None, {"a": 1}, Arr(), Add()])
def test_bad_object_raises_type_error(bad):
    with pytest.raises(TypeError, match="dprint expects a Variable, an Apply, a FunctionGraph"):
        dprint(bad, file="str")


def test_bad_list_item_names_its_position():
    (x,) = variables("x")
    with pytest.raises(TypeError, match=r"item 1 of the list is int 3"):
        dprint([x, 3], file="str")
    with pytest.raises(TypeError, match=r"item 0 of the tuple is list"):
        dprint(([x],), file="str")


def test_fgraph_attribute_that_is_not_a_function_graph():
    class NotAFunction:
        fgraph = "nope"

    with pytest.raises(TypeError, match="NotAFunction"):
        dprint(NotAFunction(), file="str")


def test_bad_input_prints_nothing(capsys):
    (x,) = variables("x")
    with pytest.raises(TypeError):
        dprint([x, object()])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("kwargs, error, message", [
    ({"depth": 0}, ValueError, "depth must be at least 1"),
    ({"depth": -1}, ValueError, "depth must be at least 1"),
    ({"depth": 1.5}, TypeError, "depth must be a positive int or None"),
    ({"depth": True}, TypeError, "depth must be a positive int or None"),
    ({"ids": "id"}, ValueError, "ids must be one of"),
    ({"file": 42}, TypeError, "file must be None"),
    ({"file": "out.txt"}, TypeError, "file must be None"),
    ({"max_nesting": 0}, ValueError, "max_nesting must be at least 1"),
    ({"max_nesting": "9"}, TypeError, "max_nesting must be a positive int"),
])
def test_bad_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        dprint(_small_graph(), **kwargs)


# ---------------------------------------------------------------------------
# deep graphs


def _chain(length):
    (x,) = variables("x")
    out = x
    for _ in range(length):
        out = neg(out)
    return out


def test_deep_chain_continues_below_instead_of_indenting_forever():
    out = _chain(5)
    assert dprint_text(out, max_nesting=2) == lines(
        "Neg [id A] ''",
        " |Neg [id B] ''" + " (continued below)",
        "Neg [id B] ''",
        " |Neg [id C] ''" + " (continued below)",
        "Neg [id C] ''",
        " |Neg [id D] ''" + " (continued below)",
        "Neg [id D] ''",
        " |Neg [id E] ''" + " (continued below)",
        "Neg [id E] ''",
        " |x [id F]",
    )


def test_continued_subtree_comes_before_the_next_sibling_output():
    x, y = variables("x", "y")
    assert dprint_text([neg(neg(add(x, y))), neg(y)], max_nesting=2) == lines(
        "Neg [id A] ''",
        " |Neg [id B] '' (continued below)",
        "Neg [id B] ''",
        " |Add [id C] '' (continued below)",
        "Add [id C] ''",
        " |x [id D]",
        " |y [id E]",
        "Neg [id F] ''",
        " |y [id E]",
    )


def test_max_nesting_none_indents_all_the_way():
    out = _chain(3)
    assert dprint_text(out, max_nesting=None) == lines(
        "Neg [id A] ''",
        " |Neg [id B] ''",
        "   |Neg [id C] ''",
        "     |x [id D]",
    )


def test_chain_of_20000_nodes():
    length = 20_000
    out = _chain(length)
    assert sys.getrecursionlimit() < length  # so a recursive walk would fail
    text = dprint_text(out)
    got = text.splitlines()
    # one line per Neg (the cut nodes appear twice: once marked, once as a block top)
    cut = (length - 1) // 99
    assert len(got) == length + 1 + cut
    assert got[0] == "Neg [id A] ''"
    assert got[1] == " |Neg [id B] ''"
    assert got[99] == " " + "  " * 98 + "|Neg [id CV] '' (continued below)"
    assert got[100] == "Neg [id CV] ''"
    assert got[-1].endswith("|x [id %s]" % text_module._char_id(length))
    assert max(len(line) for line in got) < 260
    # every Neg node got its own id, and every id but the cut ones shows once
    labels = [line.split("[id ")[1].split("]")[0] for line in got]
    assert len(set(labels)) == length + 1
    assert len(labels) - len(set(labels)) == cut


def test_chain_of_20000_nodes_without_splitting_and_with_depth():
    out = _chain(20_000)
    assert dprint_text(out, depth=3, max_nesting=None) == lines(
        "Neg [id A] ''",
        " |Neg [id B] ''",
        "   |Neg [id C] ''",
    )
