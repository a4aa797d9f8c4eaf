"""DebugLinker: runs every node both ways and cross-checks (``linker="debug"``).

For each node, in topological order:

1. ``perform`` runs on copies of the inputs (copies keep the inputs'
   layout: strides, broadcast and negative strides survive), and so does
   the node's C kernel when it has one (all C-capable nodes of the function
   are compiled into one module, as with the C linkers);
2. each output must be a valid value of its Type (dtype, ndim, static
   shape), and the C output must equal the Python one by the output Type's
   ``values_eq_approx`` (NaN and infinities in the same places) — otherwise
   :class:`OutputMismatch` names the Op and shows both values;
3. an input that is not declared in ``destroy_map`` must come back
   unchanged (:class:`BadDestroyMap`); an output may share memory with an
   input only where ``view_map`` or ``destroy_map`` says so, and with another
   output never (:class:`BadViewMap`, through ``Type.may_share_memory``).

The Python outputs (the reference) flow on to the next nodes; a node with C
code but no ``perform`` passes its C outputs on.
"""

import ctypes

import numpy as np

from nbgraph.core.type import MethodNotDefined
from nbgraph.linkers.c.linker import c_capable, compile_runners
from nbgraph.linkers.python import PythonLinker

__all__ = ["DebugLinker", "DebugLinkerError", "OutputMismatch", "BadDestroyMap",
           "BadViewMap", "BadOutputType", "copy_keeping_layout"]


class DebugLinkerError(Exception):
    """A check of the debug linker failed."""


class OutputMismatch(DebugLinkerError):
    """Python and C computed different values."""


class BadDestroyMap(DebugLinkerError):
    """An Op modified an input it did not declare in destroy_map."""


class BadViewMap(DebugLinkerError):
    """An output shares memory with an input (or output) without a declaration."""


class BadOutputType(DebugLinkerError):
    """An implementation returned a value its output Type rejects."""


try:  # NumPy 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # pragma: no cover - NumPy 1
    _byte_bounds = np.byte_bounds


def copy_keeping_layout(value):
    """A copy of ``value``; arrays keep their strides (non-contiguous stays so)."""
    if not isinstance(value, np.ndarray):
        return value
    if value.flags.c_contiguous or value.size == 0:
        return value.copy()
    lo, hi = _byte_bounds(value)
    start = value.__array_interface__["data"][0]
    nbytes = hi - lo
    buf = np.empty(nbytes + 64, np.uint8)
    base = buf.__array_interface__["data"][0]
    pad = (lo - base) % 64
    raw = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(lo), np.uint8)
    buf[pad:pad + nbytes] = raw
    return np.ndarray(value.shape, value.dtype, buffer=buf, offset=pad + (start - lo),
                      strides=value.strides)


def _snapshot(value):
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return value


def _same(a, b):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind == "c":  # each part, NaN equal to NaN (an input holding NaN is unchanged)
            return _same(a.real, b.real) and _same(a.imag, b.imag)
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _show(value):
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=40, edgeitems=4, max_line_width=100)
        return "array of shape %s, dtype %s:\n%s" % (value.shape, value.dtype, text)
    return repr(value)


def _where_differ(a, b):
    try:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return "shapes differ: %s vs %s" % (a.shape, b.shape)
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            with np.errstate(all="ignore"):
                bad = ~np.isclose(a, b, equal_nan=True)
        else:
            bad = a != b
        idx = np.argwhere(bad)
        if idx.size:
            first = tuple(int(i) for i in idx[0])
            return "%d of %d elements differ; first at index %s: python %r, c %r" % (
                len(idx), a.size, first, a[first], b[first])
    except Exception:  # pragma: no cover - purely informative
        pass
    return ""


class DebugLinker:
    """Links a graph so that each node runs in Python and in C and is cross-checked."""

    name = "debug"

    def link(self, fgraph, keep=()):
        base = PythonLinker(inner=self)
        program = base.link(fgraph, keep=keep)
        order = list(program.nodes)
        c_nodes = [node for node in order if c_capable(node)[0]]
        module, runners = compile_runners(c_nodes)
        storage = program.storage
        kinds = []
        # C code may keep pointers into its inputs inside an opaque (CDataType)
        # output; the copies handed to such nodes live until the next run.
        keepalive = []
        for i, node in enumerate(order):
            program.thunks[i] = self._thunk(node, runners.get(node), storage, keepalive,
                                            first=(i == 0), perform=base.bound_perform(node))
            kinds.append("c" if node in runners else "py")
        program.kinds = kinds
        program.module = module
        program.linker = "debug"
        return program

    def _thunk(self, node, runner, storage, keepalive, first, perform=None):
        in_cells = [storage[v] for v in node.inputs]
        out_cells = [storage[v] for v in node.outputs]

        def thunk():
            if first:
                del keepalive[:]
            values = [c[0] for c in in_cells]
            results = run_checked(node, values, runner, keepalive, perform)
            for cell, value in zip(out_cells, results, strict=True):
                cell[0] = value
        return thunk


