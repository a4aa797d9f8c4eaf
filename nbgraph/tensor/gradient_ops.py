"""Identity Ops that change only the gradient: stop it, zero it, clip it, scale it.

Forward, each returns its input unchanged (a view); backward, it hands on a
modified gradient.  They exist so that a gradient can be shaped inside the
graph (the usual tools of training code: gradient clipping, a frozen
sub-network, a gradient-reversal layer).  The "fast" rewrite pipeline removes
them once the gradient graph is built (``remove_gradient_modifiers``), so a
compiled function pays nothing for them and ``linker="c"`` accepts graphs
that contain them.

>>> import numpy as np, nbgraph as ng, nbgraph.tensor as nt
>>> x = nt.dscalar("x")
>>> float(ng.grad(x ** 2 + grad_scale(x ** 2, -1.0), x).eval({x: 3.0}))
0.0
"""

from __future__ import annotations

import numpy as np

from nbgraph.core.gradient_types import DisconnectedGradient
from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op
from nbgraph.tensor.variable import as_tensor_variable

__all__ = ["GradientModifier", "consider_constant", "disconnected_grad", "zero_grad",
           "grad_clip", "grad_scale"]


class GradientModifier(Op):
    """Base: the identity forward (a view of the input); subclasses say what ``grad`` returns."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def c_code_cache_version(self):
        return (1,)


class DisconnectedGrad(GradientModifier):
    """No gradient flows through: the input counts as a constant (disconnected)."""

    def grad(self, inputs, output_grads):
        return [DisconnectedGradient()]


class ZeroGrad(GradientModifier):
    """The gradient through is zero (the input stays connected)."""

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.basic import zeros_like

        return [zeros_like(inputs[0])]


class GradClip(GradientModifier):
    """The gradient through is clipped to ``[lower, upper]`` element by element."""

    __props__ = ("lower", "upper")

    def __init__(self, lower: float, upper: float):
        lower, upper = float(lower), float(upper)
        if not lower <= upper:
            raise ValueError("grad_clip: lower bound %r is above upper bound %r" % (lower, upper))
        self.lower, self.upper = lower, upper

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.math import maximum, minimum

        return [minimum(maximum(output_grads[0], self.lower), self.upper)]


class GradScale(GradientModifier):
    """The gradient through is multiplied by ``factor`` (-1 reverses it)."""

    __props__ = ("factor",)

    def __init__(self, factor: float):
        factor = float(factor)
        if not np.isfinite(factor):
            raise ValueError("grad_scale: the factor must be finite, got %r" % (factor,))
        self.factor = factor

    def grad(self, inputs, output_grads):
        return [output_grads[0] * self.factor]


def disconnected_grad(x) -> Variable:
    """``x`` itself, through which ``grad`` sees no dependence (as a constant would)."""
    return DisconnectedGrad()(x)


def consider_constant(x) -> Variable:
    """``x`` treated as a constant by ``grad`` (Theano's name for :func:`disconnected_grad`)."""
    return DisconnectedGrad()(x)


def zero_grad(x) -> Variable:
    """``x`` itself, with a zero gradient (still connected, unlike :func:`disconnected_grad`)."""
    return ZeroGrad()(x)


def grad_clip(x, lower_bound: float, upper_bound: float) -> Variable:
    """``x`` itself, whose gradient is clipped to ``[lower_bound, upper_bound]``."""
    return GradClip(lower_bound, upper_bound)(x)


def grad_scale(x, multiplier: float) -> Variable:
    """``x`` itself, whose gradient is multiplied by ``multiplier``."""
    return GradScale(multiplier)(x)
