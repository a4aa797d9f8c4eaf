"""Variable.eval: compile once, reuse, bounded, never stale."""

import numpy as np
import pytest

import nbgraph.tensor as nt
from nbgraph.core.fgraph import FunctionGraph, MissingInputError
from nbgraph.linkers import eval_cache


@pytest.fixture
def stats():
    """Counter deltas since the test started (the counters are process-wide)."""
    start = eval_cache.cache_stats()

    def delta():
        now = eval_cache.cache_stats()
        return {k: now[k] - start[k] for k in ("hits", "compiles", "shared_hits")}

    return delta


def test_seed_example():
    x = nt.dscalar("x")
    y = nt.dscalar("y")
    z = x + y
    result = z.eval({x: 16.3, y: 12.1})
    assert isinstance(result, np.ndarray) and result.dtype == np.float64
    assert result.shape == ()
    assert result == np.float64(16.3) + np.float64(12.1)
    assert repr(result) == "array(28.4)"


def test_second_call_is_a_hit_without_compiling(stats):
    x, y = nt.dvector("x"), nt.dvector("y")
    z = x * y + 1.0
    np.testing.assert_array_equal(z.eval({x: [1.0, 2.0], y: [3.0, 4.0]}), [4.0, 9.0])
    assert stats() == {"hits": 0, "compiles": 1, "shared_hits": 0}
    np.testing.assert_array_equal(z.eval({x: [0.0, 1.0], y: [5.0, 5.0]}), [1.0, 6.0])
    assert stats() == {"hits": 1, "compiles": 1, "shared_hits": 0}
    for k in range(5):
        z.eval({x: [float(k)], y: [1.0]})
    assert stats()["compiles"] == 1 and stats()["hits"] == 6


def test_keys_may_be_names(stats):
    x, y = nt.dscalar("x"), nt.dscalar("y")
    z = x - y
    assert z.eval({"x": 5.0, "y": 2.0}) == 3.0
    assert z.eval({"x": 7.0, "y": 2.0}) == 5.0
    assert z.eval({x: 7.0, "y": 1.0}) == 6.0
    assert stats()["hits"] >= 1


def test_ambiguous_name_is_a_value_error():
    a, b = nt.dscalar("x"), nt.dscalar("x")
    z = a + b
    with pytest.raises(ValueError, match="the name 'x' is ambiguous"):
        z.eval({"x": 1.0})
    assert z.eval({a: 1.0, b: 2.0}) == 3.0


def test_unknown_name_is_a_key_error():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    z = x + y
    with pytest.raises(KeyError, match="no input named 'q'"):
        z.eval({"q": 1.0, "y": 2.0})


def test_bad_keys_and_missing_inputs():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    z = x + y
    with pytest.raises(TypeError, match="Variables or their names"):
        z.eval({3: 1.0})
    with pytest.raises(TypeError, match="dict"):
        z.eval([1.0, 2.0])
    with pytest.raises(MissingInputError, match="input y is needed"):
        z.eval({x: 1.0})


def test_graph_without_inputs_evaluates_with_no_arguments():
    k = nt.constant(np.array([1.0, 2.0]))
    out = (k * 3.0).sum()
    assert out.eval() == 9.0
    assert out.eval({}) == 9.0
    assert out.eval() == 9.0
    # a bare constant, evaluated twice, gives its value both times (writable copies)
    first = k.eval()
    second = k.eval()
    np.testing.assert_array_equal(second, [1.0, 2.0])
    first[0] = 100.0
    np.testing.assert_array_equal(k.eval(), [1.0, 2.0])
    np.testing.assert_array_equal(k.data, [1.0, 2.0])


def test_shared_variables_are_read_at_call_time():
    s = nt.shared(np.array(3.0), "s")
    out = s * 2.0
    assert out.eval() == 6.0
    s.set_value(4.0)
    assert out.eval() == 8.0


def test_eval_result_is_not_overwritten_later():
    x = nt.dvector("x")
    z = x * 2.0
    first = z.eval({x: [1.0, 2.0]})
    z.eval({x: [5.0, 6.0]})
    np.testing.assert_array_equal(first, [2.0, 4.0])


