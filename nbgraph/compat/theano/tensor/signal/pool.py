"""``theano.tensor.signal.pool``: ``pool_2d`` (and ``max_pool_2d``)."""

from nbgraph.tensor.pool import max_pool_2d, pool_2d

__all__ = ["pool_2d", "max_pool_2d"]
