#ifndef NBG_DOTMM_${S}
#define NBG_DOTMM_${S}
/* t (NBG_DOT_MR x NR) = ap (kc x MR, packed) times bp (kc x NR, packed). */
static NBG_NOINLINE void nbg_${S}_micro(int64_t kc, const ${CT} *restrict ap,
                                       const ${CT} *restrict bp, ${CT} *restrict t) {
    const int64_t VL = NBG_${S}_VL, NR = NBG_${S}_NR;
    const nbg_${S}_v z = {0};
    nbg_${S}_v c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z;
    nbg_${S}_v c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
    int64_t k;
    for (k = 0; k < kc; k++, ap += NBG_DOT_MR, bp += NR) {
        const nbg_${S}_v b0 = nbg_${S}_ld(bp), b1 = nbg_${S}_ld(bp + VL);
        nbg_${S}_v a;
        a = NBG_${S}_BCAST(ap + 0); c00 = NBG_${S}_MAC(c00, a, b0); c01 = NBG_${S}_MAC(c01, a, b1);
        a = NBG_${S}_BCAST(ap + 1); c10 = NBG_${S}_MAC(c10, a, b0); c11 = NBG_${S}_MAC(c11, a, b1);
        a = NBG_${S}_BCAST(ap + 2); c20 = NBG_${S}_MAC(c20, a, b0); c21 = NBG_${S}_MAC(c21, a, b1);
        a = NBG_${S}_BCAST(ap + 3); c30 = NBG_${S}_MAC(c30, a, b0); c31 = NBG_${S}_MAC(c31, a, b1);
        a = NBG_${S}_BCAST(ap + 4); c40 = NBG_${S}_MAC(c40, a, b0); c41 = NBG_${S}_MAC(c41, a, b1);
        a = NBG_${S}_BCAST(ap + 5); c50 = NBG_${S}_MAC(c50, a, b0); c51 = NBG_${S}_MAC(c51, a, b1);
    }
    nbg_${S}_st(t, c00); nbg_${S}_st(t + VL, c01);
    nbg_${S}_st(t + NR, c10); nbg_${S}_st(t + NR + VL, c11);
    nbg_${S}_st(t + 2 * NR, c20); nbg_${S}_st(t + 2 * NR + VL, c21);
    nbg_${S}_st(t + 3 * NR, c30); nbg_${S}_st(t + 3 * NR + VL, c31);
    nbg_${S}_st(t + 4 * NR, c40); nbg_${S}_st(t + 4 * NR + VL, c41);
    nbg_${S}_st(t + 5 * NR, c50); nbg_${S}_st(t + 5 * NR + VL, c51);
}
typedef struct {
    const char *a;
    int64_t M, as0, as1, pc, kc, jc, nc, cs0, cs1;
    nbg_${S}_pack pa;
    const ${CT} *bp;
    ${CT} *c;
    int first, nomem;
} nbg_${S}_mmc;
/* Row blocks [b, e) of NBG_DOT_MC rows: pack A's block, multiply by the B panel. */
static NBG_DOT_GLUE void nbg_${S}_mm_task(void *vc, int64_t b, int64_t e) {
    const nbg_${S}_mmc *c = (const nbg_${S}_mmc *)vc;
    const int64_t NR = NBG_${S}_NR, MR = NBG_DOT_MR, kc = c->kc;
    ${CT} t[NBG_DOT_MR * NBG_${S}_NR];
    ${CT} *ap = (${CT} *)malloc(NBG_DOT_MC * kc * sizeof(${CT}));
    int64_t ir, jr, r, q, k;
    if (!ap) {
        __atomic_store_n(&((nbg_${S}_mmc *)vc)->nomem, 1, __ATOMIC_RELAXED);
        return;
    }
    for (; b < e; b++) {
        const int64_t i0 = b * NBG_DOT_MC;
        const int64_t mc = c->M - i0 < NBG_DOT_MC ? c->M - i0 : NBG_DOT_MC;
        for (ir = 0; ir < mc; ir += MR) {
            const int64_t rows = mc - ir < MR ? mc - ir : MR;
            ${CT} *dst = ap + ir * kc;
            c->pa(dst, c->a + (i0 + ir) * c->as0 + c->pc * c->as1, rows, kc, c->as0, c->as1, 1, MR);
            for (r = rows; r < MR; r++)
                for (k = 0; k < kc; k++) dst[k * MR + r] = 0;
        }
        for (jr = 0; jr < c->nc; jr += NR) {
            const int64_t cols = c->nc - jr < NR ? c->nc - jr : NR;
            for (ir = 0; ir < mc; ir += MR) {
                const int64_t rows = mc - ir < MR ? mc - ir : MR;
                nbg_${S}_micro(kc, ap + ir * kc, c->bp + jr * kc, t);
                for (r = 0; r < rows; r++) {
                    ${CT} *crow = c->c + (i0 + ir + r) * c->cs0 + (c->jc + jr) * c->cs1;
                    const ${CT} *trow = t + r * NR;
                    if (c->first)
                        for (q = 0; q < cols; q++) crow[q * c->cs1] = trow[q];
                    else
                        for (q = 0; q < cols; q++)
                            crow[q * c->cs1] = NBG_${S}_ADD(crow[q * c->cs1], trow[q]);
                }
            }
        }
    }
    free(ap);
}
/* C (M x N, byte strides cs0, cs1) = A (M x K) . B (K x N); pa / pb convert. */
static NBG_NOINLINE NBG_DOT_GLUE int nbg_${S}_mm(const char *A, int64_t M, int64_t K, int64_t as0,
                                   int64_t as1, nbg_${S}_pack pa, const char *B, int64_t N,
                                   int64_t bs0, int64_t bs1, nbg_${S}_pack pb, ${CT} *C,
                                   int64_t cs0, int64_t cs1, char *err) {
    const int64_t NR = NBG_${S}_NR, NC = NBG_${S}_NC, item = sizeof(${CT});
    nbg_${S}_mmc c;
    ${CT} *bp;
    int64_t i, j, jr, pc, k, nb;
    c.cs0 = nbg_dot_estride(M, cs0, item);
    c.cs1 = nbg_dot_estride(N, cs1, item);
    if (c.cs0 < 0 || c.cs1 < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    if (M == 0 || N == 0) return 0;
    if (K == 0) {
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) C[i * c.cs0 + j * c.cs1] = 0;
        return 0;
    }
    bp = (${CT} *)malloc(NBG_DOT_KC * NC * item);
    if (!bp) return nbg_dot_nomem(err);
    c.a = A; c.M = M; c.as0 = as0; c.as1 = as1; c.pa = pa; c.bp = bp; c.c = C; c.nomem = 0;
    nb = (M + NBG_DOT_MC - 1) / NBG_DOT_MC;
    for (c.jc = 0; c.jc < N; c.jc += NC) {
        c.nc = N - c.jc < NC ? N - c.jc : NC;
        for (pc = 0; pc < K; pc += NBG_DOT_KC) {
            const int64_t kc = K - pc < NBG_DOT_KC ? K - pc : NBG_DOT_KC;
            for (jr = 0; jr < c.nc; jr += NR) {
                const int64_t cols = c.nc - jr < NR ? c.nc - jr : NR;
                ${CT} *dst = bp + jr * kc;
                pb(dst, B + pc * bs0 + (c.jc + jr) * bs1, kc, cols, bs0, bs1, NR, 1);
                for (k = 0; k < kc; k++)
                    for (j = cols; j < NR; j++) dst[k * NR + j] = 0;
            }
            c.pc = pc; c.kc = kc; c.first = pc == 0;
            if (nb > 1 && nbg_dot_worth(M * c.nc * kc, NBG_DOT_MM_PAR))
                nbg_dot_parallel(nbg_${S}_mm_task, &c, nb);
            else nbg_${S}_mm_task(&c, 0, nb);
            if (c.nomem) { free(bp); return nbg_dot_nomem(err); }
        }
    }
    free(bp);
    return 0;
}
#endif
