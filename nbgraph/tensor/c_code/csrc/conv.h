/* 2-d convolutions of NCHW batches as matrix products over packed panels
   (nbgraph/tensor/c_code/conv.py), for one float type ${S} (C type ${CT}):
   needs dot_common.h, dot_core.h and dot_mm.h (the 6 x NR register tile
   nbg_${S}_micro).  The image windows are never stored as a matrix: the
   packing loops read them from the image (implicit im2col), and the
   gradient of the input is scattered back from the tile (col2im).

   Forward, per image n:        out[n] (K x P)  = F (K x R) . cols_n (R x P)
   Input gradient, per image:   cols (R x P)    = F^T (R x K) . g[n] (K x P), scattered
   Filter gradient, per block:  part (K x R)   += g[n] (K x P) . cols_n^T (P x R)

   with R = C * KH * KW rows (c, a, b) of the window matrix, P = OH * OW its
   columns (i, j), F the filters as a K x R matrix (flipped when asked).
   Tasks own whole images (or fixed blocks of images, whose partial filter
   gradients are added in block order), so results never depend on the
   thread count.  Sizes are in elements, strides in bytes. */
#ifndef NBG_CONV_${S}
#define NBG_CONV_${S}
typedef struct {
    int64_t n, c, h, w, k, kh, kw, oh, ow, ph, pw, sh, sw, dh, dw;
    int flip;
    const char *x; int64_t xs[4];   /* input (N, C, H, W) */
    const char *f; int64_t fs[4];   /* filters (K, C, KH, KW) */
    const char *g; int64_t gs[4];   /* output gradient (N, K, OH, OW) */
    char *o; int64_t os[4];         /* the result */
    ${CT} *ap;                      /* packed filters */
    ${CT} *part;                    /* grad weights: one K x R partial per block */
    int64_t *tapoff;                /* row rr's byte offset in the padded view */
    int64_t mpad, r, p, per;
    nbg_fails fails;
    nbg_task inner;                 /* a split run: the task, and the calling */
    const char *caller;             /* thread's time in it (dot_common.h's */
    int64_t own;                    /* back-off when workers come late) */
} nbg_conv_${S}_ctx;

/* Row rr of the window matrix: channel, and the tap's offsets (a * dh, b * dw). */
static inline void nbg_conv_${S}_tap(const nbg_conv_${S}_ctx *c, int64_t rr, int64_t *ch,
                                     int64_t *dy, int64_t *dx) {
    const int64_t taps = c->kh * c->kw, t = rr % taps;
    *ch = rr / taps;
    *dy = (t / c->kw) * c->dh;
    *dx = (t % c->kw) * c->dw;
}

/* The filter element F[k, rr] (flipped taps when c->flip). */
static inline ${CT} nbg_conv_${S}_filter(const nbg_conv_${S}_ctx *c, int64_t k, int64_t rr) {
    const int64_t taps = c->kh * c->kw, t = rr % taps;
    int64_t a = t / c->kw, b = t % c->kw;
    if (c->flip) { a = c->kh - 1 - a; b = c->kw - 1 - b; }
    return *(const ${CT} *)(c->f + k * c->fs[0] + (rr / taps) * c->fs[1] + a * c->fs[2]
                            + b * c->fs[3]);
}

/* Packs F (transposed = 0: M = K rows, reduction R) or F^T (1: M = R rows,
   reduction K) into panels NBG_DOT_KC deep of MR-row blocks, zero-padded to
   c->mpad rows: panel pc starts at ap + pc * mpad, its block ir at + ir * kc. */
static NBG_NOINLINE void nbg_conv_${S}_pack_filters(const nbg_conv_${S}_ctx *c, ${CT} *ap,
                                                   int transposed) {
    const int64_t MR = NBG_DOT_MR, M = transposed ? c->r : c->k;
    const int64_t red = transposed ? c->k : c->r;
    int64_t pc, ir, q, m;
    for (pc = 0; pc < red; pc += NBG_DOT_KC) {
        const int64_t kc = red - pc < NBG_DOT_KC ? red - pc : NBG_DOT_KC;
        for (ir = 0; ir < c->mpad; ir += MR) {
            ${CT} *dst = ap + pc * c->mpad + ir * kc;
            for (q = 0; q < kc; q++)
                for (m = 0; m < MR; m++)
                    dst[q * MR + m] = ir + m >= M ? 0 : transposed
                        ? nbg_conv_${S}_filter(c, pc + q, ir + m)
                        : nbg_conv_${S}_filter(c, ir + m, pc + q);
        }
    }
}

