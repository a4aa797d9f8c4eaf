"""Reverse-mode differentiation over any graph whose Types support it.

:func:`grad` walks the Apply nodes between the ``wrt`` variables and the
cost in reverse topological order, asking each Op's ``grad`` for the
gradients of its inputs.  The core knows nothing about tensors: the cost's
Type makes the seed (``grad_ones_like``), absent output gradients are made by
``grad_zeros_like`` and several contributions to one variable are added by
``grad_sum``.  The tensor layer implements those three hooks.
"""

import warnings

from nbgraph.core.graph import Variable, clone_replace, graph_inputs, toposort
from nbgraph.core.op import DisconnectedGradient, NullGradient
from nbgraph.core.scope import label_gradient  # display labels: grad(cost, W0)
from nbgraph.core.type import MethodNotDefined

__all__ = ["grad", "Lop", "Rop", "DisconnectedInputError", "NullGradientError"]


class DisconnectedInputError(ValueError):
    """grad was asked for a variable the cost does not depend on."""


class NullGradientError(TypeError):
    """An Op declared the gradient undefined on the path to a requested input."""


def grad(cost, wrt, consider_constant=None, disconnected_inputs="raise", known_grads=None):
    """Symbolic gradient of the scalar ``cost`` with respect to ``wrt``.

    ``wrt`` is a Variable or a list/tuple of them; the result has the same
    structure.  Variables in ``consider_constant`` are treated as constants
    (no gradient flows through them).  ``disconnected_inputs`` says what to do
    when the cost does not depend on a ``wrt`` variable: "raise" (a
    DisconnectedInputError naming it), "warn" or "ignore" (zeros either way).
    An Op's grad returning None for an input means a zero gradient (integer
    inputs, comparisons): a ``wrt`` reached only that way gets zeros, no error;
    returning DisconnectedGradient means the output does not depend on it.

    ``known_grads`` maps variables to the gradient of the cost with respect
    to them (Variables, or values their Type accepts): backpropagation starts
    from those too, and a known gradient is final (what the cost would send
    back through that variable is not added).  ``cost`` may then be None: the
    result is the vector-Jacobian product of the known gradients (see
    :func:`Lop`).
    """
    return label_gradient(_backprop(cost, wrt, consider_constant, disconnected_inputs,
                                    _known_gradients(known_grads), final=True), cost, wrt)


def _backprop(cost, wrt, consider_constant, disconnected_inputs, known, final):
    """grad's traversal; ``final``: a known gradient is not added to (grad's rule),
    else it is one more contribution (Lop's rule: an output may feed another)."""
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError("disconnected_inputs must be 'raise', 'warn' or 'ignore', got %r"
                         % (disconnected_inputs,))
    if cost is None and not known:
        raise TypeError("grad: cost is None, so known_grads must give at least one gradient")
    if cost is not None and not isinstance(cost, Variable):
        raise TypeError("grad: cost must be a Variable, got %s %r" % (
            type(cost).__name__, cost))
    single = isinstance(wrt, Variable)
    wrt_list = [wrt] if single else list(wrt)
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError("grad: wrt[%d] must be a Variable, got %s %r" % (
                i, type(w).__name__, w))
    blocked = set(consider_constant or ())
    roots = ([cost] if cost is not None else []) + list(known)

    order = toposort(roots)
    wrt_set = set(wrt_list)
    connected = set(wrt_set)
    for node in order:
        if any(inp in connected and inp not in blocked for inp in node.inputs):
            connected.update(node.outputs)

    contributions = {var: [g] for var, g in known.items()}
    if cost is not None and cost not in known:
        contributions[cost] = [cost.type.grad_ones_like(cost)]
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
            if final and inp in known:
                continue  # a known gradient is final
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
                   % (cost if cost is not None else list(known), w))
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


def _known_gradients(known_grads):
    """``{variable: gradient Variable}`` from ``known_grads`` (values become constants)."""
    known = {}
    for var, g in dict(known_grads or {}).items():
        if not isinstance(var, Variable):
            raise TypeError("known_grads: keys must be Variables, got %s %r" % (
                type(var).__name__, var))
        if g is None:
            continue
        if not isinstance(g, Variable):
            try:
                g = var.type.make_constant(var.type.filter(g))
            except (TypeError, ValueError) as exc:
                raise TypeError("known_grads: the gradient given for %r is not a value of its "
                                "type %r: %s" % (var, var.type, exc)) from exc
        known[var] = g
    return known


