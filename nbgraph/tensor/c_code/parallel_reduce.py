"""The loops of a reduction kernel, run by the runtime's reduction driver.

:func:`reduce_rows` emits, through ``sub["helpers"]``, a context struct (the
scalar inputs) and the kernel's own loops over its element expression:

* ``_seg``: reduce elements ``[lo, hi)`` of one row into one value (a float
  sum pairwise: blocks of 128 with 8 accumulators merged as a binary
  cascade; anything else in order from the identity);
* ``_keep``: combine a row element by element into a row of the output (the
  innermost dimension is kept);
* ``_comb``: combine two values.

and the kernel hands them, with its iterator, to ``nbg_reduce``
(``nbgraph/linkers/c/csrc/reduce.h``, compiled once into the runtime
library), which walks the rows and picks, at run time, one of

* **serial**: every row, reduced into its output element (``_seg``) or
  combined into a row of the output (``_keep``);
* **split**: a kept dimension (one the output does not reduce) is cut into
  ranges and each thread walks the rows of its range: every output element
  is computed by one thread in the serial order;
* **units**: the innermost dimension is reduced but little is kept: each
  row is cut into fixed blocks of ``NBG_RED_BLOCK`` elements (reduce.h: a
  multiple of 128, so the pairwise leaves are the serial ones), the threads
  reduce blocks into an array, and the calling thread merges them in order,
  blocks of a row as the same binary cascade and rows into their output
  element.  That is exactly the serial sum (a cascade over 2^k leaves
  equals the cascade of its complete subtrees); max/min and integer sums
  are associative; a float product, which is not, keeps whole rows as
  units.

So results are bit-identical whatever the thread count, and to the serial
code.  The mode choice, the tasks and the merge used to be generated into
every reduction kernel (~250 million compiler instructions at -O1 for the
12-layer MLP's mean of squares); the driver costs the runtime's build ~70M
once (valgrind, cc1, this machine's real -march flags).

Compile levels: the unit-stride segment at -O2 (``NBG_RED_LOOP``: GCC's
cheap vectoriser still makes the 8 accumulators one vector; -O3 also
vectorised the <= 7-element tail and versioned the loops: the MLP's mean of
squares' ``_seg`` took ~230M at -O3, ~100M at -O2), the unit-stride kept
row at -O3 (vectorised; -O2 would leave it scalar), the kernel and
``_comb`` at -O1 (glue).  The strided segment and kept row are functions of
their own (``_segs``, ``_keeps``), at -O1 (``NBG_STRIDED_ROW``, scalar
loops, as elementwise rows of other strides are).  An element calling a
function libmvec vectorises (exp, tanh, ...) keeps all its loops at -O3:
vector calls through gathers are ~2x faster there, and their last bits are
the ones these reductions always had (any other element is exact IEEE
arithmetic: the same bits at any level).  The price of -O1 strided loops: a
strided sum of cheap elements loses -O3's gathers, e.g. sum((x - y)**2) over
[:, ::2] views of 1000x1000 matrices, one thread, 262-277 -> 325 us
(process_time, min of 30).
"""

import re

import numpy as np

from nbgraph.tensor.c_code.parallel import element_weight, helper_prefix, min_parallel

__all__ = ["reduce_rows"]

#: A call of a libm function that libmvec vectorises (``pow`` aside: its most
#: common use, ``x ** 2.0``, is folded into a product by the compiler).
_VECTOR_CALL = re.compile(r"\b(?:exp|log|sin|cos|tan|expm1|log1p|tanh)f?\s*\(")

#: A call of pow / powf: its exponent (a C expression without parentheses).
_POW_CALL = re.compile(r"\bpowf?\s*\([^,()]*,\s*([^()]*?)\s*\)")


def _unfolded_pow(text):
    """Whether the element C ``text`` calls pow with an exponent other than a
    literal 2 (directly, or through a constant it defines): GCC turns ``pow(x,
    2.0)`` into ``x * x`` at any level, any other pow may be libmvec's vector
    pow in an -O3 loop, whose last bits the unit-stride segment keeps (so it
    stays at -O3)."""
    for match in _POW_CALL.finditer(text):
        exponent = match.group(1)
        defined = r"\b%s\s*=(?!=)\s*([^;]+?)\s*;" % re.escape(exponent)
        values = re.findall(defined, text) or [exponent]
        if any(_c_number(value) != 2.0 for value in values):
            return True
    return False


