/* Row kernels of the softmax family for one float type (${T}, suffix ${S}):
   each works on one contiguous row of n values, the caller walks the rows.
   ${EXP}, ${LOG}, ${LOG1P}: the math.h functions of ${T} (libmvec vectorises
   the exp loops when the compiler probe found it).

   They compute what the Ops' perform (NumPy) computes, in the same order:
   the maximum propagates NaN like np.max, sums are NumPy's pairwise sum
   (same blocks, same result for the same terms), the softmax divides by the
   sum (no reciprocal), and log-softmax / the cross-entropy take the row's
   first maximal term out of the sum and use log1p of the rest when that
   term is exactly 1 (see nbgraph.tensor.nnet._log_sum_exp_shifted). */
#ifndef NBG_SOFTMAX_${S}
#define NBG_SOFTMAX_${S}

/* NumPy's pairwise summation of a[0..n) (numpy's pairwise_sum: blocks of at
   most 128 summed with 8 accumulators, halves split at a multiple of 8). */
static ${T} nbg_pwsum_${S}(const ${T} *a, int64_t n) {
    if (n < 8) {
        ${T} r = 0;
        int64_t i;
        for (i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        ${T} r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], r4 = a[4], r5 = a[5], r6 = a[6],
             r7 = a[7], res;
        int64_t i;
        for (i = 8; i < n - (n % 8); i += 8) {
            r0 += a[i]; r1 += a[i + 1]; r2 += a[i + 2]; r3 += a[i + 3];
            r4 += a[i + 4]; r5 += a[i + 5]; r6 += a[i + 6]; r7 += a[i + 7];
        }
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for (; i < n; i++) res += a[i];
        return res;
    } else {
        int64_t n2 = n / 2;
        n2 -= n2 % 8;
        return nbg_pwsum_${S}(a, n2) + nbg_pwsum_${S}(a + n2, n - n2);
    }
}

/* The maximum of a[0..n) (n >= 1), NaN when any value is NaN. */
static ${T} nbg_rowmax_${S}(const ${T} *restrict a, int64_t n) {
    ${T} m[8];
    int nan = 0, j;
    int64_t i = 0;
    for (j = 0; j < 8; j++) m[j] = a[0];
    for (; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++) {
            const ${T} v = a[i + j];
            m[j] = v > m[j] ? v : m[j];
            nan |= v != v;
        }
    for (; i < n; i++) {
        const ${T} v = a[i];
        m[0] = v > m[0] ? v : m[0];
        nan |= v != v;
    }
    for (j = 1; j < 8; j++) m[0] = m[j] > m[0] ? m[j] : m[0];
    return nan ? (${T})NAN : m[0];
}

/* The index of the first maximum of a[0..n) (n >= 1), or of the first NaN (np.argmax). */
static int64_t nbg_rowargmax_${S}(const ${T} *a, int64_t n) {
    int64_t i, k = 0;
    ${T} best = a[0];
    if (best != best) return 0;
    for (i = 1; i < n; i++) {
        const ${T} v = a[i];
        if (v != v) return i;
        if (v > best) { best = v; k = i; }
    }
    return k;
}

/* out = exp(x - max) / sum(exp(x - max)); n >= 1; out may be x. */
static void nbg_softmax_row_${S}(const ${T} *x, ${T} *out, int64_t n) {
    const ${T} m = nbg_rowmax_${S}(x, n);
    ${T} s;
    int64_t i;
    for (i = 0; i < n; i++) out[i] = ${EXP}(x[i] - m);
    s = nbg_pwsum_${S}(out, n);
    for (i = 0; i < n; i++) out[i] = out[i] / s;
}

/* log(sum(exp(sh))) for the shifted row sh[0..n) (n >= 1), using buf[0..n);
   the first maximal term is taken out of the sum (it is 1 unless the
   maximum was not finite), the rest goes through log1p when it is. */
static ${T} nbg_lse_shifted_${S}(const ${T} *sh, ${T} *restrict buf, int64_t n) {
    const int64_t k = nbg_rowargmax_${S}(sh, n);
    ${T} picked;
    int64_t i;
    for (i = 0; i < n; i++) buf[i] = ${EXP}(sh[i]);
    picked = buf[k];
    buf[k] = 0;
    {
        const ${T} rest = nbg_pwsum_${S}(buf, n);
        return picked == 1 ? ${LOG1P}(rest) : ${LOG}(picked + rest);
    }
}

