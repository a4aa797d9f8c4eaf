"""``theano.sandbox.rng_mrg.MRG_RandomStreams``: nbgraph's RandomStream with
Theano's method signatures (the numbers differ from Theano's MRG generator)."""

from nbgraph.compat.theano.tensor.shared_randomstreams import RandomStreams


class MRG_RandomStreams(RandomStreams):
    """Theano's MRG streams, on nbgraph's NumPy-Generator random states."""


__all__ = ["MRG_RandomStreams"]
