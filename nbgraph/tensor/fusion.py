"""Elementwise fusion: groups of Elemwise nodes become one Composite loop.

The "fast" pipeline ends with :class:`FusionRewriter`, which runs three steps
on a FunctionGraph:

1. **DimShuffle lifting.**  ``DimShuffle(E(a, b))`` with ``E`` an Elemwise
   whose only client is the DimShuffle, feeding other Elemwise nodes, becomes
   ``E(DimShuffle(a), DimShuffle(b))`` (a DimShuffle is a view, so no work
   moves), letting ``m + exp(v)`` with a matrix ``m`` and a vector ``v`` fuse.
2. **Elemwise fusion** (:class:`FuseElemwise`).  Maximal connected groups of
   Elemwise nodes become one ``Elemwise(Composite(...))`` node each.  The
   Composite's inner scalar graph repeats the group's ops with the exact
   dtypes of the original nodes, so fused intermediates keep their dtypes
   (an int8 sum still wraps before ``* 1.5``).  A group's inputs keep their
   broadcast patterns; an input read several times is one input; constants of
   size 1 become scalar constants inside the Composite.  A value a group
   computes and something outside the group also reads becomes an extra
   output of the fused node, so nothing is computed twice.
3. **Reduction fusion** (:class:`FuseReduce`).  ``Reduce(E(...))`` where the
   Elemwise result has no other reader becomes ``FusedReduce(kind, axis,
   Composite)``: ``sum((x - y) ** 2)`` is one node reading x and y once.
   Step 2 prepares for it: an Elemwise node only a reduction reads is the last
   node of its own single-output group, so the whole group folds into the
   reduction instead of writing its result to memory.

>>> import nbgraph.tensor as nt
>>> from nbgraph import function
>>> x, y, z = nt.dvector("x"), nt.dvector("y"), nt.dvector("z")
>>> f = function([x, y, z], [x + y * 2.0 - z, nt.sum((x - y) ** 2)], linker="py")
>>> for node in f.fgraph.toposort():
...     print(node.op)
Elemwise{Composite{((x0 + (x1 * 2.0)) - x2)}}
Sum{axis=0}(Composite{((x0 - x1) ** 2.0)})

Rules a group obeys (each keeps the fused graph computing exactly what the
original computed):

* members have the same C ability (all have C code, or none has), so an op
  without C code never drags C-capable neighbours into Python;
* fusing never creates a cycle: a node joins a group only when no path leaves
  the group and comes back; a final check over the whole graph (groups
  contracted) dissolves any group that would still close a cycle with another;
* every value a group exports has the same run-time shape as the fused node.
  Each variable gets a per-dimension *shape key* (its static size, or the set
  of "atoms" -- dimensions of non-elementwise variables -- it broadcasts
  from); two exported values must have equal keys;
* at most ``max_inputs`` (default 64) tensor inputs and ``max_nodes`` (default
  256) members per group, to keep C kernels small: a chain of 100,000 nodes
  becomes a few hundred loops of one shape (one compiled kernel, its constants
  passed as arguments), not one function too big to compile or to print;
* Elemwise nodes that modify an input in place are left alone.

Groups are grown from the last node backwards (a heap ordered by topological
position), so a chain of thousands of nodes is one linear pass: no recursion.

The ops it makes, and the structures the C linker reads, are in
:mod:`nbgraph.tensor.fused_ops` (:class:`FusedReduce`,
:func:`fused_elemwise_structure`), re-exported here.
"""

import heapq

from nbgraph.core.rewriting import GraphRewriter
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.fused_ops import (  # also re-exported from here
    FusedReduce, build_composite, fused_elemwise_structure, small_constant,
)
from nbgraph.tensor.reduction import Reduce
from nbgraph.tensor.rewriting import rewrites
from nbgraph.tensor.shape_keys import shape_keys
from nbgraph.tensor.type import TensorType

__all__ = [
    "FuseElemwise", "FuseReduce", "LiftDimShuffle", "FusionRewriter", "FusedReduce",
    "fused_elemwise_structure", "MAX_INPUTS", "MAX_NODES",
]

#: Default bound on the tensor inputs of one fused node.
MAX_INPUTS = 64

