"""Rewrites moving per-step work of a Scan into whole-sequence operations.

* ``scan_push_out_seq``: a matrix product of a sequence row by a
  non-sequence is computed once over the whole sequence, before the loop, and
  read row by row (``x_t W`` for every ``t`` becomes one product of the
  ``(steps * batch, n)`` matrix with ``W``).  A matrix product over more rows
  may round differently in the last bits, as NumPy's own products of
  different shapes do.  (Elementwise work stays in the loop: moving it out
  would save one small kernel call per step at the price of a whole-sequence
  temporary.)
* ``scan_push_out_sum``: an accumulator ``acc_t = acc_{t-1} + e_t`` whose
  final value alone is read (a gradient loop's sums over the steps) becomes
  the stacked ``e_t`` summed after the loop; when ``e_t = p_t^T q_t`` the sum
  is one matrix product of the stacked ``p`` and ``q``.  The sum is taken in
  another order than the loop's, so the result may differ in the last bits.

Neither applies to a loop with a stop condition (its number of steps is known
only while it runs).

Both are registered under the tag ``"scan_pushout"`` only, not in the "fast"
pipeline: measured on the Elman benchmark (2 cores, loaded, OpenBLAS), the
per-step products they remove cost less than the whole-sequence products,
reshapes and stacked temporaries they add.  CPU ms per call, best of 5, one
process, after :mod:`nbgraph.tensor.blas_threads`: 21.6-23.6 without, 32-41
with ``scan_push_out_seq``, 70-80 with ``scan_push_out_sum``, 78-111 with both
(their whole-sequence products, 6.5 million multiply-adds, exceeded the
one-thread limit then, 2**22, and split; with the limit at 2**23: 16.2-23.0
without, 18.1-25.5, 56-107 and 73-88); with BLAS on one thread for every product
(OPENBLAS_NUM_THREADS=1) still 17.8-18.7 without against 20.3-22.2, 23.6-27.4
and 29.9.  Run them with
``EquilibriumRewriter(rewrites.query("scan_pushout")).rewrite(fgraph)``.
"""

from nbgraph.core.graph import Constant, clone_replace
from nbgraph.core.rewriting import node_rewriter
from nbgraph.tensor.basic import Dot, dot, reshape, shape_i
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.rewriting import register_rewrite
from nbgraph.tensor.scan.op import Scan
from nbgraph.tensor.scan.rewriting import rebuild

__all__ = ["scan_push_out_seq", "scan_push_out_sum"]


def _push(inner_node, full, outer_ns):
    """The whole-sequence value of ``inner_node``'s outputs (a matrix product of a
    sequence row by a non-sequence), or None."""
    op = inner_node.op
    ins = inner_node.inputs
    if isinstance(op, Dot) and ins[0] in full and ins[1] in outer_ns:
        x, y = full[ins[0]], outer_ns[ins[1]]
        if y.type.ndim != 2:
            return None
        if x.type.ndim == 2:  # rows are vectors: one matrix product
            return [dot(x, y)]
        if x.type.ndim == 3:  # rows are matrices: stack them, multiply, unstack
            flat = reshape(x, (-1, shape_i(x, 2)))
            out = reshape(dot(flat, y), (shape_i(x, 0), shape_i(x, 1), shape_i(y, 1)))
            return [out]
    return None


@register_rewrite("scan_push_out_seq", "scan_pushout", position=32)
@node_rewriter([Scan])
def scan_push_out_seq(fgraph, node):
    """Compute sequence-only work over whole sequences, before the loop."""
    op = node.op
    if op.until or op.n_seqs == 0:
        return None
    inner = op.fgraph
    n = node.inputs[0]
    full = {v: s[:n] for v, s in zip(op.inner_seqs(), op.outer_seqs(node), strict=True)}
    outer_ns = dict(zip(op.inner_non_seqs(), op.outer_non_seqs(node), strict=True))
    pushed = _push_nodes(inner, full, outer_ns)
    if not pushed:
        return None
    frontier = _frontier(inner, pushed)
    if not frontier:
        return None
    rows = [v.type(name=v.name) for v in frontier]
    outs = clone_replace(list(inner.outputs), list(zip(frontier, rows, strict=True)))
    taps = [v for g in op.inner_state_taps() for v in g]
    new_op = rebuild(op, list(op.inner_seqs()) + rows + taps + list(op.inner_non_seqs()),
                     outs, op.n_seqs + len(rows), op.state_taps, op.n_nit_sot, op.store)
    return new_op.make_node(n, *(list(op.outer_seqs(node)) + [full[v] for v in frontier] +
                                 list(op.outer_inits(node)) +
                                 list(op.outer_non_seqs(node)))).outputs


def _push_nodes(inner, full, outer_ns):
    """The inner nodes whose whole-sequence value :func:`_push` gives, in order;
    ``full`` (inner variable -> whole-sequence value) gains their outputs."""
    pushed = []
    for inner_node in inner.toposort():
        ins = inner_node.inputs
        if not any(i in full for i in ins) or inner_node.op.inner_graphs():
            continue
        if not all(i in full or i in outer_ns or isinstance(i, Constant) for i in ins):
            continue
        outs = _push(inner_node, full, outer_ns)
        if outs is None or not _stacks_of(inner_node.outputs, outs):
            continue
        for old, new in zip(inner_node.outputs, outs, strict=True):
            full[old] = new
        pushed.append(inner_node)
    return pushed


def _stacks_of(olds, news):
    """True when each of ``news`` can hold every step's value of its ``olds``."""
    return all(new.type.dtype == old.type.dtype and new.type.ndim == old.type.ndim + 1
               for old, new in zip(olds, news, strict=True))


