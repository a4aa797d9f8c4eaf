"""Tests for nbgraph.display.diagram: the DOT source of known graphs, and its rendering.

Assertions are made on ``Digraph.source``: node names (numbered breadth-first
from the outputs), labels, colours and edges.  Tests that run graphviz's
``dot`` are marked ``needs_dot``.
"""

import os
import re
import subprocess
import sys
import textwrap

import graphviz
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core import Apply, FunctionGraph, Op
from nbgraph.display import diagram
from nbgraph.display.diagram import COLORS, _wrap
from nbgraph.tensor import TensorType

MATRIX = "TensorType(float64, (None, None))"
SHORT = "float64[?, ?]"


def seed_graph():
    """The seed's ``e = x + y * z`` on float64 matrices."""
    x, y, z = nt.dmatrix("x"), nt.dmatrix("y"), nt.dmatrix("z")
    return x, y, z, x + y * z


def seed_v3():
    """The seed's narrowing session: v3 = v2.type.filter_variable(v1)."""
    v1 = TensorType("float64", (2, None))()
    v2 = TensorType("float64", (2, 1))()
    return v1, v2, v2.type.filter_variable(v1)


def node_line(source, name):
    """The DOT statement declaring node ``name``."""
    for line in source.splitlines():
        if line.strip().startswith(name + " ["):
            return line.strip()
    raise AssertionError("no node %s in\n%s" % (name, source))


def legend_of(source):
    """The legend: the graph label under the picture (an HTML-like table)."""
    match = re.search(r"\blabel=<(.*)> labeljust=c labelloc=b$", source, flags=re.M)
    assert match, "no legend in the diagram"
    return match.group(1)


def edges(source):
    """Every ``a -> b`` pair in the DOT source, in order."""
    return re.findall(r"^\s*(\w+) -> (\w+)", source, flags=re.M)


# ---------------------------------------------------------------------------
# compact style


def test_compact_seed_graph_nodes_labels_and_colours():
    x, y, z, e = seed_graph()
    src = diagram(e).source
    assert src.startswith("digraph nbgraph {")
    # breadth-first numbering from the output
    out, add, xn, mulout, mul, yn, zn = (node_line(src, "n%d" % i) for i in range(7))
    assert 'label="%s"' % SHORT in out and "peripheries=2" in out
    assert 'fillcolor="%s"' % COLORS["output"] in out
    assert 'label="Elemwise{add}"' in add and "shape=box" in add
    assert 'fillcolor="%s"' % COLORS["apply"] in add
    assert 'label="x\\n%s"' % SHORT in xn
    assert 'fillcolor="%s"' % COLORS["input"] in xn
    assert 'fillcolor="%s"' % COLORS["variable"] in mulout and "peripheries" not in mulout
    assert 'label="Elemwise{mul}"' in mul
    assert 'label="y\\n%s"' % SHORT in yn and 'label="z\\n%s"' % SHORT in zn
    assert "n7" not in src
    assert edges(src) == [("n2", "n1"), ("n3", "n1"), ("n1", "n0"),
                          ("n5", "n4"), ("n6", "n4"), ("n4", "n3")]
    # input positions label the edges of a node with several inputs
    assert "n2 -> n1 [headlabel=0]" in src and "n3 -> n1 [headlabel=1]" in src


def test_compact_without_types():
    *_, e = seed_graph()
    src = diagram(e, show_types=False).source
    assert 'n2 [label=x ' in src
    # an unnamed intermediate is a small dot (its repr is in the tooltip)
    mul_out = node_line(src, "n3")
    assert 'label=""' in mul_out and "shape=circle" in mul_out
    assert 'tooltip="Elemwise{mul}.0: float64[?, ?]"' in mul_out
    for line in src.splitlines():
        if "label=" in line and "tooltip" in line:
            label = re.search(r'label=("[^"]*"|\S+)', line).group(1)
            assert "TensorType" not in label


