"""The dense diagram style (nbgraph.display.dense): types inside Apply boxes, scopes as boxes that
collapse and expand, the backward pass grouped apart, run-time overlays, and dprint by scope."""

import re

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.display import diagram, dprint_text, render_svg
from nbgraph.display.dense import AUTO_COLLAPSE, value_text
from nbgraph.display.groups import GRADIENT, group_paths
from nbgraph.display.overlay import node_values


def mlp(layers=3, width=4, scoped=True):
    rng = np.random.default_rng(0)
    X, Y = nt.dmatrix("X"), nt.dmatrix("Y")
    params, h = [], X
    for i in range(layers):
        W = nbgraph.shared(rng.normal(size=(width, width)), name="W%d" % i)
        b = nbgraph.shared(np.zeros(width), name="b%d" % i)
        params += [W, b]
        if scoped:
            with nbgraph.scope("layer%d" % i):
                h = nt.tanh(h.dot(W) + b)
        else:
            h = nt.tanh(h.dot(W) + b)
    cost = ((h - Y) ** 2).mean()
    cost.name = "cost"
    return X, Y, cost, params, nbgraph.grad(cost, params)


def node_ids(source):
    return re.findall(r"^\s*([arg]\d+) \[", source, flags=re.M)


def clusters(source):
    return re.findall(r"subgraph (cluster_\w+)", source)


def test_apply_boxes_hold_their_output_types_and_intermediates_are_edges():
    x = nt.dmatrix("x")
    y = nt.exp(x * 2.0).sum(axis=1)
    src = diagram(y, style="dense").source
    assert "float64[?]" in src and "Sum{axis=1}" in src
    # no ellipse for the intermediate exp(x * 2.0): Apply boxes a<k>, roots r<k> only
    assert all(name[0] in "ar" for name in node_ids(src))
    assert 'bgcolor=white' in src  # readable on a dark page too


def test_auto_style_is_compact_for_small_graphs_and_dense_for_scopes():
    x = nt.dvector("x")
    assert "cluster" not in diagram(x + 1.0).source and "\tn0 [" in diagram(x + 1.0).source
    with nbgraph.scope("block"):
        y = x * 3.0
    src = diagram(y).source
    assert "cluster_g0" in src and "block" in src


def test_scopes_collapse_into_one_box_and_expand_into_a_cluster():
    X, Y, cost, params, grads = mlp()
    outs = [cost] + grads
    collapsed = diagram(outs, collapse=True).source
    assert clusters(collapsed) == []
    for name in ("layer0", "layer1", "layer2", GRADIENT):
        assert "\u25b8 " + name in collapsed
    opened = diagram(outs, collapse=True, expand=["layer1", GRADIENT]).source
    assert "\u25be layer1" in opened and "\u25be gradient" in opened
    assert "\u25b8 layer0" in opened  # the others stay shut
    # inside the opened gradient box, the backward pass of each layer is a box of its own
    assert "\u25b8 layer2" in opened.split("\u25be gradient")[1]
    everything = diagram(outs, collapse=False).source
    assert "\u25b8" not in everything.split("label=<<TABLE")[0]


def test_dot_names_do_not_depend_on_what_is_collapsed():
    X, Y, cost, params, grads = mlp()
    outs = [cost] + grads
    a = set(node_ids(diagram(outs, collapse=False).source))
    b = set(node_ids(diagram(outs, collapse=True, expand=["layer1"]).source))
    assert {n for n in b if n[0] == "a"} <= {n for n in a if n[0] == "a"}
    assert diagram(outs, collapse=True).source == diagram(outs, collapse=True).source


def test_big_graphs_start_collapsed_and_a_collapse_list_shuts_only_those():
    X, Y, cost, params, grads = mlp(layers=8)
    outs = [cost] + grads
    src = diagram(outs).source
    assert len([n for n in node_ids(src) if n[0] == "a"]) < AUTO_COLLAPSE
    only = diagram(outs, collapse=["layer3"]).source
    assert "\u25b8 layer3" in only and "\u25be layer4" in only


def test_the_backward_pass_is_grouped_by_the_layer_it_differentiates():
    X, Y, cost, params, grads = mlp()
    outs = [cost] + grads
    from nbgraph.core.graph import io_toposort

    applys = io_toposort([X, Y] + params, outs)
    paths = group_paths(applys, outs)
    backward = [p for p in paths.values() if p[:1] == (GRADIENT,)]
    assert backward and {p[1] for p in backward if len(p) > 1} == {"layer0", "layer1", "layer2"}
    assert all(paths[n] == ("layer0",) for n in applys if n.outputs[0].tag.__dict__.get(
        "scope") == ("layer0",))
    # without gradients among the outputs nothing is grouped automatically
    assert not any(p[:1] == (GRADIENT,) for p in group_paths(applys, [cost]).values())