#: Default bound on the Elemwise nodes fused into one.  Past a few dozen nodes a
#: loop gains nothing more (it already reads and writes each element once),
#: while an unbounded group makes a 100,000-node chain one C function of
#: 100,000 statements; with the bound it is a few hundred loops of one shape,
#: which share one compiled kernel (their constants are kernel arguments).
MAX_NODES = 256

#: Nodes a cycle check may visit before it gives up (and refuses the fusion).
SEARCH_BUDGET = 4096


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _is_candidate(node):
    """The fusion category of ``node`` (True: has C code, False: Python only), or None."""
    op = node.op
    if not isinstance(op, Elemwise) or op.inplace_pattern or not node.inputs:
        return None
    if not all(isinstance(v.type, TensorType) for v in node.inputs + node.outputs):
        return None
    try:
        return bool(op.scalar_op.has_c_code(None))
    except Exception:  # a has_c_code that needs a real node: call it C-less
        return False


def _is_small(var, cache):
    """Memoised ``small_constant(var) is not None``."""
    found = cache.get(var)
    if found is None:
        found = cache[var] = small_constant(var) is not None
    return found


def _outside_client(fgraph, var, members, extra=None):
    """True when something other than ``members`` (and ``extra``) reads ``var``."""
    for client, _ in fgraph.clients.get(var, ()):
        if client == "output" or (client not in members and client is not extra):
            return True
    return False


def _reaches_forward(fgraph, starts, members, hi, pos, budget):
    """True when a node of ``members`` is reachable from ``starts`` (or the search is too big)."""
    stack = [s for s in starts if pos[s] <= hi]
    seen = set()
    while stack:
        node = stack.pop()
        if node in members:
            return True
        if node in seen:
            continue
        seen.add(node)
        if len(seen) > budget:
            return True
        for out in node.outputs:
            for client, _ in fgraph.clients.get(out, ()):
                if client != "output" and client not in seen and pos[client] <= hi:
                    stack.append(client)
    return False


def _reached_backward(starts, members, lo, pos, budget):
    """True when a node of ``members`` is an ancestor of ``starts`` (or the search is too big)."""
    stack = [s for s in starts if pos[s] >= lo]
    seen = set()
    while stack:
        node = stack.pop()
        if node in members:
            return True
        if node in seen:
            continue
        seen.add(node)
        if len(seen) > budget:
            return True
        for inp in node.inputs:
            owner = inp.owner
            if owner is not None and owner not in seen and pos[owner] >= lo:
                stack.append(owner)
    return False


class _Exclude:
    """``node in view``: in ``mapping`` or in ``extra`` (read-only membership view)."""

    __slots__ = ("mapping", "extra")

    def __init__(self, mapping, extra):
        self.mapping = mapping
        self.extra = extra

    def __contains__(self, node):
        return node in self.mapping or node in self.extra


class _Group:
    __slots__ = ("seed", "members", "category", "ext", "lo", "hi", "sealed")

    def __init__(self, seed, category, ext, position):
        self.seed = seed
        self.members = {seed}
        self.category = category
        self.ext = ext
        self.lo = self.hi = position

    def add(self, node, added, position):
        """Take ``node`` in: its outputs stop being inputs, ``added`` become some."""
        self.members.add(node)
        self.ext -= set(node.outputs)
        self.ext |= added
        self.lo = min(self.lo, position)
        self.hi = max(self.hi, position)


# ---------------------------------------------------------------------------
# Elemwise fusion
# ---------------------------------------------------------------------------


def _contracted_graph(order, groups):
    """The graph with each group contracted to one unit: ``(successors, in-degrees,
    units)``; a unit is a group or a node in none."""
    rep = {node: g for g in groups for node in g.members}
    succ, indeg, units = {}, {}, set()
    for node in order:
        u = rep.get(node, node)
        units.add(u)
        for inp in node.inputs:
            if inp.owner is None:
                continue
            p = rep.get(inp.owner, inp.owner)
            if p is u:
                continue
            targets = succ.setdefault(p, set())
            if u not in targets:
                targets.add(u)
                indeg[u] = indeg.get(u, 0) + 1
    return succ, indeg, units


def _unsorted_units(units, succ, indeg):
    """Kahn's algorithm over the units: those it cannot order (on or below a cycle).
    ``indeg`` is left holding what remains of each in-degree."""
    ready = [u for u in units if not indeg.get(u)]
    while ready:
        u = ready.pop()
        for v in succ.get(u, ()):
            indeg[v] -= 1
            if not indeg[v]:
                ready.append(v)
    return {u for u in units if indeg.get(u)}


