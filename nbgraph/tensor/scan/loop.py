"""Running a Scan: the step loop over a linked inner program.

A *program* is what a linker makes of a FunctionGraph: ``input_cells`` and
``output_cells`` (one-element lists) and ``run()``.  The outer linker hands a
Scan node a ``link(fgraph)`` function (through :meth:`Scan.bind_linker`); the
inner graph, rewritten once, is linked once with it, so under ``cvm``/``c``
its fused C kernels run at every step and under ``debug`` every inner node is
cross-checked.  Without a linker (``Scan.perform`` called directly) the inner
graph is interpreted node by node.

The loop sets the non-sequence cells once, then per step: the sequence rows
and state taps into the input cells, ``run()``, the outputs copied into the
stacked results (or kept, for outputs stored as their last value), the output
cells emptied (so an Op's perform never writes into a value the loop holds).
"""

import numpy as np

__all__ = ["run_loop", "bound_perform", "interpreted_program", "rewritten_inner"]


class InterpretedProgram:
    """The inner graph run node by node with ``perform`` (the linker-less path)."""

    def __init__(self, fgraph):
        from nbgraph.core.graph import Constant

        self.fgraph = fgraph
        self.storage = {var: [var.data if isinstance(var, Constant) else None]
                        for var in fgraph.variables}
        for var in fgraph.inputs:
            self.storage.setdefault(var, [None])
        self.nodes = fgraph.toposort()
        self.input_cells = [self.storage[v] for v in fgraph.inputs]
        self.output_cells = [self.storage[v] for v in fgraph.outputs]
        self._steps = [(node, [self.storage[v] for v in node.inputs],
                        [self.storage[v] for v in node.outputs]) for node in self.nodes]

    def run(self):
        """Run every node once, in topological order."""
        for node, ins, outs in self._steps:
            node.op.perform(node, [c[0] for c in ins], outs)


def interpreted_program(fgraph):
    """A program running ``fgraph`` with each node's ``perform``."""
    return InterpretedProgram(fgraph)


def rewritten_inner(op):
    """The inner graph after the "fast" rewrites (computed once per Op)."""
    cached = op.__dict__.get("_rewritten")
    if cached is None:
        from nbgraph.core.fgraph import FunctionGraph
        from nbgraph.tensor.rewriting import rewrite_graph

        cached = FunctionGraph(op.fgraph.inputs, op.fgraph.outputs, clone=True,
                               name=op.name)
        rewrite_graph(cached)
        op.__dict__["_rewritten"] = cached
    return cached


def bound_perform(op, node, link):
    """A perform for ``node`` whose inner graph was linked once by ``link``."""
    program = link(rewritten_inner(op))

    def perform(node, inputs, output_storage):
        run_loop(op, node, program, inputs, output_storage)

    perform.program = program
    return perform


def _describe(value):
    return "shape %s, dtype %s" % (getattr(value, "shape", None), getattr(value, "dtype", None))


def _check_inputs(op, node, n, seqs, inits):
    if n < 0:
        raise ValueError("%s: n_steps must be >= 0, got %d" % (op, n))
    for k, (var, seq) in enumerate(zip(op.outer_seqs(node), seqs)):
        if seq.shape[0] < n:
            raise ValueError("%s: sequence %d (%r) has %d rows but the loop runs %d steps" % (
                op, k, var, seq.shape[0], n))
    for i, (var, init, lag) in enumerate(zip(op.outer_inits(node), inits, op.lags())):
        if init.shape[0] < lag:
            raise ValueError("%s: the initial value of state %d (%r) has %d rows; its taps %s "
                             "need %d" % (op, i, var, init.shape[0], op.state_taps[i], lag))


