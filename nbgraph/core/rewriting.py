"""Rewriter machinery: node rewriters, graph rewriters, fixed points, merge.

A *node rewriter* looks at one Apply node and proposes replacements for its
outputs (a list, one per output, or a dict ``{old: new}``), or None.  A
*graph rewriter* edits a whole FunctionGraph.  :class:`EquilibriumRewriter`
runs node rewriters over a work list until nothing changes;
:class:`MergeRewriter` folds duplicate constants and Apply nodes.  Every
replacement goes through :meth:`FunctionGraph.replace`, so it is type checked
and lands in the graph's history with the rewriter's name as reason.

>>> from nbgraph.core.type import Generic
>>> from nbgraph.core.graph import Apply
>>> from nbgraph.core.op import Op
>>> from nbgraph.core.fgraph import FunctionGraph
>>> class Twice(Op):
...     __props__ = ()
...     def make_node(self, x):
...         return Apply(self, [x], [x.type()])
>>> x = Generic()("x")
>>> fg = FunctionGraph([x], [Twice()(x), Twice()(x)])
>>> len(fg.apply_nodes), MergeRewriter().rewrite(fg), len(fg.apply_nodes)
(2, 1, 1)
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from nbgraph.core.graph import Apply, Constant, Variable

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.fgraph import FunctionGraph

#: What a node rewriter returns: one replacement per output, a dict, or None/False.
RewriteResult = Any
#: A rewrite function ``fn(fgraph, node)``.
RewriteFunction = Callable[["FunctionGraph", Apply], RewriteResult]

__all__ = [
    "NodeRewriter",
    "node_rewriter",
    "loaded_class",
    "GraphRewriter",
    "SequentialRewriter",
    "WalkingRewriter",
    "EquilibriumRewriter",
    "MergeRewriter",
    "RewriteRegistry",
    "apply_replacements",
]


class NodeRewriter:
    """Proposes replacements for one node's outputs.

    Subclasses implement :meth:`transform` and may narrow :meth:`tracks`
    (Op classes or instances the rewriter cares about; None means all).
    """

    name: str | None = None

    def tracks(self) -> Sequence[Any] | None:
        """Op classes or Op instances this rewriter applies to (None: every node)."""
        return None

    def transform(self, fgraph: FunctionGraph, node: Apply) -> RewriteResult:
        """Return replacement outputs (list or dict) for ``node``, or None."""
        raise NotImplementedError("%s must implement transform()" % type(self).__name__)

    def applies_to(self, node: Apply) -> bool:
        """True when ``node``'s op is one this rewriter tracks."""
        tracked = self.tracks()
        if tracked is None:
            return True
        op = node.op
        for t in tracked:
            if isinstance(t, type):
                if isinstance(op, t):
                    return True
            elif t == op:
                return True
        return False

    def __repr__(self) -> str:
        return "<%s %s>" % (type(self).__name__, self.name or "")


def loaded_class(qualified: str) -> type | None:
    """The class ``"package.module:Name"`` if that module is loaded, else None.

    Never imports the module: a rewrite may look for an Op class whose module
    nothing has imported yet, and no graph can hold that Op's nodes until it is.
    """
    module_name, _, class_name = qualified.partition(":")
    if not class_name:
        raise ValueError("loaded_class expects 'package.module:Name', got %r" % (qualified,))
    module = sys.modules.get(module_name)
    if module is None:
        return None
    found = getattr(module, class_name)
    if not isinstance(found, type):
        raise TypeError("%s is not a class" % qualified)
    return found


