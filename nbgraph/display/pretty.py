"""``pp``: a graph as one infix expression, as Theano's ``theano.printing.pp``.

>>> import nbgraph.tensor as nt
>>> x, y = nt.dscalar("x"), nt.dscalar("y")
>>> pp((x + 2) * y - x ** 2)
'(((x + 2.0) * y) - (x ** 2.0))'
>>> pp(nt.exp(-x).sum())
'sum(exp(-x))'

Elementwise arithmetic and comparisons print as infix operators (every
binary operation parenthesised, so the text is unambiguous), other
elementwise functions as calls, broadcasting dimension shuffles are
invisible (``x + 2`` rather than the DimShuffle of 2), transposes print as
``x.T``, and every other Op as ``OpName{props}(inputs)``.  A named variable
prints its name, a constant its value.  Subexpressions used twice are printed
twice: ``pp`` shows a formula, :func:`~nbgraph.display.text.dprint` shows the
shared structure.  The walk is iterative: deep graphs do not hit the
recursion limit.
"""

from __future__ import annotations

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Constant, Variable

__all__ = ["pp", "INFIX"]

#: Infix symbols of elementwise scalar operations, by the scalar op's name.
INFIX = {
    "add": "+", "sub": "-", "mul": "*", "true_div": "/", "int_div": "//", "mod": "%",
    "pow": "**", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "neq": "!=",
    "and_": "&", "or_": "|", "xor": "^",
}
_PREFIX = {"neg": "-", "invert": "~"}


def _scalar_name(op):
    scalar_op = getattr(op, "scalar_op", None)
    if scalar_op is None:
        return None
    return str(scalar_op).split("{")[0]


def _leaf_text(var):
    if isinstance(var, Constant):
        data = var.data
        text = repr(data.item()) if getattr(data, "ndim", 1) == 0 else None
        if text is None:
            text = str(data).replace("\n", "")
        return text
    if var.name is not None:
        return var.name
    return "<%s>" % (var.type,)


def _is_broadcast_only(op):
    order = getattr(op, "new_order", None)
    if order is None:
        return False
    kept = [e for e in order if e != "x"]
    return kept == sorted(kept) and len(kept) == getattr(op, "input_ndim", -1)


def _is_transpose(op):
    order = getattr(op, "new_order", None)
    return order is not None and "x" not in order and list(order) == list(
        reversed(range(len(order)))) and len(order) > 1


def _combine(var, parts):
    """The text of ``var`` from the texts of its owner's inputs."""
    op = var.owner.op
    if var.name is not None and not isinstance(var, Constant):
        return var.name
    name = _scalar_name(op)
    if name is not None:
        return _elementwise_text(name, parts)
    if _is_broadcast_only(op):
        return parts[0]
    if _is_transpose(op):
        return parts[0] + ".T"
    return _call_text(var, op, parts)


def _elementwise_text(name, parts):
    """``(a + b)``, ``-a`` or ``exp(a)`` for an elementwise scalar op named ``name``."""
    if name in INFIX and len(parts) >= 2:
        return "(" + (" %s " % INFIX[name]).join(parts) + ")"
    if name in _PREFIX and len(parts) == 1:
        return _PREFIX[name] + parts[0]
    return "%s(%s)" % (name, ", ".join(parts))


def _call_text(var, op, parts):
    """``OpName{props}(inputs)`` (``[k]`` for output k of several); ``(a \\dot b)``, ``sum(x)``."""
    label = str(op)
    if type(op).__name__ == "Dot":
        return "(%s \\dot %s)" % tuple(parts)
    if label.startswith("Sum{") and "axis=" in label and len(parts) == 1 and \
            var.ndim == 0:
        label = "sum"
    text = "%s(%s)" % (label, ", ".join(parts))
    if len(var.owner.outputs) > 1:
        text += "[%d]" % var.index
    return text


def _render(out):
    done = {}
    stack = [(out, False)]
    while stack:
        var, expanded = stack.pop()
        if var in done:
            continue
        node = var.owner
        if node is None or (var.name is not None and var is not out):
            done[var] = _leaf_text(var)
            continue
        if expanded:
            done[var] = _combine(var, [done[i] for i in node.inputs])
            continue
        stack.append((var, True))
        stack.extend((i, False) for i in reversed(node.inputs) if i not in done)
    return done[out]


def pp(obj) -> str:
    """The infix text of a Variable (or a list of them, a FunctionGraph or a
    compiled Function: one line per output)."""
    if isinstance(obj, Variable):
        return _unnamed(obj) if obj.owner is not None and obj.name is not None \
            else _render(obj)
    if isinstance(obj, FunctionGraph):
        outputs = list(obj.outputs)
    elif isinstance(getattr(obj, "fgraph", None), FunctionGraph):
        outputs = list(obj.fgraph.outputs)
    elif isinstance(obj, (list, tuple)) and all(isinstance(v, Variable) for v in obj):
        outputs = list(obj)
    else:
        raise TypeError("pp expects a Variable, a list of Variables, a FunctionGraph or a "
                        "compiled Function; got %s %r" % (type(obj).__name__, obj))
    return "\n".join(pp(v) for v in outputs)


def _unnamed(var):
    """A named output: its formula (its name would say nothing)."""
    name, var.name = var.name, None
    try:
        return _render(var)
    finally:
        var.name = name
