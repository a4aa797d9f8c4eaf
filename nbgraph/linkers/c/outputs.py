"""Making a kernel's outputs, from the Op's :class:`~nbgraph.core.c_interface.OutputRule`.

An Op declares how its outputs are shaped (``op.c_output_rule(node)``); this
module is the one place that turns the rule into work:

* :func:`make_prepare` — the Python preparation (fresh NumPy arrays, an
  input written in place, the input itself, or the Op's own
  ``c_prepare_outputs`` for a ``"custom"`` rule), used by every Python call
  path;
* :func:`fastcall_options` — the same rule for the C call path
  (``_fastcall.c``): broadcast in C, in place of an input, drop axes, or a
  call back to the Python preparation.

The linker never looks at which Op it is: only at the rule.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, OutputRule

__all__ = ["output_rule", "make_prepare", "broadcast_shape", "fastcall_options",
           "rule_problem"]


def output_rule(node):
    """The node's OutputRule (STATIC for an Op that declares no C)."""
    op = node.op
    if not isinstance(op, CLinkerOp):
        return OutputRule.STATIC
    return op.c_output_rule(node)


def broadcast_shape(shapes, what="operands"):
    """NumPy's broadcast of equal-length shape tuples, or ValueError."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    out = list(first)
    for shape in shapes[1:]:
        for d, (a, b) in enumerate(zip(out, shape, strict=True)):
            if a == b or b == 1:
                continue
            if a == 1:
                out[d] = b
            else:
                raise ValueError("%s could not be broadcast together with shapes %s" % (
                    what, " ".join(str(tuple(s)) for s in shapes)))
    return tuple(out)


def rule_problem(node, rule):
    """Why the C linker cannot use ``rule`` for ``node`` (a message), or ""."""
    check = _PROBLEMS.get(rule.kind)
    return check(node, rule) if check is not None else ""


def _broadcast_problem(node, rule):
    if not node.inputs:
        return "a broadcast output rule needs inputs"
    n_in, n_out = len(node.inputs), len(node.outputs)
    if len(rule.targets) != n_out or not all(-1 <= t < n_in for t in rule.targets):
        return "its output rule %r does not fit %d inputs and %d outputs" % (rule, n_in, n_out)
    if len({v.type.ndim for v in node.inputs + node.outputs}) != 1:
        return "a broadcast output rule needs operands of one ndim"
    return ""


def _drop_axes_problem(node, rule):
    if len(node.outputs) != 1 or not node.inputs:
        return "a drop_axes output rule needs inputs and one output"
    nd = node.inputs[0].type.ndim
    fits = (all(v.type.ndim == nd for v in node.inputs)
            and len(set(rule.axes)) == len(rule.axes)
            and all(0 <= a < nd for a in rule.axes)
            and node.outputs[0].type.ndim == nd - len(rule.axes))
    return "" if fits else "its output rule %r does not fit its operands" % (rule,)


def _same_as_problem(node, rule):
    if len(node.outputs) != 1 or not 0 <= rule.input < len(node.inputs):
        return "its output rule %r does not fit %d inputs" % (rule, len(node.inputs))
    return ""


def _static_problem(node, rule):
    for var in node.outputs:
        if var.type.c_arg_kind == "tensor" and None in var.type.shape:
            return ("its Op %s declares no output rule (c_output_rule or "
                    "c_prepare_outputs) and output %r has no static shape" % (node.op, var))
    return ""


_PROBLEMS = {"broadcast": _broadcast_problem, "drop_axes": _drop_axes_problem,
             "same_as": _same_as_problem, "static": _static_problem}


def make_prepare(node):
    """A function ``prepare(input values) -> output values`` following the node's rule."""
    rule = output_rule(node)
    op = node.op
    dtypes = [getattr(v.type, "numpy_dtype", None) for v in node.outputs]
    empty = np.empty
    if rule.kind == "custom":
        hook = op.c_prepare_outputs

        def prepare(inputs):
            return hook(node, inputs)
    elif rule.kind == "same_as":
        i = rule.input

        def prepare(inputs):
            return [inputs[i]]
    elif rule.kind == "static":
        shapes = [v.type.shape if v.type.c_arg_kind == "tensor" else None
                  for v in node.outputs]

        def prepare(inputs):
            return [None if s is None else empty(s, d) for s, d in zip(shapes, dtypes, strict=True)]
    elif rule.kind == "drop_axes":
        axes = set(rule.axes)
        what = "operands of %s" % op
        dtype = dtypes[0]

        def prepare(inputs):
            full = inputs[0].shape if len(inputs) == 1 else broadcast_shape(
                [x.shape for x in inputs], what)
            return [empty(tuple(s for i, s in enumerate(full) if i not in axes), dtype)]
    else:
        prepare = _broadcast_prepare(node, rule, dtypes)
    return prepare


def _broadcast_prepare(node, rule, dtypes):
    op = node.op
    targets = rule.targets
    what = "operands of %s" % op
    empty = np.empty

    def prepare(inputs):
        shape = inputs[0].shape
        for other in inputs[1:]:
            if other.shape != shape:
                shape = broadcast_shape([x.shape for x in inputs], what)
                break
        outs = []
        for k, dtype in zip(targets, dtypes, strict=True):
            if k < 0:
                outs.append(empty(shape, dtype))
                continue
            target = inputs[k]
            if target.shape != shape:
                raise ValueError("%s cannot write a result of shape %s into its input %d of "
                                 "shape %s" % (op, shape, k, target.shape))
            outs.append(target)
        return outs
    return prepare


def fastcall_options(node):
    """``(options, prepare)`` for a ``_fastcall.Kernel`` running ``node``.

    ``options`` holds what the C call path does itself (``"drop"``: a bit mask
    of dropped axes; ``"inplace"``: the target input or -1 per output; nothing:
    fresh outputs of the broadcast shape); ``prepare`` is the Python
    preparation it calls instead, or None when it needs none.
    """
    rule = output_rule(node)
    if rule_problem(node, rule):
        return {}, make_prepare(node)
    if rule.kind == "drop_axes":
        return {"drop": sum(1 << d for d in rule.axes)}, None
    if rule.kind == "broadcast":
        dtypes_ok = all(k < 0 or node.inputs[k].type.numpy_dtype == out.type.numpy_dtype
                        for k, out in zip(rule.targets, node.outputs, strict=True))
        if not dtypes_ok:
            return {}, make_prepare(node)
        if rule.in_place:
            return {"inplace": rule.targets}, None
        return {}, None
    return {}, make_prepare(node)
