"""Shared memory between nodes: views, in-place destroyers and their order.

An Op declares in ``view_map`` / ``destroy_map`` which input an output's
memory is.  :func:`memory_source` reads that declaration for one output,
:func:`memory_versions` follows it through a whole order of nodes, and
:func:`order_destroyers` (used by :meth:`FunctionGraph.toposort
<nbgraph.core.fgraph.FunctionGraph.toposort>`) moves every node that
overwrites a value after the other readers of that value, refusing what may
not be overwritten.

>>> import nbgraph.tensor as nt
>>> x = nt.dmatrix("x")
>>> memory_source(x.T.owner, 0) is x, memory_source((x + 1).owner, 0)
(True, None)
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nbgraph.core.graph import Apply, Constant, Variable

if TYPE_CHECKING:
    from nbgraph.core.fgraph import FunctionGraph

__all__ = ["memory_source", "memory_versions", "order_destroyers"]


def memory_source(node: Apply, j: int) -> Variable | None:
    """The input of ``node`` whose memory output ``j`` uses (``destroy_map``, else
    ``view_map``), or None when the output is fresh memory."""
    op = node.op
    for kind in (op.destroy_map, op.view_map):
        ins = kind.get(j) if kind else None
        if ins:
            return node.inputs[ins[0]]
    return None


def memory_versions(order: Sequence[Apply],
                    ) -> tuple[dict[Variable, Variable], dict[Variable, Variable]]:
    """``(root, version)`` dicts for the variables of ``order`` that alias another.

    ``root[v]`` is the variable that owns ``v``'s memory (followed back through
    ``view_map`` and ``destroy_map``); ``version[v]`` is the value that memory
    holds when ``v`` is read: the output of the last destroyer on the way back,
    or the root.  Variables missing from a dict are their own root/version.
    """
    root: dict[Variable, Variable] = {}
    version: dict[Variable, Variable] = {}
    for node in order:
        destroyed = node.op.destroy_map
        for j, out in enumerate(node.outputs):
            src = memory_source(node, j)
            if src is None:
                continue
            root[out] = root.get(src, src)
            version[out] = out if destroyed.get(j) else version.get(src, src)
    return root, version


def order_destroyers(fgraph: FunctionGraph, order: list[Apply]) -> list[Apply]:
    """``order`` changed so each destroying node runs after the other readers of its victim.

    The victim is the value the destroyed input holds (see
    :func:`memory_versions`): every other node reading it, directly or through a
    view, must run first.  A destroyer may overwrite the output of an earlier
    one (a chain of in-place ops).  Raises ValueError naming the Op when the
    memory belongs to a graph input or a constant (the caller's data), when a
    graph output holds the victim (itself or a view of it), when two nodes
    destroy the same value, or when no order can satisfy the readers.
    """
    root, version = memory_versions(order)
    victims = _victims(fgraph, order, root, version)
    if not victims:
        return order
    before = _run_after(order, victims, version)
    return _ordered_like(order, before)


def _victims(fgraph: FunctionGraph, order: Sequence[Apply], root: Mapping[Variable, Variable],
             version: Mapping[Variable, Variable]) -> dict[Variable, Apply]:
    """``{victim value: the node destroying it}``, refusing what may not be overwritten."""
    inputs = set(fgraph.inputs)
    returned: dict[Variable, Variable] = {}
    for out in fgraph.outputs:
        returned.setdefault(version.get(out, out), out)
    victims: dict[Variable, Apply] = {}
    for node in order:
        for i in sorted({i for ins in node.op.destroy_map.values() for i in ins}):
            var = node.inputs[i]
            victim = version.get(var, var)
            _check_overwritable(node, root.get(var, var), victim, inputs, returned)
            if victims.get(victim, node) is not node:
                raise ValueError("%r is overwritten by two nodes, %s and %s" % (
                    victim, victims[victim].op, node.op))
            victims[victim] = node
    return victims


def _check_overwritable(node: Apply, mem: Variable, victim: Variable, inputs: set[Variable],
                        returned: Mapping[Variable, Variable]) -> None:
    """Refuse ``node`` overwriting memory the caller owns or a graph output holds."""
    shown = returned.get(victim)
    if isinstance(mem, Constant):
        what = "a constant"
    elif mem in inputs:
        what = "an input"
    elif shown is not None:
        mem = victim
        what = "an output" if shown is victim else "viewed by %r, an output" % (shown,)
    else:
        return
    raise ValueError(
        "%s overwrites %r, which is %s of the graph: an Op with a destroy_map "
        "may only overwrite intermediate values (apply it to a copy)" % (node.op, mem, what))


def _run_after(order: Sequence[Apply], victims: Mapping[Variable, Apply],
               version: Mapping[Variable, Variable]) -> dict[Apply, set[Apply]]:
    """``{node: the nodes it must run after}``: its inputs' owners and, for a
    destroyer, every other reader of its victim."""
    readers: dict[Variable, list[Apply]] = {}
    before: dict[Apply, set[Apply]] = {node: set() for node in order}
    for node in order:
        for var in node.inputs:
            readers.setdefault(version.get(var, var), []).append(node)
            if var.owner is not None:
                before[node].add(var.owner)
    for victim, destroyer in victims.items():
        before[destroyer].update(r for r in readers.get(victim, ()) if r is not destroyer)
    return before


def _ordered_like(order: Sequence[Apply], before: Mapping[Apply, set[Apply]]) -> list[Apply]:
    """A topological order of ``before`` that keeps ``order`` wherever it can
    (the earliest ready node first); ValueError when none exists."""
    position = {node: i for i, node in enumerate(order)}
    waiting = {node: len(deps) for node, deps in before.items()}
    after: dict[Apply, list[Apply]] = {node: [] for node in order}
    for node, deps in before.items():
        for dep in deps:
            after[dep].append(node)
    ready = [(position[n], n) for n in order if waiting[n] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        _, node = heapq.heappop(ready)
        result.append(node)
        for nxt in after[node]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (position[nxt], nxt))
    if len(result) != len(order):
        stuck = [n for n in order if waiting[n] > 0]
        raise ValueError("no order lets %s overwrite its input after every other reader of "
                         "it (a reader needs the overwritten result)" % (
                             ", ".join(str(n.op) for n in stuck[:3]),))
    return result
