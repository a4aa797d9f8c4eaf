#ifndef NBG_DOTSK_${S}
#define NBG_DOTSK_${S}
/* Skinny products: C (M x N) = A (M x K) . B (K x N) with few output columns
   (N <= NBG_${S}_SKN: 96 bytes of a row, 12 doubles or 24 floats) and A of
   the compute type with unit stride along one axis.  B is packed once (K x N
   values); A is never packed, only streamed.  The columns run in passes of
   at most NBG_DOT_SK_NC, of balanced widths (10 = 5 + 5), each pass a
   register tile whose nc columns are a compile-time count:
   * rows (A's rows contiguous, X . W): vectors run along k.  B is packed
     transposed (row j of the pack is column j of B), and a tile of
     NBG_DOT_SK_R rows of A x nc columns keeps one accumulator vector per
     output element: per VL values of k, R loads of A and nc of B feed R * nc
     multiply-adds, with no padding whatever N is.  Each element's lanes are
     then added in lane order and the k % VL last products after them;
   * columns (A's columns contiguous: A = X.T, the gradient X.T . G): vectors
     run along the output rows, which are contiguous in each row of X.  A tile
     of NBG_DOT_SK_IV vectors of output rows x nc columns: per p, IV loads of
     X's row p and nc broadcasts of B[p, :] feed IV * nc multiply-adds, so
     every output element is one multiply-add chain over p in order (the
     same as a scalar loop's).  The tiles of a group of NBG_DOT_SK_CROWS
     output rows take NBG_DOT_SK_PC rows of X in turn (their accumulators
     wait in a buffer in L1), so X is read along its rows, 16 rows at a time.
     Walking down a column of X, each row a new page, defeats the hardware
     prefetchers: when X comes from memory, (600x784).T . 600x10 took 600-700
     us that way, against 340 us in groups (one Zen 4 core, after a 16 MB
     sweep; 32 rows at a time: 490-580 us), for 5% more when X is in L3
     (209 against 199 us).
   Both split the output rows in blocks across the pool.  An element's sum
   depends only on its row and column: never on the blocking, the tile it
   falls in (the edge rows run the same operations one at a time, in the glue)
   or the thread count; it depends on the vector width in the rows case (its
   lanes), as any vectorised sum does.
   Tile sizes: NBG_DOT_SK_R x NBG_DOT_SK_NC accumulators plus R + 1 vectors
   fit 32 vector registers (AVX-512VL) with R = IV = 4, and 16 with 2.  GCC
   would otherwise fold each load of B into every multiply-add that uses it
   (R memory operands instead of one load: the loop turns load-bound, 300
   instead of 170 us for 600x784 . 784x10 on one Zen 4 core); NBG_SK_PIN
   keeps the loaded vector in a register.  Plain vector extensions, no
   CPU-specific intrinsics beyond dot_core.h's guarded macros. */
#define NBG_${S}_SKN ((int64_t)(96 / sizeof(${CT})))
#ifndef NBG_DOT_SK_ROWS
#define NBG_DOT_SK_ROWS 64      /* rows of a block (rows case) */
#define NBG_DOT_SK_MINK 16
#define NBG_DOT_SK_NC 5         /* columns of a pass, at most */
#define NBG_DOT_SK_CROWS 256    /* output rows of a group (columns case), a multiple of every tile */
#define NBG_DOT_SK_PC 16        /* rows of X a group's tiles take in turn (columns case) */
#if defined(__AVX512VL__)  /* ymm16-31 for 256-bit vectors */
#define NBG_DOT_SK_R 4          /* rows of A per tile (rows case) */
#define NBG_DOT_SK_IV 4         /* vectors of output rows per tile (columns case) */
#else
#define NBG_DOT_SK_R 2
#define NBG_DOT_SK_IV 2
#endif
/* Split across the pool from this many multiply-adds (M K N), when the pool
   is awake or the work is 4 times this (nbg_dot_worth): a 600x500x10 product
   (3M, ~130 us on one core) gains; BLAS's spinning workers, which made
   splitting products this small lose, are not woken under the C-VM when
   Dot's C finds the BLAS (dot_blas.h runs its products on the pool). */
#define NBG_DOT_SK_PAR (1 << 21)
/* Drivers, glue and tails: one copy for every nc, compiled at -O1 (not on the
   hot path: a driver runs once per tile call, a tile hundreds of cycles). */
