"""FunctionGraph: the mutable graph container that rewrites edit.

A FunctionGraph owns a graph between a list of input Variables and a list of
outputs, and keeps for every Variable its *clients* (the ``(node, index)``
pairs that read it; an output of the graph is read by ``("output", i)``).
Rewrites change it only through :meth:`FunctionGraph.replace`, which checks
the replacement's type with ``filter_variable`` and records the decision in
:attr:`FunctionGraph.history`.
"""

import heapq

from nbgraph.core import graph as _graph
from nbgraph.core.clients import ClientList
from nbgraph.core.graph import Constant, Variable
from nbgraph.core.type import NarrowingTrace

__all__ = ["FunctionGraph", "ClientList", "MissingInputError", "Replacement", "Feature", "path_to",
           "order_destroyers", "memory_source", "memory_versions"]


class MissingInputError(ValueError):
    """An output depends on a root Variable that is not among the inputs."""

    def __init__(self, variable, path=()):
        self.variable = variable
        self.path = list(path)
        message = "input %r is needed but was not given" % (variable,)
        if self.path:
            steps = [_path_text(v) for v in self.path[:5]]
            if len(self.path) > 10:
                steps.append("... (%d more) ..." % (len(self.path) - 10))
            steps.extend(_path_text(v) for v in self.path[max(5, len(self.path) - 5):])
            message += "; path from the output down to it: %s" % " -> ".join(steps)
        super().__init__(message)


def _path_text(var):
    if var.owner is not None and var.name is None:
        return "%s.%d" % (var.owner.op, var.index)
    return repr(var)


def path_to(roots, target):
    """Variables from one of ``roots`` down to ``target`` (through owners' inputs)."""
    parent = {}
    stack = list(roots)
    seen = set(stack)
    while stack:
        var = stack.pop()
        if var is target:
            path = [var]
            while path[-1] in parent:
                path.append(parent[path[-1]])
            return list(reversed(path))
        if var.owner is not None:
            for inp in var.owner.inputs:
                if inp not in seen:
                    seen.add(inp)
                    parent[inp] = var
                    stack.append(inp)
    return [target]


class Feature:
    """Base for FunctionGraph listeners: override the hooks you need.

    Every hook is a no-op here.  A listener need not subclass Feature (hooks
    are looked up by name), but subclassing documents which hooks exist.
    """

    def on_attach(self, fgraph: "FunctionGraph") -> None:
        """Called once when the feature is attached to ``fgraph``."""

    def on_detach(self, fgraph: "FunctionGraph") -> None:
        """Called once when the feature is removed from ``fgraph``."""

    def on_import(self, fgraph: "FunctionGraph", node, reason) -> None:
        """``node`` has entered the graph (its inputs are already in it)."""

    def on_prune(self, fgraph: "FunctionGraph", node, reason) -> None:
        """``node`` has left the graph (nothing in the graph reads it any more)."""

    def on_change_input(self, fgraph: "FunctionGraph", node, i, old, new, reason) -> None:
        """Input ``i`` of ``node`` (or output ``i`` when node is "output") now reads ``new``."""

    def on_replace(self, fgraph: "FunctionGraph", record: "Replacement") -> None:
        """A whole :meth:`FunctionGraph.replace` finished; ``record`` says what changed."""


class Replacement:
    """One entry of :attr:`FunctionGraph.history`.

    ``old`` was replaced by ``new`` (what ``filter_variable`` returned for
    ``requested``) for ``reason``; ``trace`` is the narrowing trace of that
    check; ``changes`` lists the ``(client, input index)`` pairs rewired.
    """

    __slots__ = ("step", "reason", "old", "new", "requested", "trace", "changes")

    def __init__(self, step, reason, old, new, requested, trace, changes):
        self.step = step
        self.reason = reason
        self.old = old
        self.new = new
        self.requested = requested
        self.trace = trace
        self.changes = changes

    def __repr__(self):
        return "<Replacement %d: %r -> %r (%s)>" % (self.step, self.old, self.new,
                                                   self.reason or "no reason given")


def _checked_outputs(outputs):
    """``outputs`` (a Variable or a sequence of them) as a list, or TypeError."""
    if outputs is None:
        raise TypeError("FunctionGraph needs outputs")
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for i, out in enumerate(outputs):
        if not isinstance(out, Variable):
            raise TypeError("output %d of FunctionGraph must be a Variable, got %r" % (i, out))
    return outputs


