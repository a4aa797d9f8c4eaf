"""Rewrites of Scan nodes, registered in the tensor pipeline (``rewrite="fast"``).

* ``scan_hoist_invariants``: inner nodes that read only non-sequences and
  constants are computed once, before the loop, and passed in.
* ``scan_last_step``: an output read only as ``out[-1]`` keeps just the last
  step (no stacked storage); an unread state keeps only its final value.
* ``scan_row_shapes``: sizes of sequence rows and state taps the body reads
  (gradients' broadcasting checks) come from the outer values, once; what
  they alone decide is then hoisted too.
* ``scan_drop_unused``: outputs nobody reads that the loop does not feed back,
  and inner inputs the body does not read, are removed.
* ``scan_merge`` (a graph stage, before fusion): loops with the same number of
  steps (the same ``n_steps`` variable), no stop condition and no dependence
  on each other become one loop; identical outer inputs are then read once.

None of them changes a result: the same steps compute the same values.
(The inner graph itself gets the whole "fast" pipeline when it is linked.)
"""

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Constant, ancestors, clone_replace
from nbgraph.core.rewriting import GraphRewriter, node_rewriter
from nbgraph.tensor.rewriting import register_rewrite, rewrites
from nbgraph.tensor.scan.op import Scan, constant_int
from nbgraph.tensor.subtensor import Subtensor

__all__ = ["ScanMerge", "rebuild"]


def rebuild(op, inner_inputs, inner_outputs, n_seqs, state_taps, n_nit_sot, store):
    """A Scan like ``op`` over a new inner graph (cloned from the given variables)."""
    fgraph = FunctionGraph(list(inner_inputs), list(inner_outputs), clone=True, name=op.name)
    new = Scan(fgraph, n_seqs, state_taps, n_nit_sot, until=op.until, store=store,
               truncate_gradient=op.truncate_gradient, name=op.name)
    if op.__dict__.get("_canonical"):
        new.__dict__["_canonical"] = True  # a part of a canonical body is canonical
    return new


@register_rewrite("scan_canonicalize_inner", "fast", "scan", position=29)
@node_rewriter([Scan])
def scan_canonicalize_inner(fgraph, node):
    """Canonicalise the loop body (the "fast" node rewrites, to a fixed point) once, so
    the rewrites below see its simplified form (sizes read from inputs, say)."""
    from nbgraph.core.rewriting import EquilibriumRewriter, MergeRewriter, SequentialRewriter

    op = node.op
    if op.__dict__.get("_canonical"):
        return None
    op.__dict__["_canonical"] = True
    inner = FunctionGraph(op.fgraph.inputs, op.fgraph.outputs, clone=True, name=op.name)
    changes = SequentialRewriter(MergeRewriter(),
                                 EquilibriumRewriter(rewrites.query("fast"))).rewrite(inner)
    if not changes:
        return None
    new_op = Scan(inner, op.n_seqs, op.state_taps, op.n_nit_sot, until=op.until,
                  store=op.store, truncate_gradient=op.truncate_gradient, name=op.name)
    new_op.__dict__["_canonical"] = True
    return new_op.make_node(*node.inputs).outputs


def _is_last_row(client):
    node, i = client
    if node == "output" or i != 0 or not isinstance(node.op, Subtensor):
        return False
    return node.op.idx_list == ("i",) and constant_int(node.inputs[1]) == -1


@register_rewrite("scan_last_step", "fast", "scan", position=30)
@node_rewriter([Scan])
def scan_last_step(fgraph, node):
    """Store only the last step of outputs read only as ``out[-1]``."""
    op = node.op
    store = list(op.store)
    replace = {}
    for j, out in enumerate(node.outputs):
        if store[j] != "all":
            continue
        clients = fgraph.clients.get(out, [])
        if not clients and j < op.n_states:
            store[j] = "final"
        elif clients and all(_is_last_row(c) for c in clients):
            store[j] = "last"
            replace[j] = [c[0].outputs[0] for c in clients]
    if tuple(store) == op.store:
        return None
    new_op = Scan(op.fgraph, op.n_seqs, op.state_taps, op.n_nit_sot, until=op.until,
                  store=store, truncate_gradient=op.truncate_gradient, name=op.name)
    new_outs = new_op.make_node(*node.inputs).outputs
    result = {}
    for j, (old, new) in enumerate(zip(node.outputs, new_outs, strict=True)):
        if j in replace:
            for sub in replace[j]:
                result[sub] = new
        elif store[j] == op.store[j]:
            result[old] = new
    return result


