"""A ``distributed.LocalCluster`` set up for nbgraph's chunk kernels."""

import logging
import warnings

__all__ = ["local_cluster"]

#: distributed's hint that creating its scratch directories took over a second
_SLOW_SCRATCH = "Creating scratch directories is taking a surprisingly long time"


def local_cluster(n_workers: int = 2, memory_limit="1GB", threads_per_worker: int = 1,
                  processes: bool = True, profile: bool = False, **kwargs):
    """A LocalCluster on 127.0.0.1 whose workers run nbgraph kernels with one C
    thread each (dask already runs one task per worker thread; the kernels'
    own thread pool would only compete with it).

    ``memory_limit`` is per worker; logs below ERROR are silenced (spilling and
    shutdown messages would land in notebook cells).  ``profile``: keep dask's
    statistical profiler in the workers (off by default: it samples every
    worker thread each 10 ms, CPU time that only its dashboard would show).
    Close it (``with local_cluster() as cluster:``) when done.  Other keywords
    go to LocalCluster."""
    import dask
    from distributed import LocalCluster

    env = dict(kwargs.pop("env", {}) or {})
    env.setdefault("NBGRAPH_NUM_THREADS", "1")
    kwargs.setdefault("dashboard_address", None)
    kwargs.setdefault("silence_logs", logging.ERROR)  # no spill/shutdown chatter in cells
    # worker processes take the configuration in force when their nannies start;
    # on a loaded machine the scheduler's scratch directory (shared with other
    # clusters, whose stale entries it purges) can take over 1 s to set up, and
    # distributed then prints a performance hint as a UserWarning into the cell
    with dask.config.set({"distributed.worker.profile.enabled": bool(profile)}), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SLOW_SCRATCH, category=UserWarning)
        return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                            memory_limit=memory_limit, processes=processes,
                            host="127.0.0.1", env=env, **kwargs)
