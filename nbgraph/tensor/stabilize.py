"""The ``stabilize`` stage: rewrites that change a result only toward the exact value.

Every other rewrite keeps NumPy's result (SPEC §3.1).  These replace a
formula whose naive evaluation overflows, underflows or cancels by one that
computes the same mathematical value stably:

========================================  ====================================
naive                                     stabilised
========================================  ====================================
``1 / (1 + exp(e))``                      ``sigmoid(-e)`` (stable for any e)
``log(sigmoid(x))``                       ``-softplus(-x)``
``log(1 - sigmoid(x))``                   ``-softplus(x)``
``log(softmax(x))``                       ``log_softmax(x)``
``log(sum(exp(x), axis))``                ``logsumexp(x, axis)``
``log(1 + x)``                            ``log1p(x)``
``exp(x) - 1``                            ``expm1(x)``
``-log(softmax(x)[.., y])``               ``softmax_crossentropy(x, y)``
its gradient (``-gz / p[.., y]``, ...)    ``gz * (softmax(x) - one_hot(y))``
``exp(x - max(x)) / sum(...)``            ``softmax(x)`` (one node)
``(a / d) * d`` with d a sigmoid          ``a`` (gradients: see sigmoid_gradient)
========================================  ====================================

The stage runs after canonicalisation and before fusion, in
``rewrite="fast"`` (the default).  ``rewrite="exact"`` runs the same
pipeline without it (NumPy's results everywhere, overflow included), and
``Mode(...).excluding("stabilize")`` does the same.  Each rewrite is tested
on sweeps through the overflow and underflow ranges against mpmath: finite
wherever the exact value is, never a larger error than the naive formula.
"""

from nbgraph.tensor import math as tm
from nbgraph.tensor import nnet
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.basic import Alloc, ShapeI
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.nnet_rewrites import first_rows  # (registers the label-pick rewrites)
from nbgraph.tensor.reduction import Reduce
from nbgraph.tensor.shape_keys import shape_keys
from nbgraph.tensor.rewriting import is_all, register_rewrite
from nbgraph.core.graph import equal_computations
from nbgraph.core.rewriting import node_rewriter

__all__ = ["STABILIZE_TAG"]

STABILIZE_TAG = "stabilize"


def _op_inputs(var, scalar_op):
    """The inputs of ``var``'s Elemwise node when it applies ``scalar_op``, else None."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, Elemwise) and \
            owner.op.scalar_op == scalar_op and not owner.op.inplace_pattern:
        return owner.inputs
    return None


def _of(var, op_class):
    owner = var.owner
    if owner is not None and isinstance(owner.op, op_class):
        return owner
    return None


def _same_type(new, old):
    """``new`` when it can stand for ``old`` (same dtype and static shape), else None."""
    if new.type == old.type:
        return new
    if new.type.dtype == old.type.dtype and new.ndim == old.ndim and \
            old.type.is_super(new.type):
        return new
    return None


def _one_and_other(inputs):
    """For a two-input add/sub: the non-constant operand when the other is all ones."""
    if len(inputs) != 2:
        return None
    a, b = inputs
    if is_all(a, 1):
        return b
    if is_all(b, 1):
        return a
    return None


def _stabilize(name, tracks, position=40):
    def decorate(fn):
        return register_rewrite(name, STABILIZE_TAG, position=position)(
            node_rewriter(tracks)(fn))
    return decorate


@_stabilize("hand_written_sigmoid", [Elemwise], position=30)
def hand_written_sigmoid(fgraph, node):
    """``1 / (1 + exp(e)) -> sigmoid(-e)``: no overflow of exp, no 1/inf."""
    if node.op.scalar_op != ps.true_div or not is_all(node.inputs[0], 1):
        return None
    terms = _op_inputs(node.inputs[1], ps.add)
    if terms is None:
        return None
    e_var = _one_and_other(terms)
    if e_var is None:
        return None
    exponent = _op_inputs(e_var, ps.exp)
    if exponent is None:
        return None
    (e,) = exponent
    inner = _op_inputs(e, ps.neg)
    argument = inner[0] if inner is not None else tm.neg(e)
    out = _same_type(tm.sigmoid(argument), node.outputs[0])
    return [out] if out is not None else None


@_stabilize("log_sigmoid", [Elemwise])
def log_sigmoid(fgraph, node):
    """``log(sigmoid(x)) -> -softplus(-x)`` and ``log(1 - sigmoid(x)) -> -softplus(x)``."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    s = _op_inputs(arg, ps.sigmoid)
    if s is not None:
        inner = _op_inputs(s[0], ps.neg)
        negated = inner[0] if inner is not None else tm.neg(s[0])
        out = tm.neg(tm.softplus(negated))
    else:
        diff = _op_inputs(arg, ps.sub)
        if diff is None or not is_all(diff[0], 1):
            return None
        s = _op_inputs(diff[1], ps.sigmoid)
        if s is None:
            return None
        out = tm.neg(tm.softplus(s[0]))
    out = _same_type(out, node.outputs[0])
    return [out] if out is not None else None