/* Images [n0, n0 + cnt) of the input in padded coordinates (row y of the
   image is row y + ph): the input itself without padding, else a zeroed copy
   in buf (cnt * C * (H + 2 ph) * (W + 2 pw) elements). */
typedef struct { const char *b; int64_t s[4]; } nbg_conv_${S}_view;
/* The byte strides of the padded view (its rows' offsets are the same for every image). */
static void nbg_conv_${S}_view_strides(const nbg_conv_${S}_ctx *c, int64_t *s) {
    const int64_t hp = c->h + 2 * c->ph, wp = c->w + 2 * c->pw, it = sizeof(${CT});
    if (c->ph == 0 && c->pw == 0) { memcpy(s, c->xs, 4 * sizeof(int64_t)); return; }
    s[3] = it; s[2] = wp * it; s[1] = hp * wp * it; s[0] = c->c * hp * wp * it;
}
/* c->tapoff[rr]: the offset of window row rr (channel, tap) in the view. */
static NBG_NOINLINE int nbg_conv_${S}_taps(nbg_conv_${S}_ctx *c) {
    int64_t s[4], rr, ch, dy, dx;
    c->tapoff = (int64_t *)malloc((c->r + 1) * sizeof(int64_t));
    if (!c->tapoff) return -1;
    nbg_conv_${S}_view_strides(c, s);
    for (rr = 0; rr < c->r; rr++) {
        nbg_conv_${S}_tap(c, rr, &ch, &dy, &dx);
        c->tapoff[rr] = ch * s[1] + dy * s[2] + dx * s[3];
    }
    return 0;
}
static NBG_NOINLINE void nbg_conv_${S}_view_of(const nbg_conv_${S}_ctx *c, int64_t n0,
                                              int64_t cnt, ${CT} *buf,
                                              nbg_conv_${S}_view *v) {
    const int64_t hp = c->h + 2 * c->ph, wp = c->w + 2 * c->pw, it = sizeof(${CT});
    int64_t n, ch, y, x;
    nbg_conv_${S}_view_strides(c, v->s);
    if (c->ph == 0 && c->pw == 0) {
        v->b = c->x + n0 * c->xs[0];
        return;
    }
    memset(buf, 0, cnt * c->c * hp * wp * it);
    for (n = 0; n < cnt; n++)
        for (ch = 0; ch < c->c; ch++)
            for (y = 0; y < c->h; y++) {
                const char *src = c->x + (n0 + n) * c->xs[0] + ch * c->xs[1] + y * c->xs[2];
                ${CT} *dst = buf + ((n * c->c + ch) * hp + y + c->ph) * wp + c->pw;
                for (x = 0; x < c->w; x++) dst[x] = *(const ${CT} *)(src + x * c->xs[3]);
            }
    v->b = (const char *)buf;
}

/* The runs of columns [jr, jr + cols) of the window matrix that share an
   output row i: run u starts at column q0[u] (from jr), is len[u] long and
   begins at output (i[u], jst[u]).  Returns the number of runs. */
static int64_t nbg_conv_${S}_runs(const nbg_conv_${S}_ctx *c, int64_t jr, int64_t cols,
                                  int64_t *q0, int64_t *len, int64_t *i, int64_t *jst) {
    int64_t q = 0, u = 0;
    while (q < cols) {
        const int64_t p = jr + q, j = p % c->ow, n = c->ow - j < cols - q ? c->ow - j : cols - q;
        q0[u] = q; len[u] = n; i[u] = p / c->ow; jst[u] = j;
        q += n;
        u++;
    }
    return u;
}