def test_cache_is_bounded(monkeypatch, stats):
    monkeypatch.setattr(eval_cache, "MAX_ENTRIES", 3)
    x = nt.dscalar("x")
    for k in range(10):
        out = x * float(k + 100)  # a distinct constant each time: a distinct graph
        assert out.eval({x: 2.0}) == 2.0 * (k + 100)
        assert eval_cache.cache_stats()["entries"] <= 3
    assert stats()["compiles"] == 10
    assert eval_cache.cache_stats()["entries"] == 3


def test_per_variable_cache_is_bounded():
    x, y = nt.dscalar("x"), nt.dscalar("y")
    z = x + y
    for k in range(eval_cache._PER_VARIABLE + 5):
        keys = [x, y] if k % 2 else [y, x]
        z.eval({keys[0]: 1.0, keys[1]: float(k)})
        z.eval({"x": 1.0, y: float(k)})
    assert len(z._eval_cache) <= eval_cache._PER_VARIABLE


def test_never_stale_after_an_in_place_edit(stats):
    a, b = nt.dscalar("a"), nt.dscalar("b")
    z = (a + b) * 2.0
    assert z.eval({a: 5.0, b: 2.0}) == 14.0
    fg = FunctionGraph([a, b], [z], clone=False)
    fg.replace(z.owner.inputs[0], a - b, reason="test edit")
    before = stats()["compiles"]
    assert z.eval({a: 5.0, b: 2.0}) == 6.0  # recompiled for the new graph
    assert stats()["compiles"] == before + 1
    assert z.eval({a: 6.0, b: 2.0}) == 8.0  # and then reused
    assert stats()["compiles"] == before + 1


def test_unrelated_edits_do_not_force_a_recompile(stats):
    x = nt.dscalar("x")
    z = nt.exp(x) + 1.0
    z.eval({x: 0.0})
    p, q = nt.dscalar("p"), nt.dscalar("q")
    other = p * q
    FunctionGraph([p, q], [other], clone=False).replace(other.owner.inputs[0], q)
    assert z.eval({x: 0.0}) == 2.0
    assert stats()["compiles"] == 1
    assert stats()["hits"] == 1


def test_structurally_equal_graphs_share_one_function(stats):
    first = nt.dvector("v")
    out1 = nt.exp(first) * 3.0 + 1.0
    np.testing.assert_allclose(out1.eval({first: [0.0]}), [4.0])
    second = nt.dvector("v")  # typed again, say in another cell
    out2 = nt.exp(second) * 3.0 + 1.0
    np.testing.assert_allclose(out2.eval({second: [1.0]}), [3.0 * np.e + 1.0])
    assert stats() == {"hits": 0, "compiles": 1, "shared_hits": 1}
    # the key covers constants' values and types: these do not share
    third = nt.dvector("v")
    np.testing.assert_allclose((nt.exp(third) * 4.0 + 1.0).eval({third: [0.0]}), [5.0])
    fourth = nt.fvector("v")
    out4 = nt.exp(fourth) * 3.0 + 1.0
    assert out4.eval({fourth: np.array([0.0], dtype="float32")}).dtype == np.float32
    assert stats()["compiles"] == 3


def test_structural_key():
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    k1 = eval_cache.structural_key(x.dot(y).sum(axis=0), [x, y])
    x2, y2 = nt.dmatrix("x2"), nt.dmatrix("y2")
    assert eval_cache.structural_key(x2.dot(y2).sum(axis=0), [x2, y2]) == k1
    assert eval_cache.structural_key(y2.dot(x2).sum(axis=0), [x2, y2]) != k1
    assert eval_cache.structural_key(x2.dot(y2).sum(axis=1), [x2, y2]) != k1


def test_clear_cache():
    x = nt.dscalar("x")
    (x + 123.25).eval({x: 1.0})
    assert eval_cache.cache_stats()["entries"] >= 1
    eval_cache.clear_cache()
    assert eval_cache.cache_stats()["entries"] == 0
    assert (x + 123.25).eval({x: 1.0}) == 124.25
