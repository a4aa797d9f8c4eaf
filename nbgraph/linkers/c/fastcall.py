"""Building and loading ``_fastcall``, the small CPython extension that calls kernels.

:func:`get` returns the extension module (``Kernel`` is its one type, see
``_fastcall.c``), compiling it on first use with the probed compiler and
Python's and NumPy's headers; or None when it cannot be had (no headers, a
compile error, ``NBGRAPH_C_FASTCALL=0``), and the cffi path is used instead.

The library is cached beside the compiled modules (same directory, same
safety checks): ``nbg-fastcall-<key>.so`` and its sidecar ``.meta`` (size
and SHA-256, checked before loading), where ``key`` hashes the C source,
the Python version and ABI, NumPy's version and the compiler.  It is built
in a private temporary directory, loaded from there, and published by an
atomic rename; a file that fails its check is rebuilt, never loaded.
"""

import os
import sys
import threading
import weakref

from nbgraph.config import env_switch
from nbgraph.linkers.c import compiler as _compiler
from nbgraph.linkers.c.build_threads import forget_thread_in_child


__all__ = ["get", "get_now", "native", "loaded", "pending", "Upgrade", "prefetch", "ENABLED",
           "FastcallUnavailable", "NativeModule", "NativeRuntime"]

#: False (or ``NBGRAPH_C_FASTCALL=0``): never use the extension.
ENABLED = env_switch("NBGRAPH_C_FASTCALL")

#: The extension's version this Python side expects (``_fastcall.VERSION``).
VERSION = 2

_NAME = "nbgraph.linkers.c._fastcall"

_lock = threading.Lock()
_state = {"module": None, "failed": None, "thread": None, "atexit": False}

#: Counters for tests: builds and loads from disk in this process.
STATS = {"builds": 0, "disk_loads": 0, "rebuilt_corrupt": 0}


class FastcallUnavailable(RuntimeError):
    """The extension cannot be built or loaded here."""


def get():
    """The ``_fastcall`` module (built and cached on first use), or None."""
    module = _state["module"]
    if module is not None:
        return module
    if not ENABLED:
        return None
    with _lock:  # waits for a build prefetch() started
        if _state["module"] is None and _state["failed"] is None:
            _obtain()
        return _state["module"]


def get_now():
    """The ``_fastcall`` module if it is loaded or published (loaded from disk at
    once), else None; a build it would need is started on a thread
    (:func:`prefetch`), so a first use does not wait ~0.5 s for it: programs
    linked meanwhile call kernels through cffi and switch to the extension
    when it is in (:class:`Upgrade`)."""
    module = native()
    if module is None and ENABLED and _state["failed"] is None:
        prefetch()
    return module


def native():
    """The ``_fastcall`` module if it is loaded or published (loaded from disk at
    once), else None; never starts a build.  A function-cache hit asks first: the
    extension then also opens its module and the runtime library
    (``load_module``/``load_runtime``), so such a process never imports cffi."""
    module = _state["module"]
    if module is not None or not ENABLED or _state["failed"] is not None:
        return module
    if _state["thread"] is None and _lock.acquire(blocking=False):
        try:
            if _state["module"] is None and _state["failed"] is None:
                _state["module"] = load_published()
        except Exception as exc:  # noqa: BLE001 - an unsafe directory, ...: as get()
            _state["failed"] = exc
        finally:
            _lock.release()
    return _state["module"]


def loaded():
    """The ``_fastcall`` module if this process has loaded it, else None (never
    loads or builds anything)."""
    return _state["module"]


