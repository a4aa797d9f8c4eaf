/* nbgraph runtime library (version ${version}): the thread pool and the helpers
   every module calls (csrc/helpers.h), handed to modules as one table, and
   the compiler probe's test function (on a first use, building this library
   is the probe).  One translation unit: each unit costs the compiler ~70
   million instructions before its first function (two units cost ~85 million
   more than one).  Filled in by nbgraph.linkers.c.threads (string.Template),
   with the text of csrc/common.h and csrc/helpers.h after the system headers. */
#include <stdarg.h>
#include <stdatomic.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__)) && defined(__LP64__) \
    && defined(__GNUC__) && !defined(NBG_RT_SYSTEM_HEADERS)
/* Linux on x86-64 or AArch64: what this file uses of the C library, declared
   here instead of parsing <pthread.h>, <signal.h>, <stdio.h>, <stdint.h> (~55
   million compiler instructions, more than a tenth of the build).  The pthread
   objects and the signal set are only handed to the C library by address:
   each is storage at least as big and as aligned as glibc's and musl's types
   on these machines (tests/linkers/c/test_runtime_declarations.py checks
   this machine's headers), zero-filled where the headers' initialisers are
   zeros. */
${std_types}
#define NBG_HAVE_STDIO 1  /* (csrc/helpers.h: snprintf and vsnprintf are declared) */
#define NBG_SYS_MUTEX_BYTES 64
#define NBG_SYS_COND_BYTES 64
#define NBG_SYS_ATTR_BYTES 64
#define NBG_SYS_SIGSET_BYTES 128
typedef unsigned long pthread_t;
typedef int pthread_once_t;
typedef union { char bytes[NBG_SYS_MUTEX_BYTES]; long align; } pthread_mutex_t;
typedef union { char bytes[NBG_SYS_COND_BYTES]; long long align; } pthread_cond_t;
typedef union { char bytes[NBG_SYS_ATTR_BYTES]; long align; } pthread_attr_t;
typedef struct { unsigned long bits[NBG_SYS_SIGSET_BYTES / sizeof(unsigned long)]; } sigset_t;
struct timespec { long tv_sec; long tv_nsec; };
#define PTHREAD_MUTEX_INITIALIZER {{0}}
#define PTHREAD_COND_INITIALIZER {{0}}
#define PTHREAD_ONCE_INIT 0
#define SIG_SETMASK 2
#define CLOCK_MONOTONIC 1
int pthread_mutex_init(pthread_mutex_t *, const void *);
int pthread_mutex_lock(pthread_mutex_t *);
int pthread_mutex_unlock(pthread_mutex_t *);
int pthread_cond_init(pthread_cond_t *, const void *);
int pthread_cond_wait(pthread_cond_t *, pthread_mutex_t *);
int pthread_cond_broadcast(pthread_cond_t *);
int pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
int pthread_join(pthread_t, void **);
int pthread_once(pthread_once_t *, void (*)(void));
int pthread_atfork(void (*)(void), void (*)(void), void (*)(void));
int pthread_attr_init(pthread_attr_t *);
int pthread_attr_setstacksize(pthread_attr_t *, size_t);
int pthread_attr_destroy(pthread_attr_t *);
int pthread_sigmask(int, const sigset_t *, sigset_t *);
int sigfillset(sigset_t *);
int sched_yield(void);
int clock_gettime(int, struct timespec *);
int snprintf(char *, size_t, const char *, ...);
int vsnprintf(char *, size_t, const char *, va_list);
#else
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#endif
#define NBG_ERRLEN ${errlen}
#define NBG_RT_VERSION ${version}
#define NBG_INLINE static inline __attribute__((always_inline))  /* (built at -Og) */
#if defined(__GNUC__) && !defined(__clang__)
/* nbg_all_contiguous runs on every elementwise call: -O1 (+17 million compiler
   instructions) gives back the ~40 instructions per call -Og costs it */
#define NBG_HOT_HELPER __attribute__((optimize("O1")))
/* what runs once per process or thread count (starting and stopping workers,
   fork, configuration): -O0 costs the build ~8 million instructions fewer */
