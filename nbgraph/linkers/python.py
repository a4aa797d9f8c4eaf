"""PythonLinker: runs each node's ``perform`` over storage cells, in topological order.

Every Variable of the graph gets a *cell*, a one-element list.  A thunk per
node reads its inputs' cells and fills its outputs' cells.  Cells of
intermediate values are emptied as soon as no later node needs them, so
peak memory stays close to what the graph really needs at once.
"""

import functools
import time

from nbgraph.config import config
from nbgraph.core.trace import describe_site, site_of, user_traceback
from nbgraph.linkers.schedule import lazy_schedule, make_lazy_run

__all__ = ["PythonLinker", "Program"]


class Program:
    """A linked graph: input cells, output cells and the thunks between them."""

    def __init__(self, fgraph, input_cells, output_cells, thunks, nodes, release, storage,
                 steps=None):
        self.fgraph = fgraph
        self.input_cells = input_cells
        self.output_cells = output_cells
        self.thunks = thunks
        self.nodes = nodes
        self.release = release
        self.storage = storage
        self.kinds = ["py"] * len(nodes)
        #: the lazy schedule (:mod:`nbgraph.linkers.schedule`), None when every node runs
        self.steps = steps

    def run(self):
        """Run every thunk; clear intermediates after their last use."""
        if self.steps is not None:
            return self._run_lazy(None)
        thunks, release, nodes = self.thunks, self.release, self.nodes
        i = 0
        try:
            for i in range(len(thunks)):
                thunks[i]()
                for cell in release[i]:
                    cell[0] = None
        except Exception as exc:
            __tracebackhide__ = True
            _reraise_with_node(exc, nodes[i], self.storage, self._clear)

    def run_profiled(self, stats):
        """Like :meth:`run`, recording per-node time and output sizes in ``stats``."""
        if self.steps is not None:
            return self._run_lazy(stats)
        thunks, release, nodes = self.thunks, self.release, self.nodes
        storage = self.storage
        i = 0
        try:
            for i in range(len(thunks)):
                start = time.perf_counter()
                thunks[i]()
                elapsed = time.perf_counter() - start
                stats.record(i, elapsed, _output_size(nodes[i], storage))
                for cell in release[i]:
                    cell[0] = None
        except Exception as exc:
            _reraise_with_node(exc, nodes[i], storage, self._clear)

    def _run_lazy(self, stats):
        """Run the lazy schedule: a lazy node's blocks run only when it needs them."""
        thunks, release, nodes, storage = self.thunks, self.release, self.nodes, self.storage
        current = [0]

        def execute(i):
            current[0] = i
            if stats is None:
                thunks[i]()
            else:
                start = time.perf_counter()
                thunks[i]()
                stats.record(i, time.perf_counter() - start, _output_size(nodes[i], storage))
            for cell in release[i]:
                cell[0] = None

        def run_steps(steps):
            for step in steps:
                if step.__class__ is int:
                    execute(step)
                    continue
                i, branches = step
                current[0] = i
                node = nodes[i]
                values = [storage[v][0] for v in node.inputs]
                for k, _, _ in branches:
                    values[k] = None
                needed = set(node.op.needed_inputs(node, values))
                for k, sub, indices in branches:
                    if k in needed:
                        run_steps(sub)
                    else:
                        for j in indices:
                            for cell in release[j]:
                                cell[0] = None
                execute(i)

        try:
            run_steps(self.steps)
        except Exception as exc:
            _reraise_with_node(exc, nodes[current[0]], storage, self._clear)

    def _clear(self):
        """Empty every cell but the constants' (after a failed run)."""
        for var, cell in self.storage.items():
            if not _is_constant(var):
                cell[0] = None


def _output_size(node, storage):
    size = 0
    for out in node.outputs:
        value = storage[out][0]
        try:
            size += out.type.get_size(out.type.get_shape_info(value))
        except Exception:  # a Type without size support counts as 0 bytes
            pass
    return size


def _describe_inputs(node, storage):
    parts = []
    for var in node.inputs:
        value = storage.get(var, [None])[0]
        shape = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        parts.append("%r: shape %s, dtype %s" % (var, shape, dtype) if shape is not None
                     else "%r: %s" % (var, type(value).__name__))
    return "; ".join(parts)


def _reraise_with_node(exc, node, storage, clear):
    """Re-raise ``exc`` (the same exception, not a chained copy) naming ``node``.

    The message gains the node, its inputs' shapes and dtypes and the user's
    line that built the node (:mod:`nbgraph.core.trace`); ``exc.node`` is
    set.  With ``config.exception_verbosity == "low"`` the frames inside the
    failing Op are dropped, and this frame and the run loop's are marked
    ``__tracebackhide__`` (IPython and pytest then leave them out), so a
    notebook shows the user's call and the message.
    """
    __tracebackhide__ = True
    if getattr(exc, "node", None) is not None:  # already named (an inner program's node)
        clear()
        _add_detail(exc, "(raised inside %s)" % (node,))
        raise exc
    detail = "Apply node that caused the error: %s\nInputs: %s" % (
        node, _describe_inputs(node, storage))
    site = describe_site(site_of(node))
    if site is not None:
        detail += "\n" + site
    clear()  # a failed run must not keep the caller's arrays or intermediates alive
    exc.node = node
    _add_detail(exc, detail)
    if config.exception_verbosity == "low":
        # the Op's own frames and the errors it chained: exception_verbosity="high"
        exc.__cause__ = None
        exc.__suppress_context__ = True
        exc = exc.with_traceback(None)
        try:  # IPython renders it without nbgraph's frames (even the raising one)
            exc._render_traceback_ = functools.partial(_render_user_traceback, exc)
        except AttributeError:  # an exception class with __slots__
            pass
    raise exc


