"""The loop of a reduction, on one thread or split across the thread pool.

:func:`reduce_rows` emits, through ``sub["helpers"]``, a context struct and

* ``_seg``: reduce elements ``[lo, hi)`` of one row into one value (a float
  sum pairwise: blocks of 128 with 8 accumulators merged as a binary
  cascade; anything else in order from the identity);
* ``_rows``: every row of an iterator, each reduced into its output element
  (``_seg``) or, when the innermost dimension is kept, combined element by
  element into a row of the output;
* ``_split`` / ``_units``: the two parallel tasks.

Only the loops over elements are compiled at -O3 (``_seg``'s, and
``_rows``'s kept row of unit strides): the tasks and the kernel itself (which
picks the mode and merges blocks) are glue at -O1, and the strided segment
and kept row are functions of their own (``_segs``, ``_keeps``), at -O1 too
(``NBG_STRIDED_ROW``, scalar loops, as elementwise rows of other strides are)
unless the element calls a function libmvec vectorises (exp, tanh, ...:
vector calls through gathers are ~2x faster there, and their last bits are
the ones these reductions always had).  The 12-layer MLP's mean of squares:
1126 -> ~660 million compiler instructions (valgrind; its module's first
unit 1416 -> 949M).  The price: a strided sum of cheap elements loses -O3's
gathers, e.g. sum((x - y)**2) over [:, ::2] views of 1000x1000 matrices,
one thread, 262-277 -> 325 us (process_time, min of 30).

Then the kernel picks, at run time, one of

* **serial**: ``_rows`` over the whole iterator;
* **split**: a kept dimension (one the output does not reduce) is cut into
  ranges and each thread runs ``_rows`` over its range: every output
  element is computed by one thread in the serial order;
* **units**: the innermost dimension is reduced but little is kept: each
  row is cut into fixed blocks of :data:`BLOCK` elements (a multiple of 128,
  so the pairwise leaves are the serial ones), the threads reduce blocks
  into an array, and this thread merges them in order, blocks of a row as
  the same binary cascade and rows into their output element.  That is
  exactly the serial sum (a cascade over 2^k leaves equals the cascade of
  its complete subtrees); max/min and integer sums are associative; a float
  product, which is not, keeps whole rows as units.

So results are bit-identical whatever the thread count, and to the serial
code.
"""

import re

import numpy as np

from nbgraph.tensor.c_code.parallel import element_weight, helper_prefix, min_parallel

__all__ = ["reduce_rows", "BLOCK", "UNITS"]

#: A call of a libm function that libmvec vectorises (``pow`` aside: its most
#: common use, ``x ** 2.0``, is folded into a product by the compiler).
_VECTOR_CALL = re.compile(r"\b(?:exp|log|sin|cos|tan|expm1|log1p|tanh)f?\s*\(")

#: Elements per block in "units" mode: 64 pairwise leaves of 128.
BLOCK = 8192
#: Blocks reduced per parallel job in "units" mode (their sums stay on the stack).
UNITS = 4096

_PAIRWISE = """%(t)s nbg_stack[64]; int nbg_level[64]; int nbg_top = 0;
int64_t nbg_b;
%(t)s nbg_acc = 0;
for (nbg_b = nbg_lo; nbg_b < nbg_hi; nbg_b += 128) {
    const int64_t nbg_e = nbg_b + 128 < nbg_hi ? nbg_b + 128 : nbg_hi;
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
*nbg_out = nbg_acc;"""