def _as_list(x, what):
    if isinstance(x, Variable):
        return [x], True
    if isinstance(x, (list, tuple)):
        return list(x), False
    raise TypeError("%s must be a Variable or a list of Variables, got %r" % (what, x))


def Lop(f, wrt, eval_points, consider_constant=None, disconnected_inputs="raise"):
    """The vector-Jacobian product ``v^T (df/dwrt)`` (reverse mode, no scalar cost).

    ``f`` is a Variable or a list; ``eval_points`` gives one ``v`` per entry of
    ``f`` (same structure, each shaped like its ``f``).  The result has the
    structure of ``wrt``: for each ``x`` in ``wrt``, the sum over ``f`` of
    ``v`` times the Jacobian of ``f`` with respect to ``x``.
    """
    fs, _ = _as_list(f, "Lop: f")
    vs, _ = _as_list(eval_points, "Lop: eval_points")
    if len(fs) != len(vs):
        raise ValueError("Lop: %d outputs but %d eval_points" % (len(fs), len(vs)))
    known = {}
    for fi, vi in zip(fs, vs):
        (vi,) = _known_gradients({fi: vi}).values()
        known[fi] = vi if fi not in known else fi.type.grad_sum([known[fi], vi])
    return _backprop(None, wrt, consider_constant, disconnected_inputs, known, final=False)


def Rop(f, wrt, eval_points, disconnected_outputs="raise"):
    """The Jacobian-vector product ``(df/dwrt) v`` (forward mode).

    ``wrt`` is a Variable or a list, ``eval_points`` one ``v`` per entry of it
    (each shaped like its ``wrt``); the result has the structure of ``f``: for
    each output, the sum over ``wrt`` of its Jacobian times ``v``.

    It is computed by transposing reverse mode twice, so every Op with a
    ``grad`` supports it: with ``u`` a stand-in shaped like ``f``, ``g(u) =
    Lop(f, wrt, u)`` is linear in ``u`` and ``Lop(g, u, v) = J v``.  The
    result does not depend on ``u``'s value; where it still reads ``u``'s
    shape, ``u`` is replaced by zeros shaped like ``f``.
    ``disconnected_outputs="raise"`` refuses an ``f`` that depends on no
    ``wrt`` variable ("ignore" gives zeros).
    """
    fs, single = _as_list(f, "Rop: f")
    xs, _ = _as_list(wrt, "Rop: wrt")
    vs, _ = _as_list(eval_points, "Rop: eval_points")
    if len(xs) != len(vs):
        raise ValueError("Rop: %d wrt variables but %d eval_points" % (len(xs), len(vs)))
    for x, v in zip(xs, vs):
        if isinstance(v, Variable) and getattr(v.type, "ndim", None) != getattr(
                x.type, "ndim", None):
            raise TypeError("Rop: eval point %r (%r) must be shaped like %r (%r)" % (
                v, v.type, x, x.type))
    stand_ins = [fi.type() for fi in fs]
    for u, fi in zip(stand_ins, fs):
        u.name = "u_%s" % fi.name if fi.name else None
    gs = Lop(fs, xs, stand_ins, disconnected_inputs="ignore")
    pairs = [(g, v) for g, v in zip(gs, vs) if _depends_on(g, stand_ins)]
    if not pairs:
        if disconnected_outputs == "raise":
            raise DisconnectedInputError("Rop: %r depends on none of %r" % (fs, xs))
        results = [fi.type.grad_zeros_like(fi) for fi in fs]
    else:
        results = Lop([g for g, _ in pairs], stand_ins, [v for _, v in pairs],
                      disconnected_inputs="ignore")
        replacements = [(u, fi.type.grad_zeros_like(fi)) for u, fi in zip(stand_ins, fs)]
        results = clone_replace(results, replacements)
    return results[0] if single else results


def _depends_on(var, roots):
    ins = set(graph_inputs([var]))
    return any(r in ins for r in roots)