@register_rewrite("scan_drop_unused", "fast", "scan", position=30)
@node_rewriter([Scan])
def scan_drop_unused(fgraph, node):
    """Remove unread nit-sot outputs and inner inputs the loop body never reads."""
    op = node.op
    inner = op.fgraph
    nst, ns = op.n_states, op.n_seqs
    keep_nit = [k for k in range(op.n_nit_sot) if fgraph.clients.get(node.outputs[nst + k])]
    outs = list(inner.outputs[:nst]) + [inner.outputs[nst + k] for k in keep_nit] + \
        ([inner.outputs[-1]] if op.until else [])
    used = set(ancestors(outs))
    keep_seq = [k for k in range(ns) if inner.inputs[k] in used]
    non_seqs = op.inner_non_seqs()
    keep_ns = [k for k, v in enumerate(non_seqs) if v in used]
    if len(keep_nit) == op.n_nit_sot and len(keep_seq) == ns and len(keep_ns) == len(non_seqs):
        return None
    if not keep_nit and nst == 0:
        return None  # nothing left to compute; leave the (unread) node to be pruned
    new_outs = _rebuilt_reading(node, outs, keep_seq, keep_ns, keep_nit)
    result = {}
    for j in range(nst):
        result[node.outputs[j]] = new_outs[j]
    for pos, k in enumerate(keep_nit):
        result[node.outputs[nst + k]] = new_outs[nst + pos]
    return result


def _rebuilt_reading(node, outs, keep_seq, keep_ns, keep_nit):
    """The outputs of Scan ``node`` rebuilt to compute ``outs`` (its states', the kept
    nit-sot outputs' and the condition) from the sequences ``keep_seq`` and the
    non-sequences ``keep_ns`` only."""
    op = node.op
    inner, nst = op.fgraph, op.n_states
    non_seqs = op.inner_non_seqs()
    taps = [v for group in op.inner_state_taps() for v in group]
    new_inputs = [inner.inputs[k] for k in keep_seq] + taps + [non_seqs[k] for k in keep_ns]
    store = list(op.store[:nst]) + [op.store[nst + k] for k in keep_nit]
    new_op = rebuild(op, new_inputs, outs, len(keep_seq), op.state_taps, len(keep_nit), store)
    outer_seqs, outer_ns = op.outer_seqs(node), op.outer_non_seqs(node)
    return new_op.make_node(node.inputs[0], *([outer_seqs[k] for k in keep_seq] +
                                              list(op.outer_inits(node)) +
                                              [outer_ns[k] for k in keep_ns])).outputs


@register_rewrite("scan_hoist_invariants", "fast", "scan", position=30)
@node_rewriter([Scan])
def scan_hoist_invariants(fgraph, node):
    """Compute once, before the loop, what the body computes from non-sequences only."""
    op = node.op
    inner = op.fgraph
    invariant = set(op.inner_non_seqs())
    neutral = set()  # computed from constants alone: left in the body
    hoisted = []
    for inner_node in inner.toposort():
        ins = inner_node.inputs
        if all(isinstance(i, Constant) or i in neutral for i in ins):
            neutral.update(inner_node.outputs)
        elif all(i in invariant or i in neutral or isinstance(i, Constant) for i in ins) and \
                not inner_node.op.inner_graphs():
            invariant.update(inner_node.outputs)
            hoisted.append(inner_node)
    if not hoisted:
        return None
    hoisted_set = set(hoisted)
    frontier = []
    for var in (v for n in hoisted for v in n.outputs):
        clients = inner.clients.get(var, [])
        if any(c == "output" or c not in hoisted_set for c, _ in clients):
            frontier.append(var)
    if not frontier:
        return None
    outer_map = list(zip(op.inner_non_seqs(), op.outer_non_seqs(node), strict=True))
    outer_values = clone_replace(frontier, outer_map)
    placeholders = [v.type(name=v.name) for v in frontier]
    new_outs = clone_replace(list(inner.outputs), list(zip(frontier, placeholders, strict=True)))
    new_op = rebuild(op, list(inner.inputs) + placeholders, new_outs, op.n_seqs, op.state_taps,
                     op.n_nit_sot, op.store)
    return new_op.make_node(*(list(node.inputs) + list(outer_values))).outputs


