/* Row kernels of the softmax family for one float type (${T}, suffix ${S}):
   each works on one contiguous row of n values, the caller walks the rows.
   ${LOG}, ${LOG1P}: the math.h functions of ${T}; exp is fastexp.h's
   vectorised nbg_exp_shifted_${S} (within ~1 ulp, libm's exp outside the
   normal range).

   They compute what the Ops' perform (NumPy) computes, in the same order,
   up to the rounding of exp and log: a softmax row with a NaN is NaN
   throughout (as with np.max's NaN shift), sums are NumPy's pairwise sum
   (same blocks, same result for the same terms), the softmax scales by the
   reciprocal of the sum (one more rounding than NumPy's quotient), and
   log-softmax / the cross-entropy take the row's first maximal term out of
   the sum and use log1p of the rest when that term is exactly 1 (see
   nbgraph.tensor.nnet._log_sum_exp_shifted). */
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

/* The shift of a softmax row a[0..n) (n >= 1): its maximum when no value is
   NaN, else one of its values or NaN.  NaN is not tracked: a NaN term makes
   the row's sum NaN, so every value of the row's softmax (and of its
   cross-entropy gradient) is NaN whatever the shift, as with NumPy's NaN
   maximum.  Long rows run four 64-byte vectors of accumulators (compare and
   select, one read of each value). */
typedef ${T} nbg_sv_${S} __attribute__((vector_size(64)));
typedef ${IT} nbg_si_${S} __attribute__((vector_size(64)));
#define NBG_SVL_${S} ((int64_t)(64 / sizeof(${T})))
static inline nbg_sv_${S} nbg_sv_ld_${S}(const ${T} *p) {
    nbg_sv_${S} v;
    memcpy(&v, p, sizeof v);
    return v;
}
/* v > m ? v : m per lane (m kept where v is NaN) */
static inline nbg_sv_${S} nbg_sv_max_${S}(nbg_sv_${S} m, nbg_sv_${S} v) {
    const nbg_si_${S} gt = v > m;
    nbg_si_${S} mi, vi;
    memcpy(&mi, &m, sizeof m);
    memcpy(&vi, &v, sizeof v);
    mi = (mi & ~gt) | (vi & gt);
    memcpy(&m, &mi, sizeof m);
    return m;
}
static ${T} nbg_rowmax_${S}(const ${T} *restrict a, int64_t n) {
    ${T} best = a[0];
    int64_t i = 0;
    if (n >= 4 * NBG_SVL_${S}) {
        const int64_t L = NBG_SVL_${S};
        nbg_sv_${S} m0 = nbg_sv_ld_${S}(a), m1 = m0, m2 = m0, m3 = m0;
        int l;
        for (; i + 4 * L <= n; i += 4 * L) {
            m0 = nbg_sv_max_${S}(m0, nbg_sv_ld_${S}(a + i));
            m1 = nbg_sv_max_${S}(m1, nbg_sv_ld_${S}(a + i + L));
            m2 = nbg_sv_max_${S}(m2, nbg_sv_ld_${S}(a + i + 2 * L));
            m3 = nbg_sv_max_${S}(m3, nbg_sv_ld_${S}(a + i + 3 * L));
        }
        m0 = nbg_sv_max_${S}(nbg_sv_max_${S}(m0, m1), nbg_sv_max_${S}(m2, m3));
        for (l = 0; l < L; l++) best = m0[l] > best ? m0[l] : best;
    } else if (n >= 8) {
        /* a short row: four independent chains of compare and select (one chain
           is a compare-select latency per value) */
        ${T} b1 = a[1], b2 = a[2], b3 = a[3];
        for (i = 4; i + 4 <= n; i += 4) {
            const ${T} v0 = a[i], v1 = a[i + 1], v2 = a[i + 2], v3 = a[i + 3];
            best = v0 > best ? v0 : best;
            b1 = v1 > b1 ? v1 : b1;
            b2 = v2 > b2 ? v2 : b2;
            b3 = v3 > b3 ? v3 : b3;
        }
        best = b1 > best ? b1 : best;
        best = b2 > best ? b2 : best;
        best = b3 > best ? b3 : best;
    }
    for (; i < n; i++) {
        const ${T} v = a[i];
        best = v > best ? v : best;
    }
    return best;
}

