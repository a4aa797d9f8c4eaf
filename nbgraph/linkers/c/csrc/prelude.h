/* The C every nbgraph module starts with (after module_head.h): error codes,
   messages, shape helpers, the general iterator and the module's side of the
   thread pool.  Plain C, no placeholders. */
#if !defined(NBG_ERRLEN) || !defined(NBG_RT_VERSION)
#error "module_head.h defines NBG_ERRLEN and NBG_RT_VERSION before this header"
#endif
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#define NBG_EXPORT __attribute__((visibility("default")))
#define NBG_NOINLINE __attribute__((noinline))
#define NBG_VALUE_ERROR 1
#define NBG_TYPE_ERROR 2
#define NBG_INDEX_ERROR 3
#define NBG_MEMORY_ERROR 4
#define NBG_RUNTIME_ERROR 5
#define NBG_MAXDIMS 32
#define NBG_MAXOPS 72
#define NBG_LIKELY(x) __builtin_expect(!!(x), 1)
#define NBG_UNLIKELY(x) __builtin_expect(!!(x), 0)
typedef int (*nbg_kernel)(void **, const int64_t *, char *);
typedef void (*nbg_freefn)(void *);
/* The thread pool, attached by nbg_attach_runtime after loading (NULL: serial). */
typedef void (*nbg_task)(void *, int64_t, int64_t);
typedef struct {
    int version;
    int (*nthreads)(void);
    int64_t (*parallel_for)(nbg_task, void *, int64_t, int64_t);
    int (*worth)(int64_t, int64_t);
} nbg_runtime;
static const nbg_runtime *nbg_rt;
static int nbg_threads(void) { return nbg_rt ? nbg_rt->nthreads() : 1; }
/* Whether a loop of n elements is worth splitting (n >= min_n when the
   workers are awake, see nbgraph.linkers.c.threads). */
static int nbg_worth_splitting(int64_t n, int64_t min_n) {
    return nbg_rt && n >= min_n && nbg_rt->worth(n, min_n);
}
/* fn(ctx, begin, end) over [0, n): split across the pool (chunks that are
   multiples of grain) when worth it, else on this thread. */
static NBG_NOINLINE void nbg_parallel(nbg_task fn, void *ctx, int64_t n, int64_t grain,
                                      int64_t min_n) {
    if (n <= 0) return;
    if (nbg_worth_splitting(n, min_n)) nbg_rt->parallel_for(fn, ctx, n, grain);
    else fn(ctx, 0, n);
}
/* The first failure of a parallel loop (its status and message win). */
typedef struct { int failed, status; char *err; } nbg_fails;
static NBG_NOINLINE void nbg_fail_once(nbg_fails *f, int status, const char *msg) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&f->failed, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        f->status = status;
        snprintf(f->err, NBG_ERRLEN, "%s", msg[0] ? msg : "the C code failed");
    }
}
/* Non-temporal stores: a big output (at least NBG_STREAM_MIN bytes) is
   written tile by tile around the caches, which saves reading it first. */
