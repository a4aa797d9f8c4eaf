"""Type narrowing, step by step: :func:`explain_narrowing`, traces as text and HTML, histories.

``Type.filter_variable`` decides whether a Variable may stand where another
Type is expected, and how: keep it (its type is as or more specific), convert
it (``TensorType`` inserts a ``SpecifyShape``), or refuse.  Given a
:class:`~nbgraph.core.type.NarrowingTrace` it records each question it asks.
:func:`explain_narrowing` runs it with a fresh trace and returns that trace,
whose ``result`` is exactly what ``filter_variable`` returns (the same call,
made once) and whose ``error`` holds the refusal instead of raising it:

>>> from nbgraph.tensor import TensorType
>>> v1 = TensorType("float64", (2, None))()
>>> v2 = TensorType("float64", (2, 1))()
>>> trace = explain_narrowing(v2.type, v1)
>>> trace.result
SpecifyShape.0
>>> print(trace_text(trace).splitlines()[-1])
result: SpecifyShape.0 of type TensorType(float64, (2, 1)), converted by SpecifyShape

In a notebook a trace shows as an HTML table (step, question, answer,
detail) with compact diagrams of the variable before and the result after.
A FunctionGraph keeps one trace per replacement in ``history``;
:func:`history_table` shows them all.
"""

import html

from nbgraph.core.graph import Constant, Variable, ancestors
from nbgraph.core.type import NarrowingTrace
from nbgraph.display.names import one_line, safe_repr

__all__ = [
    "explain_narrowing",
    "failing_step",
    "trace_summary",
    "trace_text",
    "trace_html",
    "replacement_text",
    "replacement_html",
    "history_table",
    "history_html",
    "HistoryView",
]

_DIAGRAM_NODES = 40  # node limit of the before/after pictures


def explain_narrowing(target_type, variable, allow_convert=True):
    """Fit ``variable`` to ``target_type`` as ``filter_variable`` does, and return the trace.

    The trace's ``steps`` list every decision, ``result`` is what
    ``target_type.filter_variable(variable, allow_convert)`` returned (None on
    refusal) and ``error`` the exception it raised (None on success).  Nothing
    is raised: a refusal is part of the explanation, and its last step is the
    one that failed (see :func:`failing_step`).
    """
    trace = NarrowingTrace(target_type, variable)
    try:
        target_type.filter_variable(variable, allow_convert=allow_convert, trace=trace)
    except Exception as exc:  # refusals (TypeError/ValueError) and anything unexpected
        if trace.error is None:
            trace.error = exc
        trace.result = None
    return trace


def failing_step(trace):
    """``(number, step)`` of the step where a refused narrowing stopped, else None.

    Steps are numbered from 1, as in :func:`trace_text`.
    """
    if trace.error is None or not trace.steps:
        return None
    return len(trace.steps), trace.steps[-1]


def trace_summary(trace):
    """One line: how the narrowing ended (kept, converted by ..., refused)."""
    if trace.error is not None:
        found = failing_step(trace)
        if found is None:
            return "refused: %s" % one_line(trace.error)
        number, step = found
        return "refused at step %d (%s)" % (number, _step_text(step))
    result = trace.result
    if result is None:
        return "undecided (no decision recorded)"
    if result is trace.variable:
        if trace.steps and trace.steps[0].answer == "yes":
            return "kept: same type"
        return "kept: its type is as or more specific than the target"
    if not isinstance(trace.variable, Variable):
        return "wrapped as a constant of type %s" % (result.type,)
    if result.owner is not None:
        return "converted by %s" % (result.owner.op,)
    return "replaced by %s" % (safe_repr(result),)


def trace_text(trace):
    """The trace as numbered lines, naming the failing step of a refusal."""
    failed = failing_step(trace)
    lines = ["narrowing %s%s to %s" % (safe_repr(trace.variable), _type_suffix(trace.variable),
                                       trace.target_type)]
    width = len(str(len(trace.steps)))
    for i, step in enumerate(trace.steps, 1):
        line = "%*d. %s" % (width, i, _step_text(step))
        if step.detail:
            line += " - %s" % step.detail
        if failed is not None and failed[0] == i:
            line += "   <- failed here"
        lines.append(line)
    if trace.error is not None:
        where = "refused at step %d (%s)" % (failed[0], failed[1].question) if failed \
            else "refused"
        lines.append("%s: %s" % (where, one_line(trace.error)))
    elif trace.result is not None:
        line = "result: %s of type %s" % (safe_repr(trace.result), trace.result.type)
        summary = trace_summary(trace)
        if summary.startswith("converted"):
            line += ", " + summary
        elif trace.result is trace.variable:
            line += " (the variable itself)"
        lines.append(line)
    else:
        lines.append("no decision recorded yet")
    return "\n".join(lines)


def _step_text(step):
    """``same type? no``; ``dimension 0: target 2, variable 3: conflict``."""
    question = str(step.question)
    sep = ": " if ":" in question and not question.endswith("?") else " "
    return "%s%s%s" % (question, sep, step.answer)


