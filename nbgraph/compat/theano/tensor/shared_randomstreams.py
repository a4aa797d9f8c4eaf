"""``theano.tensor.shared_randomstreams.RandomStreams``: nbgraph's
:class:`~nbgraph.tensor.random.RandomStream` with Theano's signatures (``size``
first; ``avg``/``std`` for the normal).  Draws come from NumPy's Generator, so
the numbers differ from Theano's; seeding still makes them reproducible."""

from __future__ import annotations

from nbgraph.tensor.random import RandomStream

__all__ = ["RandomStreams"]


class RandomStreams:
    """Theano's ``RandomStreams(seed)``: methods take ``size`` first, as in Theano."""

    def __init__(self, seed=None):
        self._stream = RandomStream(seed)

    def seed(self, seed=None):
        """Restart every stream made so far from ``seed``."""
        self._stream.seed(seed)

    def updates(self):
        """The ``(state, new state)`` pairs of the draws so far."""
        return self._stream.updates()

    @staticmethod
    def _size(size):
        return None if size is None or size == () else size

    def uniform(self, size=(), low=0.0, high=1.0, ndim=None, dtype=None):
        """Uniform draws in ``[low, high)``."""
        return self._stream.uniform(low, high, size=self._size(size), dtype=dtype)

    def normal(self, size=(), avg=0.0, std=1.0, ndim=None, dtype=None):
        """Normal draws of mean ``avg`` and standard deviation ``std``."""
        return self._stream.normal(avg, std, size=self._size(size), dtype=dtype)

    def binomial(self, size=(), n=1, p=0.5, ndim=None, dtype="int64"):
        """Binomial draws (``n`` trials of probability ``p``), cast to ``dtype``."""
        draw = self._stream.binomial(n, p, size=self._size(size))
        return draw if dtype in (None, draw.dtype) else draw.astype(dtype)

    def random_integers(self, size=(), low=0, high=1, ndim=None, dtype="int64"):
        """Integers in ``[low, high]`` (both ends included, as in Theano)."""
        return self._stream.integers(low, high + 1, size=self._size(size), dtype=dtype)

    def choice(self, size=(), a=2, replace=True, p=None, ndim=None, dtype="int64"):
        """Draws from ``range(a)`` (or the entries of ``a``)."""
        return self._stream.choice(a, size=self._size(size), replace=replace, p=p, dtype=dtype)

    def permutation(self, size=(), n=1, ndim=None, dtype="int64"):
        """A permutation of ``range(n)``."""
        if size not in ((), None):
            raise NotImplementedError("RandomStreams.permutation(size=...): draw one "
                                      "permutation per call")
        return self._stream.permutation(n, dtype=dtype)

    def multinomial(self, size=(), n=1, pvals=None, ndim=None, dtype="int64"):
        """Multinomial counts of ``n`` trials over ``pvals``."""
        return self._stream.multinomial(n, pvals, size=self._size(size), dtype=dtype)
