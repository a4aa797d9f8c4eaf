"""Computing dask values with dask's progress bar, for the scheduler in use."""

import re

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
        if bar is None or not hasattr(bar, "_ipython_display_"):
            return client.gather(futures)
        from IPython.display import HTML, display

        display(bar)
        results = client.gather(futures)
        display(HTML(_final_state(bar, len(futures))))
        return results
    from dask.diagnostics import ProgressBar

    kwargs = {} if scheduler is None else {"scheduler": scheduler}
    with ProgressBar():
        return list(dask.compute(*values, **kwargs))


def _final_state(bar, n):
    """A static picture of the finished bar, after the live widget: what a notebook
    shows where widgets do not run (an exported page).  Its class follows the
    display layer's snapshot convention (``nbgraph-snapshot-<model id>``)."""
    model = re.sub(r"[^A-Za-z0-9_-]", "", str(getattr(getattr(bar, "widget", None),
                                                      "model_id", "") or ""))
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="240" height="14">'
           '<rect width="240" height="14" rx="3" fill="#2e7d32"/></svg>')
    return ('<div class="nbgraph-snapshot nbgraph-snapshot-%s">%s '
            '<span>dask: %d result%s computed</span></div>' % (model, svg, n,
                                                                "" if n == 1 else "s"))
