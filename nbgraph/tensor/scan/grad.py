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
    from nbgraph.tensor.scan.basic import scan

    if any(op.is_opaque_state(i) for i in range(op.n_states)):
        raise NotImplementedError(
            "%s draws random numbers inside its steps (a non-tensor state): its gradient "
            "would have to replay each step's draw. Draw them outside the loop for all "
            "steps (size=(n_steps, ...)) and pass them as a sequence" % op)
    loop = _BackwardLoop(op, inputs, output_grads)
    bseqs = loop.sequences()
    outputs_info = loop.initial_carries()
    if not outputs_info:
        return [None] * len(inputs)
    back, _ = scan(loop.step, sequences=bseqs, outputs_info=outputs_info,
                   non_sequences=loop.non_seqs, n_steps=loop.m, go_backwards=True,
                   return_list=True, name="grad_of_%s" % (op.name or "scan"))
    return loop.gradients(back[0].owner, len(inputs))


class _BackwardLoop:
    """The backward loop of one Scan node: what it reads, its step, what it returns.

    Built in the order the module docstring tells it: the forward loop storing
    every step, each state's trajectory and the cost's gradient of it
    (``__init__``), the backward loop's sequences and carried values, its
    step, then the inputs' gradients from its results (``gradients``).
    """

    def __init__(self, op, inputs, output_grads):
        from nbgraph.tensor.math import minimum

        self.op = op
        ns, nst = self.ns, self.nst = op.n_seqs, op.n_states
        self.nnit = op.n_nit_sot
        n_steps = inputs[0]
        self.seqs = inputs[1:1 + ns]
        self.inits = inputs[1 + ns:1 + ns + nst]
        self.non_seqs = inputs[1 + ns + nst:]
        self.lags = op.lags()
        self.forward = forward = with_store(op, inputs, ("all",) * op.n_outs)
        self.n = forward[0].shape[0] if op.until else n_steps
        self.m = self.n if op.truncate_gradient == -1 else minimum(self.n, op.truncate_gradient)
        self.trajs, self.traj_grads = self._trajectories(output_grads)
        self.nit_grads = [self._nit_grad(k, output_grads[nst + k]) for k in range(self.nnit)]
        self.float_states = [i for i in range(nst) if self.traj_grads[i] is not None]
        self.float_seqs = [k for k in range(ns) if _is_float(self.seqs[k])]
        self.float_ns = [k for k in range(len(self.non_seqs)) if _is_float(self.non_seqs[k])]
        self.float_nits = [k for k in range(self.nnit) if _is_float(forward[nst + k])]
        self.n_tap_inputs = sum(len(t) for t in op.state_taps)

    def _trajectories(self, output_grads):
        """Each state's trajectory (initial rows, then every step) and the cost's own
        gradient of it: (initial rows' part, steps' part), no concatenation when the
        steps' part is the output's gradient itself; None for a state not float."""
        from nbgraph.tensor.basic import concatenate

        trajs, traj_grads = [], []
        for i in range(self.nst):
            lag = self.lags[i]
            init_rows = self.inits[i][-lag:]
            traj = concatenate([init_rows, self.forward[i]], axis=0)
            g = output_grads[i]
            if not _is_float(traj):
                gtraj = None
            elif self.op.store[i] == "all":
                gtraj = (_zeros(init_rows), g)
            else:
                whole = _last_row_grad(traj, g)
                gtraj = (whole[:lag], whole[lag:])
            trajs.append(traj)
            traj_grads.append(gtraj)
        return trajs, traj_grads

    def _nit_grad(self, k, g):
        """The cost's gradient of every step of the ``k``-th output without taps."""
        j = self.nst + k
        return g if self.op.store[j] == "all" else _last_row_grad(self.forward[j], g)

    def sequences(self):
        """The backward loop's sequences, in forward order (it runs with go_backwards)."""
        n, nst = self.n, self.nst
        bseqs = [s[:n] for s in self.seqs]
        for i in range(nst):
            lag = self.lags[i]
            for tap in self.op.state_taps[i]:
                bseqs.append(self.trajs[i][lag + tap:lag + tap + n])
        bseqs += [self.forward[i] for i in range(nst)]
        bseqs += [self.forward[nst + k] for k in range(self.nnit)]
        bseqs += [self.traj_grads[i][1] for i in self.float_states]
        bseqs += [self.nit_grads[k] for k in self.float_nits]
        return bseqs

    def initial_carries(self):
        """The backward loop's outputs_info: zero pending gradients per float state
        (one per lag), zero accumulators per float non-sequence, then the sequences'
        rows (not carried)."""
        outputs_info = []
        for i in self.float_states:
            outputs_info += [_zeros(self.inits[i][0])] * self.lags[i]
        outputs_info += [_zeros(self.non_seqs[k]) for k in self.float_ns]
        outputs_info += [None] * len(self.float_seqs)
        return outputs_info

    def _split_step_args(self, args):
        """The step's arguments by role: sequence rows, state taps, stored states,
        stored outputs without taps, their gradients, pending gradients (a list per
        float state), accumulators and non-sequences."""
        sizes = [self.ns, self.n_tap_inputs, self.nst, self.nnit, len(self.float_states),
                 len(self.float_nits)]
        parts, pos = [], 0
        for size in sizes:
            parts.append(list(args[pos:pos + size]))
            pos += size
        pend = []
        for i in self.float_states:
            pend.append(list(args[pos:pos + self.lags[i]]))
            pos += self.lags[i]
        acc = list(args[pos:pos + len(self.float_ns)])
        pos += len(self.float_ns)
        return parts + [pend, acc, list(args[pos:])]

    def step(self, *args):
        """One backward step: a vector-Jacobian product of the forward step."""
        s_in, taps_in, y_in, z_in, gy_in, gz_in, pend, acc, w_in = self._split_step_args(args)
        op = self.op
        outs = clone_replace(op.fgraph.outputs,
                             list(zip(op.fgraph.inputs, s_in + taps_in + w_in, strict=True)))
        fs, vs = [], []
        for q, i in enumerate(self.float_states):
            fs.append(outs[i])
            vs.append(gy_in[q] + pend[q][0])
        for q, k in enumerate(self.float_nits):
            fs.append(outs[self.nst + k])
            vs.append(gz_in[q])
        wrt = self._step_wrt(s_in, taps_in, w_in)
        if fs and wrt:
            grads = Lop(fs, wrt, vs, disconnected_inputs="ignore")
        else:
            grads = [_zeros(v) for v in wrt]
        grads = _reuse_stored(grads, outs, y_in + z_in)
        g_seq = grads[:len(self.float_seqs)]
        pos = len(self.float_seqs)
        new_pend = []
        for q, i in enumerate(self.float_states):
            n_taps = len(op.state_taps[i])
            new_pend += self._pending_rows(i, pend[q], grads[pos:pos + n_taps])
            pos += n_taps
        new_acc = [_cast(a + g, a) for a, g in zip(acc, grads[pos:], strict=True)]
        return new_pend + new_acc + list(g_seq)

    def _step_wrt(self, s_in, taps_in, w_in):
        """What a step differentiates: float sequence rows, float states' taps, float
        non-sequences (in that order)."""
        tap_vars = []
        start = 0
        for i in range(self.nst):
            tap_vars.append(taps_in[start:start + len(self.op.state_taps[i])])
            start += len(self.op.state_taps[i])
        wrt = [s_in[k] for k in self.float_seqs]
        for i in self.float_states:
            wrt += tap_vars[i]
        wrt += [w_in[k] for k in self.float_ns]
        return wrt

    def _pending_rows(self, i, pend, g_taps):
        """State ``i``'s new pending gradients: ``P_r <- P_{r+1}`` plus the step's
        contributions ``g_taps`` to ``S_{t-1-r}``."""
        lag = self.lags[i]
        rows = []
        for r in range(lag):
            row = pend[r + 1] if r + 1 < lag else None
            for tap, g in zip(self.op.state_taps[i], g_taps, strict=True):
                if -tap - 1 == r:
                    row = g if row is None else row + g
            if row is None:
                row = _zeros(pend[r])
            rows.append(_cast(row, pend[r]))
        return rows

    def gradients(self, back_node, n_inputs):
        """The Scan node's input gradients from the backward loop ``back_node``."""
        from nbgraph.tensor.subtensor import set_subtensor

        ns, nst = self.ns, self.nst
        n_carried = sum(self.lags[i] for i in self.float_states) + len(self.float_ns)
        store = ("final",) * n_carried + ("all",) * len(self.float_seqs)
        finals = with_store(back_node.op, back_node.inputs, store)
        result = [None] * n_inputs
        pos = 0
        for i in self.float_states:
            lag = self.lags[i]
            result[1 + ns + i] = self._initial_rows_grad(i, finals[pos:pos + lag])
            pos += lag
        for k in self.float_ns:
            result[1 + ns + nst + k] = _cast(finals[pos], self.non_seqs[k])
            pos += 1
        for q, k in enumerate(self.float_seqs):
            rev = finals[pos + q][::-1]
            seq = self.seqs[k]
            result[1 + k] = set_subtensor(_zeros(seq)[self.n - self.m:self.n], _cast(rev, seq))
        return result

    def _initial_rows_grad(self, i, pend):
        """State ``i``'s initial value's gradient from the final pending gradients."""
        from nbgraph.tensor.basic import stack
        from nbgraph.tensor.math import eq, switch
        from nbgraph.tensor.subtensor import set_subtensor

        lag = self.lags[i]
        rows = stack(list(reversed(pend)), axis=0)
        direct = self.traj_grads[i][0]
        if self.op.truncate_gradient != -1:
            rows = switch(eq(self.m, self.n), rows, _zeros(rows))
        rows = rows + direct
        init = self.inits[i]
        if init.type.shape[0] == lag:
            return _cast(rows, init)
        return set_subtensor(_zeros(init)[-lag:], _cast(rows, init))


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
