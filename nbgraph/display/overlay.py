"""Run-time overlays on a compiled function's diagram: ``f.show(values=..., profile=...)``.

- ``values``: the value of every variable of the compiled graph for one set of
  arguments, computed by :func:`node_values` (each node's ``perform``, on
  copies of what it would overwrite), then written on the diagram's edges:
  the shape, and the value itself when it has at most four elements.
  ``values=True`` uses the arguments of the last profiled call (a Function
  compiled with ``profile=True`` keeps them); otherwise pass the arguments
  (``f.show(values=(x0, y0))`` or a ``{name: value}`` dict).  Shared
  variables take their current values.
- ``profile=True``: the boxes are coloured by their share of the time
  recorded by ``profile=True`` (a legend gives the scale and lists the
  slowest nodes).

The result is a :class:`~nbgraph.display.view.GraphView` in the dense style
(options such as ``collapse``, ``expand``, ``rankdir`` go to
:func:`~nbgraph.display.diagram`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["show", "node_values"]


def node_values(function, args) -> dict:
    """``{Variable: value}`` for every variable of ``function.fgraph``, given the
    caller's arguments (a sequence in input order, or ``{name: value}``).

    Nodes run through their Op's ``perform`` in order; a node that overwrites an
    input gets a copy of it, so every value is the one the node saw.  A node that
    fails stops the walk: what was computed so far is returned.
    """
    fgraph = function.fgraph
    env = _root_values(function, _arguments(function, args))
    for node in fgraph.toposort():
        if not _run(node, env):
            break
    return env


def _arguments(function, args):
    """The arguments as a list in input order (a ``{name: value}`` dict is read by name)."""
    n_in = len(function.inputs)
    if isinstance(args, dict):
        names = [v.name for v in function.inputs]
        missing = [n for n in names if n not in args]
        if missing:
            raise ValueError("values: no argument given for %s" % ", ".join(map(str, missing)))
        args = [args[n] for n in names]
    args = list(args)
    if len(args) != n_in:
        raise ValueError("values: %s takes %d arguments, got %d" % (
            function, n_in, len(args)))
    return args


def _root_values(function, args):
    """``{Variable: value}`` of the graph's roots: arguments, shared variables, constants."""
    fgraph = function.fgraph
    n_in = len(args)
    env = {}
    for var, value in zip(fgraph.inputs[:n_in], args, strict=True):
        env[var] = var.type.filter(value, allow_downcast=True)
    for var, shared in zip(fgraph.inputs[n_in:], getattr(function, "shared_inputs", ()),
                           strict=False):  # a Function without shared_inputs: none
        env[var] = shared.container[0]
    for var in fgraph.variables:
        data = getattr(var, "data", None)
        if var.owner is None and var not in env and data is not None:
            env[var] = data
    return env


def _run(node, env):
    """Run ``node``'s ``perform`` on its inputs' values (copies of those it overwrites) and
    record its outputs in ``env``; False when it fails."""
    destroyed = set()
    for inputs in (getattr(node.op, "destroy_map", None) or {}).values():
        destroyed.update(inputs)
    inputs = [np.copy(env[v]) if i in destroyed and isinstance(env.get(v), np.ndarray)
              else env.get(v) for i, v in enumerate(node.inputs)]
    storage = [[None] for _ in node.outputs]
    try:
        node.op.perform(node, inputs, storage)
    except Exception:
        return False
    for out, cell in zip(node.outputs, storage, strict=True):
        env[out] = cell[0]
    return True


def show(function, values=None, profile=False, **options):
    """The dense diagram of ``function``'s compiled graph with run-time overlays."""
    from nbgraph.display.view import GraphView

    overlay = {}
    if values is not None and values is not False:
        if values is True:
            args = getattr(function, "_last_args", None)
            if args is None:
                raise ValueError(
                    "values=True shows the last call's values, which a Function keeps only "
                    "when compiled with profile=True (and called); pass the arguments "
                    "instead: f.show(values=(x0, ...))")
        else:
            args = values
        overlay["values"] = node_values(function, args)
    if profile:
        stats = function.profile
        if not stats:
            raise ValueError("profile=True needs a Function compiled with profile=True "
                             "and called at least once")
        overlay["profile"] = stats
    options.setdefault("style", "dense")
    return GraphView(function, **options, **overlay)
