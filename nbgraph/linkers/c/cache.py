"""The module cache: compiled C modules in memory and on disk.

On disk, the directory ``config.cache_dir`` (``NBGRAPH_CACHE_DIR``) holds

``<key>.so``
    a compiled module; ``key`` is a hash of the module's C source, the
    compiler's version, the flags and :data:`~nbgraph.linkers.c.compiler.ABI_VERSION`;
``<key>.meta``
    its sidecar: size and SHA-256 of the library, checked before loading;
``runtime-<key>.so`` / ``.meta``
    the thread-pool runtime library (:mod:`~nbgraph.linkers.c.threads`),
    built and checked like a module; every module loaded is bound to it;
``runtime-key.memo`` / ``nbg-fastcall-key.memo``
    the runtime library's and the call-path extension's keys, remembered under
    a digest of what they depend on (:func:`~nbgraph.linkers.c.threads.remembered_key`:
    a fresh process does not read and hash their sources to find them);
``probe-<id>.rec``
    what the compiler probe found for one compiler on one CPU;
``function-<key>.rec``
    a compiled function's rewritten graph and module plan
    (:mod:`nbgraph.linkers.function_cache`);
``.build-<pid>-*`` / ``.tmp-<pid>-*``
    a build or a write in progress of process ``pid``.

Rules:

* **Trust.**  The directory is created private (0700).  nbgraph refuses, with
  :class:`CacheSecurityError` (an error, not a warning: compiled code is
  loaded from there, and silently building elsewhere would hide the
  problem), to use a directory that another user owns or that its group or
  other users may write, a directory reached through a symbolic link that
  another user (not root) owns, and to read a library, sidecar or record that
  another user owns, that others may write, or that is a symbolic link.  The
  message names the path and the fix.
* **Publication is atomic.**  A library is built in a private temporary
  directory (``.build-<pid>-*``), loaded from there by the process that built
  it, then published with ``os.rename`` (atomic: a reader sees no file or a
  whole file), sidecar first.  An existing, valid library is never replaced,
  and no file is ever written in place, so a library that some process has
  loaded is never modified (rewriting a loaded ``.so`` crashes that process).
* **Races.**  Several processes building the same module at once all succeed:
  each loads its own build and the last rename leaves one library (builds are
  byte-identical).
* **Verification.**  A library whose size or SHA-256 disagrees with its
  sidecar (damaged, replaced after its sidecar was written, half evicted), or
  that fails to load, is rebuilt and republished, never loaded.
* **Killed processes.**  A process killed during a build leaves only its
  ``.build-<pid>-*`` directory, which no reader ever looks into; the next
  build in the directory, ``python -m nbgraph cache prune`` and ``cache clear``
  remove it once process ``pid`` is gone (:mod:`~nbgraph.linkers.c.cache_limit`).
  ``cache clear`` leaves builds of live processes alone.
* **A directory that cannot be written** (read-only, not creatable, on a full
  disk) is not an error: what it holds is still loaded, and new modules are
  built in a private temporary directory outside it, loaded from there and
  not kept for other processes, with one :class:`CacheUnwritableWarning` per
  process and directory.  When the private build cannot be written either
  (a file-size limit, ``ulimit -f``, applies to every file), the build fails
  with :class:`CacheWriteError`, naming the paths and the reason.
"""

import itertools
import os
import stat
import threading

from nbgraph.linkers.c import cache_limit
from nbgraph.linkers.c import compiler as _compiler
from nbgraph.linkers.c import fastcall
from nbgraph.linkers.c.compiler import RuntimeMissing, check_opened, sha256
from nbgraph.linkers.c.publish import (
    CacheSecurityError,
    CacheUnwritableWarning,
    CacheWriteError,
    Publisher,
    dump_record,
    load_record,
    write_problem,
)
from nbgraph.linkers.c.recent import RecentModules

__all__ = ["dump_record", "load_record", "ModuleCache", "CacheSecurityError", "CacheWriteError",
           "CacheUnwritableWarning", "LoadedModule", "get_cache", "cache_info", "clear_cache",
           "STATS", "RuntimeMissing", "get_ffi", "write_problem"]

#: Counters for tests and diagnostics: compiles, disk loads, memory hits.
STATS = {"compiles": 0, "disk_loads": 0, "memory_hits": 0, "rebuilt_corrupt": 0,
         "runtime_builds": 0, "runtime_loads": 0}

