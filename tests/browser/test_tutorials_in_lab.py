"""Each stored tutorial, opened in JupyterLab without running it, as a newcomer first sees it.

JupyterLab serves a trusted copy of notebooks/ (as ``make lab`` leaves them) and headless
Chromium opens every notebook in a fresh workspace, with the output area about 868 px wide.
Nothing is executed.  For each notebook:

- every stored diagram shows as an SVG image (an ``<img>`` of ``image/svg+xml``, loaded);
- no output shows a widget's raw repr (``GraphExplorer(children=(HBox(...``) or Lab's
  "untrusted SVG" notice;
- no diagram of up to 40 nodes needs horizontal scrolling: it fits the output area;
- a screenshot of the notebook's first screen and of each of its first pictures is saved
  under test-artifacts/browser/.
"""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SMALL = 40          # diagrams of at most this many nodes must fit without scrolling
SCREENSHOTS = 3     # pictures photographed per notebook
TIMEOUT_MS = 90_000

RAW_WIDGET_REPR = re.compile(r"\b(GraphExplorer|VBox|HBox)\(children=")

# What the page shows: per output, its size and any SVG picture in it.
COLLECT = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const outputs = [];
  for (const o of panel.querySelectorAll('.jp-OutputArea-output')) {
    const box = o.getBoundingClientRect();
    const pictures = [];
    for (const img of o.querySelectorAll('img')) {
      if (!img.src.startsWith('data:image/svg+xml')) continue;
      let svg = '';
      const comma = img.src.indexOf(',');
      const head = img.src.slice(0, comma);
      const body = img.src.slice(comma + 1);
      svg = head.endsWith(';base64') ? atob(body) : decodeURIComponent(body);
      const r = img.getBoundingClientRect();
      pictures.push({nodes: (svg.match(/class="node"/g) || []).length,
                     loaded: img.complete && img.naturalWidth > 0,
                     width: r.width, natural: img.naturalWidth,
                     right: r.right, alt: img.alt || '',
                     ours: img.closest('[class^="nbgraph"]') !== null});
    }
    outputs.push({width: o.clientWidth, scroll: o.scrollWidth, right: box.right,
                  text: o.innerText.slice(0, 2000), pictures: pictures});
  }
  return outputs;
}
"""


def stored_outputs(path):
    """(number of outputs, number of pictures) stored in the notebook file."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    outputs = pictures = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            outputs += 1
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                continue  # the live widget shows, not its text/html (it may draw inline SVG)
            html = data.get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            if "image/svg+xml" in data or "data:image/svg+xml" in html:
                pictures += 1
    return outputs, pictures


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_tutorial_shows_its_pictures_on_first_open(lab, browser, artifacts, path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    n_outputs, n_pictures = stored_outputs(path)
    page = browser.new_page()
    try:
        page.goto(lab.url(path.name))
        panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        page.wait_for_selector(panel + " .jp-Notebook", timeout=TIMEOUT_MS)
        page.wait_for_function(
            "n => document.querySelectorAll('%s .jp-OutputArea-output').length >= n" % panel,
            arg=n_outputs, timeout=TIMEOUT_MS)
        try:  # widgets render after their manager has loaded the saved state
            page.wait_for_function(
                "n => document.querySelectorAll(\"%s .jp-OutputArea-output "
                "img[src^='data:image/svg+xml']\").length >= n" % panel,
                arg=n_pictures, timeout=TIMEOUT_MS)
        except PlaywrightTimeout:
            pass  # reported below, with what did show
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('%s .jp-OutputArea-output img'))"
            ".every(i => i.complete)" % panel, timeout=TIMEOUT_MS)
        shown = page.evaluate(COLLECT)
        page.screenshot(path=str(artifacts / ("%s.png" % path.stem)))
        images = page.locator(panel + " .jp-OutputArea-output img[src^='data:image/svg+xml']")
        for k in range(min(SCREENSHOTS, images.count())):
            images.nth(k).scroll_into_view_if_needed()
            images.nth(k).screenshot(path=str(artifacts / ("%s-picture%d.png" % (path.stem, k))))
    finally:
        page.close()

    pictures = [pic for out in shown for pic in out["pictures"]]
    assert len(shown) >= n_outputs
    assert len(pictures) >= n_pictures, "%d of %d stored pictures show as SVG images" % (
        len(pictures), n_pictures)
    assert all(pic["loaded"] for pic in pictures)
    assert all(pic["alt"] for pic in pictures if pic["ours"]), "a diagram without alt text"
    for out in shown:
        assert not RAW_WIDGET_REPR.search(out["text"]), out["text"][:300]
        assert "Cannot display an untrusted SVG" not in out["text"]
        for pic in out["pictures"]:
            if pic["nodes"] <= SMALL:
                assert pic["width"] <= out["width"] + 1 and pic["right"] <= out["right"] + 1, pic
                assert out["scroll"] <= out["width"] + 1, (out["scroll"], out["width"])
            assert pic["width"] <= pic["natural"] + 1  # scaled down, never up
