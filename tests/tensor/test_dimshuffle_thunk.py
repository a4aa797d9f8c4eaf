"""DimShuffle's fast Python thunk (``make_py_thunk``, what the Python and C-VM linkers run)
against its ``perform``: every pattern (transpose, dropped size-1 axes, new axes, all
mixed) over shapes with sizes 0, 1, 2 and 3, as a view of the input with the same shape,
type and values; a dropped axis that is not of size 1 fails with perform's error."""

import itertools

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.dimshuffle import DimShuffle


def _patterns(shape, rng):
    nd = len(shape)
    for _ in range(12):
        kept = [d for d in range(nd) if not (shape[d] == 1 and rng.random() < 0.5)]
        order = [int(p) for p in rng.permutation(kept)]
        for _ in range(int(rng.integers(0, 3))):
            order.insert(int(rng.integers(0, len(order) + 1)), "x")
        yield [d for d in range(nd) if d not in kept], order


def _run_both(op, node, x):
    out = [[None]]
    op.perform(node, [x], out)
    cell = [None]
    op.make_py_thunk(node, [[x]], [cell])()
    return out[0][0], cell[0]


@pytest.mark.parametrize("nd", [0, 1, 2, 3])
def test_thunk_matches_perform(nd):
    rng = np.random.default_rng(nd)
    for shape in itertools.product([1, 2, 3, 0], repeat=nd):
        x = rng.standard_normal(shape)
        for dropped, order in _patterns(shape, rng):
            var = nt.TensorType("float64", tuple(1 if d in dropped else None
                                                 for d in range(nd)))()
            op = DimShuffle(nd, order)
            want, got = _run_both(op, op.make_node(var), x)
            assert type(got) is type(want) is np.ndarray
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            assert x.size == 0 or np.shares_memory(got, x)


def test_a_dropped_axis_not_of_size_one_fails_like_perform():
    op = DimShuffle(2, (1,))
    node = op.make_node(nt.TensorType("float64", (1, None))())
    with pytest.raises(ValueError, match="dimensions \\(0,\\) must have size 1"):
        op.make_py_thunk(node, [[np.zeros((2, 3))]], [[None]])()


def test_in_a_function():
    b = nt.dvector("b")
    s = nt.dscalar("s")
    f = nbgraph.function([b, s], [b.dimshuffle("x", 0) * 2, s.dimshuffle("x", "x") + 1],
                         linker="cvm")
    row, col = f(np.arange(3.0), 4.0)
    assert row.shape == (1, 3) and row.tolist() == [[0.0, 2.0, 4.0]]
    assert col.shape == (1, 1) and col.tolist() == [[5.0]]
