"""Threads calling, compiling and evaluating at once, under the debug linker's checks.

Six real threads, started together at a barrier, in a cache directory of their
own: two compile new graphs (modules no cache has), one calls a Function they
all share, one evaluates new expressions with ``eval``, one compiles with the
background compiler (``linker="cvm"``) and calls while it works, and one clears
this process's view of the cache and compiles again.  Every function but the
background one runs under ``linker="debug"``, which runs each node in Python and
in C and raises on any disagreement, undeclared view or destroyed input; every
result is compared with NumPy, exactly (the expressions round once per operation,
as NumPy does).
"""

import os

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import background
from nbgraph.linkers.c import cache as cache_mod
from nbgraph.testing import run_in_threads

pytestmark = pytest.mark.needs_cc
N = 50_000  # big enough that C kernels run with the GIL released


def test_threads_calling_compiling_and_evaluating_at_once_under_the_debug_linker(
        tmp_path, monkeypatch):
    from nbgraph.tensor.c_code import constants

    monkeypatch.setattr(constants, "ENABLED", False)  # each constant: a new module
    d = tmp_path / "threads"
    d.mkdir(mode=0o700)
    x = nt.dvector("x")
    y = nt.dvector("y")
    done = {}

    def check(got, want, what):
        assert np.array_equal(got, want), "%s: wrong result" % what
        done[what] = done.get(what, 0) + 1

    with config.change(cache_dir=d, linker="debug"):
        shared = ng.function([x, y], (x * 2.5 + y) * x, linker="debug")

        def work(k):
            rng = np.random.default_rng(k)
            a, b = rng.standard_normal(N), rng.standard_normal(N)
            if k in (0, 1):  # compile new graphs
                for j in range(2):
                    c = 3.0 + k / 8 + j / 64
                    f = ng.function([x, y], x * c - y, linker="debug")
                    check(f(a, b), a * c - b, "compile")
            elif k == 2:  # call the shared Function
                for _ in range(20):
                    check(shared(a, b), (a * 2.5 + b) * a, "call")
            elif k == 3:  # evaluate new expressions
                for j in range(2):
                    c = 5.0 + j / 64
                    check((x / c + y).eval({x: a, y: b}), a / c + b, "eval")
            elif k == 4:  # the background compiler, called while it works
                f = ng.function([x, y], x - y * 7.25, linker="cvm")
                for _ in range(10):
                    check(f(a, b), a - b * 7.25, "background")
            else:  # forget this process's view of the cache, compile again
                cache_mod._caches.pop(str(d), None)
                f = ng.function([x, y], x * 9.5 + y, linker="debug")
                check(f(a, b), a * 9.5 + b, "fresh view")

        run_in_threads(work, 6, name="fault")
        background.wait_all(120)
    assert done == {"compile": 4, "call": 20, "eval": 2, "background": 10, "fresh view": 1}
    libraries = [n for n in os.listdir(d) if n.endswith(".so")]
    assert libraries and not [n for n in os.listdir(d) if n.startswith(".")]
    verifier = cache_mod.ModuleCache(d)
    for name in libraries:
        assert verifier.verify_library(str(d / name), str(d / (name[:-3] + ".meta")))
