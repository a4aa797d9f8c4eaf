"""The C text of scalar ops: conversions, failures, C types, float16 via float32.

Helpers every ScalarOp's ``c_code`` builds on: ``c_cast`` (NumPy's implicit
conversions only), ``c_fail`` (report an error and jump out), the C type, kind
and libm suffix of a dtype, and ``element_code``, which computes a node with
float16 operands in float32 and rounds, as NumPy's float16 loops do.  All are
re-exported by :mod:`nbgraph.tensor.scalar_op`.

>>> c_cast("x", "int8", "float64"), c_type_of("uint16"), float_suffix("float32")
('((double)(x))', 'uint16_t', 'f')
"""

import numpy as np

from nbgraph.tensor.dtypes import C_TYPES, COMPLEX_DTYPES

__all__ = [
    "c_cast", "c_fail", "c_type_of", "c_wide_uint", "dtype_kind", "element_code",
    "float32_twin", "float_suffix",
]


def c_cast(expr, src, dst):
    """C expression converting ``expr`` (of dtype ``src``) to dtype ``dst``.

    Only conversions NumPy's ufunc loops make implicitly are covered (to bool,
    to floats, between integers); float-to-integer conversion belongs to the
    ``cast`` op, which guards against C's undefined behaviour.
    """
    if src == dst:
        return expr
    if dst == "bool":
        return "((uint8_t)((%s) != 0))" % expr
    if src in COMPLEX_DTYPES and dst not in COMPLEX_DTYPES:
        raise ValueError("c_cast does not drop imaginary parts; use the cast or real op")
    if np.dtype(src).kind in "fc" and np.dtype(dst).kind in "iu":
        raise ValueError("c_cast does not convert floats to integers; use the cast op")
    return "((%s)(%s))" % (C_TYPES[dst], expr)


def c_fail(sub, message):
    """C statements reporting ``message`` and running ``sub["fail"]``.

    When the caller's ``sub`` has ``"set_error"`` (a format string with one
    ``%s`` taking a C string literal), the message is passed through it first.
    """
    literal = '"%s"' % message.replace("\\", "\\\\").replace('"', '\\"')
    code = ""
    if "set_error" in sub:
        code = sub["set_error"] % literal + "\n"
    return "{ %s%s }" % (code, sub["fail"])


def float32_twin(op, node):
    """``op`` applied to float32 where ``node`` has float16 inputs, or None.

    Where only the outputs are float16 (NumPy's ``exp`` of an int8: the int8
    is read as float16, exactly), the 8-bit integer and bool inputs become
    float32 too.  None when the twin's output dtypes are not ``node``'s with
    float16 read as float32 (so computing the twin and rounding would not
    give ``node``).
    """
    from nbgraph.tensor.scalar_type import get_scalar_type as _get

    want = ["float32" if out.type.dtype == "float16" else out.type.dtype for out in node.outputs]
    half_in = any(v.type.dtype == "float16" for v in node.inputs)
    small = ("float16",) if half_in else ("float16", "bool", "int8", "uint8")
    try:
        twin = op.make_node(*[_get("float32" if v.type.dtype in small else v.type.dtype)()
                              for v in node.inputs])
    except (TypeError, ValueError):
        return None
    if [tout.type.dtype for tout in twin.outputs] != want:
        return None
    return twin


def element_code(op, node, name, inputs, outputs, sub):
    """The C of one scalar ``node``, float16 operands computed in float32.

    Where ``node`` has float16 operands (and ``op`` is not a Composite, which
    handles each inner node so), the inputs are widened to float, the op's
    float32 C runs, and float16 outputs are rounded (to nearest even): what
    NumPy's float16 loops do.
    """
    dtypes = [v.type.dtype for v in node.inputs + node.outputs]
    if "float16" not in dtypes or getattr(op, "c_half_native", False):
        return op.c_code(node, name, inputs, outputs, sub)
    twin = float32_twin(op, node)
    if twin is None:
        raise TypeError("%s has no float32 computation for %s" % (op, node))
    lines = ["{"]
    wide_in = []
    for k, (cname, var) in enumerate(zip(inputs, twin.inputs, strict=True)):
        wide_in.append("%s_w%d" % (name, k))
        lines.append("const %s %s = (%s)(%s);" % (var.type.c_type, wide_in[-1],
                                                  var.type.c_type, cname))
    wide_out = []
    for j, var in enumerate(twin.outputs):
        wide_out.append("%s_o%d" % (name, j))
        lines.append("%s %s;" % (var.type.c_type, wide_out[-1]))
    lines.append("{\n%s\n}" % op.c_code(twin, name, wide_in, wide_out, sub))
    for cname, wide, var in zip(outputs, wide_out, node.outputs, strict=True):
        lines.append("%s = (%s)%s;" % (cname, var.type.c_type, wide))
    lines.append("}")
    return "\n".join(lines)


def dtype_kind(dtype):
    """NumPy's kind character of ``dtype`` (``"f"``, ``"i"``, ``"u"``, ``"b"``...)."""
    return np.dtype(dtype).kind


def c_type_of(dtype):
    """The C type of ``dtype`` (from the one table, ``nbgraph.tensor.dtypes``)."""
    return C_TYPES[dtype]


def c_wide_uint(dtype):
    """The unsigned C type integer arithmetic of ``dtype`` wraps in (no UB, no int promotion)."""
    return "uint64_t" if np.dtype(dtype).itemsize == 8 else "uint32_t"


def float_suffix(dtype):
    """The libm suffix of ``dtype``: ``"f"`` for float32 (``sinf``), none for float64."""
    return "f" if dtype == "float32" else ""
