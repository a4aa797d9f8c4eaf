"""Pictures that fit, names first: what a newcomer sees of a diagram in a notebook.

Checked here, without a browser (tests/browser looks at them in JupyterLab):
- every diagram's HTML is an ``<img>`` of the SVG that never grows past its natural width
  and shrinks to the output area, with alt text and a title;
- types read ``float64[?, 3]``; a compiled Function's outputs carry the caller's names and
  its updates ``update -> W``; shared variables, constants, inputs and outputs have distinct
  colours, explained by a legend that is part of the picture;
- ``side_by_side`` is one SVG (stacked when too wide); the explorer widget has a short repr
  and a static HTML snapshot.
"""

import re

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
# (the function first: importing the submodule first would shadow it in the package)
from nbgraph.display import GraphExplorer, diagram, side_by_side, type_notation
from nbgraph.display.diagram import COLORS
from nbgraph.display.names import output_labels, plural
from nbgraph.display.picture import PAGE_WIDTH, combine_svgs, img_html, svg_size, svgs_in

SVG = "image/svg+xml"
HTML = "text/html"


def test_type_notation_is_dtype_and_static_shape():
    assert type_notation(nt.TensorType("float64", (None, 3))) == "float64[?, 3]"
    assert type_notation(nt.dscalar().type) == "float64[]"
    assert type_notation(nt.irow().type) == "int32[1, ?]"
    assert plural(1, "node") == "1 node" and plural(2, "node") == "2 nodes"


def _svg(width_pt, height_pt):
    return ('<svg width="%gpt" height="%gpt" viewBox="0 0 %g %g" '
            'xmlns="http://www.w3.org/2000/svg"><g/></svg>\n'
            % (width_pt, height_pt, width_pt, height_pt))


def test_img_never_grows_past_its_natural_size_and_shrinks_to_fit():
    svg = _svg(300, 150)  # 400 x 200 px
    assert svg_size(svg) == (400.0, 200.0)
    page = img_html(svg, "a small diagram")
    assert svgs_in(page) == [svg]
    assert 'width="400" height="200"' in page  # natural size: never scaled up
    assert "max-width:100%;height:auto" in page  # scaled down to the output area
    assert 'alt="a small diagram"' in page and 'title="a small diagram"' in page
    wide = img_html(_svg(1500, 100), "a wide one")
    assert "click for full size" in wide and "onclick=" in wide


def test_combine_svgs_side_by_side_or_stacked():
    small = [_svg(150, 100), _svg(150, 100)]  # 200 px each
    both = combine_svgs(small, ["structure", "compact"])
    w, h = svg_size(both)
    assert (w, h) == (424, round(100 * 4 / 3 + 18))  # side by side, titles above
    assert both.count("<svg") == 3 and ">structure</text>" in both
    wide = [_svg(500, 100), _svg(500, 100)]  # 667 px each: stacked
    w, h = svg_size(combine_svgs(wide))
    assert round(w) == round(500 * 4 / 3) and h > 2 * 100 * 4 / 3
    assert PAGE_WIDTH == 868


@pytest.mark.needs_dot
def test_side_by_side_is_one_svg_picture():
    x, y, z = nt.dmatrix("x"), nt.dmatrix("y"), nt.dmatrix("z")
    bundle = side_by_side(x + y * z)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", SVG, HTML}
    assert svgs_in(bundle[HTML]) == [bundle[SVG]]
    assert "<table" not in bundle[HTML]  # no inline SVG for a sanitiser to shred
    assert bundle[SVG].count("<svg") == 3


def _training_function():
    X, t = nt.dmatrix("X"), nt.dvector("t")
    w = ng.shared(np.zeros(2), name="w")
    b = ng.shared(0.0, name="b")
    z = X.dot(w) + b
    loss = (nt.softplus(z) - t * z).mean()
    gw, gb = ng.grad(loss, [w, b])
    return ng.function([X, t], [loss, z], updates=[(w, w - 0.5 * gw), (b, b - 0.5 * gb)],
                       linker="py")


def test_function_outputs_are_labelled_with_the_callers_names():
    f = _training_function()
    labels = output_labels(f)
    outs = f.fgraph.outputs
    assert [labels[v] for v in outs] == ["out[0]", "out[1]", "update -> w", "update -> b"]


def test_compact_diagram_names_outputs_and_colours_shared_variables():
    f = _training_function()
    src = diagram(f).source
    assert 'label="update -> w\\nfloat64[?]"' in src
    assert 'label="update -> b\\nfloat64[]"' in src
    shared = [line for line in src.splitlines() if 'fillcolor="%s"' % COLORS["shared"] in line]
    assert len(shared) >= 2 and all("shape=box" in line for line in shared)
    legend = re.search(r"label=<(.*)> labeljust=c labelloc=b", src).group(1)
    for entry in ("input", "shared variable", "output", "runs in Python"):
        assert entry in legend
    assert "TensorType" not in src


def test_diagram_labels_name_any_output():
    x = nt.dvector("x")
    h = nt.tanh(x * 2)
    src = diagram(h, labels={h: "h"}).source
    assert 'label="h\\nfloat64[?]"' in src


def test_explorer_has_a_short_repr_and_a_static_snapshot():
    x = nt.dvector("x")
    explorer = GraphExplorer((-(-x) * 1).sum())  # noqa: B002 (on purpose)
    assert repr(explorer) == "<GraphExplorer: Sum{axis=0}.0, rewrite step 0 of 3>"
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == repr(explorer)
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "step 0 of 3" in bundle[HTML] and "children=" not in bundle[HTML]


@pytest.mark.needs_dot
def test_the_4_32_32_3_tanh_mlp_forward_graph_fits_868_px():
    from nbgraph.display import render_svg

    rng = np.random.default_rng(0)
    X = nt.dmatrix("X")
    sizes = [(4, 32), (32, 32), (32, 3)]
    h = X
    for i, shape in enumerate(sizes):
        W = ng.shared(rng.normal(size=shape), name="W%d" % i)
        b = ng.shared(np.zeros(shape[1]), name="b%d" % i)
        h = h.dot(W) + b
        if i < len(sizes) - 1:
            h = nt.tanh(h)
    e = nt.exp(h - h.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    for graph in (h, probs):
        width, height = svg_size(render_svg(graph))
        assert width <= PAGE_WIDTH, (width, height)