def _checked_inputs(inputs, outputs):
    """``inputs`` as a list of distinct non-constant Variables, or TypeError/ValueError.

    None stands for every non-constant root of ``outputs``.
    """
    if inputs is None:
        inputs = [v for v in _graph.graph_inputs(outputs) if not isinstance(v, Constant)]
    inputs = list(inputs)
    for i, inp in enumerate(inputs):
        if not isinstance(inp, Variable):
            raise TypeError("input %d of FunctionGraph must be a Variable, got %r" % (i, inp))
        if isinstance(inp, Constant):
            raise TypeError("input %d of FunctionGraph, %r, is a Constant; constants "
                            "cannot be inputs" % (i, inp))
    if len(set(inputs)) != len(inputs):
        raise ValueError("FunctionGraph inputs contain the same variable twice: %r" % inputs)
    return inputs


class FunctionGraph:
    """A graph from ``inputs`` to ``outputs`` that can be edited safely.

    With ``clone=True`` (the default) the graph is copied first and the
    caller's Variables are untouched; ``clone=False`` edits the caller's
    graph in place.  ``inputs=None`` takes every non-constant root.
    """

    def __init__(self, inputs=None, outputs=None, clone=True, features=(), name=None):
        outputs = _checked_outputs(outputs)
        inputs = _checked_inputs(inputs, outputs)
        self.equiv = None
        if clone:
            self.equiv = _graph.clone_get_equiv(inputs, outputs, copy_inputs=True)
            inputs = [self.equiv[i] for i in inputs]
            outputs = [self.equiv[o] for o in outputs]
        for inp in inputs:
            if inp.owner is not None:
                raise ValueError("input %r is computed by %s; with clone=False inputs must be "
                                 "roots" % (inp, inp.owner.op))
        self.name = name
        self._start_bookkeeping()
        for inp in inputs:
            self.add_input(inp)
        self._import_outputs(outputs)
        for feature in features:
            self.attach_feature(feature)

    def _start_bookkeeping(self):
        """Empty inputs, outputs, node and variable sets, clients, features and history."""
        self.inputs = []
        self._input_set = set()  # the inputs again, for O(1) membership tests
        self.outputs = []
        self.apply_nodes = set()
        self.variables = set()
        self.clients = {}
        self.features = []
        self.history = []
        self._order = None
        self.version = 0

    def _import_outputs(self, outputs):
        """Add ``outputs``; a missing input is reported with the caller's variables."""
        try:
            for out in outputs:
                self.add_output(out)
        except MissingInputError as exc:
            if self.equiv is None:
                raise
            # name the caller's variables, not their clones
            back = {new: old for old, new in self.equiv.items() if isinstance(old, Variable)}
            raise MissingInputError(back.get(exc.variable, exc.variable),
                                    [back.get(v, v) for v in exc.path]) from None

    # -- building --------------------------------------------------------
    def add_input(self, var):
        """Add a root Variable as a new input."""
        if var in self._input_set:
            return
        self.inputs.append(var)
        self._input_set.add(var)
        self.variables.add(var)
        if var not in self.clients:
            self.clients[var] = ClientList()

    def add_output(self, var, reason=None):
        """Add ``var`` (importing what it needs) as a new output."""
        self.import_var(var, reason)
        self.outputs.append(var)
        self.clients[var].append(("output", len(self.outputs) - 1))

    def import_var(self, var, reason=None, import_missing=False):
        """Bring ``var`` and whatever computes it into the graph.

        A root that is neither an input nor a constant raises
        :class:`MissingInputError`, unless ``import_missing`` adds it as a new input.
        """
        if var in self.variables:
            return
        if var.owner is not None:
            try:
                self.import_node(var.owner, reason, import_missing=import_missing)
            except MissingInputError as exc:
                # report the path from ``var`` itself (an output being added,
                # or a replacement), not from the node where the walk stopped
                raise MissingInputError(exc.variable, path_to([var], exc.variable)) from None
            return
        if not isinstance(var, Constant):
            if not import_missing:
                raise MissingInputError(var, [var])
            self.add_input(var)
            return
        self.variables.add(var)
        if var not in self.clients:
            self.clients[var] = ClientList()

    def import_node(self, node, reason=None, import_missing=False):
        """Import ``node`` and every node it needs that is not yet in the graph.

        Roots it needs that are not inputs raise :class:`MissingInputError`,
        unless ``import_missing`` adds them as new inputs.
        """
        new_nodes = []
        state = {}
        stack = [(node, False)]
        while stack:
            current, finished = stack.pop()
            if finished:
                new_nodes.append(current)
                continue
            if current in self.apply_nodes or current in state:
                continue
            state[current] = True
            stack.append((current, True))
            for inp in reversed(current.inputs):
                if inp in self.variables:
                    continue
                if inp.owner is not None:
                    stack.append((inp.owner, False))
                elif not isinstance(inp, Constant):
                    if not import_missing:
                        raise MissingInputError(inp, path_to(node.outputs, inp))
                    self.add_input(inp)
        for new in new_nodes:
            self._add_node(new, reason)

    def _add_node(self, node, reason):
        """Record ``node`` (its inputs already in the graph) as a client of its inputs."""
        self.apply_nodes.add(node)
        for out in node.outputs:
            self.variables.add(out)
            if out not in self.clients:
                self.clients[out] = ClientList()
        for i, inp in enumerate(node.inputs):
            if inp not in self.variables:  # a constant
                self.variables.add(inp)
                if inp not in self.clients:
                    self.clients[inp] = ClientList()
            self.clients[inp].append((node, i))
        self._changed()
        self._callback("on_import", node, reason)

    # -- editing ---------------------------------------------------------
    def change_node_input(self, node, i, new_var, reason=None):
        """Make input ``i`` of ``node`` (or output ``i`` when node is "output") read ``new_var``.

        No type check is made here; use :meth:`replace`.
        """
        if node == "output":
            old = self.outputs[i]
            if old is new_var:
                return
            self.import_var(new_var, reason)
            self.outputs[i] = new_var
        else:
            old = node.inputs[i]
            if old is new_var:
                return
            self.import_var(new_var, reason)
            node.inputs[i] = new_var
            _graph._bump_graph_version()
        self.clients[new_var].append((node, i))
        self._remove_client(old, (node, i), reason)
        self._changed()
        self._callback("on_change_input", node, i, old, new_var, reason)

    def add_client(self, var, client):
        """Record that ``client`` (a ``(node, i)`` pair, or ``("output", i)``) reads ``var``."""
        if var not in self.variables:
            raise ValueError("add_client: %r is not part of this FunctionGraph" % (var,))
        self.clients[var].append(client)

    def remove_client(self, var, client, reason=None):
        """Forget that ``client`` reads ``var``; nodes no longer read by anything are pruned
        (``on_prune`` fires for each), inputs always stay."""
        if client not in self.clients.get(var, ()):
            raise ValueError("remove_client: %r is not a client of %r" % (client, var))
        self._remove_client(var, client, reason)
        self._changed()

    def remove_node(self, node, reason=None):
        """Remove ``node`` with everything that reads its outputs, outputs included.

        Graph outputs computed from ``node`` are dropped from :attr:`outputs`;
        nodes that only fed the removed ones are pruned.
        """
        if node not in self.apply_nodes:
            raise ValueError("remove_node: %s is not part of this FunctionGraph" % (node,))
        self._remove_dependents(node.outputs, reason)

    def remove_input(self, i, reason=None):
        """Remove input ``i`` with every node and output that depends on it."""
        var = self.inputs[i]
        self._remove_dependents([var], reason)
        self.inputs.pop(i)
        self._input_set.discard(var)
        if not self.clients.get(var):
            self.clients.pop(var, None)
            self.variables.discard(var)
        self._changed()

    def _remove_dependents(self, roots, reason):
        """Drop the graph outputs computed from ``roots``.

        Every node of a FunctionGraph feeds some output, so once those outputs
        are gone the nodes between are pruned by the client bookkeeping.
        """
        doomed = set(roots)
        stack = list(roots)
        while stack:
            for client, _ in self.clients.get(stack.pop(), ()):
                if client != "output" and not doomed.issuperset(client.outputs):
                    doomed.update(client.outputs)
                    stack.extend(client.outputs)
        for j in reversed(range(len(self.outputs))):
            if self.outputs[j] in doomed:
                self.remove_output(j, reason)
        self._changed()

    def _remove_client(self, var, client, reason):
        stack = [(var, client)]
        while stack:
            var, client = stack.pop()
            clients = self.clients.get(var)
            if clients is None:
                continue
            clients.remove(client)
            if clients or var in self._input_set:
                continue
            owner = var.owner
            if owner is None:
                del self.clients[var]
                self.variables.discard(var)
                continue
            if any(self.clients.get(out) for out in owner.outputs):
                continue
            if owner not in self.apply_nodes:
                continue
            self.apply_nodes.discard(owner)
            for out in owner.outputs:
                self.variables.discard(out)
                self.clients.pop(out, None)
            self._callback("on_prune", owner, reason)
            for j, inp in enumerate(owner.inputs):
                stack.append((inp, (owner, j)))

    def replace(self, var, new_var, reason=None, verbose=False):
        """Replace every use of ``var`` by ``new_var``.

        ``new_var`` goes through ``var.type.filter_variable``: a more specific
        type is kept, a more general one is narrowed (``SpecifyShape`` for
        tensors), an incompatible one raises TypeError naming both variables
        and types.  The decision is appended to :attr:`history`.
        """
        if not isinstance(new_var, Variable):
            raise TypeError("replace(%r, ...) needs a Variable as replacement, got %r" % (
                var, new_var))
        trace = NarrowingTrace(var.type, new_var)
        try:
            checked = var.type.filter_variable(new_var, allow_convert=True, trace=trace)
        except TypeError as exc:
            raise TypeError("cannot replace %r of type %r by %r of type %r%s: %s" % (
                var, var.type, new_var, new_var.type,
                " (%s)" % reason if reason else "", exc)) from exc
        if var not in self.variables:
            raise ValueError("cannot replace %r: it is not part of this FunctionGraph" % (var,))
        if checked is var:
            return
        if verbose:
            print("rewrite %s: %r -> %r" % (reason, var, checked))
        _inherit_site(var, checked, self.variables)
        changes = list(self.clients[var])
        for node, i in changes:
            if node != "output" and node not in self.apply_nodes:
                continue
            self.change_node_input(node, i, checked, reason)
        record = Replacement(len(self.history), reason, var, checked, new_var, trace, changes)
        self.history.append(record)
        self._callback("on_replace", record)

    def replace_all(self, pairs, reason=None):
        """Apply :meth:`replace` to each ``(var, new_var)`` pair in order."""
        for var, new_var in pairs:
            self.replace(var, new_var, reason=reason)

    def remove_output(self, i, reason=None):
        """Drop output ``i`` (pruning what only it needed)."""
        old = self.outputs.pop(i)
        self._remove_client(old, ("output", i), reason)
        for j in range(i, len(self.outputs)):
            clients = self.clients[self.outputs[j]]
            clients[clients.index(("output", j + 1))] = ("output", j)
        self._changed()

    # -- features --------------------------------------------------------
    def attach_feature(self, feature):
        """Add a listener; its ``on_attach(fgraph)`` runs now."""
        if feature in self.features:
            return
        self.features.append(feature)
        hook = getattr(feature, "on_attach", None)
        if hook is not None:
            hook(self)

    def remove_feature(self, feature):
        """Remove a listener; its ``on_detach(fgraph)`` runs now."""
        self.features.remove(feature)
        hook = getattr(feature, "on_detach", None)
        if hook is not None:
            hook(self)

    def _callback(self, name, *args):
        for feature in self.features:
            hook = getattr(feature, name, None)
            if hook is not None:
                hook(self, *args)

    def _changed(self):
        self._order = None
        self.version += 1

    # -- queries ---------------------------------------------------------
    def toposort(self):
        """The Apply nodes in an order where each comes after those it needs.

        A node that overwrites an input (``op.destroy_map``) comes after every
        other node reading that value or a view of it; see
        :func:`order_destroyers`.
        """
        if self._order is None:
            order = _graph.io_toposort(self.inputs, self.outputs)
            if any(node.op.destroy_map for node in order):
                order = order_destroyers(self, order)
            self._order = order
        return list(self._order)

    def get_clients(self, var):
        """The ``(node, input index)`` pairs reading ``var``."""
        return list(self.clients.get(var, ()))

    def check_integrity(self):
        """Raise AssertionError-like ValueError if the bookkeeping is inconsistent."""
        nodes = set(_graph.io_toposort(self.inputs, self.outputs))
        if nodes != self.apply_nodes:
            raise ValueError("apply_nodes disagree with the graph: %d extra, %d missing" % (
                len(self.apply_nodes - nodes), len(nodes - self.apply_nodes)))
        expected = {}
        for var in self.inputs:
            expected.setdefault(var, [])
        for node in nodes:
            for i, inp in enumerate(node.inputs):
                expected.setdefault(inp, []).append((node, i))
            for out in node.outputs:
                expected.setdefault(out, [])
        for i, out in enumerate(self.outputs):
            expected.setdefault(out, []).append(("output", i))
        if set(expected) != self.variables:
            raise ValueError("variables disagree with the graph: %r" % (
                set(expected) ^ self.variables,))
        for var, clients in expected.items():
            if sorted(map(_client_key, clients)) != sorted(map(_client_key, self.clients[var])):
                raise ValueError("clients of %r are %r, expected %r" % (
                    var, self.clients[var], clients))
            if (var.owner is None and not isinstance(var, Constant)
                    and var not in self._input_set):
                raise ValueError("%r is a root but not an input" % (var,))

    def clone(self):
        """An independent copy (without history or features)."""
        return FunctionGraph(self.inputs, self.outputs, clone=True, name=self.name)

    def __repr__(self):
        return "FunctionGraph(%s)" % ", ".join(repr(o) for o in self.outputs)

    def __iter__(self):
        return iter(self.toposort())

    def __contains__(self, item):
        return item in self.variables or item in self.apply_nodes


