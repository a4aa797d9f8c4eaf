"""linker="dask" on a distributed LocalCluster with 2 worker processes (127.0.0.1,
1 GB each): results equal the C linker's, kernels reach the workers by
reference and are loaded from the workers' disk cache without compiling."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker, kernel_stats, local_cluster

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with local_cluster(n_workers=2, memory_limit="1GB") as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_random_graphs_on_two_worker_processes_equal_the_c_linker(dk, client):
    x, r = nt.dmatrix("x"), nt.tensor("float64", (1, None), "r")
    outs = [x + r * 2.0 - x / r, nt.exp(-x ** 2 / 2) * nt.sin(r) + x * r,
            ((x - r) ** 2).sum(), ((x - r) ** 2).sum(axis=0), x.max(axis=1),
            nt.dot(x, r.T), (x * nt.tanh(r)).min(axis=(0, 1))]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((23, 11))
    a.reshape(-1)[[4, 9, 30]] = [np.nan, np.inf, -np.inf]
    args = [a, rng.standard_normal((1, 11))]
    f = nbgraph.function([x, r], outs, linker=DaskLinker(chunks=(6, 11), compute=True,
                                                         scheduler=client))
    got, want = f(*args), dk.reference([x, r], outs, args)
    dk.assert_bit_equal(got[0], want[0])
    dk.assert_close_through_graph([x, r], outs[1], args, got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-13)
    dk.assert_bit_equal(got[4], want[4])  # axis 1 is one block
    np.testing.assert_allclose(got[5], want[5], rtol=1e-13)
    dk.assert_bit_equal(got[6], want[6])  # max/min: any order gives the same value
    stats = client.run(kernel_stats)
    assert len(stats) == 2
    assert all(s["built"] == 0 for s in stats.values()), stats
    assert sum(s["loaded"] for s in stats.values()) >= 1, stats


def test_updates_on_the_cluster_are_written_after_one_compute(client):
    w = nbgraph.shared(np.ones(3), "w")
    x = nt.dmatrix("x")
    cost = ((nt.dot(x, w) - 1.0) ** 2).sum()
    g = nbgraph.grad(cost, w)
    step = nbgraph.function([x], cost, updates=[(w, w - 0.01 * g)],
                            linker=DaskLinker(chunks=(5, 3), scheduler=client))
    X = np.arange(36.0).reshape(12, 3) / 36
    costs = [float(step(X)) for _ in range(3)]
    w_ref = np.ones(3)
    for c in costs:
        resid = X @ w_ref - 1.0
        np.testing.assert_allclose(c, (resid ** 2).sum(), rtol=1e-12)
        w_ref = w_ref - 0.01 * 2 * X.T @ resid
    np.testing.assert_allclose(w.get_value(), w_ref, rtol=1e-12)


def test_a_slow_scratch_directory_hint_does_not_reach_the_notebook_cell(monkeypatch, recwarn):
    import contextlib
    import warnings

    import distributed.core

    @contextlib.contextmanager
    def always_slow(duration, msg):  # as if creating the directory took 2 s
        yield
        warnings.warn(msg.format(duration=2.0), stacklevel=2)

    monkeypatch.setattr(distributed.core, "warn_on_duration", always_slow)
    with local_cluster(n_workers=1, memory_limit="500MB") as cluster:
        assert len(cluster.workers) == 1
    assert not [w for w in recwarn if "scratch directories" in str(w.message)]


_ALWAYS_SLOW = """
import contextlib
import warnings

import distributed.core


@contextlib.contextmanager
def _always_slow(duration, msg):  # as if creating the scratch directory took 2 s
    yield
    warnings.warn(msg.format(duration=2.0), stacklevel=2)


distributed.core.warn_on_duration = _always_slow
"""

_START = """
import sys

from distributed import Nanny

from nbgraph.linkers.dask import local_cluster

if __name__ == "__main__":
    kw = {"worker_class": Nanny} if sys.argv[1] == "plain-nanny" else {}
    with local_cluster(n_workers=1, memory_limit="500MB", **kw) as cluster:
        assert len(cluster.workers) == 1
    print("started")
"""


def test_start_up_warnings_of_worker_processes_do_not_reach_stderr(tmp_path):
    """Every process of the cluster (the workers too: they share the notebook
    kernel's standard error) raises the slow-scratch-directory hint; none of it
    is printed (with distributed's own Nanny, the worker process prints it)."""
    import os
    import pathlib
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_ALWAYS_SLOW)
    (tmp_path / "start.py").write_text(_START)
    root = pathlib.Path(nbgraph.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(root)]))
    out = {}
    for how in ("quiet", "plain-nanny"):
        done = subprocess.run([sys.executable, str(tmp_path / "start.py"), how], env=env,
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0 and "started" in done.stdout, done.stderr
        out[how] = done.stderr
    assert "scratch directories" in out["plain-nanny"]  # the worker process printed it
    assert out["quiet"] == "", out["quiet"]
