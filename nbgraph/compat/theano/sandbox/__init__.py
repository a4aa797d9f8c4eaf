"""``theano.sandbox``: only ``rng_mrg`` is mapped."""
