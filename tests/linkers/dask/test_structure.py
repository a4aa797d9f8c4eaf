"""Views, joins, fills, gradients and updates through linker="dask", and what it
refuses: Ops without a chunked rule, dask arrays given to the other linkers."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker, NoChunkedRule


def test_views_joins_and_fills_match_the_c_linker(dk):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    v = nt.dvector("v")
    outs = [x.T * 2.0, x.dimshuffle(1, "x", 0) + 1.0, x[1:6:2, ::-1] - y[:3, :],
            x.reshape((4, -1)) * 0.5, nt.concatenate([x, y], axis=1) + 1.0,
            nt.concatenate([x, y], axis=0).sum(axis=1), x + nt.ones_like(x) * 3.0,
            nt.zeros((4, 6)) + v, x[2] * v]
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((8, 6)), rng.standard_normal((8, 6)), rng.standard_normal(6)]
    got = dk.run_dask([x, y, v], outs, args, dk.sync((3, 4)))
    want = dk.reference([x, y, v], outs, args)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if k == 5:
            np.testing.assert_allclose(g, w, rtol=1e-14)
        else:
            dk.assert_bit_equal(g, w)


def test_a_constant_fill_is_handed_to_its_consumer_not_made_of_tasks(dk):
    x = nt.dmatrix("x")
    out = nt.alloc(2.5, x.shape[0], x.shape[1]) * x
    f = nbgraph.function([x], out, linker=DaskLinker(chunks=(2, 3), scheduler="sync"))
    lazy = f(np.ones((4, 6)))
    assert not any("broadcast" in str(name) for name in lazy.__dask_graph__().layers)
    np.testing.assert_array_equal(lazy.compute(), np.full((4, 6), 2.5))


def test_logistic_regression_gradient_and_sgd_updates_match_the_c_linker(dk):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((57, 4))
    t = (rng.uniform(size=57) < 0.5).astype("float64")

    def build():
        w = nbgraph.shared(np.zeros(4), "w")
        b = nbgraph.shared(np.float64(0.0), "b")
        x, y = nt.dmatrix("x"), nt.dvector("y")
        p = nt.sigmoid(nt.dot(x, w) + b)
        cost = -(y * nt.log(p) + (1 - y) * nt.log(1 - p)).mean()
        gw, gb = nbgraph.grad(cost, [w, b])
        return x, y, w, b, cost, gw, gb

    results = []
    for linker in (dk.sync((10, 4)), "cvm"):
        x, y, w, b, cost, gw, gb = build()
        step = nbgraph.function([x, y], [cost, gw], updates=[(w, w - 0.5 * gw),
                                                             (b, b - 0.5 * gb)],
                                linker=linker)
        trace = [step(X, t) for _ in range(3)]
        results.append((trace, w.get_value(), b.get_value()))
    (dtrace, dw, db), (ctrace, cw, cb) = results
    for (dc, dg), (cc, cg) in zip(dtrace, ctrace, strict=True):
        np.testing.assert_allclose(dc, cc, rtol=1e-12)
        np.testing.assert_allclose(dg, cg, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dw, cw, rtol=1e-12)
    np.testing.assert_allclose(db, cb, rtol=1e-12, atol=1e-15)
    assert type(dw) is np.ndarray


def test_an_op_without_a_chunked_rule_runs_gathered_with_a_warning_or_is_refused(dk,
                                                                                monkeypatch):
    from nbgraph.linkers.dask import lowering

    x = nt.dvector("x")
    out = nt.sort(x * 2.0) + 1.0 if hasattr(nt, "sort") else None
    if out is None:
        pytest.skip("no sort Op")
    f = nbgraph.function([x], out, linker=dk.sync(4))
    with pytest.warns(RuntimeWarning, match="no chunked rule"):
        got = f(np.array([3.0, 1.0, 2.0, 0.0, 5.0]))
    np.testing.assert_array_equal(got, [1.0, 3.0, 5.0, 7.0, 11.0])
    monkeypatch.setattr(lowering, "GATHER_LIMIT_BYTES", 8)
    with pytest.raises(NoChunkedRule, match="declares no chunk semantics") as info:
        f(np.array([3.0, 1.0, 2.0, 0.0, 5.0]))
    assert "Sort" in str(info.value) or "sort" in str(info.value)


def test_other_linkers_refuse_a_dask_array_instead_of_computing_it():
    import dask.array as da

    x = nt.dvector("x")
    f = nbgraph.function([x], x + 1.0, linker="cvm")
    with pytest.raises(TypeError, match="dask array.*linker='dask'"):
        f(da.ones(10, chunks=5))


def test_dask_arguments_are_checked_from_their_metadata():
    import dask.array as da

    x = nt.tensor("float64", (None, 3), "x")
    f = nbgraph.function([x], x * 2.0, linker="dask")
    with pytest.raises(TypeError, match="dtype float64.*float32"):
        f(da.ones((4, 3), dtype="float32"))
    with pytest.raises(TypeError, match="2 dimensions"):
        f(da.ones(4))
    with pytest.raises(ValueError, match="shape"):
        f(da.ones((4, 5)))


def test_chunk_kernels_pickle_by_reference_and_task_names_are_salted(dk):
    import pickle

    from nbgraph.linkers.dask import ChunkKernel

    x = nt.dvector("x")
    f = nbgraph.function([x], nt.exp(x) * 2.0, linker=dk.sync(3))
    (kernel,) = [k for k in f.kernels.values() if isinstance(k, ChunkKernel)]
    data = pickle.dumps(kernel)
    assert b"LoadedModule" not in data and b"cffi" not in data
    back = pickle.loads(data)
    np.testing.assert_array_equal(back(np.arange(4.0)), kernel(np.arange(4.0)))
    a, b = f.lower(np.arange(5.0))[0][0], f.lower(np.arange(5.0))[0][0]
    assert a.name != b.name  # each call's tasks are its own
    assert f.dask_graph is not None


def test_diagram_kinds_mark_chunked_kernels(dk):
    x = nt.dmatrix("x")
    f = nbgraph.function([x], (nt.exp(x) * x.T).sum(axis=0), linker=dk.sync(3))
    kinds = dict(zip(f.program.nodes, f.program.kinds, strict=True))
    assert "chunked" in kinds.values() and "dask" in kinds.values()
    assert "<DaskFunction" in repr(f)


def test_diagrams_colour_chunked_kernel_nodes_with_a_legend(dk):
    from nbgraph.display.diagram import diagram

    x = nt.dmatrix("x")
    f = nbgraph.function([x], (nt.exp(x) * x.T).sum(axis=0), linker=dk.sync(3))
    source = diagram(f, style="compact").source
    assert "C kernel per chunk (1 node)" in source and "dask.array (1 node)" in source
