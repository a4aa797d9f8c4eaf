"""GraphView: a displayable diagram of a graph drawn with chosen options.

Variables, Apply nodes and functions display themselves with default options;
a GraphView fixes the style, the type labels and the node limit, which is
what the ``%%graph`` magic and the explorer need.  Like every display here it
never raises: without ``dot`` it shows the text tree and a one-line hint.
"""

from nbgraph.display import rich
from nbgraph.display.text import dprint_text

__all__ = ["GraphView"]


class GraphView:
    """Show ``obj`` (a Variable, a list of them, a FunctionGraph or Function) as a diagram.

    ``style`` is "auto", "compact", "structure" or "dense"; ``show_types`` puts types on
    variables; ``as_text`` shows the dprint tree instead of a picture;
    ``labels`` (``{Variable: name}``) names outputs the way the user does
    (``%%graph`` passes the names its cell bound); other keywords
    (``rankdir``, ``collapse``, ``expand``, ``values``, ``profile``) go to
    :func:`~nbgraph.display.diagram`.
    """

    def __init__(self, obj, style="auto", show_types=True, max_nodes=200, as_text=False,
                 labels=None, **options):
        from nbgraph.display.diagram import STYLES

        if style not in STYLES:
            raise ValueError("style must be one of %s, got %r" % (
                ", ".join(repr(s) for s in STYLES), style))
        self.obj = obj
        self.style = style
        self.show_types = show_types
        self.max_nodes = max_nodes
        self.as_text = as_text
        self.labels = dict(labels or {})
        self.options = options  # more diagram() keywords: rankdir, collapse, expand, ...

    def text(self):
        """The dprint text of the graph."""
        return dprint_text(self.obj, print_type="short" if self.show_types else False)

    def _repr_mimebundle_(self, include=None, exclude=None):
        try:
            text = self.text().rstrip("\n")
            if not self.as_text:  # asked-for text is shown whole; next to a picture, cut
                text = rich._cap(text)
        except Exception as exc:  # a display hook must never fail the cell
            text = "%s\n(text unavailable: %s)" % (rich._safe_repr(self.obj), rich._one_line(exc))
        bundle = {"text/plain": text}
        if self.as_text:
            return bundle
        want = rich.wanted_types(include, exclude)
        return rich.picture_bundle(self.obj, self.svg, want, what=self.style, text=text)

    def svg(self):
        """The SVG text of the diagram (raises DiagramUnavailable without ``dot``)."""
        kwargs = {"labels": self.labels} if self.labels else {}
        kwargs.update(self.options)
        return rich.render_svg(self.obj, style=self.style, show_types=self.show_types,
                               max_nodes=self.max_nodes, **kwargs)

    def __repr__(self):
        return self.text().rstrip("\n")