def _on_a_cycle(left, succ):
    """The units of ``left`` on a cycle: what lies only below one is peeled off
    from the sinks upwards."""
    left = set(left)
    preds = {u: [] for u in left}
    outdeg = dict.fromkeys(left, 0)
    for u in left:
        for v in succ.get(u, ()):
            if v in left:
                preds[v].append(u)
                outdeg[u] += 1
    sinks = [u for u in left if not outdeg[u]]
    while sinks:
        u = sinks.pop()
        left.discard(u)
        for p in preds[u]:
            outdeg[p] -= 1
            if not outdeg[p]:
                sinks.append(p)
    return left


class FuseElemwise(GraphRewriter):
    """Replace maximal groups of Elemwise nodes by one ``Elemwise(Composite)`` each.

    ``max_inputs`` bounds the tensor inputs of a fused node (size-1 constants,
    inlined, do not count); ``max_nodes`` (None: no bound) its members.

    With ``reduce_aware`` (the default), an Elemwise node whose result only a
    :class:`Reduce` reads is kept as the last node of its own single-output
    group, so :class:`FuseReduce` can then fold the whole group into the
    reduction instead of writing the elementwise result to memory.
    """

    name = "fuse_elemwise"

    def __init__(self, max_inputs=MAX_INPUTS, max_nodes=MAX_NODES, search_budget=SEARCH_BUDGET,
                 reduce_aware=True):
        self.max_inputs = max_inputs
        self.max_nodes = max_nodes
        self.search_budget = search_budget
        self.reduce_aware = reduce_aware

    # -- finding groups ----------------------------------------------------
    def find_groups(self, fgraph):
        """The groups that would be fused: lists (two nodes or more) in topological order."""
        order = fgraph.toposort()
        pos = {node: i for i, node in enumerate(order)}
        category = {}
        for node in order:
            cat = _is_candidate(node)
            if cat is not None:
                category[node] = cat
        if not category:
            return []
        def key_of(var):  # the graph's one shape-equality system (tensor.shape_keys)
            return shape_keys(fgraph, var)

        small = {}
        group_of = {}
        feeders = set()
        if self.reduce_aware:
            for node in category:
                if len(node.outputs) == 1:
                    readers = fgraph.clients.get(node.outputs[0], ())
                    if (len(readers) == 1 and readers[0][0] != "output"
                            and isinstance(readers[0][0].op, Reduce)):
                        feeders.add(node)
        groups = []
        for seed in reversed(order):
            if seed not in category or seed in group_of:
                continue
            group = self._grow(fgraph, seed, category, group_of, pos, key_of, small, feeders)
            for node in group.members:
                group_of[node] = group
            if len(group.members) > 1:
                groups.append(group)
        if len(groups) > 1:  # one convex group cannot close a cycle by itself
            groups = self._break_cycles(fgraph, order, groups, group_of)
        return [sorted(g.members, key=pos.__getitem__) for g in groups]

    def _grow(self, fgraph, seed, category, group_of, pos, key_of, small, feeders):
        ext = {v for v in seed.inputs if not _is_small(v, small)}
        group = _Group(seed, category[seed], ext, pos[seed])
        group.sealed = seed in feeders
        # nodes feeding a reduction only ever start a group
        group_of = _Exclude(group_of, feeders)
        heap = []
        self._push_neighbours(fgraph, seed, heap, pos, category, group, group_of)
        deferred = {}  # refused nodes, retried once the group has grown further
        for _ in range(8):
            while heap:
                _, _, node = heapq.heappop(heap)
                if node in group.members or node in group_of or node in deferred:
                    continue
                if self._try_add(fgraph, group, node, pos, key_of, small):
                    self._push_neighbours(fgraph, node, heap, pos, category, group, group_of)
                else:
                    deferred[node] = None
            progress = False
            for node in list(deferred):
                if self._try_add(fgraph, group, node, pos, key_of, small):
                    del deferred[node]
                    progress = True
                    self._push_neighbours(fgraph, node, heap, pos, category, group, group_of)
            if not progress and not heap:
                break
        return group

    @staticmethod
    def _push_neighbours(fgraph, node, heap, pos, category, group, group_of):
        cat = group.category
        for inp in node.inputs:
            owner = inp.owner
            if (owner is not None and category.get(owner) is cat and owner not in group_of
                    and owner not in group.members):
                heapq.heappush(heap, (-pos[owner], id(owner), owner))
        for out in node.outputs:
            for client, _ in fgraph.clients.get(out, ()):
                if (client != "output" and category.get(client) is cat
                        and client not in group_of and client not in group.members):
                    heapq.heappush(heap, (-pos[client], id(client), client))

    def _try_add(self, fgraph, group, node, pos, key_of, small):
        """Add ``node`` to ``group`` when every rule allows it; True when added."""
        if self.max_nodes is not None and len(group.members) >= self.max_nodes:
            return False
        added = {v for v in node.inputs
                 if (v.owner is None or v.owner not in group.members) and v not in group.ext
                 and not _is_small(v, small)}
        inputs_after = len(group.ext) - len(group.ext & set(node.outputs)) + len(added)
        if inputs_after > self.max_inputs:
            return False
        if not self._exports_fit(fgraph, group, node, key_of):
            return False
        if self._makes_a_detour(fgraph, group, node, pos):
            return False
        group.add(node, added, pos[node])
        return True

    @staticmethod
    def _exports_fit(fgraph, group, node, key_of):
        """Whether each output of ``node`` read outside the group has the group's
        run-time shape (and the group may export at all)."""
        for out in node.outputs:
            if _outside_client(fgraph, out, group.members, node) and (
                    group.sealed or key_of(out) != key_of(group.seed.outputs[0])):
                return False
        return True

    def _makes_a_detour(self, fgraph, group, node, pos):
        """Whether adding ``node`` would let a path leave the group and come back."""
        members = group.members
        clients = [client for out in node.outputs for client, _ in fgraph.clients.get(out, ())
                   if client != "output"]
        if any(client in members for client in clients):  # node feeds the group
            outside = [c for c in clients if c not in members]
            return bool(outside) and _reaches_forward(fgraph, outside, members, group.hi, pos,
                                                      self.search_budget)
        outside = [v.owner for v in node.inputs if v.owner is not None and v.owner not in members]
        return bool(outside) and _reached_backward(outside, members, group.lo, pos,
                                                   self.search_budget)

    @staticmethod
    def _break_cycles(fgraph, order, groups, group_of):
        """Dissolve groups until contracting every group leaves the graph acyclic."""
        alive = list(groups)
        while True:
            succ, indeg, units = _contracted_graph(order, alive)
            left = _unsorted_units(units, succ, indeg)
            if not left:
                return alive
            on_cycle = _on_a_cycle(left, succ)
            stuck = [g for g in alive if g in on_cycle] or [g for g in alive if indeg.get(g)]
            victim = min(stuck, key=lambda g: len(g.members))
            alive.remove(victim)
            for node in victim.members:
                group_of.pop(node, None)

    # -- building ------------------------------------------------------------
    def apply(self, fgraph):
        changes = 0
        for members in self.find_groups(fgraph):
            if self.fuse_group(fgraph, members):
                changes += 1
        return changes

    def fuse_group(self, fgraph, order):
        """Replace the Elemwise nodes ``order`` (topologically sorted) by one fused node.

        Returns True when the graph changed (False when the fused node's types
        would not match, which leaves the graph as it was).
        """
        members = set(order)
        exports = [out for node in order for out in node.outputs
                   if _outside_client(fgraph, out, members)]
        if not exports:
            return False
        built = build_composite(order, exports)
        if built is None:
            return False
        composite, tensor_inputs = built
        new_outputs = Elemwise(composite).make_node(*tensor_inputs).outputs
        for old, new in zip(exports, new_outputs, strict=True):
            if old.type != new.type and not (
                    old.type.dtype == new.type.dtype and old.type.is_super(new.type)):
                return False
        for old, new in zip(exports, new_outputs, strict=True):
            fgraph.replace(old, new, reason=self.name)
        return True