def test_compact_seed_narrowing_v3_escapes_angle_brackets():
    v1, v2, v3 = seed_v3()
    g = diagram(v3)
    src = g.source
    assert 'n0 [label="float64[2, 1]"' in src
    assert 'n1 [label=SpecifyShape' in src
    # an unnamed root shows its type; without types it prints as <Type>: quoted as
    # text, not taken as an HTML label
    assert 'n2 [label="float64[2, ?]"' in src
    assert 'n2 [label="<TensorType(float64, (2, None))>"' in diagram(v3, show_types=False).source
    assert "label=<" not in diagram(v3, show_types=False, legend=False).source
    # SpecifyShape views its input
    assert re.search(r'n2 -> n1 \[color="%s" fontcolor="%s" headlabel=view style=dashed\]'
                     % (COLORS["view"], COLORS["view"]), src)
    assert edges(src) == [("n2", "n1"), ("n1", "n0")]


def test_constants_show_their_values():
    x = nt.dvector("x")
    src = diagram(x * 2.5).source
    const = [line for line in src.splitlines() if "2.5" in line]
    assert len(const) == 1
    assert 'fillcolor="%s"' % COLORS["constant"] in const[0]
    assert 'label="2.5\\nfloat64[]"' in const[0]


def test_function_nodes_coloured_by_linker_with_legend():
    x, y, z, e = seed_graph()
    f = nbgraph.function([x, y, z], e, linker="py", rewrite=None)
    src = diagram(f).source
    applys = [line for line in src.splitlines() if "Elemwise" in line and "shape=box" in line]
    assert len(applys) == 2
    assert all('fillcolor="%s"' % COLORS["py"] in line for line in applys)
    assert "runs in Python (2 nodes)" in legend_of(src)
    assert "runs in C" not in src
    # the compiled graph's inputs and output are marked
    assert src.count('fillcolor="%s"' % COLORS["input"]) == 3
    assert src.count("peripheries=2") == 1


def test_function_kinds_c_and_py_get_distinct_colours():
    x, y, z, e = seed_graph()
    f = nbgraph.function([x, y, z], e, linker="py", rewrite=None)
    # what a C linker reports: the first node in C, the second in Python
    f.program.kinds = ["c", "py"]
    assert [str(n.op) for n in f.program.nodes] == ["Elemwise{mul}", "Elemwise{add}"]
    src = diagram(f).source
    lines = src.splitlines()
    mul_line = next(line for line in lines if 'label="Elemwise{mul}"' in line)
    add_line = next(line for line in lines if 'label="Elemwise{add}"' in line)
    assert 'fillcolor="%s"' % COLORS["c"] in mul_line
    assert 'fillcolor="%s"' % COLORS["py"] in add_line
    assert COLORS["c"] != COLORS["py"]
    legend = legend_of(src)
    assert "runs in C (1 node)" in legend and "runs in Python (1 node)" in legend
    assert legend.index("runs in C") < legend.index("runs in Python")


def test_rewritten_function_every_node_coloured():
    # whatever the rewrites (fusion included) made of it, each node shows its linker
    x, y, z, e = seed_graph()
    f = nbgraph.function([x, y, z], [e, (x * 2.0).T + 1.0])
    src = diagram(f).source
    applys = [line for line in src.splitlines()
              if line.strip().startswith("n") and 'color="%s"' % COLORS["apply_border"] in line]
    assert len(applys) == len(f.program.nodes) >= 1
    for line in applys:
        assert re.search(r'fillcolor="(%s|%s)"' % (COLORS["c"], COLORS["py"]), line)
    counts = re.findall(r"runs in \w+ \((\d+) nodes?\)", legend_of(src))
    assert sum(int(n) for n in counts) == len(f.program.nodes)


class ViewFirst(Op):
    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, a, b):
        return Apply(self, [a, b], [a.type()])


class DestroySecond(Op):
    __props__ = ()
    destroy_map = {0: [1]}

    def make_node(self, a, b):
        return Apply(self, [a, b], [b.type()])


