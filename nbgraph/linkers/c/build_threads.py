"""What the C layer's build threads share: fork() safety.

The thread-pool runtime (:mod:`~nbgraph.linkers.c.threads`) and the call-path
extension (:mod:`~nbgraph.linkers.c.fastcall`) are built on threads of their
own while a first module compiles; a forked child has no such thread.
"""

import os
import threading

__all__ = ["forget_thread_in_child"]


def forget_thread_in_child(namespace: dict, key: str) -> None:
    """In a forked child, give the module whose globals are ``namespace`` a new
    ``_lock`` and set ``namespace["_state"][key]`` (its build thread) to None:
    the parent's thread is not in the child, and may have held the lock."""
    def reset() -> None:
        namespace["_lock"] = threading.Lock()
        namespace["_state"][key] = None

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=reset)
