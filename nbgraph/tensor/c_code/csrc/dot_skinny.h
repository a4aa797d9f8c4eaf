#ifndef NBG_DOTSK_${S}
#define NBG_DOTSK_${S}
/* Skinny products: C (M x N) = A (M x K) . B (K x N) with few output columns
   (N <= NBG_${S}_SKN: 96 bytes of a row, 12 doubles or 24 floats) and A of
   the compute type with unit stride along one axis.  B is packed once into
   K rows of W = nv vectors (zero padded); the columns run in passes of at
   most three vectors (one pass on AVX).  No panel of A is packed (a general
   product packs all of A for a few columns):
   * rows (A's rows contiguous): 4 rows of C in 4 x nv vector accumulators,
     A's rows streamed once, the packed B read from cache;
   * columns (A's columns contiguous: A = X.T, the gradient X.T . G): per 4
     rows of X and B, each output row's nv accumulators in a padded block of
     at most NBG_DOT_SK_CROWS rows (in L1/L2) take 4 multiply-adds.
   Both split the output rows in blocks across the pool; every output element
   is summed over k in the same order whichever block or thread computes it,
   so results never depend on the blocking or the thread count.  Plain vector
   extensions, no CPU-specific intrinsics beyond dot_core.h's guarded macros.
   Compile cost (this is in every cache directory's first float Dot module):
   only the two inner loops are instantiated per nv, spelled out with named
   accumulators (NBG_<S>_V1..V3 list the vectors), which GCC compiles in
   about a third less work than loops over arrays; the glue and the rare
   tails (last rows, K % 4) are compiled once for every nv, at -O1. */
#define NBG_${S}_SKN ((int64_t)(96 / sizeof(${CT})))
#define NBG_${S}_SKV 3
#ifndef NBG_DOT_SK_ROWS
#define NBG_DOT_SK_ROWS 64      /* rows of a block (rows case) */
#define NBG_DOT_SK_CROWS 256    /* at most, columns case (its accumulators in L1/L2) */
#define NBG_DOT_SK_MINK 16
/* Split across the pool from this many multiply-adds (M K N): below it BLAS
   runs on one thread too (nbgraph.tensor.blas_threads.SMALL_PRODUCT_MACS), and
   splitting a product of a few hundred microseconds while BLAS's own workers
   still spin from the previous product loses more than it gains. */
#define NBG_DOT_SK_PAR (1 << 22)
/* Glue and tails: one copy for every nv, compiled at -O1 (not on the hot path). */
#define NBG_SK_GLUE static NBG_NOINLINE NBG_DOT_GLUE
#endif
typedef struct {
    const ${CT} *a;
    int64_t M, K, lda;          /* A's element stride between rows (rows) or columns */
    const ${CT} *bp;            /* K x W packed B of this pass */
    int64_t W, nv, cols;        /* padded width, vectors, real columns of the pass */
    ${CT} *c;
    int64_t cs0, cs1;           /* C's element strides, C already offset to the pass */
    int64_t rows;               /* output rows of a block */
    int nomem;
} nbg_${S}_skc;
/* Rows [i, i + R) of C from t (R x c->W): every case ends here. */
NBG_SK_GLUE void nbg_${S}_sk_out(const nbg_${S}_skc *c, int64_t i, int64_t R, const ${CT} *t) {
    int64_t r, q;
    for (r = 0; r < R; r++) {
        ${CT} *crow = c->c + (i + r) * c->cs0;
        for (q = 0; q < c->cols; q++) crow[q * c->cs1] = t[r * c->W + q];
    }
}
/* Row i of a row-contiguous A times the packed B, any nv: the last rows (fewer
   than 4) of a product.  The same sums in the same order as the 4-row tile. */
