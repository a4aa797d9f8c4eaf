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

Where the code lives: this module checks the arguments and picks a style;
:mod:`nbgraph.display.compact`, :mod:`nbgraph.display.structure` and
:mod:`nbgraph.display.dense` draw; :mod:`nbgraph.display.drawing` holds what
the first two share (:data:`COLORS`, :data:`LINKER_NAMES` and
``GraphSource``, importable from here too).
"""

from nbgraph.display.compact import CompactStyle
from nbgraph.display.drawing import (  # COLORS, LINKER_NAMES, GraphSource: re-exported
    COLORS,
    LINKER_NAMES,
    GraphSource,
    Walk,
    highlight_set,
)
from nbgraph.display.drawing import wrap_lines as _wrap  # noqa: F401  (tests use the old name)
from nbgraph.display.structure import StructureStyle

__all__ = ["diagram", "STYLES", "COLORS", "LINKER_NAMES", "GraphSource"]

STYLES = ("compact", "structure", "dense", "auto")

#: ``style="auto"`` draws "compact" up to this many Apply nodes (without scopes), else "dense".
AUTO_DENSE = 40


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
    _check_arguments(style, max_nodes, rankdir)
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
                           highlight=highlight_set(highlight), legend=bool(legend),
                           rankdir=rankdir, collapse=collapse, expand=expand, values=values,
                           profile=profile).build()
    walk = Walk(source, max_nodes)
    marked = highlight_set(highlight)
    if style == "compact":
        return CompactStyle(source, walk, bool(show_types), marked, bool(legend), rankdir).build()
    return StructureStyle(source, walk, bool(show_types), marked, rankdir).build()


def _check_arguments(style, max_nodes, rankdir):
    if style not in STYLES:
        raise ValueError("style must be one of %s, got %r" % (
            ", ".join(repr(s) for s in STYLES), style))
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValueError("max_nodes must be a positive int, got %r" % (max_nodes,))
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError("rankdir must be 'TB' or 'LR', got %r" % (rankdir,))


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
