/* The runtime library's second translation unit (see csrc/runtime.c): the
   general iterator and the rows driver of csrc/helpers.h, and the compiler
   probe's test function, compiled while the first unit (the thread pool,
   messages, shape checks, the table) compiles.
   Filled in by nbgraph.linkers.c.threads (string.Template). */
#include <stdint.h>
#include <stddef.h>
#define NBG_ERRLEN ${errlen}
#define NBG_RT_VERSION ${version}
#define NBG_INLINE static inline __attribute__((always_inline))  /* (built at -Og) */
${common}
int64_t rt_parallel_for(nbg_task fn, void *ctx, int64_t n, int64_t grain);
int rt_worth(int64_t n, int64_t min_n);
/* the rows driver's loops use the pool directly */
#define NBG_HELPERS_PARALLEL(fn, ctx, n, grain, min_n) \
    do { if ((n) >= (min_n) && rt_worth((n), (min_n))) rt_parallel_for((fn), (ctx), (n), (grain)); \
         else (fn)((ctx), 0, (n)); } while (0)
#define NBG_HELPER
${helpers}
/* The compiler probe's test function (nbgraph.linkers.c.compiler.probe_function):
   on a first use, building this library is the probe. */
${probe}