class _FunctionNodeRewriter(NodeRewriter):
    def __init__(self, fn: RewriteFunction, tracks: Iterable[Any] | None,
                 name: str | None) -> None:
        self.fn = fn
        self._tracks = None if tracks is None else list(tracks)
        # "package.module:Name" entries: resolved when asked, once their module is loaded
        self._lazy = self._tracks is not None and any(isinstance(t, str) for t in self._tracks)
        self.name = name or fn.__name__
        self.__doc__ = fn.__doc__

    def tracks(self) -> Sequence[Any] | None:
        if not self._lazy:
            return self._tracks
        assert self._tracks is not None
        found = []
        for t in self._tracks:
            cls = loaded_class(t) if isinstance(t, str) else t
            if cls is not None:
                found.append(cls)
        return found

    def transform(self, fgraph: FunctionGraph, node: Apply) -> RewriteResult:
        return self.fn(fgraph, node)


def node_rewriter(tracks: Iterable[Any] | None = None, name: str | None = None,
                  ) -> Callable[[RewriteFunction], NodeRewriter]:
    """Decorator turning ``fn(fgraph, node)`` into a NodeRewriter.

    ``tracks`` lists the Op classes or instances it applies to (None: all).  An
    entry may name a class as ``"package.module:Name"``: it is tracked once that
    module is loaded, without importing it (see :func:`loaded_class`).
    """
    def decorate(fn: RewriteFunction) -> NodeRewriter:
        return _FunctionNodeRewriter(fn, tracks, name)
    return decorate


def apply_replacements(fgraph: FunctionGraph, node: Apply, result: RewriteResult,
                       reason: str | None) -> bool:
    """Apply what a node rewriter returned; True when the graph changed."""
    if result is None or result is False:
        return False
    pairs: list[tuple[Variable, Any]]
    if isinstance(result, dict):
        pairs = list(result.items())
    elif not isinstance(result, (list, tuple)):
        raise TypeError("rewriter %s must return a list (one replacement per output), a dict "
                        "or None; got %s %r" % (reason, type(result).__name__, result))
    else:
        result = list(result)
        if len(result) != len(node.outputs):
            raise ValueError("rewriter %s returned %d replacements for the %d outputs of %s" % (
                reason, len(result), len(node.outputs), node.op))
        pairs = list(zip(node.outputs, result, strict=True))
    changed = False
    for old, new in pairs:
        if new is None or new is old or old not in fgraph.variables:
            continue
        fgraph.replace(old, new, reason=reason)
        changed = True
    return changed


class GraphRewriter:
    """Edits a whole FunctionGraph; subclasses implement :meth:`apply`."""

    name: str | None = None

    def apply(self, fgraph: FunctionGraph) -> int:
        """Rewrite ``fgraph`` in place; return the number of changes made."""
        raise NotImplementedError("%s must implement apply()" % type(self).__name__)

    def rewrite(self, fgraph: FunctionGraph) -> int:
        """Run :meth:`apply` and return its count of changes."""
        return self.apply(fgraph) or 0

    def __repr__(self) -> str:
        return "<%s %s>" % (type(self).__name__, self.name or "")


class SequentialRewriter(GraphRewriter):
    """Runs graph rewriters one after the other."""

    def __init__(self, *rewriters: GraphRewriter, name: str | None = None) -> None:
        self.rewriters = list(rewriters)
        self.name = name

    def apply(self, fgraph: FunctionGraph) -> int:
        return sum(r.rewrite(fgraph) for r in self.rewriters)


class WalkingRewriter(GraphRewriter):
    """One pass of node rewriters over the nodes in topological order."""

    def __init__(self, *node_rewriters: NodeRewriter, name: str | None = None) -> None:
        self.node_rewriters = list(node_rewriters)
        self.name = name

    def apply(self, fgraph: FunctionGraph) -> int:
        changes = 0
        for node in fgraph.toposort():
            for rewriter in self.node_rewriters:
                if node not in fgraph.apply_nodes:
                    break
                if not rewriter.applies_to(node):
                    continue
                result = rewriter.transform(fgraph, node)
                if apply_replacements(fgraph, node, result, rewriter.name):
                    changes += 1
                    break
        return changes


