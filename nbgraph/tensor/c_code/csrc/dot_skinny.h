#ifndef NBG_DOTSK_${S}
#define NBG_DOTSK_${S}
/* Skinny products: C (M x N) = A (M x K) . B (K x N) with few output columns
   (N <= NBG_${S}_SKN: 96 bytes of a row, 12 doubles or 24 floats) and A of
   the compute type with unit stride along one axis.  B is packed once (K x N
   values); A is never packed, only streamed.  The columns run in passes of
   NBG_DOT_SK_NC (5) and a last narrower one (12 = 5 + 5 + 2), each pass a
   register tile of 5 or, for a last pass of 1 or 2 columns, 2 columns (a
   compile-time count; the tile's columns past the pass's are computed and
   not stored: two tile widths instead of one per width compile in 40% of
   the work, for 3 and 4 columns 10-30% slower):
   * rows (A's rows contiguous, X . W): vectors run along k.  B is packed
     transposed (row j of the pack is column j of B), and a tile of
     NBG_DOT_SK_R rows of A x nc columns keeps one accumulator vector per
     output element: per VL values of k, R loads of A and nc of B feed R * nc
     multiply-adds, with no padding along k.  Each element's lanes are
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
   depends only on its row and column: never on the blocking, the tile or
   pass it falls in (edge rows and narrow passes run a whole tile's
   operations, the extra rows or columns not stored) or the thread count;
   it depends on the vector width in the rows case (its lanes), as any
   vectorised sum does.
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
/* The tails (the sums of a tile's accumulators into C), compiled at -O1. */
#define NBG_SK_GLUE static NBG_NOINLINE NBG_DOT_GLUE
/* The setup of a call and the drivers that call the tiles, unoptimised: they
   run once per call, or once per tile call (a tile runs thousands of cycles). */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_SK_DRIVER static __attribute__((noinline, noclone, optimize("O0")))
#else
#define NBG_SK_DRIVER static NBG_NOINLINE
#endif
/* The tiles: straight-line code (see NBG_SK_EACH_R), -O1 too (as the tails). */
#define NBG_SK_TILE static NBG_NOINLINE NBG_DOT_GLUE
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NBG_SK_PIN(v) __asm__("" : "+v"(v))
#else
#define NBG_SK_PIN(v) ((void)0)
#endif
/* A tile's accumulators are variables of their own, acc<r>_<j>, named by the
   preprocessor: NBG_SK_EACH_R(M, j) is M(r, j) for every row r of a tile (or
   vector of rows: IV is R), NBG_SK_EACH_J<NC>(M) is M(j) for every column j
   of a tile of NC (5 = NBG_DOT_SK_NC, or 2) columns.  A tile is then
   straight-line code around its one loop, which GCC compiles at -O1 to the
   -O3 code of loops over arrays (that only -O3's unrolling freed from
   memory) for a fraction of the work. */
#if NBG_DOT_SK_R == 4
#define NBG_SK_EACH_R(M, j) M(0, j) M(1, j) M(2, j) M(3, j)
#else
#define NBG_SK_EACH_R(M, j) M(0, j) M(1, j)
#endif
#define NBG_SK_EACH_J5(M) M(0) M(1) M(2) M(3) M(4)
#define NBG_SK_EACH_J2(M) M(0) M(1)
#endif
typedef struct {
    const ${CT} *a;
    int64_t M, K, lda;  /* rows: A[i, k] = a[i * lda + k]; columns: A[i, p] = a[i + p * lda] */
    const ${CT} *bp;    /* rows: B transposed, N x K; columns: B, K x N */
    int64_t N;
    ${CT} *c;
    int64_t cs0, cs1;   /* C's element strides */
    int64_t rows;       /* output rows of a block */
    const ${CT} *edge;  /* columns, M < T: A's rows then zeros, T x K (nbg_${S}_skmm) */
} nbg_${S}_skc;
/* A tile's pieces (the accumulators acc<r>_<j>, x<r> the loaded rows or
   vectors of rows of A, b the column's vector of B): start at zero, the
   multiply-add, and each of them for every row of column j. */
