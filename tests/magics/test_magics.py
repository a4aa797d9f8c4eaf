"""Tests for the %%graph / %graph magics (nbgraph.magics) and GraphView (nbgraph.display.view).

The magics run in a real ``IPython.core.interactiveshell.InteractiveShell``
(history in memory, colours off, its profile in a temporary directory).  What
the magics display is captured by replacing the shell's ``display_pub.publish``;
what they print by pytest's ``capsys``.
"""

import re
import sys
import traceback

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import nbgraph
import nbgraph.tensor as nt
from nbgraph.display import dprint, rich
from nbgraph.display.view import GraphView
from nbgraph.magics.graph import GraphMagics
from nbgraph.linkers.function import Function

SVG = "image/svg+xml"
TEXT = "text/plain"
HTML = "text/html"
OPTIONS = ["-o", "--eval", "--linker", "--text", "--style", "--no-types", "--rewrite"]
TIMING = re.compile(r"^compiled in [\d.]+ (us|ms|s) \(linker (\w+)\), ran in [\d.]+ (us|ms|s)$")


@pytest.fixture(scope="module")
def _shell(tmp_path_factory):
    main = sys.modules["__main__"]  # InteractiveShell puts its own __main__ in sys.modules
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    if InteractiveShell.initialized():
        InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=config, colors="nocolor",
                                      ipython_dir=str(tmp_path_factory.mktemp("ipython")))
    yield shell
    InteractiveShell.clear_instance()
    sys.modules["__main__"] = main


class Session:
    """The shell with nbgraph loaded, x (dvector) and y (dscalar) defined, displays captured."""

    def __init__(self, shell):
        self.shell = shell
        self.displayed = []  # the MIME bundles published, in order

    def run(self, source):
        return self.shell.run_cell(source, store_history=True)

    def ok(self, source):
        result = self.run(source)
        assert result.success, result.error_in_exec or result.error_before_exec
        return result

    def fails(self, source, error=UsageError):
        result = self.run(source)
        assert not result.success
        exc = result.error_in_exec or result.error_before_exec
        assert isinstance(exc, error), repr(exc)
        return exc

    @property
    def ns(self):
        return self.shell.user_ns

    def bundles(self):
        found, self.displayed[:] = list(self.displayed), []
        return found


@pytest.fixture
def ip(_shell, monkeypatch):
    _shell.reset(new_session=False)
    session = Session(_shell)

    def publish(data, metadata=None, *args, **kwargs):
        session.displayed.append(data)

    monkeypatch.setattr(_shell.display_pub, "publish", publish)
    _shell.run_line_magic("load_ext", "nbgraph")
    session.ok("import numpy as np\nimport nbgraph.tensor as nt\n"
               "x = nt.dvector('x')\ny = nt.dscalar('y')")
    yield session
    if _shell.find_cell_magic("graph") is not None:
        _shell.run_line_magic("unload_ext", "nbgraph")


def svg_texts(svg):
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def one_view(session):
    """The single GraphView bundle displayed since the last call."""
    bundles = session.bundles()
    assert len(bundles) == 1, bundles
    return bundles[0]


# ---------------------------------------------------------------------------
# loading


def test_load_ext_registers_both_magics(ip):
    assert ip.shell.find_cell_magic("graph") is not None
    assert ip.shell.find_line_magic("graph") is not None
    assert "GraphMagics" in ip.shell.magics_manager.registry


def test_loading_twice_is_harmless(ip, capsys):
    ip.ok("%load_ext nbgraph")
    assert "already loaded" in capsys.readouterr().out
    nbgraph.load_ipython_extension(ip.shell)  # called directly, again
    nbgraph.load_ipython_extension(ip.shell)
    assert isinstance(ip.shell.magics_manager.registry["GraphMagics"], GraphMagics)
    ip.ok("%%graph --text\nz = x * 2")
    assert len(ip.bundles()) == 1  # shown once, not once per load


