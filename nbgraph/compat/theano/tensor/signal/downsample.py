"""``theano.tensor.signal.downsample`` (removed in Theano 0.9): ``max_pool_2d``."""

from nbgraph.tensor.pool import max_pool_2d

__all__ = ["max_pool_2d"]
