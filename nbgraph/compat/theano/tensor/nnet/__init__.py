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
    "softsign": _NNET + ":softsign",
    "categorical_crossentropy": _NNET + ":categorical_crossentropy",
    "binary_crossentropy": _NNET + ":binary_crossentropy",
    "to_one_hot": _NNET + ":one_hot",
    "selu": Unavailable("write it as 1.0507 * elu(x, alpha=1.6733)"),
    "hard_sigmoid": Unavailable("use sigmoid (exact; nbgraph has no piecewise-linear "
                                "approximation)"),
    "ultra_fast_sigmoid": Unavailable("use sigmoid (exact and fused into one C loop)"),
    "sigmoid_binary_crossentropy": Unavailable("use binary_crossentropy(sigmoid(x), t): the "
                                               "stabilisation rewrite fuses it"),
    "crossentropy_softmax_1hot": Unavailable("use categorical_crossentropy(softmax(x), y)"),
    "h_softmax": Unavailable("write the hierarchical softmax with softmax and indexing"),
    "conv3d": Unavailable("nbgraph has 2-d convolution only (nbgraph.tensor.conv.conv2d)"),
    "abstract_conv": Unavailable("use nbgraph.tensor.conv.conv2d"),
    "neighbours": Unavailable("use nbgraph.tensor.conv.conv2d or pool_2d"),
}

__getattr__ = module_getattr(__name__, _TABLE, fallback=(_NNET,))