#define NBG_${S}_SK_ZERO(r, j) nbg_${S}_v acc##r##_##j = z;
#define NBG_${S}_SK_FMA(r, j) acc##r##_##j = NBG_${S}_MAC(acc##r##_##j, x##r, b);
#define NBG_${S}_SK_ZEROS(j) NBG_SK_EACH_R(NBG_${S}_SK_ZERO, j)
/* Rows case, rows [i, i + n) x columns [jb, jb + nc) of C from t (the
   accumulator vector of row r and column j at t + (r NBG_DOT_SK_NC + j) VL):
   the lanes in order, then the last K % VL products. */
NBG_SK_GLUE void nbg_${S}_skr_out(const nbg_${S}_skc *c, int64_t i, int64_t n, int64_t jb,
                                  int64_t nc, const ${CT} *t) {
    const int64_t VL = NBG_${S}_VL, K = c->K, kv = K / VL * VL;
    int64_t r, j, l, k;
    for (r = 0; r < n; r++) {
        const ${CT} *a = c->a + (i + r) * c->lda;
        for (j = 0; j < nc; j++) {
            const ${CT} *u = t + (r * NBG_DOT_SK_NC + j) * VL, *bt = c->bp + (jb + j) * K;
            ${CT} s = u[0];
            for (l = 1; l < VL; l++) s = NBG_${S}_ADD(s, u[l]);
            for (k = kv; k < K; k++) s = NBG_${S}_SMAC(s, a[k], bt[k]);
            c->c[(i + r) * c->cs0 + (jb + j) * c->cs1] = s;
        }
    }
}
/* Rows case tile of NC columns: rows [i, i + n) x columns [jb, jb + nc), n <=
   R, nc <= NC.  It always runs R x NC accumulators: a row past n repeats row
   i + n - 1 and a column past nc column jb + nc - 1 (their sums are not
   stored), so the edge rows and a narrower pass run the same operations as
   a whole tile. */
#define NBG_${S}_SKR_A(r, j) const ${CT} *a##r = c->a + (i + (r < n ? r : n - 1)) * lda;
#define NBG_${S}_SKR_B(j) const ${CT} *bt##j = c->bp + (jb + (j < nc ? j : nc - 1)) * K;
#define NBG_${S}_SKR_X(r, j) nbg_${S}_v x##r = nbg_${S}_ld(a##r + k); NBG_SK_PIN(x##r);
#define NBG_${S}_SKR_COL(j)                                                           \
    {                                                                                 \
        nbg_${S}_v b = nbg_${S}_ld(bt##j + k);                                        \
        NBG_SK_PIN(b);                                                                \
        NBG_SK_EACH_R(NBG_${S}_SK_FMA, j)                                             \
    }
#define NBG_${S}_SKR_ST(r, j) nbg_${S}_st(t + (r * NBG_DOT_SK_NC + j) * VL, acc##r##_##j);
#define NBG_${S}_SKR_STS(j) NBG_SK_EACH_R(NBG_${S}_SKR_ST, j)
#define NBG_${S}_SKR(NC)                                                              \
    NBG_SK_TILE void nbg_${S}_skr##NC(const nbg_${S}_skc *c, int64_t i, int64_t n,    \
                                      int64_t jb, int64_t nc) {                       \
        const int64_t VL = NBG_${S}_VL, K = c->K, lda = c->lda, kv = K / VL * VL;    \
        const nbg_${S}_v z = {0};                                                     \
        ${CT} t[NBG_DOT_SK_R * NBG_DOT_SK_NC * NBG_${S}_VL];                          \
        int64_t k = 0;                                                                \
        NBG_SK_EACH_R(NBG_${S}_SKR_A, 0)                                              \
        NBG_SK_EACH_J##NC(NBG_${S}_SKR_B)                                             \
        NBG_SK_EACH_J##NC(NBG_${S}_SK_ZEROS)                                          \
        do {  /* kv >= VL (K >= NBG_DOT_SK_MINK) */                                   \
            NBG_SK_EACH_R(NBG_${S}_SKR_X, 0)                                          \
            NBG_SK_EACH_J##NC(NBG_${S}_SKR_COL)                                       \
            k += VL;                                                                  \
        } while (k < kv);                                                             \
        NBG_SK_EACH_J##NC(NBG_${S}_SKR_STS)                                           \
        nbg_${S}_skr_out(c, i, n, jb, nc, t);                                         \
    }
