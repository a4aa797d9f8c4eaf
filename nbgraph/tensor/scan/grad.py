"""Scan.grad: backpropagation through time, as a second loop that runs backwards.

Write ``S_k`` for a state's value at step ``k`` (``k < 0``: its initial
rows).  Step ``t`` computes ``S_t`` from ``S_{t+tap}`` for each tap, the
sequences' row ``t`` and the non-sequences ``W``.  The gradient loop visits
``t = n-1, ..., 0`` and carries, per state, ``L = -min(taps)`` *pending*
gradients: ``P_r`` is what later steps already sent to ``S_{t-r}``.  At step
``t`` the total gradient of ``S_t`` is the cost's own gradient for that row
plus ``P_0``; one vector-Jacobian product of the step (its forward part
recomputed from the stored states, with each state's output replaced by its
stored value so nothing is computed twice that was kept) gives the
contributions to ``S_{t+tap}``, to row ``t`` of each sequence and to ``W``.
Then ``P_r <- P_{r+1} + (contribution to S_{t-1-r})``, the gradients of the
non-sequences are summed in accumulators, and the sequence rows' gradients
are stacked.  After the last (earliest) step the pending gradients are those
of the initial rows.

``truncate_gradient = k`` runs only the last ``k`` steps backwards: earlier
sequence rows and the initial values get no gradient.
"""



from nbgraph.core.graph import Constant, clone_replace, toposort
from nbgraph.core.gradient import Lop
from nbgraph.tensor.type import FLOAT_DTYPES, TensorType

__all__ = ["scan_grad"]


def _is_float(var):
    return isinstance(var.type, TensorType) and var.type.dtype in FLOAT_DTYPES


def _zeros(like):
    from nbgraph.tensor.basic import zeros_like

    return zeros_like(like)


def with_store(op, inputs, store):
    """The outputs of a copy of ``op`` storing its outputs as ``store`` says."""
    from nbgraph.tensor.scan.op import Scan

    new = Scan(op.fgraph, op.n_seqs, op.state_taps, op.n_nit_sot, until=op.until,
               store=store, truncate_gradient=op.truncate_gradient, name=op.name)
    return new.make_node(*inputs).outputs


def _last_row_grad(stacked, g):
    """A gradient for every row of ``stacked`` that is ``g`` on its last row only."""
    from nbgraph.tensor.subtensor import inc_subtensor

    return inc_subtensor(_zeros(stacked)[-1], g)


