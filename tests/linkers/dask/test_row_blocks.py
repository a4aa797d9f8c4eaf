"""Row-block programs (nbgraph.linkers.dask.blocks): a graph over arguments split
along their rows runs as one task per row block plus a merge tree, with the
C-VM linker's results (reductions across blocks within the documented
tolerance); graphs that are not per-block fall back to the node-by-node
lowering with the same results."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker, block_program, blocks

da = pytest.importorskip("dask.array")


def _logreg():
    X, t = nt.dmatrix("X"), nt.dvector("t")
    w = nbgraph.shared(np.linspace(-0.2, 0.3, 4), "w")
    p = nt.sigmoid(nt.dot(X, w))
    cost = -(t * nt.log(p) + (1 - t) * nt.log(1 - p)).mean()
    return X, t, w, cost, nbgraph.grad(cost, w)


def _data(rows=57, cols=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, cols))
    return X, (X[:, 0] + rng.standard_normal(rows) > 0).astype("float64")


def _layers(values):
    return sorted({str(name) for v in values for name in v.__dask_graph__().layers})


def test_the_logistic_gradient_is_one_task_per_row_block_and_matches_the_c_linker(dk):
    X, t, w, cost, g = _logreg()
    f = nbgraph.function([X, t], [cost, g], linker=DaskLinker(scheduler="sync"))
    Xv, tv = _data()
    lazy = f(da.from_array(Xv, chunks=(10, 4)), da.from_array(tv, chunks=10))
    assert f.last_plan is not None
    names = _layers(lazy)
    assert sum(name.startswith("nbgraph_blocks_blocks") for name in names) == 1, names
    assert not any(name.startswith(("tensordot", "transpose")) for name in names), names
    # one task per row block for the per-block work (6 blocks of 10 rows)
    blocks_layer = [name for name in names if name.startswith("nbgraph_blocks_blocks")][0]
    assert len(lazy[1].__dask_graph__().layers[blocks_layer]) == 6
    got = [np.asarray(v.compute(scheduler="sync")) for v in lazy]
    want = dk.reference([X, t], [cost, g], [Xv, tv])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-15)


def test_tiles_inside_a_block_give_the_same_results(dk, monkeypatch):
    X, t, w, cost, g = _logreg()
    Xv, tv = _data(rows=1000)
    want = dk.reference([X, t], [cost, g], [Xv, tv])
    monkeypatch.setattr(block_program, "TILE_BYTES", 7 * 40)  # 64 rows per tile (the minimum)
    f = nbgraph.function([X, t], [cost, g], linker=DaskLinker(scheduler="sync", compute=True))
    got = f(da.from_array(Xv, chunks=(300, 4)), da.from_array(tv, chunks=300))
    program = next(iter(f._programs.values()))[0]
    assert program.tile_rows() == 64
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-15)


def test_tiles_keep_row_sized_intermediates_within_the_c_vm_s_kept_buffers(monkeypatch):
    """A tile's vectors fit the buffers the C-VM keeps between calls, so no tile
    allocates (a distributed worker's malloc would fault them in anew)."""
    X, t, w, cost, g = _logreg()
    Xv, tv = _data(rows=1000)
    f = nbgraph.function([X, t], [cost, g], linker=DaskLinker(scheduler="sync", compute=True))
    f(da.from_array(Xv, chunks=(300, 4)), da.from_array(tv, chunks=300))
    program = next(iter(f._programs.values()))[0]
    assert program.row_bytes == 5 * 8 and program.widest_row == 8  # X's 4 columns and t
    assert program.tile_rows() == block_program.keep_bytes() // 8
    monkeypatch.setattr(block_program, "TILE_BYTES", 2000 * 40)
    assert program.tile_rows() == 2000  # the input bytes' bound when it is smaller
    monkeypatch.setattr(block_program, "TILE_BYTES", 1 << 30)
    monkeypatch.setattr(block_program, "keep_bytes", lambda: 800)
    assert program.tile_rows() == block_program.MIN_TILE_ROWS  # never fewer rows for that


def _kinds(fn):
    out = []
    for node in fn.fgraph.apply_nodes:
        sem = node.op.chunk_semantics(node)
        if sem is None and getattr(node.op, "inplace_pattern", None):
            out.append("elementwise")  # in place: it overwrites the program's own intermediate
            continue
        out.append(None if sem is None else sem.kind)
    return out


def test_the_logistic_block_program_leaves_out_the_row_fill_and_identity_sums(dk):
    """The gradient's seed filled to X.shape[0] rows (read by elementwise nodes that
    get the rows from t) and the sums back to the same shape are left out of the
    block program: one fused elementwise node between the two products."""
    X, t, w, cost, g = _logreg()
    f = nbgraph.function([X, t], g, linker=DaskLinker(chunks=(10, 4), scheduler="sync"))
    assert "fill" in [_kind(n) for n in f.fgraph.apply_nodes]  # the graph has one
    Xv, tv = _data()
    got = f(Xv, tv).compute(scheduler="sync")
    program = next(iter(f._programs.values()))[0]
    kinds = _kinds(program.function())
    assert sorted(k or "" for k in kinds) == ["dot", "dot", "elementwise", "view"], kinds
    np.testing.assert_allclose(got, dk.reference([X, t], [g], [Xv, tv])[0],
                               rtol=1e-12, atol=1e-15)


def _kind(node):
    sem = node.op.chunk_semantics(node)
    return None if sem is None else sem.kind


def test_a_row_fill_stays_when_a_reader_has_no_other_row_sized_input(dk):
    x = nt.dmatrix("x")
    c = nt.dscalar("c")
    filled = nt.alloc(c, x.shape[0], 3)
    outs = [(filled * 2.0).sum(axis=0), (x * filled).sum(axis=0), x.sum()]
    f = nbgraph.function([x, c], outs, linker=DaskLinker(chunks=(6, 3), scheduler="sync",
                                                         compute=True))
    a = np.random.default_rng(4).standard_normal((20, 3))
    got = f(a, 1.5)
    assert f.last_plan is not None
    program = next(iter(f._programs.values()))[0]
    assert "fill" in _kinds(program.function())
    for g_, w_ in zip(got, dk.reference([x, c], outs, [a, 1.5]), strict=True):
        np.testing.assert_allclose(g_, w_, rtol=1e-12, atol=1e-14)


def test_row_blocks_reach_the_program_without_a_copy(monkeypatch):
    """blockwise's concatenate=True would copy each block of X (one block along its
    columns) into a fresh array: the program gets the stored block itself."""
    X, t, w, cost, g = _logreg()
    f = nbgraph.function([X, t], g, linker=DaskLinker(scheduler="sync"))
    Xv, tv = _data(rows=60)
    Xd, td = (v.persist(scheduler="sync") for v in (da.from_array(Xv, chunks=(20, 4)),
                                                      da.from_array(tv, chunks=20)))
    stored = [v for v in dict(Xd.__dask_graph__()).values() if isinstance(v, np.ndarray)]
    assert len(stored) == 3
    seen = []
    run = block_program.BlockProgram._run

    def spy(self, fn, row_blocks, small, rows):
        if rows == 20:  # not the two-row probe made while lowering
            seen.append(any(row_blocks[0] is s for s in stored))
        return run(self, fn, row_blocks, small, rows)

    monkeypatch.setattr(block_program.BlockProgram, "_run", spy)
    f(Xd, td).compute(scheduler="sync")
    assert seen == [True] * 3


def test_a_row_block_program_refuses_several_blocks_along_other_axes():
    assert block_program._one_block([[np.ones(2)]]).shape == (2,)
    with pytest.raises(ValueError, match="2 blocks along an axis"):
        block_program._one_block([np.ones(2), np.ones(2)])


def test_sgd_updates_and_row_outputs_through_block_programs(dk):
    rows = 41
    Xv, tv = _data(rows=rows, cols=3, seed=3)
    results = []
    for linker in (DaskLinker(chunks=(8, 3), scheduler="sync"), "cvm"):
        X, t = nt.dmatrix("X"), nt.dvector("t")
        w = nbgraph.shared(np.zeros(3), "w")
        z = nt.dot(X, w)
        cost = ((z - t) ** 2).mean()
        g = nbgraph.grad(cost, w)
        step = nbgraph.function([X, t], [cost, z * 2.0], updates=[(w, w - 0.1 * g)],
                                linker=linker)
        trace = [step(Xv, tv) for _ in range(3)]
        results.append((trace, w.get_value()))
    (got, w_got), (want, w_want) = results
    for (c1, z1), (c2, z2) in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(c1), c2, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(z1), z2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w_got, w_want, rtol=1e-12)