class NativeModule:
    """A compiled module opened by the extension (``load_module``: dlopen, ABI check,
    binding to the runtime table, kernel addresses), so a function-cache hit
    imports no cffi: :class:`~nbgraph.linkers.c.cache.LoadedModule`'s interface,
    whose cffi objects (``lib``, ``ffi``, ``kernels``, ``freefns``: the fallback
    paths') are made on first use, by opening the same library with cffi."""

    def __init__(self, ext, key, path, runtime=None):
        self.key, self.path = key, path
        address = _address(runtime)
        handle, abi, status, addresses, freefns = ext.load_module(path, _compiler.ABI_VERSION,
                                                                  address)
        # closed once unused, as cffi closes its libraries (not at exit: a daemon
        # thread may still run its kernels)
        weakref.finalize(self, ext.close_library, handle).atexit = False
        _compiler.check_opened(path, abi, status, bool(address))
        self.bound = bool(address)
        self.addresses = list(addresses)
        self._cffi = None

    def _opened(self):
        if self._cffi is None:
            from nbgraph.linkers.c.cache import get_ffi

            ffi = get_ffi()
            lib = ffi.dlopen(self.path)  # (the loaded library again: already bound)
            self._cffi = (lib, ffi, [lib.nbg_kernel_at(i) for i in range(lib.nbg_nkernels())],
                          [lib.nbg_freefn_at(i) for i in range(lib.nbg_nfreefns())])
        return self._cffi

    lib = property(lambda self: self._opened()[0])
    ffi = property(lambda self: self._opened()[1])
    kernels = property(lambda self: self._opened()[2])
    freefns = property(lambda self: self._opened()[3])

    @property
    def parallel(self):
        """Whether its big loops may use several threads (see LoadedModule)."""
        from nbgraph.linkers.c import threads

        return self.bound and threads.get_num_threads() > 1

    def __repr__(self):
        return "<NativeModule %s: %d kernels>" % (self.key[:12], len(self.addresses))


class NativeRuntime:
    """The thread runtime library opened by the extension (``load_runtime``): the
    calls :func:`~nbgraph.linkers.c.threads.runtime_table` makes; its table is an
    address (:class:`NativeModule` and the cffi modules both take it)."""

    def __init__(self, ext, path):
        self._ext = ext
        self.handle, self._version, self._table = ext.load_runtime(path)

    def nbg_rt_version(self):
        return self._version

    def nbg_rt_get(self):
        return self._table

    def nbg_rt_configure(self, nthreads, spin_ns):
        return self._ext.configure_runtime(self.handle, nthreads, spin_ns)


def _address(runtime):
    """The runtime table ``runtime`` (None, an address or a cffi pointer) as an int."""
    if runtime is None or isinstance(runtime, int):
        return runtime or 0
    from nbgraph.linkers.c.cache import get_ffi

    return int(get_ffi().cast("uintptr_t", runtime))


def pending():
    """True while the extension is being built on a thread."""
    return _state["thread"] is not None


class Upgrade:
    """Stands for a program's pending switch to the extension (a CProgram's job):
    ``ready()`` once the build thread is done, ``wait(timeout)`` for it."""

    error = None

    def __init__(self, module):
        self.module = module  # the program's LoadedModule, installed again
        self.pid = os.getpid()

    def ready(self):
        return not pending()

    def wait(self, timeout=None):
        thread = _state["thread"]
        if thread is not None:
            thread.join(timeout)
        return self.ready()


def prefetch():
    """Start building the extension on a thread if it is not loaded or on disk yet
    (called when a module compiles in the background, so both build at once)."""
    if not ENABLED or _state["module"] is not None or _state["thread"] is not None:
        return
    with _lock:
        if _state["module"] is not None or _state["failed"] is not None \
                or _state["thread"] is not None:
            return
        thread = threading.Thread(target=_get_in_thread, name="nbgraph-fastcall", daemon=True)
        _state["thread"] = thread
        if not _state["atexit"]:
            import atexit

            atexit.register(_join_at_exit)  # no half-built temporary left behind
            _state["atexit"] = True
        thread.start()


def _get_in_thread():
    with _lock:
        try:
            if _state["module"] is None and _state["failed"] is None:
                _obtain()
        finally:
            _state["thread"] = None


def _join_at_exit():
    thread = _state["thread"]
    if thread is not None:
        thread.join(10)


forget_thread_in_child(globals(), "thread")  # a forked child has no such thread


def _obtain():
    """Load or build the module into ``_state`` (called with the lock held)."""
    try:
        _state["module"] = load_or_build()
    except Exception as exc:  # any failure means: use the cffi path
        _state["failed"] = exc
        import logging

        logging.getLogger("nbgraph").debug("nbgraph: the C call path is unavailable, calls "
                                           "use cffi: %s", exc)


def _reset_for_tests():
    """Forget the loaded module and any failure (the next :func:`get` looks again)."""
    with _lock:
        _state.update(module=None, failed=None)


def cache_key(source, info):
    """The hash naming the library: C source, Python version/ABI, NumPy, compiler."""
    import numpy

    h = _compiler.sha256()
    for part in (source, sys.version, sys.implementation.cache_tag or "",
                 getattr(sys, "abiflags", ""), str(sys.maxsize), numpy.__version__,
                 info.key_text()):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:40]


