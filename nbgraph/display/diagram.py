"""Graphviz diagrams of graphs: :func:`diagram`.

Two styles:

``"compact"`` (the default)
    One box per Apply node (its Op, wrapped when long) and one ellipse per
    Variable (its name, its type when ``show_types``).  Graph inputs are
    green, outputs yellow with a double border, constants grey boxes holding
    their value.  Input positions label the edges of nodes with several
    inputs.  An input an Op views (``op.view_map``) is joined to it by a
    dashed blue edge labelled ``view``; an input it overwrites
    (``op.destroy_map``) by a bold red edge labelled ``destroy``.  Long Op
    names (fused elementwise loops) are wrapped, the full name kept as the
    tooltip.  For a compiled Function each Apply is coloured by the linker
    that runs it (``program.kinds``: C or Python), with a legend.

``"structure"``
    The objects and the references between them, as in the graph-structures
    picture of the seed: Apply nodes are blue boxes, Variables red boxes, Ops
    green circles and Types purple boxes, and the arrows are the ``owner``,
    ``inputs``, ``outputs``, ``op`` and ``type`` fields (``outputs`` dashed:
    it is the back pointer).  Equal Ops and equal Types are drawn once.

DOT node names are numbers handed out in a breadth-first walk from the
outputs (``n0`` is the first output), never ``id()``, so the same graph gives
the same DOT source in every run.  When the graph has more than ``max_nodes``
Apply and Variable nodes, the ``max_nodes`` nearest to the outputs are drawn
and one dashed node, "… N more nodes", stands for the rest.  Two more
measures keep ``dot`` fast on what is drawn: a variable (or, in the structure
style, an Op or Type) used by more than six drawn nodes is drawn again, dashed,
next to each user instead of as one hub with edges spanning the whole picture
(as dprint repeats an id); edge labels are placed outside the ranking
(``headlabel``/``taillabel`` in the compact style, ``xlabel`` in a big
structure picture); and from 80 drawn nodes on ``dot`` is asked for a cheaper
layout (``mclimit``, ``nslimit``).  Graphs of thousands of nodes cut to the
default ``max_nodes`` then lay out in well under a second.

:func:`diagram` only builds a :class:`graphviz.Digraph`; rendering is left to
the caller (``render_svg`` in :mod:`nbgraph.display.rich`, or graphviz's own
methods), which keeps it cheap enough for a widget to call on every toggle.
"""

import re
from collections import deque

import graphviz

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.display.names import output_labels, type_notation
from nbgraph.display.text import outputs_of

__all__ = ["diagram", "STYLES", "COLORS", "LINKER_NAMES"]

STYLES = ("compact", "structure", "dense", "auto")

#: ``style="auto"`` draws "compact" up to this many Apply nodes (without scopes), else "dense".
AUTO_DENSE = 40

#: Colours used by the diagrams (fill colours are light so black text stays readable).
COLORS = {
    # compact style
    "apply": "#dde6f5",
    "apply_border": "#4a6a9c",
    "input": "#d4edda",
    "input_border": "#2e7d32",
    "output": "#fff3c4",
    "output_border": "#b58900",
    "variable": "#ffffff",
    "variable_border": "#6b6b6b",
    "constant": "#eeeeee",
    "constant_border": "#8a8a8a",
    "shared": "#e8dcf5",
    "shared_border": "#6a3d9a",
    "view": "#1f6fb4",
    "destroy": "#c62828",
    "highlight": "#d81b60",
    "summary": "#9e9e9e",
    "edge": "#555555",
    # linker of a compiled Function's nodes
    "c": "#fdd49e",
    "py": "#c6dbef",
    # the Dask linker's kinds (DaskFunction.program.kinds)
    "chunked": "#fdae6b",
    "dask": "#c7e9c0",
    "driver": "#e5e5e5",
    # structure style (the seed's picture)
    "s_apply": "#9ecae1",
    "s_apply_border": "#08519c",
    "s_variable": "#fcbba1",
    "s_variable_border": "#a50f15",
    "s_op": "#a1d99b",
    "s_op_border": "#006d2c",
    "s_type": "#dadaeb",
    "s_type_border": "#54278f",
}

