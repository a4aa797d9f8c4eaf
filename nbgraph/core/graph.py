"""Graph walks, clones and comparison over Variable/Apply graphs.

The nodes themselves (:class:`Variable`, :class:`Constant`, :class:`Apply`,
:class:`Scratchpad`) live in :mod:`nbgraph.core.nodes` and are re-exported
here, so ``from nbgraph.core.graph import Apply`` keeps working.  Every walk
uses an explicit stack, so chains of 10^5 nodes need no recursion.

>>> from nbgraph.core.type import Generic
>>> x = Variable(Generic(), name="x")
>>> graph_inputs(x) == [x], toposort(x)
(True, [])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Union

from nbgraph.core.nodes import Apply, Constant, Scratchpad, Variable

__all__ = [
    "Scratchpad",
    "Variable",
    "Constant",
    "Apply",
    "ancestors",
    "graph_inputs",
    "variables_between",
    "applys_between",
    "toposort",
    "io_toposort",
    "clone_get_equiv",
    "clone",
    "clone_replace",
    "equal_computations",
    "is_in_ancestors",
    "graph_version",
]

# Bumped by every in-place edit of an Apply's inputs (FunctionGraph with
# clone=False); compiled-function caches compare it to detect stale graphs.
_graph_version = [0]

#: One Variable or a list/tuple of them (walks and clones accept both).
Variables = Union["Variable", Sequence["Variable"]]


def graph_version() -> int:
    """A counter that changes whenever any Apply's inputs are edited in place."""
    return _graph_version[0]


def _bump_graph_version() -> None:
    _graph_version[0] += 1


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def ancestors(outputs: Variables, blockers: Iterable[Variable] | None = None,
              ) -> Iterator[Variable]:
    """Every Variable ``outputs`` depend on (themselves included), depth first.

    The walk stops at ``blockers`` (they are yielded but not expanded).
    """
    blocked = set(blockers or ())
    seen: set[Variable] = set()
    stack = list(reversed(_as_list(outputs)))
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        yield var
        if var.owner is not None and var not in blocked:
            stack.extend(reversed(var.owner.inputs))


def graph_inputs(outputs: Variables, blockers: Iterable[Variable] | None = None,
                 ) -> list[Variable]:
    """The root Variables (no owner, or in ``blockers``) that ``outputs`` depend on."""
    blocked = set(blockers or ())
    return [v for v in ancestors(outputs, blocked) if v.owner is None or v in blocked]


def is_in_ancestors(node: Apply, candidate: Apply) -> bool:
    """True when Apply ``candidate`` is ``node`` or one of its ancestors."""
    for var in ancestors(node.inputs):
        if var.owner is candidate:
            return True
    return node is candidate


def io_toposort(inputs: Iterable[Variable], outputs: Variables) -> list[Apply]:
    """Apply nodes between ``inputs`` and ``outputs``, each after the nodes it needs.

    Iterative depth-first post-order; ties keep the order in which each
    node's inputs are listed, so the result is deterministic.
    """
    inputs = set(inputs)
    order: list[Apply] = []
    state: dict[Apply, str] = {}  # node -> _VISITING while on the current path, _DONE after
    for out in _as_list(outputs):
        if out in inputs or out.owner is None:
            continue
        stack: list[tuple[Apply, bool]] = [(out.owner, False)]
        while stack:
            node, finished = stack.pop()
            if finished:
                state[node] = _DONE
                order.append(node)
                continue
            st = state.get(node)
            if st is _DONE:
                continue
            if st is _VISITING:
                raise ValueError("the graph has a cycle through %s" % (node,))
            state[node] = _VISITING
            stack.append((node, True))
            for inp in reversed(node.inputs):
                parent = inp.owner
                if parent is None or inp in inputs:
                    continue
                pst = state.get(parent)
                if pst is _VISITING:
                    raise ValueError("the graph has a cycle through %s" % (parent,))
                if pst is None:
                    stack.append((parent, False))
    return order


_VISITING = "visiting"
_DONE = "done"


def toposort(outputs: Variables) -> list[Apply]:
    """Apply nodes computing ``outputs`` from their roots, in dependency order."""
    return io_toposort([], outputs)


def applys_between(inputs: Iterable[Variable], outputs: Variables) -> list[Apply]:
    """Apply nodes on a path from ``inputs`` to ``outputs`` (unordered walk)."""
    return io_toposort(inputs, outputs)


def variables_between(inputs: Variables, outputs: Variables) -> list[Variable]:
    """Every Variable used or produced between ``inputs`` and ``outputs``."""
    seen: dict[Variable, None] = {}
    for var in _as_list(inputs):
        seen[var] = None
    for node in io_toposort(_as_list(inputs), outputs):
        for var in node.inputs:
            seen.setdefault(var, None)
        for var in node.outputs:
            seen.setdefault(var, None)
    for var in _as_list(outputs):
        seen.setdefault(var, None)
    return list(seen)


