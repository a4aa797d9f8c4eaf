"""A ``distributed.LocalCluster`` set up for nbgraph's chunk kernels.

Start-up is quiet: a notebook cell that starts a cluster must not get a
stderr output from it.  distributed prints performance hints as warnings
while the scheduler, the nannies and the *worker processes* start (on a
loaded machine, "Creating scratch directories is taking a surprisingly long
time" when setting up a scratch directory takes over a second), and a
worker process writes them to the standard error it shares with the
notebook kernel, which forwards it into the cell.  Here every warning raised
while a process starts its part of the cluster is logged at DEBUG on the
``nbgraph.linkers.dask`` logger of that process instead of printed (see
:func:`quiet_start`); the nannies start their workers through
:class:`~nbgraph.linkers.dask.quiet.QuietNanny` for that.  Log records below
ERROR from distributed are silenced (``silence_logs``).
"""

import contextlib
import logging
import warnings

__all__ = ["local_cluster", "quiet_start"]

#: distributed's hint that creating its scratch directories took over a second
_SLOW_SCRATCH = "Creating scratch directories is taking a surprisingly long time"

log = logging.getLogger("nbgraph.linkers.dask")


@contextlib.contextmanager
def quiet_start():
    """Warnings raised inside go to ``log`` at DEBUG instead of being printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        log.debug("while starting a dask cluster: %s: %s", w.category.__name__, w.message)


def local_cluster(n_workers: int = 2, memory_limit="1GB", threads_per_worker: int = 1,
                  processes: bool = True, profile: bool = False, **kwargs):
    """A LocalCluster on 127.0.0.1 whose workers run nbgraph kernels with one C
    thread each (dask already runs one task per worker thread; the kernels'
    own thread pool would only compete with it).

    ``memory_limit`` is per worker; logs below ERROR are silenced (spilling and
    shutdown messages would land in notebook cells) and start-up warnings of
    the scheduler, nannies and workers are logged at DEBUG on the
    ``nbgraph.linkers.dask`` logger (see the module docstring).  ``profile``:
    keep dask's statistical profiler in the workers (off by default: it
    samples every worker thread each 10 ms, CPU time that only its dashboard
    would show).  Close it (``with local_cluster() as cluster:``) when done.
    Other keywords go to LocalCluster."""
    import dask
    from distributed import LocalCluster

    env = dict(kwargs.pop("env", {}) or {})
    env.setdefault("NBGRAPH_NUM_THREADS", "1")
    kwargs.setdefault("dashboard_address", None)
    kwargs.setdefault("silence_logs", logging.ERROR)  # no spill/shutdown chatter in cells
    if processes:
        from nbgraph.linkers.dask.quiet import QuietNanny

        kwargs.setdefault("worker_class", QuietNanny)
    # worker processes take the configuration in force when their nannies start
    with dask.config.set({"distributed.worker.profile.enabled": bool(profile)}), \
            quiet_start():
        return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                            memory_limit=memory_limit, processes=processes,
                            host="127.0.0.1", env=env, **kwargs)