#: Legend text of each linker kind found in ``Function.program.kinds``.
LINKER_NAMES = {"c": "C", "py": "Python", "chunked": "C kernel per chunk",
                "dask": "dask.array", "driver": "driver"}

_FONT = "Helvetica"
_WRAP = 32          # characters per line of an Op label
_WRAP_LINES = 6     # at most this many lines, then an ellipsis
_ELLIPSIS = "\u2026"
_FANOUT = 6         # a variable/Op/Type used by more drawn nodes is drawn once per user
_BIG = 80           # from this many drawn nodes on, dot is told to work less hard

_EXPECTED = ("a Variable, a list of Variables, an Apply, a FunctionGraph or a compiled "
             "Function")


def diagram(obj, style="auto", show_types=True, max_nodes=200, highlight=None,
            labels=None, legend=True, rankdir="TB", collapse=None, expand=(), values=None,
            profile=None):
    """A :class:`graphviz.Digraph` drawing the graph behind ``obj``.

    Parameters
    ----------
    obj
        A Variable, a list or tuple of Variables (and Applys), an Apply, a
        FunctionGraph, or a compiled Function (anything whose ``fgraph`` is a
        FunctionGraph; its ``program.kinds`` colour the nodes).
    style : {"auto", "compact", "structure", "dense"}
        See the module docstring; "dense" (:mod:`nbgraph.display.dense`): one
        box per Apply with its output types inside, scopes as collapsible
        boxes.  "auto" (the default) is "compact" for small graphs without
        scopes (at most :data:`AUTO_DENSE` Apply nodes), else "dense".
    show_types : bool
        Compact: write each Variable's type under its name.  Structure: draw
        the Type objects (purple boxes) and the ``type`` arrows.
    max_nodes : int
        Most Apply + Variable nodes drawn; the rest become one summary node.
    highlight
        Variables and/or Apply nodes to outline in a strong colour (a widget
        or a narrowing trace uses this to show what a rewrite inserted).
    labels
        ``{Variable: name}``: names to draw on outputs (the names a ``%%graph``
        cell bound, say).  A compiled Function's outputs are labelled with
        the caller's names and ``update -> W`` without being asked.
    legend
        Compact style: explain the colours used (inputs, shared variables,
        constants, outputs, and where a Function's nodes run) in a legend
        under the picture.

    rankdir : {"TB", "LR"}
        Top to bottom (the default) or left to right.
    collapse, expand
        Dense style: ``collapse=True`` draws every scope as one box except the
        paths listed in ``expand`` (``["gradient", "layer3"]``; an Apply's
        name such as ``"a12"`` opens its inner graph); a list collapses only
        those; None (the default) collapses all of a graph of more than
        :data:`~nbgraph.display.dense.AUTO_COLLAPSE` Apply nodes.
    values, profile
        Dense style overlays: ``{Variable: value}`` writes run-time shapes
        (and small values) on edges; a ProfileStats colours nodes by their
        share of the time and lists the slowest in the legend.

    The result's ``source`` is deterministic.  Render it with
    ``nbgraph.display.render_svg(graph)`` or graphviz's ``pipe``/``render``.
    """
    if style not in STYLES:
        raise ValueError("style must be one of %s, got %r" % (
            ", ".join(repr(s) for s in STYLES), style))
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValueError("max_nodes must be a positive int, got %r" % (max_nodes,))
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError("rankdir must be 'TB' or 'LR', got %r" % (rankdir,))
    source = GraphSource.of(obj)
    if labels:
        source.labels.update(labels)
    if style == "auto":
        dense = (collapse is not None or expand or values is not None or profile is not None
                 or _is_big_or_scoped(source.outputs))
        style = "dense" if dense else "compact"
    if style == "dense":
        from nbgraph.display.dense import DenseLayout

        return DenseLayout(source.outputs, source.inputs, labels=source.labels,
                           kinds=source.kinds, show_types=bool(show_types), max_nodes=max_nodes,
                           highlight=_highlight_set(highlight), legend=bool(legend),
                           rankdir=rankdir, collapse=collapse, expand=expand, values=values,
                           profile=profile).build()
    walk = _Walk(source, max_nodes)
    marked = _highlight_set(highlight)
    if style == "compact":
        return _Compact(source, walk, bool(show_types), marked, bool(legend), rankdir).build()
    return _Structure(source, walk, bool(show_types), marked, rankdir).build()


