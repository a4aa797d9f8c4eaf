"""Building a native library and publishing it in the cache directory.

:class:`Publisher` is the part of :class:`~nbgraph.linkers.c.cache.ModuleCache`
that writes: one build-and-publish routine for the kernel modules, the
runtime library and the call-path extension (private build directory,
load from there, atomic rename, sidecar first), and the fallback to private
builds where the directory cannot be written.  The rules are in
:mod:`nbgraph.linkers.c.cache`'s docstring.  Also the sidecar/probe record
format (:func:`dump_record`) and the errors of a full or read-only disk.
"""

import errno
import marshal
import os
import warnings
from collections.abc import Callable
from typing import Any

from nbgraph.linkers.c import cache_limit
from nbgraph.linkers.c.compiler import sha256

__all__ = ["dump_record", "load_record", "CacheSecurityError", "CacheWriteError",
           "CacheUnwritableWarning", "write_problem", "Publisher", "private_directory"]


def dump_record(record):
    """The bytes stored for a small record (a dict of str, int, bool and lists of
    str): a sidecar or a compiler probe.  marshal is built in, so a fresh
    process reads its warm cache without importing json (~2 ms); the files are
    only ever read from the private cache directory they were written to."""
    return marshal.dumps(record)


def load_record(data):
    """The dict :func:`dump_record` stored, or None for damaged bytes."""
    try:
        record = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return record if isinstance(record, dict) else None


class CacheSecurityError(PermissionError):
    """The cache directory or a file in it may be written by another user."""


class CacheWriteError(OSError):
    """A compiled library could not be written, in the cache directory nor in a
    private temporary one (a full disk, a file-size limit)."""


class CacheUnwritableWarning(RuntimeWarning):
    """The cache directory cannot be written: this process builds its modules in
    private temporary directories (issued once per process and directory)."""


#: errno values saying "this directory cannot be written" (for good) ...
_READ_ONLY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: ... and "there is no room" (perhaps for a while)
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: what a compiler says when it could not write its output
_NO_ROOM_TEXTS = tuple(os.strerror(e) for e in sorted(_NO_ROOM | {errno.EROFS})) + (
    "File size limit exceeded", "SIGXFSZ")


def write_problem(exc: BaseException, workdir: str | None = None) -> str | None:
    """A short text when ``exc`` means "a file could not be written here" (no room,
    a file-size limit, a read-only or forbidden directory), else None; ``workdir``:
    where a compiler that failed so was writing."""
    if isinstance(exc, CacheSecurityError):
        return None
    if isinstance(exc, OSError) and exc.errno in (_READ_ONLY | _NO_ROOM):
        text = exc.strerror or os.strerror(exc.errno)
        return "%s: %s" % (text, exc.filename) if exc.filename else text
    message = str(exc)
    for text in _NO_ROOM_TEXTS:
        if text in message:
            return "the C compiler: %s%s" % (text, " writing in %s" % workdir if workdir else "")
    return None