def _run_perform(node, values, perform=None):
    storage = [[None] for _ in node.outputs]
    (perform or node.op.perform)(node, list(values), storage)
    for j, cell in enumerate(storage):
        if cell[0] is None:
            raise BadOutputType("%s.perform did not set output %d" % (node.op, j))
    return [cell[0] for cell in storage]


def _check_outputs(node, impl, inputs, before, outputs):
    op = node.op
    destroyed = set()
    for ins in (op.destroy_map or {}).values():
        destroyed.update(ins)
    for j, (var, value) in enumerate(zip(node.outputs, outputs, strict=True)):
        if not var.type.is_valid_value(value):
            raise BadOutputType("%s (%s) returned a bad value for output %d: %s" % (
                op, impl, j, var.type.value_validity_msg(value)))
    for i, (value, snap) in enumerate(zip(inputs, before, strict=True)):
        if i in destroyed:
            continue
        if not _same(value, snap):
            raise BadDestroyMap("%s (%s) modified its input %d (%r) without declaring it in "
                                "destroy_map (%r)" % (op, impl, i, node.inputs[i],
                                                      op.destroy_map))
    for j, (var, value) in enumerate(zip(node.outputs, outputs, strict=True)):
        allowed = set(op.view_map.get(j, [])) | set(op.destroy_map.get(j, []))
        for i, inp in enumerate(inputs):
            if i in allowed:
                continue
            if var.type.may_share_memory(value, inp):
                raise BadViewMap("%s (%s): output %d shares memory with input %d (%r), but "
                                 "neither view_map (%r) nor destroy_map (%r) declares it" % (
                                     op, impl, j, i, node.inputs[i], op.view_map,
                                     op.destroy_map))
        default = getattr(op, "default_output", None)
        for k in range(j):
            if default is not None and default in (j, k):
                continue  # a visible output may live in a hidden output's buffer
            if var.type.may_share_memory(value, outputs[k]):
                raise BadViewMap("%s (%s): outputs %d and %d share memory" % (op, impl, k, j))


def run_checked(node, values, runner, keepalive=None, perform=None):
    """Run ``node`` in Python (and C when ``runner`` is given), check, return outputs.

    ``perform`` replaces ``node.op.perform`` (an Op's perform bound to the linker,
    which runs its inner graphs under this linker too)."""
    op = node.op
    py_out = None
    try:
        py_inputs = [copy_keeping_layout(v) for v in values]
        py_before = [_snapshot(v) for v in py_inputs]
        py_out = _run_perform(node, py_inputs, perform)
    except MethodNotDefined:
        if runner is None:
            raise
        py_out = None
    if py_out is not None:
        _check_outputs(node, "perform", py_inputs, py_before, py_out)
    if runner is None:
        return py_out
    c_inputs = [copy_keeping_layout(v) for v in values]
    c_before = [_snapshot(v) for v in c_inputs]
    c_out = runner(c_inputs)
    if keepalive is not None and any(getattr(v.type, "c_arg_kind", None) == "cdata"
                                     for v in node.outputs):
        keepalive.append(c_inputs)
    _check_outputs(node, "C", c_inputs, c_before, c_out)
    if py_out is None:
        return c_out
    for j, (var, a, b) in enumerate(zip(node.outputs, py_out, c_out, strict=True)):
        try:
            equal = var.type.values_eq_approx(a, b)
        except Exception as exc:  # a Type that cannot compare these values
            raise OutputMismatch("%s: output %d cannot be compared (%s)" % (op, j, exc)) \
                from exc
        if not equal:
            raise OutputMismatch(
                "Python and C disagree on output %d of %s (%s)\n%s\nPython (perform) gave %s\n"
                "C gave %s" % (j, op, type(op).__name__, _where_differ(a, b), _show(a),
                               _show(b)))
    return py_out
