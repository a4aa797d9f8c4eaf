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
work shows nothing and costs a timer.

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
        self._done = threading.Event()
        self.shown = False
        self._thread = threading.Thread(target=self._watch, name="nbgraph-progress",
                                        daemon=True)
        self._thread.start()

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

    def _watch(self) -> None:
        if self._done.wait(DELAY):
            return
        self.shown = True
        self._report("start")
        while not self._done.wait(INTERVAL):
            self._report("update")

    def finish(self) -> None:
        self._done.set()
        self._thread.join()
        if self.shown:
            self._report("done")


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
