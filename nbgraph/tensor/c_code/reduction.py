"""C kernels for reductions: Reduce (sum/prod/max/min over any axes),
FusedReduce (a reduction whose input is an elementwise expression of several
broadcast inputs, read once, no temporary), and SumToShape.

:func:`reduction_loop` is the generator all three use.  The iteration space
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

max/min propagate NaN like ``np.max``; a reduction over an empty axis
fails like NumPy's (ValueError) for max/min and gives 0 / 1 for sum / prod;
integer sums and products wrap.
"""

import numpy as np

from nbgraph.tensor.c_code.elemwise import (
    _C_TYPES,
    LoopInput,
    _literal_of,
    broadcast_shape,
    scalar_node,
)

__all__ = ["reduction_loop", "reduce_c_code", "fused_reduce_c_code", "sum_to_shape_c_code",
           "bind_reduce", "bind_fused_reduce", "bind_sum_to_shape"]


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


def reduction_loop(nd, axis, inputs, output, kind, acc_dtype, element, what):
    """C statements reducing an elementwise value over ``axis``.

    ``inputs``: :class:`~nbgraph.tensor.c_code.elemwise.LoopInput` list (all
    of ``nd`` dims, broadcast together); ``output``: the C name of the
    output tensor (``nd - len(axis)`` dims, C-contiguous, of ``acc_dtype``);
    ``element(in_exprs, target)``: C block setting ``target`` (a variable of
    ``acc_dtype``) to one element's value from the input expressions.
    """
    act = _C_TYPES[acc_dtype]
    kept = [d for d in range(nd) if d not in axis]
    arrays = [(k, x) for k, x in enumerate(inputs) if not x.scalar]
    L = ["{", "char nbg_b1[200];", "(void)nbg_b1;", "int64_t nbg_nout, nbg_nred;"]
    L.append("int64_t nbg_full[NBG_MAXDIMS];")
    L.append("int nbg_d;")
    for d in range(nd):
        L.append("nbg_full[%d] = 1;" % d)
        for k, x in arrays:
            L.append("if (%s_dims[%d] != 1) { if (nbg_full[%d] != 1 && nbg_full[%d] != "
                     "%s_dims[%d]) { nbg_errorf(nbg_err, \"%s: operands could not be "
                     "broadcast together (dimension %d: %%lld and %%lld)\", (long long)"
                     "nbg_full[%d], (long long)%s_dims[%d]); goto nbg_fail; } nbg_full[%d] = "
                     "%s_dims[%d]; }" % (x.cname, d, d, d, x.cname, d, what, d, d, x.cname, d,
                                         d, x.cname, d))
    for k, x in enumerate(inputs):
        if x.scalar and x.literal is None and nd:
            cond = " || ".join("%s_dims[%d] != 1" % (x.cname, d) for d in range(nd))
            L.append("if (NBG_UNLIKELY(%s)) { nbg_errorf(nbg_err, \"%s: an operand of static "
                     "size 1 has shape %%s\", nbg_shape_text(nbg_b1, 200, %d, %s_dims)); "
                     "goto nbg_fail; }" % (cond, what, nd, x.cname))
    for j, d in enumerate(kept):
        L.append("if (%s_dims[%d] != nbg_full[%d]) { nbg_errorf(nbg_err, \"%s: the output "
                 "has size %%lld in dimension %d, expected %%lld\", (long long)%s_dims[%d], "
                 "(long long)nbg_full[%d]); goto nbg_fail; }" % (
                     output, j, d, what, j, output, j, d))
    L.append("nbg_nout = 1; nbg_nred = 1;")
    for d in range(nd):
        L.append("%s *= nbg_full[%d];" % ("nbg_nred" if d in axis else "nbg_nout", d))
    if kind in ("max", "min"):
        L.append("if (nbg_nred == 0) { nbg_errorf(nbg_err, \"%s of an empty array (shape %%s) "
                 "has no value: zero-size reduction with no identity\", nbg_shape_text(nbg_b1, "
                 "200, %d, nbg_full)); goto nbg_fail; }" % (what, nd))
    if kept:
        L.append("if (!nbg_contiguous(%d, %s_dims, %s_strides, sizeof(%s))) { nbg_errorf("
                 "nbg_err, \"%s: the output must be C-contiguous\"); goto nbg_fail; }" % (
                     len(kept), output, output, act, what))
    L.append("{ int64_t nbg_j; for (nbg_j = 0; nbg_j < nbg_nout; nbg_j++) %s[nbg_j] = %s; }"
             % (output, _identity(kind, acc_dtype)))
    scalar_names = {}
    for k, x in enumerate(inputs):
        if x.scalar:
            scalar_names[k] = "nbg_v%d" % k
            L.append("const %s nbg_v%d = %s;" % (x.ctype, k, x.literal if x.literal is not None
                                                 else "*%s" % x.cname))
    if nd == 0:
        ins = [scalar_names[k] for k in range(len(inputs))]
        L.append("{ %s nbg_val;" % act)
        L.append(element(ins, "nbg_val"))
        L.append("*%s = %s; }" % (output, _combine(kind, acc_dtype, "*" + output, "nbg_val")))
        L.append("(void)nbg_nred; (void)nbg_d;")
        L.append("}")
        return "\n".join(L)
    L.append("if (nbg_nout > 0 && nbg_nred > 0) {")
    ops = [(x.cname, x.ctype, "nbg_p%d" % k) for k, x in arrays]
    nops = len(ops) + 1
    L.append("int64_t nbg_shape[NBG_MAXDIMS], nbg_idx[NBG_MAXDIMS];")
    L.append("int64_t nbg_st[%d * NBG_MAXDIMS];" % nops)
    L.append("int nbg_nd;")
    L.append("for (nbg_d = 0; nbg_d < %d; nbg_d++) { nbg_shape[nbg_d] = nbg_full[nbg_d]; "
             "nbg_idx[nbg_d] = 0; }" % nd)
    for m, (cname, ctype, _) in enumerate(ops):
        L.append("if (nbg_elem_strides(%d, %s_dims, %s_strides, sizeof(%s), nbg_full, "
                 "nbg_st + %d * NBG_MAXDIMS) < 0) { nbg_errorf(nbg_err, \"%s: misaligned "
                 "strides\"); nbg_status = NBG_TYPE_ERROR; goto nbg_fail; }" % (
                     nd, cname, cname, ctype, m, what))
    qrow = "nbg_st + %d * NBG_MAXDIMS" % (nops - 1)
    for d in range(nd):
        if d in axis:
            L.append("(%s)[%d] = 0;" % (qrow, d))
        else:
            j = kept.index(d)
            L.append("(%s)[%d] = nbg_full[%d] == 1 ? 0 : %s_strides[%d] / (int64_t)sizeof(%s);"
                     % (qrow, d, d, output, j, act))
    if ops:
        # memory order of the first input: outer dimensions have larger strides
        L.append("""{
    int nbg_a, nbg_b, nbg_m;
    for (nbg_a = 1; nbg_a < %(nd)d; nbg_a++) {
        for (nbg_b = nbg_a; nbg_b > 0; nbg_b--) {
            int64_t nbg_sa = nbg_st[nbg_b - 1], nbg_sb = nbg_st[nbg_b];
            if (nbg_sa < 0) nbg_sa = -nbg_sa;
            if (nbg_sb < 0) nbg_sb = -nbg_sb;
            if (nbg_sb <= nbg_sa || nbg_shape[nbg_b] == 1 || nbg_shape[nbg_b - 1] == 1) break;
            { int64_t t = nbg_shape[nbg_b]; nbg_shape[nbg_b] = nbg_shape[nbg_b - 1];
              nbg_shape[nbg_b - 1] = t; }
            for (nbg_m = 0; nbg_m < %(nops)d; nbg_m++) {
                int64_t *row = nbg_st + nbg_m * NBG_MAXDIMS, t = row[nbg_b];
                row[nbg_b] = row[nbg_b - 1]; row[nbg_b - 1] = t;
            }
        }
    }
}""" % {"nd": nd, "nops": nops})
    L.append("nbg_nd = nbg_coalesce(%d, %d, nbg_shape, nbg_st);" % (nd, nops))
    for m, (cname, ctype, p) in enumerate(ops):
        L.append("const %s *%s = %s;" % (ctype, p, cname))
        L.append("const int64_t %s_s = nbg_st[%d * NBG_MAXDIMS + nbg_nd - 1];" % (p, m))
    L.append("%s *nbg_q = %s;" % (act, output))
    L.append("const int64_t nbg_q_s = nbg_st[%d * NBG_MAXDIMS + nbg_nd - 1];" % (nops - 1))
    L.append("const int64_t nbg_inner = nbg_shape[nbg_nd - 1];")

    def exprs(index):
        out = []
        for k, x in enumerate(inputs):
            if x.scalar:
                out.append(scalar_names[k])
            else:
                out.append("nbg_p%d[(%s) * nbg_p%d_s]" % (k, index, k))
        return out

    comb = lambda a, b: _combine(kind, acc_dtype, a, b)  # noqa: E731
    pairwise = kind == "sum" and np.dtype(acc_dtype).kind == "f"
    L.append("for (;;) {")
    L.append("if (nbg_q_s == 0) {")
    # the run is reduced into one value
    if pairwise:
        L.append("""%(t)s nbg_stack[64]; int nbg_level[64]; int nbg_top = 0;
int64_t nbg_b;
%(t)s nbg_acc = 0;
for (nbg_b = 0; nbg_b < nbg_inner; nbg_b += 128) {
    const int64_t nbg_e = nbg_b + 128 < nbg_inner ? nbg_b + 128 : nbg_inner;
    %(t)s nbg_r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    %(t)s nbg_blk;
    int64_t nbg_i = nbg_b;
    int nbg_lvl = 0;
    for (; nbg_i + 8 <= nbg_e; nbg_i += 8) {
        int nbg_u;
        for (nbg_u = 0; nbg_u < 8; nbg_u++) {
            %(t)s nbg_val;
            %(elem8)s
            nbg_r[nbg_u] = nbg_r[nbg_u] + nbg_val;
        }
    }
    nbg_blk = ((nbg_r[0] + nbg_r[1]) + (nbg_r[2] + nbg_r[3])) +
              ((nbg_r[4] + nbg_r[5]) + (nbg_r[6] + nbg_r[7]));
    for (; nbg_i < nbg_e; nbg_i++) {
        %(t)s nbg_val;
        %(elem1)s
        nbg_blk = nbg_blk + nbg_val;
    }
    while (nbg_top > 0 && nbg_level[nbg_top - 1] == nbg_lvl) {
        nbg_blk = nbg_stack[--nbg_top] + nbg_blk;
        nbg_lvl++;
    }
    nbg_stack[nbg_top] = nbg_blk;
    nbg_level[nbg_top++] = nbg_lvl;
}
if (nbg_top > 0) {
    nbg_acc = nbg_stack[--nbg_top];
    while (nbg_top > 0) nbg_acc = nbg_stack[--nbg_top] + nbg_acc;
}
*nbg_q = *nbg_q + nbg_acc;""" % {"t": act, "elem8": element(exprs("nbg_i + nbg_u"), "nbg_val"),
                            "elem1": element(exprs("nbg_i"), "nbg_val")})
    else:
        L.append("%s nbg_acc = %s;" % (act, _identity(kind, acc_dtype)))
        L.append("int64_t nbg_i;")
        L.append("for (nbg_i = 0; nbg_i < nbg_inner; nbg_i++) {")
        L.append("%s nbg_val;" % act)
        L.append(element(exprs("nbg_i"), "nbg_val"))
        L.append("nbg_acc = %s;" % comb("nbg_acc", "nbg_val"))
        L.append("}")
        L.append("*nbg_q = %s;" % comb("*nbg_q", "nbg_acc"))
    L.append("} else {")
    L.append("int64_t nbg_i;")
    L.append("for (nbg_i = 0; nbg_i < nbg_inner; nbg_i++) {")
    L.append("%s nbg_val;" % act)
    L.append(element(exprs("nbg_i"), "nbg_val"))
    L.append("nbg_q[nbg_i * nbg_q_s] = %s;" % comb("nbg_q[nbg_i * nbg_q_s]", "nbg_val"))
    L.append("}")
    L.append("}")
    L.append("for (nbg_d = nbg_nd - 2; nbg_d >= 0; nbg_d--) {")
    for m, (_, _, p) in enumerate(ops):
        L.append("%s += nbg_st[%d * NBG_MAXDIMS + nbg_d];" % (p, m))
    L.append("nbg_q += nbg_st[%d * NBG_MAXDIMS + nbg_d];" % (nops - 1))
    L.append("if (++nbg_idx[nbg_d] < nbg_shape[nbg_d]) break;")
    for m, (_, _, p) in enumerate(ops):
        L.append("%s -= nbg_st[%d * NBG_MAXDIMS + nbg_d] * nbg_shape[nbg_d];" % (p, m))
    L.append("nbg_q -= nbg_st[%d * NBG_MAXDIMS + nbg_d] * nbg_shape[nbg_d];" % (nops - 1))
    L.append("nbg_idx[nbg_d] = 0;")
    L.append("}")
    L.append("if (nbg_d < 0) break;")
    L.append("}")
    L.append("}")
    L.append("}")
    return "\n".join(L)


