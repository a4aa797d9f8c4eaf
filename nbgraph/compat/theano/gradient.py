"""``theano.gradient``: nbgraph.gradient's functions."""

from nbgraph.compat._names import module_getattr

__getattr__ = module_getattr(__name__, {}, fallback=("nbgraph.gradient",))
