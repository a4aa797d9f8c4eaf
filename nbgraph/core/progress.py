"""Progress for long work: a line that appears when a compile or rewrite takes over a second.

>>> from nbgraph.core import progress
>>> with progress.task("compiling f") as t:
...     t.stage("rewriting")        # nothing is shown: it took less than DELAY
>>> progress.DELAY
1.0

:func:`task` runs its block; if the block is still running after
:data:`DELAY` seconds, the current *reporter* is told (``"start"``), then
every :data:`INTERVAL` seconds (``"update"``, with the stage and the seconds
so far), and once more when it ends (``"done"``: clear the indicator).  Quick
work shows nothing and costs a list append (one watcher thread per process).

Reporters: in a terminal (standard error is a TTY) the default writes one
line, rewritten in place (``\\r``) and erased when done; elsewhere it stays
silent.  ``nbgraph.display`` installs a notebook reporter (an HTML line in
the running cell, cleared when done; see :mod:`nbgraph.display.progress`).
``NBGRAPH_PROGRESS=0`` (or ``set_reporter(None)``) turns progress off.
Nested tasks report as one: the outermost.
"""

from __future__ import annotations

import contextlib
import os
import sys
import _thread
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

__all__ = ["task", "set_reporter", "get_reporter", "terminal_reporter", "Reporter", "TaskHandle",
           "DELAY", "INTERVAL"]

#: Seconds a task runs before its indicator appears.
DELAY = 1.0
#: Seconds between updates of a shown indicator.
INTERVAL = 0.5

_local = threading.local()

#: A progress reporter: ``reporter(event, label, seconds)`` with event
#: ``"start"``, ``"update"`` or ``"done"``.
Reporter = Callable[[str, str, float], None]


def terminal_reporter(event: str, label: str, seconds: float) -> None:
    """One line on standard error when it is a terminal, rewritten in place."""
    stream = sys.stderr
    try:
        if not stream.isatty():
            return
        if event == "done":
            stream.write("\r\x1b[K")
        else:
            stream.write("\r\x1b[K%s \u2026 %.1f s" % (label, seconds))
        stream.flush()
    except Exception:  # progress must never break the work
        pass


_reporter: Reporter | None = (
    terminal_reporter if os.environ.get("NBGRAPH_PROGRESS", "1") != "0" else None)


def set_reporter(reporter: Reporter | None) -> None:
    """Use ``reporter(event, label, seconds)`` for progress (None: show nothing)."""
    global _reporter
    _reporter = reporter


def get_reporter() -> Reporter | None:
    """The current reporter (None when progress is off)."""
    return _reporter


class TaskHandle(Protocol):
    """What ``with task(label) as t`` gives: ``t.stage(name)`` names the current step."""

    def stage(self, name: str) -> None:
        """Name what the task is doing now."""


class _Task:
    def __init__(self, label: str, reporter: Reporter) -> None:
        self.label = label
        self._stage = ""
        self._reporter = reporter
        self._start = time.perf_counter()
        self._next = self._start + DELAY  # when the watcher reports next
        self._lock = threading.Lock()  # orders reports: start, updates, done
        self._done = False
        self.shown = False
        _watch(self)

    def stage(self, name: str) -> None:
        """Name what the task is doing now (shown after the label)."""
        self._stage = name

    def text(self) -> str:
        return "%s: %s" % (self.label, self._stage) if self._stage else self.label

    def _report(self, event: str) -> None:
        try:
            self._reporter(event, self.text(), time.perf_counter() - self._start)
        except Exception:  # a broken reporter must not break a compile
            pass

    def tick(self, now: float) -> bool:
        """Report "start" or "update" when due (the watcher's call); False once done."""
        with self._lock:
            if self._done:
                return False
            if now >= self._next:
                self._report("update" if self.shown else "start")
                self.shown = True
                self._next = now + INTERVAL
            return True

    def finish(self) -> None:
        with self._lock:
            self._done = True
            if self.shown:
                self._report("done")


# One watcher thread per process serves every task: a task costs a list append,
# not a thread (function() runs two tasks; starting and joining a thread for
# each cost more than a cached compile).  It sleeps until the earliest report
# is due and drops finished tasks then.
_cond = threading.Condition()
_tasks: list[_Task] = []
_watcher: list[int] = []  # the pid whose watcher thread runs
_wake_at = [float("inf")]  # when the watcher wakes next (inf: when notified)


def _watch(task: _Task) -> None:
    with _cond:
        if _watcher != [os.getpid()]:  # none yet, or a forked child's parent's
            _watcher[:] = [os.getpid()]
            _tasks.clear()
            # a low-level thread: threading.Thread.start() would wait until the new
            # thread runs (0.1-0.5 ms, and far more on a loaded machine), at every
            # process's first compile; like a daemon thread it ends with the process
            _thread.start_new_thread(_watch_loop, ())
        elif len(_tasks) > 64:
            _tasks[:] = [t for t in _tasks if not t._done]
        _tasks.append(task)
        if task._next < _wake_at[0]:
            _cond.notify()  # it would wake too late for this one


def _watch_loop() -> None:
    while True:
        with _cond:
            while not _tasks:
                _wake_at[0] = float("inf")
                _cond.wait()
            tasks = list(_tasks)
        now = time.perf_counter()
        alive = [t for t in tasks if t.tick(now)]
        with _cond:
            _tasks[:] = [t for t in _tasks if t in alive or t not in tasks]
            if _tasks:
                _wake_at[0] = min(t._next for t in _tasks)
                _cond.wait(max(0.0, _wake_at[0] - time.perf_counter()))


class _Quiet:
    def stage(self, name: str) -> None:
        pass


@contextlib.contextmanager
def task(label: str) -> Iterator[TaskHandle]:
    """Report progress of the ``with`` block when it runs longer than :data:`DELAY`."""
    reporter = _reporter
    if reporter is None or getattr(_local, "active", False):
        yield _Quiet()
        return
    _local.active = True
    current = _Task(label, reporter)
    try:
        yield current
    finally:
        _local.active = False
        current.finish()
