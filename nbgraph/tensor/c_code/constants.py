"""Scalar constants as kernel arguments: one compiled module per structure, not per value.

A kernel that spells a constant in its C text (``x * 0.37 + y``) gets a new
module, and a new compilation, whenever a notebook cell changes 0.37 to 0.38.
:func:`lift_constants` gives the C linker an equivalent *kernel node* whose
kernel reads such constants from extra inputs appended after the node's own
(0-d values broadcast over the loop, read once per call), plus the values
to pass.  The graph keeps its constants: rewrites and constant folding
still see them; only the C text no longer depends on them.

Which constants stay in the C text (the compiler exploits them): integers
and booleans, zero, infinities, NaN, plus or minus a power of two (``x * 2``,
``x / 2`` becomes a multiplication), and every exponent of ``pow``.
"""

import math

import numpy as np

from nbgraph.core.graph import Apply, Constant, clone_replace

__all__ = ["lift_constants", "is_structural", "ENABLED"]

#: False keeps every constant in the C text (one module per value, the old
#: behaviour): for comparing against the compiler's constant folding, and for
#: tests that need a module no cache has.
ENABLED = True


def is_structural(value, dtype):
    """True when the constant ``value`` of ``dtype`` stays in the C text."""
    if np.dtype(dtype).kind != "f":
        return True
    v = float(np.asarray(value).reshape(()))
    if v == 0.0 or not math.isfinite(v):
        return True
    mantissa, _ = math.frexp(abs(v))
    return mantissa == 0.5


def _exponents(composite):
    """The constants used as the exponent of a pow inside ``composite``."""
    found = set()
    for node in composite._order:
        if getattr(node.op, "name", None) == "pow" and len(node.inputs) == 2:
            found.add(node.inputs[1])
    return found


def _lift_from_composite(composite):
    """(new composite with lifted constants as extra inputs, their values) or None."""
    from nbgraph.tensor.scalar_composite import Composite

    keep = _exponents(composite)
    lifted = []
    for node in composite._order:
        for var in node.inputs:
            if isinstance(var, Constant) and var not in keep and var not in lifted \
                    and not is_structural(var.data, var.type.dtype):
                lifted.append(var)
    if not lifted:
        return None
    fresh = [var.type() for var in lifted]
    outputs = clone_replace(list(composite.outputs), dict(zip(lifted, fresh, strict=True)))
    return Composite(list(composite.inputs) + fresh, outputs), [v.data for v in lifted]


def lift_constants(op, node):
    """``(kernel_node, values)`` for an Elemwise-like ``node`` of ``op`` (it has a
    ``scalar_op`` and ``with_scalar_op``), or None when nothing is lifted.

    ``kernel_node``'s inputs are ``node.inputs`` (size-1 tensor constants
    among them replaced by plain variables of their types, whose values are
    then passed as they are) followed by one all-ones-shaped input per
    constant lifted from the Composite; ``values`` are the arrays of those
    appended inputs.
    """
    from nbgraph.tensor.type import TensorType

    if not ENABLED:
        return None
    inputs = list(node.inputs)
    changed = False
    for k, var in enumerate(inputs):
        if isinstance(var, Constant) and np.asarray(var.data).size == 1 \
                and not is_structural(var.data, var.type.dtype):
            inputs[k] = var.type()
            changed = True
    scalar_op = op.scalar_op
    extra = []
    new_op = op
    found = _lift_from_composite(scalar_op) if hasattr(scalar_op, "_order") else None
    if found is not None:
        composite, values = found
        nd = node.inputs[0].type.ndim if node.inputs else node.outputs[0].type.ndim
        new_op = op.with_scalar_op(composite)
        for value, var in zip(values, composite.inputs[len(node.inputs):], strict=True):
            extra.append(np.full((1,) * nd, value, dtype=var.type.dtype))
            inputs.append(TensorType(var.type.dtype, (1,) * nd)())
        changed = True
    if not changed:
        return None
    kernel_node = Apply(new_op, inputs, [v.type() for v in node.outputs])
    return kernel_node, extra
