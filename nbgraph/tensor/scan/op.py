"""The Scan Op: a loop whose body is an inner FunctionGraph.

Outer inputs, in order::

    n_steps                  int64 scalar: how many steps to run (an upper
                             bound when the body has a stop condition)
    sequences   (n_seqs)     step ``t`` reads row ``t`` of each
    initial buffers          one per recurrent state: ``L`` rows, where
                             ``L = -min(taps)``; row ``L + k`` of the state's
                             trajectory is the value at step ``k``
    non-sequences            read unchanged at every step

Inner inputs: one row per sequence, one value per tap of each state (in the
order of its taps), then the non-sequences.  Inner outputs: each state's new
value, each non-fed-back ("nit-sot") output, then the stop condition when
``until`` is set.  The loop stops after the step whose condition is true.

Outer outputs: one per state, then one per nit-sot output.  ``store`` says,
per output, what is kept: ``"all"`` (the steps' values stacked along a new
first axis, the initial rows excluded), ``"last"`` (the value of the last
step; an IndexError when no step ran, as ``outputs[-1]`` would raise) or, for
states only, ``"final"`` (the value after the loop: the last initial row when
no step ran).  Only ``"all"`` keeps every step in memory.
"""

import numpy as np

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Constant, Variable, equal_computations
from nbgraph.core.op import Op
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import as_tensor_variable

__all__ = ["Scan", "STORE_MODES"]

STORE_MODES = ("all", "last", "final")


def _row_type(ttype):
    """The type of one row of ``ttype`` (its first axis dropped)."""
    return TensorType(ttype.dtype, ttype.shape[1:])


def _stacked_type(ttype, size=None):
    """The type of values of ``ttype`` stacked along a new first axis."""
    return TensorType(ttype.dtype, (size,) + tuple(ttype.shape))