def test_gradient_outputs_are_labelled_by_what_they_differentiate():
    X, Y, cost, params, grads = mlp(layers=1)
    src = diagram([cost] + grads, collapse=False).source
    assert "grad(cost, W0)" in src and "grad(cost, b0)" in src
    f = nbgraph.function([X, Y], [cost] + grads)
    assert "grad(cost, W0)" in diagram(f, collapse=False).source


def test_rankdir_left_to_right_in_every_style():
    x = nt.dvector("x")
    for style in ("compact", "structure", "dense"):
        assert "rankdir=LR" in diagram(x + 1.0, style=style, rankdir="LR").source
    with pytest.raises(ValueError, match="rankdir"):
        diagram(x, rankdir="up")


def test_a_fused_loop_expands_into_its_inner_graph():
    x = nt.dvector("x")
    f = nbgraph.function([x], nt.tanh(x * 2.0 + 1.0))
    (node,) = f.fgraph.apply_nodes
    shut = diagram(f, style="dense").source
    assert "\u25b8" in shut and "inner graph" not in shut
    opened = diagram(f, style="dense", expand=["a0"]).source
    assert "inner graph" in opened and "a0_in0_a0" in opened


def test_values_overlay_writes_shapes_and_small_values_on_edges():
    x = nt.dmatrix("x")
    f = nbgraph.function([x], (nt.exp(x) * 2.0).sum(axis=0), profile=True)
    with pytest.raises(ValueError, match="profile=True"):
        nbgraph.function([x], x.sum()).show(values=True)
    f(np.ones((3, 2)))
    values = node_values(f, [np.ones((3, 2))])
    assert all(isinstance(v, (np.ndarray, np.generic)) or np.isscalar(v)
               for v in values.values())
    src = diagram(f, values=values).source
    assert "(3, 2)" in src
    shown = f.show(values=True, profile=True)
    assert "(3, 2)" in diagram(f, **shown.options).source
    assert value_text(np.array([1.0, 2.0])) == "(2) = [1., 2.]"
    assert value_text(np.zeros((10, 10))) == "(10, 10)"


def test_profile_overlay_colours_by_time_and_lists_the_slowest():
    X, Y, cost, params, grads = mlp(layers=2)
    f = nbgraph.function([X, Y], cost, updates=[(p, p - 0.1 * g)
                                                  for p, g in zip(params, grads, strict=True)],
                         profile=True)
    f(np.ones((5, 4)), np.zeros((5, 4)))
    src = diagram(f, profile=f.profile, collapse=False).source
    assert "time share" in src and "slowest" in src
    assert re.search(r"\d+\.\d% \u00b7 ", src)  # share and time inside the boxes
    with pytest.raises(ValueError, match="profile=True"):
        nbgraph.function([X], X.sum()).show(profile=True)


@pytest.mark.needs_dot
def test_the_collapsed_mlp_renders_with_clickable_ids():
    X, Y, cost, params, grads = mlp(layers=4)
    svg = render_svg([cost] + grads, collapse=True)
    assert 'id="g' in svg and svg.count('class="node"') < 40


def test_dprint_groups_by_scope():
    x = nt.dvector("x")
    with nbgraph.scope("outer"):
        with nbgraph.scope("inner"):
            h = x * 2.0
        y = nt.tanh(h)
    text = dprint_text(y + 1.0, scopes=True)
    lines = text.splitlines()
    assert lines[1].endswith("@ outer") and lines[2].endswith("@ outer/inner")
    assert "Scopes:" in lines and "outer: B (1 node)" in lines
    assert "@" not in dprint_text(y + 1.0)


@pytest.mark.needs_dot
@pytest.mark.parametrize("style", ["compact", "structure", "dense"])
def test_every_style_draws_on_white_so_a_dark_theme_keeps_it_readable(style):
    svg = render_svg(nt.dvector("x") + 1.0, style=style)
    assert re.search(r'<polygon fill="white"', svg)


def test_a_scan_body_is_one_box_that_expands_into_its_inner_graph():
    A = nt.dvector("A")
    k = nt.iscalar("k")
    res, _ = nbgraph.scan(lambda prior, A: prior * A, outputs_info=nt.ones_like(A),
                          non_sequences=A, n_steps=k)
    src = diagram(res[-1], style="dense").source
    (name,) = [n for n, label in re.findall(r'(a\d+) \[label="([^"]*)', src) if "Scan" in label]
    assert "inner graph" not in src
    opened = diagram(res[-1], style="dense", expand=[name]).source
    assert "inner graph" in opened and "%s_in0_a0" % name in opened
