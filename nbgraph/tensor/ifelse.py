"""``ifelse``: the lazy conditional.

``ifelse(cond, then, else_)`` is ``then`` when the scalar ``cond`` is
nonzero and ``else_`` otherwise; ``then`` and ``else_`` may be lists of
variables (paired one to one).  Unlike the elementwise :func:`switch`, which
computes both of its operands, ``ifelse`` computes only the branch it takes:
its Op declares its branches lazy (``lazy_inputs``/``needed_inputs``, see
:mod:`nbgraph.linkers.schedule`), so every linker runs the nodes that only
the untaken branch needs not at all.

>>> import nbgraph as ng, nbgraph.tensor as nt
>>> a, b = nt.dscalar("a"), nt.dscalar("b")
>>> f = ng.function([a, b], ifelse(b > 0, nt.log(b), a * 2), linker="py")
>>> float(f(1.0, 1.0)), float(f(5.0, -1.0))  # log(-1) is never computed
(0.0, 10.0)

Besides :func:`ifelse` the module registers two rewrites of the "fast"
pipeline: an ``ifelse`` whose condition is a constant becomes the branch it
takes, and a scalar ``switch`` whose branch needs array work used nowhere
else becomes an ``ifelse`` (only where results cannot change: condition and
both branches 0-d, both branches of the output's dtype).
"""

from collections.abc import Sequence

import numpy as np

from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.core.op import Op
from nbgraph.core.rewriting import GraphRewriter, node_rewriter
from nbgraph.tensor.basic import Shape, ShapeI
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.rewriting import register_rewrite, rewrites
from nbgraph.tensor.scalar_logic import Switch
from nbgraph.tensor.type import FLOAT_DTYPES, TensorType
from nbgraph.tensor.variable import as_tensor_variable, constant
from nbgraph.tensor.grad_rules import zero_gradient

__all__ = ["ifelse", "IfElse"]

Branch = Variable | Sequence[Variable]


class IfElse(Op):
    """The Op of :func:`ifelse` with ``n_outs`` outputs.

    Inputs: the condition, then the ``n_outs`` values of the "then" branch,
    then the ``n_outs`` of the "else" branch.  Each output is a copy of the
    chosen value, unless ``as_view``: then it is the chosen value itself (a
    view of either branch, declared in ``view_map``).  The ``ifelse_view``
    rewrite sets ``as_view`` where no one else can see that memory: every
    branch value is an intermediate that this node alone reads.
    """

    __props__ = ("n_outs", "as_view")

    def __init__(self, n_outs: int, as_view: bool = False):
        if int(n_outs) < 1:
            raise ValueError("IfElse needs at least one output, got n_outs=%r" % (n_outs,))
        self.n_outs = int(n_outs)
        self.as_view = bool(as_view)
        if self.as_view:
            n = self.n_outs
            self.view_map = {j: [1 + j, 1 + n + j] for j in range(n)}

    def make_node(self, cond, *branches):
        n = self.n_outs
        if len(branches) != 2 * n:
            raise TypeError("IfElse(%d) takes a condition and %d branch values, got %d" % (
                n, 2 * n, len(branches)))
        cond = _condition(cond)
        thens = [as_tensor_variable(v) for v in branches[:n]]
        elses = [as_tensor_variable(v) for v in branches[n:]]
        outputs = []
        for i, (t, e) in enumerate(zip(thens, elses, strict=True)):
            t, e = _match_constant(t, e), _match_constant(e, t)
            thens[i], elses[i] = t, e
            if t.type.dtype != e.type.dtype or t.type.ndim != e.type.ndim:
                raise TypeError(
                    "ifelse: then_branch[%d] (%r, %r) and else_branch[%d] (%r, %r) must have "
                    "the same dtype and number of dimensions" % (i, t, t.type, i, e, e.type))
            shape = tuple(a if a == b else None
                          for a, b in zip(t.type.shape, e.type.shape, strict=True))
            outputs.append(TensorType(t.type.dtype, shape)())
        return Apply(self, [cond] + thens + elses, outputs)

    def lazy_inputs(self, node):
        return range(1, 1 + 2 * self.n_outs)

    def needed_inputs(self, node, values):
        n = self.n_outs
        return range(1, 1 + n) if values[0] else range(1 + n, 1 + 2 * n)

    def perform(self, node, inputs, output_storage):
        n = self.n_outs
        chosen = inputs[1:1 + n] if inputs[0] else inputs[1 + n:]
        for cell, value, out in zip(output_storage, chosen, node.outputs, strict=True):
            if value is None:  # pragma: no cover - a scheduler that ignored needed_inputs
                raise ValueError("ifelse: the taken branch was not computed")
            if self.as_view and value.dtype == out.type.dtype:
                cell[0] = value
            else:
                cell[0] = np.array(value, dtype=out.type.dtype, copy=True)

    def make_py_thunk(self, node, in_cells, out_cells):
        """A lean thunk for the Python linker (what perform does, with fewer steps)."""
        if self.n_outs != 1 or not self.as_view:
            return None
        cond, then_cell, else_cell = in_cells
        (out,) = out_cells
        dtype = node.outputs[0].type.numpy_dtype

        def thunk():
            value = then_cell[0] if cond[0] else else_cell[0]
            out[0] = value if value.dtype == dtype else np.array(value, dtype=dtype)
        return thunk

    def grad(self, inputs, output_grads):
        n = self.n_outs
        cond, thens, elses = inputs[0], inputs[1:1 + n], inputs[1 + n:]
        gs = []
        for g, t in zip(output_grads, thens, strict=True):
            if t.type.dtype not in FLOAT_DTYPES:
                gs.append(None)
            else:
                gs.append(g if g.type.dtype == t.type.dtype else g.astype(t.type.dtype))
        idx = [i for i, g in enumerate(gs) if g is not None]
        then_grads = [zero_gradient(t) for t in thens]  # replaced below where gs[i] is not None
        else_grads = [zero_gradient(e) for e in elses]
        if idx:
            k = len(idx)
            zeros_t = [thens[i].type.grad_zeros_like(thens[i]) for i in idx]
            zeros_e = [elses[i].type.grad_zeros_like(elses[i]) for i in idx]
            g_sel = [gs[i] for i in idx]
            gt = _as_list(IfElse(k)(cond, *(g_sel + zeros_t)))
            ge = _as_list(IfElse(k)(cond, *(zeros_e + g_sel)))
            for i, a, b in zip(idx, gt, ge, strict=True):
                then_grads[i], else_grads[i] = a, b
        # the condition picks a branch: piecewise constant, a zero gradient (as in Theano)
        return [zero_gradient(cond)] + then_grads + else_grads

    def infer_shape(self, node, input_shapes):
        n = self.n_outs
        cond = node.inputs[0]
        then_shapes, else_shapes = input_shapes[1:1 + n], input_shapes[1 + n:]
        pending = []  # (output, dim, then entry, else entry)
        result = [list(s) for s in then_shapes]
        for j, (ts, es, out) in enumerate(zip(then_shapes, else_shapes, node.outputs, strict=True)):
            for d, (a, b) in enumerate(zip(ts, es, strict=True)):
                if out.type.shape[d] is None and a is not b:
                    pending.append((j, d, a, b))
        if pending:
            chosen = _as_list(IfElse(len(pending))(
                cond, *[p[2] for p in pending], *[p[3] for p in pending]))
            for (j, d, _, _), entry in zip(pending, chosen, strict=True):
                result[j][d] = entry
        return [tuple(s) for s in result]

    def do_constant_folding(self, node):
        return False  # the constant-condition rewrite below picks the branch instead

    def __str__(self):
        return "IfElse{%d%s}" % (self.n_outs, ", view" if self.as_view else "")