def test_unload_ext_removes_the_magics(ip):
    ip.ok("%unload_ext nbgraph")
    assert ip.shell.find_cell_magic("graph") is None
    assert ip.shell.find_line_magic("graph") is None
    assert "GraphMagics" not in ip.shell.magics_manager.registry
    exc = ip.fails("%%graph\nz = x * 2")
    assert "not found" in str(exc)
    assert "z" not in ip.ns
    ip.ok("%load_ext nbgraph")
    ip.ok("%%graph --text\nz = x * 2")
    assert "z" in ip.ns


# ---------------------------------------------------------------------------
# help


def test_docstring_lists_every_option_with_an_example():
    doc = GraphMagics.graph.__doc__  # what %%graph? shows (see test_pinfo_shows_the_help)
    lines = doc.splitlines()
    for option in OPTIONS:
        examples = [line for line in lines if line.strip().startswith("%%graph " + option)]
        assert examples, "no example for %s" % option
        assert re.search(r"^\s+%s\b" % re.escape(option), doc, re.M), option  # described
    assert "%graph z + 1" in doc
    assert re.search(r"^\s+%%graph\n\s+x = nt.dvector", doc, re.M)  # a whole-cell example


def test_pinfo_shows_the_help(ip, capsys):
    assert ip.shell.find_cell_magic("graph").__doc__ == GraphMagics.graph.__doc__
    ip.ok("%%graph?")
    out = capsys.readouterr().out
    for option in OPTIONS:
        assert "%%graph " + option in out
    assert "--eval x=2.0,y=[1,2,3]" in " ".join(out.split())
    ip.ok("%graph?")
    assert "%%graph --style structure" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# running the cell and choosing the outputs


def test_cell_runs_in_the_user_namespace(ip):
    ip.ok("%%graph\nhelper = 3\nz = (x * helper).sum()")
    assert ip.ns["helper"] == 3
    assert isinstance(ip.ns["z"], nbgraph.core.Variable)
    view = one_view(ip)
    assert view[TEXT] == dprint(ip.ns["z"], print_type="short", file="str").rstrip("\n")
    # and later cells see the names
    ip.ok("w = z + helper")
    assert ip.ns["w"].owner.inputs[0] is ip.ns["z"]


def test_default_outputs_are_the_variables_bound_by_the_last_statement(ip):
    ip.ok("%%graph --text\na = x + 1\nb = x * 2")
    assert one_view(ip)[TEXT] == dprint(ip.ns["b"], print_type="short", file="str").rstrip("\n")
    ip.ok("%%graph --text\na, b, n = x + 1, x * 2, 3")
    expected = dprint([ip.ns["a"], ip.ns["b"]], print_type="short", file="str").rstrip("\n")
    assert one_view(ip)[TEXT] == expected
    ip.ok("%%graph --text\nc = d = x - 1")  # one Variable bound twice: shown once
    assert one_view(ip)[TEXT] == dprint(ip.ns["c"], print_type="short", file="str").rstrip("\n")
    ip.ok("%%graph --text\nq = x\nq += 1")
    assert one_view(ip)[TEXT] == dprint(ip.ns["q"], print_type="short", file="str").rstrip("\n")


def test_default_output_is_else_the_last_expression(ip, capsys):
    ip.ok("%%graph --text\na = x + 1\na * y")
    shown = one_view(ip)[TEXT]
    assert shown == dprint(ip.ns["a"] * ip.ns["y"], print_type="short", file="str").rstrip("\n")
    assert "_nbgraph_last_value_" not in ip.ns
    ip.ok("%%graph --eval x=[1,2],y=3 --linker py\na = x + 1\na * y")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "a * y = %r" % (np.array([2.0, 3.0]) * 3,)
    assert len(ip.bundles()) == 1
    ip.ok("%%graph --text\n[x + 1, x * 2]")
    assert "Elemwise{add}" in one_view(ip)[TEXT]


