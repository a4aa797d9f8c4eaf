"""C kernels for ``Dot``: vector·vector, matrix·vector, vector·matrix and matrix·matrix.

Every case computes in a *compute type* chosen by the output dtype (NumPy's
``np.dot`` result dtype): the float itself, the unsigned integer of the
output's width for integers (wrapping arithmetic, NumPy's overflow
behaviour, with no signed-overflow undefined behaviour), ``uint8`` with
OR/AND for bool.  An operand whose elements are not already of the compute
type, or whose layout the fast loops cannot walk, is converted into a
contiguous buffer first (as NumPy copies before calling BLAS).

* matrix·vector reduces to one of two loops over a matrix with contiguous
  rows: *rows* (one dot product per row, four rows at a time, two vector
  accumulators per row) or *axpy* (the rows scaled by the vector summed into
  one output vector, for ``X.T·c`` with X C-contiguous).  vector·matrix is
  ``Y.T·x`` and vector·vector a one-row matrix.
* matrix·matrix packs 256-deep panels of both operands (converting them)
  and runs a 6-row register-blocked micro-kernel
  (:mod:`~nbgraph.tensor.c_code.dot_mm`).

Big loops are split across the thread pool (``nbg_parallel``) in *fixed*
row blocks that depend on the sizes only; the axpy loop's per-block partial
vectors (each on cache lines of its own) are added in block order, so
results never depend on the thread count.  The blocks form one group per
thread; the calling thread prefers the first group and each pool worker its
own, so the rows and the axpy loops over one matrix (``dot(X, w)`` then
``dot(X.T, c)``, call after call) find each half in the same core's L2.

Vector code uses GCC vector extensions (fused multiply-add when the CPU has
it: the accumulation order differs from BLAS anyway); kernels return error
codes (shape mismatch, out of memory) that become exceptions naming the node.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp
from nbgraph.tensor.c_code.dot_mm import MM
from nbgraph.tensor.scalar_type import C_TYPES as _C_TYPES

__all__ = ["DotC"]

#: Output dtype -> (suffix, compute C type, kind: f float, i integer, b bool).
_COMPUTE = {
    "float64": ("f64", "double", "f"), "float32": ("f32", "float", "f"),
    "int64": ("u64", "uint64_t", "i"), "uint64": ("u64", "uint64_t", "i"),
    "int32": ("u32", "uint32_t", "i"), "uint32": ("u32", "uint32_t", "i"),
    "int16": ("u16", "uint16_t", "i"), "uint16": ("u16", "uint16_t", "i"),
    "int8": ("u8", "uint8_t", "i"), "uint8": ("u8", "uint8_t", "i"),
    "bool": ("b8", "uint8_t", "b"),
}

#: Shared by every compute type: blocking sizes and the pool (serial without it).
_COMMON = r"""#ifndef NBG_DOT_COMMON
#define NBG_DOT_COMMON
#include <stdlib.h>
#include <time.h>
#if defined(__AVX__)
#define NBG_DOT_VBYTES 32
#else
#define NBG_DOT_VBYTES 16
#endif
#define NBG_DOT_MR 6
#define NBG_DOT_KC 256
#define NBG_DOT_MC 48
/* A matrix-vector loop is split in fixed row blocks (a power of two, at most
   NBG_DOT_MAXB) of at least NBG_DOT_MINWORK elements and NBG_DOT_MINROWS rows. */
#define NBG_DOT_MAXB 16
#define NBG_DOT_MINWORK 32768
#define NBG_DOT_MINROWS 16
/* A matrix product is split across threads from this many multiply-adds. */
#define NBG_DOT_MM_PAR 131072
/* The pool's rule for splitting `work` multiply-adds (the workers' state
   included), and fn over [0, n) on the pool with the calling thread. */
