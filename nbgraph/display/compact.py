"""The "compact" diagram style: Apply boxes and Variable ellipses, with types and a legend.

See :mod:`nbgraph.display.diagram` for what it draws; :class:`CompactStyle`
builds the Digraph from a :class:`~nbgraph.display.drawing.Walk` of the graph.
"""

import graphviz

from nbgraph.core.graph import Apply, Constant
from nbgraph.display.drawing import (
    COLORS,
    LINKER_NAMES,
    GraphSource,
    Walk,
    add_summary,
    copied_variables,
    dot_label,
    new_digraph,
    op_text,
    shorten,
    speed_up_big_layouts,
    type_text,
    var_text,
    wrap_lines,
)

__all__ = ["CompactStyle"]


class CompactStyle:
    """Draws a :class:`~nbgraph.display.drawing.Walk` in the compact style (:meth:`build`)."""

    def __init__(self, source, walk, show_types, highlight, legend=True, rankdir="TB"):
        self.source = source
        self.walk = walk
        self.show_types = show_types
        self.highlight = highlight
        self.legend = legend
        self.rankdir = rankdir
        self.used = set()  # colour categories drawn, for the legend

    def build(self):
        """The Digraph: nodes, input edges (view/destroy marked), summary, legend, inner graphs."""
        g = new_digraph(self.rankdir)
        speed_up_big_layouts(g, len(self.walk.order))
        names = self.walk.names
        for item in self.walk.order:
            if isinstance(item, Apply):
                self._apply_node(g, item)
            else:
                self._variable_node(g, item)
        copies = copied_variables(self.walk)
        for node in self.walk.applys():
            view = _index_map(node.op, "view_map")
            destroy = _index_map(node.op, "destroy_map")
            many_in = len(node.inputs) > 1
            for i, inp in enumerate(node.inputs):
                if inp not in names:
                    continue
                tail = names[inp]
                copy = copies.get((node, i))
                if copy is not None:
                    tail = copy
                    self._variable_node(g, inp, name=copy)
                # labels sit at the ends of edges: they do not stretch the layout
                attrs = {}
                words = [str(i)] if many_in else []
                if i in destroy:
                    words.append("destroy")
                    attrs.update(color=COLORS["destroy"], fontcolor=COLORS["destroy"],
                                 style="bold", penwidth="2")
                elif i in view:
                    words.append("view")
                    attrs.update(color=COLORS["view"], fontcolor=COLORS["view"],
                                 style="dashed")
                if words:
                    attrs["headlabel"] = " ".join(words)
                g.edge(tail, names[node], **attrs)
            many_out = len(node.outputs) > 1
            for j, out in enumerate(node.outputs):
                if out not in names:
                    continue
                if many_out:
                    g.edge(names[node], names[out], taillabel=str(j))
                else:
                    g.edge(names[node], names[out])
        add_summary(g, self.walk, "compact")
        if self.legend:
            self._legend(g)
        from nbgraph.display.inner import add_inner_clusters  # loops' bodies as boxes

        add_inner_clusters(g, self.walk, self._draw_inner)
        return g

    def _draw_inner(self, fgraph, prefix):
        source = GraphSource.of(fgraph)
        walk = Walk(source, len(self.walk.order) or 1)
        walk.names = {item: prefix + name for item, name in walk.names.items()}
        drawn = CompactStyle(source, walk, self.show_types, self.highlight, legend=False).build()
        first = walk.names.get(fgraph.outputs[0]) if fgraph.outputs else None
        return drawn, first

    def _apply_node(self, g, node):
        text = op_text(node.op)
        fill = COLORS["apply"]
        kinds = self.source.kinds
        if kinds is not None and node in kinds:
            fill = COLORS.get(kinds[node], fill)
            self.used.add(("kind", kinds[node]))
        attrs = dict(shape="box", style="rounded,filled", fillcolor=fill,
                     color=COLORS["apply_border"], tooltip=dot_label(text))
        self._mark(node, attrs)
        g.node(self.walk.names[node], dot_label(*wrap_lines(text)), **attrs)

    def _category(self, var):
        walk = self.walk
        if isinstance(var, Constant):
            return "constant"
        if var.owner is None and _is_shared(var):
            return "shared"
        if var in walk.input_set:
            return "input"
        if var in walk.output_set:
            return "output"
        return "variable"

    def _variable_node(self, g, var, name=None):
        """Draw ``var``; ``name`` is given for a repeated drawing of a much-read variable."""
        walk = self.walk
        first = self._first_line(var, repeated=name is not None)
        lines = [shorten(first)] if first else []
        type_line = type_text(var) if self.show_types else None
        if type_line:
            lines.append(type_line)
        category = self._category(var)
        self.used.add(category)
        attrs = _variable_attrs(category)
        if var in walk.output_set:
            attrs["peripheries"] = "2"
            self.used.add("output")
        if not lines:  # an unnamed intermediate drawn without types: a small dot
            attrs.update(shape="circle", width="0.12", height="0.12", fixedsize="true")
        tooltip = "%s: %s" % (first or var_text(var), type_text(var))
        if name is not None:  # a repeated drawing of a much-read root
            styles = [part for part in attrs["style"].split(",") if part != "bold"]
            attrs["style"] = ",".join(styles + ["dashed"])
            tooltip += " (drawn again: read by many nodes)"
        attrs["tooltip"] = dot_label(tooltip)
        self._mark(var, attrs)
        g.node(name or walk.names[var], dot_label(*lines), **attrs)

    def _first_line(self, var, repeated):
        """The name line of a variable's node, or None when its type line says it all."""
        label = self.source.labels.get(var)
        if label is not None:
            return label
        if var.name is not None:
            return var.name
        if isinstance(var, Constant) or (var.owner is None and not self.show_types):
            return var_text(var)  # a constant's value, or <Type> for an unnamed root
        if repeated:
            return var_text(var)  # a repeated drawing says which variable it repeats
        return None  # an unnamed root or intermediate: its type line says it all

    def _mark(self, item, attrs):
        if item in self.highlight:
            attrs["color"] = COLORS["highlight"]
            attrs["penwidth"] = "3"
            self.used.add("highlight")

    def _legend(self, g):
        """The legend: one coloured swatch per category drawn, as the graph's label.

        A graph label is part of the picture (below it, centred), so it is
        never clipped the way a cluster at the side of a wide layout can be.
        """
        entries = []
        for category, text in _LEGEND:
            if category in self.used:
                fill, border = _LEGEND_COLORS[category]
                entries.append((fill, border, text))
        kinds = self.source.kinds or {}
        counts = {}
        for node in self.walk.applys():
            kind = kinds.get(node)
            if kind is not None:
                counts[kind] = counts.get(kind, 0) + 1
        order = [k for k in LINKER_NAMES if k in counts]
        order += sorted(k for k in counts if k not in LINKER_NAMES)
        for kind in order:
            entries.append((COLORS.get(kind, COLORS["apply"]), COLORS["apply_border"],
                            "runs in %s (%s)" % (LINKER_NAMES.get(kind, kind),
                                                 _plural(counts[kind], "node"))))
        if len(entries) < 2 and not order:
            return  # one colour explains itself
        cells = []
        for fill, border, text in entries:
            cells.append('<TD BGCOLOR="%s" COLOR="%s" BORDER="1" WIDTH="12" HEIGHT="10" '
                         'FIXEDSIZE="TRUE"></TD><TD ALIGN="LEFT">%s</TD>'
                         % (fill, border, graphviz.escape(text).replace("&", "&amp;")
                            .replace("<", "&lt;").replace(">", "&gt;")))
        rows = ["<TR>%s</TR>" % "".join(cells[i:i + _LEGEND_PER_ROW])
                for i in range(0, len(cells), _LEGEND_PER_ROW)]
        g.attr(label='<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="1">'
                     '%s</TABLE>>' % "".join(rows),
               labelloc="b", labeljust="c", fontsize="9", fontcolor="#444444")