def test_cell_without_a_variable_says_so_in_one_line(ip, capsys):
    ip.ok("%%graph\nn = 3")
    assert capsys.readouterr().out == (
        "%%graph: the cell produced no nbgraph Variable (name one with -o NAME)\n")
    assert ip.bundles() == []
    assert ip.ns["n"] == 3
    ip.ok("%%graph\nx\nlen('abc')")
    assert capsys.readouterr().out.count("\n") == 1
    ip.ok("%%graph\nimport math")
    assert capsys.readouterr().out.count("\n") == 1
    assert "math" in ip.ns


def test_ipython_syntax_works_inside_the_cell(ip, capsys):
    ip.ok("%%graph --text\nimport os\nlisting = !echo hello\n%time z = x * 2\nz = z + 1")
    assert list(ip.ns["listing"]) == ["hello"]
    assert "Wall time" in capsys.readouterr().out
    assert one_view(ip)[TEXT] == dprint(ip.ns["z"], print_type="short", file="str").rstrip("\n")


# ---------------------------------------------------------------------------
# every option


def test_option_o_names_the_outputs(ip):
    ip.ok("%%graph -o a,b --text\na = x + 1\nb = x * 2\nc = x - 1")
    expected = dprint([ip.ns["a"], ip.ns["b"]], print_type="short", file="str").rstrip("\n")
    assert one_view(ip)[TEXT] == expected
    ip.ok('%%graph -o "a, b" --text\nc = x - 1')  # quoted, with a space
    assert one_view(ip)[TEXT] == expected
    ip.ok("%%graph --outputs a --text\nc = x - 1")
    assert one_view(ip)[TEXT] == dprint(ip.ns["a"], print_type="short", file="str").rstrip("\n")


def test_option_eval_prints_values_and_timings(ip, capsys):
    ip.ok("%%graph --eval x=[1,2,3],y=0.5 --linker py\nz = x * y\nw = z.sum()")
    lines = capsys.readouterr().out.splitlines()
    expected = (np.array([1.0, 2.0, 3.0]) * 0.5).sum()
    assert lines[0] == "w = %r" % (np.asarray(expected),)
    assert TIMING.match(lines[1]) and TIMING.match(lines[1]).group(2) == "py"
    assert len(lines) == 2
    assert len(ip.bundles()) == 1  # and the diagram is shown too


def test_option_eval_values_are_python_expressions_in_the_namespace(ip, capsys):
    ip.ok("data = np.arange(4.0)")
    ip.ok("%%graph -o a,b --eval x=data*2,y=len(data) --linker py\na = x + y\nb = x.sum()")
    lines = capsys.readouterr().out.splitlines()
    data = np.arange(4.0) * 2
    assert lines[:2] == ["a = %r" % (data + 4,), "b = %r" % (np.asarray(data.sum()),)]
    assert TIMING.match(lines[2])


def test_option_eval_with_spaces(ip, capsys):
    ip.ok('%%graph --eval "x=[1, 2], y=2.0" --linker py --text\nz = x * y')
    assert capsys.readouterr().out.splitlines()[0] == "z = %r" % (np.array([2.0, 4.0]),)
    ip.ok("%%graph --linker py --eval x=[1, 2], y=3.0\nz = x * y")  # unquoted
    assert capsys.readouterr().out.splitlines()[0] == "z = %r" % (np.array([3.0, 6.0]),)


def test_option_linker_py(ip, capsys):
    ip.ok("%%graph --linker py --eval x=[1.5]\nz = -x")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "z = %r" % (np.array([-1.5]),)
    assert TIMING.match(lines[1]).group(2) == "py"


@pytest.mark.needs_cc
def test_option_linker_cvm(ip, capsys):
    ip.ok("%%graph --linker cvm --eval x=[1.5,2],y=2\nz = (x * y).sum()")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "z = %r" % (np.asarray(7.0),)
    assert TIMING.match(lines[1]).group(2) == "cvm"


