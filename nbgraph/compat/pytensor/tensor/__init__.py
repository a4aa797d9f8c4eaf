"""``pytensor.tensor`` (``pt``) mapped onto :mod:`nbgraph.tensor`, with the
linear algebra (``pt.linalg``), ``pt.conv`` / ``pt.signal`` names and
``pt.random``."""

from nbgraph.compat._names import Unavailable, module_getattr

_TABLE = {
    "linalg": "nbgraph.tensor.linalg",
    "nlinalg": "nbgraph.tensor.linalg",
    "slinalg": "nbgraph.tensor.linalg",
    "random": "nbgraph.tensor.random",
    "grad": "nbgraph.gradient:grad",
    "jacobian": "nbgraph.gradient:jacobian",
    "hessian": "nbgraph.gradient:hessian",
    "special": ("nbgraph.tensor.nnet",),
    "nnet": "nbgraph.compat.theano.tensor.nnet",
    "conv": "nbgraph.tensor.conv",
    "TensorType": "nbgraph.tensor.type:TensorType",
    "TensorVariable": "nbgraph.tensor.variable:TensorVariable",
    "blockwise": Unavailable("write the loop with scan, or use matmul's batching"),
}

__getattr__ = module_getattr(__name__, _TABLE, fallback=(
    "nbgraph.tensor", "nbgraph.tensor.math", "nbgraph.tensor.basic", "nbgraph.tensor.nnet",
    "nbgraph.tensor.extra_ops", "nbgraph.tensor.creation", "nbgraph.tensor.shape_ops",
    "nbgraph.tensor.linalg"))