def _what(op):
    return str(op).replace('"', "'").replace("\\", "/").replace("%", "%%")


def _cast_element(src_dtype, acc_dtype):
    from nbgraph.tensor.scalar_op import c_cast

    def element(in_exprs, target):
        return "%s = %s;" % (target, c_cast(in_exprs[0], src_dtype, acc_dtype))
    return element


# -- Reduce --------------------------------------------------------------------


def reduce_c_code(self, node, name, inputs, outputs, sub):
    (x,) = node.inputs
    out = node.outputs[0]
    literal = _literal_of(x)
    inp = LoopInput(inputs[0], _C_TYPES[x.type.dtype], literal,
                    literal is not None or all(s == 1 for s in x.type.shape))
    return reduction_loop(x.type.ndim, self.axis, [inp], outputs[0], self.kind, out.type.dtype,
                          _cast_element(x.type.dtype, out.type.dtype), _what(self))


def reduce_prepare_outputs(self, node, inputs):
    x = inputs[0]
    axis = self.axis
    shape = tuple(s for i, s in enumerate(x.shape) if i not in axis)
    return [np.empty(shape, node.outputs[0].type.numpy_dtype)]


def reduce_has_c_code(self, node):
    return node.inputs[0].type.ndim <= 32


def _version(self):
    return (1,)


