/* The helpers nbgraph's kernels call: messages, shape checks and the general
   iterator.  Compiled once into the runtime library (csrc/runtime.c), which
   hands them to every module in its table; a module built without the
   runtime (it could not be built) compiles them itself.  Comes after
   csrc/common.h.  Plain C, no placeholders. */
#include <stdarg.h>
#ifndef NBG_HAVE_STDIO  /* (the runtime library declares what it uses) */
#include <stdio.h>
#endif
#ifndef NBG_HELPER
#define NBG_HELPER static
#endif
#ifndef NBG_HOT_HELPER  /* (the runtime library, built at -Og, optimises the per-call check) */
#define NBG_HOT_HELPER
#endif
#ifndef NBG_HELPERS_PARALLEL  /* a standalone module: no pool, serial */
#define NBG_HELPERS_PARALLEL(fn, ctx, n, grain, min_n) (fn)((ctx), 0, (n))
#endif
NBG_HELPER void nbg_fail_once(nbg_fails *f, int status, const char *msg);
NBG_HELPER void nbg_errorf(char *err, const char *fmt, ...);
NBG_HELPER void nbg_set_error(char *err, const char *msg);
NBG_HELPER const char *nbg_shape_text(char *buf, size_t size, int nd, const int64_t *dims);
NBG_HELPER int nbg_iter_init(nbg_iter *it, int nd, int nops, const int64_t *shape,
                             const int64_t *const *dims, const int64_t *const *strides,
                             const int64_t *items, void *const *bases, int sort, char *err);
NBG_HELPER int nbg_iter_step(const nbg_iter *it, int64_t *idx, char **ptr);
NBG_HELPER void nbg_iter_seek(const nbg_iter *it, int64_t row, int64_t *idx, char **ptr);
NBG_HELPER void nbg_iter_sub(const nbg_iter *src, nbg_iter *dst, int d, int64_t lo, int64_t hi);
NBG_HELPER int nbg_check_broadcast(int nd, const int64_t *shape, int n, const int64_t *const *dims,
                                   char *err, const char *what);
NBG_HELPER int nbg_broadcast_shape(int nd, int n, const int64_t *const *dims, int64_t *shape,
                                   char *err, const char *what);
NBG_HELPER int nbg_all_contiguous(int nd, const int64_t *shape, int n, const int64_t *const *dims,
                                  const int64_t *const *strides, const int64_t *items);
NBG_HELPER int nbg_check_ones(int nd, int n, const int64_t *const *dims, char *err,
                              const char *what);
NBG_HELPER int nbg_run_loop(const nbg_loop *loop, void *user, void *const *ptrs,
                            const int64_t *dims, char *err);
