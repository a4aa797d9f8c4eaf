#ifndef NBG_DOTMV_${S}
#define NBG_DOTMV_${S}
/* A row's dot product from its two accumulators (lanes in order), then the tail. */
static inline ${CT} nbg_${S}_fin(nbg_${S}_v s0, nbg_${S}_v s1, const ${CT} *a, const ${CT} *v,
                               int64_t k, int64_t K) {
    const nbg_${S}_v s = NBG_${S}_VADD(s0, s1);
    ${CT} r = s[0];
    int l;
    for (l = 1; l < NBG_${S}_VL; l++) r = NBG_${S}_ADD(r, s[l]);
    for (; k < K; k++) r = NBG_${S}_SMAC(r, a[k], v[k]);
    return r;
}
/* out[i * os] = A[i, :K] . v for rows i in [r0, r1); each row is computed the
   same way whether it is one of four or alone. */
static NBG_NOINLINE void nbg_${S}_rows(const ${CT} *A, int64_t lda, const ${CT} *v, int64_t K,
                                      ${CT} *out, int64_t os, int64_t r0, int64_t r1) {
    const int64_t VL = NBG_${S}_VL;
    const nbg_${S}_v z = {0};
    int64_t i = r0, k;
    for (; i + 4 <= r1; i += 4) {
        const ${CT} *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        nbg_${S}_v p0 = z, q0 = z, p1 = z, q1 = z, p2 = z, q2 = z, p3 = z, q3 = z;
        for (k = 0; k + 2 * VL <= K; k += 2 * VL) {
            const nbg_${S}_v w0 = nbg_${S}_ld(v + k), w1 = nbg_${S}_ld(v + k + VL);
            p0 = NBG_${S}_MAC(p0, nbg_${S}_ld(a0 + k), w0); q0 = NBG_${S}_MAC(q0, nbg_${S}_ld(a0 + k + VL), w1);
            p1 = NBG_${S}_MAC(p1, nbg_${S}_ld(a1 + k), w0); q1 = NBG_${S}_MAC(q1, nbg_${S}_ld(a1 + k + VL), w1);
            p2 = NBG_${S}_MAC(p2, nbg_${S}_ld(a2 + k), w0); q2 = NBG_${S}_MAC(q2, nbg_${S}_ld(a2 + k + VL), w1);
            p3 = NBG_${S}_MAC(p3, nbg_${S}_ld(a3 + k), w0); q3 = NBG_${S}_MAC(q3, nbg_${S}_ld(a3 + k + VL), w1);
        }
        if (k + VL <= K) {
            const nbg_${S}_v w0 = nbg_${S}_ld(v + k);
            p0 = NBG_${S}_MAC(p0, nbg_${S}_ld(a0 + k), w0);
            p1 = NBG_${S}_MAC(p1, nbg_${S}_ld(a1 + k), w0);
            p2 = NBG_${S}_MAC(p2, nbg_${S}_ld(a2 + k), w0);
            p3 = NBG_${S}_MAC(p3, nbg_${S}_ld(a3 + k), w0);
            k += VL;
        }
        out[i * os] = nbg_${S}_fin(p0, q0, a0, v, k, K);
        out[(i + 1) * os] = nbg_${S}_fin(p1, q1, a1, v, k, K);
        out[(i + 2) * os] = nbg_${S}_fin(p2, q2, a2, v, k, K);
        out[(i + 3) * os] = nbg_${S}_fin(p3, q3, a3, v, k, K);
    }
    for (; i < r1; i++) {
        const ${CT} *a0 = A + i * lda;
        nbg_${S}_v p0 = z, q0 = z;
        for (k = 0; k + 2 * VL <= K; k += 2 * VL) {
            p0 = NBG_${S}_MAC(p0, nbg_${S}_ld(a0 + k), nbg_${S}_ld(v + k));
            q0 = NBG_${S}_MAC(q0, nbg_${S}_ld(a0 + k + VL), nbg_${S}_ld(v + k + VL));
        }
        if (k + VL <= K) {
            p0 = NBG_${S}_MAC(p0, nbg_${S}_ld(a0 + k), nbg_${S}_ld(v + k));
            k += VL;
        }
        out[i * os] = nbg_${S}_fin(p0, q0, a0, v, k, K);
    }
}
/* acc[j] = sum over rows i in [r0, r1), in order, of v[i] * A[i, j], j < N. */
static NBG_NOINLINE void nbg_${S}_axpy(const ${CT} *A, int64_t lda, const ${CT} *v, int64_t N,
                                      ${CT} *restrict acc, int64_t r0, int64_t r1) {
    const int64_t VL = NBG_${S}_VL;
    int64_t i = r0, j;
    for (j = 0; j < N; j++) acc[j] = 0;
    for (; i + 4 <= r1; i += 4) {
        const ${CT} *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        const ${CT} c0 = v[i], c1 = v[i + 1], c2 = v[i + 2], c3 = v[i + 3];
        const nbg_${S}_v d0 = nbg_${S}_splat(c0), d1 = nbg_${S}_splat(c1);
        const nbg_${S}_v d2 = nbg_${S}_splat(c2), d3 = nbg_${S}_splat(c3);
        for (j = 0; j + VL <= N; j += VL) {
            nbg_${S}_v x = nbg_${S}_ld(acc + j);
            x = NBG_${S}_MAC(x, d0, nbg_${S}_ld(a0 + j));
            x = NBG_${S}_MAC(x, d1, nbg_${S}_ld(a1 + j));
            x = NBG_${S}_MAC(x, d2, nbg_${S}_ld(a2 + j));
            x = NBG_${S}_MAC(x, d3, nbg_${S}_ld(a3 + j));
            nbg_${S}_st(acc + j, x);
        }
        for (; j < N; j++) {
            ${CT} x = acc[j];
            x = NBG_${S}_SMAC(x, c0, a0[j]);
            x = NBG_${S}_SMAC(x, c1, a1[j]);
            x = NBG_${S}_SMAC(x, c2, a2[j]);
            x = NBG_${S}_SMAC(x, c3, a3[j]);
            acc[j] = x;
        }
    }
    for (; i < r1; i++) {
        const ${CT} *a0 = A + i * lda;
        const ${CT} c0 = v[i];
        const nbg_${S}_v d0 = nbg_${S}_splat(c0);
        for (j = 0; j + VL <= N; j += VL)
            nbg_${S}_st(acc + j, NBG_${S}_MAC(nbg_${S}_ld(acc + j), d0, nbg_${S}_ld(a0 + j)));
        for (; j < N; j++) acc[j] = NBG_${S}_SMAC(acc[j], c0, a0[j]);
    }
}
typedef struct {
    const ${CT} *a, *v;
    int64_t lda, len, rows, rb, nb;
    ${CT} *out, *part;
    int64_t os, ldp;
    int axpy;
    nbg_dot_slots slots;
} nbg_${S}_mvc;
/* Blocks [b, e) of the rows or the axpy loop. */
static void nbg_${S}_blocks(const nbg_${S}_mvc *c, int64_t b, int64_t e) {
    const int64_t r1 = e * c->rb < c->rows ? e * c->rb : c->rows;
    if (!c->axpy) {
        nbg_${S}_rows(c->a, c->lda, c->v, c->len, c->out, c->os, b * c->rb, r1);
        return;
    }
    for (; b < e; b++) {
        const int64_t q = (b + 1) * c->rb < c->rows ? (b + 1) * c->rb : c->rows;
        nbg_${S}_axpy(c->a, c->lda, c->v, c->len, c->part + b * c->ldp, b * c->rb, q);
    }
}
/* Groups [b, e) of blocks (see nbg_dot_claim). */
static void nbg_${S}_mv_task(void *vc, int64_t b, int64_t e) {
    nbg_${S}_mvc *c = (nbg_${S}_mvc *)vc;
    const int64_t g = (c->nb + c->slots.n - 1) / c->slots.n;
    const int me = &nbg_dot_me == c->slots.caller;
    const int64_t t0 = me ? nbg_dot_now() : 0;
    for (; b < e; b++) {
        const int64_t s = nbg_dot_claim(&c->slots);
        nbg_${S}_blocks(c, s * g, (s + 1) * g < c->nb ? (s + 1) * g : c->nb);
    }
    if (me) c->slots.own += nbg_dot_now() - t0;
}
static void nbg_${S}_mv_run(nbg_${S}_mvc *c) {
    const int64_t T = nbg_dot_threads();
    int64_t t0;
    int k;
    c->slots.n = (int)(T < c->nb ? T : c->nb);
    if (c->slots.n <= 1 || !nbg_dot_worth(c->rows * c->len, 2 * NBG_DOT_MINWORK)
        || nbg_dot_backing_off()) {
        nbg_${S}_blocks(c, 0, c->nb);
        return;
    }
    c->slots.caller = &nbg_dot_me;
    c->slots.own = 0;
    for (k = 0; k < c->slots.n; k++) c->slots.taken[k] = 0;
    t0 = nbg_dot_now();
    nbg_dot_parallel(nbg_${S}_mv_task, c, c->slots.n);
    nbg_dot_judge(nbg_dot_now() - t0, c->slots.own);
}
/* out (M elements, byte stride os) = A (M x K, byte strides s0, s1) . V (K,
   byte stride vs).  pa / pv convert an operand into the compute type; na / nv:
   the operand already holds it.  0, or an error code with err filled. */