class Scan(Op):
    """A loop over an inner graph (see the module docstring for the layout).

    Parameters: ``fgraph`` (the inner FunctionGraph), ``n_seqs``,
    ``state_taps`` (one tuple of negative taps per recurrent state),
    ``n_nit_sot``, ``until`` (the inner graph's last output is a stop
    condition), ``store`` (one of :data:`STORE_MODES` per outer output),
    ``truncate_gradient`` (-1: back-propagate through every step) and ``name``.
    """

    __props__ = ("n_seqs", "state_taps", "n_nit_sot", "until", "store", "truncate_gradient",
                 "name")

    def __init__(self, fgraph, n_seqs, state_taps, n_nit_sot, until=False, store=None,
                 truncate_gradient=-1, name=None):
        if not isinstance(fgraph, FunctionGraph):
            raise TypeError("Scan needs a FunctionGraph as its inner graph, got %r" % (fgraph,))
        self.fgraph = fgraph
        self.n_seqs = int(n_seqs)
        self.state_taps = tuple(tuple(int(k) for k in taps) for taps in state_taps)
        self.n_nit_sot = int(n_nit_sot)
        self.until = bool(until)
        n_out = len(self.state_taps) + self.n_nit_sot
        self.store = tuple(store) if store is not None else ("all",) * n_out
        self.truncate_gradient = int(truncate_gradient)
        self.name = name
        for taps in self.state_taps:
            if not taps or any(k >= 0 for k in taps) or len(set(taps)) != len(taps):
                raise ValueError("the taps of a recurrent state must be distinct negative "
                                 "ints, got %r" % (taps,))
        if len(self.store) != n_out or any(s not in STORE_MODES for s in self.store):
            raise ValueError("store needs one of %s per output (%d), got %r" % (
                STORE_MODES, n_out, self.store))
        if any(s == "final" for s in self.store[len(self.state_taps):]):
            raise ValueError("store='final' is only meaningful for recurrent states")
        n_in = self.n_seqs + sum(len(t) for t in self.state_taps)
        if len(fgraph.inputs) < n_in:
            raise ValueError("the inner graph has %d inputs, fewer than its %d sequence and "
                             "state inputs" % (len(fgraph.inputs), n_in))
        if len(fgraph.outputs) != n_out + self.until:
            raise ValueError("the inner graph has %d outputs; %d states, %d nit-sot outputs%s "
                             "need %d" % (len(fgraph.outputs), len(self.state_taps),
                                          self.n_nit_sot, " and a condition" if self.until
                                          else "", n_out + self.until))
        self.n_non_seqs = len(fgraph.inputs) - n_in
        self._check_inner_types()

    # -- layout helpers -----------------------------------------------------
    @property
    def n_states(self):
        """Number of recurrent states."""
        return len(self.state_taps)

    @property
    def n_outs(self):
        """Number of outer outputs (states then nit-sot outputs)."""
        return self.n_states + self.n_nit_sot

    def is_opaque_state(self, i):
        """True when state ``i`` is not a tensor (a random generator, say): its initial
        value is the value itself, and only its final value is kept."""
        return not isinstance(self.fgraph.inputs[self.n_seqs + sum(
            len(t) for t in self.state_taps[:i])].type, TensorType)

    def lags(self):
        """Rows of initial value each state needs (``-min(taps)``)."""
        return [-min(taps) for taps in self.state_taps]

    def inner_seqs(self):
        """The inner inputs that are sequence rows."""
        return self.fgraph.inputs[:self.n_seqs]

    def inner_state_taps(self):
        """For each state, the inner inputs of its taps (in tap order)."""
        out, pos = [], self.n_seqs
        for taps in self.state_taps:
            out.append(self.fgraph.inputs[pos:pos + len(taps)])
            pos += len(taps)
        return out

    def inner_non_seqs(self):
        """The inner inputs read unchanged at every step."""
        return self.fgraph.inputs[len(self.fgraph.inputs) - self.n_non_seqs:]

    def outer_seqs(self, node):
        """The node's sequence inputs."""
        return node.inputs[1:1 + self.n_seqs]

    def outer_inits(self, node):
        """The node's initial buffers, one per state."""
        start = 1 + self.n_seqs
        return node.inputs[start:start + self.n_states]

    def outer_non_seqs(self, node):
        """The node's non-sequence inputs."""
        return node.inputs[1 + self.n_seqs + self.n_states:]

    def _check_inner_types(self):
        outs = self.fgraph.outputs
        for i, taps in enumerate(self.inner_state_taps()):
            out = outs[i]
            if self.is_opaque_state(i):
                if self.state_taps[i] != (-1,) or self.store[i] != "final" or \
                        out.type != taps[0].type:
                    raise TypeError("state %d has the non-tensor type %r: it must have taps "
                                    "(-1,), store 'final' and the same type as its inner "
                                    "output %r (%r)" % (i, taps[0].type, out, out.type))
                continue
            for var in taps:
                if var.type != taps[0].type or not isinstance(var.type, TensorType) or \
                        not var.type.is_super(out.type):
                    raise TypeError("state %d: the inner output %r has type %r, which does "
                                    "not fit its tap input %r of type %r" % (
                                        i, out, out.type, var, var.type))
        if self.until:
            cond = outs[-1]
            if not isinstance(cond.type, TensorType) or cond.type.ndim != 0:
                raise TypeError("the stop condition must be a scalar, got %r of type %r" % (
                    cond, cond.type))

    # -- equality: the props plus the inner computation ---------------------
    def __eq__(self, other):
        if type(self) is not type(other) or self._props() != other._props():
            return False
        if self.fgraph is other.fgraph:
            return True
        a, b = self.fgraph, other.fgraph
        if len(a.inputs) != len(b.inputs) or any(
                x.type != y.type for x, y in zip(a.inputs, b.inputs, strict=True)):
            return False
        return equal_computations(a.outputs, b.outputs, a.inputs, b.inputs)

    def __hash__(self):
        return hash((type(self), self._props(), len(self.fgraph.inputs),
                     len(self.fgraph.apply_nodes)))

    def __str__(self):
        return "Scan{%s}" % (self.name or "scan")

    #: per-process caches (linked or interpreted bodies), rebuilt on demand
    _CACHES = ("_rewritten", "_interpreted", "_zero_rows")

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self._CACHES}

    # -- graph building ---------------------------------------------------------
    def output_types(self, init_types=None):
        """The outer output types for the inner graph's output types."""
        types = []
        outs = self.fgraph.outputs
        taps = self.inner_state_taps()
        for j in range(self.n_outs):
            row = taps[j][0].type if j < self.n_states else outs[j].type
            types.append(row if self.store[j] != "all" else _stacked_type(row))
        return types

    def make_node(self, n_steps, *inputs):
        """Check the outer inputs against the inner graph and build the node."""
        n_steps = as_tensor_variable(n_steps)
        if n_steps.ndim != 0 or n_steps.dtype not in ("int8", "int16", "int32", "int64",
                                                       "uint8", "uint16", "uint32"):
            raise TypeError("n_steps must be an integer scalar, got %r of type %r" % (
                n_steps, n_steps.type))
        if n_steps.dtype != "int64":
            from nbgraph.tensor.math import cast

            n_steps = cast(n_steps, "int64")
        expected = self.n_seqs + self.n_states + self.n_non_seqs
        if len(inputs) != expected:
            raise TypeError("%s takes n_steps and %d inputs (%d sequences, %d initial buffers, "
                            "%d non-sequences), got %d" % (self, expected, self.n_seqs,
                                                           self.n_states, self.n_non_seqs,
                                                           len(inputs)))
        inputs = list(inputs)
        checked = []
        for k, (outer, inner) in enumerate(
                zip(inputs[:self.n_seqs], self.inner_seqs(), strict=True)):
            checked.append(self._check_stacked(outer, inner.type, "sequence %d" % k))
        for i, taps in enumerate(self.inner_state_taps()):
            outer = inputs[self.n_seqs + i]
            if self.is_opaque_state(i):
                checked.append(taps[0].type.filter_variable(outer))
                continue
            checked.append(self._check_stacked(outer, taps[0].type,
                                               "initial buffer of state %d" % i))
        for k, (outer, inner) in enumerate(zip(inputs[self.n_seqs + self.n_states:],
                                               self.inner_non_seqs(), strict=True)):
            if not isinstance(outer, Variable):
                outer = as_tensor_variable(outer)
            try:
                outer = inner.type.filter_variable(outer)
            except TypeError as exc:
                raise TypeError("non-sequence %d of %s: %r of type %r does not fit the inner "
                                "input %r of type %r: %s" % (k, self, outer, outer.type, inner,
                                                             inner.type, exc)) from None
            checked.append(outer)
        outputs = [t() for t in self.output_types()]
        return Apply(self, [n_steps] + checked, outputs)

    def _check_stacked(self, outer, row_type, what):
        outer = as_tensor_variable(outer)
        want = _stacked_type(row_type)
        if outer.type.dtype != want.dtype or outer.type.ndim != want.ndim:
            raise TypeError("%s of %s: expected a %s tensor with %d dimensions (rows of type "
                            "%r), got %r of type %r" % (what, self, want.dtype, want.ndim,
                                                        row_type, outer, outer.type))
        for d, (s, w) in enumerate(zip(outer.type.shape[1:], row_type.shape, strict=True)):
            if s is not None and w is not None and s != w:
                raise TypeError("%s of %s: rows of %r have static size %d in dimension %d, "
                                "the inner graph expects %d" % (what, self, outer, s, d, w))
        return outer

    # -- inner graphs, for display and linkers --------------------------------
    def inner_graphs(self):
        """The graphs this Op runs inside itself: its loop body."""
        return [self.fgraph]

    def inner_inputs_outer(self, node):
        """For each inner input, the outer Variable it stands for (display help)."""
        out = list(self.outer_seqs(node))
        for init, taps in zip(self.outer_inits(node), self.state_taps, strict=True):
            out.extend([init] * len(taps))
        out.extend(self.outer_non_seqs(node))
        return out

    def do_constant_folding(self, node):
        return False

    def link_inner_graphs(self, node, link):
        """A perform running the inner graph as ``link(fgraph)`` compiled it."""
        from nbgraph.tensor.scan.loop import bound_perform

        return bound_perform(self, node, link)

    def perform(self, node, inputs, output_storage):
        """Run the loop with the inner graph interpreted node by node (no linker)."""
        from nbgraph.tensor.scan.loop import run_loop, interpreted_program

        cache = self.__dict__.setdefault("_interpreted", [])
        if not cache:
            cache.append(interpreted_program(self.fgraph))
        run_loop(self, node, cache[0], inputs, output_storage)

    def infer_shape(self, node, input_shapes):
        from nbgraph.tensor.scan.shapes import scan_infer_shape

        return scan_infer_shape(self, node, input_shapes)

    def grad(self, inputs, output_grads):
        from nbgraph.tensor.grad_rules import index_gradient, zero_gradient
        from nbgraph.tensor.scan.grad import scan_grad
        from nbgraph.tensor.type import TensorType

        # scan_grad leaves None where no gradient flows (integer or unused inputs)
        grads = scan_grad(self, inputs, output_grads)
        return [g if g is not None
                else index_gradient() if i == 0 or not isinstance(x.type, TensorType)
                else zero_gradient(x)
                for i, (x, g) in enumerate(zip(inputs, grads, strict=True))]


def is_scan(node):
    """True when ``node`` applies a :class:`Scan`."""
    return node is not None and isinstance(node.op, Scan)


def constant_int(var):
    """The int a constant scalar holds, else None."""
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        if data.ndim == 0 and data.dtype.kind in "iu":
            return int(data)
    return None
