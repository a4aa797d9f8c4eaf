"""The thread pool that big C loops share: a tiny runtime library in plain C.

The library is built once with the probed compiler, cached on disk beside
the modules (``runtime-<key>.so``, same security rules, see
:mod:`~nbgraph.linkers.c.cache`) and loaded with ``ffi.dlopen``.  It holds a
process-wide pool of ``NBGRAPH_NUM_THREADS - 1`` worker threads (default:
the CPUs this process may use); the calling thread takes part in every job.
Its table (``nbg_rt_get()``) is handed to each module after loading through
the module's ``nbg_attach_runtime``; a module never attached runs serially.

Rules the C side keeps:

* one job at a time: a call made while the pool is busy (a second Python
  thread, or a loop nested in a task) runs serially on its own thread;
* workers spin ~50 µs after a job, then sleep on a condition variable;
  ``worth(n, min_n)`` tells a module whether to split a loop: from
  ``min_n`` elements while they are awake, else from ``4 min_n`` or when
  such loops keep coming (waking a thread costs the caller ~15 µs here);
* after ``fork()`` the child forgets the parent's workers (``pthread_atfork``)
  and starts its own on its first parallel loop, so it never waits on
  threads that do not exist;
* the library is linked ``-z nodelete``: it is never unloaded while a
  worker may run its code.
"""

import os
import threading
import warnings

__all__ = ["RUNTIME_SOURCE", "RUNTIME_FLAGS", "default_num_threads", "get_num_threads",
           "set_num_threads", "runtime_table"]

#: Version of the table layout (``nbg_runtime`` in the C of both sides).
RUNTIME_VERSION = 3

#: Extra flags for the runtime library (threads; never unloaded).
RUNTIME_FLAGS = ["-pthread", "-Wl,-z,nodelete"]

#: How long idle workers spin before sleeping (nanoseconds).
SPIN_NS = 50000

RUNTIME_SOURCE = r"""/* nbgraph thread-pool runtime (version %(version)d).  Generated: do not edit. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#define NBG_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define NBG_PAUSE() __asm__ __volatile__("yield")
#else
#define NBG_PAUSE() ((void)0)
#endif
#define NBG_EXPORT __attribute__((visibility("default")))
#define NBG_MAXTHREADS 256
#define NBG_CHUNKS_PER_THREAD 8

typedef void (*nbg_task)(void *ctx, int64_t begin, int64_t end);
typedef struct {
    int version;
    int (*nthreads)(void);
    int64_t (*parallel_for)(nbg_task fn, void *ctx, int64_t n, int64_t grain);
    int (*worth)(int64_t n, int64_t min_n);
} nbg_runtime;

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
static void after_fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    atomic_store(&pool.busy, 0);
    atomic_store(&pool.active, 0);
    atomic_store(&pool.sleepers, 0);
    pool.stop = 0;
    pool.running = 0;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Called with `busy` held. */
static void stop_workers(void) {
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
static void start_workers(void) {
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

static const nbg_runtime runtime = {%(version)d, rt_nthreads, rt_parallel_for, rt_worth};

NBG_EXPORT int nbg_rt_version(void) { return %(version)d; }
NBG_EXPORT const void *nbg_rt_get(void) { return &runtime; }
NBG_EXPORT int nbg_rt_nthreads(void) { return rt_nthreads(); }
NBG_EXPORT int nbg_rt_running(void) { return pool.running; }

/* Set the number of threads (the caller included); workers are (re)started
   by the next parallel loop.  0, or -1 while a loop runs. */
NBG_EXPORT int nbg_rt_configure(int nthreads, long spin_ns) {
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
""" % {"version": RUNTIME_VERSION}


def default_num_threads():
    """``NBGRAPH_NUM_THREADS`` (an integer >= 1), else the CPUs this process may use."""
    text = os.environ.get("NBGRAPH_NUM_THREADS", "").strip()
    if text:
        try:
            n = int(text)
            if n >= 1:
                return n
        except ValueError:
            pass
        warnings.warn("nbgraph: NBGRAPH_NUM_THREADS=%r is not an integer >= 1; using the "
                      "number of CPUs" % text, RuntimeWarning, stacklevel=2)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_lock = threading.Lock()
_state = {"threads": None, "lib": None, "table": None, "failed": False}


def get_num_threads():
    """The number of threads big C loops use (the calling thread included)."""
    if _state["threads"] is None:
        _state["threads"] = default_num_threads()
    return _state["threads"]


def set_num_threads(n):
    """Use ``n`` threads from now on (modules already loaded included); returns the old count.

    Modules loaded while the count was 1 stay serial.  Raises RuntimeError
    when called while a parallel loop runs.
    """
    n = int(n)
    if n < 1:
        raise ValueError("the number of threads must be >= 1, not %d" % n)
    old = get_num_threads()
    lib = _state["lib"]
    if lib is not None and lib.nbg_rt_configure(n, SPIN_NS) != 0:
        raise RuntimeError("nbgraph: cannot change the number of threads while a parallel "
                           "loop runs")
    _state["threads"] = n
    return old


def runtime_table(cache, info):
    """The runtime's table (a cffi ``void *``) to bind modules to, or NULL (serial).

    Loaded, or built, once per process; NULL when one thread is wanted or
    the library cannot be built (with one warning).  An unsafe cache entry
    raises :class:`~nbgraph.linkers.c.cache.CacheSecurityError`, as a module's.
    """
    table = _state["table"]
    if table is not None:
        return table
    from nbgraph.linkers.c.cache import CacheSecurityError, get_ffi

    ffi = get_ffi()
    if get_num_threads() <= 1 or _state["failed"]:
        return ffi.NULL
    with _lock:
        if _state["table"] is None and not _state["failed"]:
            cache.ensure_directory()  # an unsafe directory raises, as for a module
            try:
                lib = cache.get_runtime(RUNTIME_SOURCE, info, RUNTIME_FLAGS)
                if lib.nbg_rt_version() != RUNTIME_VERSION:
                    raise OSError("the runtime library has version %d, expected %d" % (
                        lib.nbg_rt_version(), RUNTIME_VERSION))
                lib.nbg_rt_configure(get_num_threads(), SPIN_NS)
                _state["lib"] = lib
                _state["table"] = lib.nbg_rt_get()
            except CacheSecurityError:
                raise
            except Exception as exc:  # noqa: BLE001 - any other failure means "serial"
                _state["failed"] = True
                warnings.warn("nbgraph: the thread-pool runtime is unavailable, C loops run "
                              "on one thread: %s" % (exc,), RuntimeWarning, stacklevel=2)
                return ffi.NULL
    return _state["table"]
