"""Compilation: function(), the linkers, and the cache behind Variable.eval."""

from nbgraph.core import evaluation as _evaluation
from nbgraph.linkers.eval_cache import evaluate
from nbgraph.linkers.function import Function, UnusedInputError, function
from nbgraph.linkers.python import PythonLinker

_evaluation.set_evaluator(evaluate)

__all__ = ["function", "Function", "UnusedInputError", "PythonLinker", "evaluate"]
