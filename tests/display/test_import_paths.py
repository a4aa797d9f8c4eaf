"""Names that moved when display's big modules were split stay importable from their old homes.

diagram.py was split into compact.py, structure.py and drawing.py; rich.py's profile HTML
moved to profiles.py; the inner-graph helpers of the dense style to inner.py.  Each old
import path must give the very same object.
"""

import importlib

import pytest

MOVED = [
    # (old module, name, new module)
    ("nbgraph.display.diagram", "COLORS", "nbgraph.display.drawing"),
    ("nbgraph.display.diagram", "LINKER_NAMES", "nbgraph.display.drawing"),
    ("nbgraph.display.diagram", "GraphSource", "nbgraph.display.drawing"),
    ("nbgraph.display.rich", "profile_html", "nbgraph.display.profiles"),
    ("nbgraph.display.rich", "profile_chart_svg", "nbgraph.display.profiles"),
    ("nbgraph.display.rich", "format_seconds", "nbgraph.display.profiles"),
    ("nbgraph.display.rich", "format_bytes", "nbgraph.display.profiles"),
    ("nbgraph.display.history", "safe_repr", "nbgraph.display.names"),
    ("nbgraph.display.history", "one_line", "nbgraph.display.names"),
]


@pytest.mark.parametrize("old, name, new", MOVED)
def test_a_moved_name_is_the_same_object_under_its_old_path(old, name, new):
    moved = getattr(importlib.import_module(new), name)
    assert getattr(importlib.import_module(old), name) is moved


def test_the_diagram_function_is_still_reached_both_ways():
    import nbgraph.display
    from nbgraph.display.diagram import diagram

    assert nbgraph.display.diagram is diagram
    assert callable(diagram)
    assert importlib.import_module("nbgraph.display.diagram").__name__ == "nbgraph.display.diagram"


def test_the_styles_build_digraphs_from_one_walk():
    import graphviz

    import nbgraph.tensor as nt
    from nbgraph.display.compact import CompactStyle
    from nbgraph.display.drawing import GraphSource, Walk
    from nbgraph.display.structure import StructureStyle

    x = nt.dvector("x")
    source = GraphSource.of(x * 2.0 + 1.0)
    walk = Walk(source, 200)
    assert walk.hidden == 0 and walk.names[source.outputs[0]] == "n0"
    compact = CompactStyle(source, walk, True, set()).build()
    structure = StructureStyle(source, walk, True, set()).build()
    assert isinstance(compact, graphviz.Digraph) and isinstance(structure, graphviz.Digraph)
    assert "Elemwise{add}" in compact.source and "label=Apply" in structure.source