def _is_big_or_scoped(outputs):
    """True when the graph has more than AUTO_DENSE Apply nodes or a node built in a scope."""
    seen = set()
    stack = [o.owner for o in outputs if o.owner is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if len(seen) > AUTO_DENSE or getattr(node.outputs[0].tag, "scope", None):
            return True
        stack.extend(i.owner for i in node.inputs if i.owner is not None)
    return False


# ---------------------------------------------------------------------------
# what to draw


class GraphSource:
    """Outputs, inputs and (for a compiled Function) the linker kind of each node."""

    def __init__(self, outputs, inputs, kinds=None, fgraph=None, labels=None):
        self.outputs = outputs
        self.inputs = inputs
        self.kinds = kinds
        self.fgraph = fgraph
        self.labels = dict(labels or {})

    @classmethod
    def of(cls, obj):
        if isinstance(obj, FunctionGraph):
            return cls(list(obj.outputs), list(obj.inputs), fgraph=obj)
        fgraph = getattr(obj, "fgraph", None)
        if isinstance(fgraph, FunctionGraph):
            kinds = None
            program = getattr(obj, "program", None)
            nodes = getattr(program, "nodes", None)
            node_kinds = getattr(program, "kinds", None)
            if nodes is not None and node_kinds is not None:
                kinds = {node: kind for node, kind in zip(nodes, node_kinds, strict=True)}
            return cls(list(fgraph.outputs), list(fgraph.inputs), kinds, fgraph,
                       output_labels(obj))
        return cls(outputs_of(obj, who="diagram", expected=_EXPECTED), None)


class _Walk:
    """Breadth-first numbering of Variables and Applys from the outputs.

    ``order`` holds the drawn items (the first ``max_nodes``), ``names`` maps
    each to its DOT name, ``hidden`` counts the items left out.
    """

    def __init__(self, source, max_nodes):
        order = []
        seen = set()
        queue = deque()

        def push(item):
            if item not in seen:
                seen.add(item)
                queue.append(item)

        def drain():
            while queue:
                item = queue.popleft()
                order.append(item)
                if isinstance(item, Variable):
                    if item.owner is not None:
                        push(item.owner)
                else:
                    for inp in item.inputs:
                        push(inp)
                    for out in item.outputs:
                        push(out)

        for out in source.outputs:
            push(out)
        drain()
        for inp in source.inputs or ():  # inputs no output needs are still inputs
            push(inp)
        drain()
        self.total = len(order)
        self.order = order[:max_nodes]
        self.hidden = self.total - len(self.order)
        self.names = {item: "n%d" % i for i, item in enumerate(self.order)}
        self.output_set = set(source.outputs)
        if source.inputs is not None:
            self.input_set = set(source.inputs)
        else:
            self.input_set = {item for item in order
                              if isinstance(item, Variable) and item.owner is None
                              and not isinstance(item, Constant)}

    def applys(self):
        return [item for item in self.order if isinstance(item, Apply)]

    def variables(self):
        return [item for item in self.order if isinstance(item, Variable)]


def _highlight_set(highlight):
    if highlight is None:
        return set()
    if isinstance(highlight, (Variable, Apply)):
        return {highlight}
    return set(highlight)


# ---------------------------------------------------------------------------
# labels


def _label(*lines):
    """A DOT label of plain text lines: backslashes and ``<...>`` lose their meaning."""
    text = "\\n".join(graphviz.escape(line) for line in lines if line)
    return graphviz.nohtml(text)


def _wrap(text, width=_WRAP, max_lines=_WRAP_LINES):
    """Lines of at most ``width`` characters, broken after commas and spaces when possible.

    Characters are kept as they are, except spaces at the end of a line.
    """
    if len(text) <= width:
        return [text]
    lines = []
    current = ""
    for piece in re.split(r"(?<=[,\s])", text):
        while len(piece) > width:  # a piece with no break point: cut it
            room = width - len(current)
            if room <= 0:
                lines.append(current)
                current, room = "", width
            current += piece[:room]
            piece = piece[room:]
            lines.append(current)
            current = ""
        if current and len(current) + len(piece.rstrip()) > width:
            lines.append(current)
            current = ""
        current += piece
    if current:
        lines.append(current)
    lines = [line.rstrip() or line for line in lines]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][:width - 1] + _ELLIPSIS
    return lines


