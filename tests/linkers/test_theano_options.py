"""function()'s Theano options: mode, allow_input_downcast, In/Out, copy, maker,
pickling; and the Theano forms of shared(), tensor(), dprint and typed
constructors."""

import pickle
import warnings

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.core.rewriting import MergeRewriter
from nbgraph.linkers.function import resolve_linker
from nbgraph.linkers.io import In, Out
from nbgraph.linkers.mode import MODES, Mode, get_mode


# -- mode -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode, linker", [
    ("FAST_RUN", None), ("FAST_COMPILE", "py"), ("DebugMode", "debug"), ("PYTHON", "py"),
    (Mode(linker="py"), "py"), (Mode(linker="c|py", optimizer=None), "cvm"),
    (Mode(linker="vm", optimizer="fast_compile"), "cvm"),
])
def test_mode_names_and_objects_choose_the_linker_and_compute_the_same(mode, linker):
    x = nt.dvector("x")
    f = function([x], nt.exp(x) * 2 + 1, mode=mode)
    expected = linker or resolve_linker(None)
    assert f.linker == expected
    np.testing.assert_allclose(f(np.arange(3.0)), np.exp(np.arange(3.0)) * 2 + 1)


def test_fast_compile_leaves_out_fusion_and_fast_run_fuses():
    x = nt.dvector("x")
    out = nt.exp(x) * 2 + 1
    fused = function([x], out, mode="FAST_RUN")
    unfused = function([x], out, mode="FAST_COMPILE")
    assert len(fused.maker.fgraph.apply_nodes) == 1
    assert len(unfused.maker.fgraph.apply_nodes) == 3


def test_mode_excluding_a_stage_and_none_optimizer():
    x = nt.dvector("x")
    out = nt.exp(x) * 2 + 1
    f = function([x], out, mode=Mode(linker="py").excluding("fusion"))
    assert len(f.fgraph.apply_nodes) == 3
    assert Mode(linker="py").excluding("fusion").including("fusion") == Mode(linker="py")
    g = function([x], out, mode=Mode(linker="py", optimizer=None))
    assert len(g.fgraph.apply_nodes) == 5  # the constants' DimShuffles stay
    assert isinstance(Mode(optimizer="merge").rewrite, MergeRewriter)


def test_explicit_linker_wins_over_mode():
    x = nt.dvector("x")
    assert function([x], x + 1, mode="DebugMode", linker="py").linker == "py"


def test_unknown_and_unavailable_modes_say_what_to_use():
    x = nt.dvector("x")
    with pytest.raises(ValueError, match="unknown mode 'FAST'.*FAST_RUN"):
        function([x], x + 1, mode="FAST")
    with pytest.raises(ValueError, match="mode='JAX' is not available.*FAST_RUN"):
        function([x], x + 1, mode="JAX")
    with pytest.raises(ValueError, match="Mode\\(linker='gpu'\\)"):
        Mode(linker="gpu")
    with pytest.raises(ValueError, match="Mode\\(optimizer='o9'\\)"):
        Mode(optimizer="o9")
    with pytest.raises(TypeError, match="mode must be a Mode"):
        get_mode(3)
    assert get_mode(None) == MODES["FAST_RUN"]


# -- allow_input_downcast -------------------------------------------------------------


def test_float64_data_into_float32_input_names_the_function_option():
    x = nt.fvector("x")
    f = function([x], x * 2)
    with pytest.raises(TypeError) as info:
        f(np.arange(3.0))
    message = str(info.value)
    assert "allow_input_downcast=True" in message
    assert "allow_downcast" not in message.replace("allow_input_downcast", "")
    g = function([x], x * 2, allow_input_downcast=True)
    out = g(np.arange(3.0))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.arange(3.0, dtype="float32") * 2)
    assert g([0.1, 0.2]).dtype == np.float32  # a Python list of floats, rounded


def test_allow_input_downcast_on_integer_inputs_wraps_like_astype():
    i = nt.bvector("i")
    f = function([i], i + 1, allow_input_downcast=True)
    np.testing.assert_array_equal(f(np.array([1, 2], dtype="int64")),
                                  np.array([2, 3], dtype="int8"))


# -- In / Out -------------------------------------------------------------------------