NBG_HELPER int nbg_reduce(const nbg_reduce_spec *s, nbg_iter *it, int64_t total, char *err);
NBG_HELPER NBG_NOINLINE void nbg_fail_once(nbg_fails *f, int status, const char *msg) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&f->failed, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        f->status = status;
        snprintf(f->err, NBG_ERRLEN, "%s", msg[0] ? msg : "the C code failed");
    }
}
/* Store a message (printf-style) for the Python side. */
NBG_HELPER NBG_NOINLINE void nbg_errorf(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, NBG_ERRLEN, fmt, ap);
    va_end(ap);
}
NBG_HELPER NBG_NOINLINE void nbg_set_error(char *err, const char *msg) { nbg_errorf(err, "%s", msg); }
/* "(3, 4)" into buf. */
NBG_HELPER NBG_NOINLINE const char *nbg_shape_text(char *buf, size_t size, int nd, const int64_t *dims) {
    size_t used = 0;
    int d;
    used += snprintf(buf + used, size - used, "(");
    for (d = 0; d < nd && used < size; d++)
        used += snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)dims[d]);
    if (used < size) snprintf(buf + used, size - used, nd == 1 ? ",)" : ")");
    return buf;
}
/* Each operand's dims must equal shape's or be 1 (NumPy broadcasting). */
NBG_HELPER NBG_NOINLINE int nbg_check_broadcast(int nd, const int64_t *shape, int n, const int64_t *const *dims,
                               char *err, const char *what) {
    int k, d;
    char b1[200], b2[200];
    for (k = 0; k < n; k++)
        for (d = 0; d < nd; d++)
            if (dims[k][d] != shape[d] && dims[k][d] != 1) {
                nbg_errorf(err, "%s: operands could not be broadcast together: shape %s does "
                           "not fit the result shape %s", what,
                           nbg_shape_text(b1, 200, nd, dims[k]), nbg_shape_text(b2, 200, nd, shape));
                return -1;
            }
    return 0;
}
/* The broadcast shape of n operands; -1 (with a message) when they clash. */
NBG_HELPER NBG_NOINLINE int nbg_broadcast_shape(int nd, int n, const int64_t *const *dims, int64_t *shape,
                               char *err, const char *what) {
    int k, d;
    for (d = 0; d < nd; d++) {
        shape[d] = 1;
        for (k = 0; k < n; k++) {
            if (dims[k][d] == 1) continue;
            if (shape[d] != 1 && shape[d] != dims[k][d]) {
                nbg_errorf(err, "%s: operands could not be broadcast together (dimension %d: "
                           "%lld and %lld)", what, d, (long long)shape[d], (long long)dims[k][d]);
                return -1;
            }
            shape[d] = dims[k][d];
        }
    }
    return 0;
}
/* Every operand has dims equal to shape and is C-contiguous. */
NBG_HELPER NBG_NOINLINE NBG_HOT_HELPER int nbg_all_contiguous(int nd, const int64_t *shape, int n, const int64_t *const *dims,
                              const int64_t *const *strides, const int64_t *items) {
    int k;
    for (k = 0; k < n; k++)
        if (!nbg_same_dims(nd, dims[k], shape) || !nbg_contiguous(nd, dims[k], strides[k], items[k]))
            return 0;
    return 1;
}
/* Operands statically of size 1 must have all dims 1 at run time. */
NBG_HELPER NBG_NOINLINE int nbg_check_ones(int nd, int n, const int64_t *const *dims, char *err, const char *what) {
    int k, d;
    char b1[200];
    for (k = 0; k < n; k++)
        for (d = 0; d < nd; d++)
            if (dims[k][d] != 1) {
                nbg_errorf(err, "%s: an operand of static size 1 has shape %s", what,
                           nbg_shape_text(b1, 200, nd, dims[k]));
                return -1;
            }
    return 0;
}

