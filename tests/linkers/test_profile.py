"""function(..., profile=True): per-node calls, time and output bytes."""

import numpy as np

import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.linkers.profile import PROFILE_OFF, TOP_NODES, ProfileStats


def _profiled():
    # rewrite=None keeps one node per op (fusion would make a single node)
    x = nt.dmatrix("x")
    out = (nt.exp(x) * 2.0).sum(axis=0)
    return x, function([x], out, profile=True, rewrite=None)


def test_profile_is_off_by_default_and_says_how_to_turn_it_on():
    x = nt.dscalar("x")
    f = function([x], x * 2.0)
    assert not f.profile and f.profile is PROFILE_OFF
    assert "function(..., profile=True)" in repr(f.profile)
    f.profile = True  # turned on later: a fresh ProfileStats
    assert isinstance(f.profile, ProfileStats)
    f(1.0)
    assert f.profile.calls == 1
    f.profile = None
    assert f.profile is PROFILE_OFF and f(2.0) == 4.0


def test_profile_counts_calls_time_and_bytes_per_node():
    x, f = _profiled()
    assert isinstance(f.profile, ProfileStats)
    assert f.profile.calls == 0
    value = np.ones((3, 4))
    for _ in range(3):
        np.testing.assert_allclose(f(value), np.full(4, 3 * 2 * np.e))
    stats = f.profile
    assert stats.calls == 3
    assert stats.nodes == f.program.nodes
    assert len(stats.nodes) == 4  # exp, DimShuffle of the constant 2.0, mul, sum
    assert stats.node_calls == [3, 3, 3, 3]
    assert all(isinstance(t, float) and t >= 0.0 for t in stats.node_time)
    assert stats.total_time == sum(stats.node_time)
    # bytes are the NumPy nbytes of each node's outputs
    expected = {"Elemwise{exp}": np.exp(value).nbytes,
                "DimShuffle{x,x}": np.array(2.0).reshape(1, 1).nbytes,
                "Elemwise{mul}": (np.exp(value) * 2).nbytes,
                "Sum{axis=0}": (np.exp(value) * 2).sum(axis=0).nbytes}
    by_op = {str(node.op): stats.node_bytes[i] for i, node in enumerate(stats.nodes)}
    assert by_op == expected
    assert expected == {"Elemwise{exp}": 96, "DimShuffle{x,x}": 8, "Elemwise{mul}": 96,
                        "Sum{axis=0}": 32}


def test_bytes_follow_the_largest_call():
    x = nt.dvector("x")
    f = function([x], x * 2.0, profile=True)
    f(np.ones(10))
    f(np.ones(2))
    assert f.profile.node_bytes == [np.ones(10).nbytes]
    assert f.profile.node_calls == [2]


def test_rows_sorted_by_time_with_consistent_fields():
    x, f = _profiled()
    f(np.ones((5, 5)))
    rows = f.profile.rows()
    assert len(rows) == 4
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    if f.profile.total_time > 0:
        assert abs(sum(r["share"] for r in rows) - 1.0) < 1e-9
    for r in rows:
        assert r["calls"] == 1
        assert r["per_call"] == r["seconds"]
        assert r["node"] is f.profile.nodes[r["index"]]
        assert r["op"] == str(r["node"].op)
        assert r["kind"] == f.profile.kinds[r["index"]] == f.program.kinds[r["index"]]
        assert r["kind"] in ("py", "c")
        assert r["bytes"] == f.profile.node_bytes[r["index"]]


def test_str_is_a_table_with_a_row_per_node():
    x, f = _profiled()
    f(np.ones((3, 4)))
    f(np.ones((3, 4)))
    text = str(f.profile)
    lines = text.splitlines()
    assert lines[0].startswith("profile of <Function")
    assert "2 calls" in lines[0]
    header = lines[1].split()
    for column in ("node", "kind", "calls", "share"):
        assert column in header
    assert set(lines[2]) == {"-"}
    body = lines[3:]
    assert len(body) == len(f.profile.nodes) == 4
    for node_label in ("Elemwise{exp}(x)", "Sum{axis=0}(Elemwise{mul}.0)"):
        assert sum(node_label in line for line in body) == 1
    for line in body:
        fields = line.split()
        assert fields[-1] in ("96", "8", "32")  # out bytes
        index = int(fields[0])
        assert " %s " % f.profile.kinds[index] in line and " 2 " in line
    assert repr(f.profile) == "<ProfileStats 4 nodes, 2 calls>"


def test_profile_of_the_rewritten_graph_has_a_row_per_compiled_node():
    x = nt.dmatrix("x")
    f = function([x], (nt.exp(x) * 2.0).sum(axis=0), profile=True)
    value = np.ones((3, 4))
    f(value)
    assert f.profile.nodes == f.program.nodes
    assert len(str(f.profile).splitlines()) == 3 + len(f.fgraph.apply_nodes)
    # the node computing the output reports the output's bytes
    out_node = f.fgraph.outputs[0].owner
    index = f.profile.nodes.index(out_node)
    assert f.profile.node_bytes[index] == np.exp(value).sum(axis=0).nbytes


def test_table_before_any_call():
    x = nt.dvector("x")
    f = function([x], x * 2.0, profile=True)
    lines = str(f.profile).splitlines()
    assert "0 calls" in lines[0]
    assert len(lines) == 4
    assert lines[3].split()[-1] == "0"


def test_profiled_function_gives_the_same_results():
    x = nt.dvector("x")
    expr = nt.sqrt(x * x + 1.0) - x
    plain = function([x], expr)
    profiled = function([x], expr, profile=True)
    value = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(plain(value), profiled(value))


def _seventy_node_function():
    x = nt.dvector("x")
    out = x
    for _k in range(35):  # two nodes per step, no rewrite: 70 nodes
        out = nt.tanh(out * x)
    return x, function([x], out, profile=True, rewrite=None, linker="py")


def test_profile_of_a_70_node_function_summarises_in_at_most_25_rows():
    x, f = _seventy_node_function()
    assert len(f.program.nodes) == 70
    for _ in range(3):  # times accumulate over calls
        f(np.ones(5))
    stats = f.profile
    assert stats.calls == 3 and stats.node_calls == [3] * 70
    text = str(stats)
    lines = text.splitlines()
    rows = [line for line in lines[3:] if line.strip()]
    assert len(rows) <= 25, text
    assert "other %d nodes" % (70 - TOP_NODES) in text
    assert "by Op class:" in text and "by Op:" in text
    classes = {r["name"]: r["nodes"] for r in stats.by_class()}
    assert classes == {"Elemwise": 70}
    assert sum(r["nodes"] for r in stats.by_op()) == 70
    assert abs(sum(r["seconds"] for r in stats.by_op()) - stats.total_time) < 1e-12
    assert all(len(line) <= 110 for line in lines[1:])  # one line per row, no wrapping
    stats.reset()
    assert stats.calls == 0 and stats.total_time == 0.0
