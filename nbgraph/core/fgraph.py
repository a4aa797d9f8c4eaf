"""FunctionGraph: the mutable graph container that rewrites edit.

A FunctionGraph owns a graph between a list of input Variables and a list of
outputs, and keeps for every Variable its *clients* (the ``(node, index)``
pairs that read it; an output of the graph is read by ``("output", i)``).
Rewrites change it only through :meth:`FunctionGraph.replace`, which checks
the replacement's type with ``filter_variable`` and records the decision in
:attr:`FunctionGraph.history`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from nbgraph.core import graph as _graph
from nbgraph.core.clients import Client, ClientList
from nbgraph.core.features import Feature, Replacement
from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.core.memory import memory_source, memory_versions, order_destroyers
from nbgraph.core.type import NarrowingTrace

# Feature, Replacement (nbgraph.core.features) and the memory functions
# (nbgraph.core.memory) are part of this module's API: they stay importable here.
__all__ = ["FunctionGraph", "ClientList", "MissingInputError", "Replacement", "Feature", "path_to",
           "order_destroyers", "memory_source", "memory_versions", "Reader"]

#: Who reads a value: a node, or ``"output"`` for the graph's outputs.
Reader = Apply | Literal["output"]


class MissingInputError(ValueError):
    """An output depends on a root Variable that is not among the inputs."""

    def __init__(self, variable: Variable, path: Iterable[Variable] = ()) -> None:
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


def _path_text(var: Variable) -> str:
    if var.owner is not None and var.name is None:
        return "%s.%s" % (var.owner.op, var.index)
    return repr(var)


def path_to(roots: Iterable[Variable], target: Variable) -> list[Variable]:
    """Variables from one of ``roots`` down to ``target`` (through owners' inputs)."""
    parent: dict[Variable, Variable] = {}
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


def _checked_outputs(outputs: Variable | Sequence[Variable] | None) -> list[Variable]:
    """``outputs`` (a Variable or a sequence of them) as a list, or TypeError."""
    if outputs is None:
        raise TypeError("FunctionGraph needs outputs")
    given: list[object] = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    checked: list[Variable] = []
    for i, out in enumerate(given):
        if not isinstance(out, Variable):
            raise TypeError("output %d of FunctionGraph must be a Variable, got %r" % (i, out))
        checked.append(out)
    return checked


def _checked_inputs(inputs: Iterable[Variable] | None,
                    outputs: Sequence[Variable]) -> list[Variable]:
    """``inputs`` as a list of distinct non-constant Variables, or TypeError/ValueError.

    None stands for every non-constant root of ``outputs``.
    """
    if inputs is None:
        inputs = [v for v in _graph.graph_inputs(list(outputs)) if not isinstance(v, Constant)]
    checked = list(inputs)
    for i, inp in enumerate(checked):
        if not isinstance(inp, Variable):
            raise TypeError("input %d of FunctionGraph must be a Variable, got %r" % (i, inp))
        if isinstance(inp, Constant):
            raise TypeError("input %d of FunctionGraph, %r, is a Constant; constants "
                            "cannot be inputs" % (i, inp))
    if len(set(checked)) != len(checked):
        raise ValueError("FunctionGraph inputs contain the same variable twice: %r" % checked)
    return checked


class FunctionGraph:
    """A graph from ``inputs`` to ``outputs`` that can be edited safely.

    With ``clone=True`` (the default) the graph is copied first and the
    caller's Variables are untouched; ``clone=False`` edits the caller's
    graph in place.  ``inputs=None`` takes every non-constant root.
    """

    def __init__(self, inputs: Iterable[Variable] | None = None,
                 outputs: Variable | Sequence[Variable] | None = None, clone: bool = True,
                 features: Iterable[Feature] = (), name: str | None = None) -> None:
        outputs = _checked_outputs(outputs)
        inputs = _checked_inputs(inputs, outputs)
        #: The caller's graph objects mapped to their clones (None with ``clone=False``).
        self.equiv: dict[Any, Any] | None = None
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

    def _start_bookkeeping(self) -> None:
        """Empty inputs, outputs, node and variable sets, clients, features and history."""
        self.inputs: list[Variable] = []
        self._input_set: set[Variable] = set()  # the inputs again, for O(1) membership tests
        self.outputs: list[Variable] = []
        self.apply_nodes: set[Apply] = set()
        self.variables: set[Variable] = set()
        self.clients: dict[Variable, ClientList] = {}
        self.features: list[Any] = []  # Feature instances, or any object with its hooks
        self.history: list[Replacement] = []
        self._order: list[Apply] | None = None
        self.version = 0

    def _import_outputs(self, outputs: Sequence[Variable]) -> None:
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
    def add_input(self, var: Variable) -> None:
        """Add a root Variable as a new input."""
        if var in self._input_set:
            return
        self.inputs.append(var)
        self._input_set.add(var)
        self.variables.add(var)
        if var not in self.clients:
            self.clients[var] = ClientList()

    def add_output(self, var: Variable, reason: str | None = None) -> None:
        """Add ``var`` (importing what it needs) as a new output."""
        self.import_var(var, reason)
        self.outputs.append(var)
        self.clients[var].append(("output", len(self.outputs) - 1))

    def import_var(self, var: Variable, reason: str | None = None,
                   import_missing: bool = False) -> None:
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

    def import_node(self, node: Apply, reason: str | None = None,
                    import_missing: bool = False) -> None:
        """Import ``node`` and every node it needs that is not yet in the graph.

        Roots it needs that are not inputs raise :class:`MissingInputError`,
        unless ``import_missing`` adds them as new inputs.
        """
        new_nodes: list[Apply] = []
        state: dict[Apply, bool] = {}
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

    def _add_node(self, node: Apply, reason: str | None) -> None:
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
    def change_node_input(self, node: Reader, i: int, new_var: Variable,
                          reason: str | None = None) -> None:
        """Make input ``i`` of ``node`` (or output ``i`` when node is "output") read ``new_var``.

        No type check is made here; use :meth:`replace`.
        """
        if isinstance(node, str):  # "output"
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

    def add_client(self, var: Variable, client: Client) -> None:
        """Record that ``client`` (a ``(node, i)`` pair, or ``("output", i)``) reads ``var``."""
        if var not in self.variables:
            raise ValueError("add_client: %r is not part of this FunctionGraph" % (var,))
        self.clients[var].append(client)

    def remove_client(self, var: Variable, client: Client, reason: str | None = None) -> None:
        """Forget that ``client`` reads ``var``; nodes no longer read by anything are pruned
        (``on_prune`` fires for each), inputs always stay."""
        if client not in self.clients.get(var, ()):
            raise ValueError("remove_client: %r is not a client of %r" % (client, var))
        self._remove_client(var, client, reason)
        self._changed()

    def remove_node(self, node: Apply, reason: str | None = None) -> None:
        """Remove ``node`` with everything that reads its outputs, outputs included.

        Graph outputs computed from ``node`` are dropped from :attr:`outputs`;
        nodes that only fed the removed ones are pruned.
        """
        if node not in self.apply_nodes:
            raise ValueError("remove_node: %s is not part of this FunctionGraph" % (node,))
        self._remove_dependents(node.outputs, reason)

    def remove_input(self, i: int, reason: str | None = None) -> None:
        """Remove input ``i`` with every node and output that depends on it."""
        var = self.inputs[i]
        self._remove_dependents([var], reason)
        self.inputs.pop(i)
        self._input_set.discard(var)
        if not self.clients.get(var):
            self.clients.pop(var, None)
            self.variables.discard(var)
        self._changed()

    def _remove_dependents(self, roots: Sequence[Variable], reason: str | None) -> None:
        """Drop the graph outputs computed from ``roots``.

        Every node of a FunctionGraph feeds some output, so once those outputs
        are gone the nodes between are pruned by the client bookkeeping.
        """
        doomed = set(roots)
        stack = list(roots)
        while stack:
            for client, _ in self.clients.get(stack.pop(), ()):
                if not isinstance(client, str) and not doomed.issuperset(client.outputs):
                    doomed.update(client.outputs)
                    stack.extend(client.outputs)
        for j in reversed(range(len(self.outputs))):
            if self.outputs[j] in doomed:
                self.remove_output(j, reason)
        self._changed()

    def _remove_client(self, var: Variable, client: Client, reason: str | None) -> None:
        stack: list[tuple[Variable, Client]] = [(var, client)]
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

    def replace(self, var: Variable, new_var: Variable, reason: str | None = None,
                verbose: bool = False) -> None:
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
            if not isinstance(node, str) and node not in self.apply_nodes:
                continue
            self.change_node_input(node, i, checked, reason)
        record = Replacement(len(self.history), reason, var, checked, new_var, trace, changes)
        self.history.append(record)
        self._callback("on_replace", record)

    def replace_all(self, pairs: Iterable[tuple[Variable, Variable]],
                    reason: str | None = None) -> None:
        """Apply :meth:`replace` to each ``(var, new_var)`` pair in order."""
        for var, new_var in pairs:
            self.replace(var, new_var, reason=reason)

    def remove_output(self, i: int, reason: str | None = None) -> None:
        """Drop output ``i`` (pruning what only it needed)."""
        old = self.outputs.pop(i)
        self._remove_client(old, ("output", i), reason)
        for j in range(i, len(self.outputs)):
            clients = self.clients[self.outputs[j]]
            clients[clients.index(("output", j + 1))] = ("output", j)
        self._changed()

    # -- features --------------------------------------------------------
    def attach_feature(self, feature: Any) -> None:
        """Add a listener; its ``on_attach(fgraph)`` runs now."""
        if feature in self.features:
            return
        self.features.append(feature)
        hook = getattr(feature, "on_attach", None)
        if hook is not None:
            hook(self)

    def remove_feature(self, feature: Any) -> None:
        """Remove a listener; its ``on_detach(fgraph)`` runs now."""
        self.features.remove(feature)
        hook = getattr(feature, "on_detach", None)
        if hook is not None:
            hook(self)

    def _callback(self, name: str, *args: Any) -> None:
        for feature in self.features:
            hook = getattr(feature, name, None)
            if hook is not None:
                hook(self, *args)

    def _changed(self) -> None:
        self._order = None
        self.version += 1

    # -- queries ---------------------------------------------------------
    def toposort(self) -> list[Apply]:
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

    def get_clients(self, var: Variable) -> list[Client]:
        """The ``(node, input index)`` pairs reading ``var``."""
        return list(self.clients.get(var, ()))

    def check_integrity(self) -> None:
        """Raise AssertionError-like ValueError if the bookkeeping is inconsistent."""
        nodes = set(_graph.io_toposort(self.inputs, self.outputs))
        if nodes != self.apply_nodes:
            raise ValueError("apply_nodes disagree with the graph: %d extra, %d missing" % (
                len(self.apply_nodes - nodes), len(nodes - self.apply_nodes)))
        expected: dict[Variable, list[Client]] = {}
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

    def clone(self) -> FunctionGraph:
        """An independent copy (without history or features)."""
        return FunctionGraph(self.inputs, self.outputs, clone=True, name=self.name)

    def __repr__(self) -> str:
        return "FunctionGraph(%s)" % ", ".join(repr(o) for o in self.outputs)

    def __iter__(self) -> Iterator[Apply]:
        return iter(self.toposort())

    def __contains__(self, item: object) -> bool:
        return item in self.variables or item in self.apply_nodes


def _client_key(client: Client) -> tuple[int, int]:
    node, i = client
    return (id(node), i)


def _inherit_site(old: Variable, new: Variable, known: set[Variable]) -> None:
    """Give the nodes a replacement brings in the creation site of what they replace.

    A node built by a rewrite was "built" inside nbgraph; the line that matters
    to the user is the one that built the variable it stands for.
    """
    site = getattr(old.tag, "trace", None)
    path = getattr(old.tag, "scope", None)  # and its scope (nbgraph.core.scope)
    if (site is None and path is None) or new.owner is None:
        return
    stack = [new]
    seen: set[Apply] = set()
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
