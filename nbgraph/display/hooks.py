"""The ``_repr_mimebundle_`` method nbgraph gives its displayable classes.

``nbgraph.core`` and ``nbgraph.linkers`` never import ``nbgraph.display``.
Importing ``nbgraph.display`` (which ``import nbgraph`` does) calls
:func:`install`, which sets one ``_repr_mimebundle_`` attribute on each
displayable class: Variable (and so every subclass), Apply, FunctionGraph,
Replacement, NarrowingTrace, Function and ProfileStats.  This module is
tiny on purpose: the method imports :mod:`nbgraph.display.rich` (and with it
graphviz) only when a front end first asks for a display, which keeps
``import nbgraph`` fast.
"""

__all__ = ["install", "uninstall"]


def _repr_mimebundle_(self, include=None, exclude=None):
    """Notebook display of this object (installed by nbgraph.display; see nbgraph.display.rich)."""
    from nbgraph.display.rich import mimebundle

    return mimebundle(self, include=include, exclude=exclude)


_repr_mimebundle_._nbgraph_display = True


def _display_classes():
    from nbgraph.core.fgraph import FunctionGraph, Replacement
    from nbgraph.core.graph import Apply, Variable
    from nbgraph.core.type import NarrowingTrace

    classes = [Variable, Apply, FunctionGraph, Replacement, NarrowingTrace]
    try:
        from nbgraph.linkers.function import Function
        from nbgraph.linkers.profile import ProfileStats
    except ImportError:  # pragma: no cover - linkers unavailable
        return classes
    return classes + [Function, ProfileStats]


def install():
    """Give every displayable class a ``_repr_mimebundle_`` (idempotent).

    A class that defines its own ``_repr_mimebundle_`` keeps it.  Returns the
    classes that now use nbgraph's display.
    """
    done = []
    for cls in _display_classes():
        current = cls.__dict__.get("_repr_mimebundle_")
        if current is None:
            cls._repr_mimebundle_ = _repr_mimebundle_
            done.append(cls)
        elif getattr(current, "_nbgraph_display", False):
            done.append(cls)
    return done


def uninstall():
    """Remove the methods :func:`install` added."""
    for cls in _display_classes():
        current = cls.__dict__.get("_repr_mimebundle_")
        if current is not None and getattr(current, "_nbgraph_display", False):
            delattr(cls, "_repr_mimebundle_")
