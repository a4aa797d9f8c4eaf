/* 2-d pooling over the last two dimensions and its gradient
   (nbgraph/tensor/c_code/pool.py), for one float type ${S} (C type ${CT}).

   Every (leading-index) plane is pooled by one task, in one pass over its
   windows: max (NaN wins, as np.maximum), sum, and the two averages (the
   sum divided by the window's count, as perform divides).  The gradient
   zeroes the plane, then adds each window's share into the image elements
   of the window: for max, to every element equal to the window's maximum
   (recomputed from the forward output; nothing is kept between the two).
   Windows are visited in the order that makes each element's additions
   those of perform (its taps in increasing order: windows from the last),
   so both give the same bits.  Planes are split across the thread pool;
   results never depend on the thread count. */
#include <stdlib.h>
#ifndef NBG_POOL_${S}
#define NBG_POOL_${S}
#define NBG_POOL_MAX 0
#define NBG_POOL_SUM 1
#define NBG_POOL_INC 2
#define NBG_POOL_EXC 3
typedef struct {
    int mode, nd, ignore_border;        /* nd leading dimensions */
    int64_t lead[NBG_MAXDIMS], planes;
    int64_t h, w, oh, ow, wsh, wsw, sth, stw, ph, pw;
    const char *x; int64_t xl[NBG_MAXDIMS], xs[2];    /* input */
    const char *out; int64_t ol[NBG_MAXDIMS], os[2];  /* forward output (gradient) */
    const char *g; int64_t gl[NBG_MAXDIMS], gs[2];    /* output gradient */
    char *r; int64_t rl[NBG_MAXDIMS], rs[2];          /* the result */
    nbg_fails fails;
} nbg_pool_${S}_ctx;

/* The byte offset of plane `pl` along leading strides `st`. */
static inline int64_t nbg_pool_${S}_plane(const nbg_pool_${S}_ctx *c, const int64_t *st,
                                          int64_t pl) {
    int64_t off = 0;
    int d;
    if (c->nd == 1) return pl * st[0];
    for (d = c->nd - 1; d >= 0; d--) {
        off += (pl % c->lead[d]) * st[d];
        pl /= c->lead[d];
    }
    return off;
}

/* take ? a : b without a branch (random data mispredicts one), so loops
   vectorise and their scalar remainders stay cheap. */
static inline ${CT} nbg_pool_${S}_pick(int take, ${CT} a, ${CT} b) {
    const ${IT} m = (${IT})0 - (${IT})(take != 0);
    ${IT} ia, ib;
    memcpy(&ia, &a, sizeof a);
    memcpy(&ib, &b, sizeof b);
    ia = (ia & m) | (ib & ~m);
    memcpy(&a, &ia, sizeof a);
    return a;
}

/* Columns j of an output row whose tap b falls inside the image: [*lo, *hi). */
static inline void nbg_pool_${S}_span(const nbg_pool_${S}_ctx *c, int64_t b, int64_t *lo,
                                      int64_t *hi) {
    const int64_t first = c->pw - b, last = c->w - 1 + c->pw - b;
    *lo = first <= 0 ? 0 : (first + c->stw - 1) / c->stw;
    *hi = last < 0 ? 0 : last / c->stw + 1;
    if (*hi > c->ow) *hi = c->ow;
    if (*lo > *hi) *lo = *hi;
}

/* The divisor of window (i, j) (1 for max and sum), as perform counts. */
static inline ${CT} nbg_pool_${S}_count(const nbg_pool_${S}_ctx *c, int64_t i, int64_t j) {
    const int64_t r0 = i * c->sth, q0 = j * c->stw;  /* padded coordinates */
    int64_t rows, cols;
    if (c->mode == NBG_POOL_INC) {
        const int64_t rh = c->h + 2 * c->ph, rw = c->w + 2 * c->pw;
        rows = (r0 + c->wsh < rh ? r0 + c->wsh : rh) - r0;
        cols = (q0 + c->wsw < rw ? q0 + c->wsw : rw) - q0;
    } else if (c->mode == NBG_POOL_EXC) {
        rows = (r0 + c->wsh - c->ph < c->h ? r0 + c->wsh - c->ph : c->h)
            - (r0 - c->ph > 0 ? r0 - c->ph : 0);
        cols = (q0 + c->wsw - c->pw < c->w ? q0 + c->wsw - c->pw : c->w)
            - (q0 - c->pw > 0 ? q0 - c->pw : 0);
        rows = rows > 0 ? rows : 0;
        cols = cols > 0 ? cols : 0;
    } else {
        return 1;
    }
    return (${CT})(rows * cols);
}

