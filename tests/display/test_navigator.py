"""GraphNavigator (nbgraph.display.navigator): the interactive view of a big graph, driven as a
Python object: boxes expand and collapse (by the toolbar, by a click reaching the hidden pick
box, by a search), nodes show their details, and the widget leaves a static snapshot."""

import re

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt

pytest.importorskip("ipywidgets")

from nbgraph.display import GraphNavigator
from nbgraph.display.overlay import node_values

needs_dot = pytest.mark.needs_dot


def scoped_mlp(layers=3, width=4):
    rng = np.random.default_rng(1)
    X, Y = nt.dmatrix("X"), nt.dmatrix("Y")
    params, h = [], X
    for i in range(layers):
        W = nbgraph.shared(rng.normal(size=(width, width)), name="W%d" % i)
        b = nbgraph.shared(np.zeros(width), name="b%d" % i)
        params += [W, b]
        with nbgraph.scope("layer%d" % i):
            with nbgraph.scope("affine"):
                a = h.dot(W) + b
            h = nt.tanh(a)
    cost = ((h - Y) ** 2).mean()
    cost.name = "cost"
    return X, Y, cost, params, nbgraph.grad(cost, params)


def clusters(nav):
    return re.findall(r'class="cluster"', nav.svg)


@needs_dot
def test_starts_collapsed_and_a_box_expands_and_collapses_again():
    X, Y, cost, params, grads = scoped_mlp()
    nav = GraphNavigator([cost] + grads, collapse=True)
    assert "layer1" in nav.boxes() and "layer1/affine" in nav.boxes() and "gradient" in nav.boxes()
    assert nav.expanded == [] and clusters(nav) == []
    nav.toggle("layer1/affine")  # opening an inner box opens the one around it
    assert nav.expanded == ["layer1", "layer1/affine"]
    assert len(clusters(nav)) == 2 and "\u25be affine" in nav.svg
    nav.toggle("layer1")
    assert nav.expanded == ["layer1/affine"] and clusters(nav) == []
    nav.expand_all.click()
    assert set(nav.expanded) == set(nav.boxes())
    nav.collapse_all.click()
    assert nav.expanded == []
    with pytest.raises(ValueError, match="no box"):
        nav.toggle("layer9")


@needs_dot
def test_a_click_in_the_picture_reaches_python_through_the_pick_box():
    X, Y, cost, params, grads = scoped_mlp()
    nav = GraphNavigator([cost] + grads, collapse=True)
    box = nav._layout.group_names[("layer0",)]
    assert 'id="%s"' % box in nav.svg  # the SVG element a click finds
    nav.pick.value = "%s|1700000000" % box
    assert nav.expanded == ["layer0"]
    node = re.search(r'<g id="(a\d+)" class="node"', nav.svg).group(1)
    nav.pick.value = "%s|1700000001" % node
    assert nav.selected is not None and "dprint" in nav.details.value


def test_search_opens_the_boxes_holding_matches_and_lists_them():
    X, Y, cost, params, grads = scoped_mlp()
    nav = GraphNavigator([cost] + grads, collapse=True)
    nav.search.value = "tanh"  # the forward tanh of each layer (and grad's copies of them)
    assert len(nav.found) >= 3
    assert {"layer0", "layer1", "layer2"} <= set(nav.expanded)
    assert nav.matches.options[0][0] == "%d found" % len(nav.found)
    nav.matches.value = nav.matches.options[1][1]
    assert nav.selected is nav.found[0]
    nav.search.value = "grad(cost, W1)"
    assert len(nav.found) == 1 and "gradient" in nav.expanded


def test_details_show_types_scope_site_dprint_and_values():
    x = nt.dmatrix("x")
    with nbgraph.scope("block"):
        y = nt.exp(x * 2.0)
    f = nbgraph.function([x], y.sum())
    values = node_values(f, [np.ones((2, 3))])
    nav = GraphNavigator(f, values=values)
    nav.select("a0")
    text = nav.details.value
    assert "float64[]" in text and "static shape ()" in text
    assert "run-time: float64" in text and "dprint" in text
    assert "test_navigator.py" in text  # the line that built it
    nav.select("r0")
    assert "x" in nav.details.value
    with pytest.raises(ValueError):
        nav.select("a999")


def test_the_widget_leaves_a_static_snapshot():
    X, Y, cost, params, grads = scoped_mlp(layers=2)
    nav = GraphNavigator([cost] + grads)
    bundle = nav._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    snapshot = nav.snapshot_html()
    assert "GraphNavigator" in snapshot
    hider = nav.children[-1]
    assert "nbgraph-snapshot-" in hider.value and hider.layout.display == "none"


@needs_dot
def test_pan_zoom_and_click_handlers_are_on_the_canvas():
    x = nt.dvector("x")
    nav = GraphNavigator(x + 1.0)
    for handler in ("onwheel=", "onmousedown=", "onmousemove=", "onclick="):
        assert handler in nav.canvas.value
    assert "nbgraph-pick" in nav.pick._dom_classes
    assert nav.render_seconds >= 0 and "laid out in" in nav.canvas.value
    nav.rankdir.value = "LR"
    assert nav._layout.rankdir == "LR"


def test_overlay_toggles_of_a_profiled_function():
    X, Y, cost, params, grads = scoped_mlp(layers=2)
    updates = [(p, p - 0.1 * g) for p, g in zip(params, grads, strict=True)]
    f = nbgraph.function([X, Y], cost, updates=updates, profile=True)
    nav = GraphNavigator(f, collapse=False)
    assert nav.show_values.disabled and nav.show_profile.disabled  # not called yet
    f(np.ones((3, 4)), np.zeros((3, 4)))
    nav = GraphNavigator(f, collapse=False)
    assert not nav.show_values.disabled and not nav.show_profile.disabled
    nav.show_values.value = True
    assert nav._layout.values and "(3, 4)" in nav._layout.build().source
    nav.show_profile.value = True
    assert "time share" in nav._layout.build().source
    nav.show_profile.value = False
    assert "time share" not in nav._layout.build().source
