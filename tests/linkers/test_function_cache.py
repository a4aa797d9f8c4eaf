"""The function cache (nbgraph.linkers.function_cache): a graph compiled before is not
rewritten again, and the Function is the same one."""

import glob
import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.op import Op
from nbgraph.linkers import function_cache as fc
from nbgraph.tensor.type import TensorType

pytestmark = pytest.mark.needs_cc


class _Forgetful(set):
    """A process that forgets the structures it compiled (as a new process would)."""

    def add(self, item):
        pass


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory; entries of this process are used (as by the next one)."""
    from nbgraph.config import config

    path = tmp_path / "cache"
    fc.flush()  # the entries other tests' functions left waiting
    with config.change(cache_dir=path):
        monkeypatch.setattr(fc, "SAME_PROCESS", True)
        monkeypatch.setattr(fc, "STORE_MIN_SECONDS", 0.0)
        monkeypatch.setattr(fc, "DEFER_WRITES", False)
        monkeypatch.setattr(fc, "_SEEN", _Forgetful())
        for k in fc.STATS:
            monkeypatch.setitem(fc.STATS, k, 0)
        yield path


def _entries(path):
    return glob.glob(os.path.join(str(path), "function-*.rec"))


def _text(f):
    buf = io.StringIO()
    f.dprint(file=buf)
    return buf.getvalue()


def _logreg(linker="c", **kwargs):
    X, w = nt.dmatrix("X"), nt.dvector("w")
    cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w)))) + 0.01 * nt.sum(w * w)
    return ng.function([X, w], [cost, ng.grad(cost, w)], linker=linker, **kwargs)


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((50, 7)), rng.standard_normal(7)


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_a_second_compile_is_a_hit_with_the_same_graph_module_and_results(cache, linker):
    xv, wv = _data()
    first = _logreg(linker)
    assert fc.STATS["stored"] == 1 and fc.STATS["hits"] == 0
    second = _logreg(linker)
    assert fc.STATS["hits"] == 1
    assert _text(first) == _text(second)
    assert first.program.kinds == second.program.kinds
    assert first.program.module is second.program.module  # found by its key
    assert len(second.fgraph.history) == len(first.fgraph.history) > 0
    for a, b in zip(first(xv, wv), second(xv, wv), strict=True):
        np.testing.assert_array_equal(a, b)
    assert second.fgraph.inputs[:2] != first.fgraph.inputs[:2]  # its own inputs


def test_options_config_and_structure_change_the_key(cache):
    _logreg()
    _logreg(rewrite="exact")
    _logreg(name="other")
    from nbgraph.config import config

    with config.change(node_trace=False):
        _logreg()
    assert fc.STATS["hits"] == 0 and fc.STATS["stored"] == 4
    x = nt.dvector("x")
    keys = set()
    for c in (0.5, 0.25, -0.0, 0.0):
        fg = ng.FunctionGraph([x], [x * c], clone=False)
        keys.add(fc.graph_key(fg.inputs, fg.outputs, {}))
    assert len(keys) == 4


def test_a_damaged_entry_is_ignored_and_replaced(cache):
    xv, wv = _data()
    want = _logreg()(xv, wv)
    (path,) = _entries(cache)
    for damage in (b"garbage", open(path, "rb").read()[:-40]):
        with open(path, "wb") as f:
            f.write(damage)
        got = _logreg()(xv, wv)
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(a, b)
    assert fc.STATS["rejected"] == 2 and fc.STATS["hits"] == 0 and fc.STATS["stored"] == 3
    _logreg()
    assert fc.STATS["hits"] == 1


def test_a_changed_source_file_makes_the_entry_stale(cache, tmp_path, monkeypatch):
    watched = tmp_path / "module.py"
    watched.write_text("a = 1\n")
    real = fc._file_list
    monkeypatch.setattr(fc, "_file_list", lambda: real() + [
        (str(watched), watched.stat().st_size, watched.stat().st_mtime_ns)])
    monkeypatch.setattr(fc, "_FILES", {})  # (file lists are kept per process)
    _logreg()
    _logreg()
    assert fc.STATS["hits"] == 1
    watched.write_text("a = 22\n")
    _logreg()
    assert fc.STATS["rejected"] == 1 and fc.STATS["hits"] == 1


def test_an_entry_of_this_process_is_kept_for_the_next_one(cache, monkeypatch):
    monkeypatch.setattr(fc, "SAME_PROCESS", False)
    _logreg()
    _logreg()
    assert fc.STATS["hits"] == 0 and fc.STATS["stored"] == 1


def test_errors_and_creation_sites_are_the_same(cache):
    def build():
        x, y = nt.dvector("x"), nt.dvector("y")
        return ng.function([x, y], nt.exp(x) * y + 1.0, linker="c")

    messages = []
    for _ in range(2):
        with pytest.raises(ValueError) as info:
            build()(np.ones(3), np.ones(4))
        messages.append(str(info.value))
    assert fc.STATS["hits"] == 1, fc.STATS
    assert messages[0] == messages[1]
    assert "test_function_cache.py" in messages[0]


def test_updates_and_output_copies_behave_the_same(cache):
    results = []
    for _ in range(2):
        w = ng.shared(np.arange(3.0), name="w")
        x = nt.dvector("x")
        f = ng.function([x], [w * 1.0, x], updates=[(w, w + x)], linker="cvm")
        out = f(np.ones(3))
        out2 = f(np.ones(3))
        assert out[1] is not out2[1]
        results.append((w.get_value(), out[0], f._plan.copy_outputs))
    assert fc.STATS["hits"] == 1
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]


def test_shared_values_are_not_stored(cache):
    big = np.arange(200000.0)
    w = ng.shared(big, name="w")
    x = nt.dvector("x")
    ng.function([x], (w * x).sum(), linker="c")
    (path,) = _entries(cache)
    assert os.path.getsize(path) < 100000


class _UserOp(Op):
    __props__ = ()

    def make_node(self, x):
        from nbgraph.core.graph import Apply

        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + 1


def test_a_user_op_or_a_user_rewrite_is_not_cached(cache, monkeypatch):
    x = nt.dvector("x")
    ng.function([x], _UserOp()(x) * 2.0, linker="cvm")
    assert fc.STATS["refused"] == 1 and not _entries(cache)
    from nbgraph.tensor import rewriting

    monkeypatch.setattr(rewriting.rewrites, "altered", True)
    _logreg()
    assert fc.STATS["refused"] == 2 and not _entries(cache)


def test_the_py_linker_and_rewriter_objects_are_not_cached(cache):
    _logreg("py")
    assert not _entries(cache) and sum(fc.STATS.values()) == 0


def test_writes_wait_for_exit_or_flush(cache, monkeypatch):
    monkeypatch.setattr(fc, "DEFER_WRITES", True)
    _logreg()
    assert not _entries(cache) and fc.STATS["stored"] == 0
    assert fc.flush() == 1 and len(_entries(cache)) == 1
    _logreg()
    assert fc.STATS["hits"] == 1


def test_a_structure_compiled_again_with_new_constants_is_not_looked_up(cache, monkeypatch):
    monkeypatch.setattr(fc, "_SEEN", set())
    for c in (0.5, 0.75, 0.5):
        x = nt.dvector("x")
        ng.function([x], nt.exp(x) * c + 1.0, linker="c")
    assert fc.STATS["stored"] == 1 and fc.STATS["misses"] == 1 and fc.STATS["hits"] == 0


def test_disabled(cache, monkeypatch):
    monkeypatch.setattr(fc, "ENABLED", False)
    _logreg()
    assert not _entries(cache)


def test_a_fresh_process_uses_the_entry(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, nbgraph as ng, nbgraph.tensor as nt
        from nbgraph.linkers import codecache, function_cache as fc
        compiles = []
        def counted(*args):
            compiles.append(args[1])
            return compile(*args)
        codecache.compile = counted  # (the builtin, as codecache calls it)
        x, y = nt.dvector("x"), nt.dvector("y")
        f = ng.function([x, y], nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y, linker="c")
        f.program.wait_compiled()
        out = f(np.arange(3.0), np.ones(3))
        from nbgraph.linkers.c import threads
        inline = threads.loaded() and threads._state["prefetch"] is None
        print(fc.STATS["hits"], fc.STATS["stored"], len(compiles), inline,
              repr(out.tolist()))
    """)
    env = dict(os.environ, NBGRAPH_CACHE_DIR=str(tmp_path / "c"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    outs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True, cwd=root).stdout.split(" ", 4)
            for _ in range(3)]
    # the first process writes its entry when it exits; the first one to use it adds
    # the generated Python compiled once the C module was there; the next compiles none
    assert outs[0][:2] == ["0", "0"] and outs[1][:2] == ["1", "0"] and outs[2][:2] == ["1", "0"]
    assert int(outs[0][2]) > 0 and outs[2][2] == "0", outs
    # a hit loads the runtime library on its own thread (no prefetch thread competing
    # with it for the interpreter: that is for a miss, whose rewrites it overlaps)
    assert outs[1][3] == outs[2][3] == "True", outs
    assert outs[0][4] == outs[1][4] == outs[2][4]


