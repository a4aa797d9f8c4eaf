"""``import nbgraph`` loads no display back end: graphviz and ipywidgets wait for first use."""

from fresh_python import run_python


def _modules_after(code):
    script = code + "; import sys; print(' '.join(sorted(sys.modules)))"
    return set(run_python(script).split())


def test_import_nbgraph_does_not_load_graphviz_or_widgets():
    loaded = _modules_after("import nbgraph")
    assert "graphviz" not in loaded
    assert "ipywidgets" not in loaded
    assert "nbgraph.display.rich" not in loaded


def test_display_names_load_on_first_use():
    loaded = _modules_after(
        "import nbgraph.display as d; d.diagram; d.explain_narrowing; d.GraphView")
    assert {"graphviz", "nbgraph.display.diagram", "nbgraph.display.narrowing"} <= loaded


def test_variables_display_before_rich_is_imported():
    loaded = _modules_after(
        "import nbgraph.tensor as nt; b = nt.dvector('x')._repr_mimebundle_(); "
        "assert 'text/plain' in b")
    assert "nbgraph.display.rich" in loaded