#ifdef NBG_RT_VERSION
#define nbg_dot_threads() nbg_threads()
#define nbg_dot_worth(work, min_work) nbg_worth_splitting((work), (min_work))
#define nbg_dot_parallel(fn, ctx, n) nbg_rt->parallel_for((fn), (ctx), (n), 1)
#else
#define nbg_dot_threads() 1
#define nbg_dot_worth(work, min_work) 0
#define nbg_dot_parallel(fn, ctx, n) (fn)((ctx), 0, (n))
#endif
/* Slots: a matrix-vector loop's blocks in one contiguous group per thread.
   The calling thread prefers group 0 and each pool worker its own group
   (which thread runs a group never changes a result). */
static __thread char nbg_dot_me;   /* its address names a thread */
static __thread int nbg_dot_widx;  /* a worker's preferred group, from 1 */
static int nbg_dot_nextw;
typedef struct {
    const char *caller;
    int n, taken[NBG_DOT_MAXB];
    int64_t own;  /* nanoseconds the caller spent in its groups */
} nbg_dot_slots;
/* After a split loop whose caller waited for a late worker more than its
   own work took plus 50 us (longer than waking a sleeping worker: on a busy
   machine a worker was descheduled), the next loops run on the calling
   thread, 4 then up to 256 in a row while it repeats. */