def get_ffi():
    """The process-wide cffi FFI (:func:`nbgraph.linkers.c.cdef.get_ffi`, imported on use)."""
    from nbgraph.linkers.c import cdef

    return cdef.get_ffi()


class LoadedModule:
    """A loaded C module: ``kernels[i]`` is the i-th kernel (a cffi function pointer;
    ``addresses[i]`` its address), ``freefns[j]`` the j-th free function; ``path``,
    ``key``.  ``runtime`` (the runtime's table: a cffi pointer or an address; NULL or
    None: standalone, serial) is bound at once, before any kernel can run.
    (:class:`~nbgraph.linkers.c.fastcall.NativeModule`: opened without cffi.)"""

    def __init__(self, lib, key, path, runtime=None):
        ffi = get_ffi()
        self.lib = lib
        self.key = key
        self.path = path
        if isinstance(runtime, int):  # (the table of a runtime the extension opened)
            runtime = ffi.cast("void *", runtime)
        given = runtime is not None and runtime != ffi.NULL
        abi = lib.nbg_abi()  # (bound only when it speaks our ABI, as NativeModule is)
        status = (lib.nbg_attach_runtime(runtime if given else ffi.NULL)
                  if abi == _compiler.ABI_VERSION else -1)
        check_opened(path, abi, status, given)
        self.bound = given
        self.kernels = [lib.nbg_kernel_at(i) for i in range(lib.nbg_nkernels())]
        self.freefns = [lib.nbg_freefn_at(i) for i in range(lib.nbg_nfreefns())]
        self.ffi = ffi
        self.addresses = [int(ffi.cast("uintptr_t", k)) for k in self.kernels]

    @property
    def parallel(self):
        """Whether its big loops may use several threads (bound to the runtime,
        and more than one thread wanted)."""
        from nbgraph.linkers.c import threads

        return self.bound and threads.get_num_threads() > 1

    def __repr__(self):
        return "<LoadedModule %s: %d kernels>" % (self.key[:12], len(self.kernels))


def _owner_problem(st, path, what):
    if st.st_uid != os.getuid():
        return "%s %s belongs to user id %d, not to you (id %d)" % (
            what, path, st.st_uid, os.getuid())
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "%s %s can be written by %s (mode %o)" % (
            what, path, "other users" if st.st_mode & stat.S_IWOTH else "its group",
            stat.S_IMODE(st.st_mode))
    return None


