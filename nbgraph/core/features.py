"""What a FunctionGraph tells its listeners: the Feature hooks and the Replacement record.

A :class:`Feature` attached to a :class:`~nbgraph.core.fgraph.FunctionGraph`
hears every edit (a node imported or pruned, an input rewired, a whole
``replace`` done); each ``replace`` also appends a :class:`Replacement` to
the graph's ``history``.

>>> import nbgraph.tensor as nt
>>> from nbgraph.core.fgraph import FunctionGraph
>>> class Reasons(Feature):
...     def __init__(self):
...         self.seen = []
...     def on_replace(self, fgraph, record):
...         self.seen.append(record.reason)
>>> x = nt.dvector("x")
>>> reasons = Reasons()
>>> fg = FunctionGraph([x], [nt.exp(x) * 1.0], features=[reasons])
>>> fg.replace(fg.outputs[0], nt.exp(fg.inputs[0]), reason="x * 1 is x")
>>> reasons.seen, fg.history[-1]
(['x * 1 is x'], <Replacement 0: Elemwise{mul}.0 -> Elemwise{exp}.0 (x * 1 is x)>)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from nbgraph.core.clients import Client
    from nbgraph.core.fgraph import FunctionGraph
    from nbgraph.core.graph import Apply, Variable
    from nbgraph.core.type import NarrowingTrace

__all__ = ["Feature", "Replacement"]


class Feature:
    """Base for FunctionGraph listeners: override the hooks you need.

    Every hook is a no-op here.  A listener need not subclass Feature (hooks
    are looked up by name), but subclassing documents which hooks exist.
    """

    def on_attach(self, fgraph: FunctionGraph) -> None:
        """Called once when the feature is attached to ``fgraph``."""

    def on_detach(self, fgraph: FunctionGraph) -> None:
        """Called once when the feature is removed from ``fgraph``."""

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        """``node`` has entered the graph (its inputs are already in it)."""

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        """``node`` has left the graph (nothing in the graph reads it any more)."""

    def on_change_input(self, fgraph: FunctionGraph, node: Apply | Literal["output"], i: int,
                        old: Variable, new: Variable, reason: str | None) -> None:
        """Input ``i`` of ``node`` (or output ``i`` when node is "output") now reads ``new``."""

    def on_replace(self, fgraph: FunctionGraph, record: Replacement) -> None:
        """A whole :meth:`FunctionGraph.replace` finished; ``record`` says what changed."""


class Replacement:
    """One entry of :attr:`FunctionGraph.history`.

    ``old`` was replaced by ``new`` (what ``filter_variable`` returned for
    ``requested``) for ``reason``; ``trace`` is the narrowing trace of that
    check; ``changes`` lists the ``(client, input index)`` pairs rewired.
    """

    __slots__ = ("step", "reason", "old", "new", "requested", "trace", "changes")

    def __init__(self, step: int, reason: str | None, old: Variable, new: Variable,
                 requested: Variable, trace: NarrowingTrace, changes: Sequence[Client]) -> None:
        self.step = step
        self.reason = reason
        self.old = old
        self.new = new
        self.requested = requested
        self.trace = trace
        self.changes = changes

    def __repr__(self) -> str:
        return "<Replacement %d: %r -> %r (%s)>" % (self.step, self.old, self.new,
                                                   self.reason or "no reason given")
