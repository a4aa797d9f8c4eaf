"""The runtime library every C module is bound to: the thread pool that big
loops share and the helpers kernels call, in plain C.

The library is built once with the probed compiler, cached on disk beside
the modules (``runtime-<key>.so``, same security rules, see
:mod:`~nbgraph.linkers.c.cache`) and loaded with ``ffi.dlopen``.  It holds a
process-wide pool of ``NBGRAPH_NUM_THREADS - 1`` worker threads (default:
the CPUs this process may use; with one, no worker is ever started); the
calling thread takes part in every job.  Its table (``nbg_rt_get()``) is
handed to each module after loading through the module's
``nbg_attach_runtime``.

The table also holds the helpers of ``csrc/helpers.h`` (messages, shape
checks, the general iterator): compiled here once, they are not compiled
again into every module, which holds only its kernels (a new module's
compile time is what a new graph waits for).  When the runtime cannot be
built, modules are generated *standalone* (:func:`standalone`): they compile
the helpers themselves and run every loop serially.

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

from nbgraph.linkers.c.build_threads import forget_thread_in_child

__all__ = ["RUNTIME_SOURCE", "runtime_source", "RUNTIME_FLAGS", "default_num_threads",
           "get_num_threads", "set_num_threads", "runtime_table", "standalone", "prefetch",
           "must_build", "build_as_probe", "start_early", "loaded", "runtime_key", "KEY_MEMO",
           "remembered_key"]

#: Version of the table layout (``nbg_runtime`` in ``csrc/common.h``).
RUNTIME_VERSION = 6

#: Bytes of the error-message buffer kernels, the runtime and the call path share
#: (``NBG_ERRLEN``; also :data:`nbgraph.linkers.c.codegen.ERRLEN`).
ERRLEN = 512

#: Extra flags for the runtime library (threads; never unloaded; -Og: it is built
#: on a first use, where a first result waits for it, and holds no element loop).
#: -O1 instead of -O2 cut its compile by a third; -Og cuts what -O1 costs by
#: another 35% (then two units: 498 + 377 -> 289 + 275 million compiler
#: instructions, cachegrind on cc1 with this CPU's -march flags), its code being
#: -O1's but for inlining (forced where it matters: NBG_INLINE in csrc/runtime.c)
#: and a few loop and dead-store passes; the per-call check of elementwise loops
#: keeps -O1 (NBG_HOT_HELPER).  A C driver of the rows driver (cachegrind,
#: instructions per call with the row function, -O1 -> this build): 0-d 360 -> 363,
#: 10 contiguous elements 516 -> 519, 400x3 strided rows 11580 -> 11683, the
#: shape checks 250 -> 282.
RUNTIME_FLAGS = ["-pthread", "-Wl,-z,nodelete", "-Og"]

#: How long idle workers spin before sleeping (nanoseconds).
SPIN_NS = 50000

#: The runtime's C text when set (tests replace it); None: ``csrc/runtime.c``.
RUNTIME_SOURCE = None


def runtime_source(info=None):
    """The C source of the runtime library for the compiler ``info``: one
    translation unit (``csrc/runtime.c`` with ``csrc/std_types.h``, ``csrc/common.h``
    and ``csrc/helpers.h``) ending with the compiler probe's test function (with
    vector math when ``info.mvec``: :func:`~nbgraph.linkers.c.compiler.probe_function`)
    and the reductions' driver (``csrc/reduce.h``)."""
    if RUNTIME_SOURCE is not None:
        return RUNTIME_SOURCE
    from nbgraph.core.c_interface import c_source, c_template
    from nbgraph.linkers.c.compiler import probe_function

    return c_template(__package__, "csrc/runtime.c", version=RUNTIME_VERSION, errlen=ERRLEN,
                      std_types=c_source(__package__, "csrc/std_types.h"),
                      common=c_source(__package__, "csrc/common.h"),
                      helpers=c_source(__package__, "csrc/helpers.h"),
                      probe=probe_function(bool(info is not None and info.mvec))) + \
        c_source(__package__, "csrc/reduce.h")


def standalone():
    """True once the runtime library is known to be unavailable in this process:
    new modules then compile the helpers themselves (and run serially)."""
    return _state["failed"]


def default_num_threads():
    """``NBGRAPH_NUM_THREADS`` (an integer >= 1), else the CPUs this process may use."""
    from nbgraph.config import env_num_threads

    n = env_num_threads()
    if n is not None:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_lock = threading.Lock()