static int nbg_dot_skip, nbg_dot_penalty;
static int64_t nbg_dot_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static int nbg_dot_backing_off(void) {
    const int s = __atomic_load_n(&nbg_dot_skip, __ATOMIC_RELAXED);
    if (s <= 0) return 0;
    __atomic_store_n(&nbg_dot_skip, s - 1, __ATOMIC_RELAXED);
    return 1;
}
static void nbg_dot_judge(int64_t total, int64_t own) {
    int p = 0;
    if (total - own > own + 50000) {
        p = __atomic_load_n(&nbg_dot_penalty, __ATOMIC_RELAXED);
        p = p ? (p < 256 ? 2 * p : 256) : 4;
        __atomic_store_n(&nbg_dot_skip, p, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&nbg_dot_penalty, p, __ATOMIC_RELAXED);
}
static int nbg_dot_claim(nbg_dot_slots *s) {
    int pref = 0, k;
    if (&nbg_dot_me != s->caller) {
        if (!nbg_dot_widx)
            nbg_dot_widx = 1 + __atomic_fetch_add(&nbg_dot_nextw, 1, __ATOMIC_RELAXED) % 1024;
        pref = nbg_dot_widx % s->n;
    }
    for (k = 0; k < s->n; k++) {
        const int j = (pref + k) % s->n;
        if (!__atomic_exchange_n(&s->taken[j], 1, __ATOMIC_ACQ_REL)) return j;
    }
    return 0;
}
/* Rows per block (a multiple of 4) of a loop over `rows` rows of `len` elements. */
static int64_t nbg_dot_block_rows(int64_t rows, int64_t len) {
    int64_t nb = 1;
    while (nb < NBG_DOT_MAXB && rows >= 2 * nb * NBG_DOT_MINROWS
           && rows * len >= 2 * nb * NBG_DOT_MINWORK)
        nb *= 2;
    return ((rows + nb - 1) / nb + 3) / 4 * 4;
}
/* Element stride of a dimension (0 when it has at most one element); -1 when
   the byte stride is not a multiple of the item size. */
static int64_t nbg_dot_estride(int64_t dim, int64_t bytes, int64_t item) {
    if (dim <= 1) return 0;
    return bytes % item ? -1 : bytes / item;
}
static int nbg_dot_nomem(char *err) {
    nbg_errorf(err, "dot: out of memory");
    return NBG_MEMORY_ERROR;
}
#endif
"""

#: The vector type and arithmetic of one compute type: @S@ suffix, @CT@ C
#: type, @WT@ scalar multiply type.  Macros: MAC acc + a * b and VADD a + b on
#: vectors, SMAC and ADD on scalars, BCAST a vector of the scalar at p.
_CORE = r"""#ifndef NBG_DOT_@S@
#define NBG_DOT_@S@
typedef @CT@ nbg_@S@_v __attribute__((vector_size(NBG_DOT_VBYTES)));
#define NBG_@S@_VL ((int64_t)(NBG_DOT_VBYTES / sizeof(@CT@)))
#define NBG_@S@_NR (2 * NBG_@S@_VL)
#define NBG_@S@_NC ((int64_t)(4096 / sizeof(@CT@)))
typedef void (*nbg_@S@_pack)(@CT@ *, const char *, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t);
static inline nbg_@S@_v nbg_@S@_ld(const @CT@ *p) { nbg_@S@_v v; memcpy(&v, p, sizeof v); return v; }
static inline void nbg_@S@_st(@CT@ *p, nbg_@S@_v v) { memcpy(p, &v, sizeof v); }
static inline nbg_@S@_v nbg_@S@_splat(@CT@ s) {
    nbg_@S@_v v;
    int l;
    for (l = 0; l < NBG_@S@_VL; l++) v[l] = s;
    return v;
}
@MACROS@
#endif
"""

#: Matrix-vector loops of one compute type.
_MV = r"""#ifndef NBG_DOTMV_@S@
#define NBG_DOTMV_@S@
/* A row's dot product from its two accumulators (lanes in order), then the tail. */
static inline @CT@ nbg_@S@_fin(nbg_@S@_v s0, nbg_@S@_v s1, const @CT@ *a, const @CT@ *v,
                               int64_t k, int64_t K) {
    const nbg_@S@_v s = NBG_@S@_VADD(s0, s1);
    @CT@ r = s[0];
    int l;
    for (l = 1; l < NBG_@S@_VL; l++) r = NBG_@S@_ADD(r, s[l]);
    for (; k < K; k++) r = NBG_@S@_SMAC(r, a[k], v[k]);
    return r;
}
/* out[i * os] = A[i, :K] . v for rows i in [r0, r1); each row is computed the
   same way whether it is one of four or alone. */
static NBG_NOINLINE void nbg_@S@_rows(const @CT@ *A, int64_t lda, const @CT@ *v, int64_t K,
                                      @CT@ *out, int64_t os, int64_t r0, int64_t r1) {
    const int64_t VL = NBG_@S@_VL;
    const nbg_@S@_v z = {0};
    int64_t i = r0, k;
    for (; i + 4 <= r1; i += 4) {
        const @CT@ *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        nbg_@S@_v p0 = z, q0 = z, p1 = z, q1 = z, p2 = z, q2 = z, p3 = z, q3 = z;
        for (k = 0; k + 2 * VL <= K; k += 2 * VL) {
            const nbg_@S@_v w0 = nbg_@S@_ld(v + k), w1 = nbg_@S@_ld(v + k + VL);
            p0 = NBG_@S@_MAC(p0, nbg_@S@_ld(a0 + k), w0); q0 = NBG_@S@_MAC(q0, nbg_@S@_ld(a0 + k + VL), w1);
            p1 = NBG_@S@_MAC(p1, nbg_@S@_ld(a1 + k), w0); q1 = NBG_@S@_MAC(q1, nbg_@S@_ld(a1 + k + VL), w1);
            p2 = NBG_@S@_MAC(p2, nbg_@S@_ld(a2 + k), w0); q2 = NBG_@S@_MAC(q2, nbg_@S@_ld(a2 + k + VL), w1);
            p3 = NBG_@S@_MAC(p3, nbg_@S@_ld(a3 + k), w0); q3 = NBG_@S@_MAC(q3, nbg_@S@_ld(a3 + k + VL), w1);
        }
        if (k + VL <= K) {
            const nbg_@S@_v w0 = nbg_@S@_ld(v + k);
            p0 = NBG_@S@_MAC(p0, nbg_@S@_ld(a0 + k), w0);
            p1 = NBG_@S@_MAC(p1, nbg_@S@_ld(a1 + k), w0);
            p2 = NBG_@S@_MAC(p2, nbg_@S@_ld(a2 + k), w0);
            p3 = NBG_@S@_MAC(p3, nbg_@S@_ld(a3 + k), w0);
            k += VL;
        }
        out[i * os] = nbg_@S@_fin(p0, q0, a0, v, k, K);
        out[(i + 1) * os] = nbg_@S@_fin(p1, q1, a1, v, k, K);
        out[(i + 2) * os] = nbg_@S@_fin(p2, q2, a2, v, k, K);
        out[(i + 3) * os] = nbg_@S@_fin(p3, q3, a3, v, k, K);
    }
    for (; i < r1; i++) {
        const @CT@ *a0 = A + i * lda;
        nbg_@S@_v p0 = z, q0 = z;
        for (k = 0; k + 2 * VL <= K; k += 2 * VL) {
            p0 = NBG_@S@_MAC(p0, nbg_@S@_ld(a0 + k), nbg_@S@_ld(v + k));
            q0 = NBG_@S@_MAC(q0, nbg_@S@_ld(a0 + k + VL), nbg_@S@_ld(v + k + VL));
        }
        if (k + VL <= K) {
            p0 = NBG_@S@_MAC(p0, nbg_@S@_ld(a0 + k), nbg_@S@_ld(v + k));
            k += VL;
        }
        out[i * os] = nbg_@S@_fin(p0, q0, a0, v, k, K);
    }
}
/* acc[j] = sum over rows i in [r0, r1), in order, of v[i] * A[i, j], j < N. */
static NBG_NOINLINE void nbg_@S@_axpy(const @CT@ *A, int64_t lda, const @CT@ *v, int64_t N,
                                      @CT@ *restrict acc, int64_t r0, int64_t r1) {
    const int64_t VL = NBG_@S@_VL;
    int64_t i = r0, j;
    for (j = 0; j < N; j++) acc[j] = 0;
    for (; i + 4 <= r1; i += 4) {
        const @CT@ *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        const @CT@ c0 = v[i], c1 = v[i + 1], c2 = v[i + 2], c3 = v[i + 3];
        const nbg_@S@_v d0 = nbg_@S@_splat(c0), d1 = nbg_@S@_splat(c1);
        const nbg_@S@_v d2 = nbg_@S@_splat(c2), d3 = nbg_@S@_splat(c3);
        for (j = 0; j + VL <= N; j += VL) {
            nbg_@S@_v x = nbg_@S@_ld(acc + j);
            x = NBG_@S@_MAC(x, d0, nbg_@S@_ld(a0 + j));
            x = NBG_@S@_MAC(x, d1, nbg_@S@_ld(a1 + j));
            x = NBG_@S@_MAC(x, d2, nbg_@S@_ld(a2 + j));
            x = NBG_@S@_MAC(x, d3, nbg_@S@_ld(a3 + j));
            nbg_@S@_st(acc + j, x);
        }
        for (; j < N; j++) {
            @CT@ x = acc[j];
            x = NBG_@S@_SMAC(x, c0, a0[j]);
            x = NBG_@S@_SMAC(x, c1, a1[j]);
            x = NBG_@S@_SMAC(x, c2, a2[j]);
            x = NBG_@S@_SMAC(x, c3, a3[j]);
            acc[j] = x;
        }
    }
    for (; i < r1; i++) {
        const @CT@ *a0 = A + i * lda;
        const @CT@ c0 = v[i];
        const nbg_@S@_v d0 = nbg_@S@_splat(c0);
        for (j = 0; j + VL <= N; j += VL)
            nbg_@S@_st(acc + j, NBG_@S@_MAC(nbg_@S@_ld(acc + j), d0, nbg_@S@_ld(a0 + j)));
        for (; j < N; j++) acc[j] = NBG_@S@_SMAC(acc[j], c0, a0[j]);
    }
}
typedef struct {
    const @CT@ *a, *v;
    int64_t lda, len, rows, rb, nb;
    @CT@ *out, *part;
    int64_t os, ldp;
    int axpy;
    nbg_dot_slots slots;
} nbg_@S@_mvc;
/* Blocks [b, e) of the rows or the axpy loop. */
static void nbg_@S@_blocks(const nbg_@S@_mvc *c, int64_t b, int64_t e) {
    const int64_t r1 = e * c->rb < c->rows ? e * c->rb : c->rows;
    if (!c->axpy) {
        nbg_@S@_rows(c->a, c->lda, c->v, c->len, c->out, c->os, b * c->rb, r1);
        return;
    }
    for (; b < e; b++) {
        const int64_t q = (b + 1) * c->rb < c->rows ? (b + 1) * c->rb : c->rows;
        nbg_@S@_axpy(c->a, c->lda, c->v, c->len, c->part + b * c->ldp, b * c->rb, q);
    }
}
/* Groups [b, e) of blocks (see nbg_dot_claim). */
static void nbg_@S@_mv_task(void *vc, int64_t b, int64_t e) {
    nbg_@S@_mvc *c = (nbg_@S@_mvc *)vc;
    const int64_t g = (c->nb + c->slots.n - 1) / c->slots.n;
    const int me = &nbg_dot_me == c->slots.caller;
    const int64_t t0 = me ? nbg_dot_now() : 0;
    for (; b < e; b++) {
        const int64_t s = nbg_dot_claim(&c->slots);
        nbg_@S@_blocks(c, s * g, (s + 1) * g < c->nb ? (s + 1) * g : c->nb);
    }
    if (me) c->slots.own += nbg_dot_now() - t0;
}
static void nbg_@S@_mv_run(nbg_@S@_mvc *c) {
    const int64_t T = nbg_dot_threads();
    int64_t t0;
    int k;
    c->slots.n = (int)(T < c->nb ? T : c->nb);
    if (c->slots.n <= 1 || !nbg_dot_worth(c->rows * c->len, 2 * NBG_DOT_MINWORK)
        || nbg_dot_backing_off()) {
        nbg_@S@_blocks(c, 0, c->nb);
        return;
    }
    c->slots.caller = &nbg_dot_me;
    c->slots.own = 0;
    for (k = 0; k < c->slots.n; k++) c->slots.taken[k] = 0;
    t0 = nbg_dot_now();
    nbg_dot_parallel(nbg_@S@_mv_task, c, c->slots.n);
    nbg_dot_judge(nbg_dot_now() - t0, c->slots.own);
}
/* out (M elements, byte stride os) = A (M x K, byte strides s0, s1) . V (K,
   byte stride vs).  pa / pv convert an operand into the compute type; na / nv:
   the operand already holds it.  0, or an error code with err filled. */
static NBG_NOINLINE int nbg_@S@_mv(const char *A, int64_t M, int64_t K, int64_t s0, int64_t s1,
                                   nbg_@S@_pack pa, int na, const char *V, int64_t vs,
                                   nbg_@S@_pack pv, int nv, @CT@ *out, int64_t os, char *err) {
    const int64_t item = sizeof(@CT@);
    const int64_t eo = nbg_dot_estride(M, os, item);
    const int64_t e0 = nbg_dot_estride(M, s0, item), e1 = nbg_dot_estride(K, s1, item);
    @CT@ *vbuf = NULL, *abuf = NULL, *part = NULL;
    nbg_@S@_mvc c;
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
    c.v = (const @CT@ *)V;
    if (!nv || (K > 1 && vs != item)) {
        vbuf = (@CT@ *)malloc(K * item);
        if (!vbuf) return nbg_dot_nomem(err);
        pv(vbuf, V, 1, K, 0, vs, 0, 1);
        c.v = vbuf;
    }
    c.out = out;
    c.os = eo;
    if (na && e0 >= 0 && (K == 1 || e1 == 1)) {
        c.a = (const @CT@ *)A; c.lda = e0;
    } else if (na && e1 >= 0 && e0 == 1) {
        /* out = sum over k of V[k] * (row k of A.T): the axpy loop over A.T */
        c.a = (const @CT@ *)A; c.lda = e1; c.len = M; c.rows = K;
        c.rb = nbg_dot_block_rows(K, M);
        c.nb = nb = (K + c.rb - 1) / c.rb;
        c.axpy = 1;
        if (nb == 1 && eo == 1) {  /* straight into the output */
            nbg_@S@_axpy(c.a, c.lda, c.v, M, out, 0, K);
        } else {
            /* partial vectors on cache lines of their own (threads write them) */
            c.ldp = (M * item + 63) / 64 * 64 / item;
            part = (@CT@ *)malloc(nb * c.ldp * item + 64);
            if (!part) { free(vbuf); return nbg_dot_nomem(err); }
            c.part = (@CT@ *)((char *)part + (64 - (uintptr_t)part % 64) % 64);
            nbg_@S@_mv_run(&c);
            for (j = 0; j < M; j++) {
                @CT@ s = c.part[j];
                for (b = 1; b < nb; b++) s = NBG_@S@_ADD(s, c.part[b * c.ldp + j]);
                out[j * eo] = s;
            }
            free(part);
        }
        free(vbuf);
        return 0;
    } else {
        abuf = (@CT@ *)malloc(M * K * item);
        if (!abuf) { free(vbuf); return nbg_dot_nomem(err); }
        pa(abuf, A, M, K, s0, s1, K, 1);
        c.a = abuf; c.lda = K;
    }
    c.len = K; c.rows = M;
    c.rb = nbg_dot_block_rows(M, K);
    c.nb = (M + c.rb - 1) / c.rb;
    c.axpy = 0;
    nbg_@S@_mv_run(&c);
    free(abuf);
    free(vbuf);
    return 0;
}
#endif
"""

_FLOAT_MACROS = r"""#if defined(__AVX__) && !defined(__clang__)
#define NBG_@S@_BCAST(p) @BCAST@(p)
#else
#define NBG_@S@_BCAST(p) nbg_@S@_splat(*(p))
#endif
#if defined(__FMA__) && !defined(__clang__)
#define NBG_@S@_MAC(acc, a, b) @VFMA@((a), (b), (acc))
#define NBG_@S@_SMAC(acc, a, b) @SFMA@((a), (b), (acc))
#else
#define NBG_@S@_MAC(acc, a, b) ((acc) + (a) * (b))
#define NBG_@S@_SMAC(acc, a, b) ((acc) + (a) * (b))
#endif
#define NBG_@S@_ADD(a, b) ((a) + (b))
#define NBG_@S@_VADD(a, b) ((a) + (b))"""

_INT_MACROS = r"""#define NBG_@S@_BCAST(p) nbg_@S@_splat(*(p))
#define NBG_@S@_MAC(acc, a, b) ((acc) + (a) * (b))
#define NBG_@S@_SMAC(acc, a, b) ((@CT@)((acc) + (@WT@)(a) * (@WT@)(b)))
#define NBG_@S@_ADD(a, b) ((@CT@)((a) + (b)))
#define NBG_@S@_VADD(a, b) ((a) + (b))"""

_BOOL_MACROS = r"""#define NBG_@S@_BCAST(p) nbg_@S@_splat(*(p))
#define NBG_@S@_MAC(acc, a, b) ((acc) | ((a) & (b)))
#define NBG_@S@_SMAC(acc, a, b) ((@CT@)((acc) | ((a) & (b))))
#define NBG_@S@_ADD(a, b) ((@CT@)((a) | (b)))
#define NBG_@S@_VADD(a, b) ((a) | (b))"""

#: Convert a strided block of an input of dtype @IN@ into the compute type.
_PACK = r"""#ifndef NBG_DOTPK_@IN@_@S@
#define NBG_DOTPK_@IN@_@S@
/* dst[r * drs + c * dcs] = src[r * rs + c * cs] (byte strides) for r < rows, c < cols. */
static NBG_NOINLINE void nbg_dpk_@IN@_@S@(@CT@ *dst, const char *src, int64_t rows,
                                          int64_t cols, int64_t rs, int64_t cs, int64_t drs,
                                          int64_t dcs) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const char *p = src + r * rs;
        @CT@ *q = dst + r * drs;
        if (dcs == 1)
            for (c = 0; c < cols; c++) q[c] = @CONV@;
        else
            for (c = 0; c < cols; c++) q[c * dcs] = @CONV@;
    }
}
#endif
"""


def _fill(text, **subs):
    for key, value in subs.items():
        text = text.replace("@%s@" % key, value)
    return text


def _compute(node):
    return _COMPUTE[node.outputs[0].type.dtype]


def _core(suffix, ctype, kind, matrix):
    if kind == "f":
        bits = "64" if ctype == "double" else "32"
        macros = _fill(_FLOAT_MACROS,
                       VFMA="__builtin_ia32_vfmaddpd256" if bits == "64"
                       else "__builtin_ia32_vfmaddps256",
                       SFMA="__builtin_fma" if bits == "64" else "__builtin_fmaf",
                       BCAST="__builtin_ia32_vbroadcastsd256" if bits == "64"
                       else "__builtin_ia32_vbroadcastss256")
    elif kind == "i":
        macros = _INT_MACROS
    else:
        macros = _BOOL_MACROS
    wide = "uint64_t" if ctype == "uint64_t" else "uint32_t"
    loops = MM if matrix else _MV
    return _fill(_CORE + loops, MACROS=macros, S=suffix, CT=ctype, WT=wide)


def _pack(in_dtype, suffix, ctype):
    value = "*(const %s *)(p + c * cs)" % _C_TYPES[in_dtype]
    conv = "(%s)(%s != 0)" % (ctype, value) if in_dtype == "bool" else \
        "(%s)%s" % (ctype, value)
    return _fill(_PACK, IN=in_dtype, S=suffix, CT=ctype, CONV=conv)


def _native(in_dtype, out_dtype):
    """True when an input's elements already are the compute type's bits."""
    if in_dtype == out_dtype:
        return out_dtype != "bool"
    a, b = np.dtype(in_dtype), np.dtype(out_dtype)
    return a.kind in "iu" and b.kind in "iu" and a.itemsize == b.itemsize


class DotC(CLinkerOp):
    """The C side of Dot (module docstring): ``class Dot(DotC, Op)``."""

    def has_c_code(self, node):
        """True for real and bool dtypes (no float16, complex or object)."""
        return all(v.type.dtype in _C_TYPES for v in node.inputs + node.outputs) and \
            all(v.type.ndim in (1, 2) for v in node.inputs)


    def c_preferred(self, node):
        """Whether the C-VM linker should run this node in C rather than with NumPy.

        Measured on 2 cores: the C loops beat NumPy's BLAS calls for matrix·vector,
        vector·matrix and vector·vector products (less call overhead: 1.3 against
        1.7 us for a small product followed by an Elemwise; 1000x100 float64:
        ~6 us on two threads, each keeping its half of X in its L2, against
        15.6 us); NumPy's BLAS stays for floating matrix products, but NumPy's
        integer and bool matrix products are plain loops (100x100 int64: 0.14
        against 0.66 ms).
        """
        x, y = node.inputs
        if x.type.ndim == 2 and y.type.ndim == 2:
            return node.outputs[0].type.dtype not in ("float32", "float64")
        return True


    def c_prepare_outputs(self, node, inputs, _empty=np.empty):
        x, y = inputs
        dtype = node.outputs[0].type.numpy_dtype
        if y.ndim == 1:  # sizes as ints, not tuples: this runs on every call
            return [_empty(len(x) if x.ndim == 2 else (), dtype)]
        if x.ndim == 1:
            return [_empty(y.shape[1], dtype)]
        return [_empty((len(x), y.shape[1]), dtype)]


    def c_support_code(self, node=None):
        if node is None:
            return _COMMON
        suffix, ctype, kind = _compute(node)
        matrix = all(v.type.ndim == 2 for v in node.inputs)
        parts = [_COMMON, _core(suffix, ctype, kind, matrix)]
        for dtype in dict.fromkeys(v.type.dtype for v in node.inputs):
            parts.append(_pack(dtype, suffix, ctype))
        return "\n".join(parts)


    def c_code(self, node, name, inputs, outputs, sub):
        x, y = node.inputs
        a, b = inputs
        (o,) = outputs
        out_dtype = node.outputs[0].type.dtype
        suffix, ctype, _ = _compute(node)
        ka, kb = x.type.ndim - 1, 0
        lines = ["if (NBG_UNLIKELY(%s_dims[%d] != %s_dims[0])) {" % (a, ka, b),
                 "char nbg_b1[200], nbg_b2[200];",
                 'nbg_errorf(nbg_err, "dot: shapes %%s and %%s are not aligned", '
                 "nbg_shape_text(nbg_b1, 200, %d, %s_dims), nbg_shape_text(nbg_b2, 200, %d, %s_dims));"
                 % (x.type.ndim, a, y.type.ndim, b),
                 "goto nbg_fail;", "}"]
        expect = ["%s_dims[0]" % a] if x.type.ndim == 2 else []
        expect += ["%s_dims[1]" % b] if y.type.ndim == 2 else []
        if expect:
            lines.append("if (NBG_UNLIKELY(%s)) { nbg_errorf(nbg_err, \"dot: the output's shape "
                         "does not match the inputs'\"); goto nbg_fail; }" % " || ".join(
                             "%s_dims[%d] != %s" % (o, d, e) for d, e in enumerate(expect)))
        pa = "nbg_dpk_%s_%s" % (x.type.dtype, suffix)
        pb = "nbg_dpk_%s_%s" % (y.type.dtype, suffix)
        na, nb = int(_native(x.type.dtype, out_dtype)), int(_native(y.type.dtype, out_dtype))
        args = {"S": suffix, "CT": ctype, "a": a, "b": b, "o": o, "pa": pa, "pb": pb,
                "na": na, "nb": nb}
        if x.type.ndim == 2 and y.type.ndim == 2:
            call = ("nbg_%(S)s_mm((const char *)%(a)s, %(a)s_dims[0], %(a)s_dims[1], "
                    "%(a)s_strides[0], %(a)s_strides[1], %(pa)s, (const char *)%(b)s, %(b)s_dims[1], "
                    "%(b)s_strides[0], %(b)s_strides[1], %(pb)s, (%(CT)s *)%(o)s, %(o)s_strides[0], "
                    "%(o)s_strides[1], nbg_err)")
        elif x.type.ndim == 2:
            call = ("nbg_%(S)s_mv((const char *)%(a)s, %(a)s_dims[0], %(a)s_dims[1], "
                    "%(a)s_strides[0], %(a)s_strides[1], %(pa)s, %(na)d, (const char *)%(b)s, "
                    "%(b)s_strides[0], %(pb)s, %(nb)d, (%(CT)s *)%(o)s, %(o)s_strides[0], nbg_err)")
        elif y.type.ndim == 2:
            call = ("nbg_%(S)s_mv((const char *)%(b)s, %(b)s_dims[1], %(b)s_dims[0], "
                    "%(b)s_strides[1], %(b)s_strides[0], %(pb)s, %(nb)d, (const char *)%(a)s, "
                    "%(a)s_strides[0], %(pa)s, %(na)d, (%(CT)s *)%(o)s, %(o)s_strides[0], nbg_err)")
        else:
            call = ("nbg_%(S)s_mv((const char *)%(a)s, 1, %(a)s_dims[0], 0, %(a)s_strides[0], "
                    "%(pa)s, %(na)d, (const char *)%(b)s, %(b)s_strides[0], %(pb)s, %(nb)d, "
                    "(%(CT)s *)%(o)s, 0, nbg_err)")
        lines.append("nbg_status = %s;" % (call % args))
        lines.append("if (nbg_status) goto nbg_fail;")
        return "\n".join(lines)


    def c_code_cache_version(self):
        return (1,)
