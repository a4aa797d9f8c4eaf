"""Lazy scheduling: run the nodes a lazy node's untaken inputs need only on demand.

An Op declares laziness through two hooks (:meth:`nbgraph.core.op.Op.lazy_inputs`
and :meth:`~nbgraph.core.op.Op.needed_inputs`); no linker knows which Ops
use them.  :func:`lazy_schedule` gives every node a *scope*: the chain of
(lazy node, lazy input) pairs through which all of its results are used.  A
node whose results only feed input ``k`` of a lazy node ``L`` belongs to the
block ``(L, k)``; a node that something else also needs stays in the
enclosing scope, so it is computed whether or not the branch is taken.
Blocks nest (a conditional inside a branch).

The nodes are then re-ordered so that each block comes just before its lazy
node (inside a scope the topological order is kept), and the schedule is a
tree of *steps*: a plain step is a node index; a lazy step is
``(index, [(k, sub_steps, indices), ...])``: before running the lazy node the
program asks ``needed_inputs`` and runs the sub-steps of the needed inputs
only.  ``indices`` (every node of the block) lets it release what a skipped
block would have released.

In-place nodes: a node that overwrites a value must run after its other
readers; when those readers fall into different scopes (re-ordering could
break that), the whole group is pinned to the top scope (computed eagerly).
"""

from collections import defaultdict

from nbgraph.core.memory import memory_versions

__all__ = ["lazy_schedule", "lazy_nodes"]


def lazy_nodes(order):
    """``{node: frozenset(lazy input indices)}`` for the nodes of ``order`` that are lazy."""
    found = {}
    for node in order:
        hook = getattr(node.op, "lazy_inputs", None)
        indices = frozenset(hook(node)) if hook is not None else frozenset()
        if indices:
            found[node] = indices
    return found


def _common_prefix(scopes):
    first = scopes[0]
    n = len(first)
    for other in scopes[1:]:
        n = min(n, len(other))
        for k in range(n):
            if other[k] != first[k]:
                n = k
                break
    return first[:n]


def _scopes(order, fgraph, lazy, roots, pinned):
    scope = {}
    clients = fgraph.clients
    for node in reversed(order):
        if node in pinned:
            scope[node] = ()
            continue
        uses = []
        for out in node.outputs:
            if out in roots:
                uses.append(())
            for client, i in clients.get(out, ()):
                if client == "output":
                    uses.append(())
                    continue
                s = scope[client]
                if i in lazy.get(client, ()):
                    s = s + ((client, i),)
                uses.append(s)
        scope[node] = _common_prefix(uses) if uses else ()
    return scope


def _destroy_groups(order):
    """Lists of nodes that read one overwritten value (the destroyer included)."""
    if not any(node.op.destroy_map for node in order):
        return []
    _, version = memory_versions(order)
    victims = set()
    for node in order:
        for ins in node.op.destroy_map.values():
            for i in ins:
                var = node.inputs[i]
                victims.add(version.get(var, var))
    groups = defaultdict(set)
    for node in order:
        for var in node.inputs:
            v = version.get(var, var)
            if v in victims:
                groups[v].add(node)
    return [g for g in groups.values() if len(g) > 1]


def lazy_schedule(order, fgraph, keep=()):
    """``(new_order, steps)`` for the toposorted ``order`` of ``fgraph``.

    ``steps`` is None when no node is lazy (``order`` is returned unchanged);
    values in ``keep`` (and the graph's outputs) count as used at the top.
    """
    lazy = lazy_nodes(order)
    if not lazy:
        return list(order), None
    roots = set(fgraph.outputs) | set(keep)
    groups = _destroy_groups(order)
    pinned = set()
    while True:
        scope = _scopes(order, fgraph, lazy, roots, pinned)
        grown = False
        for group in groups:
            if len({scope[n] for n in group}) > 1 and not group <= pinned:
                pinned |= group
                grown = True
        if not grown:
            break
    by_scope = defaultdict(list)
    for node in order:
        by_scope[scope[node]].append(node)
    new_order = []

    def emit(s):
        # iterative over the nodes of one scope; recursion only per nesting level
        steps = []
        for node in by_scope.get(s, ()):
            if node in lazy:
                branches = []
                for k in sorted(lazy[node]):
                    start = len(new_order)
                    sub = emit(s + ((node, k),))
                    branches.append((k, sub, tuple(range(start, len(new_order)))))
                steps.append((len(new_order), branches))
            else:
                steps.append(len(new_order))
            new_order.append(node)
        return steps

    steps = emit(())
    if len(new_order) != len(order):  # pragma: no cover - every scope is reachable
        raise RuntimeError("lazy scheduling lost %d nodes" % (len(order) - len(new_order)))
    return new_order, steps


#: Deeper nesting of lazy nodes than this runs through Program's generic walk
#: (Python limits the indentation of generated code).
MAX_GENERATED_DEPTH = 40


def _depth(steps):
    deepest = 0
    for step in steps:
        if step.__class__ is not int:
            for _, sub, _ in step[1]:
                deepest = max(deepest, 1 + _depth(sub))
    return deepest


def make_lazy_run(program, on_error, poll=False):
    """Straight-line Python running ``program.steps``: each thunk, the cells it frees,
    and for a lazy node an ``if`` per block asking its Op's ``needed_inputs``.

    ``on_error(exc, i)`` re-raises an error of node ``i``; ``poll``: first call
    ``program._poll()`` while ``program._job`` is set (a background compilation).
    Thunks are looked up at call time (a linker may swap them later).  Returns
    None when the nesting is too deep for generated code.
    """
    steps = program.steps
    if _depth(steps) > MAX_GENERATED_DEPTH:
        return None
    nodes, release, storage = program.nodes, program.release, program.storage
    names = {"T": program.thunks, "FAIL": on_error, "P": program}
    lines = ["def run():"]
    if poll:
        lines += ["    if P._job is not None:", "        P._poll()"]
    lines += ["    i = 0", "    try:"]

    def free(k, pad):
        out = []
        for m, cell in enumerate(release[k]):
            name = "R%d_%d" % (k, m)
            names[name] = cell
            out.append(pad + "%s[0] = None" % name)
        return out

    def emit(block, depth):
        pad = "    " * depth
        out = []
        for step in block:
            if step.__class__ is int:
                out += [pad + "i = %d" % step, pad + "T[%d]()" % step] + free(step, pad)
                continue
            k, branches = step
            node = nodes[k]
            lazy = {b for b, _, _ in branches}
            names["N%d" % k], names["Q%d" % k] = node, node.op.needed_inputs
            values = []
            for j, var in enumerate(node.inputs):
                if j in lazy:
                    values.append("None")
                else:
                    names["C%d_%d" % (k, j)] = storage[var]
                    values.append("C%d_%d[0]" % (k, j))
            out += [pad + "i = %d" % k,
                    pad + "need%d = Q%d(N%d, [%s])" % (k, k, k, ", ".join(values))]
            for b, sub, indices in branches:
                taken = emit(sub, depth + 1)
                skipped = [line for j in indices for line in free(j, pad + "    ")]
                out += [pad + "if %d in need%d:" % (b, k)] + (taken or [pad + "    pass"])
                if skipped:
                    out += [pad + "else:"] + skipped
            out += [pad + "i = %d" % k, pad + "T[%d]()" % k] + free(k, pad)
        return out

    body = emit(steps, 2)
    lines += body or ["        pass"]
    lines += ["    except Exception as exc:", "        __tracebackhide__ = True",
              "        FAIL(exc, i)"]
    exec(compile("\n".join(lines) + "\n", "<nbgraph lazy program>", "exec"), names)
    return names["run"]