def memory_source(node, j):
    """The input of ``node`` whose memory output ``j`` uses (``destroy_map``, else
    ``view_map``), or None when the output is fresh memory."""
    op = node.op
    for kind in (op.destroy_map, op.view_map):
        ins = kind.get(j) if kind else None
        if ins:
            return node.inputs[ins[0]]
    return None


def memory_versions(order):
    """``(root, version)`` dicts for the variables of ``order`` that alias another.

    ``root[v]`` is the variable that owns ``v``'s memory (followed back through
    ``view_map`` and ``destroy_map``); ``version[v]`` is the value that memory
    holds when ``v`` is read: the output of the last destroyer on the way back,
    or the root.  Variables missing from a dict are their own root/version.
    """
    root, version = {}, {}
    for node in order:
        destroyed = node.op.destroy_map
        for j, out in enumerate(node.outputs):
            src = memory_source(node, j)
            if src is None:
                continue
            root[out] = root.get(src, src)
            version[out] = out if destroyed.get(j) else version.get(src, src)
    return root, version


def order_destroyers(fgraph, order):
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


def _victims(fgraph, order, root, version):
    """``{victim value: the node destroying it}``, refusing what may not be overwritten."""
    inputs = set(fgraph.inputs)
    returned = {}
    for out in fgraph.outputs:
        returned.setdefault(version.get(out, out), out)
    victims = {}
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


