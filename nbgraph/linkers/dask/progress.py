"""Computing dask values with dask's progress bar, for the scheduler in use."""

__all__ = ["compute_with_progress"]


def _client(scheduler):
    try:
        from distributed import Client, default_client
    except ImportError:  # pragma: no cover - distributed is part of nbgraph[dask]
        return None
    if isinstance(scheduler, Client):
        return scheduler
    if scheduler is None:
        try:
            return default_client()
        except ValueError:
            return None
    return None


def compute_with_progress(values, scheduler=None):
    """``dask.compute(*values)`` showing a progress bar: ``distributed.progress``
    on the futures with a ``distributed`` Client (a widget in a notebook, text
    elsewhere), :class:`dask.diagnostics.ProgressBar` with the local schedulers."""
    import dask

    client = _client(scheduler)
    if client is not None:
        from distributed import progress

        futures = client.compute(list(values))
        bar = progress(futures)  # text: blocks until done; notebook: a widget to show
        if bar is not None and hasattr(bar, "_ipython_display_"):
            from IPython.display import display

            display(bar)
        return client.gather(futures)
    from dask.diagnostics import ProgressBar

    kwargs = {} if scheduler is None else {"scheduler": scheduler}
    with ProgressBar():
        return list(dask.compute(*values, **kwargs))
