"""Keeping the on-disk module cache within ``NBGRAPH_CACHE_MAX_MB``.

Every distinct constant compiles a new module, so without a bound a long
session grows the cache for ever.  The rules:

* **use is recorded cheaply**: loading a module from disk sets the access time
  of its sidecar ``<key>.meta`` to now (a ``stat`` and a ``utime``; contents and
  modification times are never touched); a module's last use is the latest of
  that access time and the files' modification times (publication);
* **least recently used first**: on ``python -m nbgraph cache prune``, and
  after a build when the directory holds more than the limit, modules are
  removed oldest stamp first until it holds at most 90% of it (so that not
  every build prunes); after a build this runs on a thread
  (:func:`prune_after_build`: the new module's first result does not wait
  for it), finished before the process exits;
* **measured by name**: a file of the cache is never rewritten in place (it
  is renamed into place, later unlinked), so a process that measured the
  directory once keeps each name's size: after a build it lists the directory
  and measures only the names it has not seen (one ``lstat`` each; the
  ``.build-*`` temporaries every time), where a ``stat`` of every file took
  tens of milliseconds with a few thousand modules.  What other processes
  publish is new names, so it is counted too.  Every :data:`SWEEP_INTERVAL`
  seconds (and at a process's first build) every file is measured again;
* **safe under concurrent readers**: a module is removed by unlinking its
  library, then its sidecar; nothing is ever truncated or rewritten.  A process
  that has the library loaded keeps it (Linux keeps an unlinked mapping
  alive); one that is just checking it finds it gone or without its sidecar,
  treats it as missing and rebuilds;
* the function cache's records (``function-<key>.rec``, see
  :mod:`nbgraph.linkers.function_cache`) are evicted like modules, by the
  latest of their access and modification times (a record is one file);
* the thread-pool runtime, the call-path extension and probe records are
  small and always kept; so is a module younger than :data:`MIN_AGE` seconds
  (another process may have just published it to use it);
* **leftovers of killed builds** (``.build-<pid>-*`` directories and
  ``.tmp-<pid>-*`` files whose process is gone, or older than
  :data:`STALE_AFTER` seconds) are removed by the same pass; so are the
  ``nbgraph-build-<pid>-*`` directories of dead processes' private builds in
  the system's temporary directory, when a process falls back to one (see
  :mod:`~nbgraph.linkers.c.cache`).

``limit`` 0 means no limit (as ccache's ``max_size = 0``).
"""

from __future__ import annotations

import _thread
import os
import stat
import threading
import time

__all__ = ["mark_used", "limit_bytes", "usage", "prune", "remove_stale_temporaries",
           "prune_if_due", "prune_after_build", "remove_after_build", "wait_pruned",
           "LOW_WATER", "MIN_AGE", "STALE_AFTER", "SWEEP_INTERVAL", "TEMPORARY_PREFIXES",
           "PRIVATE_BUILD_PREFIX"]

#: After pruning, the directory holds at most this share of the limit.
LOW_WATER = 0.9

#: Modules published or used less than this many seconds ago are never evicted.
MIN_AGE = 2.0

#: Temporaries of a process that may still be alive are removed after this long.
STALE_AFTER = 3600.0

#: A process measures every file of a cache directory again after this many
#: seconds at most (in between, only names it has not seen).
SWEEP_INTERVAL = 60.0

#: Files that are never evicted (small, shared by every module).
_KEPT_PREFIXES = ("runtime-", "nbg-fastcall-", "probe-")
_RECORD_PREFIX, _RECORD_SUFFIX = "function-", ".rec"  # nbgraph.linkers.function_cache


