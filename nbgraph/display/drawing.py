"""What the compact and structure diagram styles share: colours, what to draw, labels.

- :data:`COLORS` and :data:`LINKER_NAMES`: the table of colours and the
  legend text of each linker kind;
- :class:`GraphSource` (outputs, inputs, a compiled Function's node kinds and
  output labels) and :class:`Walk` (the breadth-first numbering from the
  outputs that gives DOT names ``n0``, ``n1``, ... and what ``max_nodes``
  keeps);
- DOT text: :func:`dot_label` (escaped plain lines), :func:`wrap_lines`,
  :func:`op_text`, :func:`type_text`, :func:`var_text`, :func:`shorten`;
- the digraph: :func:`new_digraph` (common attributes),
  :func:`speed_up_big_layouts`, :func:`add_summary` (the "… N more nodes"
  node), :func:`copied_variables` (much-read variables drawn again next to
  each reader) and :func:`edge_label_key`.

The styles themselves live in :mod:`nbgraph.display.compact` and
:mod:`nbgraph.display.structure`; :func:`nbgraph.display.diagram` picks one.
"""

import re
from collections import deque

import graphviz

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.display.names import output_labels, type_notation
from nbgraph.display.text import outputs_of

__all__ = [
    "COLORS", "LINKER_NAMES", "FANOUT", "GraphSource", "Walk", "highlight_set", "dot_label",
    "wrap_lines", "op_text", "type_text", "var_text", "shorten", "new_digraph",
    "speed_up_big_layouts", "add_summary", "copied_variables", "edge_label_key",
]

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
FANOUT = 6         # a variable/Op/Type used by more drawn nodes is drawn once per user
_BIG = 80           # from this many drawn nodes on, dot is told to work less hard


_EXPECTED = ("a Variable, a list of Variables, an Apply, a FunctionGraph or a compiled "
             "Function")


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
        """The source of anything :func:`~nbgraph.display.diagram` accepts."""
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


class Walk:
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
        """The drawn Apply nodes, in walk order."""
        return [item for item in self.order if isinstance(item, Apply)]

    def variables(self):
        """The drawn Variables, in walk order."""
        return [item for item in self.order if isinstance(item, Variable)]


def highlight_set(highlight):
    """The Variables/Applys to outline, as a set (``highlight`` may be one, many or None)."""
    if highlight is None:
        return set()
    if isinstance(highlight, (Variable, Apply)):
        return {highlight}
    return set(highlight)


# ---------------------------------------------------------------------------
# labels and the digraph


def dot_label(*lines):
    """A DOT label of plain text lines: backslashes and ``<...>`` lose their meaning."""
    text = "\\n".join(graphviz.escape(line) for line in lines if line)
    return graphviz.nohtml(text)


def wrap_lines(text, width=_WRAP, max_lines=_WRAP_LINES):
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


def op_text(op):
    """``str(op)``, or the Op's class name when its ``__str__`` fails."""
    try:
        return str(op)
    except Exception:  # a broken __str__ must not break the picture
        return type(op).__name__


def type_text(var):
    """The short notation of ``var``'s type (``float64[?, 3]``)."""
    return type_notation(var.type)


def var_text(var):
    """``repr(var)``, or its class name when its ``__repr__`` fails."""
    try:
        return repr(var)
    except Exception:
        return type(var).__name__


def shorten(text, limit=60):
    """``text`` cut to ``limit`` characters, the last one an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1] + _ELLIPSIS


def new_digraph(rankdir):
    """An empty Digraph with the fonts, spacing and edge colours every diagram uses."""
    g = graphviz.Digraph(name="nbgraph")
    g.attr(rankdir=rankdir, nodesep="0.2", ranksep="0.3", fontname=_FONT)
    g.attr("node", fontname=_FONT, fontsize="11", margin="0.06,0.03", height="0.3")
    g.attr("edge", fontname=_FONT, fontsize="9", color=COLORS["edge"],
           fontcolor=COLORS["edge"], arrowsize="0.7")
    return g


def speed_up_big_layouts(g, n):
    """Cheaper crossing minimisation and ranking for big graphs (fine for a picture)."""
    if n >= _BIG:
        g.attr(mclimit="0.1", nslimit="2", nslimit1="2", searchsize="10")


def add_summary(g, walk, style):
    """The "… N more nodes" node and dashed edges to where the hidden part attaches."""
    if not walk.hidden:
        return
    n = walk.hidden
    g.node("more", dot_label("%s %d more node%s" % (_ELLIPSIS, n, "" if n == 1 else "s"),
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


def copied_variables(walk):
    """``{(node, input index): copy name}`` for variables read by many drawn nodes.

    A variable read by more than :data:`FANOUT` drawn nodes is drawn again
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
        if len(uses) > FANOUT:
            for k, use in enumerate(uses[1:], 1):
                copies[use] = "%s_%d" % (names[var], k)
    return copies


def edge_label_key(n):
    """Edge labels of small graphs sit mid-edge; big graphs use xlabel, which
    ``dot`` places after the layout instead of giving it ranks of its own."""
    return "label" if n < _BIG else "xlabel"
