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
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.basic import Alloc, ShapeI
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.reduction import Reduce
from nbgraph.tensor.shape_keys import shape_keys
from nbgraph.tensor.subtensor import IncSubtensor, Subtensor
from nbgraph.tensor.rewriting import is_all, register_rewrite
from nbgraph.core.rewriting import loaded_class, node_rewriter

__all__ = ["STABILIZE_TAG", "first_rows", "one_and_other", "op_inputs", "owner_of",
           "padded_rows", "same_type", "stabilize_rewrite"]

STABILIZE_TAG = "stabilize"


def op_inputs(var, scalar_op):
    """The inputs of ``var``'s Elemwise node (not in place) when it applies ``scalar_op``,
    else None."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, Elemwise) and \
            owner.op.scalar_op == scalar_op and not owner.op.inplace_pattern:
        return owner.inputs
    return None


def owner_of(var, op_class):
    """``var``'s Apply node when its Op is an ``op_class`` (a class or a tuple), else None."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, op_class):
        return owner
    return None


def same_type(new, old):
    """``new`` when it can stand for ``old`` in a rewrite (same dtype and static shape, or
    a more precise static shape), else None."""
    if new.type == old.type:
        return new
    if new.type.dtype == old.type.dtype and new.ndim == old.ndim and \
            old.type.is_super(new.type):
        return new
    return None


def _first_rows_index(idx_list):
    """True for the index ``[:S]`` (first rows, S a variable)."""
    return len(idx_list) == 1 and isinstance(idx_list[0], slice) and \
        idx_list[0].start is None and idx_list[0].step is None and idx_list[0].stop is not None


def first_rows(var):
    """``(x, rows)`` when ``var`` is ``x[:S]`` (rows: a function giving ``v[:S]`` for
    any ``v``), else ``(var, identity)``: the stabilize patterns look through it."""
    owner = owner_of(var, Subtensor)
    if owner is not None and _first_rows_index(owner.op.idx_list):
        return owner.inputs[0], lambda v: owner.op(v, *owner.inputs[1:])
    return var, lambda v: v


def padded_rows(var):
    """``(v, pad)`` when ``var`` is ``v`` written into the first rows of zeros
    (``set_subtensor(zeros[:S], v)``, what the gradient of ``x[:S]`` is; pad: a
    function writing any ``w`` there), else ``(var, None)``."""
    owner = owner_of(var, IncSubtensor)
    if owner is not None and _first_rows_index(owner.op.idx_list) and \
            owner.op.set_instead_of_inc and _zeros(owner.inputs[0]):
        return owner.inputs[1], _Pad(owner)
    return var, None


def _zeros(var):
    """True when ``var`` is all +0 (a constant, or an Alloc of one)."""
    alloc = owner_of(var, Alloc)
    return is_all(alloc.inputs[0] if alloc is not None else var, 0)


class _Pad:
    """Writes a value into the rows a ``set_subtensor(zeros[:S], v)`` node wrote
    (``indices``: its index inputs, ``S``)."""

    def __init__(self, node):
        self.node = node
        self.indices = tuple(node.inputs[2:])

    def __call__(self, w):
        return self.node.op(self.node.inputs[0], w, *self.indices)


def one_and_other(inputs):
    """For a two-input add/sub: the non-constant operand when the other is all ones."""
    if len(inputs) != 2:
        return None
    a, b = inputs
    if is_all(a, 1):
        return b
    if is_all(b, 1):
        return a
    return None


def stabilize_rewrite(name, tracks, position=40):
    """Decorator: register ``fn(fgraph, node)`` as a node rewriter of the stage, tracking
    ``tracks`` (Op classes, or ``"package.module:Name"`` for a class of a module that may
    not be loaded: :func:`nbgraph.core.rewriting.loaded_class`), at ``position``."""
    def decorate(fn):
        return register_rewrite(name, STABILIZE_TAG, position=position)(node_rewriter(tracks)(fn))
    return decorate


# The stage does not import nbgraph.tensor.nnet (~1 ms of a first function()): a graph
# holds a softmax, a pick or a cross-entropy node only once that module is loaded, so
# until then the patterns looking for one match nothing, and a rewrite that builds one
# from primitives (softmax, logsumexp) imports it then.
_NNET = "nbgraph.tensor.nnet"