def _fsize_note():
    """What the file-size limit is, when one is set."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return ""
    if soft == resource.RLIM_INFINITY:
        return ""
    return "; this process's file size limit (RLIMIT_FSIZE, ulimit -f) is %d bytes" % soft


def private_directory(parent: str, prefix: str) -> str:
    """A new directory ``<parent>/<prefix><random>``, mode 0700 (what
    ``tempfile.mkdtemp`` makes, without importing tempfile and shutil: ~4 ms
    of a first use's Python, on the way to its first result)."""
    for _ in range(100):
        path = os.path.join(parent, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return os.path.abspath(path)
    raise FileExistsError(errno.EEXIST, "no unused name for a new directory", parent)


class Publisher:
    """The writing half of a module cache (a mixin of
    :class:`~nbgraph.linkers.c.cache.ModuleCache`, which provides ``directory``,
    ``ensure_directory``, ``verify_library`` and the state it reads)."""

    directory: str
    _unwritable: Any
    _warned: bool
    _swept: bool

    def _fall_back(self, why, sticky):
        """Note that the directory cannot be written (``why``); warn once."""
        with self._lock:
            if sticky:
                self._unwritable = why
            if self._warned:
                return
            self._warned = True
        warnings.warn("nbgraph: the C module cache directory %s cannot be written (%s); this "
                      "process builds its modules in private temporary directories and keeps "
                      "them in memory only, so other processes compile them again"
                      % (self.directory, why), CacheUnwritableWarning, stacklevel=4)

    def build_and_publish(self, so_path: str, meta_path: str,
                          compile_into: Callable[[str], str], load: Callable[[str], Any],
                          record: dict) -> tuple[Any, str]:
        """Build a library, load it, and publish it as ``so_path`` with its sidecar.

        ``compile_into(workdir)`` writes the library into the empty private
        directory ``workdir`` and returns its path; ``load(path)`` loads it.
        The build is loaded from where it was built (that path is never reused),
        then renamed into place, sidecar (``record`` plus size and SHA-256)
        first, unless a valid library is already there.  Where the cache
        directory cannot be written, the build happens outside it and is not
        published (one :class:`CacheUnwritableWarning`).  Returns ``(what load
        returned, the library's path)``; the build directory is removed after
        (:func:`~nbgraph.linkers.c.cache_limit.remove_after_build`).
        """
        workdir, private = self._new_workdir()
        done = False
        try:
            try:
                out = compile_into(workdir)
            except Exception as exc:  # noqa: BLE001 - re-raised unless it is "no room"
                why = write_problem(exc, workdir)
                if why is None:
                    raise
                if private:
                    raise self._write_error(exc, why) from exc
                # a full disk or a file-size limit in the cache directory: try outside
                cache_limit.remove_tree(workdir)
                workdir, private = self._private_workdir(why), True
                try:
                    out = compile_into(workdir)
                except Exception as again:  # noqa: BLE001 - as above
                    why_again = write_problem(again, workdir)
                    if why_again is None:
                        raise
                    raise self._write_error(again, why_again, why) from again
                self._fall_back(why, sticky=False)
            os.chmod(out, 0o700)
            with open(out, "rb") as f:
                data = f.read()
            found = load(out)
            published = not private and self._publish(workdir, out, data, so_path, meta_path,
                                                      record)
            done = True
            return (found, so_path) if published else (found, out)
        finally:
            if done:  # (the library is loaded: its file may go)
                cache_limit.remove_after_build(workdir)
            else:
                cache_limit.remove_tree(workdir)

    def _new_workdir(self):
        """(a new private build directory, whether it is outside the cache directory)."""
        if self._unwritable is None and self.ensure_directory() is not None:
            try:
                # the pid in the name lets a later process remove it if this one is killed
                return private_directory(self.directory, ".build-%d-" % os.getpid()), False
            except OSError as exc:
                why = write_problem(exc)
                if why is None:
                    raise
                self._fall_back(why, sticky=exc.errno in _READ_ONLY)
                return self._private_workdir(why), True
        self._fall_back(self._unwritable, sticky=True)
        return self._private_workdir(self._unwritable), True

    def _private_workdir(self, why):
        """A private build directory outside the cache directory (the system's
        temporary directory); ``why`` the cache directory could not be used."""
        import tempfile

        where = tempfile.gettempdir()
        if not self._swept:  # leftovers of killed private builds, once per process
            self._swept = True
            cache_limit.remove_stale_temporaries(where,
                                                 prefixes=(cache_limit.PRIVATE_BUILD_PREFIX,))
        try:
            return tempfile.mkdtemp(prefix="%s%d-" % (cache_limit.PRIVATE_BUILD_PREFIX,
                                                      os.getpid()), dir=where)
        except OSError as exc:
            raise CacheWriteError(
                exc.errno, "nbgraph cannot build a C module: the cache directory %s cannot be "
                "written (%s), nor the temporary directory %s (%s)" % (
                    self.directory, why, tempfile.gettempdir(), write_problem(exc) or exc),
                self.directory) from exc

    def _write_error(self, exc, why, why_in_cache=None):
        if why_in_cache:
            where = "in the cache directory %s (%s), nor in a private temporary directory (%s)" \
                % (self.directory, why_in_cache, why)
        else:
            where = "in a private temporary directory (%s); the cache directory %s cannot be " \
                "written (%s)" % (why, self.directory, self._unwritable or why)
        code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EIO
        return CacheWriteError(code, "nbgraph could not write a compiled C library %s%s"
                               % (where, _fsize_note()))

    def publish_file(self, workdir: str, out: str, data: bytes, path: str, meta_path: str,
                     record: dict) -> bool:
        """Publish the file ``out`` built in ``workdir`` (its bytes ``data``) as
        ``path`` with its sidecar, unless a valid one is there (the rules of
        :meth:`build_and_publish`, for a file it does not load, e.g. a support
        object); False when the directory refuses."""
        return self._publish(workdir, out, data, path, meta_path, record)

    def _publish(self, workdir, out, data, so_path, meta_path, record):
        """Rename the build ``out`` to ``so_path`` (sidecar first) unless a valid
        library is there; False (after one warning) when the directory refuses."""
        try:
            if self.verify_library(so_path, meta_path):
                return True
            meta_tmp = os.path.join(workdir, "meta")
            meta = dump_record(dict(record, size=len(data), sha256=sha256(data).hexdigest()))
            with open(meta_tmp, "wb") as f:
                f.write(meta)
            os.chmod(meta_tmp, 0o600)
            os.rename(meta_tmp, meta_path)
            os.rename(out, so_path)
            return True
        except OSError as exc:
            why = write_problem(exc)
            if why is None:
                raise
            self._fall_back(why, sticky=exc.errno in _READ_ONLY)
            return False
