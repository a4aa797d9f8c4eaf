"""nbgraph: a typed symbolic graph engine made for notebooks."""

from nbgraph.config import config
from nbgraph.core import FunctionGraph, grad

__version__ = "0.1.0"

__all__ = ["config", "FunctionGraph", "grad", "__version__"]
