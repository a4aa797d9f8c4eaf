"""``theano.tensor`` (``T``) mapped onto :mod:`nbgraph.tensor`.

Every name of :mod:`nbgraph.tensor` is available; the table below adds
Theano's other spellings, the linear algebra, and the submodules ``nnet``,
``signal``, ``shared_randomstreams``, ``nlinalg``/``slinalg``.
"""

from nbgraph.compat._names import Unavailable, module_getattr

_TABLE = {
    "grad": "nbgraph.gradient:grad",
    "jacobian": "nbgraph.gradient:jacobian",
    "hessian": "nbgraph.gradient:hessian",
    "Rop": "nbgraph.gradient:Rop",
    "Lop": "nbgraph.gradient:Lop",
    "nnet": "nbgraph.compat.theano.tensor.nnet",
    "signal": "nbgraph.compat.theano.tensor.signal",
    "shared_randomstreams": "nbgraph.compat.theano.tensor.shared_randomstreams",
    "nlinalg": "nbgraph.tensor.linalg",
    "slinalg": "nbgraph.tensor.linalg",
    "linalg": "nbgraph.tensor.linalg",
    "basic": "nbgraph.tensor",
    "matmul": "nbgraph.tensor.linalg:matmul",
    "tensordot": "nbgraph.tensor.linalg:tensordot",
    "batched_dot": "nbgraph.tensor.linalg:batched_dot",
    "inv": "nbgraph.tensor.linalg:inv",
    "matrix_inverse": "nbgraph.tensor.linalg:inv",
    "det": "nbgraph.tensor.linalg:det",
    "trace": "nbgraph.tensor.linalg:trace",
    "sigmoid": ("nbgraph.tensor.nnet:sigmoid", "nbgraph.tensor:sigmoid"),
    "softplus": ("nbgraph.tensor.nnet:softplus", "nbgraph.tensor:softplus"),
    "nonzero_values": Unavailable("index with a boolean mask: x[mask]"),
    "TensorType": "nbgraph.tensor.type:TensorType",
    "TensorVariable": "nbgraph.tensor.variable:TensorVariable",
    "TensorConstant": "nbgraph.tensor.variable:TensorConstant",
    "shared": "nbgraph.tensor.variable:shared",
    "true_div": "nbgraph.tensor.math:true_div",
    "ones_like": "nbgraph.tensor.basic:ones_like",
    "zeros_like": "nbgraph.tensor.basic:zeros_like",
    "fill": Unavailable("use nbgraph.tensor.alloc_like(value, like) or ones_like(x) * value"),
}

__getattr__ = module_getattr(__name__, _TABLE, fallback=(
    "nbgraph.tensor", "nbgraph.tensor.math", "nbgraph.tensor.basic",
    "nbgraph.tensor.extra_ops", "nbgraph.tensor.creation", "nbgraph.tensor.shape_ops",
    "nbgraph.tensor.linalg"))