NBG_SK_GLUE void nbg_${S}_skr_row(const nbg_${S}_skc *c, int64_t i) {
    const int64_t VL = NBG_${S}_VL, W = c->W, nv = c->nv;
    const ${CT} *a = c->a + i * c->lda;
    nbg_${S}_v acc[NBG_${S}_SKV];
    ${CT} t[NBG_${S}_SKV * NBG_${S}_VL];
    int64_t p, v;
    for (v = 0; v < nv; v++) acc[v] = (nbg_${S}_v){0};
    for (p = 0; p < c->K; p++) {
        const nbg_${S}_v x = NBG_${S}_BCAST(a + p);
        for (v = 0; v < nv; v++)
            acc[v] = NBG_${S}_MAC(acc[v], x, nbg_${S}_ld(c->bp + p * W + v * VL));
    }
    for (v = 0; v < nv; v++) nbg_${S}_st(t + v * VL, acc[v]);
    nbg_${S}_sk_out(c, i, 1, t);
}
/* The columns case after its 4-deep steps: acc (n x c->W) += A[i0 + i, p] *
   B[p, :] for the last K % 4 values of p (any nv), then acc into C. */
NBG_SK_GLUE void nbg_${S}_skc_rest(const nbg_${S}_skc *c, int64_t i0, int64_t n, int64_t p,
                                   ${CT} *acc) {
    const int64_t VL = NBG_${S}_VL, W = c->W, nv = c->nv;
    int64_t i, v;
    for (; p < c->K; p++) {
        const ${CT} *x0 = c->a + i0 + p * c->lda;
        for (i = 0; i < n; i++) {
            const nbg_${S}_v a0 = NBG_${S}_BCAST(x0 + i);
            for (v = 0; v < nv; v++)
                nbg_${S}_st(acc + i * W + v * VL,
                            NBG_${S}_MAC(nbg_${S}_ld(acc + i * W + v * VL), a0,
                                         nbg_${S}_ld(c->bp + p * W + v * VL)));
        }
    }
    nbg_${S}_sk_out(c, i0, n, acc);
}
/* m(r, v) for the nv vectors v of a row r. */
#define NBG_${S}_V1(m, r) m(r, 0)
#define NBG_${S}_V2(m, r) m(r, 0) m(r, 1)
#define NBG_${S}_V3(m, r) m(r, 0) m(r, 1) m(r, 2)
/* Rows case: accumulator r,v (C row i + r, vector v), B's vector v at k = p,
   row r's multiply-adds, and its store into t. */
#define NBG_${S}_SKZ(r, v) nbg_${S}_v acc##r##v = {0};
#define NBG_${S}_SKB(r, v) const nbg_${S}_v b##v = nbg_${S}_ld(bp + v * VL);
#define NBG_${S}_SKM(r, v) acc##r##v = NBG_${S}_MAC(acc##r##v, x##r, b##v);
#define NBG_${S}_SKS(r, v) nbg_${S}_st(t + r * W + v * VL, acc##r##v);
#define NBG_${S}_SKX(NV, m) NBG_${S}_V##NV(m, 0) NBG_${S}_V##NV(m, 1) \
    NBG_${S}_V##NV(m, 2) NBG_${S}_V##NV(m, 3)
/* Rows [b * c->rows, e * c->rows) of C (rows case), 4 at a time, for one nv. */
#define NBG_${S}_SKR(NV)                                                              \
    static void nbg_${S}_skr##NV(void *vc, int64_t b, int64_t e) {                    \
        const nbg_${S}_skc *c = (const nbg_${S}_skc *)vc;                             \
        const int64_t i1 = e * c->rows < c->M ? e * c->rows : c->M;                  \
        const int64_t VL = NBG_${S}_VL, W = NV * NBG_${S}_VL, K = c->K, lda = c->lda; \
        ${CT} t[4 * NV * NBG_${S}_VL];                                                \
        int64_t i, p;                                                                 \
        for (i = b * c->rows; i + 4 <= i1; i += 4) {                                  \
            const ${CT} *a = c->a + i * lda, *bp = c->bp;                             \
            NBG_${S}_SKX(NV, NBG_${S}_SKZ)                                            \
            for (p = 0; p < K; p++, bp += W) {                                        \
                NBG_${S}_V##NV(NBG_${S}_SKB, _)                                       \
                const nbg_${S}_v x0 = NBG_${S}_BCAST(a + p);                          \
                const nbg_${S}_v x1 = NBG_${S}_BCAST(a + lda + p);                    \
                const nbg_${S}_v x2 = NBG_${S}_BCAST(a + 2 * lda + p);                \
                const nbg_${S}_v x3 = NBG_${S}_BCAST(a + 3 * lda + p);                \
                NBG_${S}_SKX(NV, NBG_${S}_SKM)                                        \
            }                                                                         \
            NBG_${S}_SKX(NV, NBG_${S}_SKS)                                            \
            nbg_${S}_sk_out(c, i, 4, t);                                              \
        }                                                                             \
        for (; i < i1; i++) nbg_${S}_skr_row(c, i);                                   \
    }
