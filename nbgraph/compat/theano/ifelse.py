"""``theano.ifelse``: the lazy conditional."""

from nbgraph.compat._names import module_getattr

__getattr__ = module_getattr(__name__, {"ifelse": "nbgraph.tensor.ifelse:ifelse",
                                        "IfElse": "nbgraph.tensor.ifelse:IfElse"})
