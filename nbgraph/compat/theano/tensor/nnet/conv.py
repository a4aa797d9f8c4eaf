"""``theano.tensor.nnet.conv`` (the old module): ``conv2d`` with ``image_shape``
and ``filter_shape`` hints, computed by :func:`nbgraph.tensor.conv.conv2d`."""

from nbgraph.tensor.conv import conv2d

__all__ = ["conv2d"]
