"""Creation Ops (arange, eye, tri, tril/triu, diag, full, linspace) against NumPy:
dtypes, values, static shapes, infer_shape, gradients and refused arguments."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbgraph.tensor as nt
from nbgraph.testing import verify_grad

INT_LIKE = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def scalar_of(dtype, name=None):
    return nt.tensor(dtype, (), name)


@pytest.mark.parametrize("dtype", INT_LIKE + ["float32", "float64"])
@pytest.mark.parametrize("nargs", [1, 2, 3])
def test_arange_dtype_is_numpys_for_symbolic_bounds(oracle, dtype, nargs):
    args = [scalar_of(dtype, "a%d" % i) for i in range(nargs)]
    if nargs == 1:
        values = [np.asarray(5 if dtype != "bool" else 1, dtype=dtype)]
    elif dtype == "bool":  # NumPy refuses to subtract booleans
        with pytest.raises(TypeError, match="arange: no result dtype.*bool"):
            nt.arange(*args)
        return
    else:
        values = [np.asarray(v, dtype=dtype) for v in (1, 7, 2)[:nargs]]
    out = nt.arange(*args)
    oracle.check(args, out, values, np.arange(*values))


@pytest.mark.parametrize("args", [(5,), (2, 7), (0.0, 1.0, 0.25), (5, 0, -2), (3, 3),
                                  (1, 2.5), (np.float32(0.5), 3), (np.uint64(4),),
                                  (-3, 4, 3), (10, 1, 2)])
def test_arange_with_constant_bounds_has_a_static_shape(oracle, args):
    out = nt.arange(*args)
    expected = np.arange(*args)
    assert out.type.shape == expected.shape
    oracle.check([], out, [], expected)


def test_arange_mixes_python_numbers_and_symbolic_bounds(oracle):
    n = nt.iscalar("n")
    oracle.check([n], nt.arange(n), [np.int32(4)], np.arange(np.int32(4)))
    oracle.check([n], nt.arange(1, n, 2), [np.int32(8)], np.arange(1, np.int32(8), 2))
    oracle.check([n], nt.arange(0.5, n), [np.int32(3)], np.arange(0.5, np.int32(3)))
    oracle.check([n], nt.arange(n, dtype="float32"), [np.int32(3)],
                 np.arange(np.int32(3), dtype="float32"))


@settings(max_examples=60, deadline=None)
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(-6, 6).filter(bool))
def test_arange_integer_lengths_match_numpy(oracle, start, stop, step):
    a, b, c = nt.lscalars("a b c")
    values = [np.int64(start), np.int64(stop), np.int64(step)]
    oracle.check([a, b, c], nt.arange(a, b, c), values, np.arange(*values))


@settings(max_examples=60, deadline=None)
@given(st.floats(-50, 50), st.floats(-50, 50),
       st.floats(0.1, 7).flatmap(lambda s: st.sampled_from([s, -s])))
def test_arange_float_lengths_match_numpy(oracle, start, stop, step):
    a, b, c = nt.dscalars("a b c")
    values = [np.float64(start), np.float64(stop), np.float64(step)]
    oracle.check([a, b, c], nt.arange(a, b, c), values, np.arange(*values))


def test_arange_grad():
    verify_grad(lambda a, s: nt.arange(a, a + 5.0, s) ** 2, [np.array(0.3), np.array(1.1)])


def test_arange_refuses_bad_arguments():
    with pytest.raises(ZeroDivisionError):
        nt.arange(0, 5, 0)
    with pytest.raises(TypeError, match="arange: argument stop must be a scalar"):
        nt.arange(nt.dvector("v"))
    with pytest.raises(TypeError, match="argument start"):
        nt.arange("a", 3)
    a = nt.lscalar("a")
    f = __import__("nbgraph").function([a], nt.arange(0, 5, a), linker="py")
    with pytest.raises(ZeroDivisionError):
        f(0)


@pytest.mark.parametrize("kind", ["eye", "tri"])
@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (0, 3, 0), (3, 3, 7),
                                   (2, 4, -5)])
@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "float32"])
def test_eye_and_tri_match_numpy(oracle, kind, n, m, k, dtype):
    func = getattr(nt, kind)
    expected = getattr(np, kind)(n, m, k, dtype=dtype)
    out = func(n, m, k, dtype=dtype)
    assert out.type.shape == expected.shape
    oracle.check([], out, [], expected)
    sn, sm, sk = nt.lscalars("n m k")
    out = func(sn, sm, sk, dtype=dtype)
    oracle.check([sn, sm, sk], out, [n, n if m is None else m, k], expected)


def test_eye_refuses_negative_sizes_and_float_arguments():
    with pytest.raises(ValueError, match="eye: argument N is negative"):
        nt.eye(-1)
    with pytest.raises(TypeError, match="eye: argument M must be an integer"):
        nt.eye(3, 2.5)
    with pytest.raises(TypeError, match="argument k must be an integer"):
        nt.tri(3, 3, nt.dscalar())


@pytest.mark.parametrize("func", ["tril", "triu"])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 2), (2, 3, 4), (0, 3), (4,)])
@pytest.mark.parametrize("k", [0, 1, -2])
@pytest.mark.parametrize("dtype", ["float64", "int16", "bool"])
def test_tril_triu_match_numpy(oracle, func, shape, k, dtype):
    a = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    x = oracle.sym(a)
    oracle.check([x], getattr(nt, func)(x, k), [a], getattr(np, func)(a, k))
    xs = oracle.sym(a, static=True)
    assert getattr(nt, func)(xs, k).type.shape == getattr(np, func)(a, k).shape


def test_tril_triu_grads():
    a = np.random.default_rng(0).normal(size=(3, 4))
    verify_grad(lambda x: nt.tril(x, 1), [a])
    verify_grad(lambda x: nt.triu(x, -1), [a])


@pytest.mark.parametrize("k", [0, 1, -1, 3, -4])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_diag_both_ways_matches_numpy(oracle, k, dtype):
    v = (np.arange(4) % 3).astype(dtype)
    x = oracle.sym(v)
    oracle.check([x], nt.diag(x, k), [v], np.diag(v, k))
    m = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    y = oracle.sym(m)
    oracle.check([y], nt.diag(y, k), [m], np.diag(m, k))
    assert nt.diag(oracle.sym(m, static=True), k).type.shape == np.diag(m, k).shape
    assert nt.diag(oracle.sym(v, static=True), k).type.shape == np.diag(v, k).shape


def test_diag_grads_and_errors():
    rng = np.random.default_rng(1)
    verify_grad(lambda v: nt.diag(v, 1), [rng.normal(size=3)])
    verify_grad(lambda m: nt.diag(m, -1), [rng.normal(size=(4, 3))])
    with pytest.raises(ValueError, match="diag: input must be 1-d or 2-d"):
        nt.diag(nt.dtensor3("t"))
    with pytest.raises(TypeError, match="diag: argument k must be an int"):
        nt.diag(nt.dvector(), 1.5)


def test_identity_like(oracle):
    x = nt.fmatrix("x")
    a = np.ones((2, 3), "float32")
    oracle.check([x], nt.identity_like(x), [a], np.eye(2, 3, dtype="float32"))
    with pytest.raises(ValueError, match="identity_like: x must be a matrix"):
        nt.identity_like(nt.dvector())


@pytest.mark.parametrize("fill", [2, 2.5, np.float32(1.5), True, np.int8(-3)])
def test_full_dtype_follows_the_fill_value(oracle, fill):
    expected = np.full((2, 3), fill)
    out = nt.full((2, 3), fill)
    assert out.type.shape == (2, 3)
    oracle.check([], out, [], expected)
    oracle.check([], nt.full((2, 3), fill, dtype="float32"), [],
                 np.full((2, 3), fill, dtype="float32"))


def test_full_like_casts_to_the_array_dtype(oracle):
    x = nt.imatrix("x")
    a = np.zeros((2, 2), "int32")
    oracle.check([x], nt.full_like(x, 3.7), [a], np.full_like(a, 3.7))
    oracle.check([x], nt.full_like(x, 3.7, dtype="float64"), [a],
                 np.full_like(a, 3.7, dtype="float64"))
    n = nt.lscalar("n")
    oracle.check([n], nt.full((n, 2), 7), [np.int64(3)], np.full((3, 2), 7))


@settings(max_examples=40, deadline=None)
@given(st.floats(-10, 10), st.floats(-10, 10), st.integers(0, 12), st.booleans())
def test_linspace_matches_numpy(oracle, start, stop, num, endpoint):
    a, b = nt.dscalars("a b")
    n = nt.lscalar("n")
    expected = np.linspace(start, stop, num, endpoint=endpoint)
    oracle.check([a, b, n], nt.linspace(a, b, n, endpoint=endpoint),
                 [np.float64(start), np.float64(stop), np.int64(num)], expected)
    assert nt.linspace(a, b, num).type.shape == (num,)


@pytest.mark.parametrize("args,kwargs", [((0, 1, 5), {}), ((np.float32(0), np.float32(2), 4),
                                                            {}), ((0, 10, 6), {"dtype": "int32"}),
                                          ((np.int8(1), 3, 3), {})])
def test_linspace_dtypes(oracle, args, kwargs):
    oracle.check([], nt.linspace(*args, **kwargs), [], np.linspace(*args, **kwargs))


def test_linspace_grad_and_errors():
    for num, endpoint in ((5, True), (4, False), (1, True)):
        verify_grad(lambda a, b, num=num, endpoint=endpoint:
                    nt.linspace(a, b, num, endpoint=endpoint) ** 2,
                    [np.array(0.5), np.array(2.0)])
    with pytest.raises(ValueError, match="must be non-negative"):
        nt.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="linspace: argument num must be an integer"):
        nt.linspace(0, 1, 2.5)
