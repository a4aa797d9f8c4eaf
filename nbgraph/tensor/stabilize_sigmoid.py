"""The ``stabilize`` stage's rewrites of sigmoid gradients (see :mod:`nbgraph.tensor.stabilize`).

A product in the gradient of a sigmoid may divide by a sigmoid that rounds to 0
(``inf * 0``) or hold the derivative of a hand-written ``1 / (1 + exp(e))``,
whose ``exp(e)`` overflows; :func:`sigmoid_gradient` rewrites the forms listed
in :data:`SIGMOID_GRADIENT_FORMS` to their exact value without the quotient.
"""

from nbgraph.core.graph import equal_computations
from nbgraph.tensor import math as tm
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.rewriting import is_all
from nbgraph.tensor.stabilize import one_and_other, op_inputs, same_type, stabilize_rewrite

__all__ = ["SIGMOID_GRADIENT_FORMS", "sigmoid_gradient"]


def _sigmoid_like(var):
    """True for ``sigmoid(x)`` and ``1 - sigmoid(x)``: in (0, 1] mathematically, though
    they may round to 0 (which makes a quotient by them inf or NaN)."""
    if op_inputs(var, ps.sigmoid) is not None:
        return True
    diff = op_inputs(var, ps.sub)
    return diff is not None and is_all(diff[0], 1) and \
        op_inputs(diff[1], ps.sigmoid) is not None


def _factors(var, clients_ok):
    """The factors of a product tree of Elemwise muls (and negations) under ``var``:
    (list of factors, sign)."""
    factors, sign, stack = [], 1, [var]
    while stack:
        v = stack.pop()
        inner = op_inputs(v, ps.mul)
        if inner is not None and (v is var or clients_ok(v)):
            stack.extend(inner)
            continue
        neg = op_inputs(v, ps.neg)
        if neg is not None and clients_ok(v):
            sign = -sign
            stack.append(neg[0])
            continue
        factors.append(v)
    return factors, sign


def _same(a, b):
    return a is b or equal_computations([a], [b])


def _terms(var, clients_ok):
    """The terms of a sum tree (add, sub, neg) under ``var``: [(term, sign)]."""
    out, stack = [], [(var, 1)]
    while stack:
        v, sign = stack.pop()
        if v is not var and not clients_ok(v):
            out.append((v, sign))
            continue
        added = op_inputs(v, ps.add)
        if added is not None:
            stack.extend((t, sign) for t in added)
            continue
        diff = op_inputs(v, ps.sub)
        if diff is not None:
            stack.extend([(diff[0], sign), (diff[1], -sign)])
            continue
        neg = op_inputs(v, ps.neg)
        if neg is not None:
            stack.append((neg[0], -sign))
            continue
        out.append((v, sign))
    return out


def _product(factors, sign, like):
    out = factors[0] if len(factors) == 1 else tm.mul(*factors)
    if sign < 0:
        out = tm.neg(out)
    if out.dtype != like.dtype:
        out = tm.cast(out, like.dtype)
    return same_type(out, like)


def _derivative_of_hand_written_sigmoid(factors):
    """``(s / u) * exp(e)`` with ``u = 1 + exp(e)`` and ``s = sigmoid(-e) = 1 / u``
    (what grad makes of ``1 / (1 + exp(e))``) as ``s * (1 - s)``: index pair and the
    two new factors, or None."""
    for i, f in enumerate(factors):
        quotient = op_inputs(f, ps.true_div)
        if quotient is None or op_inputs(quotient[0], ps.sigmoid) is None:
            continue
        s, u = quotient
        terms = op_inputs(u, ps.add)
        exp_var = one_and_other(terms) if terms is not None else None
        if exp_var is None or op_inputs(exp_var, ps.exp) is None:
            continue
        (e,) = op_inputs(exp_var, ps.exp)
        (arg,) = op_inputs(s, ps.sigmoid)
        inner = op_inputs(arg, ps.neg)
        inner_e = op_inputs(e, ps.neg)
        if not ((inner is not None and _same(inner[0], e)) or
                (inner_e is not None and _same(inner_e[0], arg))):
            continue
        for j, g in enumerate(factors):
            if j != i and _same(g, exp_var):
                return i, j, [s, tm.sub(1, s)]
    return None


def _inside_larger_product(fgraph, var):
    """True when ``var`` is a factor that :func:`_factors` walks into from a product
    above it (its one reader a mul, possibly through negations that each have one
    reader): the product at the top sees every factor ``var`` has, so looking at
    ``var`` too finds nothing new, and looking at every node of a product chain
    costs quadratic time (the gradient of a 25,000-step chain is one)."""
    while True:
        clients = fgraph.clients.get(var, ())
        if len(clients) != 1:
            return False
        reader = clients[0][0]
        if isinstance(reader, str):
            return False
        above = reader.outputs[0]
        if op_inputs(above, ps.mul) is not None:
            return True
        if op_inputs(above, ps.neg) is None:
            return False
        var = above