/* Forward: images [b, e). */
static void nbg_conv_${S}_fwd_task(void *vc, int64_t b, int64_t e) {
    nbg_conv_${S}_ctx *c = (nbg_conv_${S}_ctx *)vc;
    const int64_t NR = NBG_${S}_NR, MR = NBG_DOT_MR;
    const int64_t padded = c->ph || c->pw ? c->c * (c->h + 2 * c->ph) * (c->w + 2 * c->pw) : 0;
    ${CT} t[NBG_DOT_MR * NBG_${S}_NR];
    int64_t off[NBG_${S}_NR], q0[NBG_${S}_NR], len[NBG_${S}_NR], ri[NBG_${S}_NR];
    int64_t rj[NBG_${S}_NR], roff[NBG_${S}_NR], pc, jr, ir, r, q, u, nr;
    ${CT} *bp = (${CT} *)malloc((NBG_DOT_KC * NR + padded) * sizeof(${CT}));
    nbg_conv_${S}_view v;
    if (!bp) { nbg_fail_once(&c->fails, NBG_MEMORY_ERROR, "conv2d: out of memory"); return; }
    for (; b < e; b++) {
        char *on = c->o + b * c->os[0];
        nbg_conv_${S}_view_of(c, b, 1, bp + NBG_DOT_KC * NR, &v);
        for (jr = 0; jr < c->p; jr += NR) {
            const int64_t cols = c->p - jr < NR ? c->p - jr : NR;
            const int unit = c->sw == 1 && v.s[3] == (int64_t)sizeof(${CT});
            for (q = 0; q < cols; q++)
                off[q] = ((jr + q) / c->ow) * c->os[2] + ((jr + q) % c->ow) * c->os[3];
            nr = nbg_conv_${S}_runs(c, jr, cols, q0, len, ri, rj);
            for (u = 0; u < nr; u++) roff[u] = ri[u] * c->sh * v.s[2] + rj[u] * c->sw * v.s[3];
            for (pc = 0; pc < c->r; pc += NBG_DOT_KC) {
                const int64_t kc = c->r - pc < NBG_DOT_KC ? c->r - pc : NBG_DOT_KC;
                for (r = 0; r < kc; r++) {
                    ${CT} *restrict d = bp + r * NR;
                    const char *base = v.b + c->tapoff[pc + r];
                    for (u = 0; u < nr; u++) {
                        const char *src = base + roff[u];
                        ${CT} *restrict dd = d + q0[u];
                        if (unit)
                            for (q = 0; q < len[u]; q++) dd[q] = ((const ${CT} *)src)[q];
                        else
                            for (q = 0; q < len[u]; q++)
                                dd[q] = *(const ${CT} *)(src + q * c->sw * v.s[3]);
                    }
                    for (q = cols; q < NR; q++) d[q] = 0;
                }
                for (ir = 0; ir < c->k; ir += MR) {
                    const int64_t rows = c->k - ir < MR ? c->k - ir : MR;
                    nbg_${S}_micro(kc, c->ap + pc * c->mpad + ir * kc, bp, t);
                    for (r = 0; r < rows; r++) {
                        char *orow = on + (ir + r) * c->os[1];
                        const ${CT} *trow = t + r * NR;
                        if (pc == 0)
                            for (q = 0; q < cols; q++) *(${CT} *)(orow + off[q]) = trow[q];
                        else
                            for (q = 0; q < cols; q++) *(${CT} *)(orow + off[q]) += trow[q];
                    }
                }
            }
            if (c->r == 0)
                for (r = 0; r < c->k; r++)
                    for (q = 0; q < cols; q++) *(${CT} *)(on + r * c->os[1] + off[q]) = 0;
        }
    }
    free(bp);
}

/* Input gradient: images [b, e).  Blocks of JB columns of F^T . g[n] are
   computed into db (R x JB), then added into a padded image (tap by tap,
   channel after channel: consecutive runs touch different rows), whose
   interior is the result. */