/* ---- the general iterator and the rows driver ---- */
NBG_HELPER NBG_NOINLINE int nbg_iter_init(nbg_iter *it, int nd, int nops, const int64_t *shape,
                         const int64_t *const *dims, const int64_t *const *strides,
                         const int64_t *items, void *const *bases, int sort, char *err) {
    int d, k, out;
    if (nops > NBG_MAXOPS || nd > NBG_MAXDIMS) {
        nbg_errorf(err, "too many operands or dimensions for the C iterator");
        return -1;
    }
    it->nops = nops;
    for (d = 0; d < nd; d++) {
        it->shape[d] = shape[d];
        for (k = 0; k < nops; k++)
            it->st[k][d] = (dims[k][d] == 1 && shape[d] != 1) ? 0 : strides[k][d];
    }
    if (sort) {
        int a, b;
        for (a = 1; a < nd; a++) {
            for (b = a; b > 0; b--) {
                int64_t sa = it->st[0][b - 1], sb = it->st[0][b], t;
                if (sa < 0) sa = -sa;
                if (sb < 0) sb = -sb;
                if (sb <= sa) break;
                t = it->shape[b]; it->shape[b] = it->shape[b - 1]; it->shape[b - 1] = t;
                for (k = 0; k < nops; k++) {
                    t = it->st[k][b]; it->st[k][b] = it->st[k][b - 1]; it->st[k][b - 1] = t;
                }
            }
        }
    }
    out = 0;
    for (d = 0; d < nd; d++) {
        if (it->shape[d] == 1) continue;
        it->shape[out] = it->shape[d];
        for (k = 0; k < nops; k++) it->st[k][out] = it->st[k][d];
        out++;
    }
    if (out == 0) {
        it->shape[0] = 1;
        for (k = 0; k < nops; k++) it->st[k][0] = 0;
        out = 1;
    }
    nd = out;
    out = 0;
    for (d = 1; d < nd; d++) {
        int merge = 1;
        for (k = 0; k < nops; k++)
            if (it->st[k][out] != it->st[k][d] * it->shape[d]) { merge = 0; break; }
        if (merge) {
            it->shape[out] *= it->shape[d];
            for (k = 0; k < nops; k++) it->st[k][out] = it->st[k][d];
        } else {
            out++;
            it->shape[out] = it->shape[d];
            for (k = 0; k < nops; k++) it->st[k][out] = it->st[k][d];
        }
    }
    it->nd = out + 1;
    it->n = it->shape[it->nd - 1];
    for (k = 0; k < nops; k++) {
        int64_t s = it->st[k][it->nd - 1];
        if (s % items[k]) {
            nbg_errorf(err, "an operand has strides that are not a multiple of its item size");
            return -1;
        }
        it->inner[k] = s / items[k];
        it->ptr[k] = it->base[k] = (char *)bases[k];
    }
    for (d = 0; d < it->nd; d++) it->idx[d] = 0;
    return 0;
}
NBG_HELPER NBG_NOINLINE int nbg_iter_step(const nbg_iter *it, int64_t *idx, char **ptr) {
    int d, k;
    for (d = it->nd - 2; d >= 0; d--) {
        for (k = 0; k < it->nops; k++) ptr[k] += it->st[k][d];
        if (++idx[d] < it->shape[d]) return 1;
        for (k = 0; k < it->nops; k++) ptr[k] -= it->st[k][d] * it->shape[d];
        idx[d] = 0;
    }
    return 0;
}
/* Position idx/ptr at the start of row `row`. */
NBG_HELPER NBG_NOINLINE void nbg_iter_seek(const nbg_iter *it, int64_t row, int64_t *idx, char **ptr) {
    int d, k;
    for (k = 0; k < it->nops; k++) ptr[k] = it->base[k];
    for (d = it->nd - 2; d >= 0; d--) {
        int64_t i = row % it->shape[d];
        row /= it->shape[d];
        idx[d] = i;
        for (k = 0; k < it->nops; k++) ptr[k] += i * it->st[k][d];
    }
}
/* dst = src restricted to [lo, hi) along dimension d, at its start. */
NBG_HELPER NBG_NOINLINE void nbg_iter_sub(const nbg_iter *src, nbg_iter *dst, int d, int64_t lo,
                                      int64_t hi) {
    int e, k;
    dst->nd = src->nd;
    dst->nops = src->nops;
    for (e = 0; e < src->nd; e++) {
        dst->shape[e] = src->shape[e];
        dst->idx[e] = 0;
    }
    dst->shape[d] = hi - lo;
    dst->n = dst->shape[dst->nd - 1];
    for (k = 0; k < src->nops; k++) {
        for (e = 0; e < src->nd; e++) dst->st[k][e] = src->st[k][e];
        dst->inner[k] = src->inner[k];
        dst->base[k] = dst->ptr[k] = src->base[k] + lo * src->st[k][d];
    }
}

/* The driver of an elementwise loop (nbgraph.tensor.c_code.parallel).  The
   kernel describes its loop (nbg_loop, csrc/common.h): its operands (array
   inputs, then outputs, then inputs read once: each one's slot in the
   kernel's pointers, where its dims and byte strides start in the kernel's
   dims (nd of each for arrays; ndim, any, for inputs read once), its item
   size, and for an input read once its place in the kernel's context), and
   its two functions over one row:
       unit(user, ptrs, len, err)             every operand of unit stride
       strided(user, ptrs, strides, len, err) any strides (in items)
   nbg_run_loop checks the operands' shapes (NumPy broadcasting), copies the
   inputs read once into the context, then runs the rows: as one flat row
   when all operands are C-contiguous with the output's shape, else as the
   rows of the general iterator; the range [0, n) is split across the thread
   pool by NBG_HELPERS_PARALLEL when worth it.  A short row broadcast over
   contiguous rows (a (600, 10) + (10,) bias add) is a third case: the row is
   copied several times end to end (NBG_REP_BYTES in all), so that every
   operand is walked as one flat run of many rows per row call (the same
   elements with the same code, far fewer calls).  A big contiguous output
   (stream_item != 0 and at least NBG_STREAM_MIN bytes) is written tile by
   tile with non-temporal stores (nbg_streamed_row).  Returns 0, or the status
   of the first failing row (its message in err), or NBG_TYPE_ERROR (bad
   strides), or NBG_VALUE_ERROR (shapes). */
