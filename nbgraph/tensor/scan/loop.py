"""Running a Scan: the step loop over a linked inner program.

A *program* is what a linker makes of a FunctionGraph: ``input_cells`` and
``output_cells`` (one-element lists) and ``run()``.  The outer linker hands a
Scan node a ``link(fgraph)`` function (through :meth:`Scan.link_inner_graphs`); the
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
    for k, (var, seq) in enumerate(zip(op.outer_seqs(node), seqs, strict=True)):
        if seq.shape[0] < n:
            raise ValueError("%s: sequence %d (%r) has %d rows but the loop runs %d steps" % (
                op, k, var, seq.shape[0], n))
    for i, (var, init, lag) in enumerate(zip(op.outer_inits(node), inits, op.lags(), strict=True)):
        if op.is_opaque_state(i):
            continue
        if init.shape[0] < lag:
            raise ValueError("%s: the initial value of state %d (%r) has %d rows; its taps %s "
                             "need %d" % (op, i, var, init.shape[0], op.state_taps[i], lag))


def _step_source(op, program, seq_0d, state_0d):
    """Python source of the step loop for ``op`` over ``program`` (see :func:`step_loop`)."""
    in_cells, out_cells = program.input_cells, program.output_cells
    names = {"RUN": program.run, "np": np, "FAIL": _fail_state, "FAILN": _fail_nit}
    body = _read_lines(op, in_cells, names, seq_0d, state_0d)
    body.append("RUN()")
    body += _state_write_lines(op, out_cells, names)
    body += _nit_write_lines(op, out_cells, names)
    if op.until:
        names["ocond"] = out_cells[-1]
        body.append("stop = ocond[0]")
    for k, cell in enumerate(out_cells):
        if not any(cell is c for c in in_cells):
            names["z%d" % k] = cell
            body.append("z%d[0] = None" % k)
    if op.until:
        body += ["if stop:", "    done = t + 1", "    break"]
    return "\n".join(_steps_function(op, body)) + "\n", names


def _read_lines(op, in_cells, names, seq_0d, state_0d):
    """The step's lines filling the body's input cells: each sequence's row ``t``, each
    state tap's row (from the stored buffer ``B``, or the history ``H`` of the last rows)."""
    body = []
    for k in range(op.n_seqs):
        names["cs%d" % k] = in_cells[k]
        body.append("cs%d[0] = S%d[t%s]" % (k, k, ", ..." if seq_0d[k] else ""))
    pos = op.n_seqs
    lags = op.lags()
    for i, taps in enumerate(op.state_taps):
        lag, full = lags[i], op.store[i] == "all"
        for j, tap in enumerate(taps):
            names["ct%d_%d" % (i, j)] = in_cells[pos]
            pos += 1
            if full:
                body.append("ct%d_%d[0] = B%d[t + %d%s]" % (
                    i, j, i, lag + tap, ", ..." if state_0d[i] else ""))
            else:
                body.append("ct%d_%d[0] = H%d[%d]" % (i, j, i, lag + tap))
    return body


def _state_write_lines(op, out_cells, names):
    """The step's lines checking each new state's shape and storing it."""
    body = []
    lags = op.lags()
    for i in range(op.n_states):
        names["o%d" % i] = out_cells[i]
        body += ["v = o%d[0]" % i,
                 "if getattr(v, 'shape', None) != R%d:" % i,
                 "    FAIL(t, %d, v, R%d)" % (i, i)]
        if op.store[i] == "all":
            body.append("B%d[t + %d] = v" % (i, lags[i]))
        elif lags[i] == 1:
            body.append("H%d[0] = v" % i)
        else:
            body += ["H%d.append(v)" % i, "del H%d[0]" % i]
    return body