def test_view_and_destroy_edges_are_marked():
    a, b = nt.dvector("a"), nt.dvector("b")
    out = DestroySecond()(ViewFirst()(a, b), b)
    src = diagram(out).source
    view_edges = [line for line in src.splitlines() if "view" in line and "->" in line]
    destroy_edges = [line for line in src.splitlines() if "destroy" in line and "->" in line]
    assert len(view_edges) == 1 and 'headlabel="0 view"' in view_edges[0]
    assert "style=dashed" in view_edges[0]
    assert len(destroy_edges) == 1 and 'headlabel="1 destroy"' in destroy_edges[0]
    assert 'color="%s"' % COLORS["destroy"] in destroy_edges[0]
    assert "style=bold" in destroy_edges[0]


class Fused(Op):
    """A stand-in for a fused elementwise op with a long, brace-laden name."""

    __props__ = ()

    def make_node(self, *inputs):
        return Apply(self, list(inputs), [inputs[0].type()])

    def __str__(self):
        return "Elemwise{Composite{((i0 + (i1 * i2)) - exp((i3 / i4)))}}"


def test_fused_op_label_is_wrapped_and_keeps_its_text():
    xs = [nt.dvector(n) for n in "abcde"]
    src = diagram(Fused()(*xs)).source
    line = next(line for line in src.splitlines() if "shape=box" in line)
    label = re.search(r'label="([^"]*)"', line).group(1)
    parts = label.split("\\n")
    assert len(parts) > 1 and all(len(p) <= 32 for p in parts)
    assert "".join(parts).replace(" ", "") == str(Fused()).replace(" ", "")
    # the full name stays available as the tooltip
    assert 'tooltip="%s"' % str(Fused()) in line


def test_wrap_helper():
    assert _wrap("Elemwise{add}") == ["Elemwise{add}"]
    assert _wrap("DimShuffle{" + "1,0," * 12 + "}", width=20)[0] == "DimShuffle{1,0,1,0,"
    lines = _wrap("x" * 500, width=10, max_lines=3)
    assert len(lines) == 3 and lines[-1].endswith("\u2026")


class Odd(Op):
    __props__ = ()

    def make_node(self, a):
        return Apply(self, [a], [a.type()])

    def __str__(self):
        return 'Odd{"q" b\\s <b>x</b> a|b}'


def test_labels_with_quotes_backslashes_and_markup_are_escaped():
    src = diagram(Odd()(nt.dvector("v"))).source
    assert r'n1 [label="Odd{\"q\" b\\s <b>x</b> a|b}"' in src


@pytest.mark.needs_dot
def test_odd_labels_render():
    svg = diagram(Odd()(nt.dvector("v"))).pipe(format="svg", encoding="utf-8")
    assert "Odd{&quot;q&quot; b\\s &lt;b&gt;x&lt;/b&gt; a|b}" in svg


def test_highlight_outlines_nodes():
    v1, v2, v3 = seed_v3()
    src = diagram(v3, highlight=[v3.owner]).source
    line = node_line(src, "n1")
    assert 'color="%s"' % COLORS["highlight"] in line and "penwidth=3" in line
    assert COLORS["highlight"] not in node_line(src, "n2")


def test_apply_and_list_inputs():
    x, y, z, e = seed_graph()
    by_apply = diagram(e.owner).source
    by_var = diagram(e).source
    assert by_apply == by_var
    both = diagram([e, y * z]).source
    assert both.count("peripheries=2") == 2
    assert both.count('label="Elemwise{mul}"') == 2  # y * z built twice: two nodes


def test_fgraph_draws_unused_inputs_too():
    x, y = nt.dvector("x"), nt.dvector("y")
    fg = FunctionGraph([x, y], [x * 2.0])
    src = diagram(fg).source
    assert src.count('fillcolor="%s"' % COLORS["input"]) == 2
    assert 'label="y\\nfloat64[?]"' in src


