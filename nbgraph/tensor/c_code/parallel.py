"""Elementwise loops split across the thread pool (see :mod:`nbgraph.linkers.c.threads`).

A kernel holds only what is its own: two row functions emitted before it
(through ``sub["helpers"]``, named after ``sub["kernel"]``), a context struct
of its scalar values, and a description of its loop (``nbg_loop``,
``csrc/common.h``: each operand's slot, dims and item size, the two
functions, the split's grain and threshold) that it hands to the runtime
library's ``nbg_run_loop`` (``nbgraph/linkers/c/csrc/helpers.h``), compiled
once instead of into every module.  That driver checks the operands' shapes,
reads the scalar inputs into the context and runs the rows: as one flat row
when all operands are contiguous, else as the rows of the general iterator,
splitting the range across the pool when it has at least :func:`min_parallel`
elements and the workers are awake (they spin for a while after each job), or
four times that, or when such loops keep coming, while they sleep (waking one
costs ~15 us here); else the rows run on the calling thread.  Each element is
computed by exactly one thread with the same code, so results never depend on
the thread count.

``_unit`` runs the element code over a row of unit strides: its operands are
restrict parameters of ``_loop``, inlined into it (GCC ignores restrict on
local pointers and would version the loop for aliasing: a second, scalar
copy of the element code), one vectorisable loop; its signature is the same
for every kernel (context, operand pointers, length), so the runtime calls it
directly.  Rows of other strides run ``_strided``, a plain loop compiled at
-O1 (``NBG_STRIDED_ROW``: vectorising it costs compile time and such rows gain
little from it, and -O1 costs the compiler half of what -O3 without
vectorisation does, for the same scalar code's results).  A big contiguous
output (``NBG_STREAM_MIN`` bytes) of a cheap element (weight <= 2: exact
operations, whose results do not depend on the vector width) is written with
non-temporal stores, which saves reading the output's cache lines before
writing them: the runtime runs ``_unit`` tile by tile (``NBG_TILE_BYTES``) into
buffers in L1 that it then streams out.

Compile work (cachegrind on cc1 with this CPU's real -march flags, the 12-layer
MLP's module, two units, reductions already driven by the runtime): 761 + 750
million compiler instructions when each kernel had its own row dispatcher,
tile driver and an entry reading every operand into locals, 476 + 668 without
(the runtime library, one unit at -Og: 497 -> 635 million, once per machine).
"""

__all__ = ["element_weight", "min_parallel", "parallel_loop", "helper_prefix"]

#: Elements below which a loop of weight 1 (an add: ~0.3-0.5 ns per element
#: on one core) stays on one thread.  Measured on a 2-core AMD EPYC VM: a job
#: costs ~1-2 us when the workers are spinning (right after another job),
#: ~15 us when they sleep (waking a thread); two threads gain nothing on
#: 65536 adds (~25 us, L2-sized operands), ~1.2x on 100k-300k, 1.5-2x on 1e6.
MIN_PARALLEL = 131072
#: Reductions read without writing; they gain as much from the same sizes
#: (a sum of 1e6: 1.8x; sum((x-y)**2) of 30000: 1.6x).
REDUCE_FACTOR = 1
#: Never split fewer elements than this, however costly each one is.
MIN_PARALLEL_FLOOR = 2048
#: Elements of at most this weight (adds, multiplies, comparisons: exact, so
#: computed alike at any vector width) may write big outputs around the caches.
STREAM_WEIGHT = 2


def element_weight(element):
    """The cost of one element of ``element`` (a loop's element function), in
    adds: its ``cost`` attribute (scalar ops' ``element_cost``), else 1."""
    return max(1, int(getattr(element, "cost", 1)))


