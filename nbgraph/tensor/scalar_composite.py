"""Composite: one scalar op standing for a small graph of scalar ops.

Elementwise fusion turns a chain of Elemwise nodes into one Elemwise of a
Composite, so the whole chain runs as a single loop.  The Composite keeps
every intermediate dtype of the graph it was built from, so fusing never
changes a result.

>>> from nbgraph.tensor.scalar_type import float64
>>> x, y = float64("x"), float64("y")
>>> str(Composite([x, y], [x + y * 2.0]))
'Composite{(x0 + (x1 * 2.0))}'
"""

import numpy as np

from nbgraph.core.graph import Constant, Variable, clone, clone_replace, equal_computations
from nbgraph.core.graph import graph_inputs, io_toposort
from nbgraph.core.gradient_types import is_disconnected, null_reason
from nbgraph.tensor.scalar_op import ScalarOp, as_dtype, element_code
from nbgraph.tensor.scalar_type import (
    ScalarConstant,
    ScalarType,
    as_scalar,
    check_weak_fits,
    strong_constant,
)

__all__ = ["Composite"]


class Composite(ScalarOp):
    """A scalar op computing ``outputs`` from ``inputs`` through an inner graph.

    ``inputs`` are root Variables of ScalarTypes; ``outputs`` scalar
    Variables computed from them (and constants) by ScalarOps.  The graph is
    copied, so later changes to the caller's variables do not affect it.
    Two Composites are equal when their inner graphs compute the same thing
    with inputs of the same types.
    """

    name = "composite"

    def __init__(self, inputs, outputs):
        inputs = list(inputs)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if not outputs:
            raise ValueError("Composite needs at least one output")
        for i, var in enumerate(inputs):
            if not isinstance(var, Variable) or not isinstance(var.type, ScalarType):
                raise TypeError("Composite input %d must be a scalar Variable, got %r" % (i, var))
            if var.owner is not None or isinstance(var, Constant):
                raise TypeError("Composite input %d (%r) must be a root Variable, not a constant "
                                "or the output of %s" % (i, var, var.owner and var.owner.op))
        if len(set(inputs)) != len(inputs):
            raise ValueError("Composite inputs must be distinct Variables")
        outputs = [as_scalar(o) for o in outputs]
        allowed = set(inputs)
        for root in graph_inputs(outputs):
            if root not in allowed and not isinstance(root, Constant):
                raise ValueError("the Composite's outputs depend on %r, which is not among its "
                                 "inputs %s" % (root, inputs))
        for node in io_toposort(inputs, outputs):
            if not isinstance(node.op, ScalarOp):
                raise TypeError("a Composite holds scalar ops only; %s is a %s" % (
                    node.op, type(node.op).__name__))
        self.inputs, self.outputs = clone(inputs, outputs)
        self.nin = len(self.inputs)
        self.nout = len(self.outputs)
        self._order = io_toposort(self.inputs, self.outputs)
        self._text = None

    # -- identity and printing ------------------------------------------
    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is not type(self) or self.nin != other.nin or self.nout != other.nout:
            return False
        if [v.type for v in self.inputs] != [v.type for v in other.inputs]:
            return False
        return (equal_computations(self.outputs, other.outputs, self.inputs, other.inputs)
                and equal_computations(other.outputs, self.outputs, other.inputs, self.inputs))

    def __hash__(self):
        return hash((type(self), tuple(v.type for v in self.inputs), str(self)))

    def __str__(self):
        if self._text is None:
            self._text = "Composite{%s}" % self._expression()
        return self._text

    def _expression(self):
        uses = {}
        for node in self._order:
            for v in node.inputs:
                uses[v] = uses.get(v, 0) + 1
        for v in self.outputs:
            uses[v] = uses.get(v, 0) + 1
        text = {v: "x%d" % i for i, v in enumerate(self.inputs)}
        bindings = []
        for node in self._order:
            args = [text[v] if v in text else str(v.data) for v in node.inputs]
            for v in node.inputs:  # a spent text goes: a chain keeps one, not all
                uses[v] -= 1
                if not uses[v] and v.owner is not None:
                    del text[v]
            expr = _format(node.op, args)
            if len(node.outputs) > 1:
                label = "t%d" % len(bindings)
                bindings.append("%s = %s" % (label, expr))
                for out in node.outputs:
                    text[out] = "%s[%d]" % (label, out.index)
                continue
            out = node.outputs[0]
            if uses.get(out, 0) > 1:
                label = "t%d" % len(bindings)
                bindings.append("%s = %s" % (label, expr))
                expr = label
            text[out] = expr
        outs = ", ".join(text[v] if v in text else str(v.data) for v in self.outputs)
        return "; ".join(bindings + [outs])

    # -- building --------------------------------------------------------
    def promote_inputs(self, inputs):
        """Weak constants take the inner input's dtype; other inputs must match it."""
        result = []
        for i, (var, inner) in enumerate(zip(inputs, self.inputs, strict=True)):
            dtype = inner.type.dtype
            if isinstance(var, ScalarConstant) and var.weak:
                check_weak_fits([var.python_value], dtype)
                var = strong_constant(var, dtype)
            elif var.type != inner.type:
                raise TypeError("%s: input %d must be of type %r, got %r of type %r" % (
                    self, i, inner.type, var, var.type))
            result.append(var)
        return result

    def output_dtypes(self, *dtypes):
        """The inner outputs' dtypes."""
        return [v.type.dtype for v in self.outputs]

    # -- running ---------------------------------------------------------
    def impl(self, *values):
        """Evaluate the inner graph on scalar values."""
        env = {v: as_dtype(x, v.type.dtype) for v, x in zip(self.inputs, values, strict=True)}
        for node in self._order:
            args = [env[v] if v in env else v.data for v in node.inputs]
            storage = [[None] for _ in node.outputs]
            node.op.perform(node, args, storage)
            for out, cell in zip(node.outputs, storage, strict=True):
                env[out] = cell[0]
        results = [env[v] if v in env else v.data for v in self.outputs]
        return results[0] if self.nout == 1 else tuple(results)

    @property
    def nfunc(self):
        """Evaluate the inner graph on arrays, each inner op through its own nfunc."""
        return self._evaluate_arrays

    def _evaluate_arrays(self, *arrays, out=None):
        env = {}
        for v, a in zip(self.inputs, arrays, strict=True):
            env[v] = np.asarray(a).astype(v.type.dtype, copy=False)
        with np.errstate(all="ignore"):
            for node in self._order:
                args = [env[v] if v in env else v.data for v in node.inputs]
                dtypes = [v.type.dtype for v in node.outputs]
                op = node.op
                if op.nfunc is not None:
                    results = op.nfunc(*args)
                else:
                    results = np.vectorize(op.impl, otypes=dtypes)(*args)
                if len(node.outputs) == 1:
                    results = (results,)
                for v, r in zip(node.outputs, results, strict=True):
                    env[v] = np.asarray(r).astype(v.type.dtype, copy=False)
        results = [env[v] if v in env else np.asarray(v.data) for v in self.outputs]
        if out is not None:
            targets = out if isinstance(out, tuple) else (out,)
            for target, r in zip(targets, results, strict=True):
                np.copyto(target, r, casting="unsafe")
            results = list(targets)
        return results[0] if self.nout == 1 else tuple(results)

    def grad(self, inputs, output_grads):
        """Reverse-mode gradients through the inner graph, rebuilt on ``inputs``."""
        outputs = clone_replace(self.outputs, dict(zip(self.inputs, inputs, strict=True)))
        contributions, nulls = {}, {}
        for out, g in zip(outputs, output_grads, strict=True):
            if g is not None:
                contributions.setdefault(out, []).append(g)
        order = io_toposort(list(inputs), outputs)
        for node in reversed(order):
            grads = [_total(contributions, out) for out in node.outputs]
            if all(g is None for g in grads):
                continue
            grads = [g if g is not None else out.type.grad_zeros_like(out)
                     for g, out in zip(grads, node.outputs, strict=True)]
            for var, g in zip(node.inputs, node.op.grad(list(node.inputs), grads), strict=True):
                if null_reason(g) is not None:
                    nulls.setdefault(var, g)
                elif (isinstance(g, Variable) and not is_disconnected(g)
                      and not g.type.grad_is_zero(g)):
                    contributions.setdefault(var, []).append(g)
        totals = [nulls.get(v) or _total(contributions, v) for v in inputs]
        return [v.type.grad_zeros_like(v) if g is None else g
                for v, g in zip(inputs, totals, strict=True)]

    # -- C ---------------------------------------------------------------
    @property
    def element_cost(self):
        """1 plus the inner ops' extra costs (see ScalarOp.element_cost)."""
        return 1 + sum(max(0, n.op.element_cost - 1) for n in self._order)

    #: float16 intermediates are rounded node by node (element_code), not once
    c_half_native = True

    def has_c_code(self, node=None):
        """True when every inner op has C code."""
        return all(n.op.has_c_code(n) for n in self._order)

    def c_handles_restricted(self, node):
        """True when every inner node's C handles its float16/complex operands."""
        return all(n.op.c_handles_restricted(n) for n in self._order)

    def c_code(self, node, name, inputs, outputs, sub):
        """The inner nodes' C code, inlined in order, on fresh local variables."""
        names = dict(zip(self.inputs, inputs, strict=True))
        lines = ["{"]
        for node_inner in self._order:
            for v in node_inner.inputs:
                if v not in names and isinstance(v, Constant):
                    names[v] = "%s_c%d" % (name, len(names))
                    lines.append("const %s %s = %s;" % (
                        v.type.c_type, names[v], v.type.c_literal(v.data)))
        for j, inner in enumerate(self._order):
            out_names = []
            for out in inner.outputs:
                names[out] = "%s_t%d" % (name, len(names))
                out_names.append(names[out])
                lines.append("%s %s;" % (out.type.c_type, names[out]))
            code = element_code(inner.op, inner, "%s_n%d" % (name, j),
                                [names[v] for v in inner.inputs], out_names, sub)
            lines.append("{\n%s\n}" % code)
        for var, out_name in zip(self.outputs, outputs, strict=True):
            value = names[var] if var in names else var.type.c_literal(var.data)
            lines.append("%s = %s;" % (out_name, value))
        lines.append("}")
        return "\n".join(lines)

    def c_support_code(self, node=None):
        """The inner ops' support code, each distinct block once."""
        blocks = []
        for inner in self._order:
            code = inner.op.c_support_code(inner)
            if code and code not in blocks:
                blocks.append(code)
        return "\n".join(blocks)

    def c_headers(self):
        """The inner ops' headers, each once."""
        headers = []
        for inner in self._order:
            for h in inner.op.c_headers():
                if h not in headers:
                    headers.append(h)
        return headers

    def c_code_cache_version(self):
        """Combined version of the inner ops' C code; ``()`` when any is unversioned."""
        versions = []
        for inner in self._order:
            version = inner.op.c_code_cache_version()
            if not version:
                return ()
            versions.append(version)
        return (1, str(self), tuple(versions))


def _format(op, args):
    format_expr = getattr(op, "format_expr", None)
    if format_expr is not None:
        return format_expr(args)
    return "%s(%s)" % (op, ", ".join(args))


def _total(contributions, var):
    terms = contributions.get(var)
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    total = var.type.grad_sum(terms)
    contributions[var] = [total]
    return total
