"""The tensor rewrite pipeline behind ``function(..., rewrite="fast")``.

Rewrites live in :data:`rewrites`, a registry (registering a name again
replaces the old entry).  The "fast" pipeline runs merge, then one fixed
point of canonicalisation and constant folding, merge again, elementwise
fusion (:mod:`nbgraph.tensor.fusion`, tagged "fusion"), a last merge, and
the in-place stage (:mod:`nbgraph.tensor.inplace`, tagged "inplace").  Every
rewrite here keeps NumPy's results: no ``x * 0 -> 0`` (NaN and inf must
survive), no ``x + 0 -> x`` for floats (it would turn -0.0 into itself
instead of +0.0), no ``exp(log(x)) -> x`` (equal only up to rounding), and
dtypes and shapes are preserved.
"""

import importlib

import numpy as np

from nbgraph.core.graph import Constant
from nbgraph.core.op import run_node
from nbgraph.core.type import MethodNotDefined
from nbgraph.core.rewriting import (
    EquilibriumRewriter, MergeRewriter, RewriteRegistry, SequentialRewriter, node_rewriter,
)
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.basic import (
    Alloc, Shape, ShapeI, SpecifyShape, constant_shape_entry, shape_i,
)
from nbgraph.tensor.elemwise import DimShuffle, Elemwise, SumToShape
from nbgraph.tensor.gradient_ops import GradientModifier
from nbgraph.tensor.shape_keys import shape_keys
from nbgraph.tensor.subtensor import Subtensor
from nbgraph.tensor.type import FLOAT_DTYPES, TensorType
from nbgraph.tensor.variable import TensorConstant

__all__ = ["rewrites", "register_rewrite", "rewrite_graph", "fast_pipeline",
           "MAX_FOLD_SIZE"]

#: Outputs bigger than this many elements are not constant-folded (they would
#: bloat the graph and the C module).
MAX_FOLD_SIZE = 10000

rewrites = RewriteRegistry()


def register_rewrite(name, *tags, position=50):
    """Decorator registering a node rewriter under ``name`` (re-registering replaces)."""
    def decorate(rewriter):
        rewriter.name = name
        return rewrites.register(name, rewriter, *tags, position=position)
    return decorate


def _constant_value(var):
    """The array a constant (possibly behind DimShuffles) holds, else None."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    if isinstance(var, Constant):
        return np.asarray(var.data)
    return None


def is_all(var, value):
    """True when ``var`` is a non-empty constant whose every element equals ``value``
    (for 0, only +0.0: a -0.0 is not all-zero for the exactness guards)."""
    data = _constant_value(var)
    if data is None or data.size == 0:
        return False
    return bool(np.all(data == value)) and not (value == 0 and np.any(np.signbit(data)))


def _same_result(node, keep):
    """True when returning ``keep`` for ``node``'s output changes neither dtype nor shape."""
    out = node.outputs[0]
    if keep.type.dtype != out.type.dtype or keep.ndim != out.ndim:
        return False
    others = [i for i in node.inputs if i is not keep]
    # The dropped operands must not broadcast keep to a larger shape.
    return all(all(s == 1 for s in i.type.shape) for i in others)


@register_rewrite("fold_constants", "fast", "constant_folding", position=10)
@node_rewriter()
def fold_constants(fgraph, node):
    """Compute nodes whose inputs are all constants, once, at compile time."""
    if not node.inputs or not all(isinstance(i, Constant) for i in node.inputs):
        return None
    if not node.op.do_constant_folding(node):
        return None
    try:
        values = run_node(node, [i.data for i in node.inputs])
    except Exception:  # leave errors for run time, where they name the inputs
        return None
    out = []
    for var, value in zip(node.outputs, values, strict=True):
        if not isinstance(var.type, TensorType):
            return None
        value = np.asarray(value)
        if value.size > MAX_FOLD_SIZE:
            return None
        out.append(TensorConstant(TensorType(var.type.dtype, value.shape), value))
    return out


@register_rewrite("mul_by_one", "fast", "canonicalize", position=20)
@node_rewriter([Elemwise])
def mul_by_one(fgraph, node):
    """``x * 1 -> x`` (exact for every value, NaN and inf included)."""
    if node.op.scalar_op != ps.mul or len(node.inputs) < 2:
        return None
    rest = [i for i in node.inputs if not is_all(i, 1)]
    if len(rest) == 1 and _same_result(node, rest[0]):
        return [rest[0]]
    return None