def scan_grad(op, inputs, output_grads):
    """Gradients of a Scan node's inputs (see the module docstring)."""
    from nbgraph.tensor.basic import concatenate, stack
    from nbgraph.tensor.math import eq, minimum, switch
    from nbgraph.tensor.scan.basic import scan
    from nbgraph.tensor.subtensor import set_subtensor

    ns, nst, nnit = op.n_seqs, op.n_states, op.n_nit_sot
    if any(op.is_opaque_state(i) for i in range(nst)):
        raise NotImplementedError(
            "%s draws random numbers inside its steps (a non-tensor state): its gradient "
            "would have to replay each step's draw. Draw them outside the loop for all "
            "steps (size=(n_steps, ...)) and pass them as a sequence" % op)
    n_steps = inputs[0]
    seqs = inputs[1:1 + ns]
    inits = inputs[1 + ns:1 + ns + nst]
    non_seqs = inputs[1 + ns + nst:]
    lags = op.lags()
    forward = with_store(op, inputs, ("all",) * op.n_outs)
    n = forward[0].shape[0] if op.until else n_steps
    m = n if op.truncate_gradient == -1 else minimum(n, op.truncate_gradient)

    # each state's trajectory (initial rows, then every step) and the cost's own
    # gradient of it: (initial rows' part, steps' part), no concatenation when the
    # steps' part is the output's gradient itself
    trajs, traj_grads = [], []
    for i in range(nst):
        lag = lags[i]
        init_rows = inits[i][-lag:]
        traj = concatenate([init_rows, forward[i]], axis=0)
        g = output_grads[i]
        if not _is_float(traj):
            gtraj = None
        elif op.store[i] == "all":
            gtraj = (_zeros(init_rows), g)
        else:
            whole = _last_row_grad(traj, g)
            gtraj = (whole[:lag], whole[lag:])
        trajs.append(traj)
        traj_grads.append(gtraj)
    nit_grads = []
    for k in range(nnit):
        j = nst + k
        g = output_grads[j]
        nit_grads.append(g if op.store[j] == "all" else _last_row_grad(forward[j], g))

    float_states = [i for i in range(nst) if traj_grads[i] is not None]
    float_seqs = [k for k in range(ns) if _is_float(seqs[k])]
    float_ns = [k for k in range(len(non_seqs)) if _is_float(non_seqs[k])]
    float_nits = [k for k in range(nnit) if _is_float(forward[nst + k])]

    # sequences of the backward loop, in forward order (it runs with go_backwards)
    bseqs = [s[:n] for s in seqs]
    for i in range(nst):
        lag = lags[i]
        for tap in op.state_taps[i]:
            bseqs.append(trajs[i][lag + tap:lag + tap + n])
    bseqs += [forward[i] for i in range(nst)] + [forward[nst + k] for k in range(nnit)]
    bseqs += [traj_grads[i][1] for i in float_states]
    bseqs += [nit_grads[k] for k in float_nits]
    n_tap_inputs = sum(len(t) for t in op.state_taps)

    outputs_info = []
    for i in float_states:
        outputs_info += [_zeros(inits[i][0])] * lags[i]
    outputs_info += [_zeros(non_seqs[k]) for k in float_ns]
    outputs_info += [None] * len(float_seqs)

    def step(*args):
        pos = 0
        s_in = list(args[pos:pos + ns])
        pos += ns
        taps_in = list(args[pos:pos + n_tap_inputs])
        pos += n_tap_inputs
        y_in = list(args[pos:pos + nst])
        pos += nst
        z_in = list(args[pos:pos + nnit])
        pos += nnit
        gy_in = list(args[pos:pos + len(float_states)])
        pos += len(float_states)
        gz_in = list(args[pos:pos + len(float_nits)])
        pos += len(float_nits)
        pend = []
        for i in float_states:
            pend.append(list(args[pos:pos + lags[i]]))
            pos += lags[i]
        acc = list(args[pos:pos + len(float_ns)])
        pos += len(float_ns)
        w_in = list(args[pos:])
        outs = clone_replace(op.fgraph.outputs,
                             list(zip(op.fgraph.inputs, s_in + taps_in + w_in, strict=True)))
        fs, vs = [], []
        for q, i in enumerate(float_states):
            fs.append(outs[i])
            vs.append(gy_in[q] + pend[q][0])
        for q, k in enumerate(float_nits):
            fs.append(outs[nst + k])
            vs.append(gz_in[q])
        tap_vars = []
        start = 0
        for i in range(nst):
            tap_vars.append(taps_in[start:start + len(op.state_taps[i])])
            start += len(op.state_taps[i])
        wrt = [s_in[k] for k in float_seqs]
        for i in float_states:
            wrt += tap_vars[i]
        wrt += [w_in[k] for k in float_ns]
        if fs and wrt:
            grads = Lop(fs, wrt, vs, disconnected_inputs="ignore")
        else:
            grads = [_zeros(v) for v in wrt]
        grads = _reuse_stored(grads, outs, y_in + z_in)
        g_seq = grads[:len(float_seqs)]
        pos = len(float_seqs)
        new_pend = []
        for q, i in enumerate(float_states):
            g_taps = grads[pos:pos + len(op.state_taps[i])]
            pos += len(op.state_taps[i])
            lag = lags[i]
            rows = []
            for r in range(lag):
                row = pend[q][r + 1] if r + 1 < lag else None
                for tap, g in zip(op.state_taps[i], g_taps, strict=True):
                    if -tap - 1 == r:
                        row = g if row is None else row + g
                if row is None:
                    row = _zeros(pend[q][r])
                rows.append(_cast(row, pend[q][r]))
            new_pend += rows
        g_w = grads[pos:]
        new_acc = [_cast(a + g, a) for a, g in zip(acc, g_w, strict=True)]
        return new_pend + new_acc + list(g_seq)

    if not outputs_info:
        return [None] * len(inputs)
    back, _ = scan(step, sequences=bseqs, outputs_info=outputs_info, non_sequences=non_seqs,
                   n_steps=m, go_backwards=True, return_list=True,
                   name="grad_of_%s" % (op.name or "scan"))
    n_carried = sum(lags[i] for i in float_states) + len(float_ns)
    back_node = back[0].owner
    bop = back_node.op
    store = ("final",) * n_carried + ("all",) * len(float_seqs)
    finals = with_store(bop, back_node.inputs, store)

    result = [None] * len(inputs)
    pos = 0
    for i in float_states:
        lag = lags[i]
        pend = finals[pos:pos + lag]
        pos += lag
        rows = stack(list(reversed(pend)), axis=0)
        direct = traj_grads[i][0]
        if op.truncate_gradient != -1:
            rows = switch(eq(m, n), rows, _zeros(rows))
        rows = rows + direct
        init = inits[i]
        if init.type.shape[0] == lag:
            result[1 + ns + i] = _cast(rows, init)
        else:
            result[1 + ns + i] = set_subtensor(_zeros(init)[-lag:], _cast(rows, init))
    for k in float_ns:
        result[1 + ns + nst + k] = _cast(finals[pos], non_seqs[k])
        pos += 1
    for q, k in enumerate(float_seqs):
        rev = finals[pos + q][::-1]
        seq = seqs[k]
        result[1 + k] = set_subtensor(_zeros(seq)[n - m:n], _cast(rev, seq))
    return result


def _cast(var, like):
    """``var`` with ``like``'s dtype and static shape (a gradient must fit its input)."""
    if var.type.dtype != like.type.dtype:
        from nbgraph.tensor.math import cast

        var = cast(var, like.type.dtype)
    if var.type != like.type and isinstance(like.type, TensorType):
        var = like.type.filter_variable(var)
    return var





def _reuse_stored(grads, outs, stored):
    """``grads`` reading the loop's stored outputs instead of recomputing them.

    Each forward output with an owner becomes its stored value; so does any node
    of the gradient graph that recomputes it (``tanh``'s gradient builds
    ``tanh(x)`` anew: same Op, same inputs as the forward node).  What only
    those values needed (the forward's matrix products, say) is then not
    computed at all.
    """
    store_of = {}
    # an until-loop's last output (its condition) is not stored: shorter wins
    for o, v in zip(outs, stored, strict=False):
        if o.owner is not None and not isinstance(o, Constant) and o not in store_of:
            store_of[o] = v
    if not store_of:
        return grads
    forward_nodes = {}
    for node in toposort(list(store_of)):
        try:
            forward_nodes.setdefault((node.op, tuple(node.inputs)), node)
        except TypeError:  # an unhashable Op: not matched
            pass
    replace = dict(store_of)
    for node in toposort(grads):
        try:
            twin = forward_nodes.get((node.op, tuple(node.inputs)))
        except TypeError:
            continue
        if twin is None or twin is node:
            continue
        for o, fo in zip(node.outputs, twin.outputs, strict=True):
            if fo in store_of and o.type == fo.type:
                replace[o] = store_of[fo]
    return clone_replace(grads, list(replace.items()))
