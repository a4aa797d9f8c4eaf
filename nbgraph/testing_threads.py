"""Running a piece of work on several threads at once, for tests of thread safety.

>>> seen = []
>>> run_in_threads(seen.append, 3)
>>> sorted(seen)
[0, 1, 2]
"""

import threading
from collections.abc import Callable

__all__ = ["run_in_threads"]


def run_in_threads(work: Callable[[int], object], n: int, start_timeout: float = 120.0,
                   join_timeout: float = 300.0, name: str = "worker") -> None:
    """Run ``work(k)`` for ``k`` in ``range(n)``, each on its own thread, all released
    together by a barrier so their calls really overlap.

    Re-raises the first exception a thread raised (after every thread ended),
    and raises AssertionError naming the threads still alive after
    ``join_timeout`` seconds (a hang is a failure, not a stuck test run).
    """
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def target(k: int) -> None:
        try:
            barrier.wait(start_timeout)
            work(k)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(k,), name="%s-%d" % (name, k))
               for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_timeout)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, "threads hung: %s" % ", ".join(alive)
    if errors:
        raise errors[0]