#define NBG_SK_GLUE static NBG_NOINLINE NBG_DOT_GLUE
/* The tiles: straight-line code (see NBG_SK_EACH_R), -O1 too. */
#define NBG_SK_TILE static NBG_NOINLINE NBG_DOT_GLUE
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NBG_SK_PIN(v) __asm__("" : "+v"(v))
#else
#define NBG_SK_PIN(v) ((void)0)
#endif
/* A tile's accumulators are variables of their own, acc<r>_<j>, named by the
   preprocessor: NBG_SK_EACH_R(M, j) is M(r, j) for every row r of a tile (or
   vector of rows: IV is R), NBG_SK_EACH_J<NC>(M) is M(j) for every column j
   of a pass.  A tile is then straight-line code around its one loop, which
   GCC compiles at -O1 to the -O3 code of loops over arrays (that only -O3's
   unrolling freed from memory) for a fraction of the work. */
#if NBG_DOT_SK_R == 4
#define NBG_SK_EACH_R(M, j) M(0, j) M(1, j) M(2, j) M(3, j)
#else
#define NBG_SK_EACH_R(M, j) M(0, j) M(1, j)
#endif
#define NBG_SK_EACH_J1(M) M(0)
#define NBG_SK_EACH_J2(M) M(0) M(1)
#define NBG_SK_EACH_J3(M) M(0) M(1) M(2)
#define NBG_SK_EACH_J4(M) M(0) M(1) M(2) M(3)
#define NBG_SK_EACH_J5(M) M(0) M(1) M(2) M(3) M(4)
#endif
typedef struct {
    const ${CT} *a;
    int64_t M, K, lda;  /* rows: A[i, k] = a[i * lda + k]; columns: A[i, p] = a[i + p * lda] */
    const ${CT} *bp;    /* rows: B transposed, N x K; columns: B, K x N */
    int64_t N;
    ${CT} *c;
    int64_t cs0, cs1;   /* C's element strides */
    int64_t rows;       /* output rows of a block */
} nbg_${S}_skc;
/* A tile's pieces (the accumulators acc<r>_<j>, x<r> the loaded rows or
   vectors of rows of A, b the column's vector of B, t the tile's buffer, nc
   its columns): start at zero, the multiply-add, store, and each of them for
   every row of column j. */
#define NBG_${S}_SK_ZERO(r, j) nbg_${S}_v acc##r##_##j = z;
#define NBG_${S}_SK_FMA(r, j) acc##r##_##j = NBG_${S}_MAC(acc##r##_##j, x##r, b);
#define NBG_${S}_SK_ST(r, j) nbg_${S}_st(t + (r * nc + j) * VL, acc##r##_##j);
#define NBG_${S}_SK_ZEROS(j) NBG_SK_EACH_R(NBG_${S}_SK_ZERO, j)
#define NBG_${S}_SK_STS(j) NBG_SK_EACH_R(NBG_${S}_SK_ST, j)
/* Columns [jb, jb + nc) of the pass q of np over N columns. */
static inline int64_t nbg_${S}_sk_pass(int64_t N, int64_t np, int64_t q) { return q * N / np; }
/* Rows case, rows [i, i + R) x columns [jb, jb + nc) of C from t (their
   accumulator vectors, R x nc x VL): the lanes in order, then the last K % VL
   products. */
NBG_SK_GLUE void nbg_${S}_skr_out(const nbg_${S}_skc *c, int64_t i, int64_t R, int64_t jb,
                                  int64_t nc, const ${CT} *t) {
    const int64_t VL = NBG_${S}_VL, K = c->K, kv = K / VL * VL;
    int64_t r, j, l, k;
    for (r = 0; r < R; r++) {
        const ${CT} *a = c->a + (i + r) * c->lda;
        for (j = 0; j < nc; j++) {
            const ${CT} *u = t + (r * nc + j) * VL, *bt = c->bp + (jb + j) * K;
            ${CT} s = u[0];
            for (l = 1; l < VL; l++) s = NBG_${S}_ADD(s, u[l]);
            for (k = kv; k < K; k++) s = NBG_${S}_SMAC(s, a[k], bt[k]);
            c->c[(i + r) * c->cs0 + (jb + j) * c->cs1] = s;
        }
    }
}
/* Rows case, one row i (the last rows of a block): the tile's operations. */
NBG_SK_GLUE void nbg_${S}_skr_row(const nbg_${S}_skc *c, int64_t i, int64_t jb, int64_t nc) {
    const int64_t VL = NBG_${S}_VL, K = c->K, kv = K / VL * VL;
    const ${CT} *a = c->a + i * c->lda;
    ${CT} t[NBG_DOT_SK_NC * NBG_${S}_VL];
    int64_t j, k;
    for (j = 0; j < nc; j++) {
        const ${CT} *bt = c->bp + (jb + j) * K;
        nbg_${S}_v acc = {0};
        for (k = 0; k < kv; k += VL)
            acc = NBG_${S}_MAC(acc, nbg_${S}_ld(a + k), nbg_${S}_ld(bt + k));
        nbg_${S}_st(t + j * VL, acc);
    }
    nbg_${S}_skr_out(c, i, 1, jb, nc, t);
}
/* Rows case tile: rows [i, i + R) x columns [jb, jb + NC). */
#define NBG_${S}_SKR_X(r, j) nbg_${S}_v x##r = nbg_${S}_ld(a + r * lda + k); NBG_SK_PIN(x##r);
#define NBG_${S}_SKR_COL(j)                                                           \
    {                                                                                 \
        nbg_${S}_v b = nbg_${S}_ld(bt + j * K + k);                                   \
        NBG_SK_PIN(b);                                                                \
        NBG_SK_EACH_R(NBG_${S}_SK_FMA, j)                                             \
    }
