"""The C kernels of argmax / argmin / max_and_argmax along one axis
(nbgraph/tensor/c_code/nnet.py, csrc/argreduce.h) against NumPy: every real dtype and
bool, any axis, 0-size dimensions, NaN (the first NaN wins), ties (the first wins),
strided inputs, the debug linker, and an empty axis refused like NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph
import nbgraph.tensor as nt

pytestmark = pytest.mark.needs_cc

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64"]


@st.composite
def _cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    axis = draw(st.integers(0, ndim - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(-3, 4, shape).astype(np.float64)  # small range: many ties
    if np.dtype(dtype).kind == "f" and x.size and draw(st.booleans()):
        x.reshape(-1)[rng.integers(0, x.size, 2)] = np.nan
    x = x.astype(dtype) if dtype != "bool" else x > 0
    if ndim > 1 and draw(st.booleans()):
        x = x.swapaxes(0, -1)  # strided
        axis = draw(st.integers(0, ndim - 1))
    return x, axis


@settings(max_examples=25, deadline=None)
@given(_cases())
def test_argreduce_c_follows_numpy(case):
    x, axis = case
    v = nt.tensor(x.dtype.name, (None,) * x.ndim, "x")
    outs = [nt.argmax(v, axis=axis), nt.argmin(v, axis=axis), *nt.max_and_argmax(v, axis=axis)]
    f = nbgraph.function([v], outs, linker="c")
    if x.shape[axis] == 0:
        with pytest.raises(ValueError, match="empty sequence"):
            f(x)
        return
    got = f(x)
    nbgraph.function([v], outs, linker="debug")(x)
    for g, want in zip(got, [np.argmax(x, axis), np.argmin(x, axis), np.max(x, axis),
                             np.argmax(x, axis)], strict=True):
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_array_equal(g, want)


def test_several_axes_still_run_in_python():
    from nbgraph.tensor.extra_ops import ArgReduce

    x = nt.dmatrix("x")
    out = nt.argmax(x)  # axis None: both axes flattened
    assert isinstance(out.owner.op, ArgReduce) and not out.owner.op.has_c_code(out.owner)
    v = np.array([[1.0, 5.0], [7.0, 2.0]])
    assert nbgraph.function([x], out, linker="cvm")(v) == 2
