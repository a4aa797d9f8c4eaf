"""Background compilation for the C-VM linker (tiered execution).

A new module takes the C compiler 0.1-0.5 s.  Rather than make the first
call wait, ``linker="cvm"`` may start the compilation on a worker thread and
run the function's nodes with ``perform`` until the module is ready; the
program then switches its C-capable nodes to kernels before its next run.
Modules already cached (in memory or on disk) are used at once.

Jobs run one at a time, newest first (the graph just built is the one about
to be used); a job whose programs have all been garbage-collected is
dropped without compiling.  The worker is restarted in a forked child, and
at interpreter exit the running compilation is given a few seconds to finish
(so no half-built temporary is left behind).

Switch it off with ``nbgraph.linkers.c.background.ENABLED = False`` or the
environment variable ``NBGRAPH_C_BACKGROUND=0``: every compilation then
happens inside ``function()``.
"""

import atexit
import functools
import os
import threading
import warnings
import weakref

from nbgraph.config import env_switch

__all__ = ["ENABLED", "Job", "submit", "wait_all"]

ENABLED = env_switch("NBGRAPH_C_BACKGROUND")


class Job:
    """One module to compile: ``done`` (an Event), then ``module`` or ``error``."""

    def __init__(self, cache, source, info, key, replan=None):
        self.cache = cache
        self.source = source
        self.info = info
        self.key = key
        self.replan = replan
        self.done = threading.Event()
        self.module = None
        self.error = None
        self.programs = []
        self.warned = False
        self.pid = os.getpid()

    def add_program(self, program):
        self.programs.append(weakref.ref(program))

    def wanted(self):
        return any(ref() is not None for ref in self.programs)

    def wait(self, timeout=None):
        """Block until compiled (or failed); True when finished."""
        return self.done.wait(timeout)


_lock = threading.Lock()
_stack = []
_pending = {}
_worker = None
_current = None
_shutting_down = False


def submit(cache, source, info, key, program, replan=None):
    """The :class:`Job` compiling ``source`` for ``program`` (shared with pending ones).

    ``replan(probe's info)`` -> ``(source, info)`` generates the module again when
    ``info`` was the compiler probe's expected answer and the probe found
    otherwise (:class:`~nbgraph.linkers.c.compiler.ProbeMismatch`)."""
    global _worker
    with _lock:
        if len(_stack) > _SWEEP_AT:
            _drop_unwanted()
        job = _pending.get(key)
        if job is None or job.done.is_set():
            job = Job(cache, source, info, key, replan)
            _pending[key] = job
            _stack.append(job)
        job.add_program(program)
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="nbgraph-c-compiler", daemon=True)
            _worker.start()
        _wake.set()
    return job


_wake = threading.Event()

#: Queued jobs are swept for ones no program wants any more when the queue is
#: longer than this (many distinct graphs built faster than they compile: each
#: queued job holds its C source).
_SWEEP_AT = 32


def _drop(job):
    if _pending.get(job.key) is job:
        del _pending[job.key]
    job.error = RuntimeError("dropped: no program wants this module any more")
    job.done.set()


def _drop_unwanted():
    """Drop queued jobs whose programs are all gone (called with the lock held)."""
    keep = []
    for job in _stack:
        if job.wanted():
            keep.append(job)
        else:
            _drop(job)
    _stack[:] = keep


def _next_job():
    with _lock:
        while _stack:
            job = _stack.pop()
            if job.wanted():
                return job
            _drop(job)
        _wake.clear()
        return None


def _work():
    global _current
    while not _shutting_down:
        job = _next_job()
        if job is None:
            _wake.wait(1.0)
            continue
        _current = job
        try:
            job.module = _compile(job)
        except BaseException as exc:  # reported to the programs waiting for it
            job.error = exc
        finally:
            _current = None
            with _lock:
                if _pending.get(job.key) is job:
                    del _pending[job.key]
            job.done.set()


def _compile(job):
    from nbgraph.linkers import meanwhile
    from nbgraph.linkers.c.compiler import ProbeMismatch

    # while the compiler runs, this thread makes what each program's install
    # needs but the kernels (its first run after the build then only binds them)
    early = [functools.partial(_prepare, ref) for ref in job.programs]
    try:
        with meanwhile.tasks(*early):
            return job.cache.get(job.source, job.info)
    except ProbeMismatch as exc:
        if job.replan is None:
            raise
        job.source, job.info = job.replan(exc.info)
        return job.cache.get(job.source, job.info)


def _prepare(ref):
    program = ref()
    if program is not None:
        program.prepare_early()


def wait_all(timeout=None):
    """Wait for every queued compilation, then for the C call path's extension
    if it is being built and for the compiler commands being recorded (tests and
    benchmarks use it); False when ``timeout`` (seconds, for each wait) ran out."""
    while True:
        with _lock:
            jobs = list(_pending.values())
        if not jobs:
            break
        for job in jobs:
            if not job.wait(timeout):
                return False
    from nbgraph.linkers.c import direct_link, fastcall

    return fastcall.Upgrade(None).wait(timeout) and direct_link.wait_derived(timeout)


def report_failure(job, what):
    if not job.warned:
        job.warned = True
        warnings.warn("nbgraph: compiling the C module of %s failed; it keeps running in "
                      "Python (linker='py' semantics): %s" % (what, job.error), RuntimeWarning,
                      stacklevel=4)


def _at_fork_child():
    global _worker, _current, _stack, _pending, _lock, _wake
    _lock = threading.Lock()
    _wake = threading.Event()
    _worker = None
    _current = None
    _stack = []
    _pending = {}


def _at_exit():
    global _shutting_down
    _shutting_down = True
    _wake.set()
    job = _current
    if job is not None:
        job.wait(10.0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_at_fork_child)
atexit.register(_at_exit)
