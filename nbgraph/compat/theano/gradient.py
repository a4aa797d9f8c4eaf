"""``theano.gradient``: nbgraph.gradient's functions."""

from nbgraph.compat._names import Unavailable, module_getattr

__getattr__ = module_getattr(__name__, {
    "grad_undefined": Unavailable("return nbgraph.core.op.NullGradient(...) from Op.grad"),
    "zero_grad": Unavailable("pass consider_constant=[x] to grad"),
    "disconnected_grad": Unavailable("pass consider_constant=[x] to grad"),
}, fallback=("nbgraph.gradient",))
