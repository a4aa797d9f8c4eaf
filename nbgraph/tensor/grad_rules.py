"""The tensor Ops' shared gradient conventions (Theano's), in one place.

Every built-in Op's ``grad`` returns, for each input, one of:

* :func:`index_gradient` -- a DisconnectedGradient, for inputs that only
  choose *where* or *how much* (indices, shapes, sizes, axes): the outputs
  do not depend on their values in a differentiable way;
* :func:`zero_gradient` -- zeros, for inputs the outputs depend on only in a
  piecewise-constant way (comparisons, rounding, argmax) and for every input
  of an Op whose outputs are integers;
* :func:`input_gradient` -- the gradient itself.  A float input's gradient is
  cast to the input's dtype; an integer input is differentiated as if it
  were real, and its gradient keeps the float dtype the computation was in
  (``grad((i * 2.5).sum(), i)`` is float64 2.5 for an int32 ``i``).

>>> import nbgraph as ng, nbgraph.tensor as nt, numpy as np
>>> i = nt.ivector("i")
>>> g = ng.grad((i * 2.5).sum(), i)
>>> g.dtype, g.eval({i: np.array([1, 2], dtype="int32")}).tolist()
('float64', [2.5, 2.5])
"""

from __future__ import annotations

from nbgraph.config import config
from nbgraph.core.gradient_types import DisconnectedGradient
from nbgraph.core.graph import Variable
from nbgraph.tensor.type import DISCRETE_DTYPES

__all__ = ["index_gradient", "zero_gradient", "input_gradient", "is_discrete"]


def is_discrete(x: Variable) -> bool:
    """Whether ``x`` holds integers or booleans."""
    return x.type.dtype in DISCRETE_DTYPES


def index_gradient() -> DisconnectedGradient:
    """The gradient of an index, shape or size argument: disconnected."""
    return DisconnectedGradient()


def zero_gradient(x: Variable) -> Variable:
    """Zeros shaped like ``x`` (in ``x``'s float dtype, else floatX): a zero gradient
    that :func:`nbgraph.core.gradient.grad` recognises and does not propagate."""
    return x.type.grad_zeros_like(x)


def input_gradient(g: Variable, x: Variable) -> Variable:
    """``g`` as the gradient of input ``x``: cast to ``x``'s dtype when ``x`` is a
    float; for an integer ``x``, ``g`` in its own float dtype (floatX if ``g``
    itself is integer)."""
    if not is_discrete(x):
        if g.type.dtype != x.type.dtype:
            from nbgraph.tensor.math import cast

            return cast(g, x.type.dtype)
        return g
    if g.type.dtype in DISCRETE_DTYPES:
        from nbgraph.tensor.math import cast

        return cast(g, config.floatX)
    return g