static NBG_NOINLINE int nbg_${S}_mv(const char *A, int64_t M, int64_t K, int64_t s0, int64_t s1,
                                   nbg_${S}_pack pa, int na, const char *V, int64_t vs,
                                   nbg_${S}_pack pv, int nv, ${CT} *out, int64_t os, char *err) {
    const int64_t item = sizeof(${CT});
    const int64_t eo = nbg_dot_estride(M, os, item);
    const int64_t e0 = nbg_dot_estride(M, s0, item), e1 = nbg_dot_estride(K, s1, item);
    ${CT} *vbuf = NULL, *abuf = NULL, *part = NULL;
    nbg_${S}_mvc c;
    int64_t i, j, b, nb;
    if (eo < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    if (M == 0) return 0;
    if (K == 0) {
        for (i = 0; i < M; i++) out[i * eo] = 0;
        return 0;
    }
    c.v = (const ${CT} *)V;
    if (!nv || (K > 1 && vs != item)) {
        vbuf = (${CT} *)malloc(K * item);
        if (!vbuf) return nbg_dot_nomem(err);
        pv(vbuf, V, 1, K, 0, vs, 0, 1);
        c.v = vbuf;
    }
    c.out = out;
    c.os = eo;
    if (na && e0 >= 0 && (K == 1 || e1 == 1)) {
        c.a = (const ${CT} *)A; c.lda = e0;
    } else if (na && e1 >= 0 && e0 == 1) {
        /* out = sum over k of V[k] * (row k of A.T): the axpy loop over A.T */
        c.a = (const ${CT} *)A; c.lda = e1; c.len = M; c.rows = K;
        c.rb = nbg_dot_block_rows(K, M);
        c.nb = nb = (K + c.rb - 1) / c.rb;
        c.axpy = 1;
        if (nb == 1 && eo == 1) {  /* straight into the output */
            nbg_${S}_axpy(c.a, c.lda, c.v, M, out, 0, K);
        } else {
            /* partial vectors on cache lines of their own (threads write them) */
            c.ldp = (M * item + 63) / 64 * 64 / item;
            part = (${CT} *)malloc(nb * c.ldp * item + 64);
            if (!part) { free(vbuf); return nbg_dot_nomem(err); }
            c.part = (${CT} *)((char *)part + (64 - (uintptr_t)part % 64) % 64);
            nbg_${S}_mv_run(&c);
            for (j = 0; j < M; j++) {
                ${CT} s = c.part[j];
                for (b = 1; b < nb; b++) s = NBG_${S}_ADD(s, c.part[b * c.ldp + j]);
                out[j * eo] = s;
            }
            free(part);
        }
        free(vbuf);
        return 0;
    } else {
        abuf = (${CT} *)malloc(M * K * item);
        if (!abuf) { free(vbuf); return nbg_dot_nomem(err); }
        pa(abuf, A, M, K, s0, s1, K, 1);
        c.a = abuf; c.lda = K;
    }
    c.len = K; c.rows = M;
    c.rb = nbg_dot_block_rows(M, K);
    c.nb = (M + c.rb - 1) / c.rb;
    c.axpy = 0;
    nbg_${S}_mv_run(&c);
    free(abuf);
    free(vbuf);
    return 0;
}
#endif