def bind_reduce(cls):
    """Install the C hooks on ``cls`` (Reduce)."""
    cls.c_code = reduce_c_code
    cls.c_prepare_outputs = reduce_prepare_outputs
    cls.has_c_code = reduce_has_c_code
    cls.c_code_cache_version = _version


# -- FusedReduce ------------------------------------------------------------------


def fused_reduce_c_code(self, node, name, inputs, outputs, sub):
    """The reduction loop with the scalar op's C code inlined as the element value."""
    from nbgraph.tensor.scalar_op import c_cast

    nd = node.inputs[0].type.ndim if node.inputs else 0
    snode = scalar_node(self, node)
    loop_inputs = []
    for cname, var in zip(inputs, node.inputs):
        literal = _literal_of(var)
        loop_inputs.append(LoopInput(cname, _C_TYPES[var.type.dtype], literal,
                                     literal is not None or all(s == 1 for s in var.type.shape)))
    acc = node.outputs[0].type.dtype
    value_dtype = snode.outputs[0].type.dtype
    in_types = [_C_TYPES[v.type.dtype] for v in snode.inputs]
    vt = _C_TYPES[value_dtype]
    scalar_op = self.scalar_op

    def element(in_exprs, target):
        lines = ["{"]
        names = []
        for k, (expr, ct) in enumerate(zip(in_exprs, in_types)):
            lines.append("const %s nbg_a%d = %s;" % (ct, k, expr))
            names.append("nbg_a%d" % k)
        lines.append("%s nbg_r0;" % vt)
        lines.append("{")
        lines.append(scalar_op.c_code(snode, name + "_s", names, ["nbg_r0"], dict(sub)))
        lines.append("}")
        lines.append("%s = %s;" % (target, c_cast("nbg_r0", value_dtype, acc)))
        lines.append("}")
        return "\n".join(lines)

    return reduction_loop(nd, self.axis, loop_inputs, outputs[0], self.kind, acc, element,
                          _what(self))


