"""Equality, hashing and printing derived from a class's ``__props__``.

Ops and many Types are value objects: two instances built with the same
parameters must compare equal (so the merge rewriter can fold them) and hash
alike.  Listing the parameters once in ``__props__`` gives all three.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, cast

__all__ = ["PropsMixin"]


class PropsMixin:
    """Mixin deriving ``__eq__``, ``__hash__`` and ``__str__`` from ``__props__``.

    A class that sets ``__props__ = ("axis", "keepdims")`` compares equal to
    another instance of the same class with equal ``axis`` and ``keepdims``,
    and prints as ``Name{axis, keepdims}`` (the values, not the names).
    ``__props__ = ()`` makes all instances of the class equal.  A class that
    leaves ``__props__`` as None keeps identity semantics.
    """

    __props__: tuple[str, ...] | None = None

    def _props(self) -> tuple[Any, ...]:
        cls = type(self)
        getter = cls.__dict__.get("_props_getter")
        if getter is None or getter[0] is not cls.__props__:
            getter = _make_getter(cls)
        return getter[1](self)

    def _props_dict(self) -> dict[str, Any]:
        """The parameters as a dict (``{}`` for identity-compared classes)."""
        if self.__props__ is None:
            return {}
        return {name: getattr(self, name) for name in self.__props__}

    def __eq__(self, other: object) -> bool:
        if self.__props__ is None:
            return self is other
        return type(self) is type(other) and self._props() == other._props()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        if self.__props__ is None:
            return object.__hash__(self)
        return hash((type(self), self._props()))

    def __str__(self) -> str:
        name = type(self).__name__
        if not self.__props__:
            return name
        return "%s{%s}" % (name, ", ".join(str(v) for v in self._props()))


def _make_getter(cls: type) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``(props, getter)`` for ``cls``, kept on the class: ``getter(obj)`` is the tuple
    of ``obj``'s props (an attrgetter: comparing and hashing Ops is frequent)."""
    names = tuple(getattr(cls, "__props__", None) or ())
    getter: Callable[[Any], tuple[Any, ...]]
    if not names:
        getter = _no_props
    elif len(names) == 1:
        one = operator.attrgetter(names[0])

        def getter(obj: Any) -> tuple[Any, ...]:
            return (one(obj),)
    else:
        getter = cast("Callable[[Any], tuple[Any, ...]]", operator.attrgetter(*names))
    found = (getattr(cls, "__props__", None), getter)
    type.__setattr__(cls, "_props_getter", found)
    return found


def _no_props(obj: Any) -> tuple[Any, ...]:
    return ()