#define NBG_ONCE __attribute__((optimize("O0")))
#else
#define NBG_ONCE
#endif
${common}
static int64_t rt_parallel_for(nbg_task fn, void *ctx, int64_t n, int64_t grain);
static int rt_worth(int64_t n, int64_t min_n);
/* the rows driver's loops use the pool directly */
#define NBG_HELPERS_PARALLEL(fn, ctx, n, grain, min_n) \
    do { if ((n) >= (min_n) && rt_worth((n), (min_n))) rt_parallel_for((fn), (ctx), (n), (grain)); \
         else (fn)((ctx), 0, (n)); } while (0)
${helpers}
#if defined(__x86_64__) || defined(__i386__)
#define NBG_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define NBG_PAUSE() __asm__ __volatile__("yield")
#else
#define NBG_PAUSE() ((void)0)
#endif
#define NBG_MAXTHREADS 256
#define NBG_CHUNKS_PER_THREAD 8

/* One job at a time.  A caller claims the pool with `busy`, then writes the
   job under `mu` once no worker is inside a job (`active` == 0) and bumps
   `gen`.  A worker joins under `mu` (so it copies one consistent job),
   claims chunks with `next` and counts them in `done`; the caller returns
   only when every chunk is done and every worker has left the job. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int busy, active, sleepers;
    atomic_uint_fast64_t gen;
    atomic_int_fast64_t last_ask;
    atomic_int_fast64_t next, done;
    nbg_task fn;
    void *ctx;
    int64_t n, chunk, nchunks;
    int stop;
    int wanted;    /* threads, the caller included */
    int running;   /* workers started in this process */
    long spin_ns;
    pthread_t tids[NBG_MAXTHREADS];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void run_chunks(nbg_task fn, void *ctx, int64_t n, int64_t chunk, int64_t nchunks) {
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&pool.next, 1, memory_order_acq_rel);
        if (c >= nchunks) return;
        int64_t b = c * chunk, e = b + chunk < n ? b + chunk : n;
        fn(ctx, b, e);
        atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
    }
}

static void *worker(void *arg) {
    uint64_t seen = (uint64_t)(uintptr_t)arg;
    for (;;) {
        if (atomic_load_explicit(&pool.gen, memory_order_acquire) == seen) {
            int64_t until = now_ns() + pool.spin_ns;
            int k = 0;
            while (atomic_load_explicit(&pool.gen, memory_order_acquire) == seen) {
                NBG_PAUSE();
                if ((++k & 63) == 0 && now_ns() > until) break;
            }
        }
        pthread_mutex_lock(&pool.mu);
        if (atomic_load(&pool.gen) == seen && !pool.stop) {
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.gen) == seen && !pool.stop)
                pthread_cond_wait(&pool.cv, &pool.mu);
            atomic_fetch_sub(&pool.sleepers, 1);
        }
        if (pool.stop) {
            pthread_mutex_unlock(&pool.mu);
            return NULL;
        }
        seen = atomic_load(&pool.gen);
        atomic_fetch_add(&pool.active, 1);
        nbg_task fn = pool.fn;
        void *ctx = pool.ctx;
        int64_t n = pool.n, chunk = pool.chunk, nchunks = pool.nchunks;
        pthread_mutex_unlock(&pool.mu);
        run_chunks(fn, ctx, n, chunk, nchunks);
        atomic_fetch_sub_explicit(&pool.active, 1, memory_order_release);
    }
}

/* The child of fork() has only the forking thread: forget the workers. */
static NBG_ONCE void after_fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    atomic_store(&pool.busy, 0);
    atomic_store(&pool.active, 0);
    atomic_store(&pool.sleepers, 0);
    pool.stop = 0;
    pool.running = 0;
}

static NBG_ONCE void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Called with `busy` held. */
static NBG_ONCE void stop_workers(void) {
    int k;
    pthread_mutex_lock(&pool.mu);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    for (k = 0; k < pool.running; k++) pthread_join(pool.tids[k], NULL);
    pool.running = 0;
    pool.stop = 0;
}

/* Called with `busy` held.  Workers block every signal (Python handles them
   on its main thread). */