/* The shift of a row: its maximum, or 0 where that is not finite. */
static inline ${T} nbg_rowshift_${S}(const ${T} *x, int64_t n) {
    const ${T} m = nbg_rowmax_${S}(x, n);
    return (m - m == 0) ? m : (${T})0;
}

/* out = x - m - log(sum(exp(x - m))), m the row's shift; buf: n scratch values. */
static void nbg_log_softmax_row_${S}(const ${T} *x, ${T} *out, ${T} *restrict buf, int64_t n) {
    const ${T} m = nbg_rowshift_${S}(x, n);
    ${T} lse;
    int64_t i;
    for (i = 0; i < n; i++) out[i] = x[i] - m;
    lse = nbg_lse_shifted_${S}(out, buf, n);
    for (i = 0; i < n; i++) out[i] = out[i] - lse;
}

/* -log(softmax(x)[label]) = log(sum(exp(x - m))) + m - x[label]; buf: 2n scratch values. */
static ${T} nbg_xent_row_${S}(const ${T} *x, int64_t label, ${T} *restrict buf, int64_t n) {
    const ${T} m = nbg_rowshift_${S}(x, n);
    ${T} *restrict sh = buf + n;
    int64_t i;
    for (i = 0; i < n; i++) sh[i] = x[i] - m;
    return (nbg_lse_shifted_${S}(sh, buf, n) + m) - x[label];
}
/* Rows [b, e) of a softmax (op 0), log-softmax (op 1) or cross-entropy (op 2)
   over an nbg_rows: operands 0 x, 1 out (ops 0, 1) or 1 labels, 2 out (op 2).
   Rows that are not contiguous are gathered into scratch and scattered back. */
static inline void nbg_softmax_rows_${S}(nbg_rows *r, int64_t b, int64_t e, const int op) {
    const int64_t n = r->n, item = (int64_t)sizeof(${T});
    const int contiguous = op == 2 ? r->step[0] == item
                                   : r->step[0] == item && r->step[1] == item;
    int64_t idx[NBG_MAXDIMS], row, i;
    char *ptr[NBG_ROWS_MAXOPS];
    ${T} *buf = NULL;
    if (op != 0 || !contiguous) {
        buf = (${T} *)malloc((size_t)(3 * n) * sizeof(${T}));
        if (NBG_UNLIKELY(!buf)) {
            nbg_fail_once(&r->fails, NBG_MEMORY_ERROR, "out of memory for a softmax row");
            return;
        }
    }
    nbg_rows_seek(r, b, idx, ptr);
    for (row = b; row < e; row++) {
        const ${T} *x = (const ${T} *)ptr[0];
        if (!contiguous) {
            ${T} *g = buf + 2 * n;
            for (i = 0; i < n; i++) g[i] = *(const ${T} *)(ptr[0] + i * r->step[0]);
            x = g;
        }
        if (op == 2) {
            int big = 0;
            const int64_t label = nbg_label_at(ptr[1], r->label_kind, &big);
            *(${T} *)ptr[2] = nbg_xent_row_${S}(x, label, buf, n);
        } else {
            ${T} *o = contiguous ? (${T} *)ptr[1] : buf + 2 * n;
            if (op == 0) nbg_softmax_row_${S}(x, o, n);
            else nbg_log_softmax_row_${S}(x, o, buf, n);
            if (!contiguous)
                for (i = 0; i < n; i++) *(${T} *)(ptr[1] + i * r->step[1]) = o[i];
        }
        nbg_rows_next(r, idx, ptr);
    }
    free(buf);
}
static void nbg_softmax_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_softmax_rows_${S}((nbg_rows *)c, b, e, 0);
}
static void nbg_log_softmax_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_softmax_rows_${S}((nbg_rows *)c, b, e, 1);
}
static void nbg_xent_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_softmax_rows_${S}((nbg_rows *)c, b, e, 2);
}
#endif