_state = {"threads": None, "lib": None, "table": None, "failed": False, "prefetch": None}


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


def prefetch(cache, info):
    """Start loading or building the runtime on a thread, unless it is loaded or
    known to be unavailable (a new module then compiles meanwhile; loading it
    waits for the runtime, see :func:`runtime_table`)."""
    if _state["table"] is not None or _state["failed"] or _state["prefetch"] is not None:
        return
    # a plain thread: threading.Thread.start() waits until the new thread runs
    # (~0.3-0.6 ms of a warm-cache hit's CPU, milliseconds of wall under load);
    # ``done`` is held until it finishes
    import _thread
    import atexit

    done = _thread.allocate_lock()
    done.acquire()
    _state["prefetch"] = done
    atexit.register(_join, done, os.getpid(), 10)  # no half-built temporary left at exit
    _thread.start_new_thread(_prefetch, (cache, info, done))


def _prefetch(cache, info, done=None):
    try:
        runtime_table(cache, info)
    except Exception:  # noqa: BLE001 - the caller's own runtime_table() raises it again
        pass
    finally:
        if done is not None:
            done.release()


def _join(done, pid, timeout):
    """Wait up to ``timeout`` seconds for the prefetch holding ``done`` to finish
    (not in a forked child: the thread is not there, and its copy of ``done`` stays held)."""
    if os.getpid() == pid and done.acquire(timeout=timeout):
        done.release()


forget_thread_in_child(globals(), "prefetch")  # a forked child has no such thread


#: The file of the cache directory remembering the runtime library's key (see
#: :func:`runtime_key`): one line, the digest of what the key depends on, then the key.
KEY_MEMO = "runtime-key.memo"

#: The files (under ``nbgraph/``) :func:`runtime_source` makes the runtime's text
#: from (its C files, and the Python holding the probe function and the template
#: rules): the memo is used only while none of them changed.
KEY_FILES = ("linkers/c/csrc/common.h", "linkers/c/csrc/helpers.h", "linkers/c/csrc/runtime.c",
             "linkers/c/csrc/reduce.h", "linkers/c/csrc/std_types.h", "linkers/c/threads.py",
             "linkers/c/compiler.py", "linkers/c/probe_program.py", "core/c_interface.py")

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runtime_key(cache, info):
    """The cache key of the runtime library for the compiler ``info``.

    Computing it means generating :func:`runtime_source` and hashing it, which
    every fresh process would do only to find a library already on disk; so the
    key is remembered in the cache directory (:data:`KEY_MEMO`) under a digest of
    what it depends on: the table version, :data:`RUNTIME_FLAGS`, the compiler's
    key text, and the size and modification time of each of :data:`KEY_FILES`
    (a few ``stat()`` calls).  Any change there, and the key is computed again."""
    def compute():
        return cache.runtime_key(runtime_source(info), info, RUNTIME_FLAGS)

    if RUNTIME_SOURCE is not None:
        return compute()
    parts = [str(RUNTIME_VERSION), " ".join(RUNTIME_FLAGS), str(int(bool(info.mvec))),
             info.key_text()]
    return remembered_key(cache, KEY_MEMO, parts, KEY_FILES, compute, prefix="runtime-")


def remembered_key(cache, memo, parts, files, compute, prefix=""):
    """A cache key ``compute()`` would return, remembered in the file ``memo`` of
    ``cache``'s directory under a digest of ``parts`` (strings) and of the size
    and modification time of ``files`` (paths under ``nbgraph/``): the key of a
    library whose source is read and hashed only to be found on disk (the
    runtime's, the call-path extension's).  A key read back must start with
    ``prefix`` and be alphanumeric after it, else it is computed again."""
    stamp = _key_stamp(parts, files)
    path = os.path.join(cache.directory, memo)
    if stamp is not None:
        key = _read_memo(cache, path, stamp, prefix)
        if key is not None:
            return key
    key = compute()
    if stamp is not None and cache.ensure_directory() is not None:
        from nbgraph.linkers.c.cache import write_atomic

        try:
            write_atomic(cache.directory, path, ("%s %s\n" % (stamp, key)).encode())
        except OSError:  # (a full or read-only disk: the next process computes it too)
            pass
    return key


