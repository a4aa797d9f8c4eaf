"""GraphExplorer: an ipywidgets panel to look at a graph, step through its rewrites, evaluate it.

>>> import nbgraph.tensor as nt
>>> from nbgraph.display import GraphExplorer
>>> x = nt.dvector("x")
>>> explorer = GraphExplorer((-(-x) * 1).sum())
>>> explorer.step.max                      # one step per replacement
3
>>> explorer.step.value = 3                # the graph after the last rewrite
>>> explorer.inputs[0].value = "[1, 2, 3]"
>>> explorer.evaluate_button.click()
>>> explorer.result_text
'array(6.)'

The panel (an ``ipywidgets.VBox``) has, top to bottom:

- ``style`` (ToggleButtons "compact"/"structure") and ``show_types``
  (Checkbox): how the diagram is drawn;
- ``step`` (IntSlider over the rewrite history) and ``step_info`` (HTML: that
  step's reason, what was replaced by what, and the narrowing trace of the
  replacement).  The history is made by replaying the "fast" rewrite pipeline
  on a copy of the graph (:func:`nbgraph.display.history.replay_rewrites`):
  step 0 is the graph before rewriting, step k the graph after k
  replacements, with what step k brought in outlined.  For a compiled
  Function the replay starts from the graph its caller gave (``f.inputs``,
  ``f.outputs``), so the last step is the graph it runs;
- ``diagram`` (HTML): the SVG diagram of the graph at that step, or, when
  graphviz's ``dot`` is missing or fails, the dprint text and a one-line hint;
- the evaluate panel: ``inputs`` (one box per graph input: FloatText/IntText
  /Checkbox for 0-d tensors, a Text box taking a Python or NumPy literal such
  as ``[1, 2, 3]`` or ``np.ones((2, 3))`` for arrays), ``input_summaries``
  (the expected dtype and shape, and whether the value entered fits),
  ``evaluate_button``, ``timing`` and ``result`` (the value's repr, or the
  error message in red).  The graph is compiled on the first click and the
  compiled function reused; a compiled Function is called as it is.

Nothing the widgets call back raises: an error becomes text in the panel.
ipywidgets is imported when the first explorer is made, not with nbgraph.
"""

import ast
import html
import time

import numpy as np

from nbgraph.display.history import graph_of, replay_rewrites
from nbgraph.display.names import one_line, safe_repr
from nbgraph.display.picture import img_html
from nbgraph.display.snapshot import LiveSnapshot

__all__ = ["GraphExplorer"]

STYLES = ("compact", "structure")

_ERROR_COLOR = "#c62828"
_OK_COLOR = "#2e7d32"


class _Deferred(type):
    """Metaclass of the public name: builds the real ipywidgets class on first use."""

    def __call__(cls, *args, **kwargs):
        return _widget_class()(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _widget_class())

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _widget_class())


class GraphExplorer(metaclass=_Deferred):
    """An ipywidgets panel for a Variable, a list of Variables, a FunctionGraph or a Function.

    ``GraphExplorer(obj, style="compact", show_types=True, step=None,
    max_nodes=200, linker=None)``: ``style``, ``show_types`` and ``max_nodes``
    set how the diagram starts out; ``step`` the history step first shown
    (default: 0, the graph before rewriting, or the last step, the compiled
    graph, for a Function); ``linker`` the linker the Evaluate button
    compiles with (default: ``config.linker``).  See the module docstring for
    the child widgets (``style``, ``show_types``, ``step``, ``step_info``,
    ``diagram``, ``inputs``, ``input_summaries``, ``evaluate_button``,
    ``timing``, ``result``) and what they do.

    Also: ``replay`` (the :class:`~nbgraph.display.history.RewriteReplay`),
    ``input_variables``, ``result_text`` / ``result_value`` / ``result_error``
    (the last evaluation), ``diagram_text`` (the dprint text shown when no
    diagram could be drawn, else None), ``refresh()`` (redraw).
    """


_CLASS = None


def _widget_class():
    global _CLASS
    if _CLASS is None:
        import ipywidgets

        _CLASS = type("GraphExplorer", (_ExplorerPanel, LiveSnapshot, ipywidgets.VBox), {
            "__doc__": GraphExplorer.__doc__, "__module__": __name__})
    return _CLASS


