"""How the legacy module trees map names onto nbgraph: a table per module,
resolved on first access by the module's ``__getattr__``.

A table entry is one of:

* a string ``"module:attr"`` (or a tuple of them, tried in order): the name
  is that object of nbgraph;
* :class:`Unavailable`: a name with no nbgraph equivalent; using it raises
  :class:`NoEquivalentError` saying what to use instead.

A name missing from the table is looked up in the module's ``fallback``
modules (``theano.tensor`` falls back on :mod:`nbgraph.tensor`), then
reported as unknown.
"""

from __future__ import annotations

import importlib

__all__ = ["Unavailable", "NoEquivalentError", "module_getattr", "resolve"]


class NoEquivalentError(NotImplementedError):
    """A legacy name nbgraph does not provide; the message says what to use.

    (Not an AttributeError: ``from theano.x import name`` would replace an
    AttributeError's message by a bare "cannot import name".)
    """


class Unavailable:
    """A table entry for a name nbgraph does not have; ``instead`` says what to use."""

    def __init__(self, instead: str):
        self.instead = instead


def resolve(target):
    """The object a ``"module:attr"`` target (or the first of several that exists)
    names, or None when none exists."""
    for candidate in (target,) if isinstance(target, str) else target:
        module_name, _, attr = candidate.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if not attr:
            return module
        obj = getattr(module, attr, None)
        if obj is not None:
            return obj
    return None


def module_getattr(module_name: str, table: dict, fallback: tuple = ()):
    """A module ``__getattr__`` resolving ``table`` (see the module docstring)."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        entry = table.get(name)
        full = "%s.%s" % (module_name.replace("nbgraph.compat.", ""), name)
        if isinstance(entry, Unavailable):
            raise NoEquivalentError("%s has no equivalent in nbgraph: %s" % (full, entry.instead))
        if entry is not None:
            obj = resolve(entry)
            if obj is None:
                targets = (entry,) if isinstance(entry, str) else entry
                raise NoEquivalentError(
                    "%s maps onto %s, which this version of nbgraph does not have" % (
                        full, " or ".join(t.replace(":", ".") for t in targets)))
            return obj
        for module in fallback:
            obj = resolve("%s:%s" % (module, name))
            if obj is not None:
                return obj
        raise AttributeError("%s is not a name nbgraph maps (see nbgraph.compat); look for "
                             "it in nbgraph.tensor, nbgraph.tensor.linalg or "
                             "nbgraph.gradient" % full)
    return __getattr__