def test_bad_arguments():
    x = nt.dvector("x")
    with pytest.raises(ValueError, match="style"):
        diagram(x, style="fancy")
    with pytest.raises(ValueError, match="max_nodes"):
        diagram(x, max_nodes=0)
    with pytest.raises(TypeError, match="diagram expects"):
        diagram(42)
    with pytest.raises(TypeError, match="item 1"):
        diagram([x, "y"])


# ---------------------------------------------------------------------------
# structure style


def test_structure_seed_picture():
    x, y, z, e = seed_graph()
    src = diagram(e, style="structure").source
    lines = src.splitlines()

    def nodes_with(fill):
        return [line for line in lines if 'fillcolor="%s"' % fill in line]

    applys = nodes_with(COLORS["s_apply"])       # blue boxes
    variables = nodes_with(COLORS["s_variable"])  # red boxes
    ops = nodes_with(COLORS["s_op"])             # green circles
    types = nodes_with(COLORS["s_type"])         # purple boxes
    assert len(applys) == 2 and all("label=Apply" in line and "shape=box" in line
                                    for line in applys)
    assert len(variables) == 5 and all("shape=box" in line for line in variables)
    assert len(ops) == 2 and all("shape=circle" in line for line in ops)
    assert len(types) == 1 and 'label="%s"' % MATRIX in types[0]  # one Type, shared
    for name in ("x", "y", "z"):
        assert any("label=%s " % name in line for line in variables)
    labels = re.findall(r"-> \w+ \[label=\"?(\w+)", src)
    assert labels.count("owner") == 2
    assert labels.count("inputs") == 4          # inputs[0], inputs[1] twice
    assert labels.count("outputs") == 2
    assert labels.count("op") == 2
    assert labels.count("type") == 5
    assert "n0 -> n1 [label=owner]" in src
    assert 'n1 -> n2 [label="inputs[0]"]' in src
    assert 'n1 -> n0 [label=outputs constraint=false style=dashed]' in src
    assert "n1 -> op0 [label=op]" in src
    assert "n0 -> type0 [label=type]" in src


def test_structure_without_types_and_constants():
    x = nt.dvector("x")
    src = diagram(x + 1.0, style="structure", show_types=False).source
    assert "type0" not in src and "label=type" not in src
    assert 'label="Constant 1.0"' in src


# ---------------------------------------------------------------------------
# determinism, size limit, rendering


def test_source_identical_across_runs_and_rebuilds():
    *_, e1 = seed_graph()
    *_, e2 = seed_graph()  # the same graph built again: new objects
    for style in ("compact", "structure"):
        first = diagram(e1, style=style).source
        assert diagram(e1, style=style).source == first
        assert diagram(e2, style=style).source == first
    _, _, v3a = seed_v3()
    _, _, v3b = seed_v3()
    assert diagram(v3a).source == diagram(v3b).source


_SCRIPT = textwrap.dedent("""
    import nbgraph, nbgraph.tensor as nt
    from nbgraph.display import diagram
    x, y, z = nt.dmatrix("x"), nt.dmatrix("y"), nt.dmatrix("z")
    f = nbgraph.function([x, y, z], [x + y * z, (x * 2.0).T], linker="py")
    for obj in (x + y * z, f, f.fgraph):
        for style in ("compact", "structure"):
            print(diagram(obj, style=style).source)
""")


def test_source_identical_across_processes():
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert "0x" not in outputs[0]


def chain(n):
    x = nt.dvector("x")
    out = x
    for _ in range(n):
        out = out + x
    return out


def test_max_nodes_keeps_the_nearest_nodes_and_a_summary():
    out = chain(300)          # 300 Applys, 300 outputs, x: 601 nodes
    g = diagram(out, style="compact", max_nodes=50)
    src = g.source
    assert re.findall(r"^\s*n(\d+) \[", src, flags=re.M) == [str(i) for i in range(50)]
    assert 'more [label="\u2026 551 more nodes\\n(max_nodes=50)"' in src
    assert "n0 [" in src and "peripheries=2" in node_line(src, "n0")  # the output is kept
    # the cut is attached to the summary node
    assert re.search(r"more -> n\d+", src)
    assert diagram(out, style="compact", max_nodes=50).source == src
    small = diagram(chain(3), max_nodes=200).source
    assert "more" not in small