class _ExplorerPanel:
    """The explorer's behaviour; mixed into ipywidgets.VBox by :func:`_widget_class`."""

    def __init__(self, obj, style="compact", show_types=True, step=None, max_nodes=200,
                 linker=None, **kwargs):
        import ipywidgets as w

        if style not in STYLES:
            raise ValueError("style must be 'compact' or 'structure', got %r" % (style,))
        self.obj = obj
        self.replay = replay_rewrites(obj)  # TypeError for anything else than a graph
        self.max_nodes = max_nodes
        self.linker = linker
        self._function = None
        self._compile_seconds = None
        self.diagram_text = None
        self.result_text = ""
        self.result_value = None
        self.result_error = None
        last = len(self.replay)
        if step is None:
            step = last if _is_function(obj) else 0
        if not 0 <= step <= last:
            raise ValueError("step must be between 0 and %d, got %r" % (last, step))

        self.style = w.ToggleButtons(options=list(STYLES), value=style, description="style",
                                     tooltips=["Apply and Variable nodes, types on variables",
                                               "Apply, Variable, Op and Type objects"])
        self.show_types = w.Checkbox(value=bool(show_types), description="show types",
                                     indent=False)
        self.step = w.IntSlider(value=step, min=0, max=last, description="rewrite step",
                                continuous_update=False, disabled=last == 0,
                                style={"description_width": "initial"},
                                layout=w.Layout(width="420px"))
        self.step_info = w.HTML()
        # a steady height while the slider moves (pictures scale to the width)
        self.diagram = w.HTML(layout=w.Layout(overflow="auto", min_height="360px",
                                              max_height="640px"))

        self.input_variables = self._input_variables(obj)
        self.inputs = [_input_box(var, i) for i, var in enumerate(self.input_variables)]
        self.input_summaries = [w.HTML() for _ in self.inputs]
        self.evaluate_button = w.Button(description="Evaluate", button_style="primary",
                                        icon="play", tooltip="compile (once) and run the graph")
        self.timing = w.HTML()
        self.result = w.HTML()

        rows = [w.HBox([box, summary])
                for box, summary in zip(self.inputs, self.input_summaries, strict=True)]
        if not rows:
            rows = [w.HTML("<i>the graph has no inputs</i>")]
        children = [
            w.HBox([self.style, self.show_types]),
            self.step,
            self.step_info,
            self.diagram,
            w.HTML("<b>evaluate</b>"),
            *rows,
            w.HBox([self.evaluate_button, self.timing]),
            self.result,
        ]
        super().__init__(children=children, **kwargs)
        self.children = tuple(children) + (self.snapshot_hider(),)

        for box, summary, var in zip(self.inputs, self.input_summaries, self.input_variables,
                                     strict=True):
            box.observe(self._summary_updater(box, summary, var), names="value")
            _summarize(box, summary, var)
        self.style.observe(self._on_change, names="value")
        self.show_types.observe(self._on_change, names="value")
        self.step.observe(self._on_step, names="value")
        self.evaluate_button.on_click(self._on_evaluate)
        self.refresh()

    # -- what the panel shows --------------------------------------------------
    @staticmethod
    def _input_variables(obj):
        from nbgraph.core.graph import Constant, graph_inputs
        from nbgraph.tensor.variable import SharedVariable

        if _is_function(obj):
            return list(obj.inputs)
        inputs, outputs = graph_of(obj)
        if inputs is None:
            inputs = graph_inputs(outputs)
        return [v for v in inputs if not isinstance(v, (Constant, SharedVariable))]

    def refresh(self):
        """Redraw the step description and the diagram from the widgets' values."""
        self._show_step_info()
        self._draw()
        self.update_snapshot()

    def _on_change(self, change=None):
        self._draw()
        self.update_snapshot()

    def _on_step(self, change=None):
        self.refresh()

    def _show_step_info(self):
        from nbgraph.display.narrowing import trace_html

        k = self.step.value
        total = len(self.replay)
        step = self.replay[k]
        parts = []
        if step.record is None:
            text = "the graph before rewriting"
            if total == 0:
                text += " (no rewrite applies to it)" if self.replay.note is None \
                    else " (%s)" % self.replay.note
            parts.append("<b>step 0 of %d</b>: %s" % (total, _h(text)))
        else:
            rec = step.record
            parts.append("<b>step %d of %d</b>: <b>%s</b> replaced <code>%s</code> by "
                         "<code>%s</code>" % (k, total, _h(rec.reason or "no reason given"),
                                              _h(safe_repr(rec.old)), _h(safe_repr(rec.new))))
            if rec.trace is not None:
                try:
                    parts.append(trace_html(rec.trace, diagrams=False))
                except Exception as exc:  # never let a callback raise
                    parts.append("<i>(narrowing trace unavailable: %s)</i>" % _h(one_line(exc)))
        self.step_info.value = "\n".join(parts)

    def _draw(self):
        from nbgraph.display import rich
        from nbgraph.display.text import dprint_text

        step = self.replay[self.step.value]
        show_types = bool(self.show_types.value)
        try:
            graph = step.graph
            svg = rich.render_svg(graph, style=self.style.value, show_types=show_types,
                                  max_nodes=self.max_nodes, highlight=step.changed or None)
        except Exception as exc:  # DiagramUnavailable (no dot) or anything else
            hint = str(exc) if isinstance(exc, rich.DiagramUnavailable) \
                else "(diagram unavailable: %s)" % one_line(exc)
            try:
                text = dprint_text(step.graph, print_type=show_types)
            except Exception as text_exc:
                text = "(text unavailable: %s)" % one_line(text_exc)
            self.diagram_text = text
            self.diagram.value = (
                '<pre class="nbgraph-explorer-text" style="margin:0.3em 0">%s</pre>'
                '<p class="nbgraph-hint" style="color:#666;margin:0"><i>%s</i></p>'
                % (_h(text.rstrip("\n")), _h(hint)))
            return
        self.diagram_text = None
        self.diagram.value = img_html(svg, "nbgraph %s diagram at rewrite step %d" % (
            self.style.value, self.step.value), css_class="nbgraph-explorer-diagram")

    # -- what a saved or exported notebook shows -------------------------------
    def __repr__(self):
        return "<GraphExplorer: %s, rewrite step %d of %d>" % (
            _text_of(self.obj), self.step.value, len(self.replay))

    def _repr_mimebundle_(self, **kwargs):
        """The widget, plus a static snapshot (HTML) of what it shows now.

        A front end without the widget's JavaScript or state (an exported
        page, an untrusted notebook, GitHub) shows the snapshot instead of an
        empty output or the widget's raw repr.
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            bundle = {}
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self.snapshot_html()
        return bundle

    def snapshot_html(self):
        """The panel's current state as static HTML: step, diagram, last result."""
        parts = ['<div class="nbgraph-explorer-snapshot">',
                 '<p style="margin:0.2em 0"><b>GraphExplorer</b> (a live widget; this is a '
                 'snapshot: run the notebook to use it)</p>',
                 self.step_info.value, self.diagram.value]
        if self.result.value:
            parts.append(self.result.value)
        parts.append("</div>")
        return "\n".join(parts)

    # -- evaluation ------------------------------------------------------------
    @staticmethod
    def _summary_updater(box, summary, var):
        def update(change=None):
            _summarize(box, summary, var)
        return update

    def _compiled(self):
        if self._function is None:
            if _is_function(self.obj):
                self._function = self.obj
                self._compile_seconds = None
            else:
                from nbgraph.linkers.function import function

                inputs, outputs = graph_of(self.obj)
                single = not isinstance(self.obj, (list, tuple)) and len(outputs) == 1
                start = time.perf_counter()
                self._function = function(self.input_variables,
                                          outputs[0] if single else outputs,
                                          linker=self.linker, on_unused_input="ignore")
                self._compile_seconds = time.perf_counter() - start
        return self._function

    def _on_evaluate(self, button=None):
        """The Evaluate button: parse the inputs, run the compiled graph, show the result."""
        from nbgraph.display.profiles import format_seconds

        try:
            values = [_value_of(box, var, i)
                      for i, (box, var) in enumerate(
                          zip(self.inputs, self.input_variables, strict=True))]
            fn = self._compiled()
            start = time.perf_counter()
            result = fn(*values)
            run_seconds = time.perf_counter() - start
        except Exception as exc:  # shown in the panel, never raised from the callback
            self.result_value = None
            self.result_error = exc
            self.result_text = "error: %s: %s" % (type(exc).__name__, one_line(exc))
            self.result.value = '<pre style="color:%s;margin:0.3em 0">%s</pre>' % (
                _ERROR_COLOR, _h(self.result_text))
            self.timing.value = ""
            self.update_snapshot()
            return
        self.result_value = result
        self.result_error = None
        self.result_text = _result_text(fn, result)
        self.result.value = '<pre style="margin:0.3em 0">%s</pre>' % _h(self.result_text)
        timing = "ran in %s" % format_seconds(run_seconds)
        if self._compile_seconds is not None:
            timing = "compiled in %s, %s" % (format_seconds(self._compile_seconds), timing)
        self.timing.value = '<span style="color:#666">%s (linker %s)</span>' % (
            _h(timing), _h(getattr(fn, "linker", "?")))
        self.update_snapshot()


