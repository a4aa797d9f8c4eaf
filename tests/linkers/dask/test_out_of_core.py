"""Out of core: two worker processes with a 1 GB memory limit each compute
``sum((x - y)**2)`` over 3.2 GB of float64 and a logistic-regression gradient
over a 2.4 GB design matrix, generated lazily in 64 MB chunks, without a worker
being killed (the nanny restarts a worker past its limit: the worker set
would change).  Values are checked against their statistical expectation.

Slow on a loaded 2-core machine (about a minute): marked ``slow``; it runs
when ``NBGRAPH_SLOW_TESTS=1`` (``make bench-dask`` sets it) or
``-m slow`` is given.  A failure says why: its message carries the
scheduler's, the nannies' and the workers' logs (warnings included: memory
pauses, restarts, lost connections) and the workers' memory.
"""

import contextlib
import logging
import os

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker, local_cluster

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("NBGRAPH_SLOW_TESTS") != "1",
    reason="out-of-core cluster run (about a minute): set NBGRAPH_SLOW_TESTS=1")]

CHUNK = 8_000_000  # float64 elements: 64 MB


def _logs(client):
    """The cluster's logs and the workers' memory, as text (best effort)."""
    parts = []
    for title, get in (("scheduler", lambda: {"scheduler": client.get_scheduler_logs()}),
                       ("nanny", lambda: client.get_worker_logs(nanny=True)),
                       ("worker", lambda: client.get_worker_logs())):
        try:
            for who, lines in get().items():
                parts += ["-- %s %s" % (title, who)] + ["%s %s" % line for line in lines]
        except Exception as exc:  # a dead cluster cannot say more
            parts.append("-- %s logs unavailable: %r" % (title, exc))
    try:
        for who, info in client.scheduler_info()["workers"].items():
            parts.append("-- memory of %s: %s" % (who, info.get("metrics", {}).get("memory")))
    except Exception as exc:
        parts.append("-- worker memory unavailable: %r" % (exc,))
    return "\n".join(parts)


@contextlib.contextmanager
def _explained(client):
    """Re-raise any failure with the cluster's logs attached."""
    try:
        yield
    except BaseException as exc:
        raise AssertionError("%s: %s\n%s" % (type(exc).__name__, exc, _logs(client))) from exc


def test_sum_of_squares_and_a_logistic_gradient_larger_than_a_worker():
    with local_cluster(n_workers=2, memory_limit="1GB", silence_logs=logging.WARNING) \
            as cluster, distributed.Client(cluster) as client, _explained(client):
        workers = set(client.scheduler_info()["workers"])
        rng = da.random.default_rng(2026)
        n = 200_000_000  # x and y: 1.6 GB each
        x = rng.standard_normal(n, chunks=CHUNK)
        y = rng.standard_normal(n, chunks=CHUNK)
        a, b = nt.dvector("a"), nt.dvector("b")
        f = nbgraph.function([a, b], ((a - b) ** 2).sum(),
                             linker=DaskLinker(compute=True, scheduler=client))
        total = float(f(x, y))
        assert abs(total / (2 * n) - 1) < 1e-3  # E[(x-y)^2] = 2

        rows, cols = 30_000_000, 10  # X: 2.4 GB
        X = rng.standard_normal((rows, cols), chunks=(CHUNK // cols, cols))
        t = (X[:, 0] > 0).astype("float64")
        Xv, tv = nt.dmatrix("X"), nt.dvector("t")
        w = nbgraph.shared(np.zeros(cols), "w")
        p = nt.sigmoid(nt.dot(Xv, w))
        cost = -(tv * nt.log(p) + (1 - tv) * nt.log(1 - p)).mean()
        grad = nbgraph.function([Xv, tv], nbgraph.grad(cost, w),
                                linker=DaskLinker(compute=True, scheduler=client))
        g = grad(X, t)
        assert grad.last_plan is not None  # one task per block of rows, partials merged
        # at w = 0: p = 1/2, grad = E[x (1/2 - 1{x0 > 0})] = (-E|x0|/2, 0, ..., 0)
        assert abs(g[0] + np.sqrt(2 / np.pi) / 2) < 2e-3
        assert np.all(np.abs(g[1:]) < 2e-3)
        assert set(client.scheduler_info()["workers"]) == workers  # none was killed