@register_rewrite("add_zero", "fast", "canonicalize", position=20)
@node_rewriter([Elemwise])
def add_zero(fgraph, node):
    """``x + 0 -> x`` and ``x - 0 -> x`` where exact (integers; ``x - 0.0`` for floats)."""
    op = node.op.scalar_op
    if op == ps.add:
        rest = [i for i in node.inputs if not is_all(i, 0)]
        if len(rest) == 1 and rest[0].dtype not in FLOAT_DTYPES and _same_result(node, rest[0]):
            return [rest[0]]
    elif op == ps.sub and is_all(node.inputs[1], 0) and _same_result(node, node.inputs[0]):
        return [node.inputs[0]]
    return None


@register_rewrite("double_negation", "fast", "canonicalize", position=20)
@node_rewriter([Elemwise])
def double_negation(fgraph, node):
    """``-(-x) -> x``."""
    if node.op.scalar_op != ps.neg:
        return None
    inner = node.inputs[0].owner
    if inner is not None and isinstance(inner.op, Elemwise) and inner.op.scalar_op == ps.neg:
        x = inner.inputs[0]
        if x.type.dtype == node.outputs[0].type.dtype:
            return [x]
    return None


@register_rewrite("useless_dimshuffle", "fast", "canonicalize", position=20)
@node_rewriter([DimShuffle])
def useless_dimshuffle(fgraph, node):
    """Drop identity DimShuffles and merge a DimShuffle of a DimShuffle."""
    op = node.op
    if op.new_order == tuple(range(op.input_ndim)):
        return [node.inputs[0]]
    inner = node.inputs[0].owner
    if inner is not None and isinstance(inner.op, DimShuffle):
        composed = tuple("x" if e == "x" else inner.op.new_order[e] for e in op.new_order)
        x = inner.inputs[0]
        kept = [e for e in composed if e != "x"]
        dropped = [d for d in range(x.ndim) if d not in kept]
        if all(x.type.shape[d] == 1 for d in dropped):
            return [DimShuffle(x.ndim, composed)(x)]
    return None


@register_rewrite("useless_shape_ops", "fast", "canonicalize", position=20)
@node_rewriter([SpecifyShape, SumToShape])
def useless_shape_ops(fgraph, node):
    """Remove SpecifyShape/SumToShape nodes that static types already prove useless."""
    x = node.inputs[0]
    out = node.outputs[0]
    if isinstance(node.op, SpecifyShape):
        if x.type == out.type:
            return [x]
        return None
    if x.type.shape == out.type.shape and all(s is not None for s in x.type.shape):
        return [x]
    return None


@register_rewrite("sum_to_shape_same_shape", "fast", "canonicalize", position=25)
@node_rewriter([SumToShape])
def sum_to_shape_same_shape(fgraph, node):
    """``SumToShape(g, shape) -> g`` when ``g``'s shape provably equals the target shape.

    The proof is symbolic (:mod:`nbgraph.tensor.shape_keys`): each dimension of
    ``g`` has the same size expression as the target's, so at run time both are
    equal whatever sizes (1 included) the unknown dimensions take, nothing is
    summed, and the node would return ``g`` itself.
    """
    g, out = node.inputs[0], node.outputs[0]
    if g.type.dtype != out.type.dtype or not out.type.is_super(g.type):
        return None
    if shape_keys(fgraph, g) != shape_keys(fgraph, out):
        return None
    return [g]


def _only_shape_is_used(fgraph, var):
    """True when every client of ``var`` reads only its shape (ShapeI, a SumToShape template)."""
    clients = fgraph.clients.get(var)
    if not clients:
        return False
    for client, i in clients:
        if client == "output":
            return False
        if isinstance(client.op, ShapeI):
            continue
        if isinstance(client.op, SumToShape) and i == 1 and SumToShape.takes_template(client):
            continue
        return False
    return True


@register_rewrite("sum_to_shape_entries", "fast", "canonicalize", position=26)
@node_rewriter([SumToShape])
def sum_to_shape_entries(fgraph, node):
    """``SumToShape(g, like) -> SumToShape(g, *like.shape)`` when ``like`` is computed only
    for its shape: ``shape_i_lift`` then reads the sizes from earlier variables and
    ``like`` (a forward value, often) is not computed at all."""
    if not SumToShape.takes_template(node):
        return None
    like = node.inputs[1]
    if like.owner is None or like.ndim == 0 or not _only_shape_is_used(fgraph, like):
        return None
    return [SumToShape()(node.inputs[0], *[shape_i(like, d) for d in range(like.ndim)])]


