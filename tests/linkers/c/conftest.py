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
def python_process(c_cache_dir):
    """``python_process(code, cache_dir=None, **kw)``: run code in a fresh interpreter."""
    def run(code, cache_dir=None, **kw):
        return run_python(code, cache_dir or c_cache_dir, **kw)
    return run


class BusyOp(CLinkerOp, Op):
    """Busy C code: waits ``ms`` milliseconds of wall time, returns its input + 1."""

    __props__ = ("ms",)

    def __init__(self, ms):
        self.ms = ms

    def make_node(self, x):
        x = nt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_headers(self):
        return ["time.h"]

    def c_prepare_outputs(self, node, inputs):
        return [np.empty(inputs[0].shape, inputs[0].dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        return """{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do { clock_gettime(CLOCK_MONOTONIC, &t1); }
    while ((t1.tv_sec - t0.tv_sec) * 1000.0 + (t1.tv_nsec - t0.tv_nsec) / 1e6 < %d);
    *%s = *%s + 1;
}""" % (self.ms, outputs[0], inputs[0])


@pytest.fixture
def busy_op():
    """:class:`BusyOp`: C code that keeps its thread busy (for the GIL tests)."""
    return BusyOp
