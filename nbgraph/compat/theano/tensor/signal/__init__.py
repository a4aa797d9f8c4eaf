"""``theano.tensor.signal``: ``pool`` and the older ``downsample``."""