def test_reductions_over_rows_fills_and_a_mean_use_the_full_row_count(dk):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    outs = [((x - y) ** 2).mean(axis=0), (x * nt.ones_like(y)).sum() / x.shape[0],
            nt.dot(x.T, y), (x * 3.0).max(axis=0), nt.alloc(2.0, x.shape[0], 5).sum(axis=0)
            + x.mean()]
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((50, 5)), rng.standard_normal((50, 5))
    f = nbgraph.function([x, y], outs, linker=DaskLinker(chunks=(7, 5), scheduler="sync",
                                                         compute=True))
    got = f(a, b)
    assert f.last_plan is not None
    want = dk.reference([x, y], outs, [a, b])
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g_, w_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", ["reversed", "shifted", "centred", "columns"])
def test_graphs_that_are_not_per_block_fall_back_with_the_same_results(dk, case):
    x = nt.dmatrix("x")
    out = {"reversed": (x[::-1] * x).sum(axis=0),
           "shifted": (x[1:] - x[:-1]).sum(),
           "centred": ((x - x.mean(axis=0)) ** 2).sum(axis=0),
           "columns": nt.dot(x, x.T).sum()}[case]
    a = np.random.default_rng(2).standard_normal((50, 4))
    f = nbgraph.function([x], out, linker=DaskLinker(chunks=(9, 4), scheduler="sync",
                                                     compute=True))
    got = f(a)
    assert f.last_plan is None
    np.testing.assert_allclose(got, dk.reference([x], [out], [a])[0], rtol=1e-12, atol=1e-13)