#define NBG_${S}_SKR(NC)                                                              \
    NBG_SK_TILE void nbg_${S}_skr##NC(const nbg_${S}_skc *c, int64_t i, int64_t jb) { \
        const int64_t VL = NBG_${S}_VL, K = c->K, lda = c->lda, kv = K / VL * VL;    \
        const int64_t nc = NC;                                                        \
        const ${CT} *a = c->a + i * lda, *bt = c->bp + jb * K;                        \
        const nbg_${S}_v z = {0};                                                     \
        ${CT} t[NBG_DOT_SK_R * NC * NBG_${S}_VL];                                     \
        int64_t k = 0;                                                                \
        NBG_SK_EACH_J##NC(NBG_${S}_SK_ZEROS)                                          \
        do {  /* kv >= VL (K >= NBG_DOT_SK_MINK) */                                   \
            NBG_SK_EACH_R(NBG_${S}_SKR_X, 0)                                          \
            NBG_SK_EACH_J##NC(NBG_${S}_SKR_COL)                                       \
            k += VL;                                                                  \
        } while (k < kv);                                                             \
        NBG_SK_EACH_J##NC(NBG_${S}_SK_STS)                                            \
        nbg_${S}_skr_out(c, i, NBG_DOT_SK_R, jb, NC, t);                              \
    }
NBG_${S}_SKR(1)
NBG_${S}_SKR(2)
NBG_${S}_SKR(3)
NBG_${S}_SKR(4)
NBG_${S}_SKR(5)
/* Rows case: the blocks [b, e) of c->rows rows, every pass of each R rows. */
NBG_SK_GLUE void nbg_${S}_sk_rows(void *vc, int64_t b, int64_t e) {
    static void (*const tile[NBG_DOT_SK_NC])(const nbg_${S}_skc *, int64_t, int64_t) =
        {nbg_${S}_skr1, nbg_${S}_skr2, nbg_${S}_skr3, nbg_${S}_skr4, nbg_${S}_skr5};
    const nbg_${S}_skc *c = (const nbg_${S}_skc *)vc;
    const int64_t i1 = e * c->rows < c->M ? e * c->rows : c->M;
    const int64_t np = (c->N + NBG_DOT_SK_NC - 1) / NBG_DOT_SK_NC;
    int64_t i, q, r;
    for (i = b * c->rows; i < i1; i += NBG_DOT_SK_R)
        for (q = 0; q < np; q++) {
            const int64_t jb = nbg_${S}_sk_pass(c->N, np, q);
            const int64_t nc = nbg_${S}_sk_pass(c->N, np, q + 1) - jb;
            if (i + NBG_DOT_SK_R <= i1) tile[nc - 1](c, i, jb);
            else for (r = i; r < i1; r++) nbg_${S}_skr_row(c, r, jb, nc);
        }
}
/* Columns case, rows [i, i + n) x columns [jb, jb + nc) of C from t: the
   accumulator vector of rows [i + v VL, i + (v + 1) VL) and column jb + j at
   t + (v nc + j) VL (not the tile's own layout, which GCC would turn into a
   copy of the accumulators' array, kept in memory through the loop). */
