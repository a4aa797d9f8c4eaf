"""Moving variables between devices or representations.

A transfer function ``fn(var, target)`` returns a Variable holding ``var``'s
value on ``target`` (possibly ``var`` itself), or None when it cannot.
:func:`transfer` tries the registered functions, newest first.

>>> from nbgraph.core.type import Generic
>>> x = Generic()("x")
>>> transfer(x, "cpu") is x
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.graph import Variable

__all__ = ["register_transfer", "transfer", "transfer_functions", "TransferFunction"]

#: ``fn(var, target)``: ``var`` on ``target``, or None when it cannot move it.
TransferFunction = Callable[["Variable", Any], "Variable | None"]

transfer_functions: list[TransferFunction] = []


def register_transfer(fn: TransferFunction) -> TransferFunction:
    """Register ``fn(var, target)``; registering the same function twice keeps one."""
    if not callable(fn):
        raise TypeError("register_transfer needs a callable, got %r" % (fn,))
    if fn in transfer_functions:
        transfer_functions.remove(fn)
    transfer_functions.insert(0, fn)
    return fn


def transfer(var: Variable, target: Any) -> Variable:
    """``var`` moved to ``target``; ValueError when no function can do it."""
    for fn in transfer_functions:
        result = fn(var, target)
        if result is not None:
            return result
    raise ValueError("cannot transfer %r to target %r; registered transfer functions: %s" % (
        var, target, [getattr(f, "__name__", repr(f)) for f in transfer_functions] or "none"))


def _stay_on_cpu(var: Variable, target: Any) -> Variable | None:
    if target in ("cpu", None):
        return var
    return None


register_transfer(_stay_on_cpu)
