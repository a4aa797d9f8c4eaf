"""Errors raised while a compiled function runs point at the user's line.

What a newcomer meets when a call fails: one exception (the Op's own, its message extended
with the failing node, its inputs' shapes and dtypes, and "This node was built at ..." with
the line that built it), not chained copies; nbgraph's own frames marked hidden for IPython
and pytest; in a notebook, a short traceback that names the cell and line.  The creation
site is recorded when a node is built (``config.node_trace``), survives compilation (clones
and rewritten nodes inherit it) and appears in the debug linker's reports too.
"""

import re

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.core.graph import Apply
from nbgraph.core.op import Op
from nbgraph.core.trace import creation_site, describe_site, site_of

HERE = __file__


def _mlp_step():
    X = nt.dmatrix("X")
    W0 = ng.shared(np.ones((4, 32)), name="W0")
    h = nt.tanh(X.dot(W0) + 1.0)  # the line errors must name
    return X, W0, h


def test_a_node_records_the_line_that_built_it():
    X, W0, h = _mlp_step()
    filename, lineno, function = site_of(h)
    assert filename == HERE and function == "_mlp_step"
    assert "h = nt.tanh(X.dot(W0) + 1.0)" in describe_site(site_of(h))
    dot = h.owner.inputs[0].owner.inputs[0]
    assert site_of(dot) == site_of(h)


def test_compiled_and_rewritten_nodes_keep_the_users_line():
    X, W0, h = _mlp_step()
    f = ng.function([X], h, linker="py")
    sites = {site_of(node) for node in f.fgraph.toposort()}
    assert sites == {site_of(h)}  # the fused tanh(... + 1) too


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_a_runtime_error_is_one_exception_naming_node_inputs_and_line(linker):
    X, W0, h = _mlp_step()
    f = ng.function([X], h, linker=linker)
    with pytest.raises(ValueError) as info:
        f(np.ones((10, 5)))
    exc = info.value
    message = str(exc)
    assert "Apply node that caused the error: Dot(X, W0)" in message
    assert "X: shape (10, 5), dtype float64; W0: shape (4, 32), dtype float64" in message
    assert "This node was built at" in message
    assert message.rstrip().endswith("h = nt.tanh(X.dot(W0) + 1.0)  # the line errors must name")
    assert exc.__cause__ is None and exc.__suppress_context__
    assert message.count("Apply node that caused the error") == 1


def test_high_verbosity_keeps_the_ops_frames_and_chain():
    X, W0, h = _mlp_step()
    f = ng.function([X], h, linker="py")
    with config.change(exception_verbosity="high"):
        with pytest.raises(ValueError) as info:
            f(np.ones((10, 5)))
    frames = []
    tb = info.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert any("tensor" in name for name in frames)  # the Op's perform


def test_node_trace_can_be_switched_off():
    with config.change(node_trace=False):
        x = nt.dvector("x")
        y = nt.exp(x)
    assert site_of(y) is None
    assert creation_site() is not None  # called from here: this file is not nbgraph's


class SneakyInc(Op):
    """Adds one to its input in place without declaring it (the debug linker catches it)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        inputs[0] += 1
        output_storage[0][0] = inputs[0].copy()


def test_debug_linker_reports_name_the_users_line():
    x = nt.dvector("x")
    y = SneakyInc()(x * 2)  # built here
    f = ng.function([x], y, linker="debug", rewrite=None)
    with pytest.raises(Exception) as info:
        f(np.ones(3))
    message = str(info.value)
    assert "SneakyInc" in message
    assert "This node was built at" in message and "y = SneakyInc()(x * 2)" in message


NOTEBOOK_CELLS = [
    "import numpy as np\nimport nbgraph as ng\nimport nbgraph.tensor as nt",
    "X = nt.dmatrix('X')\n"
    "W0 = ng.shared(np.ones((4, 32)), name='W0')\n"
    "b0 = ng.shared(np.zeros(32), name='b0')\n"
    "h = nt.tanh(X.dot(W0) + b0)\n"
    "f = ng.function([X], h)",
    "f(np.ones((10, 5)))",
]


def test_in_a_notebook_the_traceback_is_short_and_names_the_cell_and_line():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in NOTEBOOK_CELLS]
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                     allow_errors=True)
    client.execute()
    errors = [out for out in nb.cells[2].outputs if out.output_type == "error"]
    assert len(errors) == 1
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0].traceback))
    lines = text.splitlines()
    assert len(lines) <= 15, text
    assert "Cell In[3], line 1" in text  # the call
    assert "This node was built at Cell In[2], line 4:" in text
    assert "h = nt.tanh(X.dot(W0) + b0)" in text
    assert "Apply node that caused the error: Dot(X, W0)" in text
    assert "linkers" not in text and "<nbgraph" not in text  # nbgraph's frames are hidden
