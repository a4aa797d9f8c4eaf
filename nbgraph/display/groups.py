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

from nbgraph.core.scope import SEPARATOR, scope_of

__all__ = ["GRADIENT", "group_paths", "path_text", "parse_path", "is_backward_label"]

#: The name of the automatic box holding the backward pass.
GRADIENT = "gradient"


def path_text(path) -> str:
    """``("layer1", "affine")`` -> ``"layer1/affine"``."""
    return SEPARATOR.join(path)


def parse_path(text) -> tuple:
    """``"layer1/affine"`` (or a tuple) -> ``("layer1", "affine")``."""
    if isinstance(text, tuple):
        return text
    return tuple(p for p in str(text).split(SEPARATOR) if p)


def is_backward_label(label) -> bool:
    """True for the label of a gradient or an update output."""
    return bool(label) and (label.startswith("grad(") or "update ->" in label)


def _label(var, labels):
    label = labels.get(var)
    if label is None:
        label = getattr(getattr(var, "tag", None), "grad_of", None)
    return label


def group_paths(applys, outputs, labels=None, auto=True) -> dict:
    """``{Apply: path}`` for the Apply nodes ``applys`` (in any order) of a graph
    with ``outputs``; see the module docstring.  ``auto=False``: scopes only."""
    labels = labels or {}
    applys = list(applys)
    members = set(applys)
    paths = {node: (scope_of(node) or ()) for node in applys}
    if not auto:
        return paths
    backward_out = [o for o in outputs if is_backward_label(_label(o, labels))]
    forward_out = [o for o in outputs if o not in set(backward_out)]
    if not backward_out or not forward_out:
        return paths
    forward = set()
    stack = [o.owner for o in forward_out if o.owner is not None and o.owner in members]
    while stack:
        node = stack.pop()
        if node in forward:
            continue
        forward.add(node)
        stack.extend(i.owner for i in node.inputs
                     if i.owner is not None and i.owner in members and i.owner not in forward)
    backward = [n for n in _toposort(applys, members) if n not in forward and not paths[n]]
    hint = {}
    for node in backward:
        found = None
        for inp in node.inputs:  # the forward scope it differentiates
            owner = inp.owner
            if owner is not None and owner in forward and paths.get(owner):
                found = paths[owner]
                break
        if found is None:
            for inp in node.inputs:  # else: what the gradient it reads belongs to
                owner = inp.owner
                if owner is not None and hint.get(owner):
                    found = hint[owner]
                    break
        hint[node] = found or ()
    readers = {}
    for node in backward:
        for inp in node.inputs:
            if inp.owner is not None and inp.owner in hint:
                readers.setdefault(inp.owner, []).append(node)
    for node in reversed(backward):  # a node with no hint joins the box of its reader
        if not hint[node]:
            for reader in readers.get(node, ()):
                if hint[reader]:
                    hint[node] = hint[reader]
                    break
    for node in backward:
        paths[node] = (GRADIENT,) + hint[node]
    return paths


def _toposort(applys, members):
    """``applys`` ordered inputs-first (iteratively), restricted to ``members``."""
    order, state = [], {}
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