def reduce_rows(inputs, arrays, scalar_names, act, kind, acc_dtype, element, identity, comb,
                sub, nops):
    """The helpers (into ``sub["helpers"]``) and the kernel statements running
    the reduction over ``nbg_it`` (an initialised iterator whose last operand
    is the output, of C type ``act``).

    ``identity``: the C identity of ``kind``; ``comb(a, b)``: the C expression
    combining two ``act`` values; ``element(in_exprs, target)``: the element.
    """
    P = helper_prefix(sub)
    q = nops - 1
    pairwise = kind == "sum" and np.dtype(acc_dtype).kind == "f"
    blockable = not (kind == "prod" and np.dtype(acc_dtype).kind == "f")
    scalars = [(k, x) for k, x in enumerate(inputs) if x.scalar]
    weight = element_weight(element)

    def exprs(index, unit):
        if unit:
            return [scalar_names[k] if x.scalar else "nbg_p%d[%s]" % (k, index)
                    for k, x in enumerate(inputs)]
        return [scalar_names[k] if x.scalar else "nbg_p%d[(%s) * nbg_p%d_s]" % (k, index, k)
                for k, x in enumerate(inputs)]

    def seg(unit):
        if pairwise:
            return _PAIRWISE % {"t": act, "elem8": element(exprs("nbg_i + nbg_u", unit), "nbg_val"),
                                "elem1": element(exprs("nbg_i", unit), "nbg_val")}
        return "\n".join([
            "%s nbg_acc = %s;" % (act, identity),
            "int64_t nbg_i;",
            "for (nbg_i = nbg_lo; nbg_i < nbg_hi; nbg_i++) {",
            "%s nbg_val;" % act,
            element(exprs("nbg_i", unit), "nbg_val"),
            "nbg_acc = %s;" % comb("nbg_acc", "nbg_val"),
            "}",
            "*nbg_out = nbg_acc;"])

    def kept_row(unit):
        target = "nbg_q[nbg_i]" if unit else "nbg_q[nbg_i * nbg_q_s]"
        return "\n".join([
            "int64_t nbg_i;",
            "for (nbg_i = 0; nbg_i < nbg_inner; nbg_i++) {",
            "%s nbg_val;" % act,
            element(exprs("nbg_i", unit), "nbg_val"),
            "%s = %s;" % (target, comb(target, "nbg_val")),
            "}"])

    def head(ptr, inner):
        lines = ["int nbg_status = NBG_VALUE_ERROR;",
                 "(void)nbg_c; (void)nbg_err; (void)nbg_status;"]
        for k, x in scalars:
            lines.append("const %s nbg_v%d = %s;" % (
                x.ctype, k, x.literal if x.literal is not None else "nbg_c->v%d" % k))
        for m, (k, x) in enumerate(arrays):
            lines.append("const %s *nbg_p%d = (const %s *)%s[%d];" % (x.ctype, k, x.ctype, ptr, m))
            lines.append("const int64_t nbg_p%d_s = %s[%d];" % (k, inner, m))
        lines.append("const int nbg_unit = %s;" % (
            " && ".join(["nbg_p%d_s == 1" % k for k, _ in arrays]) or "1"))
        lines.append("(void)nbg_unit;")
        return lines

    fail = ["return 0;", "nbg_fail:", "return nbg_status ? nbg_status : NBG_VALUE_ERROR;", "}"]
    H = ["typedef struct {", "nbg_fails fails;", "const nbg_iter *it;", "int split;",
         "int64_t blk, nb, u0;", "%s *part;" % act]
    H += ["%s v%d;" % (x.ctype, k) for k, x in scalars if x.literal is None]
    H.append("} %s_ctx;" % P)
    params = ("(const %s_ctx *nbg_c, char *const *nbg_ptr, const int64_t *nbg_inn, int64_t "
              "nbg_lo, int64_t nbg_hi, %s *nbg_out, char *nbg_err) {" % (P, act))
    # the strided segment and kept row: functions of their own, at -O1 unless the
    # element calls a libm function libmvec vectorises (see the module docstring)
    level = "" if _VECTOR_CALL.search(element(exprs("nbg_i", False), "nbg_val")) \
        else " NBG_STRIDED_ROW"
    if arrays:
        H.append("static NBG_NOINLINE%s int %s_segs%s" % (level, P, params))
        H += head("nbg_ptr", "nbg_inn") + [seg(False)] + fail
    H.append("static int %s_seg%s" % (P, params))
    H += head("nbg_ptr", "nbg_inn")
    if arrays:
        H.append("if (!nbg_unit) return %s_segs(nbg_c, nbg_ptr, nbg_inn, nbg_lo, nbg_hi, "
                 "nbg_out, nbg_err);" % P)
    H += [seg(True)] + fail
    if arrays:
        H.append("static NBG_NOINLINE%s int %s_keeps(const %s_ctx *nbg_c, "
                 "char *const *nbg_ptr, const int64_t *nbg_inn, %s *nbg_q, int64_t nbg_q_s, "
                 "int64_t nbg_inner, char *nbg_err) {" % (level, P, P, act))
        H += head("nbg_ptr", "nbg_inn") + [kept_row(False)] + fail
    H.append("static NBG_NOINLINE int %s_rows(const %s_ctx *nbg_c, nbg_iter *nbg_it, "
             "char *nbg_err) {" % (P, P))
    H += head("nbg_it->ptr", "nbg_it->inner")[:2]
    H += ["do {",
          "%s *nbg_q = (%s *)nbg_it->ptr[%d];" % (act, act, q),
          "const int64_t nbg_q_s = nbg_it->inner[%d], nbg_inner = nbg_it->n;" % q,
          "if (nbg_q_s == 0) {",
          "%s nbg_acc;" % act,
          "const int nbg_st = %s_seg(nbg_c, nbg_it->ptr, nbg_it->inner, 0, nbg_inner, &nbg_acc, "
          "nbg_err);" % P,
          "if (nbg_st) return nbg_st;",
          "*nbg_q = %s;" % comb("*nbg_q", "nbg_acc"),
          "} else {"]
    H += head("nbg_it->ptr", "nbg_it->inner")[2:]
    strided = kept_row(False) if not arrays else (
        "const int nbg_st = %s_keeps(nbg_c, nbg_it->ptr, nbg_it->inner, nbg_q, nbg_q_s, "
        "nbg_inner, nbg_err);\nif (nbg_st) return nbg_st;" % P)
    H += ["if (nbg_unit && nbg_q_s == 1) {", kept_row(True), "} else {", strided, "}",
          "}", "} while (nbg_iter_next(nbg_it));"] + fail
    H.append(_TASKS % {"P": P, "nops": nops, "act": act})
    sub["glue"] = True  # the kernel only picks a mode and merges blocks: -O1 (codegen)
    sub["helpers"].append("\n".join(H))

    L = ["%s_ctx nbg_c;" % P, "int nbg_mode = 0;",
         "nbg_c.fails.failed = 0; nbg_c.fails.status = 0; nbg_c.fails.err = nbg_err;",
         "nbg_c.it = &nbg_it; nbg_c.split = -1;"]
    for k, x in scalars:
        if x.literal is None:
            L.append("nbg_c.v%d = nbg_v%d;" % (k, k))
    L.append(_CHOOSE % {"min": min_parallel(weight, reduction=True), "q": q})
    L.append("if (nbg_mode == 1) {")
    L.append("nbg_parallel(%s_split, &nbg_c, nbg_it.shape[nbg_c.split], "
             "nbg_c.split == nbg_it.nd - 1 ? 64 : 1, 0);" % P)
    L.append("} else if (nbg_mode == 2) {")
    L.append(_MERGE % {"P": P, "act": act, "q": q, "nops": nops, "units": UNITS,
                       "blk": BLOCK if blockable else "nbg_it.n",
                       "state": ("%s nbg_stack[64]; int nbg_level[64], nbg_top = 0;" % act
                                 if pairwise else "%s nbg_racc = %s;" % (act, identity)),
                       "push": _PUSH if pairwise else "nbg_racc = %s;" % comb("nbg_racc", "nbg_v"),
                       "store": (_COLLAPSE % {"act": act} if pairwise else
                                 "*nbg_q = %s; nbg_racc = %s;" % (comb("*nbg_q", "nbg_racc"),
                                                                  identity))})
    L.append("} else {")
    L.append("const int nbg_st = %s_rows(&nbg_c, &nbg_it, nbg_err);" % P)
    L.append("if (nbg_st) { nbg_status = nbg_st; goto nbg_fail; }")
    L.append("}")
    L.append("if (nbg_c.fails.failed) { nbg_status = nbg_c.fails.status; goto nbg_fail; }")
    return "\n".join(L)