def _check_overwritable(node, mem, victim, inputs, returned):
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


def _run_after(order, victims, version):
    """``{node: the nodes it must run after}``: its inputs' owners and, for a
    destroyer, every other reader of its victim."""
    readers = {}
    before = {node: set() for node in order}
    for node in order:
        for var in node.inputs:
            readers.setdefault(version.get(var, var), []).append(node)
            if var.owner is not None:
                before[node].add(var.owner)
    for victim, destroyer in victims.items():
        before[destroyer].update(r for r in readers.get(victim, ()) if r is not destroyer)
    return before


def _ordered_like(order, before):
    """A topological order of ``before`` that keeps ``order`` wherever it can
    (the earliest ready node first); ValueError when none exists."""
    position = {node: i for i, node in enumerate(order)}
    waiting = {node: len(deps) for node, deps in before.items()}
    after = {node: [] for node in order}
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


def _client_key(client):
    node, i = client
    return (id(node), i)


def _inherit_site(old, new, known):
    """Give the nodes a replacement brings in the creation site of what they replace.

    A node built by a rewrite was "built" inside nbgraph; the line that matters
    to the user is the one that built the variable it stands for.
    """
    site = getattr(old.tag, "trace", None)
    path = getattr(old.tag, "scope", None)  # and its scope (nbgraph.core.scope)
    if (site is None and path is None) or new.owner is None:
        return
    stack = [new]
    seen = set()
    while stack:
        var = stack.pop()
        node = var.owner
        if node is None or var in known or node in seen:
            continue
        seen.add(node)
        for out in node.outputs:
            if site is not None:
                out.tag.trace = site
            if path is not None:
                out.tag.scope = path
        stack.extend(node.inputs)
