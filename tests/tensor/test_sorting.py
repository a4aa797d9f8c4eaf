"""sort and argsort against NumPy: dtypes, 0-size, every axis, kinds, grads, refusals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

rng = np.random.default_rng(5)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["bool", "int8", "uint16", "int64", "float32", "float64"]).flatmap(
    lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                         elements=st.floats(-5, 5, width=32) if d.startswith("float") else None)),
    st.data(), st.sampled_from(["quicksort", "stable", "heapsort"]))
def test_sort_and_argsort_match_numpy(oracle, a, data, kind):
    axis = data.draw(st.sampled_from([None] + list(range(-a.ndim, a.ndim))))
    x = oracle.sym(a)
    oracle.check([x], nt.sort(x, axis, kind), [a], np.sort(a, axis, kind=kind))
    oracle.check([x], nt.argsort(x, axis, kind), [a], np.argsort(a, axis, kind=kind))
    if axis is not None:
        oracle.check([x], x.sort(axis), [a], np.sort(a, axis))
        oracle.check([x], x.argsort(axis), [a], np.argsort(a, axis))
    assert nt.sort(oracle.sym(a, static=True), axis).type.shape == np.sort(a, axis).shape


def test_sort_nan_goes_last(oracle):
    a = np.array([3.0, np.nan, -1.0, np.inf])
    x = oracle.sym(a)
    oracle.check([x], nt.sort(x), [a], np.sort(a))
    oracle.check([x], nt.argsort(x), [a], np.argsort(a))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sort_grad(axis):
    verify_grad(lambda v: nt.sort(v, axis) * nt.arange(1.0, 13.0).reshape((3, 4))
                if axis is not None else nt.sort(v, axis) * nt.arange(1.0, 13.0),
                [rng.normal(size=(3, 4))])


def test_sort_refusals():
    with pytest.raises(np.exceptions.AxisError, match="sort: axis 2 is out of bounds"):
        nt.sort(nt.dmatrix(), 2)
    with pytest.raises(ValueError, match="kind must be one of"):
        nt.argsort(nt.dvector(), kind="bogo")
    assert str(nt.argsort(nt.dvector()).owner.op) == "Argsort{axis=0}"