class ModuleCache(Publisher):
    """Compiled modules for one cache directory."""

    #: Loaded modules kept alive by the cache itself (most recently used); the
    #: others stay in memory only while a program uses them, so a session of many
    #: distinct graphs does not keep every library it ever loaded mapped.
    RECENT = 32

    def __init__(self, directory):
        self.directory = os.path.abspath(os.fspath(directory))
        self._memory = RecentModules(self.RECENT)
        self._lock = threading.Lock()
        self._building = {}
        self._unwritable = None  # why the directory cannot be written, once known
        self._warned = False
        self._swept = False  # the system's temporary directory, of dead private builds

    # -- the directory ----------------------------------------------------
    def ensure_directory(self) -> str | None:
        """Create the directory (0700) if needed and check that it is private.

        Returns the directory, or None when it does not exist and cannot be
        created (read-only parent, full disk: modules are then built privately,
        see :meth:`build_and_publish`); raises :class:`CacheSecurityError` when
        it is not safe to use."""
        d = self.directory
        self._check_links(d)
        if not os.path.isdir(d):
            if self._unwritable is not None and not os.path.lexists(d):
                return None
            try:
                os.makedirs(d, mode=0o700, exist_ok=True)
            except OSError as exc:
                if write_problem(exc) is None:
                    raise OSError(exc.errno, "cannot create the nbgraph cache directory %s: %s"
                                  % (d, exc.strerror or exc), d) from None
                self._unwritable = "it cannot be created: %s" % write_problem(exc)
                return None
            self._check_links(d)
        st = os.stat(d)
        if not stat.S_ISDIR(st.st_mode):
            raise CacheSecurityError("the nbgraph cache path %s is not a directory" % d)
        problem = _owner_problem(st, d, "the nbgraph cache directory")
        if problem:
            raise CacheSecurityError(
                "%s; nbgraph loads compiled code from there, so it refuses to use it. "
                "Fix: chmod 700 %s, or point NBGRAPH_CACHE_DIR at a private directory"
                % (problem, d))
        return d

    @staticmethod
    def _check_links(d):
        """Refuse a path that goes through a symbolic link another user (not root)
        owns: its owner could point it at a directory of their choosing."""
        prefix = os.sep
        for part in d.split(os.sep):
            if not part:
                continue
            prefix = os.path.join(prefix, part)
            try:
                st = os.lstat(prefix)
            except OSError:
                return
            if stat.S_ISLNK(st.st_mode) and st.st_uid not in (os.getuid(), 0):
                try:
                    target = os.path.realpath(prefix)
                except OSError:  # pragma: no cover - a loop
                    target = "?"
                raise CacheSecurityError(
                    "the nbgraph cache directory %s is reached through the symbolic link %s, "
                    "which belongs to user id %d, not to you (id %d) nor to root; its owner "
                    "can point it anywhere, and nbgraph loads compiled code from there, so it "
                    "refuses to use it. Fix: point NBGRAPH_CACHE_DIR at a private directory "
                    "(the link leads to %s now)" % (d, prefix, st.st_uid, os.getuid(), target))

    def check_file(self, path, what="cache file"):
        """lstat ``path``: None if missing; raises if it is unsafe to read."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise CacheSecurityError("the nbgraph %s %s is not a regular file (symbolic "
                                     "links are refused)" % (what, path))
        problem = _owner_problem(st, path, "the nbgraph " + what)
        if problem:
            raise CacheSecurityError("%s; nbgraph refuses to load it. Remove it (python -m "
                                     "nbgraph cache clear) or fix its permissions" % problem)
        return st

    # -- compiler probe records -------------------------------------------
    def read_record(self, name, what="compiler probe record"):
        """The record ``probe-<name>.rec`` stored in the directory (as
        :meth:`write_probe` keeps it), or None when it is missing, unreadable or
        unsafe (``what`` names it in the warning)."""
        if self.ensure_directory() is None:
            return None
        path = os.path.join(self.directory, "probe-%s.rec" % name)
        if self.check_file(path, what) is None:
            return None
        try:
            with open(path, "rb") as f:
                return load_record(f.read())
        except OSError:
            return None

    def read_probe(self, pid):
        """The compiler probe record ``pid`` stored in the directory, or None."""
        record = self.read_record(pid)
        if record is None or record.get("abi") != _compiler.ABI_VERSION:
            return None
        try:
            if not (isinstance(record["version"], str) and isinstance(record["mvec"], bool)
                    and all(isinstance(w, str) for w in record["argv"] + record["flags"]
                            + record["libs"])):
                return None
        except (KeyError, TypeError):
            return None
        return record

    def write_probe(self, pid, record):
        """Keep a compiler probe record for the next processes (if the directory
        can be written: a record only saves time)."""
        if self.ensure_directory() is None:
            return
        try:
            self._write_atomic(os.path.join(self.directory, "probe-%s.rec" % pid),
                               dump_record(record))
        except OSError as exc:
            if write_problem(exc) is None:
                raise

    def _write_atomic(self, path, data):
        write_atomic(self.directory, path, data)

    # -- modules -----------------------------------------------------------
    def module_key(self, source, info):
        h = sha256()
        h.update(source.encode())
        h.update(b"\0")
        h.update(info.key_text().encode())
        return h.hexdigest()[:40]

    def get(self, source, info):
        """The :class:`LoadedModule` for ``source``: from memory, disk, or a new build
        (standalone, when the runtime library it needs turns out to be unavailable:
        see :func:`nbgraph.linkers.c.threads.standalone`)."""
        key = self.module_key(source, info)
        found = self.lookup(source, info, key)
        if found is not None:
            return found
        try:
            return self._get_built(key, source, info, (), self._module_loader(info),
                                   lambda: self._find_published(key, info))
        except RuntimeMissing:
            from nbgraph.linkers.c import codegen

            alone = codegen.as_standalone(source, info)
            if alone == source:
                raise
            return self.get(alone, info)

    def lookup(self, source, info, key=None):
        """The module for ``source`` if it is loaded or published (never compiles a
        module; may build the small thread-pool runtime once), else None."""
        key = key or self.module_key(source, info)
        found = self._memory.get(key)
        if found is not None:
            STATS["memory_hits"] += 1
            return found
        return self._find_published(key, info)

    def _find_published(self, key, info):
        """The published module ``key``, loaded and bound to the runtime, or None
        (raises :class:`~nbgraph.linkers.c.compiler.ProbeMismatch` when it was
        looked up with compiler flags the probe, still running, then refused)."""
        if self.ensure_directory() is None or not os.path.exists(self._paths(key)[0]):
            return None
        _compiler.confirm(info, self)
        from nbgraph.linkers.c import threads

        runtime = threads.runtime_table(self, info)  # outside our lock: it may build

        def load(lib, key, path):
            return LoadedModule(lib, key, path, runtime)

        load.native = lambda ext, key, path: fastcall.NativeModule(  # type: ignore[attr-defined]
            ext, key, path, runtime)
        return self._lookup_published(key, load)

    def runtime_key(self, source, info, flags):
        """The cache key of the runtime library built from ``source`` with ``flags``."""
        return "runtime-" + self.module_key(source + "\0" + " ".join(flags), info)

    def get_runtime(self, source, info, flags, check=None, key=None):
        """The thread-pool runtime library (a cffi lib) built from ``source`` with
        the extra ``flags``: from memory, disk, or a new build.  ``check(path)``,
        when given, must say True of a library before this process runs any of
        its code (the compiler probe's test, run in a child process).  ``source``
        may be a function returning the text, called only when ``key`` (its
        :meth:`runtime_key`, if known) is not given or the library must be built."""
        if key is None:
            source = source() if callable(source) else source
            key = self.runtime_key(source, info, flags)
        loader = _runtime_loader
        if check is not None:
            def loader(lib, key, path):
                if not check(path):
                    raise OSError("the runtime library %s does not load and run" % path)
                return _runtime_loader(lib, key, path)
        found = self._memory.get(key) or self._lookup_published(key, loader)
        if found is not None:
            return found
        if callable(source):
            source = source()
        return self._get_built(key, source, info, flags, loader)

    def _module_loader(self, info):
        from nbgraph.linkers.c import threads

        def load(lib, key, path):
            # a new build: waits for the compiler probe when the module was
            # generated while it ran (no code of the module runs before), then
            # for the runtime a prefetch may be building (never called under
            # self._lock, which that build takes)
            _compiler.confirm(info, self)
            return LoadedModule(lib, key, path, threads.runtime_table(self, info))
        return load

    def _lookup_published(self, key, loader):
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                STATS["memory_hits"] += 1
                return found
            if self.ensure_directory() is None:
                return None
            found = self._load_published(key, loader)
            if found is not None:
                self._memory[key] = found
            return found

    def _get_built(self, key, source, info, flags, loader, find=None):
        with self._build_lock(key):
            found = find() if find is not None else self._lookup_published(key, loader)
            if found is not None:
                return found
            found = self._build(key, source, info, flags, loader)
            self._memory[key] = found
        if self._unwritable is None:  # within NBGRAPH_CACHE_MAX_MB (least recently used
            cache_limit.prune_after_build(self.directory)  # out), on a thread
        return found

    def _build_lock(self, key):
        with self._lock:
            lock = self._building.get(key)
            if lock is None:
                lock = self._building[key] = threading.Lock()
        return lock

    def _paths(self, key):
        return (os.path.join(self.directory, key + ".so"),
                os.path.join(self.directory, key + ".meta"))

    def _verified(self, key):
        """True when ``<key>.so`` exists and matches its sidecar (raises if unsafe)."""
        return self.verify_library(*self._paths(key))

    def verify_library(self, so_path, meta_path, what="compiled module"):
        """True when the library at ``so_path`` exists and matches the size and
        SHA-256 its sidecar ``meta_path`` records (raises CacheSecurityError if
        either file is unsafe)."""
        st = self.check_file(so_path, what)
        if st is None:
            return False
        if self.check_file(meta_path, what + " sidecar") is None:
            return False
        try:
            with open(meta_path, "rb") as f:
                meta = load_record(f.read())
            with open(so_path, "rb") as f:
                data = f.read()
        except OSError:
            return False
        return (isinstance(meta, dict) and meta.get("size") == len(data) == st.st_size
                and meta.get("sha256") == sha256(data).hexdigest())

    def _load_published(self, key, loader):
        so_path, _ = self._paths(key)
        if not os.path.exists(so_path):
            return None
        if not self._verified(key):
            STATS["rebuilt_corrupt"] += 1
            return None
        try:
            native = getattr(loader, "native", None)
            ext = fastcall.loaded() if native is not None else None
            if ext is not None:  # opened by the call-path extension: no cffi
                found = native(ext, key, so_path)
            else:
                found = loader(get_ffi().dlopen(so_path), key, so_path)
        except RuntimeMissing:
            return None  # usable only with the runtime: get() builds a standalone twin
        except (OSError, AttributeError):
            STATS["rebuilt_corrupt"] += 1
            return None
        STATS["runtime_loads" if key.startswith("runtime-") else "disk_loads"] += 1
        cache_limit.mark_used(self._paths(key)[1])
        return found

    def _build(self, key, source, info, flags, loader):
        def compile_into(workdir):
            src = os.path.join(workdir, "nbg_%s.c" % key)
            out = os.path.join(workdir, "nbg_%s.so" % key)
            try:
                _compiler.build_library(info, source, src, out, flags)
            except _compiler.CompileError as exc:
                exc.source = source
                raise
            return out

        def load(path):
            return loader(get_ffi().dlopen(path), key, path)

        so_path, meta_path = self._paths(key)
        found, path = self.build_and_publish(
            so_path, meta_path, compile_into, load,
            {"abi": _compiler.ABI_VERSION, "compiler": info.version})
        STATS["runtime_builds" if flags else "compiles"] += 1
        if isinstance(found, LoadedModule):
            found.path = path
        return found

    # -- maintenance ---------------------------------------------------------
    def entries(self):
        """[(key, size in bytes)] of the compiled modules on disk (not the thread-pool
        runtime or the call-path extension, which live beside them)."""
        out = []
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return out
        for name in sorted(names):
            if name.endswith(".so") and not name.startswith((".", "runtime-", "nbg-fastcall-")):
                try:
                    out.append((name[:-3], os.path.getsize(os.path.join(self.directory, name))))
                except OSError:
                    pass
        return out

    def info(self):
        """A dict: directory, entries, total bytes (all files), probe records, temporaries."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            names = []
        probes = sum(name.startswith("probe-") for name in names)
        temps = sum(name.startswith(".") for name in names)
        total = cache_limit.usage(self.directory)
        return {"directory": self.directory, "exists": os.path.isdir(self.directory),
                "entries": len(self.entries()), "bytes": total, "probe_records": probes,
                "temporaries": temps, "loaded_this_process": len(self._memory),
                "limit": cache_limit.limit_bytes()}

    def prune(self, limit=None):
        """Evict least recently used modules down to ``limit`` bytes (default
        ``NBGRAPH_CACHE_MAX_MB``) and remove leftovers of killed builds; see
        :mod:`~nbgraph.linkers.c.cache_limit`."""
        if os.path.isdir(self.directory):
            self.ensure_directory()
        return cache_limit.prune(self.directory, limit)

    def clear(self):
        """Remove every cached file (loaded libraries stay valid in running processes:
        their files are unlinked, never rewritten) and the leftovers of dead
        processes' builds; a build in progress is left to its process, which
        finishes, publishes and removes it.  Returns the number removed."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return 0
        self.ensure_directory()
        removed = cache_limit.remove_stale_temporaries(self.directory)
        for name in names:
            if name.startswith(".") or not name.endswith((".so", ".o", ".meta", ".rec", ".json")):
                continue
            if _unlink(os.path.join(self.directory, name)):
                removed += 1
        return removed


def _runtime_loader(lib, key, path):
    lib.nbg_rt_version()  # AttributeError (a corrupt entry) unless it is the runtime
    return lib


# a runtime the call-path extension opens (no cffi), when this process has it loaded
_runtime_loader.native = lambda ext, key, path: fastcall.NativeRuntime(  # type: ignore[attr-defined]
    ext, path)


_TMP_COUNTER = itertools.count()


def write_atomic(directory, path, data):
    """Write ``data`` to ``path`` atomically: into a private (0600) temporary file
    ``.tmp-<pid>-<n>`` of ``directory`` (the name :mod:`cache_limit` removes when
    its process is gone), then renamed over ``path``; raises OSError."""
    tmp = os.path.join(directory, ".tmp-%d-w%d" % (os.getpid(), next(_TMP_COUNTER)))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path):
    """Remove ``path``; True when it was removed."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


_caches = {}


def get_cache(directory=None):
    """The :class:`ModuleCache` of ``directory`` (default: ``config.cache_dir``)."""
    if directory is None:
        from nbgraph.config import config

        directory = config.cache_dir
    key = os.path.abspath(os.fspath(directory))
    cache = _caches.get(key)
    if cache is None:
        cache = _caches[key] = ModuleCache(key)
    return cache


def cache_info(directory=None):
    return get_cache(directory).info()


def clear_cache(directory=None):
    return get_cache(directory).clear()