class _NewNodes:
    """Feature that queues every imported node for another look."""

    def __init__(self, queue: deque[Apply]) -> None:
        self.queue = queue

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        self.queue.append(node)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old: Variable,
                        new: Variable, reason: str | None) -> None:
        if node != "output":
            self.queue.append(node)


class _RewritersByClass:
    """``index(op)``: the node rewriters that may apply to ``op``, looked up once per class.

    Each entry is ``(rewriter, check)``; ``check`` is True when the rewriter
    tracks Op instances, whose equality only ``applies_to`` can decide.
    Asking every rewriter about every node costs a comparison of Op
    parameters per pair: on a graph of 100,000 nodes, millions of them.
    """

    def __init__(self, rewriters: list[NodeRewriter]) -> None:
        self.rewriters = rewriters
        self.memo: dict[type, list[tuple[NodeRewriter, bool]]] = {}

    def __call__(self, op: Any) -> list[tuple[NodeRewriter, bool]]:
        cls = type(op)
        found = self.memo.get(cls)
        if found is None:
            found = self.memo[cls] = []
            for rewriter in self.rewriters:
                tracked = rewriter.tracks()
                if tracked is None:
                    found.append((rewriter, False))
                elif not all(isinstance(t, type) for t in tracked):
                    found.append((rewriter, True))
                elif any(issubclass(cls, t) for t in tracked):
                    found.append((rewriter, False))
        return found


class EquilibriumRewriter(GraphRewriter):
    """Runs node rewriters (and graph rewriters) until the graph stops changing.

    Nodes created by a rewrite, and nodes whose inputs changed, are queued
    and visited again, so the pass reaches a fixed point without re-walking
    the whole graph.  ``max_changes`` bounds the work on pathological
    rewrite sets (a ValueError names the last rewriter when exceeded); a graph
    with more nodes gets 4 changes per node it held when the pass began (the
    gradient graph of a 100,000-node sum made more than 100,000 and failed).
    """

    def __init__(self, node_rewriters: Iterable[NodeRewriter] = (),
                 graph_rewriters: Iterable[GraphRewriter] = (), max_changes: int = 100000,
                 name: str | None = None) -> None:
        self.node_rewriters = list(node_rewriters)
        self.graph_rewriters = list(graph_rewriters)
        self.max_changes = max_changes
        self.name = name

    def apply(self, fgraph: FunctionGraph) -> int:
        total = 0
        while True:
            changes = self._node_pass(fgraph, total)
            total += changes
            global_changes = sum(r.rewrite(fgraph) for r in self.graph_rewriters)
            total += global_changes
            if not global_changes:
                return total

    def _node_pass(self, fgraph: FunctionGraph, already: int) -> int:
        queue = deque(fgraph.toposort())
        listener = _NewNodes(queue)
        fgraph.attach_feature(listener)
        changes = 0
        limit = max(self.max_changes, 4 * len(queue))
        by_class = _RewritersByClass(self.node_rewriters)
        try:
            while queue:
                node = queue.popleft()
                if node not in fgraph.apply_nodes:
                    continue
                for rewriter, check in by_class(node.op):
                    if check and not rewriter.applies_to(node):
                        continue
                    result = rewriter.transform(fgraph, node)
                    if apply_replacements(fgraph, node, result, rewriter.name):
                        changes += 1
                        if changes + already > limit:
                            raise ValueError("rewriting did not reach a fixed point after %d "
                                             "changes (last: %s)" % (changes, rewriter.name))
                        break
        finally:
            fgraph.remove_feature(listener)
        return changes