/* Non-temporal stores: a big output is written tile by tile around the caches,
   which saves reading its cache lines first (GCC's builtins behind
   _mm_stream_si128 / _mm_sfence, without the header). */
#define NBG_TILE_BYTES 256
#if defined(__x86_64__) && defined(__SSE2__)
#define NBG_STREAM_OK 1
typedef long long nbg_v2di __attribute__((vector_size(16), __may_alias__));
NBG_INLINE void nbg_stream(void *dst, const void *src, int64_t bytes) {
    int64_t j;
    for (j = 0; j < bytes; j += 16)
        __builtin_ia32_movntdq((nbg_v2di *)((char *)dst + j),
                               *(const nbg_v2di *)((const char *)src + j));
}
#define NBG_SFENCE() __builtin_ia32_sfence()
#else
#define NBG_STREAM_OK 0
NBG_INLINE void nbg_stream(void *dst, const void *src, int64_t bytes) {
    __builtin_memcpy(dst, src, (size_t)bytes);
}
#define NBG_SFENCE() ((void)0)
#endif
/* Bytes of the repeated copies of broadcast rows (on the calling thread's stack). */
#define NBG_REP_BYTES 16384
/* At most this many broadcast operands get repeated copies. */
#define NBG_REP_OPS 4
/* The copies' setup runs once per loop: compiled without optimisation (it
   costs the runtime's build ~30M fewer compiler instructions, its calls
   nothing measurable). */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_REP_SETUP __attribute__((optimize("O0")))
#else
#define NBG_REP_SETUP
#endif
/* A streamed row has a tile buffer for each of at most NBG_TILE_OUTS outputs
   (a row of more outputs is not streamed). */
#define NBG_TILE_OUTS 8
typedef struct {
    nbg_fails fails;
    const nbg_iter *it;
    const nbg_loop *loop;
    const void *user;
    int nops, stream;
    int64_t rep;  /* without the iterator: the period of the broadcast rows' copies */
    char *base[NBG_MAXOPS];
    int64_t items[NBG_MAXOPS];
    char *repbase[NBG_MAXOPS];  /* the repeated copy of a broadcast operand, else NULL */
} nbg_rows_job;
/* A row of unit strides whose outputs are big: `unit` runs up to output 0's
   next cache line, then tile by tile (NBG_TILE_BYTES of the widest output, at
   least 32 elements) into buffers in L1 that non-temporal stores copy out,
   then over the short rest; when an output is not aligned for that, the
   whole row runs `unit`. */