def _as_list(out):
    return out if isinstance(out, list) else [out]


def _condition(cond):
    try:
        cond = as_tensor_variable(cond)
    except TypeError as exc:
        raise TypeError("ifelse: condition must be a scalar tensor, got %r" % (cond,)) from exc
    if not isinstance(cond.type, TensorType) or cond.type.ndim != 0:
        raise TypeError("ifelse: condition must be a scalar (0-d tensor), got %r of type %r"
                        % (cond, cond.type))
    return cond


def _match_constant(value, other):
    """A constant branch made from a Python number takes the other branch's dtype."""
    if isinstance(value, Constant) and value.type.ndim == 0 and \
            value.type.dtype != other.type.dtype and not isinstance(other, Constant):
        data = np.asarray(value.data)
        cast = data.astype(other.type.dtype)
        if cast == data:
            return constant(cast)
    return value


def ifelse(condition, then_branch: Branch, else_branch: Branch, name=None):
    """``then_branch`` when the scalar ``condition`` is nonzero, else ``else_branch``;
    only the chosen branch is computed.

    Branches are Variables (or values) or equal-length lists of them, pairwise
    of one dtype and ndim; the result has the same structure (a Variable or a
    list).  ``name`` names the outputs.
    """
    single = not isinstance(then_branch, (list, tuple))
    thens = [then_branch] if single else list(then_branch)
    if isinstance(else_branch, (list, tuple)) == single:
        raise TypeError("ifelse: then_branch and else_branch must both be single values or "
                        "both lists")
    elses = [else_branch] if single else list(else_branch)
    if len(thens) != len(elses):
        raise ValueError("ifelse: then_branch has %d values and else_branch %d" % (
            len(thens), len(elses)))
    if not thens:
        raise ValueError("ifelse: the branches are empty")
    outs = _as_list(IfElse(len(thens))(condition, *thens, *elses))
    if name is not None:
        for i, out in enumerate(outs):
            out.name = name if single else "%s[%d]" % (name, i)
    return outs[0] if single else outs