/* 1 when some lane of t is set. */
static inline int nbg_si_any_${S}(nbg_si_${S} t) {
    ${IT} any = 0;
    int l;
    for (l = 0; l < NBG_SVL_${S}; l++) any |= t[l];
    return any != 0;
}

/* The first i in [0, n) where a[i] == v (NaN: where a[i] is NaN), n when none:
   four vectors at a time up to the one that holds it, then value by value. */
static int64_t nbg_rowfind_${S}(const ${T} *restrict a, int64_t n, ${T} v) {
    const int64_t L = NBG_SVL_${S};
    int64_t i = 0;
    if (v != v) {
        for (; i + 4 * L <= n; i += 4 * L) {
            const nbg_sv_${S} a0 = nbg_sv_ld_${S}(a + i), a1 = nbg_sv_ld_${S}(a + i + L),
                a2 = nbg_sv_ld_${S}(a + i + 2 * L), a3 = nbg_sv_ld_${S}(a + i + 3 * L);
            if (nbg_si_any_${S}((a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3))) break;
        }
        for (; i < n; i++)
            if (a[i] != a[i]) return i;
    } else {
        const nbg_sv_${S} zero = {0}, vv = zero + v;
        for (; i + 4 * L <= n; i += 4 * L) {
            const nbg_sv_${S} a0 = nbg_sv_ld_${S}(a + i), a1 = nbg_sv_ld_${S}(a + i + L),
                a2 = nbg_sv_ld_${S}(a + i + 2 * L), a3 = nbg_sv_ld_${S}(a + i + 3 * L);
            if (nbg_si_any_${S}((a0 == vv) | (a1 == vv) | (a2 == vv) | (a3 == vv))) break;
        }
        for (; i < n; i++)
            if (a[i] == v) return i;
    }
    return n;
}

/* The index of the first maximum of a[0..n) (n >= 1), or of the first NaN (np.argmax).
   Long rows: the maximum and whether a NaN is there in one vectorised pass (four
   vectors of compare-select accumulators, NaN noted apart), then the first place
   of that value (or of a NaN) with nbg_rowfind. */
static int64_t nbg_rowargmax_${S}(const ${T} *restrict a, int64_t n) {
    int64_t i, k = 0;
    ${T} best = a[0];
    if (n >= 4 * NBG_SVL_${S}) {
        const int64_t L = NBG_SVL_${S};
        nbg_sv_${S} m0 = nbg_sv_ld_${S}(a), m1 = m0, m2 = m0, m3 = m0;
        nbg_si_${S} nv = m0 != m0;
        int l, seen_nan;
        for (i = 0; i + 4 * L <= n; i += 4 * L) {
            const nbg_sv_${S} a0 = nbg_sv_ld_${S}(a + i), a1 = nbg_sv_ld_${S}(a + i + L),
                a2 = nbg_sv_ld_${S}(a + i + 2 * L), a3 = nbg_sv_ld_${S}(a + i + 3 * L);
            m0 = nbg_sv_max_${S}(m0, a0);
            m1 = nbg_sv_max_${S}(m1, a1);
            m2 = nbg_sv_max_${S}(m2, a2);
            m3 = nbg_sv_max_${S}(m3, a3);
            nv |= (a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3);
        }
        m0 = nbg_sv_max_${S}(nbg_sv_max_${S}(m0, m1), nbg_sv_max_${S}(m2, m3));
        seen_nan = nbg_si_any_${S}(nv);
        for (l = 0; l < L; l++) best = m0[l] > best ? m0[l] : best;
        for (; i < n; i++) {
            best = a[i] > best ? a[i] : best;
            seen_nan |= a[i] != a[i];
        }
        return nbg_rowfind_${S}(a, n, seen_nan ? (${T})NAN : best);
    }
    if (best != best) return 0;
    for (i = 1; i < n; i++) {
        const ${T} v = a[i];
        if (v != v) return i;
        if (v > best) { best = v; k = i; }
    }
    return k;
}

/* out[i] = exp(x[i] - shift), i < n, a chunk at a time, each chunk also asking
   for the same bytes of the next block (pfx: its x, pfo: its output; NULL:
   none) to be brought into the cache while this one computes: the exp is
   compute-bound, the next row's first read memory-bound, so they overlap. */
