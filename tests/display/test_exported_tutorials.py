"""Every stored tutorial, exported to HTML by nbconvert, shows every output without JavaScript.

This is what a reader of a shared notebook sees offline, on GitHub or in any viewer that
does not load the widget manager's script from a CDN: the page nbconvert's HTML exporter
writes, with its scripts not run.  For each notebook:

- every output area has visible text or a picture (an ``<img>`` or ``<svg>``);
- the only exception is a live widget's placeholder (nbconvert writes a ``<script>`` for
  the widget manager there), and each must be followed in its cell by nbgraph's static
  snapshot of that widget holding a diagram (``nbgraph-snapshot-<model id>``);
- the explorer cell of ``05_magics_and_explorer`` shows the graph: its snapshot's picture
  is an SVG with graph nodes in it.

The notebooks are read as stored (nothing is executed), with their saved widget state.
"""

import base64
import pathlib
import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")
bs4 = pytest.importorskip("bs4")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def export(path):
    """The HTML nbconvert's default HTML exporter writes for the stored notebook."""
    nb = nbformat.read(str(path), as_version=4)
    exporter = nbconvert.HTMLExporter()
    body, _ = exporter.from_notebook_node(
        nb, resources={"metadata": {"name": path.stem, "path": str(path.parent)}})
    return nb, bs4.BeautifulSoup(body, "html.parser")


def visible(output):
    """True when an output area shows something with its scripts not run."""
    for script in output.find_all(["script", "style"]):
        script.extract()
    return bool(output.get_text(" ", strip=True)) or output.find(["img", "svg"]) is not None


def svg_pictures(output):
    """The SVG documents of the pictures in an output area (inline or ``data:`` images)."""
    found = [str(svg) for svg in output.find_all("svg")]
    for img in output.find_all("img"):
        src = img.get("src", "")
        if src.startswith("data:image/svg+xml;base64,"):
            found.append(base64.b64decode(src.split(",", 1)[1]).decode("utf-8"))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_output_of_the_exported_tutorial_shows_something(path):
    nb, soup = export(path)
    has_widget_state = "widgets" in nb.metadata
    cells = soup.select(".jp-Cell.jp-CodeCell")
    n_outputs = 0
    for k, cell in enumerate(cells):
        outputs = cell.select(".jp-OutputArea-output")
        for i, out in enumerate(outputs):
            n_outputs += 1
            widget = out.find("script", attrs={"type": WIDGET_VIEW})
            if widget is not None:
                assert has_widget_state  # nbconvert only writes it with the state saved
                model = re.search(r'"model_id":\s*"([^"]+)"', widget.string or "").group(1)
                later = " ".join(str(o) for o in outputs[i + 1:])
                expected = "nbgraph-snapshot-" + re.sub(r"[^A-Za-z0-9_-]", "", model)
                assert expected in later, (
                    "code cell %d of %s: a widget without its static snapshot" % (k, path.name))
                continue
            assert visible(out), "code cell %d of %s has an empty output: %s" % (
                k, path.name, str(out)[:300])
    assert n_outputs > 0


def test_the_explorer_cell_of_notebook_05_shows_the_graph():
    path = ROOT / "notebooks" / "05_magics_and_explorer.ipynb"
    _, soup = export(path)
    snapshots = soup.select(".nbgraph-snapshot")
    assert snapshots, "the explorer left no static snapshot in the exported page"
    pictures = [svg for snap in snapshots for svg in svg_pictures(snap)]
    assert pictures and all('class="node"' in svg for svg in pictures)
    text = snapshots[0].get_text(" ", strip=True)
    assert "step" in text  # the selected rewrite step is described