NBG_SK_GLUE void nbg_${S}_skc_out(const nbg_${S}_skc *c, int64_t i, int64_t n, int64_t jb,
                                  int64_t nc, const ${CT} *t) {
    const int64_t VL = NBG_${S}_VL;
    int64_t r, j;
    for (j = 0; j < nc; j++)
        for (r = 0; r < n; r++)
            c->c[(i + r) * c->cs0 + (jb + j) * c->cs1] = t[((r / VL) * nc + j) * VL + r % VL];
}
/* Columns case, the rows [i, i1) after the last whole tile: a vector of rows at
   a time, then one row at a time; the tile's multiply-adds, in its order. */
NBG_SK_GLUE void nbg_${S}_skc_edge(const nbg_${S}_skc *c, int64_t i, int64_t i1, int64_t jb,
                                   int64_t nc) {
    const int64_t VL = NBG_${S}_VL, K = c->K, lda = c->lda, N = c->N;
    ${CT} t[NBG_DOT_SK_NC * NBG_${S}_VL];
    int64_t j, p;
    for (; i + VL <= i1; i += VL) {
        for (j = 0; j < nc; j++) {
            nbg_${S}_v acc = {0};
            for (p = 0; p < K; p++)
                acc = NBG_${S}_MAC(acc, nbg_${S}_ld(c->a + i + p * lda),
                                   NBG_${S}_BCAST(c->bp + p * N + jb + j));
            nbg_${S}_st(t + j * VL, acc);
        }
        nbg_${S}_skc_out(c, i, VL, jb, nc, t);
    }
    for (; i < i1; i++) {
        for (j = 0; j < nc; j++) {
            ${CT} s = 0;
            for (p = 0; p < K; p++) s = NBG_${S}_SMAC(s, c->a[i + p * lda], c->bp[p * N + jb + j]);
            t[j * VL] = s;
        }
        nbg_${S}_skc_out(c, i, 1, jb, nc, t);
    }
}
/* Columns case: the tiles of rows [i, it) (IV * VL each) x columns [jb, jb +
   NC), the multiply-adds of p in [p0, p1) (p1 > p0), onto their accumulators
   in t (nbg_${S}_skc_out's layout, a tile's N * IV * VL values apart; zeros
   when p0 is 0). */
#define NBG_${S}_SKC_LD(r, j) nbg_${S}_v acc##r##_##j = p0 ? nbg_${S}_ld(t + (r * nc + j) * VL) : z;
#define NBG_${S}_SKC_LDS(j) NBG_SK_EACH_R(NBG_${S}_SKC_LD, j)
#define NBG_${S}_SKC_X(r, j) nbg_${S}_v x##r = nbg_${S}_ld(a + r * VL); NBG_SK_PIN(x##r);
#define NBG_${S}_SKC_COL(j)                                                           \
    {                                                                                 \
        nbg_${S}_v b = NBG_${S}_BCAST(bp + j);                                        \
        NBG_SK_PIN(b);                                                                \
        NBG_SK_EACH_R(NBG_${S}_SK_FMA, j)                                             \
    }
#define NBG_${S}_SKC(NC)                                                              \
    NBG_SK_TILE void nbg_${S}_skc##NC(const nbg_${S}_skc *c, int64_t i, int64_t it,   \
                                      int64_t jb, int64_t p0, int64_t p1, ${CT} *t) { \
        const int64_t VL = NBG_${S}_VL, lda = c->lda, N = c->N, nc = NC;              \
        const nbg_${S}_v z = {0};                                                     \
        for (; i < it; i += NBG_DOT_SK_IV * VL, t += N * NBG_DOT_SK_IV * VL) {        \
            const ${CT} *a = c->a + i + p0 * lda, *bp = c->bp + jb + p0 * N;          \
            int64_t p = p0;                                                           \
            NBG_SK_EACH_J##NC(NBG_${S}_SKC_LDS)                                       \
            do {                                                                      \
                NBG_SK_EACH_R(NBG_${S}_SKC_X, 0)                                      \
                NBG_SK_EACH_J##NC(NBG_${S}_SKC_COL)                                   \
                a += lda;                                                             \
                bp += N;                                                              \
            } while (++p < p1);                                                       \
            NBG_SK_EACH_J##NC(NBG_${S}_SK_STS)                                        \
        }                                                                             \
    }
NBG_${S}_SKC(1)
NBG_${S}_SKC(2)
NBG_${S}_SKC(3)
NBG_${S}_SKC(4)
NBG_${S}_SKC(5)
/* Columns case: the blocks [b, e) of c->rows output rows, in groups of at most
   NBG_DOT_SK_CROWS rows: each NBG_DOT_SK_PC rows of X (p) run through every
   pass and tile of a group (the group's accumulators wait in buf), then the
   edge rows; every element's chain runs over p in order. */
