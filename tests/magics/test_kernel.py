"""The magics in a real Jupyter kernel: a notebook built with nbformat, run by nbclient.

The kernel is this interpreter (``sys.executable``, so the venv's ipykernel and
nbgraph) through a kernelspec written to a temporary JUPYTER_PATH; its
PYTHONPATH starts with this checkout, so the code under test is the code the
kernel imports whatever is installed.  IPython's profile and Jupyter's runtime
files go to temporary directories too.  The notebook runs once per module;
each test looks at one cell's outputs.
"""

import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import nbgraph  # noqa: E402
import nbgraph.tensor as nt  # noqa: E402
from nbgraph.display import dprint  # noqa: E402

REPO = Path(nbgraph.__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TIMING = re.compile(r"^compiled in [\d.]+ (us|ms|s) \(linker py\), ran in [\d.]+ (us|ms|s)$")

CELLS = [
    "%load_ext nbgraph",                                             # 0
    "import nbgraph.tensor as nt\nx = nt.dvector('x')\ny = nt.dscalar('y')",  # 1
    "%%graph\nz = (x * y).sum()",                                    # 2
    "%%graph --eval x=[1,2,3],y=2.0 --linker py\nw = x * y + 1",     # 3
    "%graph z + 1",                                                  # 4
    "%%graph\nok = x * 2\nbad = undefined_name + 1",                 # 5
    "%%graph --text\nq = x - 1",                                     # 6 (runs after the error)
    "print(sorted(n for n in ('z', 'w', 'ok', 'bad', 'q') if n in globals()))",  # 7
    "from nbgraph.display import GraphExplorer\nexplorer = GraphExplorer(z)\n"
    "explorer.inputs[0].value = '[1, 2]'\nexplorer.inputs[1].value = 3.0\n"
    "explorer.evaluate_button.click()\nprint(explorer.result_text)\nexplorer",  # 8
]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernel")
    spec_dir = tmp / "jupyter" / "kernels" / "nbgraph-test"
    spec_dir.mkdir(parents=True)
    pythonpath = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nbgraph tests",
        "language": "python",
        "env": {"PYTHONPATH": pythonpath, "IPYTHONDIR": str(tmp / "ipython")},
    }))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(tmp / "jupyter"))
        mp.setenv("JUPYTER_RUNTIME_DIR", str(tmp / "runtime"))
        mp.setenv("IPYTHONDIR", str(tmp / "ipython"))
        client = nbclient.NotebookClient(
            nb, kernel_name="nbgraph-test", timeout=60, startup_timeout=60,
            allow_errors=True, resources={"metadata": {"path": str(tmp)}})
        start = time.perf_counter()
        client.execute()
        elapsed = time.perf_counter() - start
    nb.metadata["elapsed"] = elapsed
    return nb


def outputs(nb, i, output_type=None):
    found = nb.cells[i].outputs
    if output_type is not None:
        found = [o for o in found if o.output_type == output_type]
    return found


def stdout(nb, i):
    return "".join(o.text for o in outputs(nb, i, "stream") if o.name == "stdout")


def svg_texts(svg):
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def local_graph():
    """The notebook's z, built here too (dprint text depends only on the structure)."""
    x = nt.dvector("x")
    y = nt.dscalar("y")
    return x, y, (x * y).sum()


def test_runs_in_time_and_only_the_erroring_cell_fails(notebook):
    assert notebook.metadata["elapsed"] < 60
    errors = [i for i in range(len(CELLS)) if outputs(notebook, i, "error")]
    assert errors == [5]
    assert [c.execution_count for c in notebook.cells] == list(range(1, len(CELLS) + 1))
    assert outputs(notebook, 0) == []  # %load_ext is silent
    assert outputs(notebook, 1) == []


def test_graph_cell_displays_the_diagram(notebook):
    (shown,) = outputs(notebook, 2, "display_data")
    x, y, z = local_graph()
    assert shown.data["text/plain"].startswith(
        dprint(z, print_type="short", file="str").rstrip("\n"))
    if "image/svg+xml" not in shown.data:
        pytest.skip("graphviz's dot is not installed: the kernel showed text only")
    labels = svg_texts(shown.data["image/svg+xml"])
    assert "x" in labels and "y" in labels and "Sum{axis=0}" in labels


def test_eval_cell_prints_values_and_timings(notebook):
    lines = stdout(notebook, 3).splitlines()
    assert lines[0] == "w = %r" % (np.array([1.0, 2.0, 3.0]) * 2.0 + 1,)
    assert TIMING.match(lines[1]), lines[1]
    assert len(outputs(notebook, 3, "display_data")) == 1


def test_line_magic_displays_the_expression(notebook):
    (shown,) = outputs(notebook, 4, "display_data")
    x, y, z = local_graph()
    assert shown.data["text/plain"].startswith(
        dprint(z + 1, print_type="short", file="str").rstrip("\n"))
    if "image/svg+xml" in shown.data:
        labels = svg_texts(shown.data["image/svg+xml"])
        assert "x" in labels and "y" in labels


def test_error_cell_has_a_name_error_traceback_on_its_line(notebook):
    (error,) = outputs(notebook, 5, "error")
    assert error.ename == "NameError"
    assert error.evalue == "name 'undefined_name' is not defined"
    text = ANSI.sub("", "\n".join(error.traceback))
    assert re.search(r"Cell In\[6\], line 2\n(.*\n)*?----> 2 bad = undefined_name \+ 1", text)
    assert outputs(notebook, 5, "display_data") == []


def test_cells_after_the_error_still_run(notebook):
    (shown,) = outputs(notebook, 6, "display_data")
    x = nt.dvector("x")
    assert shown.data == {"text/plain": dprint(x - 1, print_type="short", file="str").rstrip("\n")}
    # names bound by %%graph cells stay defined; the failed cell bound its first line only
    assert stdout(notebook, 7).strip() == "['ok', 'q', 'w', 'z']"


def test_explorer_is_a_live_widget_in_a_kernel(notebook):
    assert stdout(notebook, 8) == "%r\n" % (np.asarray(9.0),)
    # the widget, then its static snapshot (what an export without JavaScript shows)
    result, snapshot = outputs(notebook, 8, "display_data")
    view = result.data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"]
    assert "nbgraph-snapshot-" in snapshot.data["text/html"]
    assert "data:image/svg+xml" in snapshot.data["text/html"]
    # the widget state travels with the notebook (what a front end renders)
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert view["model_id"] in state