def _c_number(text):
    """The value of a C floating literal (decimal or hexadecimal), else None."""
    text = text.strip().rstrip("fFlL")
    try:
        return float.fromhex(text) if "x" in text.lower() else float(text)
    except ValueError:
        return None


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
                sub, in_order=False):
    """The helpers (into ``sub["helpers"]``) and the kernel statements running
    the reduction over ``nbg_it`` (an initialised iterator whose last operand
    is the output, of C type ``act``) by the runtime's driver ``nbg_reduce``.

    ``identity``: the C identity of ``kind``; ``comb(a, b)``: the C expression
    combining two ``act`` values; ``element(in_exprs, target)``: the element;
    ``in_order``: a float sum adds each output element's values in order
    (SumToShape's order), not pairwise.  The kernel defines ``nbg_nout`` and
    ``nbg_nred`` (output elements, elements reduced into each).
    """
    P = helper_prefix(sub)
    floats = np.dtype(acc_dtype).kind == "f"
    pairwise = kind == "sum" and floats and not in_order
    if pairwise and act not in _PAIRWISE_TYPES:
        raise ValueError("reduce_rows: no pairwise sum of C type %r" % act)
    blockable = not (floats and (kind == "prod" or (kind == "sum" and in_order)))
    scalars = [(k, x) for k, x in enumerate(inputs) if x.scalar]

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

    def head(out):
        lines = ["const %s_ctx *nbg_c = (const %s_ctx *)nbg_vc;" % (P, P),
                 "%s *const %s = (%s *)nbg_v%s;" % (act, out, act, out[4:]),
                 "int nbg_status = NBG_VALUE_ERROR;",
                 "(void)nbg_c; (void)nbg_err; (void)nbg_status;"]
        for k, x in scalars:
            lines.append("const %s nbg_v%d = %s;" % (
                x.ctype, k, x.literal if x.literal is not None else "nbg_c->v%d" % k))
        for m, (k, x) in enumerate(arrays):
            lines.append("const %s *nbg_p%d = (const %s *)nbg_ptr[%d];" % (x.ctype, k, x.ctype, m))
            lines.append("const int64_t nbg_p%d_s = nbg_inn[%d];" % (k, m))
        lines.append("const int nbg_unit = %s;" % (
            " && ".join(["nbg_p%d_s == 1" % k for k, _ in arrays]) or "1"))
        lines.append("(void)nbg_unit;")
        return lines

    fail = ["return 0;", "nbg_fail:", "return nbg_status ? nbg_status : NBG_VALUE_ERROR;", "}"]
    H = ["typedef struct {"]
    H += ["%s v%d;" % (x.ctype, k) for k, x in scalars if x.literal is None] or ["char none;"]
    H.append("} %s_ctx;" % P)
    seg_params = ("(const void *nbg_vc, char *const *nbg_ptr, const int64_t *nbg_inn, "
                  "int64_t nbg_lo, int64_t nbg_hi, void *nbg_vout, char *nbg_err) {")
    keep_params = ("(const void *nbg_vc, char *const *nbg_ptr, const int64_t *nbg_inn, "
                   "void *nbg_vq, int64_t nbg_q_s, int64_t nbg_inner, char *nbg_err) {")
    # the strided segment and kept row: functions of their own, at -O1 unless the
    # element calls a function libmvec vectorises (see the module docstring); the
    # unit-stride ones at -O2 (NBG_RED_LOOP) unless it does
    text = element(exprs("nbg_i", False), "nbg_val")
    vector = bool(_VECTOR_CALL.search(text))
    level = "" if vector else " NBG_STRIDED_ROW"
    loop = "" if vector or _unfolded_pow(text) else " NBG_RED_LOOP"
    H.append(_LOOP_LEVEL)
    if arrays:
        H.append("static NBG_NOINLINE%s int %s_segs%s" % (level, P, seg_params))
        H += head("nbg_out") + [seg(False)] + fail
    H.append("static NBG_NOINLINE%s int %s_seg%s" % (loop, P, seg_params))
    H += head("nbg_out")
    if arrays:
        H.append("if (!nbg_unit) return %s_segs(nbg_vc, nbg_ptr, nbg_inn, nbg_lo, nbg_hi, "
                 "nbg_vout, nbg_err);" % P)
    H += [seg(True)] + fail
    if arrays:
        H.append("static NBG_NOINLINE%s int %s_keeps%s" % (level, P, keep_params))
        H += head("nbg_q") + [kept_row(False)] + fail
    H.append("static NBG_NOINLINE int %s_keep%s" % (P, keep_params))
    H += head("nbg_q")
    H.append("if (!nbg_unit || nbg_q_s != 1) %s;" % (
        "return %s_keeps(nbg_vc, nbg_ptr, nbg_inn, nbg_vq, nbg_q_s, nbg_inner, nbg_err)" % P
        if arrays else "{\n%s\nreturn 0;\n}" % kept_row(False)))
    H += [kept_row(True)] + fail
    H.append("static NBG_GLUE void %s_comb(void *nbg_a, const void *nbg_b) {" % P)
    H.append("*(%s *)nbg_a = %s;" % (act, comb("*(%s *)nbg_a" % act, "*(const %s *)nbg_b" % act)))
    H.append("}")
    sub["glue"] = True  # the kernel only checks its operands and calls the driver: -O1
    sub["helpers"].append("\n".join(H))

    L = ["%s_ctx nbg_c;" % P,
         "static const %s nbg_id = %s;" % (act, identity),
         "nbg_reduce_spec nbg_rs;",
         "int nbg_st;"]
    for k, x in scalars:
        if x.literal is None:
            L.append("nbg_c.v%d = nbg_v%d;" % (k, k))
    L.append("nbg_rs.seg = %s_seg; nbg_rs.keep = %s_keep; nbg_rs.comb = %s_comb;" % (P, P, P))
    L.append("nbg_rs.user = &nbg_c; nbg_rs.identity = &nbg_id; nbg_rs.item = sizeof(%s);" % act)
    L.append("nbg_rs.min_n = %d; nbg_rs.pairwise = %d; nbg_rs.blockable = %d;" % (
        min_parallel(element_weight(element), reduction=True),
        _PAIRWISE_TYPES.get(act, 0) if pairwise else 0, int(blockable)))
    L.append("nbg_st = nbg_reduce(&nbg_rs, &nbg_it, nbg_nout * nbg_nred, nbg_err);")
    L.append("if (nbg_st) { nbg_status = nbg_st; goto nbg_fail; }")
    return "\n".join(L)


#: The accumulator types of pairwise sums, as the driver names them (``pairwise``).
_PAIRWISE_TYPES = {"double": 1, "float": 2}

#: NBG_RED_LOOP: a unit-stride segment's loop at -O2, whose cheap vectoriser
#: still turns the 8 accumulators into one vector (see the module docstring).
_LOOP_LEVEL = """#ifndef NBG_RED_LOOP
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_RED_LOOP __attribute__((optimize("O2")))
#else
#define NBG_RED_LOOP
#endif
#endif"""
