"""The C kernels of 2-d pooling (nbgraph/tensor/c_code/pool.py, csrc/pool.h) against
their ``perform`` (NumPy, the oracle): Pool2d and Pool2dGrad.

Checked: float32 and float64, every mode, windows, strides, padding and
``ignore_border``, one to three leading dimensions, strided operands, 0-size planes, NaN
and infinities; the debug linker; verify_grad through the C kernels; bad gradient shapes
refused naming the argument.

Both sides add the same terms in the same order (the kernels visit each element's
windows as perform's taps do), so results are compared exactly; the only difference
allowed is the sign of a zero sum (perform also adds the padding's +0.0).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph import verify_grad
from nbgraph.tensor.pool import Pool2d, Pool2dGrad, pool_2d

pytestmark = pytest.mark.needs_cc

MODES = ["max", "sum", "average_inc_pad", "average_exc_pad"]
#: Each parameter set is a C module of its own (they are in its text): a few that
#: cover every mode with overlapping and partial windows, padding and strides.
#: (ws, ignore_border, stride, pad, mode)
PARAMS = [((2, 2), True, None, (0, 0), "max"), ((3, 2), False, (1, 1), (0, 0), "max"),
          ((3, 3), True, (2, 1), (1, 2), "max"), ((2, 3), False, (3, 1), (0, 0), "sum"),
          ((3, 3), True, (2, 1), (1, 2), "average_inc_pad"),
          ((1, 3), True, (1, 2), (0, 1), "average_exc_pad"),
          ((3, 2), False, (1, 1), (0, 0), "average_exc_pad"),
          ((2, 3), True, (1, 1), (1, 1), "average_inc_pad")]


def _fn(inputs, output, linker):
    return ng.function(inputs, output, linker=linker, rewrite=None)


def _values(draw, shape, dtype):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(shape)
    if x.size and draw(st.booleans()):
        flat = x.reshape(-1)
        for value in (np.nan, np.inf, -np.inf, 1.0, 1.0):
            flat[rng.integers(0, flat.size)] = value  # ties (1.0 twice) and specials
    x = x.astype(dtype)
    if draw(st.booleans()):  # a strided view
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    return x


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from(["float32", "float64"]))
    params = draw(st.sampled_from(PARAMS))
    lead = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    h, w = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    x = _values(draw, lead + (h, w), dtype)
    return params, x


def _assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN == NaN, -0.0 == 0.0


@settings(max_examples=30, deadline=None)
@given(case=_cases())
def test_c_kernels_match_perform_exactly(case):
    (ws, ignore_border, stride, pad, mode), x = case
    X = nt.TensorType(x.dtype, (None,) * x.ndim)()
    G = nt.TensorType(x.dtype, (None,) * x.ndim)()
    out = Pool2d(ws, ignore_border, stride, pad, mode)(X)
    grad = Pool2dGrad(ws, ignore_border, stride, pad, mode)(X, out, G)
    shape = x.shape[:-2] + out.owner.op._out_sizes(x.shape)
    g = np.random.default_rng(1).standard_normal(shape).astype(x.dtype)
    for got, want in zip(_fn([X, G], [out, grad], "c")(x, g),
                         _fn([X, G], [out, grad], "py")(x, g), strict=True):
        _assert_same(got, want)


def test_the_kernels_run_in_c():
    X = nt.ftensor4("x")
    out = pool_2d(X, (2, 2), ignore_border=True)
    f = ng.function([X], [out, ng.grad(out.sum(), X)], linker="cvm")
    f.program.wait_compiled()
    kinds = {type(node.op).__name__: kind
             for node, kind in zip(f.program.nodes, f.program.kinds, strict=True)}
    assert kinds["Pool2d"] == kinds["Pool2dGrad"] == "c"
    ints = pool_2d(nt.itensor4("i"), (2, 2))
    assert not ints.owner.op.has_c_code(ints.owner)


@pytest.mark.parametrize("mode", MODES)
def test_grad_through_the_c_kernels_passes_verify_grad(mode):
    rng = np.random.default_rng(4)
    x = rng.permutation(2 * 3 * 5 * 6).reshape(2, 3, 5, 6) / 7.0  # distinct: max is smooth

    def fun(a):
        return pool_2d(a, (2, 3), ignore_border=True, stride=(1, 2), pad=(1, 1), mode=mode)
    verify_grad(fun, [x], linker="c")


def test_the_debug_linker_agrees():
    X = nt.dtensor4("x")
    out = pool_2d(nt.tanh(X), (3, 2), ignore_border=False, stride=(2, 1))
    f = ng.function([X], [out, ng.grad((out * out).sum(), X)], linker="debug")
    f(np.random.default_rng(2).standard_normal((2, 3, 7, 8)))


def test_bad_gradient_shapes_are_refused_naming_the_argument():
    X, Out, G = nt.dtensor4("x"), nt.dtensor4("o"), nt.dtensor4("g")
    grad = Pool2dGrad((2, 2), True)(X, Out, G)
    x, good = np.zeros((1, 2, 4, 4)), np.zeros((1, 2, 2, 2))
    for linker in ("c", "py"):
        f = _fn([X, Out, G], grad, linker)
        with pytest.raises(ValueError, match="argument gradient has shape"):
            f(x, good, np.zeros((1, 2, 2, 3)))
        with pytest.raises(ValueError, match="argument output has shape"):
            f(x, np.zeros((1, 3, 2, 2)), good)