def clone_get_equiv(inputs: Variables, outputs: Variables, copy_inputs: bool = True,
                    memo: dict[Any, Any] | None = None) -> dict[Any, Any]:
    """Clone the graph between ``inputs`` and ``outputs``; return the old->new map.

    Inputs are cloned when ``copy_inputs`` (otherwise kept); constants are
    shared; other roots met on the way are cloned.  ``memo`` entries are
    reused as-is (this is how replacements are made).
    """
    equiv = {} if memo is None else memo
    for inp in _as_list(inputs):
        if inp not in equiv:
            equiv[inp] = inp.clone() if copy_inputs and not isinstance(inp, Constant) else inp
    for node in io_toposort(list(equiv), outputs):
        _clone_node(node, equiv, copy_inputs)
    for out in _as_list(outputs):
        if out not in equiv:
            equiv[out] = out if isinstance(out, Constant) or not copy_inputs else out.clone()
    return equiv


def _clone_node(node: Apply, equiv: dict[Any, Any], copy_inputs: bool) -> None:
    """Record in ``equiv`` the clone of ``node`` (over the clones of its inputs; a root
    met for the first time is cloned unless a constant) and of its outputs."""
    for var in node.inputs:
        if var not in equiv:
            fresh_root = var.owner is None and not isinstance(var, Constant)
            equiv[var] = var.clone() if fresh_root and copy_inputs else var
    new_node = node.clone_with_new_inputs([equiv[v] for v in node.inputs], strict=False)
    equiv[node] = new_node
    for old, new in zip(node.outputs, new_node.outputs, strict=True):
        if old.name is not None and new.name is None:
            new.name = old.name
        new.tag.update(old.tag)
        equiv[old] = new


def clone(inputs: Variables, outputs: Variables, copy_inputs: bool = True,
          ) -> tuple[list[Variable], list[Variable]]:
    """Copy of the graph: returns ``(new_inputs, new_outputs)``."""
    equiv = clone_get_equiv(inputs, outputs, copy_inputs)
    return [equiv[i] for i in _as_list(inputs)], [equiv[o] for o in _as_list(outputs)]


def clone_replace(
    outputs: Variables,
    replace: Mapping[Variable, Variable] | Iterable[tuple[Variable, Variable]] | None = None,
) -> Any:
    """Copy ``outputs``' graph with the variables in ``replace`` substituted.

    ``replace`` maps old Variables to new ones (a dict or pairs).  Each new
    variable goes through the old one's ``filter_variable``, so a
    replacement of an incompatible type raises TypeError.  Returns one
    Variable or a list, following ``outputs``.
    """
    single = not isinstance(outputs, (list, tuple))
    outs = _as_list(outputs)
    pairs = list(replace.items()) if isinstance(replace, Mapping) else list(replace or ())
    memo: dict[Any, Any] = {}
    for old, new in pairs:
        if not isinstance(old, Variable):
            raise TypeError("clone_replace keys must be Variables, got %r" % (old,))
        memo[old] = old.type.filter_variable(new)
    equiv = clone_get_equiv(list(memo), outs, copy_inputs=False, memo=memo)
    result = [equiv.get(o, o) for o in outs]
    return result[0] if single else result


def equal_computations(xs: Variables, ys: Variables, in_xs: Sequence[Variable] | None = None,
                       in_ys: Sequence[Variable] | None = None) -> bool:
    """True when ``xs`` and ``ys`` compute the same thing.

    Nodes match when ops are equal and inputs match pairwise; roots match
    when identical, when paired through ``in_xs``/``in_ys``, or when they
    are equal constants.
    """
    xs, ys = _as_list(xs), _as_list(ys)
    if len(xs) != len(ys):
        return False
    pairs = dict(zip(in_xs or (), in_ys or (), strict=True))
    matched: dict[Variable, Variable] = {}
    stack = list(zip(xs, ys, strict=True))
    while stack:
        x, y = stack.pop()
        known = _known_match(x, y, pairs, matched)
        if known is not None:
            if not known:
                return False
            continue
        nx, ny = x.owner, y.owner
        if nx is None or ny is None or not _same_step(x, y, nx, ny):
            return False
        matched[x] = y
        stack.extend(zip(nx.inputs, ny.inputs, strict=True))
    return True


def _known_match(x: Variable, y: Variable, pairs: Mapping[Variable, Variable],
                 matched: dict[Variable, Variable]) -> bool | None:
    """Whether ``x`` matches ``y`` without comparing their owners (None: compare them).

    The same variable, equal constants (by value, not through ``matched``: one
    constant may stand against several equal but distinct constants of the
    other graph), a pair already matched, or a pair given as inputs.
    """
    if x is y and x not in pairs:
        return True
    if isinstance(x, Constant) and x not in pairs:
        return isinstance(y, Constant) and x.equals(y)
    if x in matched:
        return matched[x] is y
    if x in pairs:
        if pairs[x] is not y:
            return False
        matched[x] = y
        return True
    return None


def _same_step(x: Variable, y: Variable, nx: Apply, ny: Apply) -> bool:
    """``x`` and ``y`` (outputs of ``nx`` and ``ny``) have the same type and index, and the
    nodes equal Ops and as many inputs (whose pairs are compared next)."""
    return (x.type == y.type and x.index == y.index and nx.op == ny.op
            and len(nx.inputs) == len(ny.inputs))