def test_option_text_is_exactly_dprint(ip):
    ip.ok("%%graph --text\nz = (x * y).sum()")
    bundle = one_view(ip)
    assert set(bundle) == {TEXT}
    assert bundle[TEXT] == dprint(ip.ns["z"], print_type="short", file="str").rstrip("\n")
    ip.ok("%%graph --text --no-types\nz = (x * y).sum()")
    assert one_view(ip)[TEXT] == dprint(ip.ns["z"], print_type=False, file="str").rstrip("\n")


@pytest.mark.needs_dot
def test_default_display_is_a_diagram_with_the_variable_names(ip):
    ip.ok("%%graph\nz = (x * y).sum()")
    bundle = one_view(ip)
    assert set(bundle) == {TEXT, SVG, HTML}
    labels = svg_texts(bundle[SVG])
    assert "x" in labels and "y" in labels
    assert "Sum{axis=0}" in labels
    assert "float64[?]" in labels  # types by default, in short notation
    assert "z" in labels  # the output is labelled with the name the cell bound
    assert bundle[SVG] == rich.render_svg(ip.ns["z"], style="compact", show_types=True,
                                          labels={ip.ns["z"]: "z"})
    assert '<img src="data:image/svg+xml;base64,' in bundle[HTML]


@pytest.mark.needs_dot
def test_option_style_structure(ip):
    ip.ok("%%graph --style structure\nz = x * y")
    svg = one_view(ip)[SVG]
    assert svg == rich.render_svg(ip.ns["z"], style="structure", show_types=True)
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    assert any(t.startswith("op") for t in titles) and any(t.startswith("type") for t in titles)
    assert "Apply" in svg_texts(svg)


@pytest.mark.needs_dot
def test_option_no_types(ip):
    ip.ok("%%graph --no-types\nz = x * y")
    bundle = one_view(ip)
    assert not any("TensorType" in t for t in svg_texts(bundle[SVG]))
    assert bundle[TEXT] == dprint(ip.ns["z"], print_type=False, file="str").rstrip("\n")
    ip.ok("%%graph --no-types --style structure\nz = x * y")
    assert "TensorType" not in one_view(ip)[SVG]


def test_option_rewrite_shows_the_rewritten_graph(ip):
    ip.ok("%%graph --text\nz = (-(-x) * 1).sum()")
    assert "Elemwise{neg}" in one_view(ip)[TEXT]
    ip.ok("%%graph --text --rewrite --linker py\nz = (-(-x) * 1).sum()")
    text = one_view(ip)[TEXT]
    fn = nbgraph.function([ip.ns["x"]], ip.ns["z"], linker="py")
    assert text == dprint(fn.fgraph, print_type="short", file="str").rstrip("\n")
    assert "Elemwise{neg}" not in text and "Elemwise{mul}" not in text
    assert text.splitlines()[0].startswith("Sum{axis=0}")


@pytest.mark.needs_dot
def test_option_rewrite_draws_the_compiled_function(ip, monkeypatch):
    shown = []
    real = GraphView.__init__

    def spy(self, obj, *args, **kwargs):
        shown.append(obj)
        real(self, obj, *args, **kwargs)

    monkeypatch.setattr(GraphView, "__init__", spy)
    ip.ok("%%graph --rewrite --linker py\nz = (-(-x) * 1).sum()")
    assert isinstance(shown[0], Function) and shown[0].linker == "py"
    assert "Elemwise{neg}" not in svg_texts(one_view(ip)[SVG])


# ---------------------------------------------------------------------------
# %graph EXPR


def test_line_magic_shows_one_expression(ip):
    ip.ok("z = x * 2")
    ip.ok("%graph --text z + 1")
    expected = dprint(ip.ns["z"] + 1, print_type="short", file="str").rstrip("\n")
    assert one_view(ip)[TEXT] == expected
    ip.ok("%graph --text [z, z + 1]")
    expected = dprint([ip.ns["z"], ip.ns["z"] + 1], print_type="short", file="str").rstrip("\n")
    assert one_view(ip)[TEXT] == expected