def test_max_nodes_structure():
    src = diagram(chain(100), style="structure", max_nodes=20).source
    assert "181 more nodes" in src
    assert len(re.findall(r"^\s*n\d+ \[", src, flags=re.M)) == 20


@pytest.mark.needs_dot
def test_huge_graph_renders_quickly_with_the_limit():
    import time

    g = diagram(chain(3000), style="compact", max_nodes=100)
    start = time.perf_counter()
    svg = g.pipe(format="svg", encoding="utf-8")
    assert time.perf_counter() - start < 30
    assert "5901 more nodes" in svg


@pytest.mark.needs_dot
@pytest.mark.parametrize("style", ["compact", "structure"])
def test_renders_to_svg(style):
    x, y, z, e = seed_graph()
    f = nbgraph.function([x, y, z], e, linker="py")
    _, _, v3 = seed_v3()
    for obj in (e, v3, f, f.fgraph, e.owner):
        svg = diagram(obj, style=style).pipe(format="svg", encoding="utf-8")
        assert "<svg" in svg and "</svg>" in svg
    svg = diagram(v3, style=style).pipe(format="svg", encoding="utf-8")
    assert "SpecifyShape" in svg
    assert "&lt;TensorType(float64, (2, None))&gt;" in svg


def test_digraph_is_a_graphviz_object():
    g = diagram(nt.dvector("x"))
    assert isinstance(g, graphviz.Digraph)


def test_much_read_variables_are_drawn_again_next_to_each_reader():
    x = nt.dvector("x")
    y = nt.exp(x)
    out = y
    for _ in range(10):
        out = out + y * x
    src = diagram(out).source
    # x and exp(x) are each read by 11 nodes: one node plus 10 dashed copies each
    x_nodes = [line for line in src.splitlines() if 'label="x\\n' in line]
    y_nodes = [line for line in src.splitlines() if 'label="Elemwise{exp}.0\\n' in line]
    assert len(x_nodes) == 11 and len(y_nodes) == 10
    assert sum("dashed" in line for line in x_nodes) == 10
    assert all("drawn again" in line for line in y_nodes)
    assert len(re.findall(r"^\s*n\d+_\d+ \[", src, flags=re.M)) == 20
    # the original exp output keeps its single-line type label and its owner edge
    few = diagram(nt.exp(x) + x).source
    assert "_1 [" not in few and "drawn again" not in few


def test_structure_hubs_are_split():
    src = diagram(chain(20), style="structure").source
    # 20 Applys of one Op: op0, op0_1 ... op0_19
    assert len(re.findall(r"^\s*op0(_\d+)? \[", src, flags=re.M)) == 20
    small = diagram(chain(3), style="structure").source
    assert len(re.findall(r"^\s*op0(_\d+)? \[", small, flags=re.M)) == 1


def test_big_pictures_ask_dot_for_a_cheaper_layout():
    big = diagram(chain(100), style="compact").source
    assert "mclimit=0.1" in big and "nslimit=2" in big
    assert "mclimit" not in diagram(chain(5)).source
    big_structure = diagram(chain(100), style="structure").source
    assert "xlabel=owner" in big_structure and "[label=owner" not in big_structure


@pytest.mark.needs_dot
@pytest.mark.parametrize("style", ["compact", "structure"])
def test_hard_shapes_render_quickly(style):
    import time

    x = nt.dvector("x")
    y = nt.exp(x)
    fan = y
    for _ in range(1000):
        fan = fan + y
    for obj in (chain(3000), fan):
        g = diagram(obj, style=style)
        start = time.perf_counter()
        g.pipe(format="svg")
        assert time.perf_counter() - start < 10