def min_parallel(weight, reduction=False):
    """The size from which a loop of this element weight is split across threads."""
    base = MIN_PARALLEL * (REDUCE_FACTOR if reduction else 1)
    return max(MIN_PARALLEL_FLOOR, base // max(1, weight))


def helper_prefix(sub):
    """A fresh name prefix for this kernel's helper functions."""
    return "%s_h%d" % (sub["kernel"], len(sub["helpers"]))


def parallel_loop(nd, inputs, outputs, element, restrict, sub, what):
    """The helpers (appended to ``sub["helpers"]``) and the kernel's whole body
    (``sub["entry"]`` is set: see :func:`nbgraph.linkers.c.codegen.node_kernel`)
    of an elementwise loop over the shape of ``outputs[0]``.

    ``inputs``: LoopInputs (array inputs, scalars read once, literals);
    ``outputs``: ``[(cname, ctype)]``; ``sub["operands"][cname]`` is
    ``(slot, dims offset, ndim)`` of each operand named there;
    ``element(in_exprs, out_lvalues)``: the C block of one element;
    ``what``: the node's name in messages (C string contents).
    """
    P = helper_prefix(sub)
    arrays = [(k, x) for k, x in enumerate(inputs) if not x.scalar]
    scalars = [(k, x) for k, x in enumerate(inputs) if x.scalar and x.literal is None]
    ops = [(x.cname, x.ctype, "nbg_p%d" % k, True) for k, x in arrays]
    ops += [(cname, ctype, "nbg_q%d" % j, False) for j, (cname, ctype) in enumerate(outputs)]
    names = {k: "nbg_v%d" % k for k, x in enumerate(inputs) if x.scalar}
    weight = element_weight(element)
    H = ["typedef struct {"]
    H += ["%s v%d;" % (x.ctype, k) for k, x in scalars] or ["char none;"]
    H.append("} %s_ctx;" % P)
    H += _strided_row(P, ops, inputs, names, outputs, element)
    H += _unit_loop(P, ops, inputs, names, outputs, element, "restrict " if restrict else "")
    H += _unit(P, ops)
    sub["helpers"].append("\n".join(H))
    sub["glue"] = True  # the kernel only describes its loop to the runtime (codegen)
    sub["entry"] = True
    # -- the kernel: its operands and functions, for the runtime's driver (csrc/helpers.h)
    described = [(x.cname, x.ctype, False, "0") for _, x in arrays]
    described += [(cname, ctype, False, "0") for cname, ctype in outputs]
    described += [(x.cname, x.ctype, True, "offsetof(%s_ctx, v%d)" % (P, k)) for k, x in scalars]
    rows, padded, dims = _operand_rows(described, nd, sub["operands"])
    stream = "sizeof(%s)" % outputs[0][1] if weight <= STREAM_WEIGHT else "0"
    L = ["static const nbg_operand nbg_o[%d] = {%s};" % (len(rows), ", ".join(rows)),
         "static const nbg_loop nbg_l = {%s_unit, %s_strided, \"%s\", %d, %d, %d, %d, 64, %d, "
         "%s, nbg_o};" % (P, P, what, nd, len(arrays), len(ops), len(scalars),
                          min_parallel(weight), stream),
         "%s_ctx nbg_c;" % P]
    if padded:  # an input of fewer dimensions (Alloc's value): all dims, padded, in nbg_d
        L.append("const int64_t nbg_d[%d] = {%s};" % (len(padded), ", ".join(padded)))
    L.append("return nbg_run_loop(&nbg_l, &nbg_c, nbg_ptrs, %s, nbg_err);" % dims)
    return "\n".join(L)


def _operand_rows(described, nd, slots):
    """The ``nbg_operand`` initialisers of a loop's operands (``described``:
    ``(cname, ctype, read once?, context offset)``; ``slots``: codegen's
    ``sub["operands"]``), and, when an array input has fewer dimensions than
    the loop (aligned to the right: the leading ones of size 1, stride 0),
    the entries of a dims array holding every operand's (else None), and
    the C name of the dims array the runtime reads."""
    rows, entries = [], []
    pad = any(slots[c][2] < nd for c, _, once, _ in described if not once)
    for cname, ctype, once, at in described:
        slot, off, own = slots[cname]
        ndim = own if once else nd
        lead = ndim - own
        rows.append("{%d, %d, %d, sizeof(%s), %s}" % (
            slot, ndim, len(entries) if pad else off, ctype, at))
        entries += ["1" if e < lead else "nbg_dims[%d]" % (off + e - lead) for e in range(ndim)]
        entries += ["0" if e < lead else "nbg_dims[%d]" % (off + own + e - lead)
                    for e in range(ndim)]
    return rows, entries if pad else None, "nbg_d" if pad else "nbg_dims"


def _row_head(scalars):
    lines = ["int nbg_status = NBG_VALUE_ERROR;", "(void)nbg_c; (void)nbg_err; (void)nbg_status;"]
    for k, x in enumerate(scalars):
        if x is not None:
            lines.append("const %s nbg_v%d = %s;" % (x.ctype, k, x.literal if x.literal is not None
                                                      else "nbg_c->v%d" % k))
    return lines


_ROW_TAIL = ["return 0;", "nbg_fail:", "return nbg_status ? nbg_status : NBG_VALUE_ERROR;", "}"]


def _scalars(inputs):
    return [x if x.scalar else None for x in inputs]


def _strided_row(P, ops, inputs, names, outputs, element):
    """``<P>_strided``: one row of any strides, never vectorised (rows reach it
    only when some stride is not 1; vectorising it costs compile time for no
    run time), compiled at -O1 (``NBG_STRIDED_ROW``)."""
    H = ["static NBG_NOINLINE NBG_STRIDED_ROW int %s_strided(const void *nbg_vc, "
         "char *const *nbg_row, const int64_t *nbg_rs, int64_t nbg_len, char *nbg_err) {" % P,
         "const %s_ctx *nbg_c = (const %s_ctx *)nbg_vc;" % (P, P)]
    H += _row_head(_scalars(inputs))
    for m, (_, ctype, p, is_in) in enumerate(ops):
        c = "const " if is_in else ""
        H.append("%s%s *%s = (%s%s *)nbg_row[%d];" % (c, ctype, p, c, ctype, m))
        H.append("const int64_t %s_s = nbg_rs[%d];" % (p, m))
    H.append("int64_t nbg_i;")
    H.append("for (nbg_i = 0; nbg_i < nbg_len; nbg_i++) {")
    H.append(element([names[k] if x.scalar else "nbg_p%d[nbg_i * nbg_p%d_s]" % (k, k)
                      for k, x in enumerate(inputs)],
                     ["nbg_q%d[nbg_i * nbg_q%d_s]" % (j, j) for j in range(len(outputs))]))
    H.append("}")
    return H + _ROW_TAIL


def _unit_loop(P, ops, inputs, names, outputs, element, rq):
    """``<P>_loop``: the element loop over one row of unit strides, its operands
    restrict parameters (unless in place: GCC ignores restrict on local
    pointers and would version the loop for aliasing, a second, scalar copy of
    the element code); inlined into ``<P>_unit``, its only caller."""
    params = ", ".join("%s%s *%s%s" % ("const " if is_in else "", ctype, rq, p)
                       for _, ctype, p, is_in in ops)
    H = ["static int %s_loop(const %s_ctx *nbg_c, %s, int64_t nbg_len, char *nbg_err) {"
         % (P, P, params)]
    H += _row_head(_scalars(inputs))
    H.append("int64_t nbg_i;")
    H.append("for (nbg_i = 0; nbg_i < nbg_len; nbg_i++) {")
    H.append(element([names[k] if x.scalar else "nbg_p%d[nbg_i]" % k
                      for k, x in enumerate(inputs)],
                     ["nbg_q%d[nbg_i]" % j for j in range(len(outputs))]))
    H.append("}")
    return H + _ROW_TAIL


def _unit(P, ops):
    """``<P>_unit``, the row of unit strides the runtime calls (a fixed signature:
    the context, each operand's first element, the length)."""
    args = ", ".join("(%s%s *)nbg_row[%d]" % ("const " if is_in else "", ctype, m)
                     for m, (_, ctype, _, is_in) in enumerate(ops))
    return ["static int %s_unit(const void *nbg_vc, char *const *nbg_row, int64_t nbg_len, "
            "char *nbg_err) {" % P,
            "return %s_loop((const %s_ctx *)nbg_vc, %s, nbg_len, nbg_err);" % (P, P, args),
            "}"]
