"""Tests for nbgraph.display.narrowing: explain_narrowing, trace text/HTML, history display.

The main case is the seed's narrowing session (aesara-types.txt):
``v1: TensorType(float64, (2, None))``, ``v2: TensorType(float64, (2, 1))``;
``v1.type.filter_variable(v2)`` keeps v2, ``v2.type.filter_variable(v1)``
inserts a SpecifyShape.
"""

import re

import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core import Apply, FunctionGraph, Op, equal_computations
from nbgraph.core.type import NarrowingTrace
from nbgraph.display import (
    dprint_text,
    explain_narrowing,
    failing_step,
    history_table,
    trace_html,
    trace_text,
)
from nbgraph.display import rich
from nbgraph.display.narrowing import (
    HistoryView,
    history_html,
    replacement_html,
    replacement_text,
    trace_summary,
)
from nbgraph.display.picture import unwrap_pictures
from nbgraph.tensor import TensorType

F64_2N = TensorType("float64", (2, None))
F64_21 = TensorType("float64", (2, 1))
F64_31 = TensorType("float64", (3, 1))

SEED_QUESTIONS = [
    ("same type?", "no"),
    ("same dtype?", "yes"),
    ("same number of dimensions?", "yes"),
    ("same class (broadcast pattern)?", "no"),
    ("dimension 0: target 2, variable 2", "equal"),
    ("dimension 1: target 1, variable None", "the variable is more general"),
    ("is the target a supertype?", "no"),
    ("is the variable's type a supertype?", "yes"),
    ("converted by", "SpecifyShape"),
]


@pytest.fixture(autouse=True)
def fresh_cache():
    rich.clear_cache()
    yield
    rich.clear_cache()


def test_seed_session_v2_is_kept():
    v1, v2 = F64_2N(), F64_21()
    trace = explain_narrowing(v1.type, v2)
    assert isinstance(trace, NarrowingTrace)
    assert trace.result is v2
    assert trace.result is v1.type.filter_variable(v2)
    assert trace.error is None and trace.accepted
    questions = [s.question for s in trace.steps]
    assert questions[0] == "same type?" and questions[-1] == "keep the variable?"
    assert trace.steps[-1].answer == "yes"
    assert trace_summary(trace) == "kept: its type is as or more specific than the target"
    assert repr(trace.result) == "<TensorType(float64, (2, 1))>"


def test_seed_session_v3_steps_and_result():
    v1, v2 = F64_2N(), F64_21()
    trace = explain_narrowing(v2.type, v1)
    assert [(s.question, s.answer) for s in trace.steps] == SEED_QUESTIONS
    assert trace.steps[-1].detail == "result type TensorType(float64, (2, 1))"
    v3 = v2.type.filter_variable(v1)
    # the same decision as filter_variable's, node for node
    assert equal_computations([trace.result], [v3])
    assert trace.result.owner.inputs[0] is v1
    assert repr(trace.result) == "SpecifyShape.0"
    assert trace.result.type == F64_21
    assert dprint_text(trace.result, print_type=True) == (
        "SpecifyShape [id A] <TensorType(float64, (2, 1))> ''\n"
        " |<TensorType(float64, (2, None))> [id B] <TensorType(float64, (2, None))>\n")
    assert trace.error is None and failing_step(trace) is None
    assert trace_summary(trace) == "converted by SpecifyShape"


def test_seed_session_v3_text():
    v1, v2 = F64_2N(), F64_21()
    text = trace_text(explain_narrowing(v2.type, v1))
    assert text.splitlines() == [
        "narrowing <TensorType(float64, (2, None))> to TensorType(float64, (2, 1))",
        "1. same type? no - target TensorType(float64, (2, 1)), variable "
        "TensorType(float64, (2, None))",
        "2. same dtype? yes - float64 vs float64",
        "3. same number of dimensions? yes - 2 vs 2",
        "4. same class (broadcast pattern)? no - (False, True) vs (False, False)",
        "5. dimension 0: target 2, variable 2: equal",
        "6. dimension 1: target 1, variable None: the variable is more general",
        "7. is the target a supertype? no",
        "8. is the variable's type a supertype? yes",
        "9. converted by SpecifyShape - result type TensorType(float64, (2, 1))",
        "result: SpecifyShape.0 of type TensorType(float64, (2, 1)), converted by "
        "SpecifyShape",
    ]


