"""Pictures that fit the page: SVG wrapped as an ``<img>`` that scales down, never up.

Every diagram nbgraph shows in a notebook goes through :func:`img_html`: the
SVG becomes a ``data:`` URI in an ``<img>`` whose ``width`` is the picture's
natural width and whose style caps it at the output area's width
(``max-width:100%``), so a wide diagram shrinks to fit and a small one keeps
its size.  This survives every place a notebook is read:

- JupyterLab, trusted or not: an untrusted notebook's HTML is sanitised,
  which strips inline ``<svg>`` down to its text (labels strung together)
  but keeps an ``<img>`` with a ``data:`` source, its ``alt`` and ``title``;
- nbconvert's HTML export, VS Code and other front ends that show HTML.

The ``alt`` text says what the picture shows (for screen readers and
exporters that check it), the ``title`` shows as a tooltip, and a click
(where the notebook is trusted, so inline handlers run) switches between
fitted and full size, scrolling sideways inside the output when needed.

:func:`combine_svgs` puts several SVG pictures in one SVG, side by side or,
when that would be wider than :data:`PAGE_WIDTH`, stacked.
"""

import base64
import html
import re

__all__ = ["PAGE_WIDTH", "img_html", "svg_size", "svgs_in", "unwrap_pictures", "combine_svgs",
           "SideBySide", "side_by_side"]

#: Width (px) of a JupyterLab output area in a typical window: pictures wider
#: than this are scaled down there; :func:`combine_svgs` stacks past it.
PAGE_WIDTH = 868

_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)(pt|px)?"[^>]*?\bheight="([\d.]+)(pt|px)?"',
                   re.DOTALL)
_SIZE_HW = re.compile(r'<svg\b[^>]*?\bheight="([\d.]+)(pt|px)?"[^>]*?\bwidth="([\d.]+)(pt|px)?"',
                      re.DOTALL)

# Click: fitted <-> natural size (the wrapper scrolls sideways at natural size).
_ZOOM_JS = ("var f=this.style.maxWidth!=='none';this.style.maxWidth=f?'none':'100%';"
            "this.style.cursor=f?'zoom-out':'zoom-in';")

assert not set('"&<>') & set(_ZOOM_JS)  # safe inside onclick="..."


def svg_size(svg):
    """``(width, height)`` in CSS pixels of an SVG document (graphviz writes points)."""
    match = _SIZE.search(svg)
    if match is not None:
        w, wu, h, hu = match.groups()
    else:
        match = _SIZE_HW.search(svg)
        if match is None:
            return None
        h, hu, w, wu = match.groups()
    w, h = float(w), float(h)
    return (w * 4 / 3 if wu == "pt" else w), (h * 4 / 3 if hu == "pt" else h)


def img_html(svg, alt, title=None, css_class="nbgraph-diagram"):
    """An ``<img>`` showing ``svg`` at most at its natural size, scaled down to fit.

    ``alt`` describes the picture; ``title`` (default: ``alt``) is its tooltip,
    to which a note on clicking for full size is added when the picture is
    wider than :data:`PAGE_WIDTH`.
    """
    size = svg_size(svg)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    tip = title or alt
    dims = ""
    if size is not None:
        width, height = size
        dims = ' width="%d" height="%d"' % (round(width), round(height))
        if width > PAGE_WIDTH:
            tip += " (scaled to fit: click for full size)"
    return ('<div class="%s" style="max-width:100%%;overflow-x:auto">'
            '<img src="data:image/svg+xml;base64,%s"%s alt="%s" title="%s" '
            'style="max-width:100%%;height:auto;cursor:zoom-in" onclick="%s"></div>'
            % (css_class, data, dims, html.escape(alt, quote=True),
               html.escape(tip, quote=True), _ZOOM_JS))


_IMG = re.compile(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]*)"[^>]*>')


def svgs_in(text):
    """The SVG documents of every picture :func:`img_html` put in ``text``."""
    return [base64.b64decode(m.group(1)).decode("utf-8") for m in _IMG.finditer(text)]


def unwrap_pictures(text):
    """``text`` with each :func:`img_html` picture replaced by its SVG (inline)."""
    return _IMG.sub(lambda m: base64.b64decode(m.group(1)).decode("utf-8"), text)


_OPEN_TAG = re.compile(r"<svg\b[^>]*>", re.DOTALL)
_VIEWBOX = re.compile(r'viewBox="([^"]*)"')


def combine_svgs(parts, titles=(), gap=24, max_width=PAGE_WIDTH):
    """One SVG holding every SVG of ``parts``, each under its title.

    Side by side when their widths add up to at most ``max_width`` pixels,
    else stacked top to bottom.  Each part keeps its own coordinates (it is
    nested as an inner ``<svg>``), so nothing in it is re-laid out.
    """
    titles = list(titles) + [""] * (len(parts) - len(titles))
    sizes = [svg_size(p) or (300.0, 150.0) for p in parts]
    head = 18 if any(titles) else 0
    side = sum(w for w, _ in sizes) + gap * (len(parts) - 1) <= max_width
    inner, x, y = [], 0.0, 0.0
    width = height = 0.0
    for part, title, (w, h) in zip(parts, titles, sizes, strict=False):
        if title:
            inner.append('<text x="%.1f" y="%.1f" font-family="Helvetica,Arial,sans-serif" '
                         'font-size="13" font-weight="bold">%s</text>'
                         % (x + 2, y + 13, html.escape(title)))
        inner.append(_nested(part, x, y + head, w, h))
        if side:
            width = x + w
            height = max(height, head + h)
            x += w + gap
        else:
            width = max(width, w)
            height = y + head + h
            y += head + h + gap
    return ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
            'width="%dpx" height="%dpx" viewBox="0 0 %d %d">\n%s\n</svg>\n'
            % (round(width), round(height), round(width), round(height), "\n".join(inner)))


def _nested(svg, x, y, w, h):
    """``svg`` as an inner ``<svg>`` placed at (x, y) with size w x h pixels."""
    match = _OPEN_TAG.search(svg)
    if match is None:
        return ""
    viewbox = _VIEWBOX.search(match.group(0))
    body = svg[match.end():svg.rfind("</svg>")]
    vb = ' viewBox="%s"' % viewbox.group(1) if viewbox else ""
    return '<svg x="%.1f" y="%.1f" width="%.1f" height="%.1f"%s>%s</svg>' % (
        x, y, w, h, vb, body)


class SideBySide:
    """Several diagrams of one graph in one picture (see :func:`side_by_side`)."""

    def __init__(self, obj, styles=("structure", "compact"), **options):
        self.obj = obj
        self.styles = tuple(styles)
        self.options = options

    def svg(self):
        """The combined SVG text."""
        from nbgraph.display.rich import render_svg

        parts = [render_svg(self.obj, style=s, **self.options) for s in self.styles]
        return combine_svgs(parts, self.styles)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from nbgraph.display import rich

        return rich.picture_bundle(self.obj, self.svg, want=rich.wanted_types(include, exclude),
                                   what=" and ".join(self.styles) + " diagrams")

    def __repr__(self):
        return "<side_by_side %s>" % ", ".join(self.styles)


def side_by_side(obj, styles=("structure", "compact"), **options) -> SideBySide:
    """The diagrams of ``obj`` in several styles as one picture (stacked when too wide).

    ``options`` go to :func:`nbgraph.display.diagram` (``show_types``,
    ``max_nodes``, ...).
    """
    return SideBySide(obj, styles, **options)
