#ifndef NBG_DOT_COMMON
#define NBG_DOT_COMMON
/* malloc and free, declared (parsing <stdlib.h> costs each translation unit
   ~16M compiler instructions, a header included later declares them again) */
void *malloc(size_t);
void *calloc(size_t, size_t);
void free(void *);
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
/* The glue around the inner kernels (packing calls, copies into C, zero
   padding, tails) compiles at -O1: GCC's -O3 vectorises and versions each of
   their small loops, several times the compile work of the kernels they call,
   for nothing measurable per call. */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_DOT_GLUE __attribute__((noclone, optimize("O1")))
#else
#define NBG_DOT_GLUE
#endif
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
