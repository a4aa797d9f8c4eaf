"""Build threads of the C layer and fork()."""

import os
import threading

import pytest

from nbgraph.linkers.c import build_threads


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

