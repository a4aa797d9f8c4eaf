"""The "dense" diagram style: one box per Apply node, types inside it, scopes as collapsible boxes.

Made for big graphs (a 12-layer MLP with its gradient is ~400 nodes):

- an Apply node is one box: its Op, then one line per output, ``name: type``
  (``float64[?, 50]``; the label of a graph output: its name, ``grad(cost,
  W0)`` or ``update -> W0``).  Intermediate Variables are not drawn: an edge
  goes from the box that computes a value to each box that reads it.
  Inputs (green), shared variables (purple) and constants (grey, drawn once
  per reader) are small nodes of their own;
- a scope (``with nbgraph.scope("layer3")``, or the automatic ``gradient``
  box of :mod:`nbgraph.display.groups`) is a graphviz cluster when expanded,
  or one box when collapsed: its name, how many nodes it holds and which Ops,
  with the types of what enters and leaves it written on the crossing edges;
- a node with an inner graph (a fused elementwise loop's scalar Composite, a
  scan body) is one box; expanding it (by its name, e.g. ``"a12"``) draws the
  inner graph beside it in a dashed cluster;
- ``collapse``: True collapses every box (then ``expand`` lists the ones to
  open: ``["gradient", "layer3", "layer3/affine"]``), a list collapses only
  those; the default collapses everything when more than :data:`AUTO_COLLAPSE`
  Apply nodes would be drawn;
- overlays: ``values`` (``{Variable: value}``) writes each value's shape,
  and small values themselves, on its edges; ``profile`` (a ProfileStats)
  colours boxes by their share of the time, with the scale and the slowest
  nodes listed in the legend.

Every DOT name is stable for a graph whatever is collapsed: Apply nodes are
``a<k>`` (breadth-first from the outputs over the whole graph), roots
``r<k>``, boxes ``g<k>`` (scope paths in sorted order).  The picture has a
white background, so it reads the same in light and dark themes.
"""

from __future__ import annotations

from collections import deque

import graphviz

from nbgraph.core.graph import Apply, Constant
from nbgraph.display.drawing import dot_label, op_text, shorten, var_text
from nbgraph.display.groups import group_paths, parse_path, path_text
from nbgraph.display.inner import inner_outputs, renamed_body
from nbgraph.display.names import plural, type_notation

__all__ = ["DenseLayout", "AUTO_COLLAPSE", "HEAT", "value_text"]

#: Graphs with more Apply nodes than this start collapsed.
AUTO_COLLAPSE = 60

#: Fill colours of the time-share scale, lowest share first, with their upper bounds.
HEAT = ((0.01, "#fff7ec"), (0.05, "#fee8c8"), (0.10, "#fdd49e"), (0.20, "#fc8d59"),
        (1.01, "#d7301f"))

_FONT = "Helvetica"
_FANOUT = 6
_GROUP_FILL = ("#eef3e2", "#e2ecf7", "#f6eadf", "#ece4f4")
_ELLIPSIS = "\u2026"


