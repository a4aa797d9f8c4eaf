"""Scopes: names for the parts of a graph, recorded where its nodes are built.

>>> import nbgraph
>>> import nbgraph.tensor as nt
>>> x = nt.dvector("x")
>>> with nbgraph.scope("layer1"):
...     with nbgraph.scope("affine"):
...         h = x * 2.0 + 1.0
...     y = nt.tanh(h)
>>> scope_of(h)
('layer1', 'affine')
>>> scope_of(y)
('layer1',)
>>> scope_of(x) is None
True

Every Apply built inside ``with scope(name):`` records the path of the scopes
open at that moment (outermost first) on its outputs, as ``var.tag.scope``,
next to the build-site ``var.tag.trace`` (:mod:`nbgraph.core.trace`).  Clones
keep the tag, and a node a rewrite puts in place of another inherits the
replaced variable's scope, so a compiled function's graph keeps its parts.
Display uses the path to draw a scope as one box that can be collapsed or
expanded, and dprint can group lines by it.

The open scopes live in a :class:`contextvars.ContextVar`: threads and
asyncio tasks each have their own.  Reading it costs well under a
microsecond per Apply.

:func:`label_gradient` gives the variables ``grad`` returns a display label
(``var.tag.grad_of``, e.g. ``"grad(cost, W0)"``) without renaming them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from nbgraph.core.graph import Apply, Variable

__all__ = ["scope", "current_scope", "scope_of", "label_gradient", "SEPARATOR"]

#: How a scope path is written as one string: ``"layer1/affine"``.
SEPARATOR = "/"

_OPEN: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("nbgraph_scope", default=())


@contextlib.contextmanager
def scope(name: str) -> Iterator[tuple[str, ...]]:
    """Tag every node built inside the ``with`` block with ``name`` (nested: a path).

    ``name`` is a non-empty string without ``"/"``; ``"a/b"`` opens two scopes.
    """
    if not isinstance(name, str) or not name.strip(SEPARATOR + " "):
        raise ValueError("scope name must be a non-empty string, got %r" % (name,))
    parts = tuple(p for p in name.split(SEPARATOR) if p)
    token = _OPEN.set(_OPEN.get() + parts)
    try:
        yield parts
    finally:
        _OPEN.reset(token)


def current_scope() -> tuple[str, ...]:
    """The path of the scopes open here, outermost first (``()`` when none)."""
    return _OPEN.get()


def scope_of(var_or_node: Variable | Apply) -> tuple[str, ...] | None:
    """The scope path a Variable (or an Apply, through its first output) was built in."""
    outputs = getattr(var_or_node, "outputs", None)
    var = outputs[0] if outputs else var_or_node
    tag = getattr(var, "tag", None)
    path: tuple[str, ...] | None = getattr(tag, "scope", None)
    return path


_Result = TypeVar("_Result", bound="Variable | Sequence[Variable]")


def label_gradient(result: _Result, cost: Variable | None,
                   wrt: Variable | Sequence[Variable]) -> _Result:
    """Give each Variable of ``result`` (grad's return: one Variable or a list for
    ``wrt``) the display label ``grad(cost, w)``, kept in ``var.tag.grad_of``.

    Names are left alone (a user's name wins in every display); a root variable
    or one already labelled is not relabelled.  Returns ``result``.
    """
    results: list[object] = list(result) if isinstance(result, (list, tuple)) else [result]
    wrts = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    cost_name = _short_name(cost, "cost") if cost is not None else "known_grads"
    for g, w in zip(results, wrts, strict=False):  # grad returns one per wrt
        tag = getattr(g, "tag", None)
        if tag is None or getattr(g, "owner", None) is None or "grad_of" in tag.__dict__:
            continue
        tag.grad_of = "grad(%s, %s)" % (cost_name, _short_name(w, "?"))
    return result


def _short_name(var: object, default: str) -> str:
    name = getattr(var, "name", None)
    return str(name) if name else default