def _nnet_class(name):
    """The Op class ``name`` of :mod:`nbgraph.tensor.nnet` for a pattern to look for;
    ``()`` (no isinstance matches it) while that module is not loaded."""
    found = loaded_class("%s:%s" % (_NNET, name))
    return () if found is None else found


def _nnet():
    """:mod:`nbgraph.tensor.nnet`, for a rewrite that builds one of its Ops."""
    from nbgraph.tensor import nnet

    return nnet


@stabilize_rewrite("hand_written_sigmoid", [Elemwise], position=30)
def hand_written_sigmoid(fgraph, node):
    """``1 / (1 + exp(e)) -> sigmoid(-e)``: no overflow of exp, no 1/inf."""
    if node.op.scalar_op != ps.true_div or not is_all(node.inputs[0], 1):
        return None
    terms = op_inputs(node.inputs[1], ps.add)
    if terms is None:
        return None
    e_var = one_and_other(terms)
    if e_var is None:
        return None
    exponent = op_inputs(e_var, ps.exp)
    if exponent is None:
        return None
    (e,) = exponent
    inner = op_inputs(e, ps.neg)
    argument = inner[0] if inner is not None else tm.neg(e)
    out = same_type(tm.sigmoid(argument), node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("log_sigmoid", [Elemwise])
def log_sigmoid(fgraph, node):
    """``log(sigmoid(x)) -> -softplus(-x)`` and ``log(1 - sigmoid(x)) -> -softplus(x)``."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    s = op_inputs(arg, ps.sigmoid)
    if s is not None:
        inner = op_inputs(s[0], ps.neg)
        negated = inner[0] if inner is not None else tm.neg(s[0])
        out = tm.neg(tm.softplus(negated))
    else:
        diff = op_inputs(arg, ps.sub)
        if diff is None or not is_all(diff[0], 1):
            return None
        s = op_inputs(diff[1], ps.sigmoid)
        if s is None:
            return None
        out = tm.neg(tm.softplus(s[0]))
    out = same_type(out, node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("log_softmax", [Elemwise])
def log_of_softmax(fgraph, node):
    """``log(softmax(x)) -> log_softmax(x)``; ``log(softmax(x)[.., y])`` picks from it."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    sm = owner_of(arg, _nnet_class("Softmax"))
    if sm is not None:
        out = _nnet().LogSoftmax(sm.op.axis)(sm.inputs[0])
    else:
        pick = owner_of(arg, _nnet_class("PickLabels"))
        if pick is None:
            return None
        probs, rows = first_rows(pick.inputs[0])  # p[:S] of p[arange(S), y]
        sm = owner_of(probs, _nnet_class("Softmax"))
        if sm is None or sm.op.axis != sm.inputs[0].ndim - 1:
            return None
        nnet = _nnet()
        out = nnet.pick_labels(rows(nnet.LogSoftmax(sm.op.axis)(sm.inputs[0])), pick.inputs[1])
    out = same_type(out, node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("softmax_crossentropy", [Elemwise], position=45)
def crossentropy_of_softmax(fgraph, node):
    """``-log_softmax(x)[.., y] -> softmax_crossentropy(x, y)`` (one Op, one pass)."""
    if node.op.scalar_op != ps.neg:
        return None
    pick = owner_of(node.inputs[0], _nnet_class("PickLabels"))
    if pick is None:
        return None
    logp, rows = first_rows(pick.inputs[0])
    ls = owner_of(logp, _nnet_class("LogSoftmax"))
    if ls is None or ls.op.axis != ls.inputs[0].ndim - 1:
        return None
    out = same_type(_nnet().softmax_crossentropy(rows(ls.inputs[0]), pick.inputs[1]),
                    node.outputs[0])
    return [out] if out is not None else None


def _values_read_once(fgraph, var):
    """True when one client reads ``var``'s values (others, ShapeI, only its shape)."""
    return sum(client == "output" or not isinstance(client.op, ShapeI)
               for client, _ in fgraph.clients[var]) == 1


@stabilize_rewrite("softmax_crossentropy_pick", [_NNET + ":PickLabels"], position=45)
def crossentropy_of_picked_log_softmax(fgraph, node):
    """``log_softmax(x)[.., y] -> -softmax_crossentropy(x, y)`` when nothing else reads
    the log-softmax (one value per row computed instead of every one)."""
    logp, rows = first_rows(node.inputs[0])
    ls = owner_of(logp, _nnet_class("LogSoftmax"))
    if ls is None or ls.op.axis != logp.ndim - 1 or not all(
            _values_read_once(fgraph, v) for v in {logp, node.inputs[0]}):
        return None
    xent = _nnet().softmax_crossentropy(rows(ls.inputs[0]), node.inputs[1])
    out = same_type(tm.neg(xent), node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("softmax_crossentropy_grad", [Elemwise], position=45)
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
            gz, x, y, pad = found
            out = same_type(pad(_nnet().SoftmaxCrossentropyGrad()(gz, x, y)), node.outputs[0])
            return [out] if out is not None else None
    return None


def _softmax_gradient_parts(sm_var, diff_var):
    """``(sm node, g)`` when ``sm_var * diff_var`` is ``sm * (g - sum(g * sm, axis,
    keepdims))``, the gradient of ``sm = softmax(x, axis)`` for ``g``, else None."""
    sm = owner_of(sm_var, _nnet_class("Softmax"))
    diff = op_inputs(diff_var, ps.sub)
    if sm is None or diff is None:
        return None
    g, total = diff
    found = _keepdims_reduce(total, "sum")
    if found is None or found[1] != sm.op.axis:
        return None
    prod = op_inputs(found[0], ps.mul)
    if prod is None or len(prod) != 2 or not ((prod[0] is g and prod[1] is sm_var) or (
            prod[1] is g and prod[0] is sm_var)):
        return None
    return sm, g


@stabilize_rewrite("softmax_grad", [Elemwise], position=50)
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
            out = same_type(_nnet().SoftmaxGrad(sm.op.axis)(g, sm_var), node.outputs[0])
            return [out] if out is not None else None
    return None


def _crossentropy_gradient_parts(sm_var, diff_var):
    """``(gz, x, y, pad)`` when ``sm_var * diff_var`` is the differentiated cross-entropy
    of a softmax, ``pad(gz * (softmax(x) - one_hot(y)))`` its value."""
    found = _softmax_gradient_parts(sm_var, diff_var)
    if found is None or found[0].op.axis != sm_var.ndim - 1:
        return None
    sm, g = found
    found = _label_gradient(g, sm_var)
    if found is None:
        return None
    c, y, rows, pad = found  # the gradient is sm * (g - sum(g * sm)) = -c * (sm - one_hot(y))
    negated = op_inputs(c, ps.neg)
    gz = _spread_value(negated[0]) if negated is not None else tm.neg(_spread_value(c))
    return gz, rows(sm.inputs[0]), y, pad


def _label_gradient(g, sm_var):
    """``(c, y, rows, pad)`` when ``g`` is ``c / sm`` at the labels ``y`` and 0 elsewhere,
    as ``PickLabelsGrad(c, y) / sm`` (from ``log(sm)[.., y]``) or ``PickLabelsGrad(c /
    sm[.., y], y)`` (from ``log(sm[.., y])``), else None.  When ``y`` labels only the
    first rows (``x[arange(len(y)), y]``), ``g`` is that written into zeros
    (:func:`padded_rows`): ``rows`` takes those rows of a matrix and ``pad`` puts a
    result for them back into zeros; otherwise both are the identity."""
    quotient = op_inputs(g, ps.true_div)
    if quotient is not None and quotient[1] is sm_var:
        inner, pad = padded_rows(quotient[0])
        picks = owner_of(inner, _nnet_class("PickLabelsGrad"))
        if picks is None:
            return None
        c, y, template = picks.inputs
        picked_from = sm_var
    else:
        inner, pad = padded_rows(g)
        picks = owner_of(inner, _nnet_class("PickLabelsGrad"))
        quotient = op_inputs(picks.inputs[0], ps.true_div) if picks is not None else None
        pick = owner_of(quotient[1], _nnet_class("PickLabels")) if quotient is not None else None
        if pick is None or pick.inputs[1] is not picks.inputs[1]:
            return None
        c, y, template, picked_from = quotient[0], pick.inputs[1], picks.inputs[2], \
            pick.inputs[0]
    if pad is None:
        return (c, y, _identity, _identity) if picked_from is sm_var else None
    stop = pad.indices
    if _first_rows_of(template, stop) is None or (picked_from is not sm_var and
                                                  _first_rows_of(picked_from, stop) is not sm_var):
        return None
    return c, y, first_rows(template)[1], pad


def _identity(v):
    return v


def _first_rows_of(var, stop):
    """``x`` when ``var`` is ``x[:S]`` with index inputs ``stop``, else None."""
    owner = owner_of(var, Subtensor)
    if owner is None or not _first_rows_index(owner.op.idx_list) or \
            tuple(owner.inputs[1:]) != tuple(stop):
        return None
    return owner.inputs[0]


def _spread_value(var):
    """The value an Alloc spreads when it is all ones in shape (the kernel broadcasts it)."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, Alloc):
        value = owner.inputs[0]
        if value.ndim == var.ndim and value.dtype == var.dtype and \
                all(s == 1 for s in value.type.shape):
            return value
    return var


@stabilize_rewrite("logsumexp", [Elemwise])
def log_sum_exp(fgraph, node):
    """``log(sum(exp(x), axis)) -> logsumexp(x, axis)`` (also through keepdims)."""
    if node.op.scalar_op != ps.log:
        return None
    (arg,) = node.inputs
    shuffle = owner_of(arg, DimShuffle)
    total = arg if shuffle is None else shuffle.inputs[0]
    red = owner_of(total, Reduce)
    if red is None or red.op.kind != "sum":
        return None
    exp_in = op_inputs(red.inputs[0], ps.exp)
    if exp_in is None or red.inputs[0].dtype != exp_in[0].dtype:
        return None
    out = _nnet().LogSumExp(red.op.axis)(exp_in[0])
    if shuffle is not None:
        out = DimShuffle(out.ndim, shuffle.op.new_order)(out)
    out = same_type(out, node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("log1p", [Elemwise])
def log_one_plus(fgraph, node):
    """``log(1 + x) -> log1p(x)`` for float ``x`` of the output's shape."""
    if node.op.scalar_op != ps.log:
        return None
    terms = op_inputs(node.inputs[0], ps.add)
    if terms is None:
        return None
    x = one_and_other(terms)
    if x is None or x.dtype not in ("float32", "float64"):
        return None
    out = same_type(tm.log1p(x), node.outputs[0])
    return [out] if out is not None else None


@stabilize_rewrite("expm1", [Elemwise])
def exp_minus_one(fgraph, node):
    """``exp(x) - 1 -> expm1(x)`` for float ``x`` of the output's shape."""
    if node.op.scalar_op != ps.sub or not is_all(node.inputs[1], 1):
        return None
    e = op_inputs(node.inputs[0], ps.exp)
    if e is None or e[0].dtype not in ("float32", "float64"):
        return None
    out = same_type(tm.expm1(e[0]), node.outputs[0])
    return [out] if out is not None else None


def _keepdims_reduce(var, kind):
    """(x, axis) when ``var`` is ``Reduce(kind, (axis,))(x)`` put back with keepdims."""
    shuffle = owner_of(var, DimShuffle)
    if shuffle is None:
        return None
    red = owner_of(shuffle.inputs[0], Reduce)
    if red is None or red.op.kind != kind or len(red.op.axis) != 1:
        return None
    (axis,) = red.op.axis
    x = red.inputs[0]
    expected = tuple("x" if d == axis else d - (d > axis) for d in range(x.ndim))
    if tuple(shuffle.op.new_order) != expected:
        return None
    return x, axis


@stabilize_rewrite("softmax_from_primitives", [Elemwise])
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
    exp_in = op_inputs(e, ps.exp)
    if exp_in is None:
        return None
    diff = op_inputs(exp_in[0], ps.sub)
    if diff is None:
        return None
    x, shift = diff
    found = _keepdims_reduce(shift, "max")
    if found is None or found != (x, axis) or x.dtype not in ("float32", "float64"):
        return None
    out = same_type(_nnet().softmax(x, axis), node.outputs[0])
    return [out] if out is not None else None