def _op_text(op):
    try:
        return str(op)
    except Exception:  # a broken __str__ must not break the picture
        return type(op).__name__


def _type_text(var):
    return type_notation(var.type)


def _type_repr(var):
    """The Type object as the structure picture draws it: its full text."""
    try:
        return str(var.type)
    except Exception:
        return type(var.type).__name__


def _var_text(var):
    try:
        return repr(var)
    except Exception:
        return type(var).__name__


def _shorten(text, limit=60):
    return text if len(text) <= limit else text[:limit - 1] + _ELLIPSIS


def _new_digraph(rankdir):
    g = graphviz.Digraph(name="nbgraph")
    g.attr(rankdir=rankdir, nodesep="0.2", ranksep="0.3", fontname=_FONT)
    g.attr("node", fontname=_FONT, fontsize="11", margin="0.06,0.03", height="0.3")
    g.attr("edge", fontname=_FONT, fontsize="9", color=COLORS["edge"],
           fontcolor=COLORS["edge"], arrowsize="0.7")
    return g


def _speed_up_big_layouts(g, n):
    """Cheaper crossing minimisation and ranking for big graphs (fine for a picture)."""
    if n >= _BIG:
        g.attr(mclimit="0.1", nslimit="2", nslimit1="2", searchsize="10")


def _summary(g, walk, style):
    """The "… N more nodes" node and dashed edges to where the hidden part attaches."""
    if not walk.hidden:
        return
    n = walk.hidden
    g.node("more", _label("%s %d more node%s" % (_ELLIPSIS, n, "" if n == 1 else "s"),
                          "(max_nodes=%d)" % len(walk.order)),
           shape="box", style="dashed,rounded", color=COLORS["summary"],
           fontcolor="#555555")
    for item in walk.order:
        if isinstance(item, Apply):
            cut = any(inp not in walk.names for inp in item.inputs)
        else:
            cut = item.owner is not None and item.owner not in walk.names
        if cut:
            g.edge("more", walk.names[item], style="dashed", color=COLORS["summary"],
                   arrowhead="none" if style == "structure" else "normal")


def _copied_variables(walk):
    """``{(node, input index): copy name}`` for variables read by many drawn nodes.

    A variable read by more than :data:`_FANOUT` drawn nodes is drawn again
    (dashed, labelled like the original) next to each reader after the first,
    the way dprint repeats an id: one node with edges to everywhere would
    cost ``dot`` time growing with the square of the graph's depth, and be
    unreadable anyway.
    """
    names = walk.names
    readers = {}
    for node in walk.applys():
        for i, inp in enumerate(node.inputs):
            if inp in names:
                readers.setdefault(inp, []).append((node, i))
    copies = {}
    for var, uses in readers.items():
        if len(uses) > _FANOUT:
            for k, use in enumerate(uses[1:], 1):
                copies[use] = "%s_%d" % (names[var], k)
    return copies


def _edge_label_key(n):
    """Edge labels of small graphs sit mid-edge; big graphs use xlabel, which
    ``dot`` places after the layout instead of giving it ranks of its own."""
    return "label" if n < _BIG else "xlabel"


# ---------------------------------------------------------------------------
# compact style


