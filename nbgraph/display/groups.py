"""Which box each node of a diagram belongs to: scopes, and an automatic split of the backward pass.

:func:`group_paths` gives every Apply node a *group path*, a tuple of names
from the outermost box inwards (``()``: no box):

- a node built inside ``with nbgraph.scope(...)`` blocks has their path
  (``var.tag.scope``, see :mod:`nbgraph.core.scope`);
- when the graph's outputs mix forward results with gradients
  (``grad(cost, W0)``, known by ``var.tag.grad_of`` or their labels) or
  updates (``update -> W0``), every node that no forward output needs and no
  scope claims goes in the box ``gradient``; inside it, a node sits in the
  box of the forward scope it differentiates (the scope of a forward input,
  else that of a gradient node it reads), so the backward pass of ``layer3``
  is ``gradient/layer3``.

:func:`path_text` / :func:`parse_path` convert between a path and the
``"layer1/affine"`` string the ``collapse``/``expand`` options take.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from nbgraph.core.scope import SEPARATOR, scope_of

if TYPE_CHECKING:
    from nbgraph.core.graph import Apply, Variable

#: A box path, outermost name first (``()``: no box).
Path = tuple[str, ...]

__all__ = ["GRADIENT", "group_paths", "path_text", "parse_path", "is_backward_label"]

#: The name of the automatic box holding the backward pass.
GRADIENT = "gradient"


def path_text(path: Iterable[str]) -> str:
    """``("layer1", "affine")`` -> ``"layer1/affine"``."""
    return SEPARATOR.join(path)


def parse_path(text: str | Path) -> Path:
    """``"layer1/affine"`` (or a tuple) -> ``("layer1", "affine")``."""
    if isinstance(text, tuple):
        return text
    return tuple(p for p in str(text).split(SEPARATOR) if p)


def is_backward_label(label: str | None) -> bool:
    """True for the label of a gradient or an update output."""
    if not label:
        return False
    return label.startswith("grad(") or "update ->" in label


def _label(var: Variable, labels: Mapping[Variable, str]) -> str | None:
    label = labels.get(var)
    if label is None:
        label = getattr(getattr(var, "tag", None), "grad_of", None)
    return label


def group_paths(applys: Iterable[Apply], outputs: Sequence[Variable],
                labels: Mapping[Variable, str] | None = None,
                auto: bool = True) -> dict[Apply, Path]:
    """``{Apply: path}`` for the Apply nodes ``applys`` (in any order) of a graph
    with ``outputs``; see the module docstring.  ``auto=False``: scopes only."""
    applys = list(applys)
    members = set(applys)
    paths: dict[Apply, Path] = {node: (scope_of(node) or ()) for node in applys}
    if not auto:
        return paths
    forward_out, backward_out = _split_outputs(outputs, labels or {})
    if not backward_out or not forward_out:
        return paths
    forward = _needed_by(forward_out, members)
    backward = [n for n in _toposort(applys, members) if n not in forward and not paths[n]]
    hint = _differentiated_scopes(backward, forward, paths)
    _join_readers_boxes(backward, hint)
    for node in backward:
        paths[node] = (GRADIENT,) + hint[node]
    return paths


def _split_outputs(outputs: Sequence[Variable], labels: Mapping[Variable, str],
                   ) -> tuple[list[Variable], list[Variable]]:
    """``(forward outputs, backward outputs)``: gradients and updates are backward."""
    backward_out = [o for o in outputs if is_backward_label(_label(o, labels))]
    backward_set = set(backward_out)
    forward_out = [o for o in outputs if o not in backward_set]
    return forward_out, backward_out


def _needed_by(outputs: Sequence[Variable], members: set[Apply]) -> set[Apply]:
    """The nodes of ``members`` that ``outputs`` need (their ancestors among them)."""
    needed: set[Apply] = set()
    stack = [o.owner for o in outputs if o.owner is not None and o.owner in members]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack.extend(i.owner for i in node.inputs
                     if i.owner is not None and i.owner in members and i.owner not in needed)
    return needed


def _differentiated_scopes(backward: Sequence[Apply], forward: set[Apply],
                           paths: Mapping[Apply, Path]) -> dict[Apply, Path]:
    """``{backward node: the forward scope it differentiates}`` (``()``: not known yet).

    The scope of a forward input it reads, else the one found for a gradient
    node it reads (``backward`` is in topological order, so that is known).
    """
    hint: dict[Apply, Path] = {}
    for node in backward:
        hint[node] = (_forward_scope(node, forward, paths)
                      or _read_scope(node, hint) or ())
    return hint


def _forward_scope(node: Apply, forward: set[Apply], paths: Mapping[Apply, Path]) -> Path | None:
    """The scope of the first forward node ``node`` reads that has one."""
    for inp in node.inputs:
        owner = inp.owner
        if owner is not None and owner in forward and paths.get(owner):
            return paths[owner]
    return None


def _read_scope(node: Apply, hint: Mapping[Apply, Path]) -> Path | None:
    """The hint of the first node ``node`` reads that has one."""
    for inp in node.inputs:
        owner = inp.owner
        if owner is not None and hint.get(owner):
            return hint[owner]
    return None


def _join_readers_boxes(backward: Sequence[Apply], hint: dict[Apply, Path]) -> None:
    """A backward node without a hint joins the box of a node reading it (last first)."""
    readers: dict[Apply, list[Apply]] = {}
    for node in backward:
        for inp in node.inputs:
            if inp.owner is not None and inp.owner in hint:
                readers.setdefault(inp.owner, []).append(node)
    for node in reversed(backward):
        if not hint[node]:
            for reader in readers.get(node, ()):
                if hint[reader]:
                    hint[node] = hint[reader]
                    break


def _toposort(applys: Sequence[Apply], members: set[Apply]) -> list[Apply]:
    """``applys`` ordered inputs-first (iteratively), restricted to ``members``."""
    order: list[Apply] = []
    state: dict[Apply, int] = {}
    for root in applys:
        if root in state:
            continue
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                state[node] = 2
                order.append(node)
                continue
            if state.get(node):
                continue
            state[node] = 1
            stack.append((node, True))
            for inp in node.inputs:
                owner = inp.owner
                if owner is not None and owner in members and not state.get(owner):
                    stack.append((owner, False))
    return order
