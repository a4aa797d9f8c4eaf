"""``theano.tensor.nnet``: activations, softmax, cross-entropies, ``conv2d``."""

from nbgraph.compat._names import Unavailable, module_getattr

_NNET = "nbgraph.tensor.nnet"

_TABLE = {
    "conv2d": "nbgraph.tensor.conv:conv2d",
    "conv": "nbgraph.compat.theano.tensor.nnet.conv",
    "sigmoid": (_NNET + ":sigmoid", "nbgraph.tensor:sigmoid"),
    "softplus": (_NNET + ":softplus", "nbgraph.tensor:softplus"),
    "softmax": _NNET + ":softmax",
    "log_softmax": _NNET + ":log_softmax",
    "logsoftmax": _NNET + ":log_softmax",
    "relu": _NNET + ":relu",
    "elu": _NNET + ":elu",
    "selu": _NNET + ":selu",
    "softsign": _NNET + ":softsign",
    "hard_sigmoid": _NNET + ":hard_sigmoid",
    "ultra_fast_sigmoid": _NNET + ":ultra_fast_sigmoid",
    "categorical_crossentropy": _NNET + ":categorical_crossentropy",
    "binary_crossentropy": _NNET + ":binary_crossentropy",
    "sigmoid_binary_crossentropy": _NNET + ":sigmoid_binary_crossentropy",
    "crossentropy_softmax_1hot": _NNET + ":crossentropy_softmax_1hot",
    "h_softmax": Unavailable("write the hierarchical softmax with softmax and indexing"),
    "conv3d": Unavailable("nbgraph has 2-d convolution only (nbgraph.tensor.conv.conv2d)"),
    "abstract_conv": Unavailable("use nbgraph.tensor.conv.conv2d"),
    "neighbours": Unavailable("use nbgraph.tensor.conv.conv2d or pool_2d"),
}

__getattr__ = module_getattr(__name__, _TABLE, fallback=(_NNET,))