def test_types_are_keyed_by_their_props():
    x = nt.TensorVariable(TensorType("float64", (3,)), name="x") \
        if hasattr(nt, "TensorVariable") else None
    if x is None:
        pytest.skip("no TensorVariable")
    y = nt.dvector("x")
    assert fc.graph_key([x], [x * 2.0], {}) != fc.graph_key([y], [y * 2.0], {})



def test_another_source_tree_has_other_keys(monkeypatch):
    # a checkout and a worktree sharing a cache directory: the entries' saved plans
    # name modules generated by their own tree's code
    x = nt.dvector("x")
    key = fc.graph_key([x], [x * 2.0], {})
    monkeypatch.setattr(fc, "_STATIC", [])
    monkeypatch.setattr(fc, "_PACKAGE", "/another/tree/nbgraph/")
    assert fc.graph_key([x], [x * 2.0], {}) != key

def _record_codes(path):
    import pickle

    (entry,) = _entries(path)
    with open(entry, "rb") as f:
        data = f.read()
    return pickle.loads(data[len(fc._MAGIC):])[-1]


def test_the_generated_python_is_stored_and_preloaded(cache, monkeypatch):
    from nbgraph.linkers import codecache

    real = fc._code_records
    monkeypatch.setattr(fc, "_code_records", lambda known, keys: tuple(known))
    _logreg()
    assert _record_codes(cache) == ()  # as a miss that linked before its C module
    monkeypatch.setattr(fc, "_code_records", real)
    second = _logreg()  # a hit: its linking's code objects are added to the entry
    codes = _record_codes(cache)
    assert codes and all(isinstance(s, str) and isinstance(n, str) for s, n, _ in codes)
    monkeypatch.setattr(codecache, "_codes", type(codecache._codes)())
    compiled = []
    monkeypatch.setattr(codecache, "compile", lambda *a: compiled.append(a) or compile(*a),
                        raising=False)
    third = _logreg()  # preloaded: nothing compiled, nothing added
    assert compiled == []
    assert {(s, n) for s, n, _ in codes} <= set(codecache._codes)
    assert _record_codes(cache) == codes
    xv, wv = _data()
    for a, b in zip(second(xv, wv), third(xv, wv), strict=True):
        np.testing.assert_array_equal(a, b)