def test_refused_3_1_to_2_1_names_the_failing_step():
    v2, w = F64_21(), F64_31()
    trace = explain_narrowing(v2.type, w)  # must not raise
    assert trace.result is None and not trace.accepted
    assert isinstance(trace.error, TypeError)
    with pytest.raises(TypeError) as info:
        v2.type.filter_variable(w)
    assert str(trace.error) == str(info.value)
    assert "dimension 0 has static size 3, not 2" in str(trace.error)
    answers = {s.question: s.answer for s in trace.steps}
    assert answers["dimension 0: target 2, variable 3"] == "conflict"
    assert answers["is the target a supertype?"] == "no"
    assert answers["is the variable's type a supertype?"] == "no"
    number, step = failing_step(trace)
    assert number == len(trace.steps) == 9
    assert (step.question, step.answer) == ("conversion possible?", "no")
    assert step.detail == "convert_variable returned None"
    text = trace_text(trace)
    lines = text.splitlines()
    assert lines[9] == ("9. conversion possible? no - convert_variable returned None"
                        "   <- failed here")
    assert lines[10].startswith("refused at step 9 (conversion possible?): Cannot use variable")
    assert lines[10].endswith("dimension 0 has static size 3, not 2")
    assert trace_summary(trace) == "refused at step 9 (conversion possible? no)"


def test_refusal_without_conversion_allowed():
    v1, v2 = F64_2N(), F64_21()
    trace = explain_narrowing(v2.type, v1, allow_convert=False)
    number, step = failing_step(trace)
    assert (step.question, step.answer, step.detail) == (
        "conversion allowed?", "no", "allow_convert=False")
    assert "refused at step %d (conversion allowed?)" % number in trace_text(trace)


def test_other_inputs_are_explained_too():
    # a plain value is wrapped as a constant
    trace = explain_narrowing(TensorType("float64", ()), 1.5)
    assert [s.question for s in trace.steps] == ["is it a Variable?", "constant made"]
    assert float(trace.result.data) == 1.5
    assert trace_summary(trace) == "wrapped as a constant of type TensorType(float64, ())"
    # a Type given where a Variable is expected: refused before any step
    trace = explain_narrowing(F64_21, F64_2N)
    assert trace.steps == [] and isinstance(trace.error, TypeError)
    assert failing_step(trace) is None
    assert trace_text(trace).splitlines()[-1].startswith("refused: expected a Variable")
    # the same type: one step
    v = F64_21("v")
    trace = explain_narrowing(F64_21, v)
    assert trace.result is v and trace_summary(trace) == "kept: same type"
    assert trace_text(trace).endswith("(the variable itself)")


def test_unexpected_errors_are_recorded_not_raised():
    class Exploding(TensorType):
        def convert_variable(self, var):
            raise RuntimeError("boom")

    trace = explain_narrowing(Exploding("float64", (2, 1)), F64_2N())
    assert isinstance(trace.error, RuntimeError) and trace.result is None
    assert "boom" in trace_text(trace)


# ---------------------------------------------------------------------------
# HTML


def test_trace_html_table():
    v1, v2 = F64_2N(), F64_21()
    page = trace_html(explain_narrowing(v2.type, v1), diagrams=False)
    assert "<th" in page and [h for h in re.findall(r"<th[^>]*>(\w+)</th>", page)] == [
        "step", "question", "answer", "detail"]
    assert page.count("<tr") == 1 + len(SEED_QUESTIONS)
    # text is escaped: the variable's repr has angle brackets
    assert "&lt;TensorType(float64, (2, None))&gt;" in page
    assert "<TensorType" not in page
    assert "converted by SpecifyShape" in page
    assert "background:#e8f5e9" in page  # the deciding step


def test_refused_trace_html_marks_the_failing_row():
    page = trace_html(explain_narrowing(F64_21, F64_31()), diagrams=False)
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page, flags=re.S)
    failed = [r for r in rows if "failed here" in r]
    assert len(failed) == 1
    assert "background:#fde0dd" in failed[0] and "conversion possible?" in failed[0]
    assert "conflict" in page and "dimension 0 has static size 3, not 2" in page
    assert "refused at step 9" in page


@pytest.mark.needs_dot
def test_trace_html_before_and_after_diagrams():
    v1, v2 = F64_2N(), F64_21()
    page = unwrap_pictures(trace_html(explain_narrowing(v2.type, v1)))
    assert page.count("<svg") == 2
    assert "before: the variable" in page and "after: converted by SpecifyShape" in page
    after = page[page.index("after: converted"):]
    assert "SpecifyShape" in after
    assert 'stroke="#d81b60"' in after  # the inserted node is outlined
    assert "<!--" not in page
    refused = unwrap_pictures(trace_html(explain_narrowing(F64_21, F64_31())))
    assert refused.count("<svg") == 1 and "after: refused" in refused