_TASKS = r"""static NBG_GLUE void %(P)s_split(void *nbg_vc, int64_t nbg_b, int64_t nbg_e) {
    const %(P)s_ctx *nbg_c = (const %(P)s_ctx *)nbg_vc;
    char nbg_err[NBG_ERRLEN];
    nbg_iter nbg_sub;
    int nbg_st;
    nbg_err[0] = 0;
    nbg_iter_sub(nbg_c->it, &nbg_sub, nbg_c->split, nbg_b, nbg_e);
    nbg_st = %(P)s_rows(nbg_c, &nbg_sub, nbg_err);
    if (nbg_st) nbg_fail_once((nbg_fails *)&nbg_c->fails, nbg_st, nbg_err);
}
static NBG_GLUE void %(P)s_units(void *nbg_vc, int64_t nbg_b, int64_t nbg_e) {
    const %(P)s_ctx *nbg_c = (const %(P)s_ctx *)nbg_vc;
    const nbg_iter *nbg_it = nbg_c->it;
    const int64_t nbg_n = nbg_it->n, nbg_nb = nbg_c->nb;
    char nbg_err[NBG_ERRLEN];
    int64_t nbg_idx[NBG_MAXDIMS], nbg_u;
    int64_t nbg_j = (nbg_c->u0 + nbg_b) %% nbg_nb;
    char *nbg_ptr[%(nops)d];
    int nbg_st = 0;
    nbg_err[0] = 0;
    nbg_iter_seek(nbg_it, (nbg_c->u0 + nbg_b) / nbg_nb, nbg_idx, nbg_ptr);
    for (nbg_u = nbg_b; nbg_u < nbg_e; nbg_u++) {
        const int64_t nbg_lo = nbg_j * nbg_c->blk;
        const int64_t nbg_hi = nbg_n - nbg_lo > nbg_c->blk ? nbg_lo + nbg_c->blk : nbg_n;
        nbg_st = %(P)s_seg(nbg_c, nbg_ptr, nbg_it->inner, nbg_lo, nbg_hi, nbg_c->part + nbg_u,
                           nbg_err);
        if (nbg_st) break;
        if (++nbg_j == nbg_nb) {
            nbg_j = 0;
            if (nbg_u + 1 < nbg_e) nbg_iter_step(nbg_it, nbg_idx, nbg_ptr);
        }
    }
    if (nbg_st) nbg_fail_once((nbg_fails *)&nbg_c->fails, nbg_st, nbg_err);
}"""

