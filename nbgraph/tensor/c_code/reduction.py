"""C kernels for reductions: Reduce (sum/prod/max/min over any axes),
FusedReduce (a reduction whose input is an elementwise expression of several
broadcast inputs, read once, no temporary), and SumToShape.

:func:`reduction_loop` is the generator of the first two.  The iteration space
is the broadcast shape of the inputs; every operand (the output too, with
stride 0 along reduced dimensions) gets element strides in that space; the
dimensions are ordered by the first input's strides (memory order) and
coalesced.  Then either

* the innermost dimension is reduced: each run is reduced into one value
  (float sums pairwise, in blocks of 128 with 8 accumulators merged as a
  binary cascade, as accurate as NumPy's pairwise summation) and combined
  into its output element; or
* it is kept: the run is combined element by element into a row of the
  output (vectorisable).

Big reductions are split across the thread pool, with results bit-identical
to the serial loop whatever the thread count (see
:mod:`~nbgraph.tensor.c_code.parallel_reduce`).

max/min propagate NaN like ``np.max``; a reduction over an empty axis
fails like NumPy's (ValueError) for max/min and gives 0 / 1 for sum / prod;
integer sums and products wrap.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.tensor.c_code.elemwise import (
    LoopInput,
    ScalarKernelC,
    literal_of,
    c_str,
    scalar_node,
)
from nbgraph.tensor.c_code.parallel_reduce import reduce_rows
from nbgraph.tensor.dtypes import C_TYPES as _C_TYPES

__all__ = ["reduction_loop", "ReduceC", "FusedReduceC", "SumToShapeC"]


def _identity(kind, dtype):
    ct = _C_TYPES[dtype]
    kind_of = np.dtype(dtype).kind
    if kind == "sum":
        return "((%s)0)" % ct
    if kind == "prod":
        return "((%s)1)" % ct
    if kind_of == "f":
        return "((%s)%sINFINITY)" % (ct, "-" if kind == "max" else "")
    if kind_of == "b":
        return "((uint8_t)%d)" % (0 if kind == "max" else 1)
    info = np.iinfo(dtype)
    value = info.min if kind == "max" else info.max
    if kind_of == "u":
        return "((%s)%dULL)" % (ct, value)
    if value == np.iinfo(np.int64).min:
        return "((int64_t)(-9223372036854775807LL - 1))"
    return "((%s)%dLL)" % (ct, value)


def _combine(kind, dtype, a, b):
    """C expression combining accumulator ``a`` with value ``b`` (both of ``dtype``)."""
    ct = _C_TYPES[dtype]
    kind_of = np.dtype(dtype).kind
    if kind in ("sum", "prod"):
        sym = "+" if kind == "sum" else "*"
        if kind_of == "f":
            return "(%s %s %s)" % (a, sym, b)
        if kind_of == "b":
            return "((uint8_t)((%s) %s (%s)))" % (a, "||" if kind == "sum" else "&&", b)
        wide = "uint64_t" if np.dtype(dtype).itemsize == 8 else "uint32_t"
        return "((%s)((%s)(%s) %s (%s)(%s)))" % (ct, wide, a, sym, wide, b)
    cmp = ">" if kind == "max" else "<"
    if kind_of == "f":
        return "((%s %s %s || %s != %s) ? %s : %s)" % (b, cmp, a, b, b, b, a)
    return "((%s %s %s) ? %s : %s)" % (b, cmp, a, b, a)


def reduction_loop(nd, axis, inputs, output, kind, acc_dtype, element, what, sub):
    """C statements reducing an elementwise value over ``axis``.

    ``inputs``: :class:`~nbgraph.tensor.c_code.elemwise.LoopInput` list (all
    of ``nd`` dims, broadcast together); ``output``: the C name of the
    output tensor (``nd - len(axis)`` dims, C-contiguous, of ``acc_dtype``);
    ``element(in_exprs, target)``: C block setting ``target`` (a variable of
    ``acc_dtype``) to one element's value from the input expressions;
    ``what``: the op's name for messages (a C string body); ``sub``: the
    kernel's substitutions (the loop's helpers go to ``sub["helpers"]``, see
    :mod:`~nbgraph.tensor.c_code.parallel_reduce`).
    """
    act = _C_TYPES[acc_dtype]
    arrays = [(k, x) for k, x in enumerate(inputs) if not x.scalar]
    L = ["{", "int64_t nbg_nout = 1, nbg_nred = 1;", "char nbg_b1[200];", "(void)nbg_b1;"]
    if nd:
        L += _shape_checks(nd, axis, inputs, arrays, output, kind, act, what)
    L.append("{ int64_t nbg_j; for (nbg_j = 0; nbg_j < nbg_nout; nbg_j++) %s[nbg_j] = %s; }"
             % (output, _identity(kind, acc_dtype)))
    scalar_names = {}
    for k, x in enumerate(inputs):
        if x.scalar:
            scalar_names[k] = "nbg_v%d" % k
            L.append("const %s nbg_v%d = %s;" % (x.ctype, k, x.literal if x.literal is not None
                                                 else "*%s" % x.cname))
    if nd == 0:
        L.append("{ %s nbg_val;" % act)
        L.append(element([scalar_names[k] for k in range(len(inputs))], "nbg_val"))
        L.append("*%s = %s; }" % (output, _combine(kind, acc_dtype, "*" + output, "nbg_val")))
        L.append("(void)nbg_nred; (void)nbg_nout;")
        L.append("}")
        return "\n".join(L)
    L.append("if (nbg_nout > 0 && nbg_nred > 0) {")
    L += _iterator_setup(nd, axis, arrays, output, act)
    comb = lambda a, b: _combine(kind, acc_dtype, a, b)  # noqa: E731
    L.append(reduce_rows(inputs, arrays, scalar_names, act, kind, acc_dtype, element,
                         _identity(kind, acc_dtype), comb, sub))
    L.append("}")
    L.append("}")
    return "\n".join(L)


def _shape_checks(nd, axis, inputs, arrays, output, kind, act, what):
    """C lines of a reduction over ``nd > 0`` dims: the broadcast shape
    ``nbg_full``, the scalar inputs' all-ones check, the output's sizes and
    contiguity, ``nbg_nout``/``nbg_nred``, and the empty max/min error."""
    kept = [d for d in range(nd) if d not in axis]
    scalars = [x for x in inputs if x.scalar and x.literal is None]
    L = ["int64_t nbg_full[%d];" % nd]
    if arrays:
        L.append("const int64_t *const nbg_idims[%d] = {%s};" % (
            len(arrays), ", ".join("%s_dims" % x.cname for _, x in arrays)))
        L.append("if (NBG_UNLIKELY(nbg_broadcast_shape(%d, %d, nbg_idims, nbg_full, nbg_err, "
                 "\"%s\"))) goto nbg_fail;" % (nd, len(arrays), what))
    else:
        L.append("{ int nbg_d; for (nbg_d = 0; nbg_d < %d; nbg_d++) nbg_full[nbg_d] = 1; }"
                 % nd)
    if scalars:
        L.append("const int64_t *const nbg_sdims[%d] = {%s};" % (
            len(scalars), ", ".join("%s_dims" % x.cname for x in scalars)))
        L.append("if (NBG_UNLIKELY(nbg_check_ones(%d, %d, nbg_sdims, nbg_err, \"%s\"))) "
                 "goto nbg_fail;" % (nd, len(scalars), what))
    for j, d in enumerate(kept):
        L.append("if (%s_dims[%d] != nbg_full[%d]) { nbg_errorf(nbg_err, \"%%s: the output "
                 "has size %%lld in dimension %d, expected %%lld\", \"%s\", (long long)"
                 "%s_dims[%d], (long long)nbg_full[%d]); goto nbg_fail; }" % (
                     output, j, d, j, what, output, j, d))
    for d in range(nd):
        L.append("%s *= nbg_full[%d];" % ("nbg_nred" if d in axis else "nbg_nout", d))
    if kind in ("max", "min"):
        L.append("if (nbg_nred == 0) { nbg_errorf(nbg_err, \"%%s of an empty array (shape "
                 "%%s) has no value: zero-size reduction with no identity\", \"%s\", "
                 "nbg_shape_text(nbg_b1, 200, %d, nbg_full)); goto nbg_fail; }" % (what, nd))
    if kept:
        L.append(_OUTPUT_CONTIGUOUS % {"nd": len(kept), "o": output, "t": act, "what": what})
    return L


#: The output's contiguity check, by the runtime's nbg_all_contiguous (one operand
#: of its own shape): the inline nbg_contiguous cost each kernel ~28M compiler
#: instructions (valgrind, a SumToShape kernel at -O1).
_OUTPUT_CONTIGUOUS = """{
const int64_t *const nbg_od1[1] = {%(o)s_dims}, *const nbg_os1[1] = {%(o)s_strides};
const int64_t nbg_oi1[1] = {sizeof(%(t)s)};
if (!nbg_all_contiguous(%(nd)d, %(o)s_dims, 1, nbg_od1, nbg_os1, nbg_oi1)) {
    nbg_errorf(nbg_err, "%%s: the output must be C-contiguous", "%(what)s"); goto nbg_fail; }
}"""


def _iterator_setup(nd, axis, arrays, output, act):
    """C lines starting the iterator over the array inputs and the output, the
    output taken as an operand of the full shape (stride 0 along ``axis``)."""
    kept = [d for d in range(nd) if d not in axis]
    L = ["int64_t nbg_od[%d], nbg_os[%d];" % (nd, nd)]
    for d in range(nd):
        if d in axis:
            L.append("nbg_od[%d] = 1; nbg_os[%d] = 0;" % (d, d))
        else:
            j = kept.index(d)
            L.append("nbg_od[%d] = %s_dims[%d]; nbg_os[%d] = %s_strides[%d];" % (
                d, output, j, d, output, j))
    ops = [(x.cname, x.ctype) for _, x in arrays]
    nops = len(ops) + 1
    L.append("const int64_t *const nbg_dl[%d] = {%s nbg_od};" % (
        nops, "".join("%s_dims, " % c for c, _ in ops)))
    L.append("const int64_t *const nbg_sl[%d] = {%s nbg_os};" % (
        nops, "".join("%s_strides, " % c for c, _ in ops)))
    L.append("const int64_t nbg_items[%d] = {%s sizeof(%s)};" % (
        nops, "".join("sizeof(%s), " % t for _, t in ops), act))
    L.append("void *const nbg_bases[%d] = {%s (void *)%s};" % (
        nops, "".join("(void *)%s, " % c for c, _ in ops), output))
    L.append("nbg_iter nbg_it;")
    L.append("if (NBG_UNLIKELY(nbg_iter_init(&nbg_it, %d, %d, nbg_full, nbg_dl, nbg_sl, "
             "nbg_items, nbg_bases, 1, nbg_err))) { nbg_status = NBG_TYPE_ERROR; goto nbg_fail; }"
             % (nd, nops))
    return L


def c_op_name(op):
    """The Op's name as a C string literal (for error messages in generated C)."""
    return c_str(str(op))