def test_trace_html_without_dot(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    v1, v2 = F64_2N(), F64_21()
    page = trace_html(explain_narrowing(v2.type, v1))
    assert "<svg" not in page
    assert page.count("apt-get install graphviz") == 2


@pytest.mark.needs_dot
def test_trace_display_bundle():
    v1, v2 = F64_2N(), F64_21()
    trace = explain_narrowing(v2.type, v1)
    bundle = trace._repr_mimebundle_()
    assert bundle["text/plain"] == trace_text(trace)
    assert bundle["text/html"] == trace_html(trace)
    assert repr(trace).startswith("<NarrowingTrace")


# ---------------------------------------------------------------------------
# FunctionGraph history


class Loosen(Op):
    """Forgets the static shape of its input (the output type is more general)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [TensorType(x.type.dtype, (None,) * x.type.ndim)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]


def rewritten_fgraph():
    """A graph with two replacements: a narrowed one (SpecifyShape) and a kept one."""
    a = TensorType("float64", (2, 1))("a")
    fg = FunctionGraph([a], [nt.exp(a) * 2.0])
    a_in = fg.inputs[0]
    exp_out = fg.outputs[0].owner.inputs[0]
    fg.replace(exp_out, Loosen()(nt.exp(a_in)), reason="loosen")
    fg.replace(fg.outputs[0], nt.exp(a_in) * 2.0, reason="rebuild")
    return fg


def test_history_records_a_trace_per_replacement():
    fg = rewritten_fgraph()
    assert [r.reason for r in fg.history] == ["loosen", "rebuild"]
    first, second = fg.history
    assert trace_summary(first.trace) == "converted by SpecifyShape"
    assert first.new.owner.op.__class__.__name__ == "SpecifyShape"
    assert first.requested is not first.new
    assert trace_summary(second.trace) == "kept: same type"


def test_history_table_text():
    fg = rewritten_fgraph()
    view = history_table(fg)
    assert isinstance(view, HistoryView)
    lines = view.text().splitlines()
    assert lines[0] == "history of %r: 2 replacements" % (fg,)
    assert lines[1] == "step 0 (loosen): Elemwise{exp}.0 -> SpecifyShape.0 (requested Loosen.0)"
    assert lines[2] == "    narrowing Loosen.0 of type TensorType(float64, (None, None)) to " \
                       "TensorType(float64, (2, 1))"
    assert "    9. converted by SpecifyShape - result type TensorType(float64, (2, 1))" in lines
    assert any(line.startswith("step 1 (rebuild): Elemwise{mul}.0 -> Elemwise{mul}.0")
               for line in lines)
    assert str(view) == view.text()
    rows = view.rows()
    assert [r["step"] for r in rows] == [0, 1]
    assert rows[0]["summary"] == "converted by SpecifyShape"
    fresh = FunctionGraph(None, [nt.dvector("q") * 2.0])
    assert history_table(fresh).text().endswith("no replacements")
    assert "no replacements yet" in history_table(fresh).html()


def test_history_table_html():
    fg = rewritten_fgraph()
    page = history_table(fg).html()
    heads = re.findall(r"<th[^>]*>(\w+)</th>", page)
    assert heads[:5] == ["step", "reason", "old", "new", "narrowing"]
    assert page.count("<details") == 2
    assert "9 steps: converted by SpecifyShape" in page
    assert "1 steps: kept: same type" in page
    assert "requested <code>Loosen.0</code>" in page
    assert history_html(fg) in page
    bundle = history_table(fg)._repr_mimebundle_()
    assert bundle["text/html"] == page and bundle["text/plain"] == history_table(fg).text()


def test_replacement_display():
    fg = rewritten_fgraph()
    rep = fg.history[0]
    text = replacement_text(rep)
    assert text.splitlines()[0] == ("step 0 (loosen): Elemwise{exp}.0 -> SpecifyShape.0 "
                                    "(requested Loosen.0)")
    assert "<details open>" in replacement_html(rep)
    bundle = rep._repr_mimebundle_()
    assert bundle["text/plain"] == text and "nbgraph-replacement" in bundle["text/html"]


@pytest.mark.needs_dot
def test_fgraph_display_includes_history():
    fg = rewritten_fgraph()
    bundle = fg._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"].endswith(
        "2 replacements in history (nbgraph.display.history_table(fgraph))")
    page = unwrap_pictures(bundle["text/html"])
    assert page.index("<svg") < page.index("rewrite history") < page.index("nbgraph-history")
    # without html the diagram alone is given
    assert set(fg._repr_mimebundle_(exclude=["text/html"])) == {"text/plain", "image/svg+xml"}


def test_history_of_a_compiled_function():
    x = nt.dvector("x")
    f = nbgraph.function([x], (x * 1.0 + 0.0).sum(), linker="py")
    view = history_table(f)
    assert view.fgraph is f.fgraph
    reasons = [r["reason"] for r in view.rows()]
    assert reasons == [r.reason for r in f.fgraph.history] and reasons
    assert "mul_by_one" in view.text()
    with pytest.raises(TypeError, match="history_table expects"):
        history_table(x)
