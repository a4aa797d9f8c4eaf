"""Type narrowing between TensorTypes: the seed's session, SpecifyShape, NarrowingTrace."""

import numpy as np
import pytest

import nbgraph
from nbgraph.core.type import NarrowingTrace
from nbgraph.tensor.basic import SpecifyShape, specify_shape
from nbgraph.tensor.type import TensorType

SEED_DPRINT = ("SpecifyShape [id A] <TensorType(float64, (2, 1))> ''\n"
               " |<TensorType(float64, (2, None))> [id B] <TensorType(float64, (2, None))>\n")


@pytest.fixture
def seed():
    v1 = TensorType("float64", (2, None))()
    v2 = TensorType("float64", (2, 1))()
    return v1, v2


# -- the seed's session, step by step ----------------------------------------

class TestSeedSession:
    def test_types_print_like_the_seed(self, seed):
        v1, v2 = seed
        assert repr(v1.type) == "TensorType(float64, (2, None))"
        assert repr(v2.type) == "TensorType(float64, (2, 1))"

    def test_not_in_same_class(self, seed):
        v1, v2 = seed
        assert v1.type.in_same_class(v2.type) is False
        assert v2.type.in_same_class(v1.type) is False

    def test_is_super(self, seed):
        v1, v2 = seed
        assert v1.type.is_super(v2.type) is True
        assert v2.type.is_super(v1.type) is False

    def test_filtering_the_specific_variable_returns_it(self, seed):
        v1, v2 = seed
        result = v1.type.filter_variable(v2)
        assert result is v2
        assert repr(result) == "<TensorType(float64, (2, 1))>"

    def test_filtering_the_general_variable_narrows_with_specify_shape(self, seed):
        v1, v2 = seed
        v3 = v2.type.filter_variable(v1)
        assert v3 is not v1
        assert isinstance(v3.owner.op, SpecifyShape)
        assert v3.owner.inputs == [v1]
        # exactly the target, not the seed's (None, 1): the spec records the improvement
        assert v3.type == TensorType("float64", (2, 1))
        assert v3.type.shape == (2, 1)
        assert repr(v3) == "SpecifyShape.0"

    def test_dprint_of_the_narrowed_variable(self, seed):
        v1, v2 = seed
        v3 = v2.type.filter_variable(v1)
        assert nbgraph.dprint(v3, print_type=True, file="str") == SEED_DPRINT

    def test_the_narrowed_variable_computes_its_input(self, seed):
        v1, v2 = seed
        v3 = v2.type.filter_variable(v1)
        f = nbgraph.function([v1], v3, linker="py")
        x = np.array([[1.5], [-2.0]])
        out = f(x)
        np.testing.assert_array_equal(out, x)
        assert out.dtype == np.float64 and out.shape == (2, 1)

    @pytest.mark.parametrize("bad", [np.zeros((2, 3)), np.zeros((2, 0))])
    def test_the_narrowed_variable_checks_the_shape_at_run_time(self, seed, bad):
        v1, v2 = seed
        v3 = v2.type.filter_variable(v1)
        f = nbgraph.function([v1], v3, linker="py")
        with pytest.raises(ValueError) as info:
            f(bad)
        text = str(info.value)
        assert "SpecifyShape" in text
        assert "(2, 1)" in text and str(bad.shape) in text

    def test_filtering_twice_builds_equal_graphs(self, seed):
        v1, v2 = seed
        a = v2.type.filter_variable(v1)
        b = v2.type.filter_variable(v1)
        assert a.owner.op == b.owner.op
        assert a.type == b.type


# -- conflicts and refusals ----------------------------------------------------

class TestConflicts:
    def test_conflicting_static_shape_refused_at_build_time(self):
        target = TensorType("float64", (2, 1))
        bad = TensorType("float64", (3, 1))("bad")
        with pytest.raises(TypeError) as info:
            target.filter_variable(bad)
        text = str(info.value)
        assert "bad" in text
        assert "TensorType(float64, (3, 1))" in text
        assert "TensorType(float64, (2, 1))" in text
        assert "dimension 0 has static size 3, not 2" in text

    def test_conflict_in_the_other_direction(self):
        target = TensorType("float64", (3, None))
        v = TensorType("float64", (2, 1))("v")
        with pytest.raises(TypeError, match="dimension 0"):
            target.filter_variable(v)

    def test_incomparable_but_compatible_types_narrow_to_both(self):
        # (2, None) and (None, 1): neither is a supertype of the other, but they
        # agree wherever both are known, so the variable narrows to (2, 1)
        target = TensorType("float64", (2, None))
        v = TensorType("float64", (None, 1))("v")
        result = target.filter_variable(v)
        assert result.type == TensorType("float64", (2, 1))
        assert result.owner.inputs[0] is v

    def test_incompatible_types_are_refused_naming_both(self):
        target = TensorType("float64", (2, None))
        v = TensorType("float64", (3, 1))("v")
        with pytest.raises(TypeError) as info:
            target.filter_variable(v)
        text = str(info.value)
        assert "variable v " in text
        assert "TensorType(float64, (3, 1))" in text
        assert "TensorType(float64, (2, None))" in text

    def test_specify_shape_refuses_static_conflicts(self):
        x = TensorType("float64", (3, 1))("x")
        with pytest.raises(ValueError) as info:
            specify_shape(x, (2, 1))
        text = str(info.value)
        assert "x" in text and "3" in text and "2" in text

    def test_specify_shape_refuses_wrong_ndim(self):
        x = TensorType("float64", (None,))("x")
        with pytest.raises(ValueError, match="dimensions"):
            specify_shape(x, (2, 1))

    def test_specify_shape_merges_static_information(self):
        x = TensorType("float64", (3, None, None))("x")
        y = specify_shape(x, (None, 4, None))
        assert y.type == TensorType("float64", (3, 4, None))

    def test_specify_shape_same_shape_is_identity(self):
        x = TensorType("float64", (2, 1))("x")
        assert specify_shape(x, (2, 1)) is x

    def test_specify_shape_runtime_checks(self):
        x = TensorType("int32", (None, None))("x")
        y = specify_shape(x, (2, 3))
        f = nbgraph.function([x], y, linker="py")
        good = np.arange(6, dtype="int32").reshape(2, 3)
        np.testing.assert_array_equal(f(good), good)
        with pytest.raises(ValueError, match="SpecifyShape"):
            f(good.T)

    def test_different_dtype_is_never_narrowed(self):
        target = TensorType("float32", (2, 1))
        v = TensorType("float64", (2, None))("v")
        with pytest.raises(TypeError) as info:
            target.filter_variable(v)
        assert "dtype float64 differs from float32" in str(info.value)