def _key_stamp(parts, files):
    """The digest of ``parts`` and of the size and modification time of ``files``,
    or None when one of them cannot be found (the key is then not remembered)."""
    from nbgraph.linkers.c.compiler import sha256

    parts = list(parts)
    for name in files:
        try:
            st = os.stat(os.path.join(_PACKAGE_DIR, name))
        except OSError:
            return None
        parts.append("%s %d %d" % (name, st.st_size, st.st_mtime_ns))
    return sha256("\0".join(parts).encode()).hexdigest()


def _read_memo(cache, path, stamp, prefix):
    """The key the memo at ``path`` holds for ``stamp``, or None."""
    try:
        if cache.check_file(path, "cache key memo") is None:
            return None
        with open(path, "rb") as f:
            text = f.read(200).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    found, _, key = text.strip().partition(" ")
    if found != stamp or not key.startswith(prefix) or not key[len(prefix):].isalnum():
        return None
    return key


def must_build(cache, info):
    """True when this process's runtime library is neither loaded nor on disk in
    ``cache``, or was built by this process (a first use on this machine: it is
    being built, will be, or was just built, by the compiler probe while the
    rewrites ran)."""
    from nbgraph.linkers.c.cache import STATS

    if STATS["runtime_builds"] or not info.confirmed:  # (the probe, running: it builds it)
        return True
    if _state["table"] is not None or _state["failed"]:
        return False
    key = runtime_key(cache, info)
    return not os.path.exists(os.path.join(cache.directory, key + ".so"))


def build_as_probe(cache, info):
    """Build the runtime library with the compiler ``info`` (or find it built),
    check in a child process that it loads and its probe function runs, then
    load it here: the compiler probe's test on a first use (True when it
    passed; see :func:`nbgraph.linkers.c.probe_program.run_probe`).  False for a
    runtime source a test put in place."""
    if RUNTIME_SOURCE is not None:
        return False
    from nbgraph.linkers.c.compiler import loads_and_runs

    cache.ensure_directory()
    cache.get_runtime(runtime_source(info), info, RUNTIME_FLAGS, check=loads_and_runs,
                      key=runtime_key(cache, info))
    return True


def start_early(cache, info):
    """Start compiling the runtime library's units for the compiler ``info`` at
    once, on this thread (:func:`nbgraph.linkers.c.prestart.start`): its build,
    on the compiler probe's thread, then waits for them instead of starting
    them itself after the GIL has let it run.  Any failure is left to that
    build."""
    if RUNTIME_SOURCE is not None or _state["table"] is not None or _state["failed"]:
        return
    try:
        from nbgraph.linkers.c import prestart, support
        from nbgraph.linkers.c.codegen import source_parts

        parts, _ = support.split_objects(source_parts(runtime_source(info)), info,
                                         RUNTIME_FLAGS)
        prestart.start(cache, info.argv + info.flags + RUNTIME_FLAGS, parts,
                       stem="nbg_runtime-early")
    except Exception:  # noqa: BLE001 - the build compiles them itself and reports
        pass


def loaded():
    """True once this process has its runtime library (or knows it has none)."""
    return _state["table"] is not None or _state["failed"]


def runtime_table(cache, info):
    """The runtime's table to bind modules to (a cffi ``void *``, or its address
    when the call-path extension opened the library: see
    :class:`~nbgraph.linkers.c.fastcall.NativeRuntime`), or NULL.

    Loaded, or built, once per process (also for one thread: it holds the
    helpers); NULL when the library cannot be built (with one warning: new
    modules are then standalone, see :func:`standalone`).  An unsafe cache
    entry raises :class:`~nbgraph.linkers.c.cache.CacheSecurityError`, as a
    module's.
    """
    table = _state["table"]
    if table is not None:
        return table
    from nbgraph.linkers.c.cache import CacheSecurityError, get_ffi

    if _state["failed"]:
        return get_ffi().NULL
    with _lock:
        if _state["table"] is None and not _state["failed"]:
            cache.ensure_directory()  # an unsafe directory raises, as for a module
            try:
                lib = cache.get_runtime(lambda: runtime_source(info), info, RUNTIME_FLAGS,
                                        key=runtime_key(cache, info))
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
                              "on one thread (modules compile its helpers themselves): %s"
                              % (exc,), RuntimeWarning, stacklevel=2)
                return get_ffi().NULL
    return _state["table"]
