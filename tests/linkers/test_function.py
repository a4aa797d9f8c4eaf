"""function() and the Function it returns (with the default linker)."""

import re
import warnings

import numpy as np
import pytest

import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.core.fgraph import FunctionGraph, MissingInputError
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.display.text import dprint
from nbgraph.linkers import Function, UnusedInputError


# -- the seed's examples --------------------------------------------------------------


def test_seed_constant_plus_fscalar():
    a = nt.constant(1.5)
    b = nt.fscalar("b")
    c = a + b
    f = function([b], [c])
    result = f(2.5)
    assert isinstance(result, list) and len(result) == 1
    assert result == [4.0]
    assert 4.0 == f(2.5)[0]
    assert result[0].dtype == np.dtype("float32")  # 1.5 is weak: float32 + 1.5 stays float32


def test_seed_constant_as_only_input_reports_the_missing_variable():
    a = nt.constant(1.5)
    b = nt.fscalar("b")
    c = a + b
    with pytest.raises(MissingInputError) as info:
        function([a], [c])
    err = info.value
    assert err.variable is b
    assert err.path[0] is c and err.path[-1] is b
    message = str(err)
    assert "b" in message
    # the message shows the path from the output down to b
    assert "path from the output down to it" in message
    assert message.index("Elemwise{add}") < message.rindex("b")


def test_seed_constant_listed_as_input_is_refused():
    a = nt.constant(1.5)
    b = nt.fscalar("b")
    c = a + b
    with pytest.raises(TypeError, match=r"input 0 of function\(\), 1\.5, is a Constant"):
        function([a, b], [c])


def test_seed_missing_input_through_a_longer_path():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = nt.exp(x * 2.0) + nt.sum(y)
    with pytest.raises(MissingInputError) as info:
        function([x], out)
    assert info.value.variable is y
    text = str(info.value)
    assert re.search(r"Elemwise\{add\}.0 -> .*Sum.* -> y", text), text


# -- single output vs list ------------------------------------------------------------


def test_single_output_returns_an_array_list_returns_a_list():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    single = function([x, y], x + y)
    out = single(16.3, 12.1)
    assert isinstance(out, np.ndarray) and out.shape == () and out == np.float64(28.4)
    listed = function([x, y], [x + y, x * y])
    out = listed(2.0, 3.0)
    assert isinstance(out, list) and [float(v) for v in out] == [5.0, 6.0]
    one_in_list = function([x, y], [x - y])
    assert isinstance(one_in_list(2.0, 3.0), list)
    tupled = function([x], (x * 2,))
    assert isinstance(tupled(2.0), list)


def test_function_attributes_and_dprint():
    x, y = nt.dvector("x"), nt.dvector("y")
    z = (x + y) * 2.0
    f = function([x, y], z, name="scaled")
    assert isinstance(f, Function)
    assert f.inputs == [x, y] and f.inputs[0] is x and f.inputs[1] is y
    assert f.outputs == [z] and f.outputs[0] is z
    assert isinstance(f.fgraph, FunctionGraph)
    # the compiled graph is a copy: the caller's variables are not in it
    assert x not in f.fgraph.variables and z not in f.fgraph.variables
    assert [v.name for v in f.fgraph.inputs] == ["x", "y"]
    text = f.dprint(file="str")
    assert text == dprint(f.fgraph, file="str") == dprint(f, file="str")
    assert text.splitlines()[0].startswith("%s [id A]" % f.fgraph.outputs[0].owner.op)
    assert "x [id" in text and "y [id" in text
    assert f.linker in ("py", "cvm", "c", "debug")
    assert "scaled" in repr(f) and "linker=%s" % f.linker in repr(f)


def test_dprint_prints_to_stdout_by_default(capsys):
    x = nt.dscalar("x")
    f = function([x], x * 3.0)
    f.dprint()
    out = capsys.readouterr().out
    assert out == f.dprint(file="str") + "\n" or out == f.dprint(file="str")
    assert "Elemwise{mul} [id A]" in out and "x [id B]" in out


# -- errors that name the variable ----------------------------------------------------


def test_wrong_number_of_arguments():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    f = function([x, y], x + y, name="adder")
    with pytest.raises(TypeError, match=r"'adder' expects 2 arguments \(x, y\), got 1"):
        f(1.0)
    with pytest.raises(TypeError, match=r"expects 2 arguments \(x, y\), got 3"):
        f(1.0, 2.0, 3.0)