def _nit_write_lines(op, out_cells, names):
    """The step's lines storing each output without taps (every step, or the last)."""
    body = []
    for m in range(op.n_nit_sot):
        j = op.n_states + m
        names["o%d" % j] = out_cells[j]
        body.append("v = o%d[0]" % j)
        if op.store[j] == "all":
            body += ["if N%d is None:" % m,
                     "    v = np.asarray(v)",
                     "    N%d = np.empty((n,) + v.shape, dtype=v.dtype)" % m,
                     "    NS%d = v.shape" % m,
                     "elif getattr(v, 'shape', None) != NS%d:" % m,
                     "    FAILN(t, %d, v, NS%d)" % (j, m),
                     "N%d[t] = v" % m]
        else:
            body.append("NL%d = v" % m)
    return body


def _steps_function(op, body):
    """The lines of ``steps(n, S, B, H, R, tstate)`` running ``body`` for t < n."""
    nnit = op.n_nit_sot
    head = ["def steps(n, S, B, H, R, tstate):"]
    head += ["    S%d = S[%d]" % (k, k) for k in range(op.n_seqs)]
    for i in range(op.n_states):
        head.append("    B%d = B[%d]" % (i, i) if op.store[i] == "all" else
                    "    H%d = H[%d]" % (i, i))
        head.append("    R%d = R[%d]" % (i, i))
    for m in range(nnit):
        head += ["    N%d = None" % m, "    NS%d = None" % m, "    NL%d = None" % m]
    head.append("    done = n")
    head.append("    for t in range(n):")
    head.append("        tstate[0] = t")
    head += ["        " + line for line in body]
    head.append("    return done, [%s], [%s]" % (
        "".join("N%d, " % m for m in range(nnit)), "".join("NL%d, " % m for m in range(nnit))))
    return head


def _fail_state(t, i, value, shape):
    raise ValueError("step %d computed state %d with %s, but the state's initial value has "
                     "rows of shape %s" % (t, i, _describe(value), shape))


def _fail_nit(t, j, value, shape):
    raise ValueError("output %d has %s at step %d but shape %s at step 0; the steps of an "
                     "output must agree" % (j, _describe(value), t, shape))


def step_loop(op, program, seq_0d, state_0d):
    """The generated step loop ``steps(n, seqs, bufs, hists, row_shapes, tstate)`` ->
    ``(steps done, stacked nit-sot outputs, last nit-sot values)`` (cached per program)."""
    cache = program.__dict__.setdefault("_nbg_scan_loops", {}) \
        if hasattr(program, "__dict__") else {}
    key = (id(op), seq_0d, state_0d)
    fn = cache.get(key)
    if fn is None:
        source, names = _step_source(op, program, seq_0d, state_0d)
        exec(compile(source, "<nbgraph scan loop: %s>" % op, "exec"), names)
        fn = cache[key] = names["steps"]
    return fn


def run_loop(op, node, program, inputs, output_storage):
    """Run ``op``'s loop for ``node`` on ``inputs`` with ``program`` as the body."""
    n = int(inputs[0])
    ns, nst = op.n_seqs, op.n_states
    seqs = inputs[1:1 + ns]
    inits = inputs[1 + ns:1 + ns + nst]
    non_seqs = inputs[1 + ns + nst:]
    _check_inputs(op, node, n, seqs, inits)
    in_cells = program.input_cells
    out_cells = program.output_cells
    n_taps = sum(len(t) for t in op.state_taps)
    for cell, value in zip(in_cells[ns + n_taps:], non_seqs, strict=True):
        cell[0] = value
    bufs, hists = _state_buffers(op, inits, n)
    row_shapes = [init.shape[1:] if not op.is_opaque_state(i) else None
                  for i, init in enumerate(inits)]
    steps = step_loop(op, program, tuple(s.ndim == 1 for s in seqs),
                      tuple(getattr(init, "ndim", 0) == 1 for init in inits))
    tstate = [0]
    try:
        n_done, nit, nit_last = steps(n, seqs, bufs, hists, row_shapes, tstate)
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note("(while running step %d of %s)" % (tstate[0], op))
        raise
    finally:
        for cell in in_cells:
            cell[0] = None
        for cell in out_cells:
            cell[0] = None
    _store_states(op, output_storage, bufs, hists, n_done)
    for m in range(op.n_nit_sot):
        _store_nit(op, node, inputs, output_storage, m, (nit[m], nit_last[m]), (n, n_done))


