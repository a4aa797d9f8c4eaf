"""How one compiled Function is called from many threads at once.

A Function runs its graph through *storage cells* and per-program scratch
(cffi argument arrays, error buffers, output buffers kept for reuse): state
that one call at a time may use.  Measured before this design, four threads
calling one ``linker="c"`` function gave wrong answers without an error.

The rule (see the Function docstring):

* **a token per Function.**  A call takes the Function's token (``list.pop``
  on a one-element list: atomic, ~0.1 us, against ~0.5 us for
  ``Lock.acquire``/``release`` on this machine) and gives it back when done.
  A single-threaded caller always finds it.
* **a twin per contending thread.**  A call that finds the token taken (another
  thread is inside, or the call re-enters its own Function) runs on a *twin*:
  the same rewritten graph linked again, with its own cells and scratch and
  the same compiled C module (from the in-memory cache: no compilation).
  Idle twins wait in a pool on the Function, so a steady set of N threads
  builds N - 1 twins once.
* **shared variables: one turn per container.**  A call of a Function that
  reads or updates shared variables holds the turns (token locks, see
  :class:`Turn`) of all of them, taken in one global order, from reading their
  values to writing its updates: the updates of concurrent calls are applied
  atomically per call (no lost update, never half of one call's updates), and
  every call sees a state that some order of whole calls produced.
* **the C call path needs neither.**  A Function whose whole graph is one C
  kernel is called through ``_fastcall.Kernel``, which keeps its operands and
  error buffer on the C stack and reuses an output only when nothing but
  itself references it (decided while holding the GIL).
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import contextmanager
from threading import get_ident

__all__ = ["SharedGate", "Turn", "holding", "contended_call", "twin_of"]

class Turn:
    """A lock made of a token (``pop`` takes it, ``append`` gives it back: ~0.1 us
    together, where ``RLock.acquire``/``release`` cost ~0.7 us on this machine);
    a thread that finds it taken sleeps on a condition until it is given back."""

    __slots__ = ("token", "waiters", "cond", "owner")

    def __init__(self):
        self.token = [True]
        self.waiters = []
        self.cond = threading.Condition(threading.Lock())
        self.owner = None

    def wait(self, me):
        """Block until this thread holds the token (the fast ``pop`` failed)."""
        if self.owner == me:
            raise RuntimeError("a function using a shared variable was called again while "
                               "the same thread's call of a function using it runs")
        with self.cond:
            self.waiters.append(me)
            try:
                while True:
                    try:
                        self.token.pop()
                        return
                    except IndexError:
                        self.cond.wait(0.05)
            finally:
                self.waiters.remove(me)

    def wake(self):
        """Called after giving the token back when a thread waits for it."""
        with self.cond:
            self.cond.notify()


# container id -> [Turn, number of live Functions using it]: a container's id is
# unique while it is registered, since every registered Function references it.
_container_turns: dict = {}
_registry_lock = threading.Lock()


def _register(keys):
    with _registry_lock:
        turns = []
        for key in keys:
            entry = _container_turns.get(key)
            if entry is None:
                entry = _container_turns[key] = [Turn(), 0]
            entry[1] += 1
            turns.append(entry[0])
        return turns


def _unregister(keys):
    with _registry_lock:
        for key in keys:
            entry = _container_turns.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    del _container_turns[key]


class SharedGate:
    """The turns of a Function's shared-variable containers, taken in one global
    order (by container id) so that two Functions never wait on each other."""

    def __init__(self, owner, containers):
        keys = sorted({id(c) for c in containers})
        self.turns = _register(keys)
        weakref.finalize(owner, _unregister, keys)

    def enter(self):
        """Take every turn, waiting where another call holds one."""
        me = get_ident()
        taken = []
        try:
            for turn in self.turns:
                try:
                    turn.token.pop()
                except IndexError:
                    turn.wait(me)
                turn.owner = me
                taken.append(turn)
        except BaseException:
            self._give(taken)
            raise

    def leave(self):
        """Give every turn back (waking a waiting thread, if any)."""
        self._give(self.turns)

    @staticmethod
    def _give(turns):
        for turn in reversed(turns):
            turn.owner = None
            turn.token.append(True)
            if turn.waiters:
                turn.wake()


@contextmanager
def holding(token, timeout=None):
    """Hold ``token`` (a Function's one-element list), waiting for it if a call
    holds it now; no-op for None.  Used off the hot path: profiled calls, error
    reports, installing kernels a background compilation finished."""
    if token is None:
        yield
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 1e-5
    while True:
        try:
            token.pop()
            break
        except IndexError:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("a call of this function did not finish in %s s"
                                   % timeout) from None
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
    try:
        yield
    finally:
        token.append(True)


def twin_of(function):
    """A new Function running ``function``'s rewritten graph with its own cells."""
    from nbgraph.linkers.compiled import Function

    return Function(function.fgraph, function.inputs, function.outputs, function.single,
                    function.shared_inputs, function.updates, function.linker,
                    name=function.name, profile=False, trust_input=function.trust_input,
                    allow_input_downcast=function._allow_downcast,
                    input_specs=function.input_specs)


def contended_call(ref, args, kwargs=None):
    """Run a call whose Function's token is taken, on an idle twin (made if none is)."""
    function = ref()
    twins = function._twins
    try:
        twin = twins.pop()
    except IndexError:
        twin = twin_of(function)
    try:
        if kwargs is None:
            return twin._fast(*args)
        return twin._call(args, kwargs)
    finally:
        if function._twins is twins:  # not dropped by a settings change meanwhile
            twins.append(twin)
