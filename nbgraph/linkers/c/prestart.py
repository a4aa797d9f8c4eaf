"""Translation units whose compilation starts before the build that needs them.

A first use on a machine compiles the runtime library (the compiler probe's
build, see :func:`~nbgraph.linkers.c.compiler.probe_nowait`) on a thread while
the first function's rewrites run on the main thread.  A thread of this
interpreter gets the GIL back only every ``sys.getswitchinterval()`` (5 ms)
while the main thread runs Python, and starting a compiler takes several
system calls, each of which hands the GIL over: the runtime's two units used to
start 20-40 ms after ``function()`` was entered, with the second core idle
meanwhile.  :func:`start` instead launches them at once on the calling thread
(a few process spawns, ~1-2 ms), and the build that later wants the same units
(same compiler command, same text: :func:`take`) waits for those processes and
uses their object files instead of compiling again.

Started units live in a private build directory of the cache directory
(``.build-<pid>-*``, removed once all its units are taken, at exit, or by the
next build once the process is gone).  A unit nobody takes by the time the
process exits is stopped.  A unit whose compiler failed is left to the build,
which compiles it again and reports the compiler's messages.  Nothing here is
needed for correctness: a unit not started, not found or failed is compiled
as usual.
"""

from __future__ import annotations

import os
import threading

from nbgraph.linkers.c.compiler import sha256

__all__ = ["start", "take", "pending", "started", "forget"]

#: (compiler command, SHA-256 of the text) -> [process, object path, build directory]
_started: dict[tuple[tuple[str, ...], str], list] = {}
_dirs: dict[str, int] = {}  # build directory -> units of it not yet taken
_lock = threading.Lock()
_exit_hook = []


def _key(flags, text):
    return tuple(flags), sha256(text.encode()).hexdigest()


def start(cache, flags: list[str], texts: list[str], stem: str = "unit") -> int:
    """Start compiling each of ``texts`` (C translation units, written as
    ``<stem>.part<k>.c``) with the driver command ``flags + ["-c", "-o",
    object, source]`` in a new build directory of ``cache``; returns at once,
    with the number started (0 when the cache directory cannot be written or a
    compiler cannot be run)."""
    import subprocess

    from nbgraph.linkers.c.publish import private_directory

    if not texts or cache._unwritable is not None:
        return 0
    try:
        if cache.ensure_directory() is None:
            return 0
        workdir = private_directory(cache.directory, ".build-%d-" % os.getpid())
    except OSError:
        return 0
    count = 0
    for k, text in enumerate(texts):
        key = _key(flags, text)
        src, obj = (os.path.join(workdir, "%s.part%d.%s" % (stem, k, ext)) for ext in "co")
        try:
            with open(src, "w") as f:
                f.write(text)
            proc = subprocess.Popen(list(flags) + ["-c", "-o", obj, src],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        except OSError:
            continue
        with _lock:
            if key in _started:  # (the same text twice: the first is used)
                _stop(proc)
                continue
            _started[key] = [proc, obj, workdir]
            _dirs[workdir] = _dirs.get(workdir, 0) + 1
        count += 1
    if not count:
        _remove(workdir)
    elif not _exit_hook:
        import atexit

        _exit_hook.append(atexit.register(forget))
    return count


def pending() -> int:
    """The number of started units not taken yet."""
    return len(_started)


def started(flags: list[str], text: str) -> bool:
    """Whether the unit ``text`` was started with the command ``flags`` and not
    taken yet (its build then compiles no unit itself, see :func:`take`)."""
    if not _started:
        return False
    with _lock:
        return _key(flags, text) in _started


def take(flags: list[str], units: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(object, source)`` pairs of ``units`` still to compile with the
    command ``flags``: a unit whose source text was started with the same
    command (:func:`start`) is waited for and its object file moved to
    ``object``, unless its compiler failed."""
    if not _started:
        return units
    rest = []
    for obj, src in units:
        try:
            with open(src) as f:
                key = _key(flags, f.read())
        except OSError:
            key = None
        with _lock:
            found = _started.pop(key, None) if key is not None else None
        if found is None or not _collect(found, obj):
            rest.append((obj, src))
    return rest


def _collect(found, obj):
    """Wait for a started unit; True when its object file is now at ``obj``."""
    from nbgraph.linkers.c.direct_link import wait_exit

    proc, built, workdir = found
    ok = False
    if wait_exit(proc) == 0:
        try:
            os.replace(built, obj)
            ok = True
        except OSError:  # (another file system: a private build outside the cache)
            import shutil

            try:
                shutil.copyfile(built, obj)
                ok = True
            except OSError:
                ok = False
    _done_with(workdir)
    return ok


def _done_with(workdir):
    with _lock:
        left = _dirs.get(workdir, 1) - 1
        if left > 0:
            _dirs[workdir] = left
            return
        _dirs.pop(workdir, None)
    _remove(workdir)


def _remove(workdir):
    from nbgraph.linkers.c.cache_limit import remove_tree

    remove_tree(workdir)


def _stop(proc):
    try:
        proc.kill()
        proc.wait()
    except OSError:  # pragma: no cover - already reaped
        pass


def forget() -> None:
    """Stop the units nobody took and remove their build directories (at exit)."""
    with _lock:
        found = list(_started.values())
        _started.clear()
        dirs = list(_dirs)
        _dirs.clear()
    for proc, _, _ in found:
        if proc.poll() is None:
            _stop(proc)
    for workdir in dirs:
        _remove(workdir)


def _forget_in_child():
    """A forked child has none of its parent's compilers to wait for."""
    global _lock
    _lock = threading.Lock()
    _started.clear()
    _dirs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
