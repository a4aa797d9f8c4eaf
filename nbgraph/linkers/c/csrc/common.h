/* What nbgraph's C modules and its runtime library share (both include it
   first, after NBG_ERRLEN and NBG_RT_VERSION): error codes, types, the
   iterator's state, small inline helpers, and the runtime's table: the
   thread pool and the helpers every module calls (csrc/helpers.h), compiled
   once into the runtime library instead of into every module.
   Plain C, no placeholders. */
#if !defined(NBG_ERRLEN) || !defined(NBG_RT_VERSION)
#error "define NBG_ERRLEN and NBG_RT_VERSION before this header"
#endif
#ifndef NBG_STD_TYPES  /* (a module's head defines the types itself) */
#include <stdint.h>
#include <stddef.h>
#endif
#define NBG_EXPORT __attribute__((visibility("default")))
#define NBG_NOINLINE __attribute__((noinline))
#define NBG_VALUE_ERROR 1
#define NBG_TYPE_ERROR 2
#define NBG_INDEX_ERROR 3
#define NBG_MEMORY_ERROR 4
#define NBG_RUNTIME_ERROR 5
#define NBG_MAXDIMS 32
#define NBG_MAXOPS 72
/* The small inline helpers below: plain static inline, except in the runtime
   library, built at -Og, which inlines only what is forced (csrc/runtime.c). */
#ifndef NBG_INLINE
#define NBG_INLINE static inline
#endif
#define NBG_LIKELY(x) __builtin_expect(!!(x), 1)
#define NBG_UNLIKELY(x) __builtin_expect(!!(x), 0)
typedef int (*nbg_kernel)(void **, const int64_t *, char *);
typedef void (*nbg_freefn)(void *);
typedef void (*nbg_task)(void *, int64_t, int64_t);
/* The first failure of a parallel loop (its status and message win). */
typedef struct { int failed, status; char *err; } nbg_fails;
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
NBG_INLINE int64_t nbg_size(int nd, const int64_t *dims) {
    int64_t n = 1;
    int d;
    for (d = 0; d < nd; d++) n *= dims[d];
    return n;
}
/* C-contiguous (sizes 1, and arrays with no elements, ignore strides, as in NumPy). */
NBG_INLINE int nbg_contiguous(int nd, const int64_t *dims, const int64_t *strides, int64_t item) {
    int64_t expect = item;
    int d;
    for (d = 0; d < nd; d++) if (dims[d] == 0) return 1;
    for (d = nd - 1; d >= 0; d--) {
        if (dims[d] != 1 && strides[d] != expect) return 0;
        expect *= dims[d];
    }
    return 1;
}
NBG_INLINE int nbg_same_dims(int nd, const int64_t *a, const int64_t *b) {
    int d;
    for (d = 0; d < nd; d++) if (a[d] != b[d]) return 0;
    return 1;
}
/* An elementwise loop as its kernel describes it to the runtime (nbg_run_loop
   in csrc/helpers.h): the kernel's own functions over one row (unit: every
   operand of unit stride; strided: any strides, or NULL), then one
   nbg_operand per operand (array inputs, outputs, inputs read once). */
typedef int (*nbg_unit_fn)(const void *, char *const *, int64_t, char *);
typedef int (*nbg_strided_fn)(const void *, char *const *, const int64_t *, int64_t, char *);
typedef struct { int slot, ndim, dims, item, at; } nbg_operand;
typedef struct {
    nbg_unit_fn unit;
    nbg_strided_fn strided;
    const char *what;
    int nd, nin, nops, nscalars;
    int64_t grain, min_n, stream_item;
    const nbg_operand *ops;
} nbg_loop;
/* A reduction kernel's own loops and facts, for the runtime's driver
   (nbg_reduce in csrc/reduce.h): seg reduces elements [lo, hi) of the row at
   ptr (element strides inner) into *out; keep combines a row element by
   element into the output row q (element stride q_s); comb sets *acc to the
   combination of *acc and *v.  pairwise: 1 (2) when the values are float64
   (float32) sums whose block partials merge as a binary cascade. */
typedef struct {
    int (*seg)(const void *, char *const *, const int64_t *, int64_t, int64_t, void *, char *);
    int (*keep)(const void *, char *const *, const int64_t *, void *, int64_t, int64_t, char *);
    void (*comb)(void *, const void *);
    const void *user, *identity;
    int64_t item, min_n;
    int pairwise, blockable;
} nbg_reduce_spec;
/* Outputs of at least this many bytes are written with non-temporal stores. */
#define NBG_STREAM_MIN (16LL << 20)
/* The runtime library's table, handed to each module by nbg_attach_runtime:
   the thread pool, then the helpers of csrc/helpers.h. */
typedef struct {
    int version;
    int (*nthreads)(void);
    int64_t (*parallel_for)(nbg_task, void *, int64_t, int64_t);
    int (*worth)(int64_t, int64_t);
    void (*errorf)(char *, const char *, ...);
    void (*set_error)(char *, const char *);
    const char *(*shape_text)(char *, size_t, int, const int64_t *);
    void (*fail_once)(nbg_fails *, int, const char *);
    int (*iter_init)(nbg_iter *, int, int, const int64_t *, const int64_t *const *,
                     const int64_t *const *, const int64_t *, void *const *, int, char *);
    int (*iter_step)(const nbg_iter *, int64_t *, char **);
    void (*iter_seek)(const nbg_iter *, int64_t, int64_t *, char **);
    void (*iter_sub)(const nbg_iter *, nbg_iter *, int, int64_t, int64_t);
    int (*check_broadcast)(int, const int64_t *, int, const int64_t *const *, char *,
                           const char *);
    int (*broadcast_shape)(int, int, const int64_t *const *, int64_t *, char *, const char *);
    int (*all_contiguous)(int, const int64_t *, int, const int64_t *const *,
                          const int64_t *const *, const int64_t *);
    int (*check_ones)(int, int, const int64_t *const *, char *, const char *);
    int (*run_loop)(const nbg_loop *, void *, void *const *, const int64_t *, char *);
    int (*reduce)(const nbg_reduce_spec *, nbg_iter *, int64_t, char *);
} nbg_runtime;
