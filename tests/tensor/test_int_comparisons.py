"""Tensor comparisons with Python ints outside the other operand's range (NumPy 2).

NumPy 2 compares an integer array with any Python int exactly (``int8 < 300``
is all true, ``uint8 >= -1`` all true, ``int64 < 2**70`` all true), while
arithmetic with such an int raises.  Each case is checked against the
installed NumPy, with the Python linker and with the C linker.
"""

import operator
import warnings

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt

INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
VALUES = [300, -1, -129, 70000, 2**31, -2**31 - 1, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
          2**64 - 1, 2**64, -2**64, 2**70, -2**70, 10**40]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, nt.eq, nt.neq]
NUMPY = {operator.lt: np.less, operator.le: np.less_equal, operator.gt: np.greater,
         operator.ge: np.greater_equal, nt.eq: np.equal, nt.neq: np.not_equal}


def extremes(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if np.dtype(dtype).kind == "f":
        return np.array([-np.inf, -3.0e38, 0.0, 1.5, 3.0e38, np.inf, np.nan], dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)


def numpy_results(arr, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float32 overflow of 10**40
        return [NUMPY[op](arr, value) for op in COMPARISONS] + \
               [NUMPY[op](value, arr) for op in COMPARISONS]


ALL_DTYPES = INT_DTYPES + ["float32", "float64"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_comparisons_with_python_ints_match_numpy(dtype):
    arr = extremes(dtype)
    x = nt.tensor(dtype, (None,), "x")
    outs, wants, labels = [], [], []
    for value in VALUES:  # one function for every case
        outs += [op(x, value) for op in COMPARISONS] + [op(value, x) for op in COMPARISONS]
        wants += numpy_results(arr, value)
        labels += [(value, k) for k in range(2 * len(COMPARISONS))]
    assert all(o.dtype == "bool" for o in outs)
    got = ng.function([x], outs, linker="py")(arr)
    for g, w, label in zip(got, wants, labels, strict=True):
        assert g.dtype == w.dtype, label
        np.testing.assert_array_equal(g, w, err_msg="%s: value %r, comparison %d" % (
            (dtype,) + label))


def _packed(results, bits_per_output=60):
    """Comparison results packed as bits of int64 values (one fused C loop each)."""
    packed = []
    for start in range(0, len(results), bits_per_output):
        total = 0
        for bit, r in enumerate(results[start:start + bits_per_output]):
            total = total + r * (2 ** bit)
        packed.append(total)
    return packed


@pytest.mark.needs_cc
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_comparisons_with_python_ints_in_c(dtype):
    arr = extremes(dtype)
    x = nt.tensor(dtype, (None,), "x")
    outs, wants = [], []
    for value in VALUES:
        outs += [op(x, value) for op in COMPARISONS] + [op(value, x) for op in COMPARISONS]
        wants += [w.astype(np.int64) for w in numpy_results(arr, value)]
    f = ng.function([x], _packed(outs), linker="c")
    assert len(f.fgraph.apply_nodes) <= 2 * len(_packed(outs))  # fused loops
    for got, want in zip(f(arr), _packed(wants), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_examples_of_the_brief():
    b = nt.bvector("b")
    u = nt.tensor("uint8", (None,), "u")
    f = ng.function([b, u], [b < 300, u >= -1, b > -129, u == 256], linker="py")
    lt, ge, gt, eq = f(np.array([-128, 0, 127], np.int8), np.array([0, 1, 255], np.uint8))
    assert lt.all() and ge.all() and gt.all() and not eq.any()


def test_a_scalar_operand_and_a_broadcast_result():
    s = nt.tensor("int8", (), "s")
    m = nt.tensor("uint16", (None, 1), "m")
    f = ng.function([s, m], [s < 1000, m > -5, nt.switch(m < 70000, m, 0)], linker="py")
    a, b, c = f(np.int8(5), np.array([[1], [65535]], np.uint16))
    assert a.shape == () and bool(a)
    assert b.all() and b.shape == (2, 1)
    np.testing.assert_array_equal(c, [[1], [65535]])
    assert c.dtype == np.uint16


def test_comparisons_inside_a_fused_kernel():
    x = nt.bvector("x")
    out = nt.switch(x < 300, x * 2, x) + (x >= -1000)
    f = ng.function([x], out, linker="py")
    assert any("Composite" in str(n.op) for n in f.fgraph.apply_nodes)
    a = np.array([-128, 0, 100], np.int8)
    with np.errstate(all="ignore"):
        want = np.where(a < 300, a * np.int8(2), a) + (a >= -1000)
    got = f(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_bool_operands_compare_mathematically():
    """NumPy converts the int to int64 next to bool (2**63 overflows there); nbgraph,
    like its scalar layer, gives the mathematical answer instead."""
    x = nt.tensor("bool", (None,), "x")
    f = ng.function([x], [x < 300, x < 2**63, x > -2**70, nt.eq(x, 2**64)], linker="py")
    arr = np.array([False, True])
    np.testing.assert_array_equal(f(arr)[0], arr < 300)
    for r in f(arr)[1:3]:
        assert r.all()
    assert not f(arr)[3].any()


@pytest.mark.parametrize("dtype,value", [
    ("int8", 300), ("int8", -129), ("uint8", -1), ("uint16", 70000), ("int32", 2**31),
    ("int64", 2**63), ("uint64", -1), ("uint64", 2**64),
])
@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.floordiv,
                                operator.mod, operator.pow, nt.maximum, operator.and_])
def test_arithmetic_with_an_out_of_range_int_still_raises(dtype, value, op):
    x = nt.tensor(dtype, (None,), "x")
    with pytest.raises((OverflowError, ValueError, TypeError)):
        op(np.zeros(1, dtype), value)  # NumPy refuses it too
    with pytest.raises(ValueError, match=str(value)):
        op(x, value)
    with pytest.raises(ValueError, match=str(value)):
        op(value, x)


def test_true_division_by_an_out_of_range_int_is_accepted_as_numpy_does():
    x = nt.bvector("x")
    a = np.array([-128, 1, 127], np.int8)
    want = a / 300
    got = ng.function([x], x / 300, linker="py")(a)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want)


def test_switch_promotes_its_condition_on_its_own():
    c = nt.fvector("c")
    out = nt.switch(c, 1, 2)
    assert out.dtype == np.where(np.ones(1, np.float32), 1, 2).dtype.name
    np.testing.assert_array_equal(ng.function([c], out, linker="py")(
        np.array([0.0, 2.0], np.float32)), [2, 1])