@register_rewrite("alloc_to_broadcast", "fast", "canonicalize", position=25)
@node_rewriter([Elemwise])
def alloc_to_broadcast(fgraph, node):
    """Feed an Elemwise the Alloc'ed value itself, letting broadcasting fill it in.

    ``f(alloc(v, *shape), y) -> f(v, y)`` when ``y`` (the other operands)
    provably has ``shape`` in every dimension where ``v`` is not statically 1,
    so the broadcast result has the same shape and the same elements.  The
    proof uses symbolic shape keys, never the assumption that an unknown size
    differs from 1.  One Alloc per visit; the rewritten node is visited again.
    """
    if node.op.inplace_pattern:
        return None
    inputs = node.inputs
    for i, inp in enumerate(inputs):
        value = _allocated_value(inp)
        if value is None:
            continue
        others = [o for j, o in enumerate(inputs) if j != i]
        if not _broadcast_fills(fgraph, inp, value, others):
            continue
        pad = inp.ndim - value.ndim
        new_value = value
        if pad:
            new_value = DimShuffle(value.ndim, ("x",) * pad + tuple(range(value.ndim)))(value)
        new_inputs = list(inputs)
        new_inputs[i] = new_value
        new_outs = node.op.make_node(*new_inputs).outputs
        if any(a.type != b.type for a, b in zip(new_outs, node.outputs, strict=True)):
            continue
        return new_outs
    return None


def _allocated_value(var):
    """The tensor ``var`` is an Alloc of (of ``var``'s dtype), else None."""
    owner = var.owner
    if owner is None or not isinstance(owner.op, Alloc):
        return None
    value = owner.inputs[0]
    if not isinstance(value.type, TensorType) or value.type.dtype != var.type.dtype:
        return None
    return value


def _broadcast_fills(fgraph, alloced, value, others):
    """True when broadcasting ``value`` against ``others`` provably gives ``alloced``'s
    shape: in each dimension ``value`` matches the Alloc's size (or is statically 1),
    and the others cover it (see :func:`_dimension_covered`)."""
    akeys = shape_keys(fgraph, alloced)
    pad = alloced.ndim - value.ndim
    vkeys = shape_keys(fgraph, value)
    other_keys = [(o, shape_keys(fgraph, o)) for o in others]
    for d, k in enumerate(akeys):
        if d >= pad and value.type.shape[d - pad] != 1 and vkeys[d - pad] != k:
            return False
        if not _dimension_covered(d, k, other_keys):
            return False
    return True


def _dimension_covered(d, key, other_keys):
    """True when every operand not statically 1 along ``d`` has size ``key`` there
    and one of them has (or ``key`` is 1): the broadcast then has size ``key``."""
    covered = key == 1
    for o, okeys in other_keys:
        if o.type.shape[d] == 1:
            continue
        if okeys[d] != key:
            return False
        covered = True
    return covered


@register_rewrite("shape_index", "fast", "canonicalize", position=20)
@node_rewriter([Subtensor])
def shape_index(fgraph, node):
    """``x.shape[i] -> ShapeI{i}(x)`` for a constant ``i``, so the size rewrites apply."""
    vector = node.inputs[0]
    if vector.owner is None or not isinstance(vector.owner.op, Shape) or len(node.inputs) != 2 \
            or isinstance(node.op.idx_list[0], slice):
        return None
    x = vector.owner.inputs[0]
    index = node.inputs[1]
    if not isinstance(index, Constant) or not -x.ndim <= int(index.data) < x.ndim:
        return None
    entry = shape_i(x, int(index.data))
    return [entry] if entry.type == node.outputs[0].type else None


