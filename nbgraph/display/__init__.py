"""Ways to look at graphs: text trees, diagrams, rich notebook displays, narrowing traces.

- :func:`dprint` / :func:`dprint_text`: indented text trees; :func:`pp`: one
  infix expression.
- :func:`diagram`: a :class:`graphviz.Digraph` ("compact" or "structure"
  style); :func:`render_svg` renders it with ``dot`` (with a timeout).
- :func:`side_by_side`: several diagrams of one graph as one picture;
  :func:`type_notation`: ``float64[?, 3]`` for a tensor type.
- :func:`explain_narrowing`: how ``Type.filter_variable`` fits a Variable to
  a Type, step by step; :func:`history_table`: every replacement a
  FunctionGraph went through, with its trace.
- Rich display: importing this package gives Variable, Apply, FunctionGraph,
  Replacement, NarrowingTrace, Function and ProfileStats a
  ``_repr_mimebundle_`` (see :mod:`nbgraph.display.rich` for how, and why the
  core packages do not import display themselves).

Display only reads graphs; nothing here changes them.
"""

import importlib
import sys
import types

from nbgraph.display.hooks import install
from nbgraph.display.progress import install_reporter as _install_progress
from nbgraph.display.text import dprint, dprint_text

install()
_install_progress()

# Everything else loads on first use (graphviz, ipywidgets and the rewrite
# machinery are not needed to import nbgraph): name -> defining module.
_LAZY = {
    "diagram": "diagram",
    "render_svg": "rich",
    "DiagramUnavailable": "rich",
    "mimebundle": "rich",
    "explain_narrowing": "narrowing",
    "failing_step": "narrowing",
    "trace_text": "narrowing",
    "trace_html": "narrowing",
    "history_table": "narrowing",
    "HistoryView": "narrowing",
    "GraphExplorer": "widgets",
    "GraphView": "view",
    "GraphNavigator": "navigator",
    "pp": "pretty",
    "side_by_side": "picture",
    "type_notation": "names",
}


class _Package(types.ModuleType):
    """This package: importing the submodule ``nbgraph.display.diagram`` (which
    rendering does) must not replace the function ``nbgraph.display.diagram``."""

    def __setattr__(self, name, value):
        if name == "diagram" and isinstance(value, types.ModuleType):
            value = value.diagram
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'nbgraph.display' has no attribute %r" % (name,))
    value = getattr(importlib.import_module("nbgraph.display." + module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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
    "GraphView",
    "GraphNavigator",
    "pp",
    "side_by_side",
    "type_notation",
]