def _cast_element(src_dtype, acc_dtype):
    from nbgraph.tensor.scalar_op import c_cast

    def element(in_exprs, target):
        return "%s = %s;" % (target, c_cast(in_exprs[0], src_dtype, acc_dtype))
    return element


# -- Reduce --------------------------------------------------------------------


class ReduceC(CLinkerOp):
    """The C side of Reduce (``kind`` over ``axis`` of its one input)."""

    def has_c_code(self, node):
        return node.inputs[0].type.ndim <= 32

    def c_code_cache_version(self):
        return (4,)

    def c_output_rule(self, node):
        """The input's shape less the reduced axes."""
        return OutputRule.drop_axes(self.axis)

    def c_code(self, node, name, inputs, outputs, sub):
        (x,) = node.inputs
        out = node.outputs[0]
        literal = literal_of(x)
        inp = LoopInput(inputs[0], _C_TYPES[x.type.dtype], literal,
                        literal is not None or all(s == 1 for s in x.type.shape))
        return reduction_loop(x.type.ndim, self.axis, [inp], outputs[0], self.kind,
                              out.type.dtype, _cast_element(x.type.dtype, out.type.dtype),
                              c_op_name(self), sub)


# -- FusedReduce ------------------------------------------------------------------


class FusedReduceC(ScalarKernelC):
    """The C side of FusedReduce: the reduction loop with the scalar op's C code
    inlined as the element value."""

    def c_handles_restricted(self, node):
        """No: its accumulation loops are written for the real dtypes (float16 and
        complex reductions run in Python)."""
        return False

    def with_scalar_op(self, scalar_op):
        return type(self)(self.kind, self.axis, scalar_op)

    def c_output_rule(self, node):
        """The inputs' broadcast shape less the reduced axes."""
        return OutputRule.drop_axes(self.axis)

    def c_code(self, node, name, inputs, outputs, sub):
        from nbgraph.tensor.scalar_op import c_cast

        nd = node.inputs[0].type.ndim if node.inputs else 0
        snode = scalar_node(self, node)
        loop_inputs = []
        for cname, var in zip(inputs, node.inputs, strict=True):
            literal = literal_of(var)
            loop_inputs.append(LoopInput(cname, _C_TYPES[var.type.dtype], literal,
                                         literal is not None or all(s == 1 for s in
                                                                    var.type.shape)))
        acc = node.outputs[0].type.dtype
        value_dtype = snode.outputs[0].type.dtype
        in_types = [_C_TYPES[v.type.dtype] for v in snode.inputs]
        vt = _C_TYPES[value_dtype]
        scalar_op = self.scalar_op

        def element(in_exprs, target):
            lines = ["{"]
            names = []
            for k, (expr, ct) in enumerate(zip(in_exprs, in_types, strict=True)):
                lines.append("const %s nbg_a%d = %s;" % (ct, k, expr))
                names.append("nbg_a%d" % k)
            lines.append("%s nbg_r0;" % vt)
            lines.append("{")
            lines.append(scalar_op.c_code(snode, name + "_s", names, ["nbg_r0"], dict(sub)))
            lines.append("}")
            lines.append("%s = %s;" % (target, c_cast("nbg_r0", value_dtype, acc)))
            lines.append("}")
            return "\n".join(lines)

        element.cost = scalar_op.element_cost
        return reduction_loop(nd, self.axis, loop_inputs, outputs[0], self.kind, acc, element,
                              c_op_name(self), sub)