@_stabilize("log_softmax", [Elemwise])
def log_of_softmax(fgraph, node):
    """``log(softmax(x)) -> log_softmax(x)``; ``log(softmax(x)[.., y])`` picks from it."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    sm = _of(arg, nnet.Softmax)
    if sm is not None:
        out = nnet.LogSoftmax(sm.op.axis)(sm.inputs[0])
    else:
        pick = _of(arg, nnet.PickLabels)
        if pick is None:
            return None
        probs, rows = first_rows(pick.inputs[0])  # p[:S] of p[arange(S), y]
        sm = _of(probs, nnet.Softmax)
        if sm is None or sm.op.axis != sm.inputs[0].ndim - 1:
            return None
        out = nnet.pick_labels(rows(nnet.LogSoftmax(sm.op.axis)(sm.inputs[0])), pick.inputs[1])
    out = _same_type(out, node.outputs[0])
    return [out] if out is not None else None


@_stabilize("softmax_crossentropy", [Elemwise], position=45)
def crossentropy_of_softmax(fgraph, node):
    """``-log_softmax(x)[.., y] -> softmax_crossentropy(x, y)`` (one Op, one pass)."""
    if node.op.scalar_op != ps.neg:
        return None
    pick = _of(node.inputs[0], nnet.PickLabels)
    if pick is None:
        return None
    logp, rows = first_rows(pick.inputs[0])
    ls = _of(logp, nnet.LogSoftmax)
    if ls is None or ls.op.axis != ls.inputs[0].ndim - 1:
        return None
    out = _same_type(nnet.softmax_crossentropy(rows(ls.inputs[0]), pick.inputs[1]),
                     node.outputs[0])
    return [out] if out is not None else None


def _values_read_once(fgraph, var):
    """True when one client reads ``var``'s values (others, ShapeI, only its shape)."""
    return sum(client == "output" or not isinstance(client.op, ShapeI)
               for client, _ in fgraph.clients[var]) == 1


@_stabilize("softmax_crossentropy_pick", [nnet.PickLabels], position=45)
def crossentropy_of_picked_log_softmax(fgraph, node):
    """``log_softmax(x)[.., y] -> -softmax_crossentropy(x, y)`` when nothing else reads
    the log-softmax (one value per row computed instead of every one)."""
    logp, rows = first_rows(node.inputs[0])
    ls = _of(logp, nnet.LogSoftmax)
    if ls is None or ls.op.axis != logp.ndim - 1 or not all(
            _values_read_once(fgraph, v) for v in {logp, node.inputs[0]}):
        return None
    xent = nnet.softmax_crossentropy(rows(ls.inputs[0]), node.inputs[1])
    out = _same_type(tm.neg(xent), node.outputs[0])
    return [out] if out is not None else None