def _row_sources(op, node):
    """Inner inputs whose shape is the same at every step, with the outer value whose
    shape (from dimension 1 on) it is: sequence rows (rows of one array) and the taps of
    tensor states (the loop checks every step's state against the initial rows)."""
    sources = dict(zip(op.inner_seqs(), op.outer_seqs(node), strict=True))
    for i, (taps, init) in enumerate(zip(op.inner_state_taps(), op.outer_inits(node),
                                         strict=True)):
        if not op.is_opaque_state(i):
            sources.update((v, init) for v in taps)
    return sources


@register_rewrite("scan_row_shapes", "fast", "scan", position=30)
@node_rewriter([Scan])
def scan_row_shapes(fgraph, node):
    """Read the sizes of sequence rows and state taps from the outer values, once: the
    body's ``shape_i`` of them (gradients' broadcasting checks) is the same at every
    step, and then loop-invariant work :func:`scan_hoist_invariants` moves out."""
    from nbgraph.tensor.basic import ShapeI, shape_i

    op = node.op
    inner = op.fgraph
    sources = _row_sources(op, node)
    found = {}
    for inner_node in inner.toposort():
        if isinstance(inner_node.op, ShapeI) and inner_node.inputs[0] in sources:
            found.setdefault((inner_node.inputs[0], inner_node.op.i), []).append(
                inner_node.outputs[0])
    if not found:
        return None
    placeholders, outer_values, replace = [], [], []
    for (var, axis), sizes in found.items():
        size = sizes[0].type(name="%s.shape[%d]" % (var.name or "row", axis))
        placeholders.append(size)
        outer_values.append(shape_i(sources[var], axis + 1))
        replace += [(v, size) for v in sizes]
    new_outs = clone_replace(list(inner.outputs), replace)
    new_op = rebuild(op, list(inner.inputs) + placeholders, new_outs, op.n_seqs, op.state_taps,
                     op.n_nit_sot, op.store)
    return new_op.make_node(*(list(node.inputs) + outer_values)).outputs


def _independent(a, b):
    """True when neither node reads an output of the other."""
    return not (set(a.outputs) & set(ancestors(list(b.inputs)))
                or set(b.outputs) & set(ancestors(list(a.inputs))))


def merge_scan_nodes(a, b):
    """The outputs of one Scan doing the work of nodes ``a`` and ``b`` (same n_steps),
    as two lists: those replacing ``a``'s outputs, then ``b``'s."""
    pa, pb = a.op, b.op
    ia, ib = pa.fgraph, pb.fgraph
    fa, fb = FunctionGraph(ia.inputs, ia.outputs, clone=True), \
        FunctionGraph(ib.inputs, ib.outputs, clone=True)
    pa2 = Scan(fa, pa.n_seqs, pa.state_taps, pa.n_nit_sot, store=pa.store)
    pb2 = Scan(fb, pb.n_seqs, pb.state_taps, pb.n_nit_sot, store=pb.store)

    def taps(p):
        return [v for g in p.inner_state_taps() for v in g]

    inputs = (list(pa2.inner_seqs()) + list(pb2.inner_seqs()) + taps(pa2) + taps(pb2) +
              list(pa2.inner_non_seqs()) + list(pb2.inner_non_seqs()))
    nsa, nsb = pa.n_states, pb.n_states
    outputs = (fa.outputs[:nsa] + fb.outputs[:nsb] + fa.outputs[nsa:] + fb.outputs[nsb:])
    store = pa.store[:nsa] + pb.store[:nsb] + pa.store[nsa:] + pb.store[nsb:]
    name = "%s+%s" % (pa.name or "scan", pb.name or "scan")
    merged = Scan(FunctionGraph(inputs, outputs, clone=True, name=name),
                  pa.n_seqs + pb.n_seqs, pa.state_taps + pb.state_taps,
                  pa.n_nit_sot + pb.n_nit_sot, store=store,
                  truncate_gradient=pa.truncate_gradient, name=name)
    outer = ([a.inputs[0]] + list(pa.outer_seqs(a)) + list(pb.outer_seqs(b)) +
             list(pa.outer_inits(a)) + list(pb.outer_inits(b)) +
             list(pa.outer_non_seqs(a)) + list(pb.outer_non_seqs(b)))
    outs = merged.make_node(*outer).outputs
    out_a = outs[:nsa] + outs[nsa + nsb:nsa + nsb + pa.n_nit_sot]
    out_b = outs[nsa:nsa + nsb] + outs[nsa + nsb + pa.n_nit_sot:]
    return out_a, out_b