def test_argument_the_type_rejects_names_position_name_type_and_value():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], x + y)
    with pytest.raises(TypeError) as info:
        f([1.0], "abc")
    message = str(info.value)
    assert "bad argument 1 (y)" in message
    assert "expected TensorType(float64, (None,))" in message
    assert "got str 'abc'" in message
    with pytest.raises(TypeError) as info:
        f(np.ones((2, 2)), [1.0])
    message = str(info.value)
    assert "bad argument 0 (x)" in message
    assert "ndarray of shape (2, 2) and dtype float64" in message
    assert "expects ndim 1, got an array with ndim 2" in message


def test_argument_that_would_lose_precision_is_refused():
    i = nt.ivector("i")
    f = function([i], i + 1)
    with pytest.raises(TypeError, match=r"bad argument 0 \(i\).*TensorType\(int32"):
        f(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(f(np.array([1, 2], dtype="int8")), [2, 3])


def test_static_shape_is_checked_on_call():
    x = nt.tensor("float64", (2,), "x")
    f = function([x], x * 2.0)
    with pytest.raises(TypeError, match=r"bad argument 0 \(x\).*size 2 in dimension 0"):
        f(np.ones(3))


@pytest.mark.parametrize("policy", ["raise", "warn", "ignore"])
def test_unused_input_policy(policy):
    x, y = nt.dscalar("x"), nt.dscalar("y")
    if policy == "raise":
        with pytest.raises(UnusedInputError, match=r"input 1 of function\(\), y, is not used"):
            function([x, y], x * 2.0, on_unused_input=policy)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = function([x, y], x * 2.0, on_unused_input=policy)
    messages = [str(w.message) for w in caught]
    if policy == "warn":
        assert any("y, is not used" in m for m in messages), messages
    else:
        assert not any("not used" in m for m in messages)
    assert f(3.0, 100.0) == 6.0


def test_unused_input_is_raise_by_default_and_policy_is_validated():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    with pytest.raises(UnusedInputError, match="y"):
        function([x, y], x)
    with pytest.raises(ValueError, match="on_unused_input"):
        function([x], x, on_unused_input="sometimes")


def test_duplicate_input():
    x = nt.dscalar("x")
    with pytest.raises(ValueError, match=r"input 1 of function\(\), x, is listed twice"):
        function([x, x], x * 2.0)


def test_non_variable_input():
    x = nt.dscalar("x")
    with pytest.raises(TypeError, match=r"input 1 of function\(\) must be a Variable "
                                        r"\(or In\(variable\)\), got int 3"):
        function([x, 3], x * 2.0)
    with pytest.raises(TypeError, match="list of input Variables"):
        function(x, x * 2.0)


def test_shared_variable_as_input():
    s = nt.shared(np.zeros(3), "weights")
    with pytest.raises(TypeError, match=r"weights, is a shared variable"):
        function([s], s * 2.0)


def test_intermediate_as_input_is_refused():
    x = nt.dscalar("x")
    y = x * 2.0
    with pytest.raises(TypeError, match="computed by Elemwise{mul}"):
        function([y], y + 1.0)


def test_bad_rewrite_and_linker_names():
    x = nt.dscalar("x")
    with pytest.raises(ValueError, match="rewrite"):
        function([x], x, rewrite="aggressive")
    with pytest.raises(ValueError, match="unknown linker 'nope'"):
        function([x], x, linker="nope")


# -- calling --------------------------------------------------------------------------


def test_keyword_arguments_by_input_name():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    f = function([x, y], x - y)
    assert f(x=10.0, y=4.0) == 6.0
    assert f(y=4.0, x=10.0) == 6.0
    assert f(10.0, y=4.0) == 6.0
    with pytest.raises(TypeError, match="no input named 'z'"):
        f(1.0, z=2.0)
    with pytest.raises(TypeError, match="two values for input 'x'"):
        f(1.0, x=2.0)
    with pytest.raises(TypeError, match=r"missing values for \['x'\]"):
        f(y=1.0)


def test_keyword_argument_for_an_ambiguous_name_is_refused():
    a, b = nt.dscalar("v"), nt.dscalar("v")
    f = function([a, b], a - b)
    assert f(5.0, 2.0) == 3.0
    with pytest.raises(TypeError, match="2 inputs named 'v'"):
        f(5.0, v=2.0)


class _Record(Op):
    """Identity that remembers the value it was given (to see what reaches perform)."""

    __props__ = ()

    def __init__(self):
        self.seen = []

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        self.seen.append(inputs[0])
        output_storage[0][0] = np.array(inputs[0], dtype=node.outputs[0].type.dtype)


def test_trust_input_skips_the_checks():
    x = nt.dvector("x")
    rec_checked, rec_trusted = _Record(), _Record()
    checked = function([x], rec_checked(x), linker="py")
    trusted = function([x], rec_trusted(x), trust_input=True, linker="py")
    assert trusted.trust_input and not checked.trust_input
    value = np.array([1, 2], dtype="float32")
    checked(value)
    trusted(value)
    # checked: the float32 array was upcast to the declared float64 first
    assert rec_checked.seen[-1] is not value and rec_checked.seen[-1].dtype == np.float64
    # trusted: the value reaches the Op as it is (no filter, no upcast)
    assert rec_trusted.seen[-1] is value
    # and a value of the wrong rank is not refused at the argument stage
    with pytest.raises(TypeError, match="bad argument"):
        checked(np.ones((2, 2)))
    trusted(np.ones((2, 2)))
    assert rec_trusted.seen[-1].shape == (2, 2)
    np.testing.assert_array_equal(trusted(np.array([1.0, 2.0])), [1.0, 2.0])


# -- updates and givens ---------------------------------------------------------------


def test_updates_increment_a_counter():
    count = nt.shared(np.array(0, dtype="int64"), "count")
    tick = function([], count, updates=[(count, count + 1)])
    seen = [int(tick()) for _ in range(5)]
    assert seen == [0, 1, 2, 3, 4]  # outputs read the value before the update
    assert count.get_value() == 5


def test_updates_as_dict_with_an_input():
    total = nt.shared(np.zeros(2), "total")
    x = nt.dvector("x")
    acc = function([x], total + x, updates={total: total + x})
    first = acc([1.0, 2.0])
    second = acc([10.0, 20.0])
    np.testing.assert_array_equal(first, [1.0, 2.0])
    np.testing.assert_array_equal(second, [11.0, 22.0])
    np.testing.assert_array_equal(total.get_value(), [11.0, 22.0])
    # the returned array and the shared value are not one array
    second[0] = -1.0
    np.testing.assert_array_equal(total.get_value(borrow=True), [11.0, 22.0])


def test_all_updates_read_the_old_values():
    a = nt.shared(np.array(1.0), "a")
    b = nt.shared(np.array(10.0), "b")
    swap = function([], [], updates=[(a, b), (b, a)])
    assert swap() == []
    assert (a.get_value(), b.get_value()) == (10.0, 1.0)
    swap()
    assert (a.get_value(), b.get_value()) == (1.0, 10.0)


def test_update_with_an_input_value_does_not_alias_the_callers_array():
    s = nt.shared(np.zeros(2), "s")
    x = nt.dvector("x")
    store = function([x], [], updates=[(s, x)])
    value = np.array([1.0, 2.0])
    store(value)
    value[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def test_update_whose_type_does_not_fit_raises_type_error():
    counter = nt.shared(np.array(0, dtype="int32"), "counter")
    with pytest.raises(TypeError) as info:
        function([], [], updates=[(counter, counter + 1.5)])
    message = str(info.value)
    assert "counter" in message and "int32" in message and "float64" in message
    v = nt.dvector("v")
    s = nt.shared(np.array(0.0), "s")
    with pytest.raises(TypeError, match=r"update of s .*ndim 1 instead of 0"):
        function([v], [], updates=[(s, v)])


def test_update_target_must_be_shared_and_unique():
    x = nt.dscalar("x")
    s = nt.shared(np.array(0.0), "s")
    with pytest.raises(TypeError, match="shared variables"):
        function([x], [], updates=[(x, x + 1.0)])
    with pytest.raises(ValueError, match="updated twice"):
        function([], [], updates=[(s, s + 1.0), (s, s + 2.0)])


def test_shared_variable_read_implicitly_sees_set_value():
    w = nt.shared(np.array([1.0, 2.0]), "w")
    x = nt.dvector("x")
    f = function([x], x * w)
    np.testing.assert_array_equal(f([1.0, 1.0]), [1.0, 2.0])
    w.set_value(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(f([1.0, 1.0]), [3.0, 4.0])


def test_givens_substitute_before_compiling():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    z = x * 2.0
    f = function([y], z, givens={x: y + 1.0})
    assert f(1.0) == 4.0
    assert all(v.name != "x" for v in f.fgraph.variables)
    # givens with a shared variable; pairs work as well as a dict
    s = nt.shared(np.array(5.0), "s")
    g = function([], z, givens=[(x, s)])
    assert g() == 10.0
    # the caller's graph is untouched
    assert z.owner.inputs[0] is x


def test_givens_of_an_incompatible_type_raise():
    x = nt.dscalar("x")
    v = nt.dvector("v")
    with pytest.raises(TypeError):
        function([v], x * 2.0, givens={x: v})


# -- returned values are never overwritten --------------------------------------------


def test_returned_values_survive_later_calls():
    x = nt.dvector("x")
    f = function([x], [x * 2.0, x + 1.0])
    first = f(np.array([1.0, 2.0]))
    kept = [v.copy() for v in first]
    second = f(np.array([10.0, 20.0]))
    for a, b in zip(first, kept, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(second[0], [20.0, 40.0])
    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_output_that_is_an_input_is_a_copy():
    x = nt.dvector("x")
    f = function([x], [x, x * 2.0])
    arg = np.array([1.0, 2.0])
    first = f(arg)
    assert first[0] is not arg
    first[0][0] = 50.0
    np.testing.assert_array_equal(arg, [1.0, 2.0])
    second = f(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(first[0], [50.0, 2.0])
    np.testing.assert_array_equal(second[0], [3.0, 4.0])


def test_output_that_is_a_constant_is_a_writable_copy_every_call():
    x = nt.dvector("x")
    k = nt.constant(np.array([1.0, 2.0]))
    f = function([x], [x * 2.0, k])
    first = f(np.array([1.0]))
    assert first[1].flags.writeable
    first[1][0] = -7.0
    second = f(np.array([5.0]))
    np.testing.assert_array_equal(second[1], [1.0, 2.0])  # not None, not -7
    np.testing.assert_array_equal(k.data, [1.0, 2.0])
    assert not k.data.flags.writeable
    third = f(np.array([6.0]))
    assert third[1] is not second[1]
    np.testing.assert_array_equal(first[1], [-7.0, 2.0])


def test_output_folded_into_a_constant_is_returned_on_every_call():
    f = function([], nt.constant(2.0) * 3.0)
    assert f.fgraph.apply_nodes == set()  # folded to a constant at compile time
    values = [f() for _ in range(3)]
    assert [float(v) for v in values] == [6.0, 6.0, 6.0]
    values[0][...] = 0.0
    assert f() == 6.0


def test_output_that_is_a_shared_variable_is_a_copy():
    s = nt.shared(np.array([1.0, 2.0]), "s")
    f = function([], s)
    out = f()
    out[0] = 100.0
    np.testing.assert_array_equal(s.get_value(borrow=True), [1.0, 2.0])


def test_the_same_output_twice_gives_two_arrays():
    x = nt.dvector("x")
    f = function([x], [nt.exp(x), nt.exp(x)])  # merged into one variable
    assert f.fgraph.outputs[0] is f.fgraph.outputs[1]
    a, b = f(np.array([0.0, 1.0]))
    assert a is not b
    a[0] = 5.0
    assert b[0] == 1.0


# -- rewrite=None vs "fast" -----------------------------------------------------------


def test_rewrite_none_leaves_the_graph_as_built():
    x = nt.dvector("x")
    z = (x * 1) + nt.exp(x) + nt.exp(x)
    plain = function([x], z, rewrite=None)
    fast = function([x], z)
    assert plain.fgraph.history == []
    assert dprint(plain.fgraph, file="str") == dprint(z, file="str")
    assert len(plain.fgraph.apply_nodes) > len(fast.fgraph.apply_nodes)
    found = [h.reason for h in fast.fgraph.history]
    assert "merge" in found and "mul_by_one" in found
    plain_ops = [str(n.op) for n in plain.fgraph.toposort()]
    assert plain_ops.count("Elemwise{exp}") == 2 and "DimShuffle{x}" in plain_ops
    value = np.array([0.0, 1.0, -2.0])
    np.testing.assert_allclose(plain(value), fast(value))
    np.testing.assert_allclose(fast(value), value + 2 * np.exp(value))


def test_trust_input_can_be_switched_after_compiling():
    x = nt.dvector("x")
    f = function([x], x * 2)
    with pytest.raises(TypeError, match="bad argument 0"):
        f("not an array")
    f.trust_input = True
    np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    f.trust_input = False
    with pytest.raises(TypeError, match="bad argument 0"):
        f("not an array")
    np.testing.assert_array_equal(f([1.0]), [2.0])


def test_function_repr_uses_the_callers_names_and_lists_updates():
    import nbgraph as ng_
    x = nt.dvector("x")
    w = ng_.shared(np.ones(3), "W")
    cost = (x * w).sum()
    cost.name = "cost"
    f = ng_.function([x], [cost, x + 1], updates=[(w, w - x)])
    assert repr(f).startswith("<Function (x) -> (cost, out[1]), updates W, linker=")
    assert repr(ng_.function([x], x * 2)).startswith("<Function (x) -> (out), linker=")
