"""Showing the graphs an Op runs inside itself (a loop's body), read through
``Op.inner_graphs()``: display knows no particular Op.

- text: after the outer trees, :func:`inner_graph_lines` adds an "Inner graphs:"
  section: for each node with inner graphs, its line, then each inner graph's
  output trees with every line prefixed by ``" >"`` (nested loops nest further);
- diagrams: :func:`add_inner_clusters` draws each inner graph as a box (a DOT
  cluster) next to the node, joined to it by a dotted edge; the dense style
  reads :func:`inner_outputs` (which also opens a fused loop's scalar
  Composite) and renames the inner drawing's nodes with :func:`renamed_body`.
"""

import re

from nbgraph.core.graph import ancestors

__all__ = ["nodes_with_inner_graphs", "inner_graph_lines", "add_inner_clusters",
           "inner_outputs", "renamed_body"]


def _inner(node):
    get = getattr(node.op, "inner_graphs", None)
    return list(get()) if get is not None else []


def nodes_with_inner_graphs(outputs):
    """The Apply nodes under ``outputs`` whose Op has inner graphs, first met first."""
    found, seen = [], set()
    for var in ancestors(list(outputs)):
        node = var.owner
        if node is not None and node not in seen:
            seen.add(node)
            if _inner(node):
                found.append(node)
    found.reverse()  # ancestors() lists inputs first; show the outer loop first
    return found


def inner_graph_lines(outputs, render):
    """The "Inner graphs:" section for the trees of ``outputs`` ([] when there is none).

    ``render(variables)`` gives the lines of the text trees of ``variables``.
    """
    lines = []
    queue = [(node, "") for node in nodes_with_inner_graphs(outputs)]
    done = set()
    while queue:
        node, prefix = queue.pop(0)
        if node in done:
            continue
        done.add(node)
        lines.append("")
        lines.append(prefix + str(node.op))
        for fgraph in _inner(node):
            inner_prefix = prefix + " >"
            lines.extend(inner_prefix + line for line in render(list(fgraph.outputs)))
            queue.extend((n, inner_prefix) for n in nodes_with_inner_graphs(fgraph.outputs))
    if lines:
        lines.insert(0, "")
        lines.insert(1, "Inner graphs:")
    return lines


def add_inner_clusters(g, walk, draw):
    """Draw the inner graphs of the drawn nodes of ``walk`` as clusters of ``g``.

    ``draw(fgraph, prefix)`` returns a Digraph of ``fgraph`` whose node names all
    start with ``prefix`` and the name of the node its first output is drawn as.
    """
    import graphviz

    count = 0
    for node in walk.applys():
        for k, fgraph in enumerate(_inner(node)):
            prefix = "%s_in%d_" % (walk.names[node], k)
            inner, first = draw(fgraph, prefix)
            cluster = graphviz.Digraph(name="cluster_" + prefix.rstrip("_"))
            cluster.attr(label="%s: inner graph" % (node.op,), style="rounded,dashed",
                         color="#7f7f7f", fontsize="10")
            cluster.body.extend(inner.body)
            g.subgraph(cluster)
            if first is not None:
                g.edge(walk.names[node], first, style="dotted", arrowhead="none",
                       lhead=cluster.name, constraint="false")
            count += 1
    if count:
        g.attr(compound="true")
    return count


def inner_outputs(node):
    """The inner graphs' outputs of ``node`` (a scan body, a fused Composite), or []."""
    get = getattr(node.op, "inner_graphs", None)
    if get is not None:
        try:
            found = [list(fg.outputs) for fg in get()]
        except Exception:
            found = []
        if found:
            return found
    scalar = getattr(node.op, "scalar_op", None)
    outs = getattr(scalar, "outputs", None)
    if outs and getattr(scalar, "inputs", None) is not None:
        return [list(outs)]
    return []


def renamed_body(body, prefix):
    """DOT body lines with every node name ``a<k>``/``r<k>``/``g<k>`` given ``prefix``."""
    pattern = re.compile(r"(?<![\w\"])([arg]\d+(?:_[arg]\d+)?)(?![\w\"])")
    out = []
    for line in body:
        head, sep, rest = line.partition("[")
        rest = re.sub(r"\bid=(\w+)", lambda m: "id=" + prefix + m.group(1), rest)
        out.append(pattern.sub(lambda m: prefix + m.group(1), head) + sep + rest)
    return out