def dedupe_inputs(node):
    """Outputs of an equivalent Scan reading each repeated outer sequence or
    non-sequence once, or None when no outer input repeats."""
    op = node.op
    inner = op.fgraph
    replace = []
    keep_seq, keep_ns = [], []
    first = {}
    for k, (outer, var) in enumerate(zip(op.outer_seqs(node), op.inner_seqs(), strict=True)):
        key = ("seq", outer)
        if key in first:
            replace.append((var, first[key]))
        else:
            first[key] = var
            keep_seq.append(k)
    for k, (outer, var) in enumerate(
            zip(op.outer_non_seqs(node), op.inner_non_seqs(), strict=True)):
        key = ("ns", outer)
        if key in first and first[key].type == var.type:
            replace.append((var, first[key]))
        else:
            first.setdefault(key, var)
            keep_ns.append(k)
    if not replace:
        return None
    outs = clone_replace(list(inner.outputs), replace)
    seqs, non_seqs = op.inner_seqs(), op.inner_non_seqs()
    taps = [v for g in op.inner_state_taps() for v in g]
    new_op = rebuild(op, [seqs[k] for k in keep_seq] + taps + [non_seqs[k] for k in keep_ns],
                     outs, len(keep_seq), op.state_taps, op.n_nit_sot, op.store)
    oseq, ons = op.outer_seqs(node), op.outer_non_seqs(node)
    return new_op.make_node(node.inputs[0], *([oseq[k] for k in keep_seq] +
                                              list(op.outer_inits(node)) +
                                              [ons[k] for k in keep_ns])).outputs


class ScanMerge(GraphRewriter):
    """Merge independent loops that run the same number of steps (see the module doc)."""

    name = "scan_merge"

    def apply(self, fgraph):
        changes = 0
        while True:
            pair = self._find(fgraph)
            if pair is None:
                return changes
            a, b = pair
            out_a, out_b = merge_scan_nodes(a, b)
            pairs = (list(zip(a.outputs, out_a, strict=True))
                     + list(zip(b.outputs, out_b, strict=True)))
            for old, new in pairs:
                if old in fgraph.variables:
                    fgraph.replace(old, new, reason=self.name)
            node = out_a[0].owner if out_a else out_b[0].owner
            deduped = dedupe_inputs(node)
            if deduped is not None:
                for old, new in zip(node.outputs, deduped, strict=True):
                    if old in fgraph.variables:
                        fgraph.replace(old, new, reason=self.name)
            changes += 1

    def _find(self, fgraph):
        scans = [n for n in fgraph.toposort() if isinstance(n.op, Scan) and not n.op.until]
        for i, a in enumerate(scans):
            for b in scans[i + 1:]:
                if a.inputs[0] is b.inputs[0] and \
                        a.op.truncate_gradient == b.op.truncate_gradient and \
                        _independent(a, b):
                    return a, b
        return None


rewrites.register("scan_merge", ScanMerge(), "fusion", "scan", position=90)