# -- SumToShape ----------------------------------------------------------------


class SumToShapeC(CLinkerOp):
    """The C side of SumToShape: sum ``g`` over the dimensions where the target is 1."""

    def has_c_code(self, node):
        return node.inputs[0].type.ndim <= 32

    def c_code_cache_version(self):
        return (6,)

    def c_prepare_outputs(self, node, inputs):
        """A new array of the target shape; ``g`` itself when nothing is summed (the
        Op's view_map allows it, as ``perform`` does; the kernel then does nothing)."""
        g = inputs[0]
        if len(inputs) == 2:  # the template form, the one gradients build: its shape
            like = inputs[1]
            target = like.shape if type(like) is np.ndarray and like.ndim == g.ndim \
                else self.target_shape(inputs)
        else:
            target = self.target_shape(inputs)
        if g.shape == target:
            return [g]
        if g.ndim != len(target) or any(a != b and b != 1
                                        for a, b in zip(g.shape, target, strict=True)):
            raise ValueError("SumToShape: gradient of shape %s cannot be reduced to shape %s" % (
                g.shape, target))
        return [np.empty(target, node.outputs[0].type.numpy_dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        """Sum ``g`` over the dimensions where the output (the target shape) is 1:
        each output element in order from 0 (not pairwise), by the runtime's
        reduction driver (:func:`~nbgraph.tensor.c_code.parallel_reduce.reduce_rows`)."""
        g = node.inputs[0]
        nd = g.type.ndim
        dtype = g.type.dtype
        ct = _C_TYPES[dtype]
        gname, oname = inputs[0], outputs[0]
        if nd == 0:
            return "*%s = *%s;" % (oname, gname)
        grad = LoopInput(gname, ct)
        loop = reduce_rows([grad], [(0, grad)], {}, ct, "sum", dtype,
                           lambda exprs, target: "%s = %s;" % (target, exprs[0]),
                           _identity("sum", dtype), lambda a, b: _combine("sum", dtype, a, b),
                           sub, in_order=True)
        # (the output is the input itself when nothing is summed: nothing to do)
        return """if ((const void *)%(o)s != (const void *)%(g)s) {
const int64_t *const nbg_dl[2] = {%(g)s_dims, %(o)s_dims};
const int64_t *const nbg_sl[2] = {%(g)s_strides, %(o)s_strides};
const int64_t nbg_items[2] = {sizeof(%(t)s), sizeof(%(t)s)};
void *const nbg_bases[2] = {(void *)%(g)s, (void *)%(o)s};
const int64_t nbg_nout = nbg_size(%(nd)d, %(o)s_dims), nbg_ng = nbg_size(%(nd)d, %(g)s_dims);
int64_t nbg_j;
nbg_iter nbg_it;
if (nbg_check_broadcast(%(nd)d, %(g)s_dims, 1, nbg_dl + 1, nbg_err, "%(what)s")) goto nbg_fail;
%(contiguous)s
for (nbg_j = 0; nbg_j < nbg_nout; nbg_j++) %(o)s[nbg_j] = 0;
if (nbg_nout > 0 && nbg_ng > 0) {
const int64_t nbg_nred = nbg_ng / nbg_nout;
if (nbg_iter_init(&nbg_it, %(nd)d, 2, %(g)s_dims, nbg_dl, nbg_sl, nbg_items, nbg_bases, 1,
                  nbg_err)) { nbg_status = NBG_TYPE_ERROR; goto nbg_fail; }
%(loop)s
}
}""" % {"g": gname, "o": oname, "t": ct, "nd": nd, "what": c_op_name(self), "loop": loop,
            "contiguous": _OUTPUT_CONTIGUOUS % {"nd": nd, "o": oname, "t": ct,
                                                "what": c_op_name(self)}}