# ---------------------------------------------------------------------------
# DimShuffle lifting and reduction fusion
# ---------------------------------------------------------------------------


class LiftDimShuffle(GraphRewriter):
    """``DimShuffle(E(a, b)) -> E(DimShuffle(a), DimShuffle(b))`` where it helps fusion.

    Only when ``E`` is a single-output Elemwise whose result only the
    DimShuffle reads, and every reader of the DimShuffle is an Elemwise.
    Nested DimShuffles are composed.
    """

    name = "lift_dimshuffle"

    def apply(self, fgraph):
        changes = 0
        work = [n for n in fgraph.toposort() if isinstance(n.op, DimShuffle)]
        while work:
            node = work.pop()
            if node not in fgraph.apply_nodes:
                continue
            lifted = self._lift(fgraph, node)
            if lifted is None:
                continue
            fgraph.replace(node.outputs[0], lifted, reason=self.name)
            changes += 1
            work.extend(i.owner for i in lifted.owner.inputs
                        if i.owner is not None and isinstance(i.owner.op, DimShuffle))
        return changes

    @staticmethod
    def _lift(fgraph, node):
        out = node.outputs[0]
        readers = fgraph.clients.get(out, ())
        if not readers or any(c == "output" or not isinstance(c.op, Elemwise)
                              for c, _ in readers):
            return None
        inner = node.inputs[0].owner
        if inner is None or _is_candidate(inner) is None or len(inner.outputs) != 1:
            return None
        if len(fgraph.clients.get(inner.outputs[0], ())) != 1:
            return None
        args = []
        made = {}
        for v in inner.inputs:
            if v not in made:
                made[v] = LiftDimShuffle._shuffled(fgraph, v, node.op)
            args.append(made[v])
        new = inner.op.make_node(*args).outputs[0]
        if new.type.dtype != out.type.dtype or not (
                new.type == out.type or out.type.is_super(new.type)):
            return None
        return new


    @staticmethod
    def _shuffled(fgraph, var, op):
        """``op(var)``, reusing an equal DimShuffle already in the graph, composing nested ones."""
        owner = var.owner
        if (owner is not None and isinstance(owner.op, DimShuffle)
                and len(fgraph.clients.get(var, ())) == 1):
            prev = owner.op
            composed = tuple("x" if e == "x" else prev.new_order[e] for e in op.new_order)
            try:
                composed_op = DimShuffle(prev.input_ndim, composed)
                composed_op.make_node(owner.inputs[0])
            except ValueError:
                pass
            else:
                var, op = owner.inputs[0], composed_op
        for client, _ in fgraph.clients.get(var, ()):
            if client != "output" and client.op == op:
                return client.outputs[0]
        return op(var)