def load_or_build(cache=None):
    """The extension module: from the cache directory, or compiled into it."""
    module = load_published(cache)
    if module is not None:
        return module
    cache, info, key, source = _identity(cache)
    return _build(cache, info, key, source())


#: The file of the cache directory remembering the extension's key (see
#: :func:`nbgraph.linkers.c.threads.remembered_key`), and the files it is made from.
KEY_MEMO = "nbg-fastcall-key.memo"
KEY_FILES = ("linkers/c/csrc/_fastcall.c", "linkers/c/csrc/fastcall_kernel.h",
             "linkers/c/csrc/fastcall_open.h", "linkers/c/fastcall.py", "core/c_interface.py")


def _source():
    """The extension's C source: ``_fastcall.c`` with its two parts filled in."""
    from nbgraph.core.c_interface import c_source, c_template

    return c_template(__package__, "csrc/_fastcall.c",
                      kernel_object=c_source(__package__, "csrc/fastcall_kernel.h"),
                      opening=c_source(__package__, "csrc/fastcall_open.h")).encode()


def _identity(cache):
    """``(cache, compiler info, key, function returning the C source)``: the key is
    remembered in the cache directory (a fresh process does not read and hash
    the source to find the extension on disk)."""
    import numpy

    from nbgraph.linkers.c.cache import get_cache
    from nbgraph.linkers.c.threads import remembered_key

    cache = cache or get_cache()
    info = _compiler.probe(cache)
    parts = [sys.version, sys.implementation.cache_tag or "", getattr(sys, "abiflags", ""),
             str(sys.maxsize), numpy.__version__, info.key_text()]
    key = remembered_key(cache, KEY_MEMO, parts, KEY_FILES,
                         lambda: cache_key(_source(), info))
    return cache, info, key, _source


def load_published(cache=None):
    """The extension module from the cache directory, or None when it is not
    there (or fails its check: then it is rebuilt)."""
    cache, info, key, source = _identity(cache)
    so_path, meta_path = _paths(cache, key)
    if cache.ensure_directory() is not None and os.path.exists(so_path):
        if cache.verify_library(so_path, meta_path, "compiled extension"):
            try:
                module = _load(so_path)
                STATS["disk_loads"] += 1
                return module
            except (ImportError, OSError, FastcallUnavailable):
                pass
        STATS["rebuilt_corrupt"] += 1
    return None


def _paths(cache, key):
    base = os.path.join(cache.directory, "nbg-fastcall-" + key)
    return base + ".so", base + ".meta"


def _load(path):
    from importlib.machinery import ExtensionFileLoader, ModuleSpec

    loader = ExtensionFileLoader(_NAME, path)
    spec = ModuleSpec(_NAME, loader, origin=path)
    module = loader.create_module(spec)
    loader.exec_module(module)
    from nbgraph.linkers.c.threads import ERRLEN

    if getattr(module, "VERSION", None) != VERSION or getattr(module, "ERRLEN", 0) < ERRLEN:
        raise FastcallUnavailable("the extension at %s is not the expected version" % path)
    return module


def _build(cache, info, key, source):
    """Compile in a private temporary directory, load, then publish by rename
    (:meth:`~nbgraph.linkers.c.cache.ModuleCache.build_and_publish`)."""
    import sysconfig

    import numpy

    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise FastcallUnavailable("Python's C headers are not installed (no %s)"
                                  % os.path.join(include, "Python.h"))

    def compile_into(workdir):
        src = os.path.join(workdir, "_fastcall.c")
        out = os.path.join(workdir, "_fastcall.so")
        try:
            with open(src, "wb") as f:
                f.write(source)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = src
            raise
        extra = ["-I" + include, "-I" + numpy.get_include(), "-fno-strict-aliasing"]
        if sys.platform == "darwin":
            extra += ["-undefined", "dynamic_lookup"]
        try:
            _compiler.run_compiler(info.argv + info.flags + extra + ["-o", out, src], src)
        except _compiler.CompileError as exc:
            raise FastcallUnavailable("%s" % exc) from None
        if not os.path.exists(out):
            raise FastcallUnavailable("the C compiler wrote no %s" % out)
        return out

    so_path, meta_path = _paths(cache, key)
    module, _ = cache.build_and_publish(so_path, meta_path, compile_into, _load,
                                        {"compiler": info.version})
    STATS["builds"] += 1
    return module