NBG_${S}_SKR(5)
NBG_${S}_SKR(2)
/* Rows case: the blocks [b, e) of c->rows rows, every pass of each R rows. */
NBG_SK_DRIVER void nbg_${S}_sk_rows(void *vc, int64_t b, int64_t e) {
    const nbg_${S}_skc *c = (const nbg_${S}_skc *)vc;
    const int64_t i1 = e * c->rows < c->M ? e * c->rows : c->M, N = c->N;
    int64_t i, jb, n, nc;
    for (i = b * c->rows; i < i1; i += NBG_DOT_SK_R) {
        n = i1 - i < NBG_DOT_SK_R ? i1 - i : NBG_DOT_SK_R;
        for (jb = 0; jb < N; jb += NBG_DOT_SK_NC) {
            nc = N - jb < NBG_DOT_SK_NC ? N - jb : NBG_DOT_SK_NC;
            if (nc > 2) nbg_${S}_skr5(c, i, n, jb, nc);
            else nbg_${S}_skr2(c, i, n, jb, nc);
        }
    }
}
/* Columns case, rows [i, i + n) x columns [jb, jb + nc) of C from t, whose
   rows start at row i - r0: the accumulator vector of t's rows [v VL, (v +
   1) VL) and column jb + j at t + (v NC + j) VL (not the tile's own layout,
   which GCC would turn into a copy of the accumulators' array, kept in
   memory through the loop). */
NBG_SK_GLUE void nbg_${S}_skc_out(const nbg_${S}_skc *c, int64_t i, int64_t n, int64_t jb,
                                  int64_t nc, const ${CT} *t, int64_t r0) {
    const int64_t VL = NBG_${S}_VL;
    int64_t r, j;
    for (j = 0; j < nc; j++)
        for (r = r0; r < r0 + n; r++)
            c->c[(i + r - r0) * c->cs0 + (jb + j) * c->cs1] =
                t[((r / VL) * NBG_DOT_SK_NC + j) * VL + r % VL];
}
/* Columns case tile of NC columns: the tiles of rows [i, it) (IV * VL each) x
   columns [jb, jb + NC), the multiply-adds of p in [p0, p1) (p1 > p0), onto
   their accumulators in t (nbg_${S}_skc_out's layout, a tile's ld values
   apart; zeros when p0 is 0).  The columns past the pass's are the next
   ones of B, or zeros after its last row (their sums are not output). */
#define NBG_${S}_SKC_LD(r, j)                                                         \
    nbg_${S}_v acc##r##_##j = p0 ? nbg_${S}_ld(t + (r * NBG_DOT_SK_NC + j) * VL) : z;
#define NBG_${S}_SKC_LDS(j) NBG_SK_EACH_R(NBG_${S}_SKC_LD, j)
#define NBG_${S}_SKC_X(r, j) nbg_${S}_v x##r = nbg_${S}_ld(a + r * VL); NBG_SK_PIN(x##r);
#define NBG_${S}_SKC_COL(j)                                                           \
    {                                                                                 \
        nbg_${S}_v b = NBG_${S}_BCAST(bp + j);                                        \
        NBG_SK_PIN(b);                                                                \
        NBG_SK_EACH_R(NBG_${S}_SK_FMA, j)                                             \
    }