static NBG_NOINLINE NBG_HOT_HELPER int nbg_streamed_row(const nbg_rows_job *job, char *const *row,
                                         int64_t len, char *err) {
    const nbg_loop *L = job->loop;
    const int nin = L->nin, nops = job->nops;
    const int64_t *items = job->items;
    char buf[NBG_TILE_OUTS][2 * NBG_TILE_BYTES] __attribute__((aligned(64)));
    char *at[NBG_MAXOPS];
    int64_t width = 0, T, h = (int64_t)(((64 - ((uintptr_t)row[nin] & 63)) & 63) / items[nin]), i;
    int k, st, fits = nops - nin <= NBG_TILE_OUTS && (uintptr_t)row[nin] % items[nin] == 0;
    for (k = nin; k < nops; k++) {
        if (items[k] > width) width = items[k];
        if (((uintptr_t)(row[k] + h * items[k]) & 15) != 0) fits = 0;
        at[k] = buf[(k - nin) % NBG_TILE_OUTS];
    }
    T = NBG_TILE_BYTES / width < 32 ? 32 : NBG_TILE_BYTES / width;
    if (!fits || T * width > 2 * NBG_TILE_BYTES || len < h + T)
        return L->unit(job->user, row, len, err);
    st = L->unit(job->user, row, h, err);
    for (i = h; !st && len - i >= T; i += T) {
        for (k = 0; k < nin; k++) at[k] = row[k] + i * items[k];
        st = L->unit(job->user, at, T, err);
        for (k = nin; k < nops; k++) nbg_stream(row[k] + i * items[k], at[k], T * items[k]);
    }
    for (k = 0; k < nops; k++) at[k] = row[k] + i * items[k];
    if (!st) st = L->unit(job->user, at, len - i, err);
    NBG_SFENCE();
    return st;
}
/* One row: `unit`, `strided` or a streamed row. */
static NBG_NOINLINE int nbg_one_row(const nbg_rows_job *job, char *const *row,
                                    const int64_t *inner, int64_t len, int stream, char *err) {
    const nbg_loop *L = job->loop;
    int k;
    for (k = 0; k < job->nops; k++)
        if (inner[k] != 1) return L->strided(job->user, row, inner, len, err);
    if (NBG_STREAM_OK && stream) return nbg_streamed_row(job, row, len, err);
    return L->unit(job->user, row, len, err);
}
static void nbg_rows_task(void *vc, int64_t b, int64_t e) {
    const nbg_rows_job *job = (const nbg_rows_job *)vc;
    const int nops = job->nops;
    char err[NBG_ERRLEN];
    char *row[NBG_MAXOPS];
    int st = 0, k;
    err[0] = 0;
    if (!job->it) {  /* flat runs: contiguous operands, broadcast rows repeated (job->rep) */
        const int64_t rep = job->rep;
        int64_t ones[NBG_MAXOPS], pos = b;
        for (k = 0; k < nops; k++) ones[k] = 1;
        while (pos < e) {
            const int64_t off = pos % rep, len = rep - off < e - pos ? rep - off : e - pos;
            for (k = 0; k < nops; k++)
                row[k] = job->repbase[k] ? job->repbase[k] + off * job->items[k]
                                         : job->base[k] + pos * job->items[k];
            st = nbg_one_row(job, row, ones, len, job->stream, err);
            if (st) break;
            pos += len;
        }
    } else {
        const nbg_iter *it = job->it;
        const int64_t n = it->n;
        const int last = it->nd - 1;
        int64_t idx[NBG_MAXDIMS], pos = b, i = b % n;
        char *ptr[NBG_MAXOPS];
        nbg_iter_seek(it, b / n, idx, ptr);
        for (;;) {
            const int64_t len = n - i < e - pos ? n - i : e - pos;
            for (k = 0; k < nops; k++) row[k] = ptr[k] + i * it->st[k][last];
            st = nbg_one_row(job, row, it->inner, len, 0, err);
            pos += len;
            if (st || pos >= e) break;
            i = 0;
            nbg_iter_step(it, idx, ptr);
        }
    }
    if (st) nbg_fail_once((nbg_fails *)&job->fails, st, err);
}
/* The repeated-row case of nbg_run_rows: when `it` (2-d after merging) has
   every operand either walking contiguous rows or broadcasting one
   contiguous row (stride 0 across rows), copy each broadcast row R times end
   to end into `rep` (R rows of the result: all of them, or as many as
   NBG_REP_BYTES allow with R * n a multiple of the split's grain; at least 2),
   so that element `pos` of the result reads a broadcast operand at
   pos % (R * n) of its copy and every other operand at pos; returns 1.
   Every row call then starts and ends where the flat path's would for
   full-size operands (multiples of the grain, or the end), so its elements
   take the same code paths (vector body or tail) and the same bits, for any
   thread count.  Returns 0 (job untouched) when the pattern does not hold. */
static NBG_REP_SETUP int nbg_repeat_rows(nbg_rows_job *job, const nbg_iter *it, char *rep,
                                         int64_t grain) {
    const int64_t n = it->n;
    int64_t R = it->shape[0], fit = R, used = 0, per, r, q;
    int k, nb = 0;
    for (k = 0; k < job->nops; k++) {
        if (it->inner[k] != 1) return 0;
        if (it->st[k][0] == 0) nb++;
        else if (it->st[k][0] != n * job->items[k]) return 0;
    }
    if (nb == 0 || nb > NBG_REP_OPS) return 0;
    per = NBG_REP_BYTES / nb - 64;
    for (k = 0; k < job->nops; k++)
        if (it->st[k][0] == 0 && per / (n * job->items[k]) < fit) fit = per / (n * job->items[k]);
    if (fit < R) {  /* a period of whole grains: runs start where the flat path's do */
        int64_t a = n, b = grain;  /* R: a multiple of grain / gcd(n, grain) */
        while (b) { q = a % b; a = b; b = q; }
        R = fit / (grain / a) * (grain / a);
    }
    if (R < 2) return 0;
    for (k = 0; k < job->nops; k++) {
        const int64_t bytes = n * job->items[k];
        job->base[k] = it->base[k];
        if (it->st[k][0]) continue;
        job->repbase[k] = rep + used;
        __builtin_memcpy(rep + used, it->base[k], (size_t)bytes);
        for (r = 1; r < R; r *= 2)  /* double the copies made so far */
            __builtin_memcpy(rep + used + r * bytes, rep + used,
                             (size_t)((r <= R - r ? r : R - r) * bytes));
        used += (R * bytes + 63) & ~(int64_t)63;
    }
    job->rep = R * n;
    return 1;
}
/* The rows of `loop` over `shape` (n elements): operand k's dims, byte strides,
   item size and first element in dims[k], strides[k], items[k], bases[k]. */