#define NBG_EXP_CHUNK 64
static inline void nbg_exp_prefetching_${S}(const ${T} *x, ${T} shift, ${T} *out, int64_t n,
                                            const char *pfx, char *pfo) {
    int64_t j, b;
    for (j = 0; j < n; j += NBG_EXP_CHUNK) {
        const int64_t len = n - j < NBG_EXP_CHUNK ? n - j : NBG_EXP_CHUNK;
        const int64_t at = j * (int64_t)sizeof(${T}), bytes = len * (int64_t)sizeof(${T});
        if (pfx)
            for (b = 0; b < bytes; b += 64) __builtin_prefetch(pfx + at + b, 0, 3);
        if (pfo)
            for (b = 0; b < bytes; b += 64) __builtin_prefetch(pfo + at + b, 1, 3);
        nbg_exp_shifted_${S}(x + j, shift, out + j, len);
    }
}

/* nb consecutive rows of n >= 1 values at x (contiguous), op as in
   nbg_softmax_rows: into out (ops 0, 1, 3: nb rows; ops 2, 4: nb values).
   lab[r], gz[r]: the rows' labels (ops 2, 3) and gradients (op 3); top: nb
   indices (ops 1, 2, 4).  w: 2 * nb * n scratch values (not out), v: 4 * nb.
   Short rows are done a block at a time so that the exp (and log1p) loops run
   over the whole block.  pfx, pfo: the next block's x and output, prefetched
   during the exp (NULL: none). */
static inline void nbg_softmax_block_${S}(const ${T} *x, ${T} *out, int64_t nb, int64_t n,
                                          const int op, const int64_t *lab, const ${T} *gz,
                                          int64_t *restrict top, ${T} *restrict w,
                                          ${T} *restrict v,
                                          const char *pfx, char *pfo) {
    const int64_t size = nb * n;
    ${T} *restrict m = v, *restrict rest = v + nb, *restrict picked = v + 2 * nb,
        *restrict lse = v + 3 * nb;
    /* a block's shifted values in w (not kept for one row), their exps in out
       (ops 0, 3) or after them in w */
    ${T} *restrict sh = w;
    ${T} *restrict ex = (op == 0 || op == 3) ? out : w + size;
    int64_t r, j;
    for (r = 0; r < nb; r++) {
        if (op == 0 || op == 3) {
            m[r] = nbg_rowmax_${S}(x + r * n, n);
        } else {
            /* the shift: the maximum, or 0 where it is not finite; the first maximal
               (or NaN) term of x is that of the shifted row (x - m is 0 only where
               x == m, below 0 elsewhere), taken out of the sum below */
            const int64_t t = nbg_rowargmax_${S}(x + r * n, n);
            const ${T} mx = x[r * n + t];
            top[r] = t;
            m[r] = (mx - mx == 0) ? mx : (${T})0;
        }
    }
    if (nb == 1) {
        /* a long row: exp(x - m) straight from x (the shifted values are not kept) */
        nbg_exp_prefetching_${S}(x, m[0], ex, n, pfx, pfo);
    } else {
        for (r = 0; r < nb; r++) {
            const ${T} *restrict xr = x + r * n;
            ${T} *restrict sr = sh + r * n;
            const ${T} mr = m[r];
            for (j = 0; j < n; j++) sr[j] = xr[j] - mr;
        }
        nbg_exp_prefetching_${S}(sh, 0, ex, size, pfx, pfo);
    }
    if (op == 0 || op == 3) {
        for (r = 0; r < nb; r++) {
            ${T} *restrict er = ex + r * n;
            const ${T} inv = 1 / nbg_pwsum_${S}(er, n);
            if (op == 3) {  /* g * (e * inv) in one loop: the same two roundings */
                const ${T} g = gz[r], at = g * (er[lab[r]] * inv - 1);
                for (j = 0; j < n; j++) er[j] = g * (er[j] * inv);
                er[lab[r]] = at;
            } else {
                for (j = 0; j < n; j++) er[j] = er[j] * inv;
            }
        }
        return;
    }
    /* log(sum(exp)) of each shifted row: its first maximal term (1 unless the
       maximum was not finite) out of the sum, log1p of the rest when it is 1 */
    for (r = 0; r < nb; r++) {
        ${T} *er = ex + r * n;
        picked[r] = er[top[r]];
        er[top[r]] = 0;
        rest[r] = nbg_pwsum_${S}(er, n);
    }
    for (r = 0; r < nb; r++) lse[r] = ${LOG1P}(rest[r]);
    for (r = 0; r < nb; r++)
        if (NBG_UNLIKELY(picked[r] != 1)) lse[r] = ${LOG}(picked[r] + rest[r]);
    if (op == 1) {
        for (r = 0; r < nb; r++) {
            /* (x - m) - lse: the shifted value as the exp loop had it */
            ${T} *restrict orow = out + r * n;
            const ${T} *restrict xr = x + r * n;
            const ${T} mr = m[r], l = lse[r];
            for (j = 0; j < n; j++) orow[j] = (xr[j] - mr) - l;
        }
    } else if (op == 2) {
        for (r = 0; r < nb; r++) out[r] = (lse[r] + m[r]) - x[r * n + lab[r]];
    } else {
        for (r = 0; r < nb; r++) out[r] = lse[r] + m[r];
    }
}

