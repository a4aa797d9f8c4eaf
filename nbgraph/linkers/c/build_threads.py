"""What the C layer's build threads share: their priority and fork().

The thread-pool runtime (:mod:`~nbgraph.linkers.c.threads`) and the call-path
extension (:mod:`~nbgraph.linkers.c.fastcall`) are built on threads of their
own while a first module compiles.  The extension is not needed for a first
result (programs call kernels through cffi until it is in), so its thread and
the compiler it runs yield the CPU to the builds that are (:func:`yield_cpu`).
At exit such a build, if still running, is stopped (:func:`abort_background`):
its compiler is stopped and its temporary directory removed, where waiting
for it on a busy machine could outlast the process.
"""

import os
import sys
import threading

__all__ = ["forget_thread_in_child", "yield_cpu", "BACKGROUND_NICENESS", "track", "untrack",
           "abort_background"]

#: How much nicer than the process a build nobody waits for runs (Linux:
#: niceness is per thread, and a process started by the thread inherits it).
BACKGROUND_NICENESS = 10


def forget_thread_in_child(namespace: dict, key: str) -> None:
    """In a forked child, give the module whose globals are ``namespace`` a new
    ``_lock`` and set ``namespace["_state"][key]`` (its build thread) to None:
    the parent's thread is not in the child, and may have held the lock."""
    def reset() -> None:
        namespace["_lock"] = threading.Lock()
        namespace["_state"][key] = None

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=reset)


_background = threading.local()
_running: set = set()
_running_lock = threading.Lock()


def yield_cpu() -> None:
    """Lower the calling thread's priority by :data:`BACKGROUND_NICENESS` (and so
    that of the compilers it starts); nothing where threads have no niceness of
    their own.  It cannot be raised again: call it on a thread that ends.  The
    compilers the thread starts are stopped at exit (:func:`abort_background`)."""
    _background.on = True
    if not sys.platform.startswith("linux"):  # elsewhere the call would renice the process
        return
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + BACKGROUND_NICENESS))
    except (AttributeError, OSError):  # pragma: no cover - not permitted, not POSIX
        pass



def track(proc) -> None:
    """Note a compiler process just started (stopped at exit when it was started
    by a thread that called :func:`yield_cpu`)."""
    if getattr(_background, "on", False):
        with _running_lock:
            _running.add(proc)


def untrack(proc) -> None:
    """The process has ended."""
    with _running_lock:
        _running.discard(proc)


def abort_background() -> int:
    """Stop the compilers of background builds still running (at exit: the build
    then fails, and removes its temporary directory).  Returns how many."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        try:  # SIGTERM: the compiler driver removes its temporary files and exits
            proc.terminate()
        except OSError:  # pragma: no cover - already gone
            pass
    return len(procs)