static NBG_NOINLINE int nbg_run_rows(const nbg_loop *loop, const void *user, int nd,
                                     const int64_t *shape, const int64_t *const *dims,
                                     const int64_t *const *strides, const int64_t *items,
                                     void *const *bases, int64_t n, char *err) {
    const int nops = loop->nops;
    nbg_rows_job job;
    nbg_iter it;
    char rep[NBG_REP_BYTES] __attribute__((aligned(64)));
    int k;
    job.fails.failed = 0;
    job.fails.status = 0;
    job.fails.err = err;
    job.loop = loop;
    job.user = user;
    job.nops = nops;
    job.rep = n;  /* one flat run */
    for (k = 0; k < nops; k++) {
        job.items[k] = items[k];
        job.repbase[k] = NULL;
    }
    if (nbg_all_contiguous(nd, shape, nops, dims, strides, items)) {
        for (k = 0; k < nops; k++) job.base[k] = (char *)bases[k];
        job.it = NULL;
        job.stream = loop->stream_item && n * loop->stream_item >= NBG_STREAM_MIN;
    } else {
        if (nbg_iter_init(&it, nd, nops, shape, dims, strides, items, bases, 0, err))
            return NBG_TYPE_ERROR;
        job.it = &it;
        job.stream = 0;
        if (it.nd == 2 && loop->grain >= 1 && nbg_repeat_rows(&job, &it, rep, loop->grain))
            job.it = NULL;
    }
    NBG_HELPERS_PARALLEL(nbg_rows_task, &job, n, loop->grain, loop->min_n);
    return job.fails.failed ? job.fails.status : 0;
}
NBG_HELPER NBG_NOINLINE int nbg_run_loop(const nbg_loop *loop, void *user, void *const *ptrs,
                                     const int64_t *dims, char *err) {
    const int nd = loop->nd, nin = loop->nin, nops = loop->nops;
    const int64_t *dl[NBG_MAXOPS], *sl[NBG_MAXOPS];
    int64_t items[NBG_MAXOPS], n;
    void *bases[NBG_MAXOPS];
    int k, st = NBG_VALUE_ERROR;
    if (nops > NBG_MAXOPS || nops <= nin) {
        nbg_errorf(err, "%s: too many operands for the C loop", loop->what);
        return NBG_TYPE_ERROR;
    }
    for (k = 0; k < nops; k++) {
        const nbg_operand *o = loop->ops + k;
        dl[k] = dims + o->dims;
        sl[k] = dims + o->dims + nd;
        items[k] = o->item;
        bases[k] = ptrs[o->slot];
    }
    if (nin && NBG_UNLIKELY(nbg_check_broadcast(nd, dl[nin], nin, dl, err, loop->what)))
        goto fail;
    for (k = 0; k < loop->nscalars; k++) {  /* inputs read once (into the context) */
        const nbg_operand *o = loop->ops + nops + k;
        const int64_t *own = dims + o->dims;
        if (NBG_UNLIKELY(nbg_check_ones(o->ndim, 1, &own, err, loop->what))) goto fail;
        __builtin_memcpy((char *)user + o->at, ptrs[o->slot], (size_t)o->item);
    }
    for (k = nin + 1; k < nops; k++)
        if (NBG_UNLIKELY(!nbg_same_dims(nd, dl[k], dl[nin]))) {
            nbg_errorf(err, "%s: outputs of different shapes", loop->what);
            goto fail;
        }
    n = nbg_size(nd, dl[nin]);
    if (n <= 0) return 0;
    st = nbg_run_rows(loop, user, nd, dl[nin], dl, sl, items, bases, n, err);
    if (!st) return 0;
fail:
    if (!err[0]) nbg_errorf(err, "the C code failed");
    return st ? st : NBG_VALUE_ERROR;
}