# -- the trace -----------------------------------------------------------------

class TestNarrowingTrace:
    def test_trace_of_the_seed_narrowing(self, seed):
        v1, v2 = seed
        trace = NarrowingTrace(v2.type, v1)
        result = v2.type.filter_variable(v1, trace=trace)
        assert trace.accepted and trace.error is None
        assert trace.result is result
        assert isinstance(result.owner.op, SpecifyShape)
        assert result.type == v2.type
        questions = [s.question for s in trace.steps]
        answers = {s.question: s.answer for s in trace.steps}
        assert answers["same type?"] == "no"
        assert answers["same dtype?"] == "yes"
        assert answers["same number of dimensions?"] == "yes"
        assert answers["same class (broadcast pattern)?"] == "no"
        # one step per dimension, in order
        dims = [q for q in questions if q.startswith("dimension ")]
        assert dims == ["dimension 0: target 2, variable 2", "dimension 1: target 1, variable None"]
        assert answers[dims[0]] == "equal"
        assert answers[dims[1]] == "the variable is more general"
        assert answers["is the target a supertype?"] == "no"
        assert answers["is the variable's type a supertype?"] == "yes"
        assert answers["converted by"] == "SpecifyShape"
        assert questions.index(dims[1]) < questions.index("converted by")

    def test_trace_result_identical_to_untraced_filter_variable(self, seed):
        v1, v2 = seed
        plain = v2.type.filter_variable(v1)
        trace = NarrowingTrace(v2.type, v1)
        traced = v2.type.filter_variable(v1, trace=trace)
        assert traced.type == plain.type
        assert traced.owner.op == plain.owner.op
        assert traced.owner.inputs == plain.owner.inputs
        assert nbgraph.dprint(traced, print_type=True, file="str") == \
            nbgraph.dprint(plain, print_type=True, file="str")

    def test_trace_when_the_variable_is_kept(self, seed):
        v1, v2 = seed
        trace = NarrowingTrace(v1.type, v2)
        assert v1.type.filter_variable(v2, trace=trace) is v2
        assert trace.result is v2 and trace.accepted
        answers = {s.question: s.answer for s in trace.steps}
        assert answers["dimension 1: target None, variable 1"] == "the target is more general"
        assert answers["keep the variable?"] == "yes"
        assert "converted by" not in answers

    def test_trace_of_an_equal_type_is_short(self):
        t = TensorType("float64", (2, None))
        v = t("v")
        trace = NarrowingTrace(t, v)
        assert t.filter_variable(v, trace=trace) is v
        assert [(s.question, s.answer) for s in trace.steps] == [("same type?", "yes")]

    def test_trace_of_a_refusal(self):
        target = TensorType("float64", (2, 1))
        bad = TensorType("float64", (3, 1))("bad")
        trace = NarrowingTrace(target, bad)
        with pytest.raises(TypeError) as info:
            target.filter_variable(bad, trace=trace)
        assert trace.error is info.value
        assert not trace.accepted and trace.result is None
        answers = {s.question: s.answer for s in trace.steps}
        assert answers["dimension 0: target 2, variable 3"] == "conflict"
        assert answers["dimension 1: target 1, variable 1"] == "equal"
        assert answers["is the target a supertype?"] == "no"
        assert answers["is the variable's type a supertype?"] == "no"
        assert "refused" in str(trace)

    def test_trace_of_a_dtype_refusal_stops_before_dimensions(self):
        target = TensorType("float32", (2,))
        v = TensorType("int8", (2,))("v")
        trace = NarrowingTrace(target, v)
        with pytest.raises(TypeError):
            target.filter_variable(v, trace=trace)
        answers = {s.question: s.answer for s in trace.steps}
        assert answers["same dtype?"] == "no"
        assert not any(q.startswith("dimension ") for q in answers)

    def test_trace_text(self, seed):
        v1, v2 = seed
        trace = NarrowingTrace(v2.type, v1)
        v2.type.filter_variable(v1, trace=trace)
        text = str(trace)
        lines = text.splitlines()
        assert lines[0] == ("narrowing <TensorType(float64, (2, None))> to "
                            "TensorType(float64, (2, 1))")
        assert lines[-1] == "result: SpecifyShape.0 of type TensorType(float64, (2, 1))"
        assert len(lines) == len(trace.steps) + 2
        assert "accepted" in repr(trace)