def test_line_magic_eval(ip, capsys):
    ip.ok("%graph --eval x=[1,2] --linker py (x * 2).sum()")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "(x * 2).sum() = %r" % (np.asarray(6.0),)
    assert TIMING.match(lines[1])


@pytest.mark.needs_dot
def test_line_magic_diagram(ip):
    ip.ok("%graph --style structure x + y")
    svg = one_view(ip)[SVG]
    assert "x" in svg_texts(svg) and "y" in svg_texts(svg)


def test_line_magic_of_a_non_variable(ip):
    exc = ip.fails("%graph 3")
    assert str(exc) == "'3' is not an nbgraph Variable (it is int)"
    exc = ip.fails("%graph len('abc')")
    assert "not an nbgraph Variable" in str(exc)
    exc = ip.fails("%graph")
    assert "needs an expression" in str(exc)
    exc = ip.fails("%graph -o x x")
    assert "-o applies to %%graph cells only" in str(exc)
    ip.fails("%graph undefined_name + 1", NameError)
    assert ip.bundles() == []


# ---------------------------------------------------------------------------
# errors


def test_unknown_option_is_a_usage_error_and_the_cell_does_not_run(ip):
    exc = ip.fails("%%graph --bogus\nran = x * 2")
    assert "unrecognized arguments: --bogus" in str(exc)
    assert "ran" not in ip.ns
    exc = ip.fails("%%graph --style fancy\nran = x * 2")
    assert "invalid choice" in str(exc)
    exc = ip.fails("%%graph --linker fast\nran = x * 2")
    assert "invalid choice" in str(exc)
    exc = ip.fails("%%graph stray words\nran = x * 2")
    assert "unexpected text" in str(exc)
    assert "ran" not in ip.ns
    assert ip.bundles() == []


@pytest.mark.parametrize("spec", ["x=[1,", "x", "[1, 2]", "x=1,,y=2", "'x'=1", "**d"])
def test_bad_eval_syntax_is_a_usage_error_and_the_cell_does_not_run(ip, spec):
    exc = ip.fails("%%%%graph --eval %s\nran = x * 2" % spec)
    assert "--eval expects name=value pairs" in str(exc)
    assert "ran" not in ip.ns
    assert ip.bundles() == []


def test_eval_errors_are_usage_errors(ip):
    exc = ip.fails("%%graph --eval x=[1,2]\nz = x * y")
    assert str(exc).startswith("--eval: no value for y")
    exc = ip.fails("%%graph --eval x=[1,2],n=3\nn = 4\nz = x * 2")
    assert "'n' is not an nbgraph Variable in the namespace (it is int)" in str(exc)
    exc = ip.fails("%%graph --eval x=[1,2],nope=3\nz = x * 2")
    assert "'nope' is not an nbgraph Variable in the namespace" in str(exc)
    exc = ip.fails("%%graph --eval x=1/0\nz = x * 2")
    assert "the value of x failed: ZeroDivisionError" in str(exc)
    exc = ip.fails("%%graph --eval x=['a']\nz = x * 2")
    assert "the value of x does not fit its type TensorType(float64, (None,))" in str(exc)
    exc = ip.fails("%%graph --eval x=[1],x=[2]\nz = x * 2")
    assert "x is given twice" in str(exc)


def test_o_name_that_is_not_a_variable(ip):
    exc = ip.fails("%%graph -o n\nn = 3\nz = x * 2")
    assert str(exc) == "-o: 'n' is not an nbgraph Variable (it is int)"
    exc = ip.fails("%%graph -o missing\nz = x * 2")
    assert str(exc) == "-o: no variable named 'missing' in the namespace"
    assert ip.bundles() == []


