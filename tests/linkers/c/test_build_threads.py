"""Build threads of the C layer: lower priority for builds nobody waits for, and fork()."""

import os
import sys
import threading

import pytest

from nbgraph.linkers.c import build_threads


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness")
def test_yield_cpu_lowers_only_the_calling_thread_and_what_it_starts():
    seen = {}

    def build():
        build_threads.yield_cpu()
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a compiler started by the thread
            os.write(w, b"%d" % os.getpriority(os.PRIO_PROCESS, 0))
            os._exit(0)
        os.waitpid(pid, 0)
        seen["child"] = int(os.read(r, 16))

    before = os.getpriority(os.PRIO_PROCESS, 0)
    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    want = min(19, before + build_threads.BACKGROUND_NICENESS)
    assert seen == {"thread": want, "child": want}
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # this thread is untouched


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_forgets_the_build_thread_and_its_lock():
    space = {"_lock": threading.Lock(), "_state": {"thread": "a thread"}}
    build_threads.forget_thread_in_child(space, "thread")
    old = space["_lock"]
    old.acquire()  # held by the parent's build thread at the fork
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            ok = space["_state"]["thread"] is None and space["_lock"].acquire(timeout=1)
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(r, 1) == b"1"
    finally:
        old.release()
    assert space["_state"]["thread"] == "a thread" and space["_lock"] is old


def test_at_exit_a_background_build_is_stopped_and_leaves_nothing(tmp_path):
    """A build on a thread that yielded the CPU is stopped by abort_background():
    its compiler fails, and build_and_publish removes its temporary directory."""
    from nbgraph.linkers.c.compiler import CompileError, run_compiler

    failed = {}

    def build():
        build_threads.yield_cpu()
        try:  # a "compiler" that would run for a minute
            run_compiler([sys.executable, "-c", "import time; time.sleep(60)"], "x.c")
        except CompileError as exc:
            failed["error"] = str(exc)

    thread = threading.Thread(target=build)
    thread.start()
    for _ in range(2000):
        with build_threads._running_lock:
            if build_threads._running:
                break
        threading.Event().wait(0.005)
    assert build_threads.abort_background() == 1
    thread.join(30)
    assert not thread.is_alive() and "killed by SIGTERM" in failed["error"]
    assert build_threads.abort_background() == 0  # nothing left to stop
    # a build on an ordinary thread is not the exit's to stop
    run_compiler([sys.executable, "-c", "pass"], "y.c")