@_stabilize("softmax_crossentropy_grad", [Elemwise], position=45)
def crossentropy_of_softmax_gradient(fgraph, node):
    """The gradient of ``-log(softmax(x)[.., y])`` as differentiated, ``sm * (g - sum(g *
    sm, -1, keepdims))`` with ``g = PickLabelsGrad(-gz / sm[.., y], y)``, ->
    ``SoftmaxCrossentropyGrad(gz, x, y) = gz * (softmax(x) - one_hot(y))``: one pass, no
    division by a probability that may round to 0 (``-gz / p * p`` is ``-gz`` exactly)."""
    if node.op.scalar_op != ps.mul or len(node.inputs) != 2:
        return None
    for sm_var, diff_var in (node.inputs, node.inputs[::-1]):
        found = _crossentropy_gradient_parts(sm_var, diff_var)
        if found is not None:
            gz, x, y = found
            out = _same_type(nnet.SoftmaxCrossentropyGrad()(gz, x, y), node.outputs[0])
            return [out] if out is not None else None
    return None


def _softmax_gradient_parts(sm_var, diff_var):
    """``(sm node, g)`` when ``sm_var * diff_var`` is ``sm * (g - sum(g * sm, axis,
    keepdims))``, the gradient of ``sm = softmax(x, axis)`` for ``g``, else None."""
    sm = _of(sm_var, nnet.Softmax)
    diff = _op_inputs(diff_var, ps.sub)
    if sm is None or diff is None:
        return None
    g, total = diff
    found = _keepdims_reduce(total, "sum")
    if found is None or found[1] != sm.op.axis:
        return None
    prod = _op_inputs(found[0], ps.mul)
    if prod is None or len(prod) != 2 or not ((prod[0] is g and prod[1] is sm_var) or (
            prod[1] is g and prod[0] is sm_var)):
        return None
    return sm, g


@_stabilize("softmax_grad", [Elemwise], position=50)
def softmax_gradient(fgraph, node):
    """``sm * (g - sum(g * sm, axis, keepdims)) -> SoftmaxGrad(g, sm)`` (one pass per row;
    not a stabilisation but a fusion, here so that the cross-entropy's gradient, position
    45, is found first)."""
    if node.op.scalar_op != ps.mul or len(node.inputs) != 2:
        return None
    for sm_var, diff_var in (node.inputs, node.inputs[::-1]):
        found = _softmax_gradient_parts(sm_var, diff_var)
        if found is not None:
            sm, g = found
            if g.type.dtype != sm_var.type.dtype or \
                    shape_keys(fgraph, g) != shape_keys(fgraph, sm_var):
                return None  # a broadcast g: the primitives broadcast it
            out = _same_type(nnet.SoftmaxGrad(sm.op.axis)(g, sm_var), node.outputs[0])
            return [out] if out is not None else None
    return None


def _crossentropy_gradient_parts(sm_var, diff_var):
    """(gz, x, y) when ``sm_var * diff_var`` is the differentiated cross-entropy of a softmax."""
    found = _softmax_gradient_parts(sm_var, diff_var)
    if found is None or found[0].op.axis != sm_var.ndim - 1:
        return None
    sm, g = found
    found = _label_gradient(g, sm_var)
    if found is None:
        return None
    c, y = found  # the gradient is sm * (g - sum(g * sm)) = -c * (sm - one_hot(y))
    negated = _op_inputs(c, ps.neg)
    gz = _spread_value(negated[0]) if negated is not None else tm.neg(_spread_value(c))
    return gz, sm.inputs[0], y


def _label_gradient(g, sm_var):
    """``(c, y)`` when ``g`` is ``c / sm`` at the labels ``y`` and 0 elsewhere, as
    ``PickLabelsGrad(c / sm[.., y], y)`` (from ``log(sm[.., y])``) or
    ``PickLabelsGrad(c, y) / sm`` (from ``log(sm)[.., y]``), else None."""
    picks = _of(g, nnet.PickLabelsGrad)
    if picks is not None:
        c, y, _ = picks.inputs
        quotient = _op_inputs(c, ps.true_div)
        if quotient is None:
            return None
        pick = _of(quotient[1], nnet.PickLabels)
        if pick is None or pick.inputs[0] is not sm_var or pick.inputs[1] is not y:
            return None
        return quotient[0], y
    quotient = _op_inputs(g, ps.true_div)
    if quotient is None or quotient[1] is not sm_var:
        return None
    picks = _of(quotient[0], nnet.PickLabelsGrad)
    return None if picks is None else (picks.inputs[0], picks.inputs[1])