/* Values per block of short rows. */
#ifndef NBG_SOFTMAX_BLOCK
#define NBG_SOFTMAX_BLOCK 1024
#endif

/* Rows [b, e) of a softmax (op 0), log-softmax (op 1), cross-entropy (op 2),
   cross-entropy gradient gz * (softmax(x) - one_hot(label)) (op 3) or
   logsumexp (op 4) over an nbg_rows: operands 0 x, 1 out (ops 0, 1, 4) or
   1 labels, 2 out (ops 2, 3), 3 gz.  Ops 2 and 4 have one value per row.
   Consecutive rows that are contiguous and adjacent in x and out go through
   nbg_softmax_block a block at a time; any other row is gathered into
   scratch, done alone and scattered back. */
static inline void nbg_softmax_rows_${S}(nbg_rows *r, int64_t b, int64_t e, const int op) {
    const int64_t n = r->n, item = (int64_t)sizeof(${T});
    const int one = op == 2 || op == 4;            /* one value per row */
    const int o = op == 2 || op == 3 ? 2 : 1;       /* the output operand */
    const int64_t ostep = one ? 0 : r->step[o];
    const int64_t per = n >= NBG_SOFTMAX_BLOCK ? 1 : NBG_SOFTMAX_BLOCK / n;
    const int64_t cap = per * n;
    int64_t idx[NBG_MAXDIMS], row, i;
    char *ptr[NBG_ROWS_MAXOPS];
    /* w: the block's scratch (2 cap), xg / og: a gathered row and its result,
       v: 4 per-row values, vals: ops 2 and 4's results, gzs, lab, tops: per row */
    ${T} *w = (${T} *)malloc((size_t)(4 * cap + 6 * per) * sizeof(${T}) +
                             (size_t)(2 * per) * sizeof(int64_t));
    ${T} *v, *vals, *gzs, *xg, *og;
    int64_t *lab, *tops;
    if (NBG_UNLIKELY(!w)) {
        nbg_fail_once(&r->fails, NBG_MEMORY_ERROR, "out of memory for softmax rows");
        return;
    }
    xg = w + 2 * cap;  /* cap >= n */
    og = w + 3 * cap;
    v = w + 4 * cap;
    vals = v + 4 * per;
    gzs = vals + per;
    lab = (int64_t *)(gzs + per);
    tops = lab + per;
    nbg_rows_seek(r, b, idx, ptr);
    for (row = b; row < e;) {
        /* the block: rows whose x (and out) follow on from the first's */
        const char *x0 = ptr[0], *o0 = ptr[o];
        const int contiguous = r->step[0] == item && (one || ostep == item);
        int64_t nb = 0;
        while (row + nb < e && nb < per) {
            if (nb > 0 && (!contiguous || ptr[0] != x0 + nb * n * item ||
                           (!one && ptr[o] != o0 + nb * n * item)))
                break;
            if (op == 2 || op == 3) {
                int big = 0;
                lab[nb] = nbg_label_at(ptr[1], r->label_kind, &big);
                if (op == 3) gzs[nb] = *(const ${T} *)ptr[3];
            }
            nb++;
            nbg_rows_next(r, idx, ptr);
            if (!contiguous) break;
        }
        if (contiguous) {
            /* ops 2, 4: one value per row, scattered to their places below; ptr: the
               next row's, whose first bytes are fetched while this block computes */
            const int more = row + nb < e;
            nbg_softmax_block_${S}((const ${T} *)x0, one ? vals : (${T} *)o0, nb, n, op,
                                   lab, gzs, tops, w, v, more ? ptr[0] : NULL,
                                   more && !one ? ptr[o] : NULL);
        } else {
            for (i = 0; i < n; i++) xg[i] = *(const ${T} *)(x0 + i * r->step[0]);
            nbg_softmax_block_${S}(xg, one ? vals : og, 1, n, op, lab, gzs, tops, w, v, NULL,
                                   NULL);
            if (!one)
                for (i = 0; i < n; i++) *(${T} *)(o0 + i * ostep) = og[i];
        }
        if (one) {
            /* scatter the block's values to the output (rows may not be adjacent there) */
            int64_t q;
            char *p2[NBG_ROWS_MAXOPS];
            int64_t id2[NBG_MAXDIMS];
            nbg_rows_seek(r, row, id2, p2);
            for (q = 0; q < nb; q++) {
                *(${T} *)p2[o] = vals[q];
                nbg_rows_next(r, id2, p2);
            }
        }
        row += nb;
    }
    free(w);
}
/* Rows [b, e) of a softmax gradient sm * (gz - sum(gz * sm)) over an nbg_rows:
   operands 0 gz, 1 sm, 2 out (the rows along one axis, of one shape).  A row
   whose operands are not contiguous is gathered into scratch and scattered back. */
