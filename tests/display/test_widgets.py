"""Tests for nbgraph.display.widgets.GraphExplorer and nbgraph.display.history.

The explorer is driven as a user would, in plain pytest with real ipywidgets
objects (no kernel): set a widget's ``value``, ``click()`` a button, then look
at what the panel shows.  ``dot`` present or absent (PATH pointing at an empty
directory) is covered both ways.
"""

import html
import re
import subprocess
import sys

import ipywidgets
import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.display import GraphExplorer, dprint_text, rich
from nbgraph.display import widgets as widgets_module
from nbgraph.display.history import replay_rewrites
from nbgraph.display.picture import svgs_in, unwrap_pictures
from nbgraph.tensor.rewriting import rewrite_graph


@pytest.fixture(autouse=True)
def fresh_svg_cache():
    # render_svg caches by DOT source: without clearing, a "dot missing" test
    # could be served a picture rendered earlier
    rich.clear_cache()
    yield
    rich.clear_cache()


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """PATH without graphviz's dot (an empty directory)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def sample():
    """x (vector), y (scalar) and z: four rewrites simplify it, a fifth makes its last step
    in place."""
    x = nt.dvector("x")
    y = nt.dscalar("y")
    z = ((x * 1) + (-(-y))).sum() * 2  # noqa: B002 (on purpose)
    return x, y, z


def eager_snapshots(outputs):
    """dprint text after each replacement, copied while the pipeline runs (the slow way)."""
    fgraph = FunctionGraph(None, outputs)
    texts = [dprint_text(fgraph, print_type=True)]

    class Listener:
        def on_replace(self, fg, record):
            texts.append(dprint_text(fg, print_type=True))

    fgraph.attach_feature(Listener())
    rewrite_graph(fgraph)
    return fgraph, texts


def svg_texts(svg):
    """The text labels drawn in an SVG (what a reader sees)."""
    svg = unwrap_pictures(svg)
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def node_titles(svg):
    return re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]*)</title>', svg)


# ---------------------------------------------------------------------------
# the replay behind the slider


class TestReplay:
    def test_each_step_is_the_graph_after_that_many_replacements(self):
        x, y, z = sample()
        w = z + (x * 1).sum()
        fgraph, texts = eager_snapshots([w])
        replay = replay_rewrites(w)
        assert len(replay) == len(fgraph.history) == len(texts) - 1
        assert [s.reason for s in replay.steps[1:]] == [r.reason for r in fgraph.history]
        for k, step in enumerate(replay.steps):
            assert step.number == k
            assert step.text() == texts[k], k
            step.graph.check_integrity()

    def test_step_zero_is_the_users_graph_and_the_user_graph_is_untouched(self):
        x, y, z = sample()
        before = dprint_text(z, print_type=True)
        replay = replay_rewrites(z)
        assert dprint_text(z, print_type=True) == before
        assert replay[0].record is None and replay[0].reason is None
        assert replay[0].text(print_type=False) == dprint_text(
            FunctionGraph(None, [z]), print_type=False)
        assert "Elemwise{neg}" in replay[0].text()
        assert "Elemwise{neg}" not in replay[len(replay)].text()

    def test_records_carry_reason_and_trace(self):
        x, y, z = sample()
        replay = replay_rewrites(z)
        for step in replay.steps[1:]:
            assert step.record.reason == step.reason
            assert step.trace is step.record.trace
            assert step.trace is not None and step.trace.steps
            assert step.describe().startswith("step %d: %s: " % (step.number, step.reason))
        assert replay[0].describe() == "step 0: the graph before rewriting"

    def test_changed_marks_what_each_step_brought_in(self):
        x, y, z = sample()
        replay = replay_rewrites(z)
        assert replay[0].changed == frozenset()
        for step in replay.steps[1:]:
            graph = step.graph
            assert step.changed, step
            assert all(item in graph.variables or item in graph.apply_nodes
                       for item in step.changed)

    def test_big_graph_replays_quickly(self):
        # copying the graph after each of 1500 replacements would take about a
        # minute; the replay logs rewirings and rebuilds a step on demand
        x = nt.dvector("x")
        z = x
        for i in range(300):
            z = (-(-z)) * 1 + i  # noqa: B002 (on purpose)
        replay = replay_rewrites(z)
        assert len(replay) > 1000
        assert len(replay[0].graph.apply_nodes) > 1000
        assert replay[len(replay)].text() == dprint_text(replay.fgraph, print_type=True)

    def test_function_replays_from_its_callers_graph(self):
        x, y, z = sample()
        f = nbgraph.function([x, y], z, linker="py")
        replay = replay_rewrites(f)
        assert replay.note is None
        assert len(replay) == len(f.fgraph.history)
        assert replay[len(replay)].text() == dprint_text(f.fgraph, print_type=True)
        assert "Elemwise{neg}" in replay[0].text()

    def test_function_with_givens_falls_back_to_the_compiled_graph(self):
        x, y, z = sample()
        a = nt.dvector("a")
        f = nbgraph.function([a, y], z, givens={x: a + 1}, linker="py")
        replay = replay_rewrites(f)
        assert len(replay) == 0
        assert "cannot be replayed" in replay.note
        assert replay[0].text() == dprint_text(f.fgraph, print_type=True)

    def test_bad_objects(self):
        with pytest.raises(TypeError, match="expected a Variable"):
            replay_rewrites(3)
        with pytest.raises(TypeError, match="non-empty list of Variables"):
            replay_rewrites([])
        with pytest.raises(IndexError):
            replay_rewrites(nt.dvector("x") * 2).graph_at(5)


# ---------------------------------------------------------------------------
# building the panel


def test_importing_nbgraph_does_not_import_ipywidgets():
    code = ("import sys, nbgraph, nbgraph.display; from nbgraph.display import GraphExplorer; "
            "print('ipywidgets' in sys.modules, 'IPython' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize("kind", ["variable", "list", "fgraph", "function"])
def test_builds_for_every_kind_of_graph(kind):
    x, y, z = sample()
    obj = {"variable": z, "list": [z, x * 2], "fgraph": FunctionGraph([x, y], [z]),
           "function": nbgraph.function([x, y], z, linker="py")}[kind]
    explorer = GraphExplorer(obj)
    assert isinstance(explorer, ipywidgets.VBox)
    assert isinstance(explorer, GraphExplorer)
    assert type(explorer).__name__ == "GraphExplorer"
    assert isinstance(explorer.style, ipywidgets.ToggleButtons)
    assert explorer.style.value == "compact"
    assert list(explorer.style.options) == ["compact", "structure"]
    assert isinstance(explorer.show_types, ipywidgets.Checkbox) and explorer.show_types.value
    assert isinstance(explorer.step, ipywidgets.IntSlider)
    assert isinstance(explorer.diagram, ipywidgets.HTML) and explorer.diagram.value
    assert isinstance(explorer.evaluate_button, ipywidgets.Button)
    assert isinstance(explorer.result, ipywidgets.HTML)
    assert [v.name for v in explorer.input_variables] == ["x", "y"]
    assert len(explorer.inputs) == len(explorer.input_summaries) == 2
    # every named child is really shown in the panel
    shown = set()
    stack = list(explorer.children)
    while stack:
        widget = stack.pop()
        shown.add(widget)
        stack.extend(getattr(widget, "children", ()))
    for child in (explorer.style, explorer.show_types, explorer.step, explorer.step_info,
                  explorer.diagram, explorer.evaluate_button, explorer.timing,
                  explorer.result, *explorer.inputs, *explorer.input_summaries):
        assert child in shown


def test_starting_options_and_their_checks():
    x, y, z = sample()
    explorer = GraphExplorer(z, style="structure", show_types=False, step=2)
    assert explorer.style.value == "structure"
    assert explorer.show_types.value is False
    assert explorer.step.value == 2
    with pytest.raises(ValueError, match="style"):
        GraphExplorer(z, style="fancy")
    with pytest.raises(ValueError, match="step must be between 0 and 5"):
        GraphExplorer(z, step=9)
    with pytest.raises(TypeError, match="expected a Variable"):
        GraphExplorer("z")


def test_default_step_is_the_users_graph_or_for_a_function_the_compiled_one():
    x, y, z = sample()
    assert GraphExplorer(z).step.value == 0
    explorer = GraphExplorer(nbgraph.function([x, y], z, linker="py"))
    assert explorer.step.value == explorer.step.max == 5


def test_input_boxes_follow_the_input_types():
    x = nt.dvector("x")
    s = nt.dscalar("s")
    i = nt.iscalar("i")
    b = nt.tensor("bool", (), name="b")
    m = nt.dmatrix("m")
    out = (m.sum() + x.sum() + s + i + nt.switch(b, 1.0, 0.0))
    explorer = GraphExplorer(out)
    boxes = dict(zip([v.name for v in explorer.input_variables], explorer.inputs, strict=True))
    assert set(boxes) == {"x", "s", "i", "b", "m"}
    assert isinstance(boxes["s"], ipywidgets.FloatText)
    assert isinstance(boxes["i"], ipywidgets.IntText)
    assert isinstance(boxes["b"], ipywidgets.Checkbox)
    assert isinstance(boxes["x"], ipywidgets.Text) and boxes["x"].placeholder == "e.g. [1, 2, 3]"
    assert isinstance(boxes["m"], ipywidgets.Text) and "[[1, 2], [3, 4]]" in boxes["m"].placeholder
    for box in boxes.values():
        assert box.description in boxes


def test_shared_variables_and_constants_get_no_input_box():
    x = nt.dvector("x")
    w = nbgraph.shared(np.array([1.0, 2.0]), name="w")
    explorer = GraphExplorer((x * w + nt.constant(3.0)).sum())
    assert [v.name for v in explorer.input_variables] == ["x"]
    explorer.inputs[0].value = "[1, 1]"
    explorer.evaluate_button.click()
    assert explorer.result_text == repr(np.array(9.0))


# ---------------------------------------------------------------------------
# style and type toggles


@pytest.mark.needs_dot
def test_style_toggle_redraws_the_diagram():
    x, y, z = sample()
    explorer = GraphExplorer(z)
    compact = unwrap_pictures(explorer.diagram.value)
    assert "<svg" in compact and explorer.diagram_text is None
    titles = node_titles(compact)
    assert titles and not any(t.startswith(("op", "type")) for t in titles)
    assert "Elemwise{mul}" in svg_texts(compact)

    explorer.style.value = "structure"
    structure = unwrap_pictures(explorer.diagram.value)
    assert structure != compact
    titles = node_titles(structure)
    assert any(t.startswith("op") for t in titles)      # Op circles
    assert any(t.startswith("type") for t in titles)    # Type boxes
    labels = svg_texts(structure)
    assert "Apply" in labels and "TensorType(float64, (None,))" in labels
    assert "owner" in labels and "op" in labels          # arrow labels of the seed's picture

    explorer.style.value = "compact"
    assert unwrap_pictures(explorer.diagram.value) == compact


@pytest.mark.needs_dot
def test_types_toggle_redraws_the_diagram():
    x, y, z = sample()
    explorer = GraphExplorer(z)
    assert "float64[?]" in svg_texts(explorer.diagram.value)
    explorer.show_types.value = False
    assert not any("float64" in t for t in svg_texts(explorer.diagram.value))
    explorer.style.value = "structure"
    assert "TensorType" not in unwrap_pictures(explorer.diagram.value)
    explorer.show_types.value = True
    assert "TensorType(float64, ())" in svg_texts(explorer.diagram.value)


@pytest.mark.needs_dot
def test_diagram_is_the_rendered_step_graph():
    x, y, z = sample()
    explorer = GraphExplorer(z, style="structure", show_types=False)
    explorer.step.value = 3
    step = explorer.replay[3]
    svg = rich.render_svg(step.graph, style="structure", show_types=False,
                          highlight=step.changed)
    assert svgs_in(explorer.diagram.value) == [svg]


# ---------------------------------------------------------------------------
# the rewrite history slider


def test_slider_spans_the_rewrite_history():
    x, y, z = sample()
    fgraph, texts = eager_snapshots([z])
    explorer = GraphExplorer(z)
    assert explorer.step.min == 0
    assert explorer.step.max == len(fgraph.history) == 5
    reasons = [rec.reason for rec in fgraph.history]
    assert reasons == ["fold_constants", "mul_by_one", "double_negation", "fuse_reduce",
                       "inplace_elemwise"]
    assert "step 0 of 5" in explorer.step_info.value
    assert "the graph before rewriting" in explorer.step_info.value
    for k, rec in enumerate(fgraph.history, 1):
        explorer.step.value = k
        info = explorer.step_info.value
        assert "step %d of 5" % k in info
        assert "<b>%s</b>" % rec.reason in info
        assert "<code>%s</code>" % html.escape(repr(rec.old)) in info
        # that replacement's narrowing trace, as a table of its steps
        assert 'class="nbgraph-narrowing"' in info and 'class="nbgraph-steps"' in info
        first = rec.trace.steps[0]
        assert html.escape(str(first.question)) in info
    explorer.step.value = 0
    assert "nbgraph-narrowing" not in explorer.step_info.value


def test_stepping_changes_the_diagram(no_dot):
    # without dot the panel shows each step's dprint text: exact comparisons
    x, y, z = sample()
    fgraph, texts = eager_snapshots([z])
    explorer = GraphExplorer(z)
    seen = []
    for k in range(explorer.step.max + 1):
        explorer.step.value = k
        assert explorer.diagram_text == texts[k], k
        assert html.escape(texts[k].rstrip("\n")) in explorer.diagram.value
        seen.append(explorer.diagram.value)
    assert seen[0] != seen[-1]
    assert len(set(seen)) == len(seen)
    assert "Elemwise{neg}" in seen[0] and "Elemwise{neg}" not in seen[-1]
    assert "Composite" in seen[-1]


@pytest.mark.needs_dot
def test_stepping_changes_the_svg():
    x, y, z = sample()
    explorer = GraphExplorer(z)
    first = explorer.diagram.value
    explorer.step.value = explorer.step.max
    last = explorer.diagram.value
    assert first != last
    assert "Elemwise{neg}" in svg_texts(first)
    assert "Elemwise{neg}" not in svg_texts(last)


def test_graph_without_rewrites_has_a_disabled_slider():
    x = nt.dvector("x")
    explorer = GraphExplorer(x + x)
    assert explorer.step.max == 0 and explorer.step.disabled
    assert "no rewrite applies" in explorer.step_info.value


def test_function_with_givens_explains_its_empty_history():
    x, y, z = sample()
    a = nt.dvector("a")
    f = nbgraph.function([a, y], z, givens={x: a * 2}, linker="py")
    explorer = GraphExplorer(f)
    assert explorer.step.max == 0
    assert "cannot be replayed" in explorer.step_info.value
    explorer.inputs[0].value = "[1, 2]"
    explorer.inputs[1].value = 0.5
    explorer.evaluate_button.click()
    assert explorer.result_text == repr(f(np.array([1.0, 2.0]), 0.5))


# ---------------------------------------------------------------------------
# evaluating


def test_evaluate_shows_numpys_result():
    x, y, z = sample()
    explorer = GraphExplorer(z, linker="py")
    assert "float64, shape (?,)" in explorer.input_summaries[0].value
    assert "float64 scalar" in explorer.input_summaries[1].value
    explorer.inputs[0].value = "[1, 2, 3.5]"
    explorer.inputs[1].value = 0.25
    assert "&#10003; shape (3,)" in explorer.input_summaries[0].value
    explorer.evaluate_button.click()
    expected = ((np.array([1, 2, 3.5]) * 1 + 0.25).sum() * 2)
    assert explorer.result_error is None
    assert explorer.result_text == repr(np.asarray(expected))
    assert np.array_equal(explorer.result_value, expected)
    assert html.escape(repr(np.asarray(expected))) in explorer.result.value
    assert "compiled in" in explorer.timing.value and "linker py" in explorer.timing.value


def test_evaluate_accepts_numpy_expressions_and_lists_of_outputs():
    x = nt.dmatrix("x")
    explorer = GraphExplorer([x.sum(axis=0), x * 2])
    explorer.inputs[0].value = "np.arange(6.0).reshape(2, 3)"
    explorer.evaluate_button.click()
    data = np.arange(6.0).reshape(2, 3)
    lines = explorer.result_text.split("\n")
    assert lines[0].endswith(" = " + repr(data.sum(axis=0)))
    assert explorer.result_text.endswith(" = " + repr(data * 2))


def test_evaluate_compiles_once(monkeypatch):
    function_module = sys.modules["nbgraph.linkers.function"]
    calls = []
    real = function_module.function

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(function_module, "function", counting)
    x, y, z = sample()
    explorer = GraphExplorer(z, linker="py")
    explorer.inputs[0].value = "[1, 2]"
    for value in (1.0, 2.0, 3.0):
        explorer.inputs[1].value = value
        explorer.evaluate_button.click()
        assert explorer.result_text == repr(np.asarray((np.array([1.0, 2.0]) + value).sum() * 2))
    assert len(calls) == 1


def test_evaluate_a_function_calls_it_as_it_is():
    x, y, z = sample()
    f = nbgraph.function([x, y], [z, x + y], linker="py")
    explorer = GraphExplorer(f)
    explorer.inputs[0].value = "[1.0, 2.0]"
    explorer.inputs[1].value = 3.0
    explorer.evaluate_button.click()
    assert explorer._compiled() is f
    expected = f(np.array([1.0, 2.0]), 3.0)
    assert explorer.result_text == "%s = %r\n%s = %r" % (
        f.outputs[0], expected[0], f.outputs[1], expected[1])
    assert "compiled in" not in explorer.timing.value
    assert "ran in" in explorer.timing.value


@pytest.mark.parametrize("text, message", [
    ("[1, 2", "could not be read"),          # not a literal
    ("", "no value entered"),
    ("[[1.0, 2.0]]", "bad argument 0 (x)"),   # wrong number of dimensions
    ("['a', 'b']", "bad argument 0 (x)"),     # not numbers
    ("undefined_thing", "NameError"),
])
def test_bad_input_shows_an_error_and_never_raises(text, message):
    x, y, z = sample()
    explorer = GraphExplorer(z, linker="py")
    explorer.inputs[0].value = text
    explorer.evaluate_button.click()  # must not raise
    assert explorer.result_value is None
    assert explorer.result_error is not None
    assert explorer.result_text.startswith("error: ")
    assert message in explorer.result_text
    assert "#c62828" in explorer.result.value
    assert html.escape(explorer.result_text) in explorer.result.value
    summary = explorer.input_summaries[0].value
    if text == "undefined_thing":  # an expression: only read on Evaluate
        assert "read when you click Evaluate" in summary
    elif text:
        assert "&#10007;" in summary
    # a good value afterwards works again
    explorer.inputs[0].value = "[1, 2]"
    explorer.evaluate_button.click()
    assert explorer.result_error is None and explorer.result_text == repr(np.array(6.0))


def test_expressions_are_not_run_while_typing(monkeypatch):
    x = nt.dvector("x")
    explorer = GraphExplorer(x * 2, linker="py")
    ran = []
    monkeypatch.setitem(widgets_module._EVAL_NAMES, "record", lambda v: ran.append(v) or v)
    explorer.inputs[0].value = "record([1.0, 2.0])"
    assert ran == []
    assert "read when you click Evaluate" in explorer.input_summaries[0].value
    assert explorer.inputs[0].continuous_update is False
    explorer.evaluate_button.click()
    assert ran == [[1.0, 2.0]]
    assert explorer.result_text == repr(np.array([2.0, 4.0]))


def test_int_input_refuses_a_lossy_value():
    i = nt.ivector("i")
    explorer = GraphExplorer(i * 2, linker="py")
    explorer.inputs[0].value = "[1.5, 2]"
    assert "&#10007;" in explorer.input_summaries[0].value
    explorer.evaluate_button.click()
    assert explorer.result_text.startswith("error: TypeError: bad argument 0 (i)")
    explorer.inputs[0].value = "[1, 2]"
    explorer.evaluate_button.click()
    assert explorer.result_text == repr(np.array([2, 4], dtype="int32"))


def test_runtime_error_is_shown():
    x = nt.dvector("x")
    y = nt.dvector("y")
    explorer = GraphExplorer(x + y, linker="py")
    explorer.inputs[0].value = "[1, 2, 3]"
    explorer.inputs[1].value = "[1, 2]"
    explorer.evaluate_button.click()
    assert explorer.result_text.startswith("error: ")
    assert explorer.result_value is None


def test_graph_without_inputs_evaluates():
    explorer = GraphExplorer(nt.constant(np.array([1.0, 2.0])) * 3, linker="py")
    assert explorer.inputs == []
    explorer.evaluate_button.click()
    assert explorer.result_text == repr(np.array([3.0, 6.0]))


# ---------------------------------------------------------------------------
# no dot, broken diagrams


def test_dot_missing_shows_text_and_hint(no_dot):
    x, y, z = sample()
    explorer = GraphExplorer(z, linker="py")  # (no C compiler on this PATH either)
    assert "<svg" not in explorer.diagram.value
    assert explorer.diagram_text == dprint_text(explorer.replay[0].graph, print_type=True)
    assert html.escape(rich.DOT_HINT) in explorer.diagram.value
    assert "<pre" in explorer.diagram.value
    explorer.show_types.value = False
    assert explorer.diagram_text == dprint_text(explorer.replay[0].graph, print_type=False)
    assert "TensorType" not in explorer.diagram.value
    explorer.style.value = "structure"
    explorer.step.value = explorer.step.max
    assert explorer.diagram_text == dprint_text(explorer.replay[5].graph, print_type=False)
    # evaluation does not need dot
    explorer.inputs[0].value = "[1]"
    explorer.evaluate_button.click()
    assert explorer.result_text == repr(np.array(2.0))


def test_a_failing_diagram_never_raises(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("layout exploded")

    monkeypatch.setattr(rich, "render_svg", broken)
    x, y, z = sample()
    explorer = GraphExplorer(z)
    assert "(diagram unavailable: layout exploded)" in explorer.diagram.value
    assert explorer.diagram_text == dprint_text(explorer.replay[0].graph, print_type=True)
    explorer.style.value = "structure"  # the callback must not raise either
    assert "layout exploded" in explorer.diagram.value
