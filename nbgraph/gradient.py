"""The differentiation API in one place (Theano's ``theano.gradient``).

* :func:`grad` -- reverse mode from a scalar cost, with ``known_grads`` and
  ``disconnected_inputs``; :func:`subgraph_grad` -- the same, a piece of the
  graph at a time;
* :func:`Lop` -- vector-Jacobian products, :func:`Rop` -- Jacobian-vector
  products (forward mode), both for any graph whose Ops define ``grad``;
* :func:`jacobian`, :func:`hessian` -- full derivative matrices of tensors;
* :func:`verify_grad` -- an Op's gradient against finite differences;
* what an ``Op.grad`` returns where there is no ordinary gradient:
  :class:`DisconnectedType` (``DisconnectedType()()``), :func:`grad_undefined`
  and :func:`grad_not_implemented` (variables of :class:`NullType`);
* Ops that shape a gradient inside the graph: :func:`consider_constant`,
  :func:`disconnected_grad`, :func:`zero_grad`, :func:`grad_clip`,
  :func:`grad_scale`.

The graph-generic parts live in :mod:`nbgraph.core.gradient` and
:mod:`nbgraph.core.gradient_types` (they know nothing about tensors); the
Jacobian and Hessian in :mod:`nbgraph.tensor.derivatives`, the gradient Ops in
:mod:`nbgraph.tensor.gradient_ops`.
"""

from nbgraph.core.gradient import (
    DisconnectedInputError, Lop, NullGradientError, Rop, grad, subgraph_grad,
)
from nbgraph.core.gradient_types import (
    DisconnectedGradient, DisconnectedType, NullGradient, NullType, grad_not_implemented,
    grad_undefined,
)
from nbgraph.tensor.derivatives import hessian, jacobian
from nbgraph.tensor.gradient_ops import (
    consider_constant, disconnected_grad, grad_clip, grad_scale, zero_grad,
)
from nbgraph.testing import verify_grad

__all__ = ["grad", "subgraph_grad", "Lop", "Rop", "jacobian", "hessian", "verify_grad",
           "DisconnectedInputError", "NullGradientError", "DisconnectedType", "NullType",
           "DisconnectedGradient", "NullGradient", "grad_undefined", "grad_not_implemented",
           "consider_constant", "disconnected_grad", "zero_grad", "grad_clip", "grad_scale"]