def fused_reduce_prepare_outputs(self, node, inputs):
    full = broadcast_shape([x.shape for x in inputs], "operands of %s" % self) if inputs else ()
    shape = tuple(s for i, s in enumerate(full) if i not in self.axis)
    return [np.empty(shape, node.outputs[0].type.numpy_dtype)]


def fused_reduce_has_c_code(self, node):
    if node is None:
        return bool(self.scalar_op.has_c_code(None))
    if node.inputs and node.inputs[0].type.ndim > 32:
        return False
    try:
        snode = scalar_node(self, node)
        return bool(self.scalar_op.has_c_code(snode))
    except Exception:
        return False


def fused_reduce_c_support_code(self, node=None):
    try:
        return self.scalar_op.c_support_code(scalar_node(self, node) if node else None)
    except TypeError:
        return self.scalar_op.c_support_code()


def fused_reduce_c_headers(self):
    return list(self.scalar_op.c_headers())


def fused_reduce_version(self):
    inner = self.scalar_op.c_code_cache_version()
    return (1, inner) if inner else ()


def bind_fused_reduce(cls):
    """Install the C hooks on ``cls`` (FusedReduce)."""
    cls.c_code = fused_reduce_c_code
    cls.c_prepare_outputs = fused_reduce_prepare_outputs
    cls.has_c_code = fused_reduce_has_c_code
    cls.c_support_code = fused_reduce_c_support_code
    cls.c_headers = fused_reduce_c_headers
    cls.c_code_cache_version = fused_reduce_version