# ---------------------------------------------------------------------------
# input boxes


def _is_function(obj):
    from nbgraph.linkers.function import Function

    return isinstance(obj, Function)


def _kind(var):
    """'float', 'int', 'bool' for a 0-d tensor of that kind, else 'array'."""
    dtype = getattr(var.type, "dtype", None)
    if getattr(var.type, "ndim", None) != 0 or dtype is None:
        return "array"
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return "array"
    return {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(kind, "array")


_EXAMPLES = {1: "[1, 2, 3]", 2: "[[1, 2], [3, 4]]"}


def _input_box(var, i):
    import ipywidgets as w

    name = var.name or "input %d" % i
    common = {"description": name, "style": {"description_width": "initial"}}
    kind = _kind(var)
    if kind == "float":
        return w.FloatText(value=0.0, **common)
    if kind == "int":
        return w.IntText(value=0, **common)
    if kind == "bool":
        return w.Checkbox(value=False, indent=False, **common)
    ndim = getattr(var.type, "ndim", None)
    example = _EXAMPLES.get(ndim, "np.ones((2, 3))" if ndim else "a Python value")
    return w.Text(value="", placeholder="e.g. %s" % example, continuous_update=False, **common)


def _expected(var):
    dtype = getattr(var.type, "dtype", None)
    shape = getattr(var.type, "shape", None)
    if dtype is None:
        return str(var.type)
    if shape == ():
        return "%s scalar" % dtype
    return "%s, shape %s" % (dtype, _shape_text(shape))


def _shape_text(shape):
    return "(%s)" % (", ".join("?" if s is None else str(s) for s in shape)
                     + ("," if len(shape) == 1 else ""))


def _summarize(box, summary, var):
    """The label next to an input box: what is expected, and whether the value fits."""
    try:
        _write_summary(box, summary, var)
    except Exception as exc:  # never let a callback raise
        summary.value = '<span style="color:%s">&#10007; %s</span>' % (
            _ERROR_COLOR, _h(one_line(exc)))


def _write_summary(box, summary, var):
    parts = [_h(_expected(var))]
    if _kind(var) == "array":
        text = str(box.value).strip()
        if not text:
            parts.append('<span style="color:#666">enter a value</span>')
        else:
            try:
                tree = ast.parse(text, mode="eval")
            except SyntaxError as exc:
                tree, problem = None, "not a Python expression: %s" % exc.msg
            if tree is not None and not _is_literal(tree):
                # not run while typing (it could be slow or have effects): on Evaluate only
                parts.append('<span style="color:#666">an expression: read when you click '
                             'Evaluate</span>')
            elif tree is None:
                parts.append('<span style="color:%s">&#10007; %s</span>' % (
                    _ERROR_COLOR, _h(problem)))
            else:
                try:
                    value = var.type.filter(ast.literal_eval(tree))
                except Exception as exc:
                    parts.append('<span style="color:%s">&#10007; %s</span>' % (
                        _ERROR_COLOR, _h(one_line(exc))))
                else:
                    shape = getattr(value, "shape", None)
                    got = "shape %s" % (shape,) if shape is not None else type(value).__name__
                    parts.append('<span style="color:%s">&#10003; %s</span>' % (
                        _OK_COLOR, _h(got)))
    summary.value = '<span style="font-size:0.9em;padding-left:0.5em">%s</span>' % (
        " &middot; ".join(parts))


_EVAL_NAMES = {"np": np, "numpy": np, "nan": np.nan, "inf": np.inf}


def _is_literal(tree):
    try:
        ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _parse_value(text):
    """A Python literal (``[1, 2]``) or a NumPy expression (``np.ones(3)``) typed in a box."""
    text = str(text).strip()
    if not text:
        raise ValueError("no value entered")
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    return eval(compile(text, "<input>", "eval"), dict(_EVAL_NAMES))


def _value_of(box, var, i):
    if _kind(var) != "array":
        return box.value
    try:
        return _parse_value(box.value)
    except Exception as exc:
        raise ValueError("the value of %s could not be read (%s: %s); enter a Python or "
                         "NumPy literal such as %s" % (
                             var.name or "input %d" % i, type(exc).__name__, one_line(exc),
                             _EXAMPLES.get(getattr(var.type, "ndim", None), "[1, 2, 3]"))) \
            from None


def _result_text(fn, result):
    outputs = getattr(fn, "outputs", [])
    if getattr(fn, "single", not isinstance(result, list)):
        return repr(result)
    lines = []
    for i, value in enumerate(result):
        name = safe_repr(outputs[i]) if i < len(outputs) else "output %d" % i
        lines.append("%s = %r" % (name, value))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# small helpers


def _h(obj):
    return html.escape(str(obj), quote=True)


def _text_of(obj):
    try:
        text = repr(obj)
    except Exception:
        text = type(obj).__name__
    return text if len(text) <= 60 else text[:59] + "\u2026"