#: Legend entries, in order: (category, text).
_LEGEND = (
    ("input", "input"),
    ("shared", "shared variable"),
    ("constant", "constant"),
    ("output", "output"),
    ("highlight", "changed"),
)
_LEGEND_COLORS = {
    "input": (COLORS["input"], COLORS["input_border"]),
    "shared": (COLORS["shared"], COLORS["shared_border"]),
    "constant": (COLORS["constant"], COLORS["constant_border"]),
    "output": (COLORS["output"], COLORS["output_border"]),
    "highlight": ("#ffffff", COLORS["highlight"]),
}
_LEGEND_PER_ROW = 3


#: How each category of variable is drawn: (shape, style, more attributes); the
#: colours are ``COLORS[category]`` and ``COLORS[category + "_border"]``.
_VARIABLE_LOOK = {
    "constant": ("box", "rounded,filled", {}),
    "shared": ("box", "rounded,filled", {}),
    "input": ("ellipse", "filled,bold", {}),
    "output": ("ellipse", "filled", {}),
    "variable": ("ellipse", "filled", {"fontsize": "10"}),
}


def _variable_attrs(category):
    """Fresh DOT attributes of a variable node of ``category``."""
    shape, style, more = _VARIABLE_LOOK[category]
    return dict(shape=shape, style=style, fillcolor=COLORS[category],
                color=COLORS[category + "_border"], **more)


def _plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def _is_shared(var):
    """True for a shared variable (a root whose value lives between calls)."""
    return hasattr(var, "get_value") and hasattr(var, "container")


def _index_map(op, attr):
    """The input indices named in ``op.view_map`` / ``op.destroy_map``."""
    mapping = getattr(op, attr, None) or {}
    found = set()
    try:
        for inputs in mapping.values():
            found.update(inputs)
    except (AttributeError, TypeError):
        return set()
    return found
