"""The hook behind ``Variable.eval``.

The core cannot import the linkers (imports point one way), so the function
layer registers its evaluator here when it is imported; ``evaluate`` imports
``nbgraph.linkers`` on first use when nothing registered yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.graph import Variable

#: ``fn(variable, inputs_to_values, **options)``: the value of ``variable``.
Evaluator = Callable[..., Any]

__all__ = ["set_evaluator", "evaluate", "Evaluator"]

_evaluator: list[Evaluator | None] = [None]


def set_evaluator(fn: Evaluator) -> None:
    """Install ``fn(variable, inputs_to_values)`` as the implementation of eval."""
    _evaluator[0] = fn


def evaluate(variable: Variable, inputs_to_values: Mapping[Any, Any] | None = None,
             **options: Any) -> Any:
    """Compute ``variable`` with the registered evaluator (``options``: e.g. ``linker``)."""
    if _evaluator[0] is None:
        importlib.import_module("nbgraph.linkers")
    evaluator = _evaluator[0]
    if evaluator is None:
        raise RuntimeError("no evaluator is registered: nbgraph.linkers did not install one")
    return evaluator(variable, inputs_to_values, **options)
