"""``theano.printing``: ``pp``, ``debugprint`` and ``pydotprint`` (drawn with
nbgraph's diagrams)."""

from nbgraph.display.pretty import pp
from nbgraph.display.text import dprint

__all__ = ["pp", "debugprint", "pydotprint"]


def debugprint(obj, depth=-1, print_type=False, file=None, ids="CHAR", **kwargs):
    """Theano's ``debugprint``: :func:`nbgraph.dprint` (``depth=-1``: everything)."""
    return dprint(obj, print_type=print_type, file=file, depth=None if depth in (-1, None)
                  else depth, ids=ids, **kwargs)


def pydotprint(fct, outfile=None, compact=True, format="png", with_ids=False,
               var_with_name_simple=False, print_output_file=True, return_image=False,
               **kwargs):
    """Theano's ``pydotprint``: nbgraph's diagram of ``fct`` (a Function, Variable or
    list); written to ``outfile`` when given (the format from its extension),
    otherwise returned as a :class:`~nbgraph.display.view.GraphView` (it displays
    in a notebook, and falls back to text without graphviz)."""
    import os

    from nbgraph.display.diagram import diagram
    from nbgraph.display.view import GraphView

    style = "compact" if compact else "structure"
    if outfile is None and not return_image:
        return GraphView(fct, style=style)
    graph = diagram(fct, style=style)
    if return_image:
        return graph.pipe(format=format)
    stem, ext = os.path.splitext(outfile)
    written = graph.render(stem, format=ext.lstrip(".") or format, cleanup=True)
    if print_output_file:
        print("The output file is available at", written)
    return written