def test_row_blocks_can_be_turned_off(dk):
    X, t, w, cost, g = _logreg()
    f = nbgraph.function([X, t], g, linker=DaskLinker(chunks=(10, 4), scheduler="sync",
                                                      row_blocks=False))
    Xv, tv = _data()
    out = f(Xv, tv)
    assert f.last_plan is None
    assert not any(name.startswith("nbgraph_blocks") for name in _layers([out]))
    np.testing.assert_allclose(out.compute(), dk.reference([X, t], [g], [Xv, tv])[0],
                               rtol=1e-12, atol=1e-15)


def test_kernels_run_serially_inside_a_worker_without_nbgraph_num_threads(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from nbgraph.linkers.c import threads
    from nbgraph.linkers.dask import kernels

    calls = []
    monkeypatch.delenv("NBGRAPH_NUM_THREADS", raising=False)
    monkeypatch.setattr(kernels, "_serial", {"checked": False})
    monkeypatch.setattr(threads, "set_num_threads", calls.append)
    assert not kernels.serial_in_workers()  # not in a worker: nothing changes
    assert calls == []
    monkeypatch.setattr(kernels, "_serial", {"checked": False})
    monkeypatch.setattr(distributed, "get_worker", lambda: object())
    assert kernels.serial_in_workers()
    assert calls == [1]
    assert not kernels.serial_in_workers()  # once per process
    monkeypatch.setattr(kernels, "_serial", {"checked": False})
    monkeypatch.setenv("NBGRAPH_NUM_THREADS", "2")
    assert not kernels.serial_in_workers() and calls == [1]


def test_small_partial_results_merge_in_one_task_big_ones_in_a_tree(dk, monkeypatch):
    X, t, w, cost, g = _logreg()
    Xv, tv = _data(rows=200)
    want = dk.reference([X, t], [g], [Xv, tv])[0]
    for limit, tasks in ((1 << 20, 1), (0, None)):
        monkeypatch.setattr(blocks, "MERGE_ONCE_BYTES", limit)
        f = nbgraph.function([X, t], g, linker=DaskLinker(scheduler="sync"))
        out = f(da.from_array(Xv, chunks=(10, 4)), da.from_array(tv, chunks=10))
        graph = dict(out.__dask_graph__())
        merges = [k for k in graph if str(k[0] if isinstance(k, tuple) else k)
                  .startswith("nbgraph_blocks_merge")]
        merging = len(merges) - 20  # the reduction's per-block step is named alike
        if tasks is None:
            assert merging > 2  # 20 partials: a tree (dask's fan-in)
        else:
            assert merging == tasks
        np.testing.assert_allclose(out.compute(scheduler="sync"), want, rtol=1e-12,
                                   atol=1e-15)
