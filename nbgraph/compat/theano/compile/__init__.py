"""``theano.compile``: function, shared, In, Out, Mode, get_mode (and
``theano.compile.mode`` / ``function_module`` / ``io`` as the same names)."""

import sys

from nbgraph.linkers.function import Function, function
from nbgraph.linkers.io import In, Out
from nbgraph.linkers.mode import Mode, get_default_mode, get_mode
from nbgraph.tensor.variable import SharedVariable, shared

__all__ = ["function", "Function", "In", "Out", "Mode", "get_mode", "get_default_mode",
           "shared", "SharedVariable"]

# theano.compile.mode.get_mode, theano.compile.io.In, ...: this module under the old names
mode = io = function_module = sharedvalue = sys.modules[__name__]