def _state_buffers(op, inits, n):
    """``(bufs, hists)``: per state, the buffer of every step's row after the initial
    ones (stored states) or the list of its last ``lag`` rows (the others)."""
    bufs, hists = [], []
    for i, (init, lag) in enumerate(zip(inits, op.lags(), strict=True)):
        if op.is_opaque_state(i):
            bufs.append(None)
            hists.append([init])
            continue
        rows = init[init.shape[0] - lag:]
        if op.store[i] == "all":
            buf = np.empty((lag + n,) + init.shape[1:], dtype=init.dtype)
            buf[:lag] = rows
            bufs.append(buf)
            hists.append(None)
        else:
            bufs.append(None)
            hists.append([rows[r, ...] for r in range(lag)])
    return bufs, hists


def _store_states(op, output_storage, bufs, hists, n_done):
    """Each state's output: the steps' rows, or the last value."""
    lags, store = op.lags(), op.store
    for i in range(op.n_states):
        if store[i] == "all":
            output_storage[i][0] = bufs[i][lags[i]:lags[i] + n_done]
        elif store[i] == "last" and n_done == 0:
            raise IndexError("%s: output %d keeps the last step's value, but no step ran" % (
                op, i))
        elif op.is_opaque_state(i):
            output_storage[i][0] = hists[i][-1]  # (each step made a new value)
        else:
            output_storage[i][0] = np.array(hists[i][-1], copy=True)


def _store_nit(op, node, inputs, output_storage, m, values, steps):
    """The ``m``-th output without taps: ``values`` is (every step's, stacked; the
    last step's), ``steps`` (steps asked, steps run)."""
    j = op.n_states + m
    stacked, last = values
    n, n_done = steps
    if op.store[j] != "all":
        if n_done == 0:
            raise IndexError("%s: output %d keeps the last step's value, but no step ran"
                             % (op, j))
        output_storage[j][0] = np.array(last, copy=True)
        return
    if stacked is None:
        row = _zero_step_row(op, node, inputs, j)
        stacked = np.empty((0,) + row, dtype=node.outputs[j].type.dtype)
    elif n_done < n:
        stacked = stacked[:n_done]
    output_storage[j][0] = stacked


def _zero_step_row(op, node, inputs, j):
    """The row shape of output ``j`` when no step ran: from the inner graph's shape
    inference on the actual inputs' shapes (unknown sizes, where it cannot say, are 0)."""
    static = node.outputs[j].type.shape[1:]
    fallback = tuple(0 if s is None else s for s in static)
    cache = op.__dict__.setdefault("_zero_rows", {})
    key = (j, tuple(v.type for v in node.inputs))
    program = cache.get(key, False)
    if program is False:
        program = cache[key] = _zero_row_program(op, node, j)
    if program is None:
        return fallback
    for cell, value in zip(program.input_cells, inputs, strict=True):
        cell[0] = value
    try:
        program.run()
        return tuple(int(c[0]) for c in program.output_cells)
    except Exception:  # a size that needs a step's values: keep the static guess
        return fallback
    finally:
        for cell in program.input_cells + program.output_cells:
            cell[0] = None


def _zero_row_program(op, node, j):
    from nbgraph.core.fgraph import FunctionGraph
    from nbgraph.tensor.basic import shape_i
    from nbgraph.tensor.scan.shapes import scan_infer_shape

    outer = [v.type() for v in node.inputs]
    twin = op.make_node(*outer)
    shapes = [tuple(shape_i(v, d) for d in range(v.type.ndim)) if hasattr(v.type, "ndim")
              else None for v in outer]
    try:
        row = scan_infer_shape(op, twin, shapes)[j][1:]
    except (NotImplementedError, TypeError, ValueError):
        return None
    try:
        fgraph = FunctionGraph(outer, list(row), clone=True)
    except Exception:
        return None
    return interpreted_program(fgraph)