#define NBG_${S}_SKC_ST(r, j) nbg_${S}_st(t + (r * NBG_DOT_SK_NC + j) * VL, acc##r##_##j);
#define NBG_${S}_SKC_STS(j) NBG_SK_EACH_R(NBG_${S}_SKC_ST, j)
#define NBG_${S}_SKC(NC)                                                              \
    NBG_SK_TILE void nbg_${S}_skc##NC(const nbg_${S}_skc *c, int64_t i, int64_t it,   \
                                      int64_t jb, int64_t p0, int64_t p1, ${CT} *t,   \
                                      int64_t ld) {                                   \
        const int64_t VL = NBG_${S}_VL, lda = c->lda, N = c->N;                       \
        const nbg_${S}_v z = {0};                                                     \
        for (; i < it; i += NBG_DOT_SK_IV * VL, t += ld) {                            \
            const ${CT} *a = c->a + i + p0 * lda, *bp = c->bp + jb + p0 * N;          \
            int64_t p = p0;                                                           \
            NBG_SK_EACH_J##NC(NBG_${S}_SKC_LDS)                                       \
            do {                                                                      \
                NBG_SK_EACH_R(NBG_${S}_SKC_X, 0)                                      \
                NBG_SK_EACH_J##NC(NBG_${S}_SKC_COL)                                   \
                a += lda;                                                             \
                bp += N;                                                              \
            } while (++p < p1);                                                       \
            NBG_SK_EACH_J##NC(NBG_${S}_SKC_STS)                                       \
        }                                                                             \
    }
NBG_${S}_SKC(5)
NBG_${S}_SKC(2)
/* Columns case: the blocks [b, e) of c->rows output rows, in groups of at most
   NBG_DOT_SK_CROWS rows: each NBG_DOT_SK_PC rows of X (p) run through every
   pass and tile of a group (the group's accumulators wait in buf); every
   element's chain runs over p in order.  The rows after the last whole tile
   (in the last group, ending at row M) run as the tile of the last T rows of
   A, or of c->edge (M < T: A's rows, then zeros), in the same operations. */
NBG_SK_DRIVER void nbg_${S}_sk_cols(void *vc, int64_t b, int64_t e) {
    const nbg_${S}_skc *c = (const nbg_${S}_skc *)vc;
    const int64_t T = NBG_DOT_SK_IV * NBG_${S}_VL, N = c->N, K = c->K;
    const int64_t i1 = e * c->rows < c->M ? e * c->rows : c->M;
    /* a tile's accumulators: NC columns per pass */
    const int64_t ld = (N + NBG_DOT_SK_NC - 1) / NBG_DOT_SK_NC * NBG_DOT_SK_NC * T;
    ${CT} buf[NBG_DOT_SK_CROWS * (NBG_${S}_SKN + NBG_DOT_SK_NC - 1)];
    nbg_${S}_skc edge = *c;
    const int64_t e0 = c->M < T ? 0 : c->M - T;  /* the edge tile's first row */
    int64_t i0, it, i, p0, p1, jb, nc;
    if (c->M < T) {
        edge.a = c->edge;
        edge.lda = T;
    }
    for (i0 = b * c->rows; i0 < i1; i0 += NBG_DOT_SK_CROWS) {
        const int64_t ie = i0 + NBG_DOT_SK_CROWS < i1 ? i0 + NBG_DOT_SK_CROWS : i1;
        it = i0 + (ie - i0) / T * T;
        for (p0 = 0; p0 < K && it > i0; p0 = p1) {
            p1 = p0 + NBG_DOT_SK_PC < K ? p0 + NBG_DOT_SK_PC : K;
            for (jb = 0; jb < N; jb += NBG_DOT_SK_NC) {
                if (N - jb > 2) nbg_${S}_skc5(c, i0, it, jb, p0, p1, buf + jb * T, ld);
                else nbg_${S}_skc2(c, i0, it, jb, p0, p1, buf + jb * T, ld);
            }
        }
        for (jb = 0; jb < N; jb += NBG_DOT_SK_NC) {
            nc = N - jb < NBG_DOT_SK_NC ? N - jb : NBG_DOT_SK_NC;
            for (i = i0; i < it; i += T)
                nbg_${S}_skc_out(c, i, T, jb, nc, buf + (i - i0) / T * ld + jb * T, 0);
            if (it == ie) continue;
            if (nc > 2) nbg_${S}_skc5(&edge, e0, e0 + T, jb, 0, K, buf, ld);
            else nbg_${S}_skc2(&edge, e0, e0 + T, jb, 0, K, buf, ld);
            nbg_${S}_skc_out(c, it, ie - it, jb, nc, buf, it - e0);
        }
    }
}
/* 1 when C = A . B runs as a skinny product: A of the compute type (native),
   M, N > 0, N <= NBG_${S}_SKN, K >= NBG_DOT_SK_MINK, A with unit stride along
   a dimension, strides multiples of the item size.  The Python side
   (nbgraph.tensor.blas_skinny) applies the same rule. */