class _Compact:
    def __init__(self, source, walk, show_types, highlight, legend=True, rankdir="TB"):
        self.source = source
        self.walk = walk
        self.show_types = show_types
        self.highlight = highlight
        self.legend = legend
        self.rankdir = rankdir
        self.used = set()  # colour categories drawn, for the legend

    def build(self):
        g = _new_digraph(self.rankdir)
        _speed_up_big_layouts(g, len(self.walk.order))
        names = self.walk.names
        for item in self.walk.order:
            if isinstance(item, Apply):
                self._apply_node(g, item)
            else:
                self._variable_node(g, item)
        copies = _copied_variables(self.walk)
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
        _summary(g, self.walk, "compact")
        if self.legend:
            self._legend(g)
        from nbgraph.display.inner import add_inner_clusters  # loops' bodies as boxes

        add_inner_clusters(g, self.walk, self._draw_inner)
        return g

    def _draw_inner(self, fgraph, prefix):
        source = GraphSource.of(fgraph)
        walk = _Walk(source, len(self.walk.order) or 1)
        walk.names = {item: prefix + name for item, name in walk.names.items()}
        drawn = _Compact(source, walk, self.show_types, self.highlight, legend=False).build()
        first = walk.names.get(fgraph.outputs[0]) if fgraph.outputs else None
        return drawn, first

    def _apply_node(self, g, node):
        op_text = _op_text(node.op)
        fill = COLORS["apply"]
        kinds = self.source.kinds
        if kinds is not None and node in kinds:
            fill = COLORS.get(kinds[node], fill)
            self.used.add(("kind", kinds[node]))
        attrs = dict(shape="box", style="rounded,filled", fillcolor=fill,
                     color=COLORS["apply_border"], tooltip=_label(op_text))
        self._mark(node, attrs)
        g.node(self.walk.names[node], _label(*_wrap(op_text)), **attrs)

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
        walk = self.walk
        is_constant = isinstance(var, Constant)
        label = self.source.labels.get(var)
        if label is not None:
            first = label
        elif var.name is not None:
            first = var.name
        elif is_constant or (var.owner is None and not self.show_types):
            first = _var_text(var)  # a constant's value, or <Type> for an unnamed root
        else:  # an unnamed root or intermediate: its type line says it all
            first = None
        type_line = None
        if self.show_types:
            type_line = _type_text(var)
        if first is None and name is not None:
            first = _var_text(var)  # a repeated drawing says which variable it repeats
        lines = [_shorten(first)] if first else []
        if type_line:
            lines.append(type_line)
        category = self._category(var)
        self.used.add(category)
        if category in ("constant", "shared"):
            attrs = dict(shape="box", style="rounded,filled", fillcolor=COLORS[category],
                         color=COLORS[category + "_border"])
        elif category == "input":
            attrs = dict(shape="ellipse", style="filled,bold", fillcolor=COLORS["input"],
                         color=COLORS["input_border"])
        elif category == "output":
            attrs = dict(shape="ellipse", style="filled", fillcolor=COLORS["output"],
                         color=COLORS["output_border"])
        else:
            attrs = dict(shape="ellipse", style="filled", fillcolor=COLORS["variable"],
                         color=COLORS["variable_border"], fontsize="10")
        if var in walk.output_set:
            attrs["peripheries"] = "2"
            self.used.add("output")
        if not lines:  # an unnamed intermediate drawn without types: a small dot
            attrs.update(shape="circle", width="0.12", height="0.12", fixedsize="true")
        tooltip = "%s: %s" % (first or _var_text(var), _type_text(var))
        if name is not None:  # a repeated drawing of a much-read root
            styles = [part for part in attrs["style"].split(",") if part != "bold"]
            attrs["style"] = ",".join(styles + ["dashed"])
            tooltip += " (drawn again: read by many nodes)"
        attrs["tooltip"] = _label(tooltip)
        self._mark(var, attrs)
        g.node(name or walk.names[var], _label(*lines), **attrs)

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


# ---------------------------------------------------------------------------
# structure style


