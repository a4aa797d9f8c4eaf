"""``theano`` mapped onto nbgraph (see :mod:`nbgraph.compat`).

``theano.function``, ``shared``, ``grad``, ``scan`` (and ``map``, ``reduce``,
``foldl``, ``foldr``), ``In``, ``Out``, ``Mode``, ``config`` (``floatX`` is
nbgraph's ``config.floatX``), ``pp``, ``dprint``, ``clone_replace``, and the
submodules ``tensor``, ``printing``, ``ifelse``, ``gradient``, ``compile``,
``sandbox``.
"""

from nbgraph.compat._names import Unavailable, module_getattr
from nbgraph.compat.theano.configuration import config
from nbgraph.linkers.function import function
from nbgraph.linkers.io import In, Out
from nbgraph.linkers.mode import Mode

__all__ = ["function", "shared", "grad", "scan", "In", "Out", "Mode", "config", "pp",
           "dprint", "tensor", "printing"]

_TABLE = {
    "shared": "nbgraph.tensor.variable:shared",
    "grad": "nbgraph.gradient:grad",
    "scan": "nbgraph.tensor.scan:scan",
    "map": "nbgraph.tensor.scan:map",
    "reduce": "nbgraph.tensor.scan:reduce",
    "foldl": "nbgraph.tensor.scan:foldl",
    "foldr": "nbgraph.tensor.scan:foldr",
    "pp": "nbgraph.display.pretty:pp",
    "dprint": "nbgraph.display.text:dprint",
    "debugprint": "nbgraph.display.text:dprint",
    "clone_replace": "nbgraph.core.graph:clone_replace",
    "clone": "nbgraph.core.graph:clone_replace",
    "dot": "nbgraph.tensor.basic:dot",
    "Rop": "nbgraph.gradient:Rop",
    "Lop": "nbgraph.gradient:Lop",
    "tensor": "nbgraph.compat.theano.tensor",
    "printing": "nbgraph.compat.theano.printing",
    "ifelse": "nbgraph.compat.theano.ifelse",
    "gradient": "nbgraph.compat.theano.gradient",
    "compile": "nbgraph.compat.theano.compile",
    "sandbox": "nbgraph.compat.theano.sandbox",
    "ProfileStats": "nbgraph.linkers.profile:ProfileStats",
    "get_mode": "nbgraph.linkers.mode:get_mode",
    "sparse": Unavailable("nbgraph has no sparse tensors; use dense arrays"),
    "gpuarray": Unavailable("nbgraph runs on the CPU (C and NumPy); drop the GPU code"),
    "OpFromGraph": Unavailable("build the graph inline, or write an nbgraph Op"),
}

__getattr__ = module_getattr(__name__, _TABLE)
