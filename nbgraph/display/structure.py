"""The "structure" diagram style: the objects of a graph and the fields that join them.

See :mod:`nbgraph.display.diagram` for what it draws (the seed's picture:
Apply, Variable, Op and Type nodes; owner, inputs, outputs, op and type
arrows); :class:`StructureStyle` builds the Digraph from a
:class:`~nbgraph.display.drawing.Walk` of the graph.
"""

from nbgraph.core.graph import Apply, Constant
from nbgraph.display.drawing import (
    COLORS,
    FANOUT,
    add_summary,
    copied_variables,
    dot_label,
    edge_label_key,
    new_digraph,
    op_text,
    shorten,
    speed_up_big_layouts,
    var_text,
    wrap_lines,
)

__all__ = ["StructureStyle"]


class StructureStyle:
    """Draws a :class:`~nbgraph.display.drawing.Walk` in the structure style (:meth:`build`)."""

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
        """The Digraph: Apply and Variable nodes, their Ops and Types, and the field arrows."""
        g = new_digraph(self.rankdir)
        speed_up_big_layouts(g, len(self.walk.order))
        names = self.walk.names
        for item in self.walk.order:
            self._node(g, item, names[item])
        self.copies = copied_variables(self.walk)
        self.lk = edge_label_key(len(self.walk.order))
        for item in self.walk.order:
            if isinstance(item, Apply):
                self._apply_edges(g, item)
            else:
                self._variable_edges(g, item)
        add_summary(g, self.walk, "structure")
        return g

    def _node(self, g, item, name, copy=False):
        if isinstance(item, Apply):
            attrs = dict(shape="box", style="filled", fillcolor=COLORS["s_apply"],
                         color=COLORS["s_apply_border"], tooltip=dot_label(str(item)))
            label = dot_label("Apply")
        else:
            attrs = dict(shape="box", style="filled", fillcolor=COLORS["s_variable"],
                         color=COLORS["s_variable_border"])
            text = shorten(var_text(item))
            label = dot_label("Constant " + text if isinstance(item, Constant) else text)
        if copy:
            attrs["style"] = "filled,dashed"
            attrs["tooltip"] = dot_label("%s (drawn again: read by many nodes)" % var_text(item))
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
            g.node(op_name, dot_label(*wrap_lines(op_text(node.op), width=18)), shape="circle",
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
                g.node(type_name, dot_label(_type_repr(var)), shape="box", style="filled",
                       fillcolor=COLORS["s_type"], color=COLORS["s_type_border"],
                       fontsize="10")
            g.edge(me, type_name, **{self.lk: "type"})


class _SharedNames:
    """DOT names for Ops/Types: equal objects share one node, numbered by first use.

    An object used more than :data:`FANOUT` times is drawn once per use
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
        if total > FANOUT:
            return "%s_%d" % (base, n), True
        return base, False


def _identity_key(obj):
    """Equal objects share a key; unhashable ones are keyed by identity."""
    try:
        hash(obj)
    except TypeError:
        return ("identity", id(obj))
    return ("value", obj)


def _type_repr(var):
    """The Type object as the structure picture draws it: its full text."""
    try:
        return str(var.type)
    except Exception:
        return type(var.type).__name__