# ---------------------------------------------------------------------------
# HTML

_ANSWER_COLORS = {"yes": "#2e7d32", "equal": "#2e7d32", "no": "#8a4b00",
                  "conflict": "#c62828", "undecided": "#666666"}
_TABLE_STYLE = "border-collapse:collapse;font-size:0.9em;margin:0.3em 0"
_CELL = "border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top"


def trace_html(trace, diagrams=True):
    """The trace as an HTML table (step, question, answer, detail), plus diagrams.

    With ``diagrams`` the variable (before) and the result (after) are drawn
    as inline SVG compact diagrams, what the narrowing added outlined; when
    ``dot`` is missing a one-line hint takes their place.
    """
    parts = ['<div class="nbgraph-narrowing">']
    parts.append("<p style=\"margin:0.2em 0\"><b>narrowing</b> <code>%s</code>%s to "
                 "<code>%s</code>: %s</p>" % (
                     _h(safe_repr(trace.variable)), _h(_type_suffix(trace.variable)),
                     _h(trace.target_type), _outcome_html(trace)))
    parts.append(_steps_table(trace))
    if trace.error is not None:
        parts.append('<p style="margin:0.2em 0;color:#c62828">%s</p>' % _h(
            one_line(trace.error)))
    if diagrams:
        parts.append(_before_after(trace))
    parts.append("</div>")
    return "\n".join(parts)


def _outcome_html(trace):
    summary = trace_summary(trace)
    color = "#c62828" if trace.error is not None else "#2e7d32"
    return '<b style="color:%s">%s</b>' % (color, _h(summary))


def _steps_table(trace):
    failed = failing_step(trace)
    rows = ['<table class="nbgraph-steps" style="%s">' % _TABLE_STYLE,
            "<thead><tr>%s</tr></thead>" % "".join(
                '<th style="%s">%s</th>' % (_CELL, name)
                for name in ("step", "question", "answer", "detail")),
            "<tbody>"]
    last = len(trace.steps)
    for i, step in enumerate(trace.steps, 1):
        style = ""
        mark = ""
        if failed is not None and failed[0] == i:
            style = ' style="background:#fde0dd"'
            mark = ' <span title="the narrowing stopped here">&#10007; failed here</span>'
        elif trace.error is None and trace.result is not None and i == last:
            style = ' style="background:#e8f5e9"'
        color = _ANSWER_COLORS.get(str(step.answer), "#222222")
        rows.append('<tr%s><td style="%s">%d%s</td><td style="%s">%s</td>'
                    '<td style="%s;color:%s"><b>%s</b></td><td style="%s">%s</td></tr>' % (
                        style, _CELL, i, mark, _CELL, _h(step.question), _CELL, color,
                        _h(step.answer), _CELL, _h(step.detail)))
    if not trace.steps:
        rows.append('<tr><td style="%s" colspan="4"><i>no steps recorded</i></td></tr>' % _CELL)
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _before_after(trace):
    from nbgraph.display import rich
    from nbgraph.display.diagram import diagram

    variable, result = trace.variable, trace.result
    figures = []
    if isinstance(variable, Variable):
        figures.append(("before: the variable", _svg_or_hint(
            rich, diagram(variable, max_nodes=_DIAGRAM_NODES),
            "nbgraph diagram of the variable before narrowing")))
    if trace.error is not None:
        figures.append(("after: refused", "<p><i>no result: the variable cannot stand for "
                                          "%s</i></p>" % _h(trace.target_type)))
    elif isinstance(result, Variable):
        if result is variable:
            figures.append(("after: unchanged", "<p><i>the variable itself is used</i></p>"))
        else:
            old = set(ancestors([variable])) if isinstance(variable, Variable) else set()
            new_nodes = {v.owner for v in ancestors([result])
                         if v not in old and v.owner is not None}
            picture = diagram(result, max_nodes=_DIAGRAM_NODES,
                                       highlight=new_nodes | {result})
            figures.append(("after: %s" % trace_summary(trace), _svg_or_hint(
                rich, picture, "nbgraph diagram of the result, what narrowing added outlined")))
    if not figures:
        return ""
    cells = ['<figure style="margin:0.3em 1.5em 0.3em 0;min-width:0;max-width:100%%">'
             '<figcaption style="font-size:0.85em;color:#555">%s</figcaption>%s</figure>'
             % (_h(caption), body) for caption, body in figures]
    return ('<div style="display:flex;flex-wrap:wrap;align-items:flex-start">%s</div>'
            % "".join(cells))


def _svg_or_hint(rich, graph, alt="nbgraph compact diagram"):
    from nbgraph.display.picture import img_html

    svg, hint = rich._try_svg(graph)
    if svg is not None:
        return img_html(svg, alt)
    return '<p style="color:#666"><i>%s</i></p>' % _h(hint)


# ---------------------------------------------------------------------------
# FunctionGraph history