#: Run-time choice of the mode (0 serial, 1 split, 2 units), see the module docstring.
_CHOOSE = r"""if (nbg_worth_splitting(nbg_nout * nbg_nred, %(min)d)) {
    const int nbg_nt = nbg_threads(), nbg_last = nbg_it.nd - 1;
    int64_t nbg_chunks = 0;
    int nbg_d;
    for (nbg_d = 0; nbg_d <= nbg_last; nbg_d++) {
        int64_t nbg_cn;
        if (nbg_it.st[%(q)d][nbg_d] == 0) continue;
        nbg_cn = nbg_d == nbg_last ? nbg_it.shape[nbg_d] / 64 : nbg_it.shape[nbg_d];
        if (nbg_cn > nbg_chunks) { nbg_chunks = nbg_cn; nbg_c.split = nbg_d; }
    }
    if (nbg_chunks >= 4 * nbg_nt) nbg_mode = 1;
    else if (nbg_it.st[%(q)d][nbg_last] == 0 && nbg_it.n >= 1024) nbg_mode = 2;
    else if (nbg_chunks >= 2) nbg_mode = 1;
}"""

_MERGE = r"""%(act)s nbg_part[%(units)d];
const int64_t nbg_blk = %(blk)s;
const int64_t nbg_nb = (nbg_it.n + nbg_blk - 1) / nbg_blk;
const int64_t nbg_units = nbg_iter_rows(&nbg_it) * nbg_nb;
int64_t nbg_u0, nbg_j = 0, nbg_idx2[NBG_MAXDIMS];
char *nbg_ptr2[%(nops)d];
%(state)s
nbg_c.part = nbg_part;
nbg_c.blk = nbg_blk;
nbg_c.nb = nbg_nb;
nbg_iter_seek(&nbg_it, 0, nbg_idx2, nbg_ptr2);
for (nbg_u0 = 0; nbg_u0 < nbg_units; nbg_u0 += %(units)d) {
    const int64_t nbg_m = nbg_units - nbg_u0 < %(units)d ? nbg_units - nbg_u0 : %(units)d;
    int64_t nbg_u;
    nbg_c.u0 = nbg_u0;
    nbg_parallel(%(P)s_units, &nbg_c, nbg_m, 1, 0);
    if (nbg_c.fails.failed) break;
    for (nbg_u = 0; nbg_u < nbg_m; nbg_u++) {
        %(act)s nbg_v = nbg_part[nbg_u];
        %(push)s
        if (++nbg_j == nbg_nb) {
            %(act)s *nbg_q = (%(act)s *)nbg_ptr2[%(q)d];
            %(store)s
            nbg_j = 0;
            nbg_iter_step(&nbg_it, nbg_idx2, nbg_ptr2);
        }
    }
}"""

_PUSH = """{
    int nbg_lvl = 0;
    while (nbg_top > 0 && nbg_level[nbg_top - 1] == nbg_lvl) {
        nbg_v = nbg_stack[--nbg_top] + nbg_v;
        nbg_lvl++;
    }
    nbg_stack[nbg_top] = nbg_v;
    nbg_level[nbg_top++] = nbg_lvl;
}"""

_COLLAPSE = """{
    %(act)s nbg_acc = nbg_stack[--nbg_top];
    while (nbg_top > 0) nbg_acc = nbg_stack[--nbg_top] + nbg_acc;
    *nbg_q = *nbg_q + nbg_acc;
}"""