class _Structure:
    def __init__(self, source, walk, show_types, highlight, rankdir="TB"):
        self.source = source
        self.walk = walk
        self.show_types = show_types
        self.highlight = highlight
        self.rankdir = rankdir
        self.op_names = _SharedNames("op", [n.op for n in walk.applys()])
        self.type_names = _SharedNames("type", [v.type for v in walk.variables()]
                                       if show_types else [])

    def build(self):
        g = _new_digraph(self.rankdir)
        _speed_up_big_layouts(g, len(self.walk.order))
        names = self.walk.names
        for item in self.walk.order:
            self._node(g, item, names[item])
        self.copies = _copied_variables(self.walk)
        self.lk = _edge_label_key(len(self.walk.order))
        for item in self.walk.order:
            if isinstance(item, Apply):
                self._apply_edges(g, item)
            else:
                self._variable_edges(g, item)
        _summary(g, self.walk, "structure")
        return g

    def _node(self, g, item, name, copy=False):
        if isinstance(item, Apply):
            attrs = dict(shape="box", style="filled", fillcolor=COLORS["s_apply"],
                         color=COLORS["s_apply_border"], tooltip=_label(str(item)))
            label = _label("Apply")
        else:
            attrs = dict(shape="box", style="filled", fillcolor=COLORS["s_variable"],
                         color=COLORS["s_variable_border"])
            text = _shorten(_var_text(item))
            label = _label("Constant " + text if isinstance(item, Constant) else text)
        if copy:
            attrs["style"] = "filled,dashed"
            attrs["tooltip"] = _label("%s (drawn again: read by many nodes)" % _var_text(item))
        if item in self.highlight:
            attrs.update(color=COLORS["highlight"], penwidth="3")
        g.node(name, label, **attrs)

    def _apply_edges(self, g, node):
        names = self.walk.names
        me = names[node]
        many_in = len(node.inputs) > 1
        for i, inp in enumerate(node.inputs):
            if inp not in names:
                continue
            target = names[inp]
            copy = self.copies.get((node, i))
            if copy is not None:
                target = copy
                self._node(g, inp, copy, copy=True)
            g.edge(me, target, **{self.lk: "inputs[%d]" % i if many_in else "inputs"})
        many_out = len(node.outputs) > 1
        for j, out in enumerate(node.outputs):
            if out in names:
                # back pointers: drawn, but they do not shape the layout
                g.edge(me, names[out], constraint="false", style="dashed",
                       **{self.lk: "outputs[%d]" % j if many_out else "outputs"})
        op_name, new = self.op_names.name_of(node.op)
        if new:
            g.node(op_name, _label(*_wrap(_op_text(node.op), width=18)), shape="circle",
                   style="filled", fillcolor=COLORS["s_op"], color=COLORS["s_op_border"],
                   fontsize="10")
        g.edge(me, op_name, **{self.lk: "op"})

    def _variable_edges(self, g, var):
        names = self.walk.names
        me = names[var]
        if var.owner is not None and var.owner in names:
            g.edge(me, names[var.owner], **{self.lk: "owner"})
        if self.show_types:
            type_name, new = self.type_names.name_of(var.type)
            if new:
                g.node(type_name, _label(_type_repr(var)), shape="box", style="filled",
                       fillcolor=COLORS["s_type"], color=COLORS["s_type_border"],
                       fontsize="10")
            g.edge(me, type_name, **{self.lk: "type"})


class _SharedNames:
    """DOT names for Ops/Types: equal objects share one node, numbered by first use.

    An object used more than :data:`_FANOUT` times is drawn once per use
    instead (``op0``, ``op0_1``, ``op0_2``, ...): a hub with hundreds of edges
    would make ``dot`` crawl and the picture unreadable.
    """

    def __init__(self, prefix, objects):
        self.index = {}  # key -> [base name, number of uses]
        self.seen = {}
        for obj in objects:
            key = _identity_key(obj)
            if key not in self.index:
                self.index[key] = ["%s%d" % (prefix, len(self.index)), 0]
            self.index[key][1] += 1

    def name_of(self, obj):
        """(DOT name, True when the node still has to be declared)."""
        key = _identity_key(obj)
        base, total = self.index[key]
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        if n == 0:
            return base, True
        if total > _FANOUT:
            return "%s_%d" % (base, n), True
        return base, False


def _identity_key(obj):
    """Equal objects share a key; unhashable ones are keyed by identity."""
    try:
        hash(obj)
    except TypeError:
        return ("identity", id(obj))
    return ("value", obj)