NBG_${S}_SKR(1)
NBG_${S}_SKR(2)
NBG_${S}_SKR(3)
/* Columns case: B's vector v at k = p..p+3, and output row q's vector v
   taking its four multiply-adds. */
#define NBG_${S}_SKCB(r, v) const nbg_${S}_v b0##v = nbg_${S}_ld(bp + v * VL),       \
    b1##v = nbg_${S}_ld(bp + W + v * VL), b2##v = nbg_${S}_ld(bp + 2 * W + v * VL),    \
    b3##v = nbg_${S}_ld(bp + 3 * W + v * VL);
#define NBG_${S}_SKCM(r, v) {                                                         \
        nbg_${S}_v s = nbg_${S}_ld(q + v * VL);                                       \
        s = NBG_${S}_MAC(s, a0, b0##v);                                               \
        s = NBG_${S}_MAC(s, a1, b1##v);                                               \
        s = NBG_${S}_MAC(s, a2, b2##v);                                               \
        s = NBG_${S}_MAC(s, a3, b3##v);                                               \
        nbg_${S}_st(q + v * VL, s);                                                   \
    }
/* Blocks [b, e) of c->rows output rows (columns case: A[i, p] = a[i + p * lda]),
   for one nv: acc (rows x W, zeroed, on the heap) += A[i, p] * B[p, :], 4 p
   at a time, then nbg_${S}_skc_rest. */
#define NBG_${S}_SKC(NV)                                                              \
    static void nbg_${S}_skc##NV(void *vc, int64_t b, int64_t e) {                    \
        nbg_${S}_skc *c = (nbg_${S}_skc *)vc;                                         \
        const int64_t VL = NBG_${S}_VL, W = NV * NBG_${S}_VL, K = c->K, lda = c->lda; \
        ${CT} *acc = (${CT} *)malloc(c->rows * W * sizeof(${CT}));                    \
        if (!acc) {                                                                   \
            __atomic_store_n(&c->nomem, 1, __ATOMIC_RELAXED);                         \
            return;                                                                   \
        }                                                                             \
        for (; b < e; b++) {                                                          \
            const int64_t i0 = b * c->rows;                                           \
            const int64_t n = c->M - i0 < c->rows ? c->M - i0 : c->rows;              \
            int64_t i, p;                                                             \
            memset(acc, 0, n * W * sizeof(${CT}));                                    \
            for (p = 0; p + 4 <= K; p += 4) {                                         \
                const ${CT} *x0 = c->a + i0 + p * lda, *x1 = x0 + lda;                \
                const ${CT} *x2 = x1 + lda, *x3 = x2 + lda, *bp = c->bp + p * W;      \
                NBG_${S}_V##NV(NBG_${S}_SKCB, _)                                      \
                for (i = 0; i < n; i++) {                                             \
                    const nbg_${S}_v a0 = NBG_${S}_BCAST(x0 + i);                     \
                    const nbg_${S}_v a1 = NBG_${S}_BCAST(x1 + i);                     \
                    const nbg_${S}_v a2 = NBG_${S}_BCAST(x2 + i);                     \
                    const nbg_${S}_v a3 = NBG_${S}_BCAST(x3 + i);                     \
                    ${CT} *q = acc + i * W;                                           \
                    NBG_${S}_V##NV(NBG_${S}_SKCM, _)                                  \
                }                                                                     \
            }                                                                         \
            nbg_${S}_skc_rest(c, i0, n, p, acc);                                      \
        }                                                                             \
        free(acc);                                                                    \
    }
NBG_${S}_SKC(1)
NBG_${S}_SKC(2)
NBG_${S}_SKC(3)
/* 1 when C = A . B runs as a skinny product: A of the compute type (native),
   M, N > 0, N <= NBG_${S}_SKN, K >= NBG_DOT_SK_MINK, A with unit stride along
   a dimension, strides multiples of the item size.  The Python side
   (nbgraph.tensor.blas_skinny) applies the same rule. */
static inline int nbg_${S}_is_skinny(int native, int64_t M, int64_t K, int64_t N,
                                     int64_t as0, int64_t as1) {
    const int64_t item = sizeof(${CT});
    if (!native || M < 1 || N < 1 || N > NBG_${S}_SKN || K < NBG_DOT_SK_MINK) return 0;
    if (as0 % item || as1 % item) return 0;
    return as1 == item || (as0 == item && M > 1);
}
/* C (M x N, byte strides cs0, cs1) = A . B as a skinny product, else nbg_${S}_mm. */
NBG_SK_GLUE int nbg_${S}_skmm(const char *A, int64_t M, int64_t K, int64_t as0,
                                     int64_t as1, int native, nbg_${S}_pack pa,
                                     const char *B, int64_t N, int64_t bs0, int64_t bs1,
                                     nbg_${S}_pack pb, ${CT} *C, int64_t cs0, int64_t cs1,
                                     char *err) {
    const int64_t VL = NBG_${S}_VL, item = sizeof(${CT});
    const int rows = as1 == item;
    static void (*const rowf[3])(void *, int64_t, int64_t) =
        {nbg_${S}_skr1, nbg_${S}_skr2, nbg_${S}_skr3};
    static void (*const colf[3])(void *, int64_t, int64_t) =
        {nbg_${S}_skc1, nbg_${S}_skc2, nbg_${S}_skc3};
    nbg_${S}_skc c;
    ${CT} *bp;
    int64_t j0, nb;
    int par;
    if (!nbg_${S}_is_skinny(native, M, K, N, as0, as1))
        return nbg_${S}_mm(A, M, K, as0, as1, pa, B, N, bs0, bs1, pb, C, cs0, cs1, err);
    c.cs0 = nbg_dot_estride(M, cs0, item);
    c.cs1 = nbg_dot_estride(N, cs1, item);
    if (c.cs0 < 0 || c.cs1 < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    bp = (${CT} *)malloc(K * NBG_${S}_SKV * VL * item);
    if (!bp) return nbg_dot_nomem(err);
    c.a = (const ${CT} *)A; c.M = M; c.K = K; c.bp = bp;
    c.lda = (rows ? as0 : as1) / item;
    par = nbg_dot_worth(M * K * N, NBG_DOT_SK_PAR);
    if (rows) c.rows = NBG_DOT_SK_ROWS;
    else {  /* as few blocks as the threads need, of at most NBG_DOT_SK_CROWS rows */
        nb = par ? nbg_dot_threads() : 1;
        c.rows = (M + nb - 1) / nb;
        if (c.rows > NBG_DOT_SK_CROWS) c.rows = NBG_DOT_SK_CROWS;
    }
    nb = (M + c.rows - 1) / c.rows;
    c.nomem = 0;
    for (j0 = 0; j0 < N; j0 += NBG_${S}_SKV * VL) {
        c.cols = N - j0 < NBG_${S}_SKV * VL ? N - j0 : NBG_${S}_SKV * VL;
        c.nv = (c.cols + VL - 1) / VL;
        c.W = c.nv * VL;
        c.c = C + j0 * c.cs1;
        if (c.cols < c.W) memset(bp, 0, K * c.W * item);
        pb(bp, B + j0 * bs1, K, c.cols, bs0, bs1, c.W, 1);
        {
            void (*const fn)(void *, int64_t, int64_t) = (rows ? rowf : colf)[c.nv - 1];
            if (nb > 1 && par) nbg_dot_parallel(fn, &c, nb);
            else fn(&c, 0, nb);
        }
        if (c.nomem) { free(bp); return nbg_dot_nomem(err); }
    }
    free(bp);
    return 0;
}
#endif