/* A loop over the output columns [lo, hi) of one tap: `x` is the input
   column; the body written once for strides 1 and 2 (constants the
   compiler vectorises) and any other. */
#define NBG_POOL_COLUMNS(c, lo, hi, b, BODY) do {                                        \
    int64_t j_;                                                                          \
    if ((c)->stw == 1) for (j_ = lo; j_ < hi; j_++) { const int64_t j = j_,              \
        x = j_ + (b) - (c)->pw; BODY; }                                                  \
    else if ((c)->stw == 2) for (j_ = lo; j_ < hi; j_++) { const int64_t j = j_,         \
        x = 2 * j_ + (b) - (c)->pw; BODY; }                                              \
    else for (j_ = lo; j_ < hi; j_++) { const int64_t j = j_,                            \
        x = j_ * (c)->stw + (b) - (c)->pw; BODY; }                                       \
} while (0)

/* Pools planes [b, e): each output row accumulates its window rows tap by tap
   (perform's order) in acc. */
static void nbg_pool_${S}_task(void *vc, int64_t b, int64_t e) {
    const nbg_pool_${S}_ctx *c = (const nbg_pool_${S}_ctx *)vc;
    const int unit = c->xs[1] == (int64_t)sizeof(${CT});
    int64_t i, j, y, tb, lo, hi, *span = (int64_t *)malloc(2 * c->wsw * sizeof(int64_t));
    ${CT} *acc = (${CT} *)malloc((c->ow + 1) * sizeof(${CT}));
    if (!acc || !span) {
        free(acc); free(span);
        nbg_fail_once((nbg_fails *)&c->fails, NBG_MEMORY_ERROR, "pool_2d: out of memory");
        return;
    }
    for (tb = 0; tb < c->wsw; tb++) nbg_pool_${S}_span(c, tb, &span[2 * tb], &span[2 * tb + 1]);
    for (; b < e; b++) {
        const char *xp = c->x + nbg_pool_${S}_plane(c, c->xl, b);
        char *rp = c->r + nbg_pool_${S}_plane(c, c->rl, b);
        for (i = 0; i < c->oh; i++) {
            const int64_t r0 = i * c->sth - c->ph;
            const int64_t ylo = r0 > 0 ? r0 : 0, yhi = r0 + c->wsh < c->h ? r0 + c->wsh : c->h;
            const ${CT} start = c->mode == NBG_POOL_MAX ? -(${CT})INFINITY : 0;
            for (j = 0; j < c->ow; j++) acc[j] = start;
            for (y = ylo; y < yhi; y++) {
                const char *row = xp + y * c->xs[0];
                const ${CT} *urow = (const ${CT} *)row;
                for (tb = 0; tb < c->wsw; tb++) {
                    lo = span[2 * tb]; hi = span[2 * tb + 1];
                    if (c->mode == NBG_POOL_MAX && unit)
                        NBG_POOL_COLUMNS(c, lo, hi, tb, {
                            const ${CT} v = urow[x];
                            acc[j] = nbg_pool_${S}_pick((v > acc[j]) | (v != v), v, acc[j]); });
                    else if (c->mode == NBG_POOL_MAX)
                        NBG_POOL_COLUMNS(c, lo, hi, tb, {
                            const ${CT} v = *(const ${CT} *)(row + x * c->xs[1]);
                            acc[j] = nbg_pool_${S}_pick((v > acc[j]) | (v != v), v, acc[j]); });
                    else if (unit)
                        NBG_POOL_COLUMNS(c, lo, hi, tb, { acc[j] += urow[x]; });
                    else
                        NBG_POOL_COLUMNS(c, lo, hi, tb, {
                            acc[j] += *(const ${CT} *)(row + x * c->xs[1]); });
                }
            }
            for (j = 0; j < c->ow; j++)
                *(${CT} *)(rp + i * c->rs[0] + j * c->rs[1]) = c->mode >= NBG_POOL_INC
                    ? acc[j] / nbg_pool_${S}_count(c, i, j) : acc[j];
        }
    }
    free(acc);
    free(span);
}

