"""What an Op's ``grad`` returns where an input has no ordinary gradient.

The contract of :meth:`nbgraph.core.op.Op.grad` (Theano's): one entry per
input, each of them

* a Variable: the gradient (zeros where the gradient is zero, for a step
  function or a comparison, say);
* a :class:`DisconnectedGradient` (a Variable of :class:`DisconnectedType`):
  the outputs do not depend on this input's value at all (a shape or an
  index argument);
* a :class:`NullGradient` (a Variable of :class:`NullType`): the gradient is
  undefined or not implemented; :func:`grad_undefined` and
  :func:`grad_not_implemented` make one whose message names the Op and the
  input.  Asking :func:`nbgraph.core.gradient.grad` for a gradient that needs
  it raises :class:`nbgraph.core.gradient.NullGradientError` with that message.

Both markers are Variables, so an Op's ``grad`` may hand another Op's
results on unchanged.  They hold no value: compiling one is refused by their
Type's ``filter``.

>>> from nbgraph.core.type import Generic
>>> g = grad_undefined("Round", 0, Generic()("x"), "rounding is piecewise constant")
>>> g.why
'Round: the gradient with respect to input 0 (x) is undefined: rounding is piecewise constant'
>>> isinstance(DisconnectedType()(), DisconnectedGradient)
True
"""

from __future__ import annotations

from typing import Any

from nbgraph.core.graph import Variable
from nbgraph.core.type import SingletonType, Type

__all__ = [
    "DisconnectedType", "NullType", "DisconnectedGradient", "NullGradient",
    "grad_undefined", "grad_not_implemented", "is_disconnected", "null_reason",
]


class DisconnectedType(SingletonType):
    """The Type of a gradient marker saying "the output does not depend on this input"."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """Refused: a disconnected gradient has no value."""
        raise TypeError("a DisconnectedType variable (a disconnected gradient) has no value")

    def make_variable(self, name: str | None = None) -> DisconnectedGradient:
        """A new :class:`DisconnectedGradient`."""
        return DisconnectedGradient(name=name)

    def __str__(self) -> str:
        return "DisconnectedType"


class NullType(Type):
    """The Type of a gradient marker saying "this gradient is undefined"; ``why`` says why."""

    __props__ = ("why",)

    def __init__(self, why: str = "") -> None:
        self.why = why

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """Refused: an undefined gradient has no value."""
        raise TypeError("a NullType variable (an undefined gradient) has no value: %s"
                        % (self.why or "no reason given"))

    def make_variable(self, name: str | None = None) -> NullGradient:
        """A new :class:`NullGradient` carrying this Type's ``why``."""
        return NullGradient(self.why, name=name)

    def __str__(self) -> str:
        return "NullType"


class DisconnectedGradient(Variable):
    """Returned by ``Op.grad`` for an input the outputs do not depend on."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(DisconnectedType(), None, None, name)

    def __repr__(self) -> str:
        return "DisconnectedGradient()"


class NullGradient(Variable):
    """Returned by ``Op.grad`` for an input whose gradient is undefined; ``why`` says why."""

    type: NullType

    def __init__(self, why: str = "", name: str | None = None) -> None:
        super().__init__(NullType(why), None, None, name)

    @property
    def why(self) -> str:
        """The explanation given when the marker was made."""
        return self.type.why

    def __repr__(self) -> str:
        return "NullGradient(%r)" % self.why


def _null(op: Any, x_pos: int, x: Any, what: str, comment: str) -> NullGradient:
    name = getattr(op, "__name__", None) or str(op)
    shown = " (%s)" % x if x is not None else ""
    why = "%s: the gradient with respect to input %d%s is %s" % (name, x_pos, shown, what)
    return NullGradient(why + (": %s" % comment if comment else ""))


def grad_undefined(op: Any, x_pos: int, x: Any, comment: str = "") -> NullGradient:
    """The marker for input ``x_pos`` (``x``) of ``op`` having no mathematical gradient."""
    return _null(op, x_pos, x, "undefined", comment)


def grad_not_implemented(op: Any, x_pos: int, x: Any, comment: str = "") -> NullGradient:
    """The marker for input ``x_pos`` (``x``) of ``op`` whose gradient nobody wrote yet."""
    return _null(op, x_pos, x, "not implemented", comment)


def is_disconnected(g: Any) -> bool:
    """Whether ``g`` (one entry of an ``Op.grad`` result) says "disconnected"."""
    return isinstance(getattr(g, "type", None), DisconnectedType)


def null_reason(g: Any) -> str | None:
    """The ``why`` of an undefined-gradient marker, or None when ``g`` is not one."""
    gtype = getattr(g, "type", None)
    return gtype.why if isinstance(gtype, NullType) else None