def run_loop(op, node, program, inputs, output_storage):
    """Run ``op``'s loop for ``node`` on ``inputs`` with ``program`` as the body."""
    n = int(inputs[0])
    ns, nst = op.n_seqs, op.n_states
    seqs = inputs[1:1 + ns]
    inits = inputs[1 + ns:1 + ns + nst]
    non_seqs = inputs[1 + ns + nst:]
    _check_inputs(op, node, n, seqs, inits)
    lags = op.lags()
    store = op.store
    in_cells = program.input_cells
    out_cells = program.output_cells
    run = program.run

    # where each inner input comes from
    n_taps = sum(len(t) for t in op.state_taps)
    ns_cells = in_cells[ns + n_taps:]
    for cell, value in zip(ns_cells, non_seqs):
        cell[0] = value
    bufs, hists = [], []
    for i, (init, lag) in enumerate(zip(inits, lags)):
        rows = init[init.shape[0] - lag:]
        if store[i] == "all":
            buf = np.empty((lag + n,) + init.shape[1:], dtype=init.dtype)
            buf[:lag] = rows
            bufs.append(buf)
            hists.append(None)
        else:
            bufs.append(None)
            hists.append([rows[r] for r in range(lag)])
    row_shapes = [init.shape[1:] for init in inits]
    nit = [None] * op.n_nit_sot
    nit_last = [None] * op.n_nit_sot
    tap_cells = []
    pos = ns
    for taps in op.state_taps:
        tap_cells.append(in_cells[pos:pos + len(taps)])
        pos += len(taps)
    seq_cells = list(zip(in_cells[:ns], seqs))
    states = list(zip(op.state_taps, tap_cells, lags, bufs, hists))
    # an output that is an inner input (a non-sequence passed through) shares its cell
    clear_cells = [c for c in out_cells if not any(c is i for i in in_cells)]
    n_done = n
    t = 0
    try:
        for t in range(n):
            for cell, seq in seq_cells:
                cell[0] = seq[t]
            for taps, cells, lag, buf, hist in states:
                if buf is not None:
                    for cell, tap in zip(cells, taps):
                        cell[0] = buf[lag + t + tap]
                else:
                    for cell, tap in zip(cells, taps):
                        cell[0] = hist[lag + tap]
            run()
            for i in range(nst):
                value = out_cells[i][0]
                if getattr(value, "shape", None) != row_shapes[i]:
                    raise ValueError(
                        "%s: step %d computed state %d with %s, but the state's initial value "
                        "has rows of shape %s" % (op, t, i, _describe(value), row_shapes[i]))
                if bufs[i] is not None:
                    bufs[i][lags[i] + t] = value
                else:
                    hist = hists[i]
                    hist.append(value)
                    del hist[0]
            for m in range(op.n_nit_sot):
                value = np.asarray(out_cells[nst + m][0])
                if store[nst + m] == "all":
                    if nit[m] is None:
                        nit[m] = np.empty((n,) + value.shape, dtype=value.dtype)
                    elif value.shape != nit[m].shape[1:]:
                        raise ValueError(
                            "%s: output %d has shape %s at step %d but %s at step 0; the "
                            "steps of an output must agree" % (
                                op, nst + m, value.shape, t, nit[m].shape[1:]))
                    nit[m][t] = value
                else:
                    nit_last[m] = value
            stop = op.until and bool(out_cells[-1][0])
            for cell in clear_cells:
                cell[0] = None
            if stop:
                n_done = t + 1
                break
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note("(while running step %d of %s)" % (t, op))
        raise
    finally:
        for cell in in_cells:
            cell[0] = None
        for cell in out_cells:
            cell[0] = None
    for i in range(nst):
        if store[i] == "all":
            output_storage[i][0] = bufs[i][lags[i]:lags[i] + n_done]
        elif store[i] == "last" and n_done == 0:
            raise IndexError("%s: output %d keeps the last step's value, but no step ran" % (
                op, i))
        else:
            output_storage[i][0] = np.array(hists[i][-1], copy=True)
    for m in range(op.n_nit_sot):
        j = nst + m
        otype = node.outputs[j].type
        if store[j] == "all":
            value = nit[m]
            if value is None:
                shape = (0,) + tuple(0 if s is None else s for s in otype.shape[1:])
                value = np.empty(shape, dtype=otype.dtype)
            elif n_done < n:
                value = value[:n_done]
            output_storage[j][0] = value
        else:
            if n_done == 0:
                raise IndexError("%s: output %d keeps the last step's value, but no step ran"
                                 % (op, j))
            output_storage[j][0] = np.array(nit_last[m], copy=True)