NBG_SK_GLUE void nbg_${S}_sk_cols(void *vc, int64_t b, int64_t e) {
    static void (*const tile[NBG_DOT_SK_NC])(const nbg_${S}_skc *, int64_t, int64_t, int64_t,
                                             int64_t, int64_t, ${CT} *) =
        {nbg_${S}_skc1, nbg_${S}_skc2, nbg_${S}_skc3, nbg_${S}_skc4, nbg_${S}_skc5};
    const nbg_${S}_skc *c = (const nbg_${S}_skc *)vc;
    const int64_t T = NBG_DOT_SK_IV * NBG_${S}_VL, N = c->N, K = c->K;
    const int64_t i1 = e * c->rows < c->M ? e * c->rows : c->M;
    const int64_t np = (N + NBG_DOT_SK_NC - 1) / NBG_DOT_SK_NC;
    ${CT} buf[NBG_DOT_SK_CROWS * NBG_${S}_SKN];
    int64_t i0, it, i, p0, p1, q;
    for (i0 = b * c->rows; i0 < i1; i0 += NBG_DOT_SK_CROWS) {
        const int64_t ie = i0 + NBG_DOT_SK_CROWS < i1 ? i0 + NBG_DOT_SK_CROWS : i1;
        it = i0 + (ie - i0) / T * T;
        for (p0 = 0; p0 < K && it > i0; p0 = p1) {
            p1 = p0 + NBG_DOT_SK_PC < K ? p0 + NBG_DOT_SK_PC : K;
            for (q = 0; q < np; q++) {
                const int64_t jb = nbg_${S}_sk_pass(N, np, q);
                const int64_t nc = nbg_${S}_sk_pass(N, np, q + 1) - jb;
                tile[nc - 1](c, i0, it, jb, p0, p1, buf + jb * T);
            }
        }
        for (q = 0; q < np; q++) {
            const int64_t jb = nbg_${S}_sk_pass(N, np, q);
            const int64_t nc = nbg_${S}_sk_pass(N, np, q + 1) - jb;
            for (i = i0; i < it; i += T)
                nbg_${S}_skc_out(c, i, T, jb, nc, buf + (i - i0) * N + jb * T);
            if (it < ie) nbg_${S}_skc_edge(c, it, ie, jb, nc);
        }
    }
}
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
/* C (M x N, byte strides cs0, cs1) = A . B as a skinny product (the caller,
   nbg_${S}_gemm, checked nbg_${S}_is_skinny). */
NBG_SK_GLUE int nbg_${S}_skmm(const char *A, int64_t M, int64_t K, int64_t as0,
                              int64_t as1, const char *B, int64_t N, int64_t bs0,
                              int64_t bs1, nbg_${S}_pack pb, ${CT} *C, int64_t cs0,
                              int64_t cs1, char *err) {
    const int64_t item = sizeof(${CT});
    const int rows = as1 == item;
    void (*const fn)(void *, int64_t, int64_t) = rows ? nbg_${S}_sk_rows : nbg_${S}_sk_cols;
    nbg_${S}_skc c;
    ${CT} *bp;
    int64_t nb;
    int par;
    c.cs0 = nbg_dot_estride(M, cs0, item);
    c.cs1 = nbg_dot_estride(N, cs1, item);
    if (c.cs0 < 0 || c.cs1 < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    bp = (${CT} *)malloc(K * N * item);
    if (!bp) return nbg_dot_nomem(err);
    if (rows) pb(bp, B, N, K, bs1, bs0, K, 1);  /* B transposed: N x K */
    else pb(bp, B, K, N, bs0, bs1, N, 1);
    c.a = (const ${CT} *)A; c.M = M; c.K = K; c.bp = bp; c.N = N; c.c = C;
    c.lda = (rows ? as0 : as1) / item;
    par = nbg_dot_worth(M * K * N, NBG_DOT_SK_PAR);
    if (rows) c.rows = NBG_DOT_SK_ROWS;
    else {  /* as few blocks as the threads need, whole tiles */
        const int64_t T = NBG_DOT_SK_IV * NBG_${S}_VL;
        nb = par ? nbg_dot_threads() : 1;
        c.rows = ((M + nb - 1) / nb + T - 1) / T * T;
    }
    nb = (M + c.rows - 1) / c.rows;
    if (nb > 1 && par) nbg_dot_parallel(fn, &c, nb);
    else fn(&c, 0, nb);
    free(bp);
#if defined(__AVX__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_ia32_vzeroupper();  /* -O1 code does not clean the vector registers' upper halves */
#endif
    return 0;
}
#endif
