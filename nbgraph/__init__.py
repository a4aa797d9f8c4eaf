"""nbgraph: a typed symbolic graph engine made for notebooks.

Build graphs with :mod:`nbgraph.tensor`, look at them with :func:`dprint`,
differentiate them with :func:`grad` and compile them with :func:`function`.
"""

from nbgraph.config import config
from nbgraph.core import FunctionGraph, grad
from nbgraph.display.text import dprint
from nbgraph.linkers import Function, function

__version__ = "0.1.0"

__all__ = ["config", "FunctionGraph", "Function", "function", "grad", "dprint", "shared",
           "ifelse", "scan", "Rop", "Lop", "jacobian", "hessian", "verify_grad",
           "load_ipython_extension", "unload_ipython_extension", "__version__", "scope"]


# names imported on first use (from the module given), keeping ``import nbgraph`` light
_LAZY = {"ifelse": "nbgraph.tensor.ifelse", "Rop": "nbgraph.core.gradient",
         "Lop": "nbgraph.core.gradient", "jacobian": "nbgraph.tensor.derivatives",
         "hessian": "nbgraph.tensor.derivatives", "scan": "nbgraph.tensor.scan",
         "scope": "nbgraph.core.scope", "verify_grad": "nbgraph.testing"}

# subpackages reachable as attributes without importing them first
# (``import nbgraph; nbgraph.tensor.dvector``)
_SUBMODULES = frozenset({"tensor", "testing", "gradient", "graph_generator", "display",
                         "linkers", "core", "magics", "compat"})


def __getattr__(name):
    # ``shared`` lives in nbgraph.tensor, imported on first use: ``import nbgraph``
    # stays light (the tensor package is most of nbgraph's import time).
    if name == "shared":
        from nbgraph.tensor.variable import shared

        globals()["shared"] = shared
        return shared
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module("nbgraph." + name)
    raise AttributeError("module 'nbgraph' has no attribute %r" % (name,))


def __dir__():
    return sorted(set(globals()) | {"shared"} | set(_LAZY))


def load_ipython_extension(ipython):
    """``%load_ext nbgraph``: register the ``%graph`` and ``%%graph`` magics."""
    from nbgraph.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    """``%unload_ext nbgraph``: remove the magics again."""
    from nbgraph.magics import unload_ipython_extension as unload

    unload(ipython)