#define NBG_CONV_${S}_JB (4 * NBG_${S}_NR)
static void nbg_conv_${S}_gx_task(void *vc, int64_t b, int64_t e) {
    nbg_conv_${S}_ctx *c = (nbg_conv_${S}_ctx *)vc;
    const int64_t NR = NBG_${S}_NR, MR = NBG_DOT_MR, JB = NBG_CONV_${S}_JB;
    const int64_t hp = c->h + 2 * c->ph, wp = c->w + 2 * c->pw, taps = c->kh * c->kw;
    ${CT} t[NBG_DOT_MR * NBG_${S}_NR];
    int64_t q0[NBG_CONV_${S}_JB], len[NBG_CONV_${S}_JB], ri[NBG_CONV_${S}_JB];
    int64_t rj[NBG_CONV_${S}_JB], goff[NBG_${S}_NR], pc, jr, jst, ir, r, q, u, nr, tap, ch;
    ${CT} *bp = (${CT} *)malloc((NBG_DOT_KC * NR + c->r * JB + c->c * hp * wp)
                                 * sizeof(${CT}));
    ${CT} *db = bp + NBG_DOT_KC * NR, *gp = db + c->r * JB;
    if (!bp) { nbg_fail_once(&c->fails, NBG_MEMORY_ERROR, "conv2d: out of memory"); return; }
    for (; b < e; b++) {
        const char *gn = c->g + b * c->gs[0];
        char *on = c->o + b * c->os[0];
        memset(gp, 0, c->c * hp * wp * sizeof(${CT}));
        for (jst = 0; jst < c->p; jst += JB) {
            const int64_t jb = c->p - jst < JB ? c->p - jst : JB;
            for (jr = jst; jr < jst + jb; jr += NR) {
                const int64_t cols = jst + jb - jr < NR ? jst + jb - jr : NR;
                for (q = 0; q < cols; q++)
                    goff[q] = ((jr + q) / c->ow) * c->gs[2] + ((jr + q) % c->ow) * c->gs[3];
                for (pc = 0; pc < c->k; pc += NBG_DOT_KC) {
                    const int64_t kc = c->k - pc < NBG_DOT_KC ? c->k - pc : NBG_DOT_KC;
                    for (r = 0; r < kc; r++) {
                        const char *grow = gn + (pc + r) * c->gs[1];
                        ${CT} *d = bp + r * NR;
                        for (q = 0; q < cols; q++) d[q] = *(const ${CT} *)(grow + goff[q]);
                        for (; q < NR; q++) d[q] = 0;
                    }
                    for (ir = 0; ir < c->r; ir += MR) {
                        const int64_t rows = c->r - ir < MR ? c->r - ir : MR;
                        nbg_${S}_micro(kc, c->ap + pc * c->mpad + ir * kc, bp, t);
                        for (r = 0; r < rows; r++) {  /* whole tiles: rows are JB long */
                            const int64_t VL = NBG_${S}_VL;
                            ${CT} *drow = db + (ir + r) * JB + (jr - jst);
                            const ${CT} *trow = t + r * NR;
                            if (pc == 0) {
                                nbg_${S}_st(drow, nbg_${S}_ld(trow));
                                nbg_${S}_st(drow + VL, nbg_${S}_ld(trow + VL));
                            } else {
                                nbg_${S}_st(drow, nbg_${S}_ld(drow) + nbg_${S}_ld(trow));
                                nbg_${S}_st(drow + VL, nbg_${S}_ld(drow + VL)
                                            + nbg_${S}_ld(trow + VL));
                            }
                        }
                    }
                }
            }
            if (c->k == 0) memset(db, 0, c->r * JB * sizeof(${CT}));
            nr = nbg_conv_${S}_runs(c, jst, jb, q0, len, ri, rj);
            for (tap = 0; tap < taps; tap++) {
                const int64_t dy = (tap / c->kw) * c->dh, dx = (tap % c->kw) * c->dw;
                for (ch = 0; ch < c->c; ch++) {
                    const ${CT} *src = db + (ch * taps + tap) * JB;
                    ${CT} *plane = gp + ch * hp * wp + dy * wp + dx;
                    for (u = 0; u < nr; u++) {
                        ${CT} *restrict dst = plane + ri[u] * c->sh * wp + rj[u] * c->sw;
                        const ${CT} *restrict s = src + q0[u];
                        if (c->sw == 1)
                            for (q = 0; q < len[u]; q++) dst[q] += s[q];
                        else
                            for (q = 0; q < len[u]; q++) dst[q * c->sw] += s[q];
                    }
                }
            }
        }
        for (ch = 0; ch < c->c; ch++)
            for (r = 0; r < c->h; r++) {
                const ${CT} *src = gp + (ch * hp + r + c->ph) * wp + c->pw;
                char *dst = on + ch * c->os[1] + r * c->os[2];
                for (q = 0; q < c->w; q++) *(${CT} *)(dst + q * c->os[3]) = src[q];
            }
    }
    free(bp);
}