def _spread_value(var):
    """The value an Alloc spreads when it is all ones in shape (the kernel broadcasts it)."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, Alloc):
        value = owner.inputs[0]
        if value.ndim == var.ndim and value.dtype == var.dtype and \
                all(s == 1 for s in value.type.shape):
            return value
    return var


@_stabilize("logsumexp", [Elemwise])
def log_sum_exp(fgraph, node):
    """``log(sum(exp(x), axis)) -> logsumexp(x, axis)`` (also through keepdims)."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    shuffle = _of(arg, DimShuffle)
    total = arg if shuffle is None else shuffle.inputs[0]
    red = _of(total, Reduce)
    if red is None or red.op.kind != "sum":
        return None
    exp_in = _op_inputs(red.inputs[0], ps.exp)
    if exp_in is None or red.inputs[0].dtype != exp_in[0].dtype:
        return None
    out = nnet.LogSumExp(red.op.axis)(exp_in[0])
    if shuffle is not None:
        out = DimShuffle(out.ndim, shuffle.op.new_order)(out)
    out = _same_type(out, node.outputs[0])
    return [out] if out is not None else None


@_stabilize("log1p", [Elemwise])
def log_one_plus(fgraph, node):
    """``log(1 + x) -> log1p(x)`` for float ``x`` of the output's shape."""
    if node.op.scalar_op != ps.log:
        return None
    terms = _op_inputs(node.inputs[0], ps.add)
    if terms is None:
        return None
    x = _one_and_other(terms)
    if x is None or x.dtype not in ("float32", "float64"):
        return None
    out = _same_type(tm.log1p(x), node.outputs[0])
    return [out] if out is not None else None


@_stabilize("expm1", [Elemwise])
def exp_minus_one(fgraph, node):
    """``exp(x) - 1 -> expm1(x)`` for float ``x`` of the output's shape."""
    if node.op.scalar_op != ps.sub or not is_all(node.inputs[1], 1):
        return None
    e = _op_inputs(node.inputs[0], ps.exp)
    if e is None or e[0].dtype not in ("float32", "float64"):
        return None
    out = _same_type(tm.expm1(e[0]), node.outputs[0])
    return [out] if out is not None else None


def _keepdims_reduce(var, kind):
    """(x, axis) when ``var`` is ``Reduce(kind, (axis,))(x)`` put back with keepdims."""
    shuffle = _of(var, DimShuffle)
    if shuffle is None:
        return None
    red = _of(shuffle.inputs[0], Reduce)
    if red is None or red.op.kind != kind or len(red.op.axis) != 1:
        return None
    (axis,) = red.op.axis
    x = red.inputs[0]
    expected = tuple("x" if d == axis else d - (d > axis) for d in range(x.ndim))
    if tuple(shuffle.op.new_order) != expected:
        return None
    return x, axis


@_stabilize("softmax_from_primitives", [Elemwise])
def softmax_from_primitives(fgraph, node):
    """``e / sum(e, axis, keepdims)`` with ``e = exp(x - max(x, axis, keepdims))`` ->
    ``softmax(x, axis)``: one node, computed the same way."""
    if node.op.scalar_op != ps.true_div:
        return None
    e, total = node.inputs
    found = _keepdims_reduce(total, "sum")
    if found is None or found[0] is not e:
        return None
    axis = found[1]
    exp_in = _op_inputs(e, ps.exp)
    if exp_in is None:
        return None
    diff = _op_inputs(exp_in[0], ps.sub)
    if diff is None:
        return None
    x, shift = diff
    found = _keepdims_reduce(shift, "max")
    if found is None or found != (x, axis) or x.dtype not in ("float32", "float64"):
        return None
    out = _same_type(nnet.softmax(x, axis), node.outputs[0])
    return [out] if out is not None else None