class MergeRewriter(GraphRewriter):
    """Folds equal constants and Apply nodes with equal ops and identical inputs."""

    name = "merge"

    def apply(self, fgraph: FunctionGraph) -> int:
        return self._merge_constants(fgraph) + self._merge_nodes(fgraph)

    @staticmethod
    def _merge_constants(fgraph: FunctionGraph) -> int:
        """Replace each constant by the first equal one (by ``auto_name`` order)."""
        changes = 0
        constants: dict[Any, Constant] = {}
        for var in sorted((v for v in fgraph.variables if isinstance(v, Constant)),
                          key=lambda v: v.auto_name):
            try:
                sig = var.signature()
                hash(sig)
            except TypeError:
                continue
            kept = constants.setdefault(sig, var)
            if kept is not var and kept.equals(var) and var in fgraph.variables:
                fgraph.replace(var, kept, reason="merge")
                changes += 1
        return changes

    @staticmethod
    def _merge_nodes(fgraph: FunctionGraph) -> int:
        """Replace the outputs of each node by those of an earlier one with the same Op
        and inputs (and output types)."""
        changes = 0
        seen: dict[Any, Apply] = {}
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes:
                continue
            try:
                key = (node.op, tuple(node.inputs))
                hash(key)
            except TypeError:
                continue
            kept_node = seen.setdefault(key, node)
            if kept_node is node:
                continue
            if any(a.type != b.type
                   for a, b in zip(kept_node.outputs, node.outputs, strict=True)):
                continue
            for old, new in zip(node.outputs, kept_node.outputs, strict=True):
                if old in fgraph.variables:
                    fgraph.replace(old, new, reason="merge")
            changes += 1
        return changes


class RewriteRegistry:
    """Named rewriters with tags and positions.

    Registering a name again replaces the earlier entry (a notebook cell run
    twice must not fail).  :meth:`query` returns the rewriters carrying any
    of the requested tags, ordered by position then name.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, Any, frozenset[str]]] = {}
        # each name's first entry registered by nbgraph's own code
        self._native: dict[str, tuple[float, Any, frozenset[str]]] = {}
        #: True while the entries differ from nbgraph's own (one removed or replaced,
        #: or one added whose code is not nbgraph's): the function cache
        #: (nbgraph.linkers.function_cache) then stops, since what the rewrites do is
        #: no longer known from nbgraph's files.  False again once they are restored.
        self.altered = False

    def register(self, name: str, rewriter: Any, *tags: str, position: float = 50) -> Any:
        """Add (or replace) ``rewriter`` under ``name``; returns the rewriter."""
        if not isinstance(name, str) or not name:
            raise TypeError("a rewrite needs a non-empty name, got %r" % (name,))
        if getattr(rewriter, "name", None) is None:
            try:
                rewriter.name = name
            except AttributeError:
                pass
        entry = (position, rewriter, frozenset(tags) | {name})
        native = _from_nbgraph(rewriter)
        check = self.altered or name in self._entries or not native
        self._entries[name] = entry
        if native and name not in self._native:
            self._native[name] = entry
        if check:
            self.altered = self._differs()
        return rewriter

    def unregister(self, name: str) -> None:
        """Remove the entry called ``name`` (KeyError if absent)."""
        del self._entries[name]
        self.altered = self._differs()

    def _differs(self) -> bool:
        if self._entries.keys() != self._native.keys():
            return True
        return any(entry != self._native[name] for name, entry in self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> Any:
        return self._entries[name][1]

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """Registered names in position order."""
        return [n for n, _ in sorted(self._entries.items(), key=lambda kv: (kv[1][0], kv[0]))]

    def query(self, *tags: str, exclude: Iterable[str] = ()) -> list[Any]:
        """Rewriters having one of ``tags`` and none of ``exclude``, in order."""
        wanted, unwanted = set(tags), set(exclude)
        return [self._entries[n][1] for n in self.names()
                if self._entries[n][2] & wanted and not self._entries[n][2] & unwanted]


def _from_nbgraph(rewriter: Any) -> bool:
    """True when ``rewriter``'s code (its function, else its class) is nbgraph's own."""
    code = getattr(rewriter, "fn", None) or type(rewriter)
    module = getattr(code, "__module__", None) or ""
    return module == "nbgraph" or module.startswith("nbgraph.")