@stabilize_rewrite("sigmoid_gradient", [Elemwise])
def sigmoid_gradient(fgraph, node):
    """Products in the gradients of sigmoids, rewritten so no quotient by a rounded
    sigmoid remains:

    * ``(s / u) * exp(e) -> s * (1 - s)`` (the derivative of ``1 / (1 + exp(e))``,
      whose ``exp(e)`` and ``u`` overflow);
    * ``(a / d) * d -> a`` for ``d`` a sigmoid or ``1 - sigmoid`` (the gradient of
      ``log(sigmoid(x))`` is ``(gz / s) * s * (1 - s)``: ``inf * 0`` where ``s``
      rounds to 0, though the exact value is finite);
    * ``(a / d + b / c + t) * d * c -> a * c + b * d + t * d * c``: the same
      through a sum (the two terms of a binary cross-entropy).

    Each gives the product's exact value for every ``d`` that is not 0
    mathematically (a sigmoid never is).
    """
    if node.op.scalar_op != ps.mul:
        return None

    def single_client(v):
        return len(fgraph.clients.get(v, ())) == 1

    out = node.outputs[0]
    if _inside_larger_product(fgraph, out):
        return None
    factors, sign = _factors(out, single_client)
    for form in SIGMOID_GRADIENT_FORMS:
        found = form(factors, sign, out, single_client)
        if found is not None:
            (result,) = found
            return [result] if result is not None else None
    return None


def _hand_written_derivative(factors, sign, out, single_client):
    """``(s / u) * exp(e) -> s * (1 - s)``: ``(product,)`` or None (not this form)."""
    found = _derivative_of_hand_written_sigmoid(factors)
    if found is None:
        return None
    i, j, new = found
    rest = [f for k, f in enumerate(factors) if k not in (i, j)] + new
    return (_product(rest, sign, out),)


def _quotient_times_divisor(factors, sign, out, single_client):
    """``(a / d) * d -> a`` (``d`` sigmoid-like): ``(product,)`` or None."""
    for i, f in enumerate(factors):
        quotient = op_inputs(f, ps.true_div)
        if quotient is None or not _sigmoid_like(quotient[1]):
            continue
        j = next((j for j, g in enumerate(factors) if j != i and _same(g, quotient[1])), None)
        if j is not None:
            rest = [h for k, h in enumerate(factors) if k not in (i, j)]
            return (_product(rest + [quotient[0]], sign, out),)
    return None


def _quotients_in_a_sum(factors, sign, out, single_client):
    """``(a / d + b / c + t) * d * c -> a * c + b * d + t * d * c``: ``(sum,)`` or None."""
    for i, f in enumerate(factors):
        terms = _terms(f, single_client)
        if len(terms) < 2:
            continue
        others = [h for k, h in enumerate(factors) if k != i]
        new_terms = [_cancel_in_term(term, tsign, others, single_client)
                     for term, tsign in terms]
        if any(cancelled for _, _, cancelled in new_terms):
            return (_signed_sum([(fs, tsign) for fs, tsign, _ in new_terms], sign, out),)
    return None


def _cancel_in_term(term, tsign, others, single_client):
    """One term of the sum times ``others``: ``(factors, sign, cancelled)``, a quotient by
    a sigmoid-like ``d`` in the term cancelled against a ``d`` among ``others``."""
    term_factors, fsign = _factors(term, single_client)
    for q, tf in enumerate(term_factors):
        quotient = op_inputs(tf, ps.true_div)
        if quotient is None or not _sigmoid_like(quotient[1]):
            continue
        match = next((k for k, h in enumerate(others) if _same(h, quotient[1])), None)
        if match is not None:
            kept = [h for k, h in enumerate(others) if k != match]
            rest = [h for k, h in enumerate(term_factors) if k != q]
            return kept + rest + [quotient[0]], tsign * fsign, True
    return others + [term], tsign, False


def _signed_sum(new_terms, sign, out):
    """The sum of the products ``[(factors, sign)]``, negated when ``sign`` is, as ``out``."""
    total = None
    for fs, tsign in new_terms:
        piece = fs[0] if len(fs) == 1 else tm.mul(*fs)
        if total is None:
            total = piece if tsign > 0 else tm.neg(piece)
        else:
            total = tm.add(total, piece) if tsign > 0 else tm.sub(total, piece)
    if sign < 0:
        total = tm.neg(total)
    if total.dtype != out.dtype:
        total = tm.cast(total, out.dtype)
    return same_type(total, out)


#: The forms :func:`sigmoid_gradient` recognises, tried in this order on the factors of
#: a product: each ``form(factors, sign, out, single_client)`` returns ``(result,)``
#: (``result`` None: the form matched but cannot stand for ``out``) or None.
SIGMOID_GRADIENT_FORMS = (_hand_written_derivative, _quotient_times_divisor,
                          _quotients_in_a_sum)