# -- SumToShape ----------------------------------------------------------------


def sum_to_shape_c_code(self, node, name, inputs, outputs, sub):
    """Sum ``g`` over the dimensions where the output (``like``'s shape) is 1."""
    g, like = node.inputs
    nd = g.type.ndim
    dtype = g.type.dtype
    ct = _C_TYPES[dtype]
    gname, oname = inputs[0], outputs[0]
    what = _what(self)
    if nd == 0:
        return "*%s = *%s;" % (oname, gname)
    checks = []
    for d in range(nd):
        checks.append("if (%s_dims[%d] != %s_dims[%d] && %s_dims[%d] != 1) { nbg_errorf(nbg_err, "
                      "\"%s: gradient of size %%lld cannot be reduced to size %%lld in "
                      "dimension %d\", (long long)%s_dims[%d], (long long)%s_dims[%d]); "
                      "goto nbg_fail; }" % (gname, d, oname, d, oname, d, what, d, gname, d,
                                            oname, d))
    # Treat every dimension as "maybe reduced": the output's stride is 0 where it is 1.
    body = reduction_loop_runtime(nd, gname, ct, oname, dtype, what)
    return "\n".join(checks) + "\n" + body


def reduction_loop_runtime(nd, gname, ct, oname, dtype, what):
    """A sum of ``gname`` into ``oname`` where reduced dimensions are found at run time
    (the output has size 1 there)."""
    pairwise = np.dtype(dtype).kind == "f"
    lines = ["{", "int64_t nbg_shape[NBG_MAXDIMS], nbg_idx[NBG_MAXDIMS];",
             "int64_t nbg_st[2 * NBG_MAXDIMS];", "int nbg_nd, nbg_d;", "int64_t nbg_n;"]
    lines.append("nbg_n = nbg_size(%d, %s_dims);" % (nd, oname))
    lines.append("if (!nbg_contiguous(%d, %s_dims, %s_strides, sizeof(%s))) { nbg_errorf(nbg_err,"
                 " \"%s: the output must be C-contiguous\"); goto nbg_fail; }" % (
                     nd, oname, oname, ct, what))
    lines.append("{ int64_t j; for (j = 0; j < nbg_n; j++) %s[j] = 0; }" % oname)
    lines.append("if (nbg_n > 0 && nbg_size(%d, %s_dims) > 0) {" % (nd, gname))
    lines.append("for (nbg_d = 0; nbg_d < %d; nbg_d++) { nbg_shape[nbg_d] = %s_dims[nbg_d]; "
                 "nbg_idx[nbg_d] = 0; }" % (nd, gname))
    lines.append("if (nbg_elem_strides(%d, %s_dims, %s_strides, sizeof(%s), %s_dims, nbg_st) < 0)"
                 " { nbg_errorf(nbg_err, \"%s: misaligned strides\"); goto nbg_fail; }" % (
                     nd, gname, gname, ct, gname, what))
    lines.append("for (nbg_d = 0; nbg_d < %d; nbg_d++) nbg_st[NBG_MAXDIMS + nbg_d] = "
                 "(%s_dims[nbg_d] == 1) ? 0 : %s_strides[nbg_d] / (int64_t)sizeof(%s);" % (
                     nd, oname, oname, ct))
    lines.append("nbg_nd = nbg_coalesce(%d, 2, nbg_shape, nbg_st);" % nd)
    lines.append("const %s *nbg_p = %s; %s *nbg_q = %s;" % (ct, gname, ct, oname))
    lines.append("const int64_t nbg_ps = nbg_st[nbg_nd - 1], "
                 "nbg_qs = nbg_st[NBG_MAXDIMS + nbg_nd - 1], nbg_inner = nbg_shape[nbg_nd - 1];")
    add = _combine("sum", dtype, "%s", "%s")
    lines.append("for (;;) {")
    lines.append("int64_t nbg_i;")
    lines.append("if (nbg_qs == 0) {")
    lines.append("%s nbg_acc = 0;" % ct)
    if pairwise:
        lines.append("%s nbg_r[8] = {0, 0, 0, 0, 0, 0, 0, 0}; int nbg_u;" % ct)
        lines.append("for (nbg_i = 0; nbg_i + 8 <= nbg_inner; nbg_i += 8) for (nbg_u = 0; "
                     "nbg_u < 8; nbg_u++) nbg_r[nbg_u] += nbg_p[(nbg_i + nbg_u) * nbg_ps];")
        lines.append("nbg_acc = ((nbg_r[0] + nbg_r[1]) + (nbg_r[2] + nbg_r[3])) + ((nbg_r[4] + "
                     "nbg_r[5]) + (nbg_r[6] + nbg_r[7]));")
        lines.append("for (; nbg_i < nbg_inner; nbg_i++) nbg_acc += nbg_p[nbg_i * nbg_ps];")
    else:
        lines.append("for (nbg_i = 0; nbg_i < nbg_inner; nbg_i++) nbg_acc = %s;" % (
            add % ("nbg_acc", "nbg_p[nbg_i * nbg_ps]")))
    lines.append("*nbg_q = %s;" % (add % ("*nbg_q", "nbg_acc")))
    lines.append("} else {")
    lines.append("for (nbg_i = 0; nbg_i < nbg_inner; nbg_i++) nbg_q[nbg_i * nbg_qs] = %s;" % (
        add % ("nbg_q[nbg_i * nbg_qs]", "nbg_p[nbg_i * nbg_ps]")))
    lines.append("}")
    lines.append("for (nbg_d = nbg_nd - 2; nbg_d >= 0; nbg_d--) {")
    lines.append("nbg_p += nbg_st[nbg_d]; nbg_q += nbg_st[NBG_MAXDIMS + nbg_d];")
    lines.append("if (++nbg_idx[nbg_d] < nbg_shape[nbg_d]) break;")
    lines.append("nbg_p -= nbg_st[nbg_d] * nbg_shape[nbg_d]; nbg_q -= nbg_st[NBG_MAXDIMS + "
                 "nbg_d] * nbg_shape[nbg_d];")
    lines.append("nbg_idx[nbg_d] = 0;")
    lines.append("}")
    lines.append("if (nbg_d < 0) break;")
    lines.append("}")
    lines.append("}")
    lines.append("}")
    return "\n".join(lines)


def sum_to_shape_prepare_outputs(self, node, inputs):
    g, like = inputs
    if g.ndim != like.ndim:
        raise ValueError("SumToShape: gradient of shape %s cannot be reduced to shape %s" % (
            g.shape, like.shape))
    for a, b in zip(g.shape, like.shape):
        if a != b and b != 1:
            raise ValueError("SumToShape: gradient of shape %s cannot be reduced to shape %s"
                             % (g.shape, like.shape))
    return [np.empty(like.shape, node.outputs[0].type.numpy_dtype)]


def sum_to_shape_has_c_code(self, node):
    return node.inputs[0].type.ndim <= 32


def bind_sum_to_shape(cls):
    """Install the C hooks on ``cls`` (SumToShape)."""
    cls.c_code = sum_to_shape_c_code
    cls.c_prepare_outputs = sum_to_shape_prepare_outputs
    cls.has_c_code = sum_to_shape_has_c_code
    cls.c_code_cache_version = _version
