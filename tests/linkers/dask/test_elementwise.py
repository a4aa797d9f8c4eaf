"""linker="dask" against the C-VM linker on elementwise graphs: random fused graphs
over broadcasting inputs with uneven chunks, NaN and infinities, on the
synchronous scheduler (a few on threads); exact where the operations are
exact, within SIMD_ULPS for transcendental functions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker

EXACT_BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
                lambda a, b: a / b, nt.maximum, nt.minimum]
EXACT_UNARY = [lambda a: -a, abs, nt.sqrt, lambda a: a * 2.0 - 1.5]
TRANSCENDENTAL = [nt.exp, nt.sin, nt.tanh, nt.log1p, nt.sigmoid]

SHAPES = {"x": (13, 9), "r": (1, 9), "c": (13, 1)}  # matrix, row, column


def _inputs():
    x = nt.tensor("float64", (None, None), "x")
    r = nt.tensor("float64", (1, None), "r")
    c = nt.tensor("float64", (None, 1), "c")
    return [x, r, c]


def _values(rng, special=True):
    vals = [rng.standard_normal(SHAPES[k]) * 3 for k in "xrc"]
    if special:
        flat = vals[0].reshape(-1)
        flat[rng.integers(0, flat.size, 6)] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308]
    return vals


@st.composite
def graphs(draw, transcendental):
    """A random elementwise graph: a few layers of ops over x, r, c and constants."""
    unary = EXACT_UNARY + (TRANSCENDENTAL if transcendental else [])
    pool = _inputs()
    inputs = list(pool)
    for _ in range(draw(st.integers(2, 7))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(EXACT_BINARY))
            a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
            pool.append(op(a, b))
        else:
            pool.append(draw(st.sampled_from(unary))(draw(st.sampled_from(pool))))
    return inputs, pool[-1]


CHUNKS = [(4, 5), (13, 2), (5, 9), ((3, 7, 3), (1, 8))]


@settings(max_examples=14, deadline=None)
@given(graphs(transcendental=False), st.integers(0, 2**31))
def test_exact_elementwise_graphs_equal_numpy_bit_for_bit(dk, graph, seed):
    """Exact operations: the chunked kernels give NumPy's (and the C linker's) bits,
    for every chunking of the same compiled function."""
    inputs, out = graph
    args = _values(np.random.default_rng(seed))
    with np.errstate(all="ignore"):
        want = nbgraph.function(inputs, out, linker="py", on_unused_input="ignore")(*args)
    for chunks in CHUNKS:
        f = nbgraph.function(inputs, out, linker=dk.sync(chunks), on_unused_input="ignore")
        dk.assert_bit_equal(f(*args), want)


@settings(max_examples=6, deadline=None)
@given(graphs(transcendental=True), st.sampled_from(CHUNKS), st.integers(0, 2**31))
def test_transcendental_graphs_equal_the_c_linker_within_simd_ulps(dk, graph, chunks, seed):
    inputs, out = graph
    args = _values(np.random.default_rng(seed))
    want = dk.reference(inputs, [out], args)
    got = dk.run_dask(inputs, [out], args, dk.sync(chunks))
    dk.assert_close_through_graph(inputs, out, args, got[0], want[0])


def test_outputs_are_lazy_dask_arrays_until_computed():
    import dask.array as da

    x, y = nt.dvectors("x", "y") if hasattr(nt, "dvectors") else (nt.dvector("x"),
                                                                  nt.dvector("y"))
    f = nbgraph.function([x, y], x * y + 1.0, linker="dask")
    out = f(np.arange(5.0), np.ones(5))
    assert isinstance(out, da.Array)
    assert out.dtype == np.float64 and out.shape == (5,)
    np.testing.assert_array_equal(out.compute(scheduler="sync"), np.arange(5.0) + 1)
    computed = f(np.arange(5.0), np.ones(5), compute=True)
    assert type(computed) is np.ndarray


def test_dask_and_zarr_arguments_keep_their_chunks(dk):
    import dask.array as da
    zarr = pytest.importorskip("zarr")

    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    a = np.arange(60.0).reshape(6, 10)
    z = zarr.create_array(store={}, shape=(6, 10), chunks=(3, 4), dtype="float64")
    z[:] = a * 2
    f = nbgraph.function([x, y], x - y * 0.5, linker=DaskLinker(scheduler="sync"))
    out = f(da.from_array(a, chunks=(2, 5)), z)
    assert out.chunks[0] in ((2, 2, 2), (2, 1, 1, 2))
    np.testing.assert_array_equal(out.compute(), a - a)


def test_dtypes_follow_the_graph(dk):
    x = nt.tensor("float32", (None,), "x")
    i = nt.tensor("int8", (None,), "i")
    out = x * 2.0 + i
    args = [np.linspace(-1, 1, 11, dtype="float32"), np.arange(11, dtype="int8")]
    got = dk.run_dask([x, i], [out, (i * 3), i > 4], args, dk.sync(4))
    want = dk.reference([x, i], [out, (i * 3), i > 4], args)
    for g, w in zip(got, want, strict=True):
        dk.assert_bit_equal(g, w)


def test_multi_output_fused_nodes_are_split_by_the_inputs_they_read(dk):
    from nbgraph.linkers.dask import split_multi_output_nodes

    x, y = nt.dvector("x"), nt.dvector("y")
    s = nt.sum(x)
    outs = [nt.exp(x) * 2.0, y * s + 1.0, nt.exp(x) + y]
    f = nbgraph.function([x, y], outs, linker=dk.sync(3))
    args = [np.linspace(0, 1, 10), np.linspace(2, 3, 10)]
    for out, g, w in zip(outs, f(*args), dk.reference([x, y], outs, args), strict=True):
        dk.assert_close_through_graph([x, y], out, args, g, w)
    # no node left computes outputs that read different inputs
    assert split_multi_output_nodes(f.fgraph) == 0


def test_threaded_scheduler_runs_kernels_in_parallel_threads(dk):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    out = nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((200, 30)), rng.standard_normal((200, 30))]
    f = nbgraph.function([x, y], out, linker=DaskLinker(chunks=(17, 30), compute=True,
                                                         scheduler="threads"))
    want = dk.reference([x, y], [out], args)[0]
    for _ in range(3):
        dk.assert_close_through_graph([x, y], out, args, f(*args), want)


def test_eval_with_the_dask_linker(dk):
    x = nt.dvector("x")
    y = nt.exp(x) + 1.0
    got = y.eval({x: np.arange(6.0)}, linker=dk.sync(2))
    dk.assert_close_ulps(got, np.exp(np.arange(6.0)) + 1.0)
    lazy = y.eval({"x": np.arange(6.0)}, linker="dask")
    assert hasattr(lazy, "compute")


def test_a_multi_output_kernel_runs_once_per_block_for_all_its_outputs(dk):
    x, y = nt.dvector("x"), nt.dvector("y")
    outs = [nt.tanh(x * y) + 1.0, nt.tanh(x * y) * 2.0]
    f = nbgraph.function([x, y], outs, linker=DaskLinker(chunks=3, scheduler="sync"))
    assert [len(n.outputs) for n in f.fgraph.toposort()] == [2]
    args = [np.linspace(-2, 2, 7), np.linspace(0, 1, 7)]
    lazy = f(*args)
    layers = set(lazy[0].__dask_graph__().layers) | set(lazy[1].__dask_graph__().layers)
    assert sum(name.startswith("nbgraph_elemwise_all") for name in layers) == 1
    computed = [v.compute() for v in lazy]
    for out, g, w in zip(outs, computed, dk.reference([x, y], outs, args), strict=True):
        dk.assert_close_through_graph([x, y], out, args, g, w)
