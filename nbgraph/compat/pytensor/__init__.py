"""``pytensor`` mapped onto nbgraph (see :mod:`nbgraph.compat`): ``function``,
``shared``, ``grad``, ``scan``, ``In``, ``Out``, ``Mode``, ``config``,
``dprint``, ``pp``, ``clone_replace``, ``graph_replace``, ``vectorize_graph``
and the submodules ``tensor`` (``pt``), ``printing``, ``ifelse``, ``gradient``."""

from nbgraph.compat._names import Unavailable, module_getattr
from nbgraph.compat.theano.configuration import config
from nbgraph.linkers.function import function
from nbgraph.linkers.io import In, Out
from nbgraph.linkers.mode import Mode

__all__ = ["function", "shared", "grad", "scan", "In", "Out", "Mode", "config", "dprint",
           "pp", "tensor"]

_TABLE = {
    "shared": "nbgraph.tensor.variable:shared",
    "grad": "nbgraph.gradient:grad",
    "scan": "nbgraph.tensor.scan:scan",
    "map": "nbgraph.tensor.scan:map",
    "reduce": "nbgraph.tensor.scan:reduce",
    "foldl": "nbgraph.tensor.scan:foldl",
    "foldr": "nbgraph.tensor.scan:foldr",
    "dprint": "nbgraph.display.text:dprint",
    "pp": "nbgraph.display.pretty:pp",
    "clone_replace": "nbgraph.core.graph:clone_replace",
    "graph_replace": "nbgraph.tensor.vectorize:graph_replace",
    "vectorize_graph": "nbgraph.tensor.vectorize:vectorize_graph",
    "tensor": "nbgraph.compat.pytensor.tensor",
    "printing": "nbgraph.compat.theano.printing",
    "ifelse": "nbgraph.compat.theano.ifelse",
    "gradient": "nbgraph.compat.theano.gradient",
    "compile": "nbgraph.compat.theano.compile",
    "get_mode": "nbgraph.linkers.mode:get_mode",
    "sparse": Unavailable("nbgraph has no sparse tensors; use dense arrays"),
    "xtensor": Unavailable("nbgraph has no named-dimension tensors"),
}

__getattr__ = module_getattr(__name__, _TABLE)