def _sigmoid_like(var):
    """True for ``sigmoid(x)`` and ``1 - sigmoid(x)``: in (0, 1] mathematically, though
    they may round to 0 (which makes a quotient by them inf or NaN)."""
    if _op_inputs(var, ps.sigmoid) is not None:
        return True
    diff = _op_inputs(var, ps.sub)
    return diff is not None and is_all(diff[0], 1) and \
        _op_inputs(diff[1], ps.sigmoid) is not None


def _factors(var, clients_ok):
    """The factors of a product tree of Elemwise muls (and negations) under ``var``:
    (list of factors, sign)."""
    factors, sign, stack = [], 1, [var]
    while stack:
        v = stack.pop()
        inner = _op_inputs(v, ps.mul)
        if inner is not None and (v is var or clients_ok(v)):
            stack.extend(inner)
            continue
        neg = _op_inputs(v, ps.neg)
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
        added = _op_inputs(v, ps.add)
        if added is not None:
            stack.extend((t, sign) for t in added)
            continue
        diff = _op_inputs(v, ps.sub)
        if diff is not None:
            stack.extend([(diff[0], sign), (diff[1], -sign)])
            continue
        neg = _op_inputs(v, ps.neg)
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
    return _same_type(out, like)


def _derivative_of_hand_written_sigmoid(factors):
    """``(s / u) * exp(e)`` with ``u = 1 + exp(e)`` and ``s = sigmoid(-e) = 1 / u``
    (what grad makes of ``1 / (1 + exp(e))``) as ``s * (1 - s)``: index pair and the
    two new factors, or None."""
    for i, f in enumerate(factors):
        quotient = _op_inputs(f, ps.true_div)
        if quotient is None or _op_inputs(quotient[0], ps.sigmoid) is None:
            continue
        s, u = quotient
        terms = _op_inputs(u, ps.add)
        exp_var = _one_and_other(terms) if terms is not None else None
        if exp_var is None or _op_inputs(exp_var, ps.exp) is None:
            continue
        (e,) = _op_inputs(exp_var, ps.exp)
        (arg,) = _op_inputs(s, ps.sigmoid)
        inner = _op_inputs(arg, ps.neg)
        inner_e = _op_inputs(e, ps.neg)
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
        if _op_inputs(above, ps.mul) is not None:
            return True
        if _op_inputs(above, ps.neg) is None:
            return False
        var = above


@_stabilize("sigmoid_gradient", [Elemwise])
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
    found = _derivative_of_hand_written_sigmoid(factors)
    if found is not None:
        i, j, new = found
        rest = [f for k, f in enumerate(factors) if k not in (i, j)] + new
        result = _product(rest, sign, out)
        return [result] if result is not None else None
    for i, f in enumerate(factors):
        quotient = _op_inputs(f, ps.true_div)
        if quotient is not None and _sigmoid_like(quotient[1]):
            for j, g in enumerate(factors):
                if j != i and _same(g, quotient[1]):
                    rest = [h for k, h in enumerate(factors) if k not in (i, j)]
                    result = _product(rest + [quotient[0]], sign, out)
                    return [result] if result is not None else None
    for i, f in enumerate(factors):
        terms = _terms(f, single_client)
        if len(terms) < 2:
            continue
        others = [h for k, h in enumerate(factors) if k != i]
        new_terms, cancelled = [], False
        for term, tsign in terms:
            term_factors, fsign = _factors(term, single_client)
            match = None
            for q, tf in enumerate(term_factors):  # noqa: B007  (q is read after the break)
                quotient = _op_inputs(tf, ps.true_div)
                if quotient is not None and _sigmoid_like(quotient[1]):
                    match = next((k for k, h in enumerate(others) if _same(h, quotient[1])),
                                 None)
                    if match is not None:
                        break
            if match is None:
                new_terms.append((others + [term], tsign))
            else:
                cancelled = True
                kept = [h for k, h in enumerate(others) if k != match]
                rest = [h for k, h in enumerate(term_factors) if k != q]
                new_terms.append((kept + rest + [quotient[0]], tsign * fsign))
        if not cancelled:
            continue
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
        result = _same_type(total, out)
        return [result] if result is not None else None
    return None