/* Back-propagates planes [b, e): zero, then tap by tap (perform's order of
   additions) over every window's row. */
static void nbg_pool_${S}_grad_task(void *vc, int64_t b, int64_t e) {
    const nbg_pool_${S}_ctx *c = (const nbg_pool_${S}_ctx *)vc;
    int64_t i, j, y, x, ta, tb, lo, hi;
    ${CT} *share = (${CT} *)malloc((c->oh * c->ow + 1) * sizeof(${CT}));
    if (!share) {
        nbg_fail_once((nbg_fails *)&c->fails, NBG_MEMORY_ERROR, "pool_2d: out of memory");
        return;
    }
    for (; b < e; b++) {
        const char *xp = c->x + nbg_pool_${S}_plane(c, c->xl, b);
        const char *op = c->out + nbg_pool_${S}_plane(c, c->ol, b);
        const char *gp = c->g + nbg_pool_${S}_plane(c, c->gl, b);
        char *rp = c->r + nbg_pool_${S}_plane(c, c->rl, b);
        for (y = 0; y < c->h; y++)
            for (x = 0; x < c->w; x++) *(${CT} *)(rp + y * c->rs[0] + x * c->rs[1]) = 0;
        for (i = 0; i < c->oh; i++)
            for (j = 0; j < c->ow; j++) {
                const ${CT} gv = *(const ${CT} *)(gp + i * c->gs[0] + j * c->gs[1]);
                share[i * c->ow + j] = c->mode >= NBG_POOL_INC
                    ? gv / nbg_pool_${S}_count(c, i, j) : gv;
            }
        for (ta = 0; ta < c->wsh; ta++)
            for (tb = 0; tb < c->wsw; tb++) {
                nbg_pool_${S}_span(c, tb, &lo, &hi);
                for (i = 0; i < c->oh; i++) {
                    const int64_t yy = i * c->sth + ta - c->ph;
                    const ${CT} *sh = share + i * c->ow;
                    const char *xrow = xp + yy * c->xs[0], *orow = op + i * c->os[0];
                    char *rrow = rp + yy * c->rs[0];
                    if (yy < 0 || yy >= c->h) continue;
                    if (c->mode == NBG_POOL_MAX)
                        NBG_POOL_COLUMNS(c, lo, hi, tb, {
                            const ${CT} v = *(const ${CT} *)(xrow + x * c->xs[1]);
                            *(${CT} *)(rrow + x * c->rs[1]) += nbg_pool_${S}_pick(
                                v == *(const ${CT} *)(orow + j * c->os[1]), sh[j], 0); });
                    else
                        NBG_POOL_COLUMNS(c, lo, hi, tb, {
                            *(${CT} *)(rrow + x * c->rs[1]) += sh[j]; });
                }
            }
    }
    free(share);
}

/* One output dimension (pool_output_size in nbgraph/tensor/pool.py). */
static int64_t nbg_pool_${S}_size(int64_t size, int64_t ws, int64_t st, int64_t pad, int ib) {
    int64_t n;
    if (ib) {
        n = size + 2 * pad - ws;
        return n < 0 ? 0 : n / st + 1;
    }
    if (size == 0) return 0;
    if (st >= ws) return (size - 1) / st + 1;
    n = size - 1 - ws + st;
    return (n > 0 ? n / st : 0) + 1;
}

/* Fills the leading dimensions of an operand (nd + 2 dims) into l and the
   last two strides into s; -1 when its leading shape is not the input's. */
static int nbg_pool_${S}_operand(const nbg_pool_${S}_ctx *c, int nd, const int64_t *dims,
                                 const int64_t *strides, int64_t rows, int64_t cols,
                                 int64_t *l, int64_t *s) {
    int d;
    for (d = 0; d < nd - 2; d++) {
        if (dims[d] != c->lead[d]) return -1;
        l[d] = strides[d];
    }
    if (dims[nd - 2] != rows || dims[nd - 1] != cols) return -1;
    s[0] = strides[nd - 2];
    s[1] = strides[nd - 1];
    return 0;
}