/* Filter gradient: blocks [b, e) of c->per images, each into its K x R partial. */
static void nbg_conv_${S}_gw_task(void *vc, int64_t b, int64_t e) {
    nbg_conv_${S}_ctx *c = (nbg_conv_${S}_ctx *)vc;
    const int64_t NR = NBG_${S}_NR, MR = NBG_DOT_MR, KC = NBG_DOT_KC;
    const int64_t padded = c->ph || c->pw
        ? c->per * c->c * (c->h + 2 * c->ph) * (c->w + 2 * c->pw) : 0;
    ${CT} t[NBG_DOT_MR * NBG_${S}_NR];
    int64_t pc, jr, ir, r, q, m;
    int64_t *ro = (int64_t *)malloc(2 * KC * sizeof(int64_t));
    ${CT} *ap = (${CT} *)malloc((c->mpad * KC + KC * NR + padded) * sizeof(${CT}));
    ${CT} *bp = ap + c->mpad * KC;
    nbg_conv_${S}_view v;
    if (!ro || !ap) {
        free(ro); free(ap);
        nbg_fail_once(&c->fails, NBG_MEMORY_ERROR, "conv2d: out of memory");
        return;
    }
    for (; b < e; b++) {
        const int64_t n0 = b * c->per, n1 = n0 + c->per < c->n ? n0 + c->per : c->n;
        const int64_t red = (n1 - n0) * c->p;
        ${CT} *part = c->part + b * c->k * c->r;
        nbg_conv_${S}_view_of(c, n0, n1 - n0, bp + KC * NR, &v);
        for (m = 0; m < c->k * c->r; m++) part[m] = 0;
        for (pc = 0; pc < red; pc += KC) {
            const int64_t kc = red - pc < KC ? red - pc : KC;
            int64_t *gro = ro, *xro = ro + KC;
            for (r = 0; r < kc; r++) {
                const int64_t n = (pc + r) / c->p, p = (pc + r) % c->p;
                const int64_t oi = p / c->ow, oj = p % c->ow;
                gro[r] = (n0 + n) * c->gs[0] + oi * c->gs[2] + oj * c->gs[3];
                xro[r] = n * v.s[0] + oi * c->sh * v.s[2] + oj * c->sw * v.s[3];
            }
            for (ir = 0; ir < c->mpad; ir += MR) {
                ${CT} *dst = ap + ir * kc;
                for (r = 0; r < kc; r++)
                    for (m = 0; m < MR; m++)
                        dst[r * MR + m] = ir + m < c->k
                            ? *(const ${CT} *)(c->g + gro[r] + (ir + m) * c->gs[1]) : 0;
            }
            for (jr = 0; jr < c->r; jr += NR) {
                const int64_t cols = c->r - jr < NR ? c->r - jr : NR;
                const int64_t *coff = c->tapoff + jr;
                for (r = 0; r < kc; r++) {
                    ${CT} *d = bp + r * NR;
                    const char *xr = v.b + xro[r];
                    for (q = 0; q < cols; q++) d[q] = *(const ${CT} *)(xr + coff[q]);
                    for (; q < NR; q++) d[q] = 0;
                }
                for (ir = 0; ir < c->k; ir += MR) {
                    const int64_t rows = c->k - ir < MR ? c->k - ir : MR;
                    nbg_${S}_micro(kc, ap + ir * kc, bp, t);
                    for (r = 0; r < rows; r++) {
                        ${CT} *prow = part + (ir + r) * c->r + jr;
                        for (q = 0; q < cols; q++) prow[q] += t[r * NR + q];
                    }
                }
            }
        }
    }
    free(ro);
    free(ap);
}

/* The sizes shared by the three kernels; a message naming the operand and 0
   on success.  g (may be NULL) must have the output's shape. */
