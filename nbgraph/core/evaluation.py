"""The hook behind ``Variable.eval``.

The core cannot import the linkers (imports point one way), so the function
layer registers its evaluator here when it is imported; ``evaluate`` imports
``nbgraph.linkers`` on first use when nothing registered yet.
"""

import importlib

__all__ = ["set_evaluator", "evaluate"]

_evaluator = [None]


def set_evaluator(fn):
    """Install ``fn(variable, inputs_to_values)`` as the implementation of eval."""
    _evaluator[0] = fn


def evaluate(variable, inputs_to_values=None, **options):
    """Compute ``variable`` with the registered evaluator (``options``: e.g. ``linker``)."""
    if _evaluator[0] is None:
        importlib.import_module("nbgraph.linkers")
    if _evaluator[0] is None:
        raise RuntimeError("no evaluator is registered: nbgraph.linkers did not install one")
    return _evaluator[0](variable, inputs_to_values, **options)