def value_text(value, max_items=4) -> str:
    """``shape (3, 4)``; a value of at most ``max_items`` elements is written out."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return shorten(repr(value), 24)
    size = getattr(value, "size", 0)
    text = "(%s)" % ", ".join(str(s) for s in shape) if shape else "()"
    if size <= max_items:
        try:
            import numpy as np

            small = np.array2string(np.asarray(value), precision=3, separator=", ",
                                    suppress_small=True)
        except Exception:
            small = repr(value)
        text = "%s = %s" % (text, shorten(" ".join(small.split()), 32)) if shape else \
            shorten(" ".join(small.split()), 32)
    return text


class DenseLayout:
    """Builds the dense Digraph of a graph; see the module docstring."""

    def __init__(self, outputs, inputs=None, *, labels=None, kinds=None, show_types=True,
                 max_nodes=200, highlight=(), legend=True, rankdir="TB", collapse=None,
                 expand=(), values=None, profile=None, auto_groups=True, scopes=True):
        self.outputs = list(outputs)
        self.labels = dict(labels or {})
        self.kinds = kinds
        self.show_types = show_types
        self.max_nodes = max_nodes
        self.highlight = set(highlight or ())
        self.legend = legend
        self.rankdir = rankdir
        self.values = values or {}
        self.profile = profile
        self._number(inputs)
        self.paths = group_paths(self.applys, self.outputs, self.labels, auto=auto_groups) \
            if scopes else {node: () for node in self.applys}
        all_paths = _all_prefixes(self.paths.values())
        self.group_names = {p: "g%d" % i for i, p in enumerate(sorted(all_paths))}
        if collapse is None:
            collapse = bool(all_paths) and len(self.applys) > AUTO_COLLAPSE
        self.expand = {parse_path(e) if str(e) not in self.names_of_applys else str(e)
                       for e in (expand or ())}
        self.collapsed = self._collapsed_paths(collapse, all_paths)
        self.expanded_inner = {e for e in self.expand if isinstance(e, str)}
        self.shares = self._shares()
        self._units = {}
        self._path_of_name = None

    def _collapsed_paths(self, collapse, all_paths):
        """The box paths drawn collapsed: all but ``self.expand`` (True), none (False),
        or those listed."""
        if collapse is True:
            return {p for p in all_paths if p not in self.expand}
        if collapse is False:
            return set()
        return {parse_path(c) for c in collapse} & all_paths

    # -- numbering ----------------------------------------------------------
    def _number(self, inputs):
        applys, roots, seen = [], [], set()
        queue = deque()

        def push(item):
            if item not in seen:
                seen.add(item)
                queue.append(item)

        for out in self.outputs:
            push(out.owner if out.owner is not None else out)
        for inp in inputs or ():
            push(inp)
        while queue:
            item = queue.popleft()
            if isinstance(item, Apply):
                applys.append(item)
                for inp in item.inputs:
                    push(inp.owner if inp.owner is not None else inp)
            else:
                roots.append(item)
        self.applys = applys
        self.roots = roots
        self.names = {n: "a%d" % i for i, n in enumerate(applys)}
        self.names.update({v: "r%d" % i for i, v in enumerate(roots)})
        self.names_of_applys = {"a%d" % i for i in range(len(applys))}
        self.output_set = set(self.outputs)
        self.input_set = set(inputs) if inputs is not None else {
            r for r in roots if not isinstance(r, Constant)}

    def _shares(self):
        if self.profile is None:
            return {}
        try:
            return {row["node"]: row for row in self.profile.rows()}
        except Exception:
            return {}

    # -- units --------------------------------------------------------------
    def unit_of(self, node):
        """The DOT name of what ``node`` is drawn as: itself, or its collapsed box."""
        cache = self._units
        unit = cache.get(node)
        if unit is None:
            unit = self.names[node]
            path = self.paths.get(node, ())
            for k in range(1, len(path) + 1):
                if path[:k] in self.collapsed:
                    unit = self.group_names[path[:k]]
                    break
            cache[node] = unit
        return unit

    def set_view(self, collapsed=None, expanded_inner=None, rankdir=None, highlight=None):
        """Change what :meth:`build` draws without walking the graph again (the
        interactive view calls this on every expansion)."""
        if collapsed is not None:
            self.collapsed = {parse_path(c) for c in collapsed} & set(self.group_names)
        if expanded_inner is not None:
            self.expanded_inner = set(expanded_inner)
        if rankdir is not None:
            self.rankdir = rankdir
        if highlight is not None:
            self.highlight = set(highlight)

    def visible_groups(self):
        """Paths of collapsed boxes that are drawn (their parents are all expanded)."""
        found = set()
        for node in self.applys:
            path = self.paths[node]
            for k in range(1, len(path) + 1):
                if path[:k] in self.collapsed:
                    found.add(path[:k])
                    break
        return found

    # -- build --------------------------------------------------------------
    def build(self):
        """The Digraph for the current view."""
        self._units = {}
        g = _new_digraph(self.rankdir)
        self._group_units = {self.group_names[p] for p in self.visible_groups()}
        members = {}  # unit -> Apply nodes in it
        for node in self.applys:
            members.setdefault(self.unit_of(node), []).append(node)
        edges, readers = self._unit_edges()
        self._fold_shared(edges, readers)
        order = self._bfs(members, edges)
        kept = set(order[:self.max_nodes])
        hidden = len(order) - len(kept)
        self._n_drawn = len(kept)
        clusters = self._clusters(order[:self.max_nodes], members, edges)
        copies = self._draw_roots(g, kept, readers)
        self._emit_clusters(g, clusters)
        self._draw_edges(g, edges, kept, copies)
        if hidden:
            more = "%s %s" % (_ELLIPSIS, plural(hidden, "more box", "more boxes"))
            g.node("more", dot_label(more, "(max_nodes=%d)" % self.max_nodes),
                   shape="box", style="dashed,rounded", color="#9e9e9e", fontcolor="#616161")
        for node in self._expanded_inner_nodes(kept):
            self._inner_cluster(g, node)
        if self.legend:
            self._legend(g)
        return g

    def _unit_edges(self):
        """``{(tail, head): [variables]}`` between drawn units, and ``{root: units reading it}``."""
        edges = {}
        readers = {}
        for node in self.applys:
            head = self.unit_of(node)
            for inp in node.inputs:
                if inp.owner is not None:
                    tail = self.unit_of(inp.owner)
                    if tail == head:
                        continue
                else:
                    if isinstance(inp, Constant) and head in self._group_units:
                        continue  # a constant inside a collapsed box is its detail
                    tail = self.names[inp]
                    readers.setdefault(inp, set()).add(head)
                edges.setdefault((tail, head), []).append(inp)
        return edges, readers

    def _fold_shared(self, edges, readers):
        """A shared variable only collapsed boxes read is folded into them (named in
        their label): hundreds of parameter edges would hide the structure."""
        self._folded = {}
        for root, units in readers.items():
            if _is_shared(root) and units <= self._group_units:
                for unit in units:
                    self._folded.setdefault(unit, []).append(root)
                for unit in units:
                    edges.pop((self.names[root], unit), None)

    def _clusters(self, units, members, edges):
        """``{box path: [(name, attrs)]}``: the node of each unit, in the box it sits in."""
        clusters = {}  # path -> list of (name, attrs)
        group_of_name = {name: path for path, name in self.group_names.items()}
        for unit in units:
            if unit in group_of_name:
                path = group_of_name[unit]
                self._cluster_body(clusters, path[:-1]).append(
                    self._group_node(unit, path, members[unit], edges))
            elif unit in members:
                node = members[unit][0]
                self._cluster_body(clusters, self.paths[node]).append(self._apply_node(node))
        return clusters

    def _draw_roots(self, g, kept, readers):
        """Draw the kept roots read by few units; return those drawn once per reader."""
        copies = {}
        for root in self.roots:
            name = self.names[root]
            if name not in kept:
                continue
            many = isinstance(root, Constant) or len(readers.get(root, ())) > _FANOUT
            if not many:
                g.node(name, **self._root_node(root))
            else:
                copies[root] = True
        return copies

    def _draw_edges(self, g, edges, kept, copies):
        drawn_edges = [key for key in edges if key[0] in kept and key[1] in kept]
        self._label_crossings = len(drawn_edges) <= 60
        for (tail, head), variables in edges.items():
            if head not in kept or tail not in kept:
                continue
            var = variables[0]
            if var.owner is None and var in copies:
                tail = "%s_%s" % (tail, head)
                g.node(tail, **self._root_node(var, copy=True))
            g.edge(tail, head, **self._edge_attrs(variables, head))

    def _bfs(self, members, edges):
        """Units in breadth-first order from the outputs (what max_nodes keeps)."""
        preds = {}
        for (tail, head) in edges:
            preds.setdefault(head, []).append(tail)
        order, seen = [], set()
        queue = deque()
        for out in self.outputs:
            unit = self.unit_of(out.owner) if out.owner is not None else self.names[out]
            if unit not in seen:
                seen.add(unit)
                queue.append(unit)
        while queue:
            unit = queue.popleft()
            order.append(unit)
            for tail in preds.get(unit, ()):
                if tail not in seen:
                    seen.add(tail)
                    queue.append(tail)
        folded = {self.names[r] for roots in self._folded.values() for r in roots}
        for unit in list(members) + [self.names[r] for r in self.roots]:
            if unit not in seen and unit not in folded:  # inputs nothing reads
                seen.add(unit)
                order.append(unit)
        return order

    def _cluster_body(self, clusters, path):
        return clusters.setdefault(tuple(path), [])

    def _emit_clusters(self, g, clusters):
        children = {}
        for path in clusters:
            for k in range(1, len(path) + 1):
                children.setdefault(path[:k - 1], set()).add(path[:k])

        def fill(graph, path):
            for name, attrs in clusters.get(path, ()):
                graph.node(name, **attrs)
            for child in sorted(children.get(path, ())):
                sub = graphviz.Digraph(name="cluster_" + self.group_names[child])
                depth = len(child)
                sub.attr(label="\u25be " + child[-1], tooltip=path_text(child) + " (expanded)",
                         style="rounded,filled", color="#8a9a7a",
                         fillcolor=_GROUP_FILL[(depth - 1) % len(_GROUP_FILL)],
                         fontsize="10", fontname=_FONT, labeljust="l", id=self.group_names[child])
                fill(sub, child)
                graph.subgraph(sub)

        fill(g, ())

    # -- nodes --------------------------------------------------------------
    def _out_label(self, var):
        label = self.labels.get(var) or var.name or getattr(var.tag, "grad_of", None)
        return label

    def _apply_node(self, node):
        name = self.names[node]
        op = op_text(node.op)
        lines = [shorten(op, 34)] + self._output_lines(node)
        attrs = self._apply_look(node)
        row = self.shares.get(node)
        if row is not None:
            attrs["fillcolor"] = _heat(row["share"])
            lines.append("%.1f%% \u00b7 %s" % (100 * row["share"], _seconds(row["seconds"])))
        if inner_outputs(node):
            lines[0] += "  \u25b8" if name not in self.expanded_inner else "  \u25be"
        if node in self.highlight or any(o in self.highlight for o in node.outputs):
            attrs.update(color="#d81b60", penwidth="3")
        tip = [op] + ["%s: %s" % (self._out_label(o) or "out %d" % k, type_notation(o.type))
                      for k, o in enumerate(node.outputs)]
        path = self.paths.get(node)
        if path:
            tip.append("scope: " + path_text(path))
        attrs.update(tooltip=dot_label(*tip), id=name)
        return name, dict(label=dot_label(*lines), **attrs)

    def _output_lines(self, node):
        """``name: type`` of the first three outputs (then how many more)."""
        lines = []
        for out in node.outputs[:3]:
            label = self._out_label(out)
            parts = [shorten(label, 30)] if label else []
            if self.show_types:
                parts.append(type_notation(out.type))
            if parts:
                lines.append(": ".join(parts))
        if len(node.outputs) > 3:
            lines.append("%s %d more outputs" % (_ELLIPSIS, len(node.outputs) - 3))
        return lines

    def _apply_look(self, node):
        """Box attributes: coloured by the linker that runs it; a graph output in yellow."""
        attrs = dict(shape="box", style="rounded,filled", fillcolor="#dde6f5", color="#4a6a9c")
        if self.kinds is not None and node in self.kinds:
            attrs["fillcolor"] = {"c": "#fdd49e", "py": "#c6dbef"}.get(self.kinds[node],
                                                                     "#dde6f5")
        if any(o in self.output_set for o in node.outputs):
            attrs.update(fillcolor="#fff3c4", color="#b58900", peripheries="2")
        return attrs

    def _group_node(self, name, path, nodes, edges):
        ops = {}
        for n in nodes:
            key = type(n.op).__name__
            ops[key] = ops.get(key, 0) + 1
        top = sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        lines = ["\u25b8 " + shorten(path[-1], 30), "%s: %s" % (
            plural(len(nodes), "node"), ", ".join("%s\u00d7%d" % kv for kv in top))]
        folded = [r.name or "shared" for r in self._folded.get(name, ())]
        if folded:
            text = ", ".join(folded[:4]) + (", %s" % _ELLIPSIS if len(folded) > 4 else "")
            lines.append("reads %s" % shorten(text, 40))
        fill = _GROUP_FILL[(len(path) - 1) % len(_GROUP_FILL)]
        if self.shares:
            share = sum(self.shares[n]["share"] for n in nodes if n in self.shares)
            seconds = sum(self.shares[n]["seconds"] for n in nodes if n in self.shares)
            lines.append("%.1f%% \u00b7 %s" % (100 * share, _seconds(seconds)))
            fill = _heat(share)
        attrs = dict(shape="box3d", style="filled,bold", fillcolor=fill, color="#5b6b4b",
                     id=name, tooltip=dot_label("%s (collapsed: %s)" % (path_text(path), plural(
                         len(nodes), "node")), "expand it: expand=[%r]" % path_text(path)))
        if any(n in self.highlight for n in nodes):
            attrs.update(color="#d81b60", penwidth="3")
        return name, dict(label=dot_label(*lines), **attrs)

    def _root_node(self, var, copy=False):
        name = self.labels.get(var) or var.name
        if isinstance(var, Constant):
            text = shorten(var_text(var), 20)
            return dict(label=dot_label(text), shape="box", style="rounded,filled",
                        fillcolor="#eeeeee", color="#8a8a8a", fontsize="8", height="0.2",
                        tooltip=dot_label("constant %s: %s" % (text, type_notation(var.type))))
        shared = _is_shared(var)
        lines = [shorten(name or "input", 24)]
        if self.show_types:
            lines.append(type_notation(var.type))
        if shared:
            attrs = dict(shape="box", style="rounded,filled", fillcolor="#e8dcf5",
                         color="#6a3d9a")
        else:
            attrs = dict(shape="ellipse", style="filled,bold", fillcolor="#d4edda",
                         color="#2e7d32")
        if copy:
            attrs["style"] += ",dashed"
        attrs["tooltip"] = dot_label("%s: %s" % (name or "input", type_notation(var.type)))
        if not copy:
            attrs["id"] = self.names[var]
        return dict(label=dot_label(*lines), **attrs)

    def _edge_attrs(self, variables, head):
        attrs = {}
        distinct = list(dict.fromkeys(variables))
        crossing = head in self._group_units or any(
            v.owner is not None and self.unit_of(v.owner) in self._group_units
            for v in distinct)
        into_backward = crossing and self._backward_box(head)
        words = self._edge_words(distinct, crossing and not into_backward)
        if crossing:
            tips = ["%s: %s" % (self._out_label(v) or var_text(v), type_notation(v.type))
                    for v in distinct[:8]]
            attrs["tooltip"] = dot_label(*tips)
        if into_backward:  # what the backward pass reads: light, unlabelled
            attrs.update(color="#9e9e9e", arrowsize="0.4")
        if words:
            attrs["xlabel"] = dot_label(*words)
        if len(distinct) > 1:
            attrs["penwidth"] = "1.6"
        return attrs

    def _edge_words(self, distinct, typed):
        """An edge's label: run-time values when there are any, else the types of what
        crosses a box's border (``typed``), for the first two variables and a count."""
        words = []
        if self.values:
            words.extend(value_text(self.values[v]) for v in distinct[:2] if v in self.values)
        elif typed and self.show_types and self._label_crossings:
            words.extend(type_notation(v.type) for v in distinct[:2])
        if words and len(distinct) > 2:
            words.append("+%d" % (len(distinct) - 2))
        return words

    def _backward_box(self, unit):
        from nbgraph.display.groups import GRADIENT

        if self._path_of_name is None:
            self._path_of_name = {name: path for path, name in self.group_names.items()}
        path = self._path_of_name.get(unit)
        return path is not None and path[0] == GRADIENT

    # -- inner graphs -------------------------------------------------------
    def _expanded_inner_nodes(self, kept):
        found = []
        for node in self.applys:
            name = self.names[node]
            if name in self.expanded_inner and name in kept and inner_outputs(node):
                found.append(node)
        return found

    def _inner_cluster(self, g, node):
        name = self.names[node]
        for k, outs in enumerate(inner_outputs(node)):
            inner = DenseLayout(outs, labels={}, show_types=self.show_types,
                                max_nodes=self.max_nodes, legend=False, collapse=False,
                                scopes=False)
            if not inner.applys:
                continue
            inner = inner.build()
            prefix = "%s_in%d_" % (name, k)
            sub = graphviz.Digraph(name="cluster_" + prefix.rstrip("_"))
            sub.attr(label="%s: inner graph" % shorten(op_text(node.op), 40),
                     style="rounded,dashed", color="#7f7f7f", fontsize="9")
            body = renamed_body(inner.body, prefix)
            sub.body.extend(line for line in body if not line.lstrip().startswith(
                ("graph ", "node ", "edge ", "label=", "labelloc", "fontsize", "bgcolor=")))
            g.subgraph(sub)
            g.edge(name, prefix + "a0", style="dotted", arrowhead="none", constraint="false")

    # -- legend -------------------------------------------------------------
    def _legend(self, g):
        rows = []
        if self.collapsed or any(self.paths.values()):
            rows.append("<TR><TD ALIGN=\"LEFT\" COLSPAN=\"2\">\u25b8 collapsed box &#160; "
                        "\u25be expanded box (scopes; the backward pass is "
                        "&#8216;gradient&#8217;)</TD></TR>")
        if self.shares:
            cells = []
            low = 0.0
            for high, colour in HEAT:
                cells.append('<TD BGCOLOR="%s" WIDTH="14" HEIGHT="10"></TD><TD>%s</TD>' % (
                    colour, "&lt;%d%%" % round(100 * high) if high <= 1 else
                    "&#8805;%d%%" % round(100 * low)))
                low = high
            rows.append('<TR><TD ALIGN="LEFT">time share:</TD>%s</TR>' % "".join(cells))
            slow = sorted(self.shares.values(), key=lambda r: -r["seconds"])[:5]
            for r in slow:
                node = r["node"]
                rows.append('<TR><TD ALIGN="LEFT" COLSPAN="2">%s %.1f%% %s</TD></TR>' % (
                    _html(self.names.get(node, "?")), 100 * r["share"],
                    _html(shorten(op_text(node.op), 40))))
            rows.insert(2, '<TR><TD ALIGN="LEFT" COLSPAN="2"><B>slowest</B></TD></TR>')
        if not rows:
            return
        g.attr(label='<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
                     '%s</TABLE>>' % "".join(rows), labelloc="b", labeljust="l",
               fontsize="9", fontcolor="#444444")


def _new_digraph(rankdir):
    """An empty dense-style Digraph: white background, compound edges, small fonts."""
    g = graphviz.Digraph(name="nbgraph")
    g.attr(rankdir=rankdir, nodesep="0.25", ranksep="0.35", fontname=_FONT,
           bgcolor="white", compound="true")
    g.attr("node", fontname=_FONT, fontsize="10", margin="0.08,0.03", height="0.3")
    g.attr("edge", fontname=_FONT, fontsize="8", color="#555555", fontcolor="#444444",
           arrowsize="0.6")
    return g


def _all_prefixes(paths):
    """Every box path: each scope path and all its parents."""
    found = set()
    for path in paths:
        for k in range(1, len(path) + 1):
            found.add(path[:k])
    return found


def _is_shared(var):
    return var.owner is None and hasattr(var, "get_value") and hasattr(var, "container")


def _heat(share):
    for high, colour in HEAT:
        if share < high:
            return colour
    return HEAT[-1][1]


def _seconds(seconds):
    from nbgraph.display.profiles import format_seconds

    return format_seconds(seconds)


def _html(text):
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