@register_rewrite("shape_i_lift", "fast", "canonicalize", position=20)
@node_rewriter([ShapeI])
def shape_i_lift(fgraph, node):
    """Read a size from the producer's inputs (``infer_shape``) instead of computing it.

    ``x.shape[0]`` for ``x = exp(dot(A, w))`` becomes ``A.shape[0]``, so a
    gradient that only needs the cost's shape does not compute the cost.  A
    size that takes arithmetic (``x[1:]``'s ``max(n - 1, 0)``) is used only
    when ``x`` itself is not computed.
    """
    x = node.inputs[0]
    i = node.op.i
    if x.type.shape[i] is not None:
        return [constant_shape_entry(x.type.shape[i])]
    owner = x.owner
    if owner is None:
        return None
    if isinstance(owner.op, Elemwise):
        # inputs that set this size (not statically 1), one per distinct size
        distinct = {}
        for inp in owner.inputs:
            if inp.type.shape[i] != 1:
                distinct.setdefault(shape_keys(fgraph, inp)[i], inp)
        if len(distinct) == 1:  # all provably equal: read it from one of them
            entry = shape_i(next(iter(distinct.values())), i)
            return [entry] if entry.type == node.outputs[0].type else None
        if not _only_shape_is_used(fgraph, x):
            # x is computed anyway: reading its shape is cheaper than the
            # switch(size == 1, ...) graph of the broadcast size
            return None
    in_shapes = [tuple(shape_i(inp, d) for d in range(inp.type.ndim))
                 if isinstance(inp.type, TensorType) else None for inp in owner.inputs]
    try:
        shapes = owner.op.infer_shape(owner, in_shapes)
    except (MethodNotDefined, NotImplementedError, TypeError):
        return None
    entry = shapes[x.index][i]
    if entry is node.outputs[0] or entry.type != node.outputs[0].type:
        return None
    cheap = entry.owner is None or isinstance(entry.owner.op, ShapeI) or entry in fgraph.variables
    if not cheap and not _only_shape_is_used(fgraph, x):
        return None  # x is computed anyway: its shape is cheaper than the expression
    return [entry]


def fast_pipeline(exclude=()):
    """The graph rewriter ``rewrite="fast"`` runs.

    Merge, canonicalisation and constant folding to a fixed point, merge, then
    the ``stabilize`` stage (:mod:`nbgraph.tensor.stabilize`, with the
    canonicalisations again), merge, the graph rewriters tagged "fusion"
    (elementwise and reduction fusion,
    registered by :mod:`nbgraph.tensor.fusion`), merge again, and last those
    tagged "inplace" (:mod:`nbgraph.tensor.inplace`).  Rewrites carrying a tag
    in ``exclude`` (a stage such as "fusion" or "inplace", or one rewrite's
    name) are left out.
    """
    import nbgraph.tensor.fusion  # registers the "fusion" stage
    import nbgraph.tensor.inplace  # registers the "inplace" stage
    import nbgraph.tensor.nnet_rewrites  # the label-pick canonicalisations
    import nbgraph.tensor.stabilize  # registers the "stabilize" stage
    import nbgraph.tensor.stabilize_sigmoid  # noqa: F401  (its sigmoid-gradient rewrites)

    node_rewriters = rewrites.query("fast", exclude=exclude)
    stabilize = []
    if "stabilize" not in exclude:
        # SPEC 3.1: the one stage that may change a result, only toward the exact value
        stabilize = [EquilibriumRewriter(
            node_rewriters + rewrites.query("stabilize", exclude=exclude), name="stabilize"),
            MergeRewriter()]
    return SequentialRewriter(
        MergeRewriter(),
        EquilibriumRewriter(node_rewriters, name="canonicalize"),
        MergeRewriter(),
        *stabilize,
        *rewrites.query("fusion", exclude=exclude),
        MergeRewriter(),
        *rewrites.query("inplace", exclude=exclude),
        name="fast",
    )


def rewrite_graph(fgraph, exclude=()):
    """Run the fast pipeline on ``fgraph`` in place; returns the number of changes."""
    return fast_pipeline(exclude).rewrite(fgraph)


@register_rewrite("remove_gradient_modifiers", "fast", "canonicalize", position=5)
@node_rewriter([GradientModifier])
def remove_gradient_modifiers(fgraph, node):
    """``zero_grad(x)``, ``grad_clip(x, ...)`` and the like are ``x`` once grads are built."""
    return [node.inputs[0]]


# switch_to_ifelse and ifelse_constant_condition are "fast" rewrites of any graph:
# registered with this module's, whoever imports it first (nbgraph.tensor loads
# the ifelse module on first use only)
importlib.import_module("nbgraph.tensor.ifelse")
