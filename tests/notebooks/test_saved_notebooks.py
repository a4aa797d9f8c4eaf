"""The tutorials in notebooks/ are stored executed, cleanly, and ready for nbval.

nbval (``make test``) re-runs each notebook and compares outputs; these checks catch what
it cannot: a notebook saved without outputs (nothing to compare), one saved with an error,
stale or out-of-order execution counts, cells hidden from the comparison without reason,
and pictures left exposed to it (graphviz layouts differ between versions).
"""

import json
import pathlib
import re

import pytest

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = [
    "01_graph_structures.ipynb",
    "02_types_and_narrowing.ipynb",
    "03_making_ops.ipynb",
    "04_linkers_and_eval.ipynb",
    "05_magics_and_explorer.ipynb",
    "06_gradients.ipynb",
    "07_neural_networks.ipynb",
    "08_loops_and_randomness.ipynb",
    "09_from_theano.ipynb",
    "10_scaling_out.ipynb",
    "11_big_graphs.ipynb",
]

IGNORE_TAG = "nbval-ignore-output"
SKIP_TAGS = {"nbval-skip", "skip-execution", "raises-exception", "nbval-raises-exception"}
WIDGET = "application/vnd.jupyter.widget-view+json"
SVG = "image/svg+xml"
HTML = "text/html"
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _text(value):
    return "".join(value) if isinstance(value, list) else value


def _is_picture(output):
    """A rich output showing a rendered picture: SVG, a PNG (a plot), a widget, or HTML with
    an SVG (inline or as an <img> of image/svg+xml)."""
    data = output.get("data", {})
    html = _text(data.get(HTML, ""))
    return (SVG in data or "image/png" in data or WIDGET in data or "<svg" in html
            or "data:image/svg+xml" in html)


def _label(path, index, cell):
    first = _text(cell["source"]).strip().splitlines()
    return "%s, code cell %d (%s)" % (path.name, index + 1, first[0] if first else "empty")


def test_the_tutorials_are_there():
    assert [p.name for p in NOTEBOOKS] == EXPECTED


def test_sanitize_config_exists_and_compiles():
    text = (NOTEBOOK_DIR / "sanitize.cfg").read_text(encoding="utf-8")
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)
    assert len(pairs) >= 2
    for regex, _ in pairs:
        re.compile(regex)
    timings = [re.compile(r) for r, _ in pairs]
    assert any(r.search("compiled in 12.3 ms") for r in timings)
    assert any(r.search("ran in 4.5 us") for r in timings)


@pytest.fixture(params=NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def notebook(request):
    return request.param, _load(request.param)


def test_kernelspec_is_python3(notebook):
    path, nb = notebook
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3", path.name
    assert nb["metadata"].get("kernelspec", {}).get("language", "python") == "python"


def test_saved_executed_in_order_from_a_fresh_kernel(notebook):
    path, nb = notebook
    cells = _code_cells(nb)
    assert cells, "%s has no code cells" % path.name
    counts = [c.get("execution_count") for c in cells]
    unexecuted = [_label(path, i, c) for i, c in enumerate(cells) if counts[i] is None]
    assert not unexecuted, "saved without running: %s" % unexecuted
    assert counts == list(range(1, len(cells) + 1)), (
        "%s: execution counts %s are not 1..%d: re-run it top to bottom in a fresh kernel "
        "(python notebooks/_build.py)" % (path.name, counts, len(cells)))
    for i, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            assert "execution_count" not in output or output["execution_count"] == counts[i], (
                "%s: output from another run" % _label(path, i, cell))


def test_no_errors_or_stderr_stored(notebook):
    path, nb = notebook
    for i, cell in enumerate(_code_cells(nb)):
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", "%s: %s: %s" % (
                _label(path, i, cell), output.get("ename"), output.get("evalue"))
            assert not (output["output_type"] == "stream" and output["name"] == "stderr"), (
                "%s wrote to stderr: %s" % (_label(path, i, cell), _text(output["text"])[:300]))


def test_no_cell_or_notebook_is_skipped(notebook):
    path, nb = notebook
    assert not nb["metadata"].get("nbval", {}).get("skip"), path.name
    for i, cell in enumerate(_code_cells(nb)):
        tags = set(cell.get("metadata", {}).get("tags", []))
        assert not tags & SKIP_TAGS, "%s is tagged %s" % (_label(path, i, cell), tags & SKIP_TAGS)


def test_ignore_tag_only_on_picture_cells(notebook):
    """Tagged cells show pictures and nothing else, so no text escapes the comparison."""
    path, nb = notebook
    for i, cell in enumerate(_code_cells(nb)):
        if IGNORE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        outputs = cell.get("outputs", [])
        assert outputs, "%s is tagged %s but has no output" % (_label(path, i, cell), IGNORE_TAG)
        for output in outputs:
            assert output["output_type"] in ("display_data", "execute_result") and \
                _is_picture(output), (
                    "%s is tagged %s but shows a %s output that is not a picture "
                    "(SVG, HTML with SVG, or a widget); move that output to another cell"
                    % (_label(path, i, cell), IGNORE_TAG, output["output_type"]))


def test_pictures_are_tagged(notebook):
    """Untagged SVG would be compared byte for byte, and graphviz layouts vary by version."""
    path, nb = notebook
    for i, cell in enumerate(_code_cells(nb)):
        if IGNORE_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            assert not _is_picture(output), (
                "%s shows a picture but is not tagged %s" % (_label(path, i, cell), IGNORE_TAG))


def test_compared_text_has_no_memory_addresses(notebook):
    path, nb = notebook
    for i, cell in enumerate(_code_cells(nb)):
        if IGNORE_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [
                v for k, v in output.get("data", {}).items() if k.startswith("text/")]
            for text in texts:
                match = ADDRESS.search(_text(text))
                assert not match, "%s prints an address (%s): it changes on every run" % (
                    _label(path, i, cell), match.group())
