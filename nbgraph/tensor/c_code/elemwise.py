"""C loops for Elemwise (any scalar op with C code, Composite included).

One kernel per node, with two paths:

* **fast path** — every array input has the output's shape and is
  C-contiguous (inputs that are statically scalars, e.g. ``x * 2.0``'s
  constant, are read once before the loop): one flat loop over restrict
  pointers that gcc vectorises (transcendental calls too, through glibc's
  libmvec, when the compiler probe found it);
* **general path** — any ndim, any strides (negative too), broadcasting by
  stride 0: the iteration space is coalesced (dimensions every operand walks
  contiguously are merged), then an odometer runs the outer dimensions and
  a strided inner loop the last one.

Big loops of either path are split across the thread pool
(:mod:`~nbgraph.tensor.c_code.parallel`).  Shape checks run in C and come
back as ValueError naming the node.
``class Elemwise(ElemwiseC, Op)``.  :func:`broadcast_loop` is the reusable loop builder
(Alloc and the copy of Reshape use it too).
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.core.graph import Constant
from nbgraph.tensor.scalar_op import element_code
from nbgraph.tensor.dtypes import C_TYPES

__all__ = ["ElemwiseC", "ScalarKernelC", "LoopInput", "broadcast_loop", "scalar_element",
           "scalar_node", "c_str"]

MAXDIMS = 32
_RESTRICTED = ("float16", "complex64", "complex128")


class LoopInput:
    """One input of :func:`broadcast_loop`: the C name of a tensor operand, its C
    element type, and ``literal`` (a C expression replacing the array, for
    size-1 constants) or ``scalar`` (statically all-ones shape: read once);
    ``ndim``: its dimensions when fewer than the loop's (aligned to the right,
    as NumPy broadcasts), else None."""

    def __init__(self, cname, ctype, literal=None, scalar=False, ndim=None):
        self.cname = cname
        self.ctype = ctype
        self.literal = literal
        self.scalar = scalar or literal is not None
        self.ndim = ndim


def broadcast_loop(nd, inputs, outputs, element, sub, restrict=True, what="operands"):
    """C running ``element`` over the broadcast shape of ``outputs[0]``.

    ``inputs``: :class:`LoopInput` list; ``outputs``: ``[(cname, ctype)]``,
    all of the same shape.  ``element(in_exprs, out_lvalues)`` returns the C
    block for one element; its attribute ``cost`` (default 1) is the cost of
    one element in adds.  Each array input's dims must equal the output's
    or be 1 (checked; a mismatch fails with NumPy's wording).
    ``sub`` is the kernel's (with ``"helpers"`` and ``"operands"``).  With
    ``nd`` > 0 the result is the kernel's whole body (``sub["entry"]``, to be
    returned as the Op's ``c_code`` as it is): the loop's description, which
    the runtime checks and runs, its rows split across the thread pool when
    big (:mod:`~nbgraph.tensor.c_code.parallel`); with ``nd`` 0, statements
    computing the one element.
    """
    if nd:
        from nbgraph.tensor.c_code.parallel import parallel_loop

        return parallel_loop(nd, inputs, outputs, element, restrict, sub, what)
    L = ["{"]
    names = []
    for k, x in enumerate(inputs):
        names.append("nbg_v%d" % k)
        L.append("const %s nbg_v%d = %s;" % (x.ctype, k, x.literal if x.literal is not None
                                             else "*%s" % x.cname))
    L.append(element(names, ["*%s" % c for c, _ in outputs]))
    L.append("}")
    return "\n".join(L)


def c_str(text):
    """``text`` escaped for the inside of a C string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def literal_of(var):
    """A C literal for a size-1 constant input, else None."""
    if not isinstance(var, Constant):
        return None
    data = np.asarray(var.data)
    if data.size != 1:
        return None
    from nbgraph.tensor.scalar_type import get_scalar_type

    return get_scalar_type(var.type.dtype).c_literal(data.reshape(())[()])


def scalar_node(op, node):
    """The scalar Apply node ``op.scalar_op`` computes per element (cached on the op)."""
    from nbgraph.tensor.scalar_type import get_scalar_type

    key = tuple(v.type.dtype for v in node.inputs)
    cache = op.__dict__.setdefault("_c_scalar_nodes", {})
    found = cache.get(key)
    if found is None:
        found = cache[key] = op.scalar_op.make_node(*[get_scalar_type(d)() for d in key])
    return found


class ScalarKernelC(CLinkerOp):
    """C hooks shared by the Ops whose element code is ``self.scalar_op``'s C
    (Elemwise, FusedReduce): support code, headers and version come from it."""

    def has_c_code(self, node):
        """True when the scalar op has C code for these dtypes and ndim is supported."""
        if node is None:
            try:
                return bool(self.scalar_op.has_c_code(None))
            except Exception:
                return False
        operands = node.inputs if node.inputs else node.outputs
        if operands and operands[0].type.ndim > MAXDIMS:
            return False
        try:
            snode = scalar_node(self, node)
        except (TypeError, ValueError):
            return False
        try:
            if not self.scalar_op.has_c_code(snode):
                return False
            # float16/complex values inside (a Composite's intermediates too) need C
            # written for them, whatever the node's own operands are
            # (the node's own operands are the linker's check, c_handles_restricted)
            inner = list(getattr(self.scalar_op, "_order", ()))
            if any(v.type.dtype in _RESTRICTED for n in inner for v in n.inputs + n.outputs):
                return bool(self.scalar_op.c_handles_restricted(snode))
            return True
        except Exception:
            return False

    def c_handles_restricted(self, node):
        """What the scalar op says of its float16/complex operands (scalar_op's
        ``c_handles_restricted``)."""
        try:
            return bool(self.scalar_op.c_handles_restricted(scalar_node(self, node)))
        except (TypeError, ValueError):
            return False

    def c_support_code(self, node=None):
        try:
            code = self.scalar_op.c_support_code(scalar_node(self, node) if node else None)
        except TypeError:
            code = self.scalar_op.c_support_code()
        inner = [n for n in getattr(self.scalar_op, "_order", ())]  # a Composite's nodes
        if node is not None and any(v.type.dtype in ("complex64", "complex128")
                                    for n in [node] + inner for v in n.inputs + n.outputs):
            from nbgraph.tensor.scalar_complex import COMPLEX_SUPPORT

            code = COMPLEX_SUPPORT + (code or "")
        return code

    def c_headers(self):
        return list(self.scalar_op.c_headers())

    def c_code_cache_version(self):
        inner = self.scalar_op.c_code_cache_version()
        return (2, inner) if inner else ()

    def c_constant_arguments(self, node):
        """Float constants (the node's size-1 inputs, the Composite's constants)
        become kernel inputs, but those the C compiler exploits (see
        :mod:`~nbgraph.tensor.c_code.constants`)."""
        from nbgraph.tensor.c_code.constants import lift_constants

        return lift_constants(self, node)

    def with_scalar_op(self, scalar_op):
        """This op with another scalar op (same structure otherwise)."""
        raise NotImplementedError


class ElemwiseC(ScalarKernelC):
    """The C side of Elemwise: one loop over the broadcast shape (module docstring)."""

    def with_scalar_op(self, scalar_op):
        return type(self)(scalar_op, dict(self.inplace_pattern))

    def c_output_rule(self, node):
        """Outputs of the inputs' broadcast shape; an in-place output is its target input."""
        destroyed = dict(self.inplace_pattern)
        return OutputRule.broadcast(tuple(destroyed.get(j, -1)
                                          for j in range(len(node.outputs))))

    def c_code(self, node, name, inputs, outputs, sub):
        """The loops of one Elemwise node (see the module docstring)."""
        snode = scalar_node(self, node)
        nd = node.outputs[0].type.ndim
        loop_inputs = []
        for cname, var in zip(inputs, node.inputs, strict=True):
            literal = literal_of(var)
            scalar = literal is not None or all(s == 1 for s in var.type.shape)
            loop_inputs.append(LoopInput(cname, C_TYPES[var.type.dtype], literal, scalar))
        loop_outputs = [(cname, C_TYPES[var.type.dtype]) for cname, var in
                        zip(outputs, node.outputs, strict=True)]
        element = scalar_element(self.scalar_op, snode, name, sub)
        restrict = not self.inplace_pattern
        return broadcast_loop(nd, loop_inputs, loop_outputs, element, restrict=restrict,
                              what=c_str(str(self)), sub=sub)


def scalar_element(scalar_op, snode, name, sub):
    """``element(in_exprs, out_lvalues)`` for :func:`broadcast_loop`: the scalar
    op's C code over one element; ``element.cost`` is the op's element_cost."""
    in_types = [C_TYPES[v.type.dtype] for v in snode.inputs]
    out_types = [C_TYPES[v.type.dtype] for v in snode.outputs]
    scalar_sub = dict(sub)

    def element(in_exprs, out_lvalues):
        lines = ["{"]
        names = []
        for k, (expr, ct) in enumerate(zip(in_exprs, in_types, strict=True)):
            lines.append("const %s nbg_a%d = %s;" % (ct, k, expr))
            names.append("nbg_a%d" % k)
        results = []
        for j, ct in enumerate(out_types):
            lines.append("%s nbg_r%d;" % (ct, j))
            results.append("nbg_r%d" % j)
        lines.append("{")
        lines.append(element_code(scalar_op, snode, name + "_s", names, results, scalar_sub))
        lines.append("}")
        for lv, r in zip(out_lvalues, results, strict=True):
            lines.append("%s = %s;" % (lv, r))
        lines.append("}")
        return "\n".join(lines)
    element.cost = scalar_op.element_cost
    return element
