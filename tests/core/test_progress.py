"""Progress for long work (nbgraph.core.progress and the notebook reporter of nbgraph.display):
nothing for quick work, start/update/done for long work, one report for nested tasks, never an
error from a broken reporter, and the terminal line erased when done."""

import io

import pytest

from nbgraph.core import progress


@pytest.fixture
def events(monkeypatch):
    seen = []
    monkeypatch.setattr(progress, "DELAY", 0.05)
    monkeypatch.setattr(progress, "INTERVAL", 0.02)
    old = progress.get_reporter()
    progress.set_reporter(lambda event, label, seconds: seen.append((event, label, seconds)))
    yield seen
    progress.set_reporter(old)


def test_quick_work_reports_nothing(events, monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 5.0)
    with progress.task("compiling") as t:
        t.stage("rewriting")
    assert events == []


def test_long_work_starts_updates_and_clears(events):
    import threading

    with progress.task("compiling f") as t:
        t.stage("rewriting")
        threading.Event().wait(0.2)
    kinds = [e for e, _, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and "update" in kinds
    assert events[0][1] == "compiling f: rewriting"
    assert events[-1][2] >= 0.2


def test_nested_tasks_report_once(events):
    import threading

    with progress.task("outer"):
        with progress.task("inner"):
            threading.Event().wait(0.1)
    assert {label for _, label, _ in events} == {"outer"}


def test_a_broken_reporter_never_breaks_the_work(monkeypatch):
    import threading

    monkeypatch.setattr(progress, "DELAY", 0.01)

    def broken(*args):
        raise RuntimeError("no")

    old = progress.get_reporter()
    progress.set_reporter(broken)
    try:
        with progress.task("x"):
            threading.Event().wait(0.05)
    finally:
        progress.set_reporter(old)


def test_the_terminal_line_is_rewritten_in_place_and_erased(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    monkeypatch.setattr("sys.stderr", out)
    progress.terminal_reporter("start", "compiling f", 1.25)
    progress.terminal_reporter("done", "compiling f", 2.0)
    assert out.getvalue() == "\r\x1b[Kcompiling f \u2026 1.2 s\r\x1b[K"
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    progress.terminal_reporter("start", "compiling f", 1.0)
    assert plain.getvalue() == ""  # not a terminal: silent


def test_a_headless_kernel_gets_no_progress_line_outside_a_kernel_the_terminal_one():
    import nbgraph.display  # noqa: F401  (installs the notebook reporter)
    from nbgraph.display import progress as shown

    assert progress.get_reporter() in (shown.notebook_reporter, None)
    assert shown.watched_kernel() is None  # no kernel here
