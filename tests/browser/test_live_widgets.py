"""The widgets live in JupyterLab: a notebook is run in a real kernel and driven as a reader would.

A small notebook is written next to the tutorials in the Lab server's directory, opened in
headless Chromium and run (Run > Run All Cells).  Then:

- the GraphExplorer's slider, moved with the keyboard, changes the drawn graph (the
  diagram's picture changes) and the step description;
- the GraphNavigator starts collapsed (no cluster in its SVG); a click on a collapsed box
  in the picture expands it (its cluster appears), and a click on a node shows its details;
- the static snapshots next to both live widgets are hidden (they are for exports);

with screenshots saved under test-artifacts/browser/.  Every wait is bounded.
"""

import json

import pytest

TIMEOUT_MS = 120_000

CELLS = [
    "import nbgraph\nimport nbgraph.tensor as nt\n"
    "from nbgraph.display import GraphExplorer, GraphNavigator",
    'x = nt.dvector("x")\ny = nt.dscalar("y")\n'
    "explorer = GraphExplorer(((-(-x)) * 1 + x * y * 0 + y).sum())\nexplorer",
    "import numpy as np\nX = nt.dmatrix('X')\nparams, h = [], X\n"
    "for i in range(3):\n"
    "    W = nbgraph.shared(np.eye(3), name='W%d' % i)\n"
    "    params.append(W)\n"
    "    with nbgraph.scope('layer%d' % i):\n"
    "        h = nt.tanh(h.dot(W))\n"
    "cost = h.sum()\ncost.name = 'cost'\n"
    "nav = GraphNavigator([cost] + nbgraph.grad(cost, params), collapse=True)\nnav",
]


def write_notebook(path):
    cells = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [],
              "execution_count": None} for src in CELLS]
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                    "language": "python"}}}))


def run_all(page):
    """Run > Run All Cells, accepting Lab's kernel choice (Python 3) when it asks first
    (then the kernel starts, and the cells are run once it is idle).  A click made
    while the kernel is still starting can be lost: until a cell shows it is queued or
    has run (``[*]``, ``[1]``), wait for the idle kernel and click again (bounded)."""
    _click_run_all(page)
    select = page.locator(".jp-Dialog button", has_text="Select")
    try:
        select.first.wait_for(timeout=15_000)
        select.first.click()
    except Exception:  # no dialog: the kernel was already chosen
        pass
    for _ in range(3):
        try:
            page.wait_for_function(
                "() => Array.from(document.querySelectorAll('.jp-InputPrompt'))"
                ".some(e => /\\[(\\*|\\d+)\\]/.test(e.innerText))", timeout=30_000)
            return
        except Exception:  # nothing queued: the kernel was not ready for the click
            page.wait_for_function(
                "() => document.body.innerText.includes('(ipykernel) | Idle')",
                timeout=TIMEOUT_MS)
            _click_run_all(page)
    raise AssertionError("Run All Cells did not run the notebook's cells")


def _click_run_all(page):
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def test_explorer_slider_and_navigator_expand_live(lab, browser, artifacts):
    # A live front end has races a reader never sees (a click landing while the kernel
    # starts, a widget model still arriving): one failed attempt is kept as a screenshot
    # (live-widgets-attempt1.png) and the whole flow runs once more on a fresh page.
    path = lab.root / "live_widgets.ipynb"
    write_notebook(path)
    try:
        try:
            _drive(lab, browser, artifacts, path, "live-widgets-attempt1.png")
        except Exception:
            _drive(lab, browser, artifacts, path, "live-widgets.png")
    finally:
        path.unlink(missing_ok=True)


def _drive(lab, browser, artifacts, path, screenshot):
    page = browser.new_page()
    try:
        page.goto(lab.url(path.name))
        panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        page.wait_for_selector(panel + " .jp-Notebook", timeout=TIMEOUT_MS)
        run_all(page)
        explorer_img = panel + " .nbgraph-explorer-diagram img"
        nav_svg = panel + " .nbgraph-navigator .nbgraph-nav-stage svg"
        page.wait_for_selector(explorer_img, timeout=TIMEOUT_MS)
        page.wait_for_selector(nav_svg, timeout=TIMEOUT_MS)

        # -- the explorer's slider changes the drawn graph ---------------------
        before = page.locator(explorer_img).first.get_attribute("src")
        handle = page.locator(panel + " .widget-slider .noUi-handle, "
                              + panel + " .widget-slider [role='slider']").first
        handle.focus()
        page.keyboard.press("End")
        page.wait_for_function(
            "([sel, old]) => { const i = document.querySelector(sel);"
            " return i && i.getAttribute('src') !== old; }",
            arg=[explorer_img, before], timeout=TIMEOUT_MS)
        assert "step" in page.locator(panel + " .nbgraph-explorer-diagram").first.evaluate(
            "e => e.closest('.widget-vbox').innerText")
        page.locator(panel + " .nbgraph-explorer-diagram").first.screenshot(
            path=str(artifacts / "live-explorer-last-step.png"))

        # -- the navigator expands a collapsed box on a click --------------------
        assert page.locator(nav_svg + " g.cluster").count() == 0
        box = page.locator(nav_svg + " g.node[id^='g']").first
        box.click()
        page.wait_for_selector(nav_svg + " g.cluster", timeout=TIMEOUT_MS)
        assert page.locator(nav_svg + " g.cluster").count() >= 1
        node = page.locator(nav_svg + " g.node[id^='a']").first
        node.click()
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.nbgraph-node-details'))"
            ".some(e => e.innerText.includes('dprint'))", timeout=TIMEOUT_MS)
        page.locator(panel + " .nbgraph-navigator").first.screenshot(
            path=str(artifacts / "live-navigator-expanded.png"))

        # -- the snapshots meant for exports are hidden next to live widgets ----
        snapshots = page.locator(panel + " .nbgraph-snapshot")
        assert snapshots.count() >= 2
        assert not any(snapshots.nth(k).is_visible() for k in range(snapshots.count()))
    finally:
        page.screenshot(path=str(artifacts / screenshot), full_page=True)
        page.close()


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
