"""Dask linker rows (issue 18): nbgraph's ``linker="dask"`` beside hand-written
``dask.array`` code for the same expression, on the same LocalCluster, in one run.

Run it on its own (a table of every row's throughput ratio, then the scaling
from 1 to 2 workers)::

    python -m bench.dask_cases --n 2e8            # the issue's sizes
    python -m bench.dask_cases --n 2e7 -k sum     # smaller, one row

or inside ``make bench`` with ``NBGRAPH_BENCH_DASK=1`` (``make bench-dask``),
where ``NBGRAPH_BENCH_DASK_N`` sets N.

What a row measures (the same on both sides): each cluster (1 worker, then
2 workers; one thread each, on 127.0.0.1) gets the same inputs, generated
and *persisted in worker memory before the timed region* (``--inputs
generated`` times their generation too, as an out-of-core job reading them
would); block i of every input lives on the same worker.  The timed region
builds the expression's dask graph and computes it *into worker memory*
(``persist``): an elementwise result stays distributed, one block per
input block, as it would before being written to zarr or reduced further;
nothing is gathered onto the driver, so no row times a 1.6 GB transfer over
TCP.  The workers *never spill to disk* (dask's ``target``/``spill``
fractions off) and their memory limit holds the inputs, one result, the
blocks in flight and the released blocks nbgraph's workers keep for reuse
(``--no-pool`` turns that off); a measurement starts only when the
previous result's blocks are released.  Memory a worker takes fresh from
the system costs more than the arithmetic on this virtual machine (its
host takes freed memory back after ~2 s: 50-135 ms of CPU to fault in a
64 MB block, 25 ms for nbgraph's ``x + y*2.0 - z`` pass over it); nbgraph's
workers reuse the blocks of their released results
(:mod:`nbgraph.linkers.dask.reuse`), dask's NumPy code allocates anew.
(Before, the 1-worker ``x + y*2.0 - z`` row at 2e8 held 4.8 GB of inputs
plus a 1.6 GB result under a 9.8 GB limit: past dask's 60% spill target,
both sides spent most of their ~5.3 s writing blocks to disk and reading
them back.)  A row that spilled anyway says so
("spilled N MB").  Both sides run alternately, ``--repeat`` times, best
kept; a row shows wall seconds, the CPU seconds the workers spent (summed
over worker processes, read with ``time.process_time`` in each worker
before and after), and the throughput ratio (hand-written time / nbgraph
time; target >= 1.5).  N is the number of elements per vector; the
logistic regression uses N/4 rows of 10 features (5e7 x 10 at the default
2e8).
"""

import argparse
import atexit
import os
import sys
import time

import numpy as np

__all__ = ["cases", "ROWS", "run", "main"]

DEFAULT_N = 2e8
CHUNK = 8_000_000  # float64 elements: 64 MB blocks
TARGET = 1.5
_clients: dict = {}


# -- clusters -------------------------------------------------------------
#: Worker memory settings of the bench's clusters: nothing is spilled to disk
#: (a spilled row times the disk on both sides); pausing at 80% of the limit
#: and the nanny's restart at 95% stay dask's.
NO_SPILL = {"distributed.worker.memory.target": False,
            "distributed.worker.memory.spill": False}


def _memory_limit(n, n_workers):
    """Per-worker limit holding the persisted inputs and a result (at most 4 vectors
    of n float64 in all) and 1 GB for the blocks in flight and the process itself
    at 60% of it: the released blocks nbgraph's kernels keep for reuse (at most
    1/8 of the limit, :mod:`nbgraph.linkers.dask.reuse`) fit below dask's pause
    fraction (80%) with 7% to spare, so neither side's tasks are ever paused."""
    need = 4 * 8 * n / n_workers + 1e9
    return "%dMB" % max(2000, int(need / 0.6 / 1e6))


#: Environment of the workers (``--no-pool`` adds NBGRAPH_DASK_BLOCK_POOL=0).
WORKER_ENV: dict = {}


def _client(n_workers, n, memory_limit=None):
    if n_workers not in _clients:
        for old in list(_clients):  # one cluster at a time on this machine
            client, cluster = _clients.pop(old)
            client.close()
            cluster.close()
        import dask
        from distributed import Client

        from nbgraph.linkers.dask import local_cluster

        with dask.config.set(NO_SPILL):  # the nannies hand it to their workers
            cluster = local_cluster(n_workers=n_workers, env=dict(WORKER_ENV),
                                    memory_limit=memory_limit or _memory_limit(n, n_workers))
        _clients[n_workers] = (Client(cluster), cluster)
    return _clients[n_workers][0]


@atexit.register
def _close():
    for client, cluster in _clients.values():
        client.close()
        cluster.close()
    _clients.clear()


def _spilled_bytes(dask_worker):
    """Bytes this worker has written to disk so far (0 when it cannot spill)."""
    metrics = getattr(dask_worker.data, "cumulative_metrics", None) or {}
    return sum(v for (label, unit), v in metrics.items()
               if unit == "bytes" and label == "disk-write")


