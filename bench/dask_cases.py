"""Dask linker rows (issue 18): nbgraph's ``linker="dask"`` beside hand-written
``dask.array`` code for the same expression, on the same LocalCluster, in one run.

Opt-in (each row moves gigabytes): ``NBGRAPH_BENCH_DASK=1 python -m bench -k dask``
(``make bench-dask``).  Every row runs with 1 and with 2 worker processes (one
thread, 2 GB each, on 127.0.0.1).  Inputs are generated lazily in 64 MB
chunks by ``da.random.default_rng`` inside the timed computation (as an
out-of-core job reads them), on both sides; elementwise results are summed
by dask on both sides so nothing is gathered onto the driver.  The "numpy"
column holds the hand-written dask time; the target is >= 1.5x its
throughput (a time ratio <= 0.67).  ``N`` defaults to 2e8 elements
(``NBGRAPH_BENCH_DASK_N`` changes it; the logistic regression uses N/4 rows
of 10 features, 5e7 x 10 at the default); each side runs twice, best kept
(``NBGRAPH_BENCH_DASK_REPEAT``).
"""

import atexit
import os
import time

import numpy as np

__all__ = ["cases"]

N = int(float(os.environ.get("NBGRAPH_BENCH_DASK_N", "2e8")))
REPEAT = int(os.environ.get("NBGRAPH_BENCH_DASK_REPEAT", "2"))
CHUNK = 8_000_000  # float64 elements: 64 MB
_clients = {}


def _client(n_workers):
    if n_workers not in _clients:
        for old in list(_clients):  # one cluster at a time on this machine
            client, cluster = _clients.pop(old)
            client.close()
            cluster.close()
        from distributed import Client

        from nbgraph.linkers.dask import local_cluster

        cluster = local_cluster(n_workers=n_workers, memory_limit="2GB")
        _clients[n_workers] = (Client(cluster), cluster)
    return _clients[n_workers][0]


@atexit.register
def _close():
    for client, cluster in _clients.values():
        client.close()
        cluster.close()


def _timed(make):
    def run():
        start = time.perf_counter()
        make()
        return time.perf_counter() - start
    return run


def _inputs(k, n=None):
    import dask.array as da

    rng = da.random.default_rng(18)
    return [rng.standard_normal(n or N, chunks=CHUNK) for _ in range(k)]


def _elementwise(expr_nb, expr_da, k, n_workers):
    def setup(linker):
        import dask

        import nbgraph as ng
        import nbgraph.tensor as nt
        from nbgraph.linkers.dask import DaskLinker

        client = _client(n_workers)
        vs = [nt.dvector(name) for name in "xyz"[:k]]
        f = ng.function(vs, expr_nb(nt, *vs), linker=DaskLinker(scheduler=client))

        def ours():
            return dask.compute(f(*_inputs(k)).sum(), scheduler=client)

        def theirs():
            return dask.compute(expr_da(*_inputs(k)).sum(), scheduler=client)
        return _timed(ours), _timed(theirs), None
    return setup


def _sum_sq(n_workers):
    def setup(linker):
        import nbgraph as ng
        import nbgraph.tensor as nt
        from nbgraph.linkers.dask import DaskLinker

        client = _client(n_workers)
        x, y = nt.dvector("x"), nt.dvector("y")
        f = ng.function([x, y], ((x - y) ** 2).sum(),
                        linker=DaskLinker(compute=True, scheduler=client))

        def theirs():
            a, b = _inputs(2)
            return ((a - b) ** 2).sum().compute(scheduler=client)
        return _timed(lambda: f(*_inputs(2))), _timed(theirs), None
    return setup


def _logreg(n_workers):
    cols = 10
    rows = N // 4

    def data():
        import dask.array as da

        X = da.random.default_rng(5).standard_normal((rows, cols),
                                                     chunks=(CHUNK // cols, cols))
        return X, (X[:, 0] > 0).astype("float64")

    def setup(linker):
        import dask
        import dask.array as da

        import nbgraph as ng
        import nbgraph.tensor as nt
        from nbgraph.linkers.dask import DaskLinker

        client = _client(n_workers)
        w0 = np.full(cols, 0.01)
        Xv, tv = nt.dmatrix("X"), nt.dvector("t")
        w = ng.shared(w0.copy(), "w")
        p = nt.sigmoid(nt.dot(Xv, w))
        cost = -(tv * nt.log(p) + (1 - tv) * nt.log(1 - p)).mean()
        f = ng.function([Xv, tv], ng.grad(cost, w),
                        linker=DaskLinker(compute=True, scheduler=client))

        def theirs():
            X, t = data()
            p = 1 / (1 + da.exp(-X.dot(w0)))
            return dask.compute(X.T.dot(p - t) / rows, scheduler=client)
        return _timed(lambda: f(*data())), _timed(theirs), None
    return setup


def cases():
    """The rows, when ``NBGRAPH_BENCH_DASK=1`` (else none)."""
    if os.environ.get("NBGRAPH_BENCH_DASK") != "1":
        return []
    try:
        import distributed  # noqa: F401
    except ImportError:
        return []
    from bench.cases import Case

    size = "%.0e" % N
    rows = []
    for w in (1, 2):
        tag = ", %d worker%s" % (w, "" if w == 1 else "s")
        rows += [
            Case("dask: x + y*2.0 - z, N=%s%s" % (size, tag),
                 _elementwise(lambda nt, x, y, z: x + y * 2.0 - z,
                              lambda x, y, z: x + y * 2.0 - z, 3, w),
                 self_timed=True, repeat=REPEAT, target=1 / 1.5, per_numpy=True),
            Case("dask: exp(-x**2/2)*sin(y) + x*y, N=%s%s" % (size, tag),
                 _elementwise(lambda nt, x, y: nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y,
                              lambda x, y: _np_expr(x, y), 2, w),
                 self_timed=True, repeat=REPEAT, target=1 / 1.5, per_numpy=True),
            Case("dask: sum((x - y)**2), N=%s%s" % (size, tag), _sum_sq(w),
                 self_timed=True, repeat=REPEAT, target=1 / 1.5, per_numpy=True),
            Case("dask: logreg grad, X %.0ex10%s" % (N // 4, tag), _logreg(w),
                 self_timed=True, repeat=REPEAT, target=1 / 1.5, per_numpy=True),
        ]
    return rows


def _np_expr(x, y):
    import dask.array as da

    return da.exp(-x ** 2 / 2) * da.sin(y) + x * y