#define NBG_STREAM_MIN (16LL << 20)
#define NBG_TILE_BYTES 256
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define NBG_STREAM_OK 1
static inline void nbg_stream(void *dst, const void *src, int64_t bytes) {
    int64_t j;
    for (j = 0; j < bytes; j += 16)
        _mm_stream_si128((__m128i *)((char *)dst + j), _mm_load_si128((const __m128i *)((const char *)src + j)));
}
#define NBG_SFENCE() _mm_sfence()
#else
#define NBG_STREAM_OK 0
static inline void nbg_stream(void *dst, const void *src, int64_t bytes) { memcpy(dst, src, bytes); }
#define NBG_SFENCE() ((void)0)
#endif
/* Store a message (printf-style) for the Python side. */
static NBG_NOINLINE void nbg_errorf(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, NBG_ERRLEN, fmt, ap);
    va_end(ap);
}
static NBG_NOINLINE void nbg_set_error(char *err, const char *msg) { nbg_errorf(err, "%s", msg); }
/* "(3, 4)" into buf. */
static NBG_NOINLINE const char *nbg_shape_text(char *buf, size_t size, int nd, const int64_t *dims) {
    size_t used = 0;
    int d;
    used += snprintf(buf + used, size - used, "(");
    for (d = 0; d < nd && used < size; d++)
        used += snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)dims[d]);
    if (used < size) snprintf(buf + used, size - used, nd == 1 ? ",)" : ")");
    return buf;
}
static int64_t nbg_size(int nd, const int64_t *dims) {
    int64_t n = 1;
    int d;
    for (d = 0; d < nd; d++) n *= dims[d];
    return n;
}
/* C-contiguous (sizes 1, and arrays with no elements, ignore strides, as in NumPy). */
static int nbg_contiguous(int nd, const int64_t *dims, const int64_t *strides, int64_t item) {
    int64_t expect = item;
    int d;
    for (d = 0; d < nd; d++) if (dims[d] == 0) return 1;
    for (d = nd - 1; d >= 0; d--) {
        if (dims[d] != 1 && strides[d] != expect) return 0;
        expect *= dims[d];
    }
    return 1;
}
static int nbg_same_dims(int nd, const int64_t *a, const int64_t *b) {
    int d;
    for (d = 0; d < nd; d++) if (a[d] != b[d]) return 0;
    return 1;
}
/* The general (strided / broadcast) iteration of several operands over one
   shape.  nbg_iter_init takes, per operand k, its dims, byte strides, item
   size and base pointer; an operand of size 1 along a dimension of the
   shape is broadcast (stride 0) there.  Dimensions of size 1 are dropped and
   dimensions every operand walks contiguously are merged; with sort != 0
   the dimensions are first ordered by operand 0's strides (memory order).
   Then the caller runs a row (ptr[k]: operand k's row start, n: the row
   length, inner[k]: its element stride) and nbg_iter_next moves on.
   Parallel loops keep the iterator constant and walk rows with their own
   idx/ptr (nbg_iter_seek, nbg_iter_step) or a restricted copy (nbg_iter_sub). */
typedef struct {
    int nd, nops;
    int64_t n;
    int64_t shape[NBG_MAXDIMS];
    int64_t idx[NBG_MAXDIMS];
    int64_t st[NBG_MAXOPS][NBG_MAXDIMS];
    char *ptr[NBG_MAXOPS];
    char *base[NBG_MAXOPS];
    int64_t inner[NBG_MAXOPS];
} nbg_iter;
static NBG_NOINLINE int nbg_iter_init(nbg_iter *it, int nd, int nops, const int64_t *shape,
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
static NBG_NOINLINE int nbg_iter_step(const nbg_iter *it, int64_t *idx, char **ptr) {
    int d, k;
    for (d = it->nd - 2; d >= 0; d--) {
        for (k = 0; k < it->nops; k++) ptr[k] += it->st[k][d];
        if (++idx[d] < it->shape[d]) return 1;
        for (k = 0; k < it->nops; k++) ptr[k] -= it->st[k][d] * it->shape[d];
        idx[d] = 0;
    }
    return 0;
}
static int nbg_iter_next(nbg_iter *it) { return nbg_iter_step(it, it->idx, it->ptr); }
/* The number of rows (the product of the outer dimensions). */
static int64_t nbg_iter_rows(const nbg_iter *it) {
    int64_t r = 1;
    int d;
    for (d = 0; d < it->nd - 1; d++) r *= it->shape[d];
    return r;
}
/* Position idx/ptr at the start of row `row`. */
static NBG_NOINLINE void nbg_iter_seek(const nbg_iter *it, int64_t row, int64_t *idx, char **ptr) {
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
static NBG_NOINLINE void nbg_iter_sub(const nbg_iter *src, nbg_iter *dst, int d, int64_t lo,
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

/* Each operand's dims must equal shape's or be 1 (NumPy broadcasting). */
static NBG_NOINLINE int nbg_check_broadcast(int nd, const int64_t *shape, int n, const int64_t *const *dims,
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
static NBG_NOINLINE int nbg_broadcast_shape(int nd, int n, const int64_t *const *dims, int64_t *shape,
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
static NBG_NOINLINE int nbg_all_contiguous(int nd, const int64_t *shape, int n, const int64_t *const *dims,
                              const int64_t *const *strides, const int64_t *items) {
    int k;
    for (k = 0; k < n; k++)
        if (!nbg_same_dims(nd, dims[k], shape) || !nbg_contiguous(nd, dims[k], strides[k], items[k]))
            return 0;
    return 1;
}
/* Operands statically of size 1 must have all dims 1 at run time. */
static NBG_NOINLINE int nbg_check_ones(int nd, int n, const int64_t *const *dims, char *err, const char *what) {
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