def test_exception_in_the_cell_is_an_ordinary_traceback(ip, capsys):
    result = ip.run("%%graph\nok = x * 2\nbad = undefined_name + 1\nnever = 1")
    exc = result.error_in_exec
    assert isinstance(exc, NameError)
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    assert frame.lineno == 2
    assert frame.line == "bad = undefined_name + 1"
    assert "ok" in ip.ns and "never" not in ip.ns
    out = capsys.readouterr().out
    assert "NameError: name 'undefined_name' is not defined" in out
    assert re.search(r"Cell In\[%d\], line 2\n.*\n----> 2 bad = undefined_name \+ 1\n"
                     % result.execution_count, out)
    assert ip.bundles() == []


def test_syntax_error_points_at_the_cells_line(ip, capsys):
    result = ip.run("%%graph\nok = x * 2\nbad = (x +\n")
    exc = result.error_in_exec
    assert isinstance(exc, SyntaxError)
    assert exc.lineno == 2 and exc.text.startswith("bad = (x +")
    assert "ok" not in ip.ns
    assert "Cell In[%d], line 2" % result.execution_count in capsys.readouterr().out


# ---------------------------------------------------------------------------
# GraphView


def test_graph_view_text_and_checks():
    x = nt.dvector("x")
    z = (x * 2).sum()
    view = GraphView(z, as_text=True)
    assert view._repr_mimebundle_() == {
        TEXT: dprint(z, print_type="short", file="str").rstrip("\n")}
    assert repr(view) == view._repr_mimebundle_()[TEXT]
    assert GraphView(z, show_types=False, as_text=True).text() == dprint(z, file="str")
    with pytest.raises(ValueError, match="style"):
        GraphView(z, style="fancy")


@pytest.mark.needs_dot
def test_graph_view_svg_follows_the_options():
    x = nt.dvector("x")
    z = (x * 2).sum()
    bundle = GraphView(z, style="structure", show_types=False)._repr_mimebundle_()
    assert bundle[SVG] == rich.render_svg(z, style="structure", show_types=False)
    assert GraphView(z)._repr_mimebundle_(exclude=[SVG, HTML]).keys() == {TEXT}
    assert GraphView(z)._repr_mimebundle_(exclude=[SVG]).keys() == {TEXT, HTML}
    assert GraphView(z)._repr_mimebundle_(include=[TEXT]).keys() == {TEXT}


def test_graph_view_without_dot(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    rich.clear_cache()
    x = nt.dvector("x")
    bundle = GraphView(x * 2)._repr_mimebundle_()
    assert set(bundle) == {TEXT}
    assert bundle[TEXT].endswith("\n" + rich.DOT_HINT)
    assert bundle[TEXT].startswith("Elemwise{mul} [id A]")


def test_graph_view_never_raises(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(rich, "render_svg", broken)
    x = nt.dvector("x")
    bundle = GraphView(x * 2)._repr_mimebundle_()
    assert bundle[TEXT].endswith("(diagram unavailable: boom)")
    monkeypatch.setattr(GraphView, "text", broken)
    assert "(text unavailable: boom)" in GraphView(x * 2)._repr_mimebundle_()[TEXT]


def test_graph_view_cuts_long_text_next_to_a_picture(monkeypatch):
    monkeypatch.setattr(rich, "render_svg", lambda *a, **k: "<svg/>")
    x = nt.dvector("x")
    z = x
    for _ in range(150):
        z = z * 2
    full = dprint(z, print_type="short", file="str").rstrip("\n")
    assert full.count("\n") > rich.TEXT_MAX_LINES
    picture = GraphView(z)._repr_mimebundle_()
    assert picture[TEXT].count("\n") == rich.TEXT_MAX_LINES
    assert "more lines" in picture[TEXT]
    assert GraphView(z, as_text=True)._repr_mimebundle_()[TEXT] == full  # asked for: whole
