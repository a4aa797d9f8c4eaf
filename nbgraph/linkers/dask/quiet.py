"""Cluster processes whose start-up warnings are logged, not printed.

A notebook cell that starts a cluster must not get a stderr output from it.
distributed prints performance hints as warnings while the scheduler, the
nannies and the *worker processes* start (on a loaded machine, "Creating
scratch directories is taking a surprisingly long time" when setting up a
scratch directory takes over a second); a worker process writes them to the
standard error it shares with the notebook kernel, which forwards it into
the cell.  Inside :func:`quiet_start`, every warning is logged at DEBUG on the
``nbgraph.linkers.dask`` logger of the process that raised it instead;
:class:`QuietNanny` starts :class:`QuietWorker` processes, and both start
inside it.  (This module imports ``distributed``; :func:`quiet_start` alone
is in :mod:`~nbgraph.linkers.dask.cluster`.)
"""

from distributed import Nanny, Worker

from nbgraph.linkers.dask.cluster import quiet_start

__all__ = ["QuietNanny", "QuietWorker"]


class QuietWorker(Worker):
    """A distributed Worker whose start-up warnings are logged, not printed."""

    def __init__(self, *args, **kwargs):
        with quiet_start():
            super().__init__(*args, **kwargs)

    async def start_unsafe(self):
        """Worker.start_unsafe, its warnings logged."""
        with quiet_start():
            return await super().start_unsafe()


class QuietNanny(Nanny):
    """A distributed Nanny starting :class:`QuietWorker` processes, its own
    construction's warnings logged.  (Its asynchronous start is not wrapped:
    the nannies of a cluster start concurrently on one event loop, and
    ``warnings.catch_warnings`` contexts that do not nest would leave the
    process's warning filters in one of their states.  :func:`local_cluster`
    holds one context around the whole start in the process that makes the
    cluster.)"""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("worker_class", QuietWorker)
        with quiet_start():
            super().__init__(*args, **kwargs)