static NBG_NOINLINE int nbg_conv_${S}_setup(nbg_conv_${S}_ctx *c, const int64_t *xd,
                                           const int64_t *fd, const int64_t *gd,
                                           const char *what, char *err) {
    char b1[200], b2[200];
    const int64_t spanh = (fd[2] - 1) * c->dh + 1, spanw = (fd[3] - 1) * c->dw + 1;
    c->n = xd[0]; c->c = xd[1]; c->h = xd[2]; c->w = xd[3];
    c->k = fd[0]; c->kh = fd[2]; c->kw = fd[3];
    if (xd[1] != fd[1]) {
        nbg_errorf(err, "%s: the input has %lld channels, the filters expect %lld (input "
                   "shape %s, filters shape %s)", what, (long long)xd[1], (long long)fd[1],
                   nbg_shape_text(b1, 200, 4, xd), nbg_shape_text(b2, 200, 4, fd));
        return NBG_VALUE_ERROR;
    }
    if (c->h + 2 * c->ph < spanh || c->w + 2 * c->pw < spanw) {
        nbg_errorf(err, "%s: the (padded) image (%lld, %lld) is smaller than the (dilated) "
                   "filter (%lld, %lld)", what, (long long)(c->h + 2 * c->ph),
                   (long long)(c->w + 2 * c->pw), (long long)spanh, (long long)spanw);
        return NBG_VALUE_ERROR;
    }
    c->oh = (c->h + 2 * c->ph - spanh) / c->sh + 1;
    c->ow = (c->w + 2 * c->pw - spanw) / c->sw + 1;
    c->r = c->c * c->kh * c->kw;
    c->p = c->oh * c->ow;
    if (gd && (gd[0] != c->n || gd[1] != c->k || gd[2] != c->oh || gd[3] != c->ow)) {
        const int64_t want[4] = {c->n, c->k, c->oh, c->ow};
        nbg_errorf(err, "%s: argument gradient has shape %s, the convolution's output has "
                   "shape %s", what, nbg_shape_text(b1, 200, 4, gd),
                   nbg_shape_text(b2, 200, 4, want));
        return NBG_VALUE_ERROR;
    }
    c->fails.failed = 0;
    c->fails.status = 0;
    c->fails.err = err;
    c->ap = NULL;
    c->part = NULL;
    c->tapoff = NULL;
    return 0;
}

static NBG_NOINLINE int nbg_conv_${S}_check_out(const int64_t *od, const int64_t *want,
                                               const char *what, char *err) {
    char b1[200], b2[200];
    if (od[0] == want[0] && od[1] == want[1] && od[2] == want[2] && od[3] == want[3])
        return 0;
    nbg_errorf(err, "%s: the output has shape %s, expected %s", what,
               nbg_shape_text(b1, 200, 4, od), nbg_shape_text(b2, 200, 4, want));
    return NBG_VALUE_ERROR;
}

/* The task, timing the calling thread's share. */
static void nbg_conv_${S}_timed(void *vc, int64_t b, int64_t e) {
    nbg_conv_${S}_ctx *c = (nbg_conv_${S}_ctx *)vc;
    const int64_t t0 = nbg_dot_now();
    c->inner(vc, b, e);
    if (&nbg_dot_me == c->caller) c->own += nbg_dot_now() - t0;
}

/* Runs task over [0, n) (split across the pool from `work` multiply-adds).
   As the matrix product does, a split whose caller waited for a late worker
   longer than its own share (a loaded machine) makes the next ones serial. */
static NBG_NOINLINE int nbg_conv_${S}_run(nbg_conv_${S}_ctx *c, nbg_task task, int64_t n,
                                         int64_t work) {
    if (n > 1 && nbg_worth_splitting(work, NBG_CONV_MINWORK) && !nbg_dot_backing_off()) {
        const int64_t t0 = nbg_dot_now();
        c->inner = task;
        c->caller = &nbg_dot_me;
        c->own = 0;
        nbg_rt->parallel_for(nbg_conv_${S}_timed, c, n, 1);
        nbg_dot_judge(nbg_dot_now() - t0, c->own);
    } else if (n > 0) {
        task(c, 0, n);
    }
    return c->fails.failed ? c->fails.status : 0;
}

/* The three kernels: x, f, g, o with their dims and byte strides. */
static NBG_NOINLINE int nbg_conv_${S}_forward(nbg_conv_${S}_ctx *c, const int64_t *xd,
                                             const int64_t *fd, const int64_t *od,
                                             const char *what, char *err) {
    int64_t want[4];
    int status = nbg_conv_${S}_setup(c, xd, fd, NULL, what, err);
    if (status) return status;
    want[0] = c->n; want[1] = c->k; want[2] = c->oh; want[3] = c->ow;
    if ((status = nbg_conv_${S}_check_out(od, want, what, err))) return status;
    if (c->n == 0 || c->k == 0 || c->p == 0) return 0;
    c->mpad = (c->k + NBG_DOT_MR - 1) / NBG_DOT_MR * NBG_DOT_MR;
    c->ap = (${CT} *)malloc((c->mpad * c->r + 1) * sizeof(${CT}));
    if (!c->ap) { nbg_errorf(err, "%s: out of memory", what); return NBG_MEMORY_ERROR; }
    if (nbg_conv_${S}_taps(c)) {
        free(c->ap);
        nbg_errorf(err, "%s: out of memory", what);
        return NBG_MEMORY_ERROR;
    }
    nbg_conv_${S}_pack_filters(c, c->ap, 0);
    status = nbg_conv_${S}_run(c, nbg_conv_${S}_fwd_task, c->n, c->n * c->k * c->r * c->p);
    free(c->ap);
    free(c->tapoff);
    return status;
}