def mark_used(meta_path: str) -> None:
    """Record that the module whose sidecar is ``meta_path`` was used now: its
    access time is set (the modification time stays: the files are unchanged)."""
    try:
        st = os.stat(meta_path)
        os.utime(meta_path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:  # a read-only cache, a file removed meanwhile: nothing to record
        pass


def limit_bytes() -> int:
    """The configured limit in bytes (``config.cache_max_mb``; 0: none)."""
    from nbgraph.config import config

    return int(config.cache_max_mb * 1024 * 1024)


def _tree_bytes(directory: str) -> int:
    """Bytes of the files under ``directory`` (one ``lstat`` per file: the
    directory listing says which entries are directories)."""
    total = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        total += _tree_bytes(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:  # removed meanwhile
                    continue
    except OSError:
        return 0
    return total


def _modules(directory: str) -> list[tuple[float, str, int]]:
    """[(last use, key, bytes)] of the evictable entries: modules (library and
    sidecar) and function records (the key is then the record's file name)."""
    out = []
    try:
        names = os.listdir(directory)
    except OSError:
        return out
    for name in names:
        if name.startswith(_RECORD_PREFIX) and name.endswith(_RECORD_SUFFIX):
            entry = _record_entry(directory, name)
        elif name.endswith(".so") and not name.startswith((".",) + _KEPT_PREFIXES):
            entry = _module_entry(directory, name[:-3])
        else:
            continue
        if entry is not None:
            out.append(entry)
    return out


def _module_entry(directory, key):
    try:
        so_st = os.lstat(os.path.join(directory, key + ".so"))
    except OSError:
        return None
    try:
        meta_st = os.lstat(os.path.join(directory, key + ".meta"))
    except OSError:
        return so_st.st_mtime, key, so_st.st_size
    return (max(meta_st.st_atime, meta_st.st_mtime, so_st.st_mtime), key,
            so_st.st_size + meta_st.st_size)


def _record_entry(directory, name):
    try:
        st = os.lstat(os.path.join(directory, name))
    except OSError:
        return None
    return max(st.st_atime, st.st_mtime), name, st.st_size


def _entry_files(key):
    """The files of an evictable entry, the library before its sidecar."""
    if key.startswith(_RECORD_PREFIX) and key.endswith(_RECORD_SUFFIX):
        return (key,)
    return (key + ".so", key + ".meta")


def usage(directory: str) -> int:
    """Bytes the cache directory holds (every file, temporaries included)."""
    return _measure(directory, full=True)


#: directory -> {name: bytes} when this process last listed it
_known: dict[str, dict[str, int]] = {}
#: directory -> when this process last measured every file there
_swept: dict[str, float] = {}
_known_lock = threading.Lock()


def _measure(directory: str, full: bool) -> int:
    """Bytes ``directory`` holds: every entry ``lstat``-ed when ``full``, else
    only names not seen at the last listing, and temporaries (which grow)."""
    where = os.path.abspath(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    with _known_lock:
        old = {} if full else _known.get(where, {})
    sizes = {}
    for name in names:
        size = old.get(name)
        if size is None or name.startswith(TEMPORARY_PREFIXES):
            size = _entry_bytes(os.path.join(directory, name))
        sizes[name] = size
    with _known_lock:
        _known[where] = sizes
    return sum(sizes.values())


def _entry_bytes(path: str) -> int:
    try:
        st = os.lstat(path)
    except OSError:  # removed meanwhile
        return 0
    return _tree_bytes(path) if stat.S_ISDIR(st.st_mode) else st.st_size


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


#: Names of temporaries: ``<prefix><pid>-<random>``.
TEMPORARY_PREFIXES = (".build-", ".tmp-")

#: Private builds outside the cache (when it cannot be written), in the system's
#: temporary directory.
PRIVATE_BUILD_PREFIX = "nbgraph-build-"


def remove_stale_temporaries(directory: str, now: float | None = None,
                             prefixes: tuple[str, ...] = TEMPORARY_PREFIXES) -> int:
    """Remove ``.build-<pid>-*`` / ``.tmp-<pid>-*`` (names starting with one of
    ``prefixes``) left by dead processes, or older than :data:`STALE_AFTER`;
    only this user's.  Returns how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None:
            continue
        path = os.path.join(directory, name)
        try:
            pid = int(name[len(prefix):].split("-")[0])
        except ValueError:
            pid = None  # an older naming: judged by age only
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != os.getuid():
            continue  # another user's (a shared temporary directory)
        age = now - st.st_mtime
        if pid == os.getpid() and age < STALE_AFTER:
            continue  # this process's own build in progress
        if (pid is not None and not _pid_alive(pid)) or age > STALE_AFTER:
            if os.path.isdir(path) and not os.path.islink(path):
                remove_tree(path)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    continue
            removed += 1
    return removed


def prune(directory: str, limit: int | None = None, now: float | None = None) -> dict:
    """Evict least recently used modules until ``directory`` fits ``limit`` bytes
    (default: the configured limit); also removes stale temporaries.

    Returns ``{"removed": modules evicted, "freed": bytes, "bytes": bytes held
    after, "limit": limit, "temporaries": temporaries removed}``.
    """
    limit = limit_bytes() if limit is None else int(limit)
    now = time.time() if now is None else now
    done = _sweep(directory, limit, now)
    with _known_lock:
        _swept[os.path.abspath(directory)] = now
    return done


def _sweep(directory, limit, now):
    temporaries = remove_stale_temporaries(directory, now)
    held = usage(directory)
    removed = freed = 0
    if limit > 0 and held > limit:
        target = int(limit * LOW_WATER)
        for used, key, size in sorted(_modules(directory)):
            if held <= target:
                break
            if now - used < MIN_AGE:
                continue
            # the library first: a reader then finds no library, or one without
            # its sidecar (treated as missing); never a partial file
            for name in _entry_files(key):
                try:
                    os.unlink(os.path.join(directory, name))
                except FileNotFoundError:
                    pass
                except OSError:
                    break
            removed += 1
            freed += size
            held -= size
    return {"removed": removed, "freed": freed, "bytes": held, "limit": limit,
            "temporaries": temporaries}


def prune_if_due(directory: str, limit: int | None = None,
                 now: float | None = None) -> dict | None:
    """After a build: :func:`prune` when ``directory`` holds more than ``limit``
    (measured by name, see the module docstring) or was last measured in full
    :data:`SWEEP_INTERVAL` seconds ago (or never, in this process); else None."""
    limit = limit_bytes() if limit is None else int(limit)
    now = time.time() if now is None else now
    with _known_lock:
        swept = _swept.get(os.path.abspath(directory))
    if swept is None or now - swept >= SWEEP_INTERVAL:
        return prune(directory, limit, now)
    if 0 < limit < _measure(directory, full=False):
        return prune(directory, limit, now)
    return None


_after = {"pending": {}, "remove": [], "thread": None, "atexit": False}
_after_lock = threading.Lock()
_after_idle = threading.Event()
_after_idle.set()


def remove_tree(path: str) -> None:
    """Remove the directory ``path`` and what it holds, ignoring errors (what
    ``shutil.rmtree(path, ignore_errors=True)`` does, without importing shutil
    and its compression modules: ~3 ms of a first use's Python, on the way to
    its first result).  Symbolic links are removed, never followed."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        entries = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def prune_after_build(directory: str) -> None:
    """:func:`prune_if_due` for ``directory`` with the limit of now, on a thread:
    a new module's first result does not wait for the directory listing (~10 ms
    with a few thousand modules).  A process finishes it before exiting
    (:func:`wait_pruned`)."""
    limit = limit_bytes()
    with _after_lock:
        _after["pending"][os.path.abspath(directory)] = limit
        _start_locked()


def remove_after_build(workdir: str) -> None:
    """Remove a finished build's private directory ``workdir`` on the thread of
    :func:`prune_after_build` when called on the main thread (a new module's
    first result does not wait for it: 0.4-8 ms), else at once (a build thread
    is off the critical path, and an exit-time join of it must leave nothing).
    A process finishes it before exiting (:func:`wait_pruned`)."""
    if _thread.get_ident() != threading.main_thread().ident:
        remove_tree(workdir)
        return
    with _after_lock:
        _after["remove"].append(workdir)
        _start_locked()


def _start_locked() -> None:
    """Start the thread that works through ``_after`` unless it runs (with
    ``_after_lock`` held).  A bare ``_thread`` (threading.Thread.start waits
    until the new thread runs: 0.2-2 ms under load)."""
    _after_idle.clear()
    if _after["thread"] is None:
        _after["thread"] = True
        if not _after["atexit"]:
            import atexit

            atexit.register(wait_pruned, 10)
            _after["atexit"] = True
        _thread.start_new_thread(_prune_pending, ())


def _prune_pending() -> None:
    while True:
        with _after_lock:
            workdir = _after["remove"].pop() if _after["remove"] else None
            if workdir is None:
                if not _after["pending"]:
                    _after["thread"] = None
                    _after_idle.set()
                    return
                directory, limit = _after["pending"].popitem()
        if workdir is not None:
            remove_tree(workdir)
            continue
        try:
            prune_if_due(directory, limit)
        except OSError:
            pass


def wait_pruned(timeout: float | None = None) -> bool:
    """Wait for the pruning :func:`prune_after_build` started; False on timeout."""
    return _after_idle.wait(timeout)


def _forget_in_child() -> None:
    global _after_lock, _after_idle
    _after_lock = threading.Lock()
    _after_idle = threading.Event()
    _after_idle.set()
    _after.update(pending={}, remove=[], thread=None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