# -- rewrites ---------------------------------------------------------------

class IfElseView(GraphRewriter):
    """``IfElse`` returns the chosen value without a copy where that is invisible.

    Safe when every branch value is an intermediate that the IfElse node alone
    reads and whose memory nothing else can reach (the in-place stage's own
    test, :func:`nbgraph.tensor.inplace.destroyable`): then the output may be
    that memory, and even be overwritten later.
    """

    name = "ifelse_view"

    def apply(self, fgraph):
        from nbgraph.tensor.inplace import destroyable

        changes = 0
        memo = {}
        for node in fgraph.toposort():
            op = node.op
            if not isinstance(op, IfElse) or op.as_view or node not in fgraph.apply_nodes:
                continue
            if not all(destroyable(fgraph, node, v, memo) for v in node.inputs[1:]):
                continue
            new = Apply(IfElse(op.n_outs, as_view=True), list(node.inputs),
                        [o.type() for o in node.outputs])
            for old, out in zip(node.outputs, new.outputs, strict=True):
                out.name = old.name
                if old in fgraph.variables:
                    fgraph.replace(old, out, reason=self.name)
            changes += 1
        return changes


rewrites.register("ifelse_view", IfElseView(), "inplace", position=210)


@register_rewrite("ifelse_constant_condition", "fast", "canonicalize", position=15)
@node_rewriter([IfElse])
def ifelse_constant_condition(fgraph, node):
    """``ifelse`` of a constant condition is the branch it takes."""
    cond = node.inputs[0]
    if not isinstance(cond, Constant):
        return None
    n = node.op.n_outs
    chosen = node.inputs[1:1 + n] if np.asarray(cond.data) else node.inputs[1 + n:]
    return list(chosen)


#: A branch is worth skipping when a node it alone needs reads at least this
#: many elements (statically known), or an array of unknown size.
SWITCH_TO_IFELSE_MIN_SIZE = 64


def _exclusive_work(fgraph, branch, switch_node, limit=200):
    """True when a node used only by ``branch`` of ``switch_node`` reads an array.

    Looks at most ``limit`` nodes up from the branch (a bounded walk, so a graph
    with many switches does not cost quadratic time)."""
    if branch.owner is None:
        return False
    nodes = _nodes_above(branch.owner, limit)
    return any(_reads_an_array(node) for node in _exclusive_nodes(fgraph, nodes, switch_node))


def _nodes_above(start, limit):
    """``start`` and the nodes above it, at most ``limit`` of them (depth first)."""
    nodes, stack, seen = [], [start], set()
    while stack and len(nodes) < limit:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        stack.extend(i.owner for i in node.inputs if i.owner is not None)
    return nodes


def _exclusive_nodes(fgraph, nodes, switch_node):
    """The ``nodes`` whose outputs only ``switch_node`` or other exclusive nodes read."""
    exclusive = set()
    changed = True
    while changed:  # a node is exclusive when only exclusive nodes (or the switch) read it
        changed = False
        for node in nodes:
            if node in exclusive:
                continue
            if all(client is switch_node or client in exclusive
                   for out in node.outputs for client, _ in fgraph.clients.get(out, ())):
                exclusive.add(node)
                changed = True
    return exclusive


def _reads_an_array(node):
    """True when ``node`` reads the values (not only the shape) of an array of at
    least SWITCH_TO_IFELSE_MIN_SIZE elements, or of unknown size."""
    if isinstance(node.op, (Shape, ShapeI)):
        return False  # reads only an array's metadata
    for inp in node.inputs:
        if isinstance(inp.type, TensorType) and inp.type.ndim > 0:
            shape = inp.type.shape
            if None in shape or int(np.prod(shape)) >= SWITCH_TO_IFELSE_MIN_SIZE:
                return True
    return False


@register_rewrite("switch_to_ifelse", "fast", "canonicalize", position=16)
@node_rewriter([Elemwise])
def switch_to_ifelse(fgraph, node):
    """A scalar ``switch`` whose branch needs array work of its own becomes ``ifelse``.

    Safe: the condition and both branches are 0-d and of the output's dtype,
    so picking the value lazily gives the same result (only the work, and
    errors or warnings of the untaken branch, go away).
    """
    if not isinstance(node.op.scalar_op, Switch) or getattr(node.op, "inplace_pattern", None):
        return None
    cond, a, b = node.inputs
    out = node.outputs[0]
    if any(not isinstance(v.type, TensorType) or v.type.ndim != 0 for v in (cond, a, b, out)):
        return None
    if a.type.dtype != out.type.dtype or b.type.dtype != out.type.dtype or a is b:
        return None
    if not (_exclusive_work(fgraph, a, node) or _exclusive_work(fgraph, b, node)):
        return None
    return [IfElse(1)(cond, a, b)]