static NBG_NOINLINE int nbg_conv_${S}_grad_inputs(nbg_conv_${S}_ctx *c, const int64_t *xd,
                                                 const int64_t *fd, const int64_t *gd,
                                                 const int64_t *od, const char *what,
                                                 char *err) {
    int status = nbg_conv_${S}_setup(c, xd, fd, gd, what, err);
    if (status) return status;
    if ((status = nbg_conv_${S}_check_out(od, xd, what, err))) return status;
    if (c->n == 0 || c->c == 0 || c->h == 0 || c->w == 0) return 0;
    c->mpad = (c->r + NBG_DOT_MR - 1) / NBG_DOT_MR * NBG_DOT_MR;
    c->ap = (${CT} *)malloc((c->mpad * c->k + 1) * sizeof(${CT}));
    if (!c->ap) { nbg_errorf(err, "%s: out of memory", what); return NBG_MEMORY_ERROR; }
    nbg_conv_${S}_pack_filters(c, c->ap, 1);
    status = nbg_conv_${S}_run(c, nbg_conv_${S}_gx_task, c->n, c->n * c->k * c->r * c->p);
    free(c->ap);
    return status;
}

static NBG_NOINLINE int nbg_conv_${S}_grad_weights(nbg_conv_${S}_ctx *c, const int64_t *xd,
                                                  const int64_t *fd, const int64_t *gd,
                                                  const int64_t *od, const char *what,
                                                  char *err) {
    int64_t nblk, bl, k, rr, ch, a, b, work;
    int status = nbg_conv_${S}_setup(c, xd, fd, gd, what, err);
    if (status) return status;
    if ((status = nbg_conv_${S}_check_out(od, fd, what, err))) return status;
    if (c->k == 0 || c->r == 0) return 0;
    work = c->n * c->k * c->r * c->p;
    /* Fixed blocks of images (sizes only), at most NBG_CONV_GW_BLOCKS, fewer
       when their partial sums would pass NBG_CONV_GW_PARTIALS elements. */
    nblk = work >= NBG_CONV_MINWORK ? NBG_CONV_GW_BLOCKS : 1;
    while (nblk > 1 && nblk * c->k * c->r > NBG_CONV_GW_PARTIALS) nblk /= 2;
    if (nblk > c->n) nblk = c->n;
    if (nblk < 1) nblk = 1;
    c->per = (c->n + nblk - 1) / nblk;
    nblk = c->n ? (c->n + c->per - 1) / c->per : 1;
    c->mpad = (c->k + NBG_DOT_MR - 1) / NBG_DOT_MR * NBG_DOT_MR;
    c->part = (${CT} *)malloc(nblk * c->k * c->r * sizeof(${CT}));
    if (!c->part || nbg_conv_${S}_taps(c)) {
        free(c->part);
        nbg_errorf(err, "%s: out of memory", what);
        return NBG_MEMORY_ERROR;
    }
    if (c->n == 0 || c->p == 0) {
        for (rr = 0; rr < c->k * c->r; rr++) c->part[rr] = 0;
        nblk = 1;
    } else if ((status = nbg_conv_${S}_run(c, nbg_conv_${S}_gw_task, nblk, work))) {
        free(c->part);
        free(c->tapoff);
        return status;
    }
    free(c->tapoff);
    for (bl = 1; bl < nblk; bl++) {
        const ${CT} *src = c->part + bl * c->k * c->r;
        for (rr = 0; rr < c->k * c->r; rr++) c->part[rr] += src[rr];
    }
    for (k = 0; k < c->k; k++)
        for (rr = 0; rr < c->r; rr++) {
            const int64_t taps = c->kh * c->kw, t = rr % taps;
            ch = rr / taps; a = t / c->kw; b = t % c->kw;
            if (c->flip) { a = c->kh - 1 - a; b = c->kw - 1 - b; }
            *(${CT} *)(c->o + k * c->os[0] + ch * c->os[1] + a * c->os[2] + b * c->os[3]) =
                c->part[k * c->r + rr];
        }
    free(c->part);
    return 0;
}
#endif