class FuseReduce(GraphRewriter):
    """``Reduce(kind, axis)(E(...)) -> FusedReduce(kind, axis, Composite)(...)``.

    Applies when the Elemwise ``E`` (fused or not) has one output and the
    reduction is its only reader.
    """

    name = "fuse_reduce"

    def apply(self, fgraph):
        changes = 0
        for node in fgraph.toposort():
            if not isinstance(node.op, Reduce) or node not in fgraph.apply_nodes:
                continue
            (x,) = node.inputs
            inner = x.owner
            if inner is None or _is_candidate(inner) is None or len(inner.outputs) != 1:
                continue
            if len(fgraph.clients.get(x, ())) != 1:
                continue
            built = build_composite([inner], [x])
            if built is None:
                continue
            composite, tensor_inputs = built
            new = FusedReduce(node.op.kind, node.op.axis, composite)(*tensor_inputs)
            old = node.outputs[0]
            if new.type != old.type and not (
                    new.type.dtype == old.type.dtype and old.type.is_super(new.type)):
                continue
            fgraph.replace(old, new, reason=self.name)
            changes += 1
        return changes


class FusionRewriter(GraphRewriter):
    """The fusion stage of the "fast" pipeline: lift DimShuffles, fuse Elemwise, fuse reductions."""

    name = "fusion"

    def __init__(self, max_inputs=MAX_INPUTS, max_nodes=MAX_NODES, reductions=True):
        self.steps = [LiftDimShuffle(), FuseElemwise(max_inputs=max_inputs, max_nodes=max_nodes)]
        if reductions:
            self.steps.append(FuseReduce())

    def apply(self, fgraph):
        return sum(step.rewrite(fgraph) for step in self.steps)


rewrites.register("elemwise_fusion", FusionRewriter(), "fusion", position=100)
