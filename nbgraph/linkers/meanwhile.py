"""Python work a thread does while it waits for the C compiler.

A new function's module compiles for a few hundred milliseconds, during which
the thread that asked for it only waits; the Python the function still needs
before its first result (its program's cells and call thunks, its
function-cache entry) can run then instead of after.  :func:`tasks`
registers such work for the calling thread around a piece of code that may
compile; the C build calls :func:`run` once its compiler processes are
started (:func:`nbgraph.linkers.c.compiler.run_compilers`); whatever has not
run when the ``with`` block ends runs then.  So each task runs exactly once,
in order, on the calling thread, whether a compiler ran or not.  An exception
a task raises while the compilers run is raised when the block ends (the
compilers are waited for first); none is raised if the block itself raised.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["tasks", "run"]

_local = threading.local()


class _Tasks:
    __slots__ = ("todo", "error")

    def __init__(self, todo):
        self.todo = list(todo)
        self.error: BaseException | None = None

    def run(self) -> None:
        while self.todo and self.error is None:
            task = self.todo.pop(0)
            try:
                task()
            except Exception as exc:  # noqa: BLE001 - raised when the block ends
                self.error = exc


@contextlib.contextmanager
def tasks(*todo: Callable[[], object]) -> Iterator[None]:
    """Run ``todo`` (functions of no argument) on this thread while a compiler
    started inside the block runs, else when the block ends."""
    stack = _local.__dict__.setdefault("stack", [])
    entry = _Tasks(todo)
    stack.append(entry)
    try:
        yield
    finally:
        stack.remove(entry)
    entry.run()
    if entry.error is not None:
        raise entry.error


def run() -> None:
    """Run the tasks registered on this thread (called once compilers are started)."""
    for entry in list(getattr(_local, "stack", ())):
        entry.run()