/* Pools (grad = 0) or back-propagates (grad = 1); operands as in the context. */
static NBG_NOINLINE int nbg_pool_${S}_run(nbg_pool_${S}_ctx *c, int grad, int nd,
                                         const int64_t *xd, const int64_t *xst,
                                         const int64_t *od, const int64_t *ost,
                                         const int64_t *gd, const int64_t *gst,
                                         const int64_t *rd, const int64_t *rst, char *err) {
    char b1[200], b2[200];
    int64_t want[NBG_MAXDIMS];
    int d;
    c->nd = nd - 2;
    c->planes = 1;
    for (d = 0; d < nd - 2; d++) {
        c->lead[d] = xd[d];
        c->planes *= xd[d];
        want[d] = xd[d];
    }
    c->h = xd[nd - 2];
    c->w = xd[nd - 1];
    c->oh = nbg_pool_${S}_size(c->h, c->wsh, c->sth, c->ph, c->ignore_border);
    c->ow = nbg_pool_${S}_size(c->w, c->wsw, c->stw, c->pw, c->ignore_border);
    want[nd - 2] = c->oh;
    want[nd - 1] = c->ow;
    nbg_pool_${S}_operand(c, nd, xd, xst, c->h, c->w, c->xl, c->xs);
    if (grad) {
        if (nbg_pool_${S}_operand(c, nd, od, ost, c->oh, c->ow, c->ol, c->os)) {
            nbg_errorf(err, "pool_2d: argument output has shape %s, the pooling's output "
                       "has shape %s", nbg_shape_text(b1, 200, nd, od),
                       nbg_shape_text(b2, 200, nd, want));
            return NBG_VALUE_ERROR;
        }
        if (nbg_pool_${S}_operand(c, nd, gd, gst, c->oh, c->ow, c->gl, c->gs)) {
            nbg_errorf(err, "pool_2d: argument gradient has shape %s, the pooling's output "
                       "has shape %s", nbg_shape_text(b1, 200, nd, gd),
                       nbg_shape_text(b2, 200, nd, want));
            return NBG_VALUE_ERROR;
        }
    }
    if (nbg_pool_${S}_operand(c, nd, rd, rst, grad ? c->h : c->oh, grad ? c->w : c->ow,
                              c->rl, c->rs)) {
        nbg_errorf(err, "pool_2d: the output has shape %s, not the expected one",
                   nbg_shape_text(b1, 200, nd, rd));
        return NBG_VALUE_ERROR;
    }
    /* Leading dimensions every operand walks as one are merged (fewer divisions). */
    for (d = c->nd - 2; d >= 0; d--) {
        int64_t *ls[4] = {c->xl, c->ol, c->gl, c->rl};
        int k, ok = 1, j;
        for (k = 0; k < 4; k++)  /* the forward pass has no out and g: x and r count */
            if (grad || k == 0 || k == 3) ok &= ls[k][d] == ls[k][d + 1] * c->lead[d + 1];
        if (!ok) continue;
        c->lead[d] *= c->lead[d + 1];
        for (k = 0; k < 4; k++) {
            ls[k][d] = ls[k][d + 1];
            for (j = d + 1; j + 1 < c->nd; j++) ls[k][j] = ls[k][j + 1];
        }
        for (j = d + 1; j + 1 < c->nd; j++) c->lead[j] = c->lead[j + 1];
        c->nd--;
    }
    {
        const int64_t per = (grad ? c->h * c->w : 0) + c->oh * c->ow * c->wsh * c->wsw + 1;
        c->fails.failed = 0;
        c->fails.status = 0;
        c->fails.err = err;
        nbg_parallel(grad ? nbg_pool_${S}_grad_task : nbg_pool_${S}_task, c, c->planes, 1,
                     (NBG_POOL_MINWORK + per - 1) / per);
    }
    return c->fails.failed ? c->fails.status : 0;
}
#endif
