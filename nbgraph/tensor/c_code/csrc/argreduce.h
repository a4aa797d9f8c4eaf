/* argmax / argmin along one axis for one dtype (${T}, name ${S}), over the
   rows of an nbg_rows (operands 0 x along the axis, 1 the int64 indices,
   2 optionally the values at them: MaxAndArgmax's maximum).  As NumPy: the
   first extreme wins ties, the first NaN wins over everything (${NAN}(v) is
   0 for integer types). */
#ifndef NBG_ARGREDUCE_${S}_${K}
#define NBG_ARGREDUCE_${S}_${K}
static NBG_NOINLINE void nbg_${K}_rows_${S}(const nbg_rows *r, int with_value) {
    const int64_t n = r->n, step = r->step[0];
    int64_t idx[NBG_MAXDIMS], row, i;
    char *ptr[NBG_ROWS_MAXOPS];
    if (r->rows <= 0) return;
    nbg_rows_seek(r, 0, idx, ptr);
    for (row = 0; row < r->rows; row++) {
        const char *x = ptr[0];
        ${T} best = *(const ${T} *)x;
        int64_t k = 0;
        if (!${NAN}(best))
            for (i = 1; i < n; i++) {
                const ${T} v = *(const ${T} *)(x + i * step);
                if (${NAN}(v)) { k = i; best = v; break; }
                if (v ${CMP} best) { best = v; k = i; }
            }
        *(int64_t *)ptr[1] = k;
        if (with_value) *(${T} *)ptr[2] = best;
        nbg_rows_next(r, idx, ptr);
    }
}
#endif