def _frontier(inner, pushed):
    """The pushed nodes' outputs the loop still reads (or returns)."""
    pushed_set = set(pushed)
    frontier = []
    for var in (v for n_ in pushed for v in n_.outputs):
        if any(c == "output" or c not in pushed_set for c, _ in inner.clients.get(var, [])):
            frontier.append(var)
    return frontier


def _accumulation(op, i):
    """For state ``i``: the added term ``e_t`` when its body is ``acc + e_t`` with
    ``acc`` read nowhere else, else None."""
    if op.state_taps[i] != (-1,) or op.store[i] != "final":
        return None
    (acc,) = op.inner_state_taps()[i]
    out = op.fgraph.outputs[i]
    node = out.owner
    if node is None or not isinstance(node.op, Elemwise) or node.op.inplace_pattern or \
            str(node.op.scalar_op) != "add" or len(node.inputs) != 2:
        return None
    if out.type != acc.type or op.fgraph.outputs.count(out) != 1:
        return None
    if [c for c, _ in op.fgraph.clients.get(acc, [])] != [node]:
        return None
    if any(c != "output" for c, _ in op.fgraph.clients.get(out, [])):
        return None  # the running sum is read inside the body
    a, b = node.inputs
    term = b if a is acc else a if b is acc else None
    if term is None or term is acc or term.type != acc.type:
        return None
    return term


def _product_parts(term, seq_rows):
    """(p, q) when ``term`` is ``dot(p.T, q)`` of two matrices, else None."""
    node = term.owner
    if node is None or not isinstance(node.op, Dot):
        return None
    left, q = node.inputs
    lnode = left.owner
    if lnode is None or not isinstance(lnode.op, DimShuffle) or lnode.op.new_order != (1, 0) \
            or q.type.ndim != 2:
        return None
    return lnode.inputs[0], q


@register_rewrite("scan_push_out_sum", "scan_pushout", position=31)
@node_rewriter([Scan])
def scan_push_out_sum(fgraph, node):
    """Sum an accumulator's terms after the loop (see the module docstring)."""
    op = node.op
    if op.until:
        return None
    found = [(i, _accumulation(op, i)) for i in range(op.n_states)]
    found = [(i, t) for i, t in found if t is not None]
    if not found:
        return None
    n = node.inputs[0]
    seq_full = {v: s[:n] for v, s in zip(op.inner_seqs(), op.outer_seqs(node), strict=True)}
    dropped = {i for i, _ in found}
    keep = [i for i in range(op.n_states) if i not in dropped]
    plans, new_nit = _sum_plans(found, seq_full)
    new_outs = _loop_without(node, keep, new_nit)
    inits = op.outer_inits(node)
    nst_new = len(keep)
    base = nst_new + op.n_nit_sot
    values = dict(seq_full)
    values.update((var, new_outs[base + k]) for k, var in enumerate(new_nit))
    result = {}
    for j, i in enumerate(keep):
        result[node.outputs[i]] = new_outs[j]
    for k in range(op.n_nit_sot):
        result[node.outputs[op.n_states + k]] = new_outs[nst_new + k]
    for i, plan in plans:
        total = _summed(inits[i][-1], plan, values)
        old = node.outputs[i]
        if total.type.dtype != old.type.dtype:
            return None
        result[old] = old.type.filter_variable(total)
    return result


def _loop_without(node, keep, new_nit):
    """The outputs of Scan ``node`` rebuilt with only the states ``keep`` and, after
    its outputs without taps, every step's value of ``new_nit``."""
    op = node.op
    inner = op.fgraph
    taps = op.inner_state_taps()
    outs = ([inner.outputs[i] for i in keep] + list(inner.outputs[op.n_states:op.n_outs]) +
            new_nit)
    inputs = list(op.inner_seqs()) + [v for i in keep for v in taps[i]] + \
        list(op.inner_non_seqs())
    store = [op.store[i] for i in keep] + list(op.store[op.n_states:]) + ["all"] * len(new_nit)
    new_op = rebuild(op, inputs, outs, op.n_seqs, [op.state_taps[i] for i in keep],
                     op.n_nit_sot + len(new_nit), store)
    inits = op.outer_inits(node)
    return new_op.make_node(node.inputs[0], *(list(op.outer_seqs(node)) +
                                              [inits[i] for i in keep] +
                                              list(op.outer_non_seqs(node)))).outputs


def _sum_plans(found, seq_full):
    """``(plans, new_nit)``: per accumulator ``(state, ("dot", p, q))`` or
    ``(state, ("sum", e))``, where each of ``p``, ``q``, ``e`` is a sequence row
    (in ``seq_full``) or an inner variable to store at every step (``new_nit``)."""
    new_nit = []          # inner variables stored per step
    plans = []

    def slot(var):
        if var not in seq_full and var not in new_nit:
            new_nit.append(var)
        return var

    for i, term in found:
        parts = _product_parts(term, seq_full)
        if parts is not None:
            plans.append((i, ("dot", slot(parts[0]), slot(parts[1]))))
        else:
            plans.append((i, ("sum", slot(term))))
    return plans, new_nit


def _summed(init, plan, values):
    """``init`` plus the sum over the steps that ``plan`` describes, from ``values``
    (each planned variable's value at every step, stacked)."""
    from nbgraph.tensor.math import sum as tsum

    if plan[0] == "dot":
        p_all, q_all = values[plan[1]], values[plan[2]]
        p2 = reshape(p_all, (-1, shape_i(p_all, p_all.type.ndim - 1)))
        q2 = reshape(q_all, (-1, shape_i(q_all, q_all.type.ndim - 1)))
        return init + dot(p2.T, q2)
    return init + tsum(values[plan[1]], axis=0)