static NBG_ONCE void start_workers(void) {
    sigset_t all, old;
    pthread_attr_t attr;
    int k, want = pool.wanted - 1;
    pthread_once(&atfork_once, register_atfork);
    if (pool.running) stop_workers();
    if (want <= 0) return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8 << 20);
    for (k = 0; k < want; k++) {
        uint64_t g = atomic_load(&pool.gen);
        if (pthread_create(&pool.tids[k], &attr, worker, (void *)(uintptr_t)g) != 0) break;
        pool.running = k + 1;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int rt_nthreads(void) { return pool.wanted > 1 ? pool.wanted : 1; }

/* fn(ctx, begin, end) over [0, n) in chunks (multiples of grain but the
   last); returns the number of chunks (1: it ran on this thread alone). */
static int64_t rt_parallel_for(nbg_task fn, void *ctx, int64_t n, int64_t grain) {
    int64_t chunk, nchunks, parts;
    int expected = 0, k = 0;
    if (n <= 0) return 0;
    if (grain < 1) grain = 1;
    if (pool.wanted <= 1 || n <= grain ||
        !atomic_compare_exchange_strong(&pool.busy, &expected, 1)) {
        fn(ctx, 0, n);
        return 1;
    }
    if (pool.running != pool.wanted - 1) start_workers();
    if (pool.running == 0) {
        atomic_store(&pool.busy, 0);
        fn(ctx, 0, n);
        return 1;
    }
    parts = (int64_t)(pool.running + 1) * NBG_CHUNKS_PER_THREAD;
    chunk = (n + parts - 1) / parts;
    chunk = (chunk + grain - 1) / grain * grain;
    nchunks = (n + chunk - 1) / chunk;
    pthread_mutex_lock(&pool.mu);
    while (atomic_load(&pool.active) != 0) {  /* a late worker leaving the last job */
        pthread_mutex_unlock(&pool.mu);
        NBG_PAUSE();
        pthread_mutex_lock(&pool.mu);
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = chunk;
    pool.nchunks = nchunks;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.next, 0);
    atomic_fetch_add(&pool.gen, 1);
    if (atomic_load(&pool.sleepers)) pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    run_chunks(fn, ctx, n, chunk, nchunks);
    while (atomic_load_explicit(&pool.done, memory_order_acquire) < nchunks) {
        NBG_PAUSE();
        if (++k > 2000) sched_yield();
    }
    while (atomic_load_explicit(&pool.active, memory_order_acquire) != 0) NBG_PAUSE();
    atomic_store(&pool.busy, 0);
    return nchunks;
}

/* Whether a job of n elements, worth splitting from min_n when the workers
   are awake, should be split.  Waking a sleeping worker costs the caller
   ~15 us on a VM: then only from 4 min_n, or when such jobs keep coming (the
   last one asked less than 1 ms ago: the pool then stays awake). */
static int rt_worth(int64_t n, int64_t min_n) {
    int64_t t, last;
    if (pool.wanted <= 1 || n < min_n) return 0;
    if (n >= 4 * min_n) return 1;
    if (pool.running && atomic_load_explicit(&pool.sleepers, memory_order_relaxed) < pool.running)
        return 1;
    t = now_ns();
    last = atomic_exchange_explicit(&pool.last_ask, t, memory_order_relaxed);
    return t - last < 1000000;
}

static const nbg_runtime runtime = {
    ${version}, rt_nthreads, rt_parallel_for, rt_worth,
    nbg_errorf, nbg_set_error, nbg_shape_text, nbg_fail_once,
    nbg_iter_init, nbg_iter_step, nbg_iter_seek, nbg_iter_sub,
    nbg_check_broadcast, nbg_broadcast_shape, nbg_all_contiguous, nbg_check_ones,
    nbg_run_loop, nbg_reduce,
};

NBG_EXPORT int nbg_rt_version(void) { return ${version}; }
NBG_EXPORT const void *nbg_rt_get(void) { return &runtime; }
NBG_EXPORT int nbg_rt_nthreads(void) { return rt_nthreads(); }
NBG_EXPORT int nbg_rt_running(void) { return pool.running; }

/* Set the number of threads (the caller included); workers are (re)started
   by the next parallel loop.  0, or -1 while a loop runs. */
NBG_EXPORT NBG_ONCE int nbg_rt_configure(int nthreads, long spin_ns) {
    int expected = 0;
    if (nthreads < 1) nthreads = 1;
    if (nthreads > NBG_MAXTHREADS) nthreads = NBG_MAXTHREADS;
    if (!atomic_compare_exchange_strong(&pool.busy, &expected, 1)) return -1;
    pool.wanted = nthreads;
    pool.spin_ns = spin_ns;
    if (pool.running && pool.running != nthreads - 1) stop_workers();
    atomic_store(&pool.busy, 0);
    return 0;
}
/* The compiler probe's test function (nbgraph.linkers.c.compiler.probe_function). */
${probe}
