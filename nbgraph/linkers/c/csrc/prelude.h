/* The module's side of the runtime (after csrc/common.h, and csrc/helpers.h
   when NBG_STANDALONE is defined): the table the module is bound to, the
   helpers' names, the thread-pool calls, and the
   declarations of the few C library functions kernels use besides math.h
   (declared, not included: parsing string.h and stdio.h costs every module
   a few milliseconds of compile time).  Plain C, no placeholders. */
#ifndef NBG_MAXOPS
#error "csrc/common.h comes before this header"
#endif
void *memcpy(void *, const void *, size_t);
void *memmove(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
size_t strlen(const char *);
int snprintf(char *, size_t, const char *, ...);
/* The runtime's table, bound by nbg_attach_runtime after loading (a module
   built without the runtime may run unbound: serial). */
static const nbg_runtime *nbg_rt;
#ifndef NBG_STANDALONE
/* the helpers are the runtime library's (see csrc/helpers.h) */
#define nbg_errorf (nbg_rt->errorf)
#define nbg_set_error (nbg_rt->set_error)
#define nbg_shape_text (nbg_rt->shape_text)
#define nbg_fail_once (nbg_rt->fail_once)
#define nbg_iter_init (nbg_rt->iter_init)
#define nbg_iter_step (nbg_rt->iter_step)
#define nbg_iter_seek (nbg_rt->iter_seek)
#define nbg_iter_sub (nbg_rt->iter_sub)
#define nbg_check_broadcast (nbg_rt->check_broadcast)
#define nbg_broadcast_shape (nbg_rt->broadcast_shape)
#define nbg_all_contiguous (nbg_rt->all_contiguous)
#define nbg_check_ones (nbg_rt->check_ones)
#define nbg_run_loop (nbg_rt->run_loop)
#define nbg_reduce (nbg_rt->reduce)
#endif
/* A function run once, when the module is loaded (its table and binding):
   compiled without optimisation, for each optimised function costs the
   compiler ~1-3 million instructions more, whatever its size. */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_LOAD_TIME __attribute__((optimize("O0")))
#else
#define NBG_LOAD_TIME
#endif
static inline int nbg_iter_next(nbg_iter *it) { return nbg_iter_step(it, it->idx, it->ptr); }
static inline int nbg_threads(void) { return nbg_rt ? nbg_rt->nthreads() : 1; }
/* Whether a loop of n elements is worth splitting (n >= min_n when the
   workers are awake, see nbgraph.linkers.c.threads). */
static inline int nbg_worth_splitting(int64_t n, int64_t min_n) {
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
