"""Widgets that leave a picture behind: a static snapshot next to every live widget.

A saved notebook keeps a widget as its state plus a ``widget-view`` output.
JupyterLab rebuilds the widget from that state, but nbconvert's HTML export
picks the ``widget-view`` output whenever the state is saved and writes only
a ``<script>`` for the widget manager's JavaScript, fetched from a CDN: an
offline export, GitHub or any viewer without that script shows an empty
output.  The ``text/html`` of the widget's own bundle is never chosen there.

So an nbgraph widget displays as two outputs (:meth:`LiveSnapshot._ipython_display_`):

1. the widget itself (``widget-view``, with ``text/html`` and ``text/plain``
   snapshots in the same bundle for front ends that pick those);
2. a static snapshot (``text/html``: the diagram and what the panel shows),
   displayed with a ``display_id`` and updated whenever the widget changes,
   so the saved file always holds a picture of the current state.

Where the widget is live (JupyterLab, the export's widget manager online),
the widget carries a one-line stylesheet hiding *its* snapshot
(``nbgraph-snapshot-<model id>``), so the picture is not shown twice; where
it is not, the snapshot is what the reader sees.
"""

from __future__ import annotations

import html
import re

__all__ = ["LiveSnapshot", "snapshot_class", "hide_style"]

_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def snapshot_class(model_id: str) -> str:
    """The CSS class of the snapshot output of the widget ``model_id``."""
    return "nbgraph-snapshot-" + _SAFE.sub("", str(model_id))


def hide_style(model_id: str) -> str:
    """A ``<style>`` hiding the snapshot of ``model_id`` (and its output box, in Lab)."""
    cls = snapshot_class(model_id)
    return ("<style>.%s{display:none !important}"
            ".jp-OutputArea-child:has(.%s){display:none !important}</style>" % (cls, cls))


class _Snapshot:
    """The displayable snapshot of a widget (text/html and text/plain)."""

    def __init__(self, widget):
        self.widget = widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        w = self.widget
        try:
            body = w.snapshot_html()
        except Exception as exc:  # a display must never fail the cell
            body = "<p><i>(snapshot unavailable: %s)</i></p>" % html.escape(str(exc))
        cls = snapshot_class(getattr(w, "model_id", "") or "")
        return {"text/plain": repr(w),
                "text/html": '<div class="nbgraph-snapshot %s">%s</div>' % (cls, body)}


class LiveSnapshot:
    """Mixin for an ipywidgets panel with ``snapshot_html()``: displays the widget
    and its static snapshot, and keeps the snapshot current (:meth:`update_snapshot`).

    The panel puts :meth:`snapshot_hider` among its children.
    """

    _snapshot_handle = None

    def snapshot_hider(self):
        """A hidden HTML widget whose stylesheet hides this widget's snapshot when live."""
        import ipywidgets as w

        return w.HTML(hide_style(self.model_id), layout=w.Layout(display="none"))

    def _repr_mimebundle_(self, **kwargs):
        """The widget, plus a ``text/html`` snapshot of what it shows now."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        try:
            bundle["text/html"] = self.snapshot_html()
        except Exception as exc:  # a display must never fail the cell
            bundle["text/html"] = "<p><i>(snapshot unavailable: %s)</i></p>" % html.escape(
                str(exc))
        return bundle

    def _ipython_display_(self):
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        self._snapshot_handle = display(_Snapshot(self), display_id=True)

    def update_snapshot(self):
        """Rewrite the displayed snapshot from the panel's current state (no-op if not shown)."""
        handle = self._snapshot_handle
        if handle is None:
            return
        try:
            handle.update(_Snapshot(self))
        except Exception:  # no kernel to send it to: nothing to update
            pass