NBG_SK_DRIVER int nbg_${S}_is_skinny(int native, int64_t M, int64_t K, int64_t N,
                                     int64_t as0, int64_t as1) {
    const int64_t item = sizeof(${CT});
    if (!native || M < 1 || N < 1 || N > NBG_${S}_SKN || K < NBG_DOT_SK_MINK) return 0;
    if (as0 % item || as1 % item) return 0;
    return as1 == item || (as0 == item && M > 1);
}
/* C (M x N, byte strides cs0, cs1) = A . B as a skinny product (the caller,
   nbg_${S}_gemm, checked nbg_${S}_is_skinny). */
NBG_SK_DRIVER int nbg_${S}_skmm(const char *A, int64_t M, int64_t K, int64_t as0,
                              int64_t as1, nbg_${S}_pack pa, const char *B, int64_t N,
                              int64_t bs0, int64_t bs1, nbg_${S}_pack pb, ${CT} *C,
                              int64_t cs0, int64_t cs1, char *err) {
    const int64_t item = sizeof(${CT});
    const int rows = as1 == item;
    void (*const fn)(void *, int64_t, int64_t) = rows ? nbg_${S}_sk_rows : nbg_${S}_sk_cols;
    const int64_t T = NBG_DOT_SK_IV * NBG_${S}_VL;
    nbg_${S}_skc c;
    ${CT} *bp, *edge = NULL;
    int64_t nb;
    int par;
    c.cs0 = nbg_dot_estride(M, cs0, item);
    c.cs1 = nbg_dot_estride(N, cs1, item);
    if (c.cs0 < 0 || c.cs1 < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    /* B, and NBG_DOT_SK_NC - 1 zeros after it (the columns case's last tile
       reads past its last row) */
    bp = (${CT} *)malloc((K * N + NBG_DOT_SK_NC - 1) * item);
    if (!bp) return nbg_dot_nomem(err);
    memset(bp + K * N, 0, (NBG_DOT_SK_NC - 1) * item);
    if (rows) pb(bp, B, N, K, bs1, bs0, K, 1);  /* B transposed: N x K */
    else pb(bp, B, K, N, bs0, bs1, N, 1);
    c.a = (const ${CT} *)A; c.M = M; c.K = K; c.bp = bp; c.N = N; c.c = C;
    c.lda = (rows ? as0 : as1) / item;
    c.edge = NULL;
    if (!rows && M < T) {  /* A's rows, then zeros: a tile of T rows */
        edge = (${CT} *)calloc(T * K, item);
        if (!edge) {
            free(bp);
            return nbg_dot_nomem(err);
        }
        pa(edge, A, M, K, as0, as1, 1, T);
        c.edge = edge;
    }
    par = nbg_dot_worth(M * K * N, NBG_DOT_SK_PAR);
    if (rows) c.rows = NBG_DOT_SK_ROWS;
    else {  /* as few blocks as the threads need, whole tiles */
        nb = par ? nbg_dot_threads() : 1;
        c.rows = ((M + nb - 1) / nb + T - 1) / T * T;
    }
    nb = (M + c.rows - 1) / c.rows;
    if (nb > 1 && par) nbg_dot_parallel(fn, &c, nb);
    else fn(&c, 0, nb);
    free(bp);
    free(edge);
#if defined(__AVX__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_ia32_vzeroupper();  /* -O1 code does not clean the vector registers' upper halves */
#endif
    return 0;
}
#endif
