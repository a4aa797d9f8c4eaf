"""The differentiation API in one place (Theano's ``theano.gradient``).

* :func:`grad` -- reverse mode from a scalar cost, with ``known_grads`` and
  ``disconnected_inputs``;
* :func:`Lop` -- vector-Jacobian products, :func:`Rop` -- Jacobian-vector
  products (forward mode), both for any graph whose Ops define ``grad``;
* :func:`jacobian`, :func:`hessian` -- full derivative matrices of tensors;
* :func:`verify_grad` -- an Op's gradient against finite differences.

The first three live in :mod:`nbgraph.core.gradient` (they know nothing about
tensors); the Jacobian and Hessian in :mod:`nbgraph.tensor.derivatives`.
"""

from nbgraph.core.gradient import (
    DisconnectedInputError, Lop, NullGradientError, Rop, grad,
)
from nbgraph.tensor.derivatives import hessian, jacobian
from nbgraph.testing import verify_grad

__all__ = ["grad", "Lop", "Rop", "jacobian", "hessian", "verify_grad",
           "DisconnectedInputError", "NullGradientError"]