def test_in_defaults_and_keywords_as_in_the_theano_tutorial():
    x, y, w = nt.dscalar("x"), nt.dscalar("y"), nt.dscalar("w")
    z = (x + y) * w
    f = function([x, In(y, value=1), In(w, value=2, name="w_by_name")], z)
    assert f(33) == 68.0
    assert f(33, 2) == 70.0
    assert f(33, 0, 1) == 33.0
    assert f(33, w_by_name=1) == 34.0
    assert f(33, w_by_name=1, y=0) == 33.0
    with pytest.raises(TypeError, match="missing values for \\['x'\\]"):
        f(y=1)
    with pytest.raises(TypeError, match="no input named 'w'"):
        f(1, w=3)
    with pytest.raises(TypeError, match="two values for input 'y'"):
        f(1, 2, y=3)
    assert f.defaults[1] == 1 and f.maker.inputs[2].name == "w_by_name"


def test_in_refuses_non_variables_and_update():
    with pytest.raises(TypeError, match="In\\(variable, ...\\): variable must be a Variable"):
        In(3)
    with pytest.raises(TypeError, match="update=.*shared variable"):
        In(nt.dscalar("x"), update=nt.dscalar("y"))


def test_in_mutable_and_borrow_never_overwrite_the_argument():
    x = nt.dvector("x")
    f = function([In(x, mutable=True, borrow=True)], [Out(nt.exp(x) + 1, borrow=True)])
    a = np.arange(3.0)
    r1 = f(a)[0]
    f(a + 1)
    np.testing.assert_array_equal(a, np.arange(3.0))
    np.testing.assert_allclose(r1, np.exp(np.arange(3.0)) + 1)


def test_single_out_gives_a_single_array():
    x = nt.dvector("x")
    f = function([x], Out(x * 2))
    np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 4.0])


