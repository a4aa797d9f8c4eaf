"""Shared set-up of the C linker tests.

Every test here needs a C compiler (``needs_cc``: skipped without one).  The
private cache directory of the session (``c_cache_dir``, in tests/conftest.py)
is shared with subprocesses through ``NBGRAPH_CACHE_DIR``.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbgraph.tensor as nt
from nbgraph.core.graph import Apply
from nbgraph.core.c_interface import CLinkerOp
from nbgraph.core.op import Op
from nbgraph.linkers.c import codegen

REPO = Path(__file__).resolve().parents[3]


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.needs_cc)


def run_python(code, cache_dir, timeout=120, extra_env=None):
    """Run ``code`` in a fresh interpreter using ``cache_dir``; return CompletedProcess."""
    env = dict(os.environ)
    env["NBGRAPH_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if extra_env:
        env.update(extra_env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(REPO))


@pytest.fixture
def call_nbg_t():
    """``call_nbg_t(path)``: load the library ``path`` in a fresh, isolated interpreter
    (``RTLD_NOW``: every symbol it imports must resolve there) and return its
    ``double nbg_t(double)`` of 2.0."""
    return _call_nbg_t


def _call_nbg_t(path):
    code = ("import ctypes, os, sys\n"
            "lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)\n"
            "lib.nbg_t.restype = ctypes.c_double\n"
            "lib.nbg_t.argtypes = [ctypes.c_double]\n"
            "print(repr(lib.nbg_t(2.0)))\n")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout)


@pytest.fixture
def python_process(c_cache_dir):
    """``python_process(code, cache_dir=None, **kw)``: run code in a fresh interpreter."""
    def run(code, cache_dir=None, **kw):
        return run_python(code, cache_dir or c_cache_dir, **kw)
    return run


class RendezvousOp(CLinkerOp, Op):
    """C that proves it runs without the GIL, whatever the machine's load.

    Its input is a float64 *mailbox* shared with the test: the kernel writes 1
    into ``mailbox[slot]`` ("started"), then spins until Python writes a
    nonzero go flag into ``mailbox[-1]`` (or ``timeout_ms`` of wall time pass,
    so a kernel holding the GIL fails the test instead of hanging it).  Its
    output is 1.0 when it saw the flag, else 0.0.
    """

    __props__ = ("slot", "timeout_ms")

    def __init__(self, slot, timeout_ms=60_000):
        self.slot = slot
        self.timeout_ms = timeout_ms

    def make_node(self, mailbox):
        mailbox = nt.as_tensor_variable(mailbox)
        return Apply(self, [mailbox], [nt.dscalar()])

    def c_headers(self):
        return ["time.h"]

    def c_prepare_outputs(self, node, inputs):
        return [np.empty((), "float64")]

    def c_code(self, node, name, inputs, outputs, sub):
        return """{
    volatile double *box = (volatile double *) %(box)s;
    long last = %(box)s_dims[0] - 1;
    struct timespec t0, t1;
    double waited = 0.0;
    box[%(slot)d] = 1.0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (box[last] == 0.0 && waited < %(timeout)d) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        waited = (t1.tv_sec - t0.tv_sec) * 1000.0 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    }
    *%(out)s = box[last] != 0.0 ? 1.0 : 0.0;
}""" % {"box": inputs[0], "slot": self.slot, "timeout": self.timeout_ms, "out": outputs[0]}


def meet_inside_kernels(functions, timeout=60.0):
    """Call each of ``functions`` (built on :class:`RendezvousOp` ``slot=k``, one
    argument: the mailbox) in its own thread, and prove from this thread that
    they all run C at the same time while Python keeps running.

    This thread waits until every kernel has written its "started" mark, then
    sets the go flag: a kernel that held the GIL would keep this thread (and
    the other kernels) from running until it timed out.  Returns the
    functions' results (1.0 each: the flag was seen inside the kernel) and the
    number of polls this thread made while the kernels ran.  Nothing is timed:
    on a loaded machine it only takes longer.
    """
    import threading
    import time

    mailbox = np.zeros(len(functions) + 1)
    results = {}

    def call(k):
        results[k] = float(functions[k](mailbox))

    threads = [threading.Thread(target=call, args=(k,)) for k in range(len(functions))]
    for t in threads:
        t.start()
    polls = 0
    deadline = time.monotonic() + timeout
    while not mailbox[:-1].all() and time.monotonic() < deadline:
        polls += 1
        time.sleep(0.0005)
    mailbox[-1] = 1.0
    for t in threads:
        t.join()
    return [results.get(k) for k in range(len(functions))], polls


@pytest.fixture
def rendezvous():
    """``(RendezvousOp, meet_inside_kernels)``: the load-independent GIL check."""
    return RendezvousOp, meet_inside_kernels


@pytest.fixture
def module_sources(monkeypatch):
    """The source text of every module generated during the test, in order."""
    sources = []
    real = codegen.module_source

    def spy(*args, **kwargs):
        found = real(*args, **kwargs)
        sources.append(found[0])
        return found
    monkeypatch.setattr(codegen, "module_source", spy)
    return sources