def replacement_text(rep):
    """One history entry: step, reason, old -> new, then its trace, indented."""
    head = "step %d (%s): %s -> %s" % (rep.step, rep.reason or "no reason given",
                                       safe_repr(rep.old), safe_repr(rep.new))
    if rep.requested is not rep.new:
        head += " (requested %s)" % safe_repr(rep.requested)
    body = "\n".join("    " + line for line in trace_text(rep.trace).split("\n")) \
        if rep.trace is not None else "    (no trace)"
    return head + "\n" + body


def replacement_html(rep):
    """One history entry as a small HTML table row set with its trace."""
    return ('<div class="nbgraph-replacement">%s</div>'
            % _history_table_html([rep], open_traces=True))


def history_html(fgraph):
    """The rewrite history of ``fgraph`` as an HTML table (one row per replacement)."""
    return _history_table_html(list(fgraph.history))


def _history_table_html(entries, open_traces=False):
    if not entries:
        return "<p><i>no replacements yet</i></p>"
    head = "".join('<th style="%s">%s</th>' % (_CELL, name) for name in (
        "step", "reason", "old", "new", "narrowing"))
    rows = ['<table class="nbgraph-history" style="%s">' % _TABLE_STYLE,
            "<thead><tr>%s</tr></thead><tbody>" % head]
    for rep in entries:
        new = "<code>%s</code><br><small>%s</small>" % (_h(safe_repr(rep.new)),
                                                          _h(_type_of(rep.new)))
        if rep.requested is not rep.new:
            new += "<br><small>requested <code>%s</code></small>" % _h(safe_repr(rep.requested))
        if rep.trace is not None:
            trace = ('<details%s><summary>%d steps: %s</summary>%s</details>' % (
                " open" if open_traces else "", len(rep.trace.steps),
                _h(trace_summary(rep.trace)), trace_html(rep.trace, diagrams=False)))
        else:
            trace = "<i>no trace</i>"
        rows.append(
            '<tr><td style="%s">%d</td><td style="%s">%s</td>'
            '<td style="%s"><code>%s</code><br><small>%s</small></td>'
            '<td style="%s">%s</td><td style="%s">%s</td></tr>' % (
                _CELL, rep.step, _CELL, _h(rep.reason or ""), _CELL, _h(safe_repr(rep.old)),
                _h(_type_of(rep.old)), _CELL, new, _CELL, trace))
    rows.append("</tbody></table>")
    return "\n".join(rows)


class HistoryView:
    """The rewrite history of a FunctionGraph, for display (see :func:`history_table`).

    ``rows()`` gives one dict per replacement; ``text()`` and ``html()`` the
    two renderings; in a notebook it shows as the HTML table.  It reads
    ``fgraph.history`` when displayed, so it follows later rewrites.
    """

    def __init__(self, fgraph):
        self.fgraph = fgraph

    def rows(self):
        """step, reason, old, new, requested, summary and trace of each replacement."""
        return [{"step": rep.step, "reason": rep.reason, "old": rep.old, "new": rep.new,
                 "requested": rep.requested,
                 "summary": trace_summary(rep.trace) if rep.trace is not None else None,
                 "trace": rep.trace} for rep in self.fgraph.history]

    def text(self):
        history = self.fgraph.history
        if not history:
            return "history of %r: no replacements" % (self.fgraph,)
        lines = ["history of %r: %d replacement%s" % (
            self.fgraph, len(history), "" if len(history) == 1 else "s")]
        lines.extend(replacement_text(rep) for rep in history)
        return "\n".join(lines)

    def html(self):
        return ('<div class="nbgraph-history"><p style="margin:0.2em 0"><b>history</b> of '
                '<code>%s</code></p>%s</div>' % (_h(repr(self.fgraph)),
                                                  history_html(self.fgraph)))

    def __str__(self):
        return self.text()

    def __repr__(self):
        return "<history of %r: %d replacements>" % (self.fgraph, len(self.fgraph.history))

    def _repr_mimebundle_(self, include=None, exclude=None):
        from nbgraph.display import rich

        return rich.mimebundle(self, include=include, exclude=exclude)


def history_table(fgraph):
    """A displayable view of ``fgraph.history`` (each replacement with its trace).

    Accepts a FunctionGraph or a compiled Function (its ``fgraph``).
    """
    from nbgraph.core.fgraph import FunctionGraph

    if not isinstance(fgraph, FunctionGraph):
        inner = getattr(fgraph, "fgraph", None)
        if not isinstance(inner, FunctionGraph):
            raise TypeError("history_table expects a FunctionGraph or a compiled Function, "
                            "got %s" % type(fgraph).__name__)
        fgraph = inner
    return HistoryView(fgraph)


# ---------------------------------------------------------------------------
# small helpers


def _type_of(var):
    return str(var.type) if isinstance(var, Variable) else type(var).__name__


def _type_suffix(obj):
    if isinstance(obj, Variable) and not (obj.name is None and obj.owner is None
                                          and not isinstance(obj, Constant)):
        return " of type %s" % (obj.type,)
    return ""


def _h(obj):
    return html.escape(str(obj), quote=True)
