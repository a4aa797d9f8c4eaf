"""Ways to look at graphs: text trees, diagrams, rich notebook displays, narrowing traces.

- :func:`dprint` / :func:`dprint_text`: indented text trees.
- :func:`diagram`: a :class:`graphviz.Digraph` ("compact" or "structure"
  style); :func:`render_svg` renders it with ``dot`` (with a timeout).
- :func:`explain_narrowing`: how ``Type.filter_variable`` fits a Variable to
  a Type, step by step; :func:`history_table`: every replacement a
  FunctionGraph went through, with its trace.
- Rich display: importing this package gives Variable, Apply, FunctionGraph,
  Replacement, NarrowingTrace, Function and ProfileStats a
  ``_repr_mimebundle_`` (see :mod:`nbgraph.display.rich` for how, and why the
  core packages do not import display themselves).

Display only reads graphs; nothing here changes them.
"""

from nbgraph.display.text import dprint, dprint_text
from nbgraph.display.diagram import diagram
from nbgraph.display.rich import DiagramUnavailable, install, mimebundle, render_svg
from nbgraph.display.narrowing import (
    HistoryView,
    explain_narrowing,
    failing_step,
    history_table,
    trace_html,
    trace_text,
)
from nbgraph.display.widgets import GraphExplorer  # ipywidgets is imported on first use

install()

__all__ = [
    "dprint",
    "dprint_text",
    "diagram",
    "render_svg",
    "DiagramUnavailable",
    "mimebundle",
    "explain_narrowing",
    "failing_step",
    "trace_text",
    "trace_html",
    "history_table",
    "HistoryView",
    "GraphExplorer",
]
