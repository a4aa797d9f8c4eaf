"""Elementwise loops split across the thread pool (see :mod:`nbgraph.linkers.c.threads`).

The loop becomes two row functions emitted before the kernel (through
``sub["helpers"]``, named after ``sub["kernel"]``) and a context struct of
its scalar values: ``_row`` runs the element code over one row of unit
strides (a vectorisable loop over restrict pointers) and hands rows of other
strides to ``_strided`` (a plain loop, compiled at -O1, ``NBG_STRIDED_ROW``:
vectorising it costs compile time and such rows gain little from it, and -O1
costs the compiler half of what -O3 without vectorisation does, for the same
scalar code's results).  The kernel itself only checks its operands and calls
the runtime: it is compiled without optimisation (``sub["glue"]``, see
:mod:`nbgraph.linkers.c.codegen`).  Everything else is
the runtime library's ``nbg_run_rows`` (``nbgraph/linkers/c/csrc/helpers.h``),
compiled once instead of into every module: it walks the operands as one
flat row when all are contiguous, else as the rows of the general iterator,
and splits the range across the pool when it has at least
:func:`min_parallel` elements and the workers are awake (they spin for a
while after each job), or four times that, or when such loops keep coming,
while they sleep (waking one costs ~15 us here); else the rows run on the
calling thread.  Each element is computed by exactly one thread with the
same code, so results never depend on the thread count.

Rows of unit strides run ``_unit``, a function whose operands are restrict
parameters (GCC ignores restrict on local pointers and would version the loop
for aliasing: a second, scalar copy of the element code): one loop over the
element code.  A big contiguous output (``NBG_STREAM_MIN`` bytes) of a cheap
element (weight <= 2: exact operations, whose results do not depend on the
vector width) is written with non-temporal stores, which saves reading the
output's cache lines before writing them: ``_tiles`` (-O1, ``NBG_TILE_DRIVER``)
calls the same ``_unit`` tile by tile (``NBG_TILE_BYTES``) into a buffer in L1
that is then streamed out, so the element code is compiled once, in the
simplest loop (``_unit`` is ``NBG_ONE_COPY``: neither inlined into its two
callers nor specialised for the tile's length).  The tile loop's control flow
kept apart from the element loop costs the compiler far less: a cheap 6-op
chain's unit of the row 189.9 -> 161.7 million instructions (valgrind).
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


def parallel_loop(nd, inputs, arrays, scalar_names, outputs, element, restrict, sub, prolog):
    """The helpers (appended to ``sub["helpers"]``) and kernel statements of an
    elementwise loop over the shape of ``outputs[0]``.

    ``inputs``: LoopInputs; ``arrays``: ``[(k, input)]`` of the array inputs;
    ``scalar_names[k]``: the C name (``nbg_v<k>``) of a scalar input;
    ``outputs``: ``[(cname, ctype)]``; ``element(in_exprs, out_lvalues)``: the
    C block of one element; ``prolog``: the kernel's statements so far
    (checks, ``nbg_n``), which must define the ``nbg_v<k>`` of non-literal
    scalars.
    """
    P = helper_prefix(sub)
    ops = [(x.cname, x.ctype, "nbg_p%d" % k, True) for k, x in arrays]
    ops += [(cname, ctype, "nbg_q%d" % j, False) for j, (cname, ctype) in enumerate(outputs)]
    nops = len(ops)
    scalars = [(k, x) for k, x in enumerate(inputs) if x.scalar]
    weight = element_weight(element)
    H = ["typedef struct {"]
    H += ["%s v%d;" % (x.ctype, k) for k, x in scalars if x.literal is None] or ["char none;"]
    H.append("} %s_ctx;" % P)
    H += _strided_row(P, ops, inputs, scalars, scalar_names, outputs, element)
    stream = weight <= STREAM_WEIGHT
    H += _unit_loop(P, ops, inputs, scalars, scalar_names, outputs, element,
                    "restrict " if restrict else "", stream)
    if stream:
        H += _tiles(P, ops, outputs)
    H += _unit_row(P, ops, stream)
    sub["helpers"].append("\n".join(H))
    sub["glue"] = True  # the kernel itself only checks and hands rows over (codegen)
    # -- the kernel's part: the runtime's driver runs the rows (csrc/helpers.h)
    L = [prolog, "if (nbg_n > 0) {", "%s_ctx nbg_c;" % P]
    for k, x in scalars:
        if x.literal is None:
            L.append("nbg_c.v%d = nbg_v%d;" % (k, k))
    L.append("const int64_t *const nbg_dl[%d] = {%s};" % (
        nops, ", ".join("%s_dims" % c for c, _, _, _ in ops)))
    L.append("const int64_t *const nbg_sl[%d] = {%s};" % (
        nops, ", ".join("%s_strides" % c for c, _, _, _ in ops)))
    L.append("const int64_t nbg_items[%d] = {%s};" % (
        nops, ", ".join("sizeof(%s)" % t for _, t, _, _ in ops)))
    L.append("void *const nbg_bases[%d] = {%s};" % (nops, ", ".join(
        "(void *)%s" % c for c, _, _, _ in ops)))
    L.append("nbg_status = nbg_run_rows(%s_row, &nbg_c, %d, %d, %s_dims, nbg_dl, nbg_sl, "
             "nbg_items, nbg_bases, nbg_n, 64, %d, sizeof(%s), nbg_err);" % (
                 P, nd, nops, outputs[0][0], min_parallel(weight), outputs[0][1]))
    L.append("if (nbg_status) goto nbg_fail;")
    L.append("}")
    return "\n".join(L)


def _row_head(P, scalars):
    lines = ["int nbg_status = NBG_VALUE_ERROR;", "(void)nbg_c; (void)nbg_err; (void)nbg_status;"]
    for k, x in scalars:
        lines.append("const %s nbg_v%d = %s;" % (x.ctype, k, x.literal if x.literal is not None
                                                  else "nbg_c->v%d" % k))
    return lines


_ROW_TAIL = ["return 0;", "nbg_fail:", "return nbg_status ? nbg_status : NBG_VALUE_ERROR;", "}"]


def _strided_row(P, ops, inputs, scalars, scalar_names, outputs, element):
    """``<P>_strided``: one row of any strides, never vectorised (rows reach it
    only when some stride is not 1; vectorising it costs compile time for no
    run time), compiled at -O1 (``NBG_STRIDED_ROW``)."""
    H = ["static NBG_NOINLINE NBG_STRIDED_ROW int %s_strided(const %s_ctx *nbg_c, "
         "char *const *nbg_row, const int64_t *nbg_rs, int64_t nbg_len, char *nbg_err) {"
         % (P, P)]
    H += _row_head(P, scalars)
    for m, (_, ctype, p, is_in) in enumerate(ops):
        c = "const " if is_in else ""
        H.append("%s%s *%s = (%s%s *)nbg_row[%d];" % (c, ctype, p, c, ctype, m))
        H.append("const int64_t %s_s = nbg_rs[%d];" % (p, m))
    H.append("int64_t nbg_i;")
    H.append("for (nbg_i = 0; nbg_i < nbg_len; nbg_i++) {")
    H.append(element([scalar_names[k] if x.scalar else "nbg_p%d[nbg_i * nbg_p%d_s]" % (k, k)
                      for k, x in enumerate(inputs)],
                     ["nbg_q%d[nbg_i * nbg_q%d_s]" % (j, j) for j in range(len(outputs))]))
    H.append("}")
    return H + _ROW_TAIL


def _unit_row(P, ops, stream):
    """``<P>_row``, the row function given to ``nbg_run_rows``: unit strides
    run ``<P>_unit`` (a big output's rows ``<P>_tiles`` with ``stream``), other
    strides ``<P>_strided``."""
    nops = len(ops)
    args = ", ".join("(%s%s *)nbg_row[%d]" % ("const " if is_in else "", ctype, m)
                     for m, (_, ctype, _, is_in) in enumerate(ops))
    lines = ["static int %s_row(const void *nbg_vc, char *const *nbg_row, const int64_t *nbg_rs, "
             "int64_t nbg_len, int nbg_big, char *nbg_err) {" % P,
             "const %s_ctx *nbg_c = (const %s_ctx *)nbg_vc;" % (P, P),
             "int nbg_unit = 1, nbg_k;",
             "(void)nbg_big;",
             "for (nbg_k = 0; nbg_k < %d; nbg_k++) nbg_unit &= (nbg_rs[nbg_k] == 1);" % nops,
             "if (!nbg_unit) return %s_strided(nbg_c, nbg_row, nbg_rs, nbg_len, nbg_err);" % P]
    if stream:
        lines.append("if (NBG_STREAM_OK && nbg_big) return %s_tiles(nbg_c, %s, nbg_len, nbg_err);"
                     % (P, args))
    return lines + ["return %s_unit(nbg_c, %s, nbg_len, nbg_err);" % (P, args), "}"]


def _unit_loop(P, ops, inputs, scalars, scalar_names, outputs, element, rq, stream):
    """``<P>_unit``: the element loop over one row of unit strides, its operands
    restrict parameters (unless in place); never inlined with ``stream`` (its
    two callers, ``<P>_row`` and ``<P>_tiles``, share one copy of the loop)."""
    params = ", ".join("%s%s *%s%s" % ("const " if is_in else "", ctype, rq, p)
                       for _, ctype, p, is_in in ops)
    H = ["static %sint %s_unit(const %s_ctx *nbg_c, %s, int64_t nbg_len, char *nbg_err) {"
         % ("NBG_ONE_COPY " if stream else "", P, P, params)]
    H += _row_head(P, scalars)
    H.append("int64_t nbg_i;")
    H.append("for (nbg_i = 0; nbg_i < nbg_len; nbg_i++) {")
    H.append(element([scalar_names[k] if x.scalar else "nbg_p%d[nbg_i]" % k
                      for k, x in enumerate(inputs)],
                     ["nbg_q%d[nbg_i]" % j for j in range(len(outputs))]))
    H.append("}")
    return H + _ROW_TAIL


def _tiles(P, ops, outputs):
    """``<P>_tiles``: a row of unit strides whose output is big (``nbg_big``):
    ``<P>_unit`` runs up to output 0's next cache line, then tile by tile
    (``NBG_TILE_BYTES``) into buffers in L1 that non-temporal stores copy out,
    then the short rest; when an output is not aligned for that, the whole row
    runs ``<P>_unit``.  Its control flow is apart from the element loop, which
    GCC would otherwise compile with it (~60-80 million more instructions for
    a 6-op chain, valgrind)."""
    params = ", ".join("%s%s *%s" % ("const " if is_in else "", ctype, p)
                       for _, ctype, p, is_in in ops)
    ins = [p for _, _, p, is_in in ops if is_in]
    nout = len(outputs)

    def call(offset, outs, length):
        return "%s_unit(nbg_c, %s, %s, nbg_err)" % (
            P, ", ".join([p + offset for p in ins] + outs), length)

    width = _max_size(outputs)
    size0 = "sizeof(%s)" % outputs[0][1]
    whole = ["nbg_q%d" % j for j in range(nout)]
    H = ["static NBG_TILE_DRIVER int %s_tiles(const %s_ctx *nbg_c, %s, int64_t nbg_len, "
         "char *nbg_err) {" % (P, P, params),
         "enum { NBG_T = NBG_TILE_BYTES / (%s) < 32 ? 32 : NBG_TILE_BYTES / (%s) };"
         % (width, width)]
    H += ["%s nbg_b%d[NBG_T] __attribute__((aligned(64)));" % (ctype, j)
          for j, (_, ctype) in enumerate(outputs)]
    H += ["int64_t nbg_h, nbg_i;",
          "int nbg_status;",
          "if ((uintptr_t)nbg_q0 %% %s) return %s;" % (size0, call("", whole, "nbg_len")),
          "nbg_h = (int64_t)(((64 - ((uintptr_t)nbg_q0 & 63)) & 63) / %s);" % size0,
          "if (%s) return %s;" % (" || ".join(
              ["nbg_len < nbg_h + NBG_T"] +
              ["((uintptr_t)(nbg_q%d + nbg_h) & 15) != 0" % j for j in range(nout)]),
              call("", whole, "nbg_len")),
          "nbg_status = %s;" % call("", whole, "nbg_h"),
          "for (nbg_i = nbg_h; !nbg_status && nbg_len - nbg_i >= NBG_T; nbg_i += NBG_T) {",
          "nbg_status = %s;" % call(" + nbg_i", ["nbg_b%d" % j for j in range(nout)], "NBG_T")]
    H += ["nbg_stream(nbg_q%d + nbg_i, nbg_b%d, sizeof nbg_b%d);" % (j, j, j)
          for j in range(nout)]
    H += ["}",
          "if (!nbg_status) nbg_status = %s;" % call(
              " + nbg_i", ["nbg_q%d + nbg_i" % j for j in range(nout)], "nbg_len - nbg_i"),
          "NBG_SFENCE();",
          "return nbg_status;",
          "}"]
    return H


def _max_size(outputs):
    sizes = ["sizeof(%s)" % t for _, t in outputs]
    expr = sizes[0]
    for s in sizes[1:]:
        expr = "(%s > %s ? %s : %s)" % (expr, s, expr, s)
    return expr