static void nbg_softmax_grad_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_rows *r = (nbg_rows *)c;
    const int64_t n = r->n, item = (int64_t)sizeof(${T});
    int64_t idx[NBG_MAXDIMS], row, j;
    char *ptr[NBG_ROWS_MAXOPS];
    ${T} *w = (${T} *)malloc((size_t)(4 * n) * sizeof(${T}));
    if (NBG_UNLIKELY(!w)) {
        nbg_fail_once(&r->fails, NBG_MEMORY_ERROR, "out of memory for softmax gradient rows");
        return;
    }
    nbg_rows_seek(r, b, idx, ptr);
    for (row = b; row < e; row++) {
        const int direct = r->step[0] == item && r->step[1] == item && r->step[2] == item;
        const ${T} *restrict g = direct ? (const ${T} *)ptr[0] : w + n;
        const ${T} *restrict sm = direct ? (const ${T} *)ptr[1] : w + 2 * n;
        ${T} *restrict o = direct ? (${T} *)ptr[2] : w + 3 * n;
        ${T} *restrict prod = w;
        ${T} total;
        if (!direct)
            for (j = 0; j < n; j++) {
                w[n + j] = *(const ${T} *)(ptr[0] + j * r->step[0]);
                w[2 * n + j] = *(const ${T} *)(ptr[1] + j * r->step[1]);
            }
        for (j = 0; j < n; j++) prod[j] = g[j] * sm[j];
        total = nbg_pwsum_${S}(prod, n);
        for (j = 0; j < n; j++) o[j] = sm[j] * (g[j] - total);
        if (!direct)
            for (j = 0; j < n; j++) *(${T} *)(ptr[2] + j * r->step[2]) = o[j];
        nbg_rows_next(r, idx, ptr);
    }
    free(w);
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
static void nbg_xent_grad_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_softmax_rows_${S}((nbg_rows *)c, b, e, 3);
}
static void nbg_logsumexp_task_${S}(void *c, int64_t b, int64_t e) {
    nbg_softmax_rows_${S}((nbg_rows *)c, b, e, 4);
}
/* -inf, the logsumexp of an empty row, into operand 1 (one value per row) of
   every row of r. */
static void nbg_logsumexp_empty_${S}(nbg_rows *r) {
    int64_t idx[NBG_MAXDIMS], row;
    char *ptr[NBG_ROWS_MAXOPS];
    nbg_rows_seek(r, 0, idx, ptr);
    for (row = 0; row < r->rows; row++) {
        *(${T} *)ptr[1] = -(${T})INFINITY;
        nbg_rows_next(r, idx, ptr);
    }
}
#endif