def _lifted_graph():
    x, y = nt.dvector("x"), nt.dvector("y")
    return ng.function([x, y], nt.exp(x * 0.37) + y * nt.constant(np.array([1.3])),
                       linker="c")


def _same_view(a, b):
    assert a.node is b.node and a.lifted == b.lifted
    if not a.lifted:
        return
    assert a.knode.op == b.knode.op
    assert [v.type for v in a.knode.inputs] == [v.type for v in b.knode.inputs]
    assert [v.type for v in a.knode.outputs] == [v.type for v in b.knode.outputs]
    n = len(a.node.inputs)
    for va, vb, orig in zip(a.knode.inputs[:n], b.knode.inputs[:n], a.node.inputs,
                            strict=True):
        assert (va is orig) == (vb is orig)  # the node's own inputs stay the node's
    assert all(v not in a.node.outputs for v in b.knode.outputs)
    assert len(a.extra) == len(b.extra)
    for u, v in zip(a.extra, b.extra, strict=True):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)


def test_a_hit_reads_the_kernel_views_instead_of_lifting_constants_again(cache, monkeypatch):
    from nbgraph.linkers.c import kernel_nodes, linker as c_linker

    first = _lifted_graph()
    plan = first.program._plan
    assert any(view.lifted for view in plan.views.values())
    data = kernel_nodes.dump_views(plan.nodes, plan.views)
    views = kernel_nodes.load_views(plan.nodes, data)
    for node in plan.nodes:
        _same_view(plan.views[node], views[node])

    def no_lifting(node):
        raise AssertionError("kernel_view called on a hit")
    monkeypatch.setattr(c_linker, "kernel_view", no_lifting)
    second = _lifted_graph()
    assert fc.STATS["hits"] == 1
    xv, yv = np.linspace(-1, 1, 5), np.arange(5.0)
    np.testing.assert_array_equal(first(xv, yv), second(xv, yv))
    np.testing.assert_allclose(second(xv, yv), np.exp(xv * 0.37) + yv * 1.3, rtol=1e-15)


@pytest.mark.parametrize("data", [None, b"", b"garbage", 3])
def test_damaged_kernel_views_are_computed_again(cache, data):
    from nbgraph.linkers.c import kernel_nodes

    plan = _lifted_graph().program._plan
    assert kernel_nodes.load_views(plan.nodes, data) is None
    other = kernel_nodes.dump_views(plan.nodes, plan.views)
    assert kernel_nodes.load_views(plan.nodes * 2, other) is None  # made for other nodes
    assert kernel_nodes.load_views(plan.nodes, other[:-3]) is None  # cut short