def test_accept_inplace_and_on_unused_input():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], x + 1, accept_inplace=True, on_unused_input="ignore")
    np.testing.assert_array_equal(f([1.0], [5.0]), [2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function([x, y], x + 1, on_unused_input="warn")
    assert any("not used" in str(w.message) for w in caught)


# -- copy, maker, pickling ------------------------------------------------------------


def _accumulator():
    state = nt.shared(np.array(0.0), name="state")
    inc = nt.dscalar("inc")
    f = function([inc], state, updates=[(state, state + inc)])
    return state, inc, f


def test_copy_without_shared_memory_has_its_own_state():
    state, inc, f = _accumulator()
    f(1.0)
    g = f.copy()
    g(10.0)
    assert state.get_value() == 1.0
    new_state = g.maker.fgraph.inputs[-1]
    assert g(0.0) == 11.0 and new_state is not state


def test_copy_sharing_memory_and_swapping_state():
    state, inc, f = _accumulator()
    g = f.copy(share_memory=True)
    g(5.0)
    assert state.get_value() == 5.0
    other = nt.shared(np.array(100.0), name="other")
    h = f.copy(swap={state: other})
    assert h(1.0) == 100.0 and other.get_value() == 101.0 and state.get_value() == 5.0
    with pytest.raises(TypeError, match="must be equal"):
        f.copy(swap={state: nt.shared(np.zeros(2))})


def test_pickled_function_recompiles_and_keeps_shared_state():
    state, inc, f = _accumulator()
    f(2.0)
    g = pickle.loads(pickle.dumps(f))
    assert g(3.0) == 2.0 and g(0.0) == 5.0
    assert state.get_value() == 2.0  # the copy holds its own shared variable
    x = nt.dmatrix("x")
    w = nt.shared(np.ones((3, 2)), name="w")
    out = nt.tanh(x.dot(w)).sum() + x[1:, 0].mean()
    k = function([x], out, mode="FAST_COMPILE")
    k2 = pickle.loads(pickle.dumps(k))
    data = np.arange(6.0).reshape(2, 3)
    assert k2(data) == k(data) and k2.linker == "py"


def test_pickled_graph_compiles_to_the_same_values():
    x = nt.dmatrix("x")
    out = (nt.exp(x) / nt.sum(nt.exp(x), axis=1, keepdims=True)).max()
    x2, out2 = pickle.loads(pickle.dumps((x, out)))
    data = np.random.default_rng(0).normal(size=(3, 4))
    assert function([x2], out2)(data) == function([x], out)(data)


def test_fgraph_dprint_with_destroy_map():
    x = nt.dvector("x")
    f = function([x], nt.exp(x * 2) + nt.log(x), mode=Mode(optimizer="fast_run").excluding(
        "fusion"))
    text = f.dprint(file="str", print_destroy_map=True)
    assert " d={0: [0]}" in text
    assert "d=" not in x.dprint(file="str", print_destroy_map=True)
    assert (x * 2).dprint(file="str") == nbgraph.dprint(x * 2, file="str").replace(
        "[id A]", "[id A]")


# -- shared, tensor, typed constructors -----------------------------------------------


def test_shared_borrow_semantics():
    a = np.arange(3.0)
    s = nt.shared(a, borrow=True)
    assert s.get_value(borrow=True) is a
    c = nt.shared(a)
    assert not np.shares_memory(c.get_value(borrow=True), a)
    got = s.get_value()
    assert got is not a and np.array_equal(got, a)
    assert s.get_value(borrow=True, return_internal_type=True) is a
    b = np.ones(3)
    s.set_value(b, borrow=True)
    assert s.get_value(borrow=True) is b
    s.set_value(b)
    assert s.get_value(borrow=True) is not b
    with pytest.raises(TypeError, match="strict=True"):
        nt.shared([1.0, 2.0], strict=True)
    assert nt.shared(np.zeros((1, 3)), broadcastable=(True, False)).type.shape == (1, None)
    # Theano's positional order: value, name, strict
    assert nt.shared(np.zeros(2), "w", True).name == "w"


def test_set_value_refuses_downcasts_and_converts_safe_data():
    s = nt.shared(np.arange(3.0, dtype="float32"), borrow=True)
    with pytest.raises(TypeError, match="cannot accurately hold"):
        s.set_value(np.arange(3), borrow=True)  # int64 -> float32 is not safe
    b = np.arange(3, dtype="int16")
    s.set_value(b, borrow=True)  # safe: converted, so it cannot be b itself
    assert s.get_value().dtype == np.float32 and s.get_value(borrow=True) is not b


def test_tensor_both_spellings():
    assert nt.tensor("float32", (2, None), "a").type == nt.TensorType("float32", (2, None))
    v = nt.tensor("x", shape=(None, 3), dtype="int32")
    assert v.name == "x" and v.type == nt.TensorType("int32", (None, 3))
    assert nt.tensor("d", shape=(2,)).name == "d"  # a one-letter name is a name
    assert nt.tensor(dtype="float64", shape=(), name="s").name == "s"
    assert nt.tensor(np.float32, (None,)).dtype == "float32"
    with pytest.raises(TypeError, match="needs a shape"):
        nt.tensor("x")
    with pytest.raises(TypeError, match="as keywords after the name"):
        nt.tensor("x", (2,))
    with pytest.raises(TypeError, match="two values for 'name'"):
        nt.tensor("x", shape=(2,), name="y")


def test_typed_constructors_compare_as_types():
    x = nt.dscalar("x")
    assert x.type == nt.dscalar and nt.dscalar == x.type
    assert nt.dmatrix("m").type == nt.dmatrix and nt.dmatrix != nt.fmatrix
    assert hash(nt.dmatrix) == hash(nt.TensorType("float64", (None, None)))
    assert nt.fmatrix("a", shape=(2, 3)).type.shape == (2, 3)
    assert pickle.loads(pickle.dumps(nt.ivector)) == nt.ivector
    assert nt.ivector("i").type.filter([1, 2]).dtype == np.int32


def test_copy_gives_random_streams_their_own_state():
    from nbgraph.tensor.random import RandomStream

    srng = RandomStream(seed=3)
    f = function([], srng.normal(size=(3,)))
    g = f.copy()
    first = f()
    np.testing.assert_array_equal(g(), first)  # the copy starts from the same state
    assert not np.array_equal(f(), first)  # and each advances its own
    h = g.copy()
    np.testing.assert_array_equal(h(), g())
    k = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(k(), g())


def test_pickled_function_keeps_defaults_names_and_mode():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    f = function([x, In(y, value=2.0, name="yy")], x * y, mode="FAST_COMPILE")
    g = pickle.loads(pickle.dumps(f))
    assert g(3.0) == 6.0 and g(3.0, yy=5) == 15.0 and g.linker == "py"
