"""Reverse-mode differentiation over any graph whose Types support it.

:func:`grad` walks the Apply nodes between the ``wrt`` variables and the
cost in reverse topological order, asking each Op's ``grad`` for the
gradients of its inputs.  The core knows nothing about tensors: the cost's
Type makes the seed (``grad_ones_like``), absent output gradients are made by
``grad_zeros_like`` and several contributions to one variable are added by
``grad_sum``.  The tensor layer implements those three hooks.
"""

import warnings

from nbgraph.core.graph import Variable, toposort
from nbgraph.core.op import DisconnectedGradient, NullGradient
from nbgraph.core.type import MethodNotDefined

__all__ = ["grad", "DisconnectedInputError", "NullGradientError"]


class DisconnectedInputError(ValueError):
    """grad was asked for a variable the cost does not depend on."""


class NullGradientError(TypeError):
    """An Op declared the gradient undefined on the path to a requested input."""


def grad(cost, wrt, consider_constant=None, disconnected_inputs="raise"):
    """Symbolic gradient of the scalar ``cost`` with respect to ``wrt``.

    ``wrt`` is a Variable or a list/tuple of them; the result has the same
    structure.  Variables in ``consider_constant`` are treated as constants
    (no gradient flows through them).  ``disconnected_inputs`` says what to do
    when the cost does not depend on a ``wrt`` variable: "raise" (a
    DisconnectedInputError naming it), "warn" or "ignore" (zeros either way).
    An Op's grad returning None for an input means a zero gradient (integer
    inputs, comparisons): a ``wrt`` reached only that way gets zeros, no error;
    returning DisconnectedGradient means the output does not depend on it.
    """
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError("disconnected_inputs must be 'raise', 'warn' or 'ignore', got %r"
                         % (disconnected_inputs,))
    if not isinstance(cost, Variable):
        raise TypeError("grad: cost must be a Variable, got %s %r" % (
            type(cost).__name__, cost))
    single = isinstance(wrt, Variable)
    wrt_list = [wrt] if single else list(wrt)
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError("grad: wrt[%d] must be a Variable, got %s %r" % (
                i, type(w).__name__, w))
    blocked = set(consider_constant or ())
    seed = cost.type.grad_ones_like(cost)

    order = toposort([cost])
    wrt_set = set(wrt_list)
    connected = set(wrt_set)
    for node in order:
        if any(inp in connected and inp not in blocked for inp in node.inputs):
            connected.update(node.outputs)

    contributions = {cost: [seed]}
    nulls = {}
    # variables the cost depends on but whose gradient is zero: an Op returned
    # None for them (integer values, comparisons), or for all of their uses
    zeros = set()
    for node in reversed(order):
        null_outputs = [nulls[out] for out in node.outputs if out in nulls]
        wanted = [inp in connected and inp not in blocked for inp in node.inputs]
        if not null_outputs and not any(out in contributions for out in node.outputs):
            if any(out in zeros for out in node.outputs):
                zeros.update(inp for inp, want in zip(node.inputs, wanted) if want)
            continue
        if not any(wanted):
            continue
        if null_outputs:
            # an undefined gradient flowing into a node leaves the gradients
            # of its inputs undefined too (whatever other paths contribute)
            for inp, want in zip(node.inputs, wanted):
                if want:
                    nulls.setdefault(inp, null_outputs[0])
            continue
        output_grads = [_total(out, contributions) for out in node.outputs]
        try:
            input_grads = node.op.grad(list(node.inputs), output_grads)
        except MethodNotDefined as exc:
            raise NotImplementedError(
                "cannot differentiate through %s: the Op %s does not implement grad()"
                % (node, node.op)) from exc
        input_grads = list(input_grads) if input_grads is not None else []
        if len(input_grads) != len(node.inputs):
            raise ValueError("%s.grad returned %d gradients for %d inputs" % (
                node.op, len(input_grads), len(node.inputs)))
        for inp, g, want in zip(node.inputs, input_grads, wanted):
            if not want or isinstance(g, DisconnectedGradient):
                continue
            if g is None:
                zeros.add(inp)
                continue
            if isinstance(g, NullGradient):
                nulls[inp] = (node.op, g.why)
                continue
            if not isinstance(g, Variable):
                raise TypeError("%s.grad returned %r for input %r; expected a Variable" % (
                    node.op, g, inp))
            contributions.setdefault(inp, []).append(g)

    results = []
    for w in wrt_list:
        if w in nulls:
            op, why = nulls[w]
            raise NullGradientError("the gradient with respect to %r is undefined: %s says %s"
                                    % (w, op, why or "it has no gradient"))
        if w in contributions:
            results.append(_total(w, contributions))
            continue
        if w in zeros:
            results.append(w.type.grad_zeros_like(w))
            continue
        message = ("grad: the cost %r does not depend on %r (it is disconnected)"
                   % (cost, w))
        if disconnected_inputs == "raise":
            raise DisconnectedInputError(message + "; pass disconnected_inputs='ignore' "
                                         "to get zeros")
        if disconnected_inputs == "warn":
            warnings.warn(message, stacklevel=2)
        results.append(w.type.grad_zeros_like(w))
    return results[0] if single else type(wrt)(results) if isinstance(wrt, tuple) else results


def _total(var, contributions):
    terms = contributions.get(var)
    if not terms:
        return var.type.grad_zeros_like(var)
    if len(terms) == 1:
        return terms[0]
    total = var.type.grad_sum(terms)
    contributions[var] = [total]
    return total
