"""The notebook side of :mod:`nbgraph.core.progress`: a line in the running cell, cleared when done.

:func:`notebook_reporter` shows a long compile or rewrite (one that passed
:data:`nbgraph.core.progress.DELAY`) as a small HTML line (an hourglass, the stage
and the seconds so far), updated in place (a
``display_id``) and replaced by an empty output when the work ends.  It shows
only in a kernel someone is watching: a run without a front end to answer
input (``allow_stdin`` false: nbclient, nbval, ``jupyter nbconvert
--execute``) shows nothing, so stored notebooks never keep a progress line
whose presence would depend on the machine's speed.  Outside a kernel it
defers to the terminal reporter.  Installed by ``import nbgraph.display``.
"""

from __future__ import annotations

import sys

from nbgraph.core import progress

__all__ = ["notebook_reporter", "install_reporter", "watched_kernel"]

_handle = None


def watched_kernel() -> bool | None:
    """True in a kernel with a front end answering input; False in a headless run;
    None outside a kernel."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent("shell")
        return bool(parent.get("content", {}).get("allow_stdin", False))
    except Exception:
        return False


def notebook_reporter(event: str, label: str, seconds: float) -> None:
    """The reporter ``import nbgraph.display`` installs (see the module docstring)."""
    global _handle
    watched = watched_kernel()
    if watched is None:
        progress.terminal_reporter(event, label, seconds)
        return
    if not watched:
        return
    import html

    from IPython.display import display

    if event == "done":
        if _handle is not None:
            _handle.update({"text/plain": ""}, raw=True)
            _handle = None
        return
    bundle = {"text/plain": "%s \u2026 %.1f s" % (label, seconds),
              "text/html": '<div class="nbgraph-progress" style="color:#666;font-size:0.9em">'
                           '\u231b %s &hellip; %.1f s</div>' % (html.escape(label), seconds)}
    if _handle is None:
        _handle = display(bundle, raw=True, display_id=True)
    else:
        _handle.update(bundle, raw=True)


def install_reporter() -> None:
    """Use :func:`notebook_reporter` unless progress was turned off."""
    if progress.get_reporter() is progress.terminal_reporter:
        progress.set_reporter(notebook_reporter)