def _held_keys(dask_worker):
    return len(dask_worker.data)


def _spilled(client):
    return sum(client.run(_spilled_bytes).values())


def _wait_released(client, held, timeout=30.0):
    """Wait until the workers hold ``held`` keys again (a dropped result's blocks
    are released asynchronously: the next measurement must not find them)."""
    deadline = time.perf_counter() + timeout
    while sum(client.run(_held_keys).values()) > held and time.perf_counter() < deadline:
        time.sleep(0.01)


def _worker_cpu(client):
    return sum(client.run(time.process_time).values())


# -- inputs ---------------------------------------------------------------
def _vectors(k, n, chunk, seed=18):
    """``k`` vectors whose i-th blocks are slices of one generated block (so a
    worker holding block i of x holds block i of y and z: no transfers)."""
    import dask.array as da

    stacked = da.random.default_rng(seed).standard_normal((k, n), chunks=(k, chunk))
    return [stacked[i] for i in range(k)]


def _design(n, chunk, cols=10):
    import dask.array as da

    rows = n // 4
    X = da.random.default_rng(5).standard_normal((rows, cols), chunks=(chunk // cols, cols))
    return [X, (X[:, 0] > 0).astype("float64")]


# -- the rows: (name, inputs(n, chunk), build ours(client), theirs(*inputs)) -------------
def _elementwise(expr_nb, k):
    def build(client):
        import nbgraph as ng
        import nbgraph.tensor as nt
        from nbgraph.linkers.dask import DaskLinker

        vs = [nt.dvector(name) for name in "xyz"[:k]]
        return ng.function(vs, expr_nb(nt, *vs), linker=DaskLinker(scheduler=client))
    return build


def _sum_sq_build(client):
    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.linkers.dask import DaskLinker

    x, y = nt.dvector("x"), nt.dvector("y")
    return ng.function([x, y], ((x - y) ** 2).sum(), linker=DaskLinker(scheduler=client))


def _logreg_build(client):
    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.linkers.dask import DaskLinker

    Xv, tv = nt.dmatrix("X"), nt.dvector("t")
    w = ng.shared(np.full(10, 0.01), "w")
    p = nt.sigmoid(nt.dot(Xv, w))
    cost = -(tv * nt.log(p) + (1 - tv) * nt.log(1 - p)).mean()
    return ng.function([Xv, tv], ng.grad(cost, w), linker=DaskLinker(scheduler=client))


def _logreg_theirs(X, t):
    import dask.array as da

    p = 1 / (1 + da.exp(-X.dot(np.full(10, 0.01))))
    return X.T.dot(p - t) / X.shape[0]


def _axpy(x, y, z):
    return x + y * 2.0 - z


def _expsin(x, y):
    import dask.array as da

    return da.exp(-x ** 2 / 2) * da.sin(y) + x * y


ROWS = [
    ("x + y*2.0 - z", lambda n, c: _vectors(3, n, c),
     _elementwise(lambda nt, x, y, z: x + y * 2.0 - z, 3), _axpy),
    ("exp(-x**2/2)*sin(y) + x*y", lambda n, c: _vectors(2, n, c),
     _elementwise(lambda nt, x, y: nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y, 2), _expsin),
    ("sum((x - y)**2)", lambda n, c: _vectors(2, n, c), _sum_sq_build,
     lambda x, y: ((x - y) ** 2).sum()),
    ("logreg grad, X (N/4)x10", _design, _logreg_build, _logreg_theirs),
]


# -- timing ---------------------------------------------------------------
def _measure(client, make, inputs):
    """(wall s, worker CPU s, spilled bytes) of building ``make(*inputs)`` and
    computing it into worker memory (``persist``: an elementwise result stays
    distributed, as it would before being written to zarr; nothing is
    gathered), the result released before returning."""
    from distributed import wait

    held = sum(client.run(_held_keys).values())
    spilled0 = _spilled(client)
    cpu0 = _worker_cpu(client)
    start = time.perf_counter()
    result = client.persist(make(*inputs))
    wait(result)
    wall = time.perf_counter() - start
    cpu = _worker_cpu(client) - cpu0
    del result
    _wait_released(client, held)
    return wall, cpu, _spilled(client) - spilled0


def time_row(row, n_workers, n, chunk=CHUNK, repeat=3, persisted=True, memory_limit=None):
    """``{"ours": (wall, cpu, spilled), "theirs": (wall, cpu, spilled)}``, best
    (least wall) of ``repeat`` each, with the bytes spilled over all runs of
    that side (the two sides alternate, so load changes hit both)."""
    from distributed import wait

    name, inputs, build, theirs = row
    client = _client(n_workers, n, memory_limit)
    ours = build(client)
    data = inputs(n, chunk)
    if persisted:
        data = client.persist(data)
        wait(data)
    for make in (ours, theirs):  # warm: kernels loaded on every worker, pools started
        _measure(client, make, data)
    best = {"ours": None, "theirs": None}
    spilled = {"ours": 0, "theirs": 0}
    for _ in range(repeat):
        for side, make in (("ours", ours), ("theirs", theirs)):
            got = _measure(client, make, data)
            spilled[side] += got[2]
            if best[side] is None or got[0] < best[side][0]:
                best[side] = got
    del data  # the next row's inputs must not meet these
    _wait_released(client, 0)
    return {side: best[side][:2] + (spilled[side],) for side in best}


def _fmt_row(name, w, best):
    (tw, tc, ts), (hw, hc, hs) = best["ours"], best["theirs"]
    ratio = hw / tw
    spill = "" if not (ts or hs) else "  spilled %d/%d MB" % (ts // 1e6, hs // 1e6)
    return "%-28s %2d %9.2f %9.2f %7.2fx %9.2f %9.2f %7.2fx  %s%s" % (
        name, w, tw, hw, ratio, tc, hc, hc / tc if tc else float("nan"),
        "ok" if ratio >= TARGET else "MISS", spill)


def run(n=DEFAULT_N, workers=(1, 2), keyword="", repeat=3, chunk=CHUNK, persisted=True,
        memory_limit=None, out=sys.stdout):
    """Print every row's throughput ratio on each cluster size, then the scaling."""
    n = int(n)
    rows = [r for r in ROWS if keyword in r[0]]
    print("N=%.0e float64 per vector, blocks of %d elements, inputs %s, results persisted "
          "in worker memory (no spilling), nbgraph's block pool %s; load %s" % (
              n, chunk, "persisted before timing" if persisted else "generated inside timing",
              "off" if WORKER_ENV.get("NBGRAPH_DASK_BLOCK_POOL") == "0" else "on",
              "%.1f %.1f %.1f" % os.getloadavg()), file=out)
    head = "%-28s %2s %9s %9s %8s %9s %9s %8s  %s" % (
        "row", "w", "nbgraph s", "dask s", "thru x", "nb cpu s", "da cpu s", "cpu x",
        "target >=%.1fx" % TARGET)
    print(head, file=out)
    print("-" * len(head), file=out, flush=True)
    results = {}
    for w in workers:
        for row in rows:
            best = time_row(row, w, n, chunk, repeat, persisted, memory_limit)
            results[row[0], w] = best
            print(_fmt_row(row[0], w, best), file=out, flush=True)
    _close()
    if len(workers) > 1:
        lo, hi = min(workers), max(workers)
        print("\nscaling %d -> %d workers (wall time ratio t(%d)/t(%d); %d is ideal)" % (
            lo, hi, lo, hi, hi // lo), file=out)
        for row in rows:
            a, b = results[row[0], lo], results[row[0], hi]
            print("%-28s nbgraph %5.2fx   dask %5.2fx" % (
                row[0], a["ours"][0] / b["ours"][0], a["theirs"][0] / b["theirs"][0]),
                file=out)
    return results


def main(argv=None) -> int:
    """``python -m bench.dask_cases``: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m bench.dask_cases", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=float, default=DEFAULT_N,
                        help="elements per vector (default 2e8; logreg: N/4 x 10)")
    parser.add_argument("--workers", default="1,2", help="cluster sizes (default 1,2)")
    parser.add_argument("-k", default="", help="only rows whose name contains this")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunk", type=float, default=CHUNK, help="elements per block")
    parser.add_argument("--inputs", choices=("persisted", "generated"), default="persisted")
    parser.add_argument("--memory-limit", default=None,
                        help="per worker (default: enough for the persisted inputs)")
    parser.add_argument("--no-pool", action="store_true",
                        help="workers do not keep released kernel outputs for reuse")
    args = parser.parse_args(argv)
    if args.no_pool:
        WORKER_ENV["NBGRAPH_DASK_BLOCK_POOL"] = "0"
    run(args.n, tuple(int(w) for w in args.workers.split(",")), args.k, args.repeat,
        int(args.chunk), args.inputs == "persisted", args.memory_limit)
    return 0


# -- `make bench` integration ---------------------------------------------
def _case_setup(row, n_workers, n):
    def setup(linker):
        memo = {}

        def side(which):
            def timed():
                if not memo:
                    memo.update(time_row(row, n_workers, n, repeat=int(os.environ.get(
                        "NBGRAPH_BENCH_DASK_REPEAT", "2"))))
                return memo.pop(which)[0]
            return timed
        return side("ours"), side("theirs"), None
    return setup


def cases():
    """The rows for ``make bench``, when ``NBGRAPH_BENCH_DASK=1`` (else none)."""
    if os.environ.get("NBGRAPH_BENCH_DASK") != "1":
        return []
    try:
        import distributed  # noqa: F401
    except ImportError:
        return []
    from bench.cases import Case

    n = int(float(os.environ.get("NBGRAPH_BENCH_DASK_N", DEFAULT_N)))
    out = []
    for w in (1, 2):
        for row in ROWS:
            out.append(Case("dask: %s, N=%.0e, %d worker%s" % (row[0], n, w, "s"[:w - 1]),
                            _case_setup(row, w, n), self_timed=True, repeat=1,
                            target=1 / TARGET, per_numpy=True))
    return out


if __name__ == "__main__":
    sys.exit(main())