def _render_user_traceback(exc):
    """IPython's traceback of ``exc`` with only the user's frames (its _render_traceback_)."""
    import IPython

    shell = IPython.get_ipython()
    tb = user_traceback(exc.__traceback__)
    return shell.InteractiveTB.structured_traceback(type(exc), exc, tb, tb_offset=1)


def _add_detail(exc, detail):
    """Append ``detail`` to the exception's message (or, where that cannot be, a note)."""
    args = exc.args
    if (len(args) == 1 and isinstance(args[0], str) and not isinstance(exc, KeyError)
            and type(exc).__str__ is BaseException.__str__):
        exc.args = ("%s\n%s" % (args[0], detail),)
    elif hasattr(exc, "add_note"):
        exc.add_note(detail)


def _unset_output(node, out_cells):
    missing = [i for i, cell in enumerate(out_cells) if cell[0] is None]
    if missing:
        raise ValueError("%s.perform did not set output %s (%s) of %d" % (
            node.op, ", ".join(map(str, missing)),
            ", ".join(repr(node.outputs[i]) for i in missing), len(out_cells)))


class PythonLinker:
    """Links a FunctionGraph into a :class:`Program` of ``perform`` thunks."""

    name = "py"

    def __init__(self, inner=None):
        # the linker that links the graphs Ops run inside themselves (Op.link_inner_graphs):
        # the outer linker, so a loop body compiled by "c" runs its C kernels
        self.inner = inner

    def link_inner(self, fgraph):
        """Link an Op's inner graph with the outer linker; returns its program."""
        return (self.inner or self).link(fgraph)

    def bound_perform(self, node):
        """``node.op.perform``, or the perform its Op binds to this linker."""
        bind = getattr(node.op, "link_inner_graphs", None)
        bound = bind(node, self.link_inner) if bind is not None else None
        return bound if bound is not None else node.op.perform

    def make_thunk(self, node, storage):
        """A no-argument callable running ``node.op.perform`` on the cells.

        An Op may offer ``make_py_thunk(node, in_cells, out_cells)`` returning a
        leaner callable with the same effect (or None to decline).
        """
        op = node.op
        perform = self.bound_perform(node)
        in_cells = [storage[v] for v in node.inputs]
        out_cells = [storage[v] for v in node.outputs]
        fast = getattr(op, "make_py_thunk", None)
        if fast is not None and perform == op.perform:
            thunk = fast(node, in_cells, out_cells)
            if thunk is not None:
                return thunk
        # A perform that leaves an output unset is reported: ``o`` is the only
        # output's cell, or a dummy that sends several outputs to the full check.
        o = out_cells[0] if len(out_cells) == 1 else [None]
        if len(in_cells) == 1:
            (a,) = in_cells

            def thunk():
                perform(node, [a[0]], out_cells)
                if o[0] is None:
                    _unset_output(node, out_cells)
        elif len(in_cells) == 2:
            a, b = in_cells

            def thunk():
                perform(node, [a[0], b[0]], out_cells)
                if o[0] is None:
                    _unset_output(node, out_cells)
        else:
            def thunk():
                perform(node, [c[0] for c in in_cells], out_cells)
                if o[0] is None:
                    _unset_output(node, out_cells)
        return thunk

    def link(self, fgraph, keep=()):
        """Build the Program; values of ``keep`` (plus inputs, outputs) are never released."""
        storage = {}
        for var in fgraph.variables:
            storage[var] = [getattr(var, "data", None) if _is_constant(var) else None]
        order, steps = lazy_schedule(fgraph.toposort(), fgraph, keep)
        thunks = [self.make_thunk(node, storage) for node in order]
        protected = set(fgraph.inputs) | set(fgraph.outputs) | set(keep)
        protected.update(hidden_outputs(order))
        last_use = {}
        for i, node in enumerate(order):
            for var in node.inputs:
                last_use[var] = i
        for i, node in enumerate(order):
            for var in node.outputs:
                last_use.setdefault(var, i)  # an output nothing reads: freed at once
        release = [[] for _ in order]
        for var, i in last_use.items():
            if var not in protected and not _is_constant(var):
                release[i].append(storage[var])
        program = Program(fgraph, [storage[v] for v in fgraph.inputs],
                          [storage[v] for v in fgraph.outputs], thunks, order, release,
                          storage, steps)
        if steps is not None:
            def fail(exc, i):
                _reraise_with_node(exc, order[i], storage, program._clear)

            run = make_lazy_run(program, fail)
            if run is not None:
                program.run = run
        return program


def hidden_outputs(nodes):
    """Outputs an Op hides behind its ``default_output``: kept between calls.

    A hidden output is the Op's private state (a reusable buffer, say), so
    its storage cell is never emptied and ``perform`` finds it again.
    """
    hidden = []
    for node in nodes:
        default = getattr(node.op, "default_output", None)
        if default is not None and len(node.outputs) > 1:
            hidden.extend(out for i, out in enumerate(node.outputs) if i != default)
    return hidden


def _is_constant(var):
    from nbgraph.core.graph import Constant

    return isinstance(var, Constant)
