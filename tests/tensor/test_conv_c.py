"""The C kernels of the convolutions (nbgraph/tensor/c_code/conv.py, csrc/conv.h)
against their ``perform`` (NumPy, the oracle): Conv2d, Conv2dGradWeights,
Conv2dGradInputs.

Checked: float32 and float64, every border mode, strides, dilations, flipped or not,
strided (non-contiguous) operands, 0-size batches and channels; the debug linker (Python
and C side by side); verify_grad through the C kernels; results that do not depend on
the thread count; bad shapes refused with messages naming the argument.

Tolerance: every output element is a sum of ``n`` products, computed by both sides in
different orders (NumPy's BLAS, our packed panels with fused multiply-adds).  Each
order's error is at most ``n * eps * sum(|products|)`` (the classic bound for a
recursive sum); their difference at most twice that.  ``sum(|products|)`` is the same
Op applied to the operands' absolute values (in float64).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph import verify_grad
from nbgraph.testing import assert_thread_count_independent
from nbgraph.tensor.conv import Conv2d, Conv2dGradInputs, Conv2dGradWeights, conv2d

pytestmark = pytest.mark.needs_cc


def _fn(inputs, output, linker):
    return ng.function(inputs, output, linker=linker, rewrite=None)


def _t4(dtype):
    return nt.TensorType(dtype, (None,) * 4)()


def _run_all(ops, values, dtype):
    """For each Op: (C result, perform's result, the bound sum(|products|) in float64);
    one function (one C module) for the three."""
    args = [_t4(dtype) for _ in values]
    outs = [op(*args[:2]) if isinstance(op, Conv2d) else op(*args) for op in ops]
    got = _fn(args, outs, "c")(*values)
    want = _fn(args, outs, "py")(*values)
    args64 = [_t4("float64") for _ in values]
    outs64 = [op(*args64[:2]) if isinstance(op, Conv2d) else op(*args64) for op in ops]
    bound = _fn(args64, outs64, "py")(*[np.abs(v).astype("float64") for v in values])
    return zip(got, want, bound, strict=True)


def _terms(op, x, w):
    """How many products each output element of ``op`` sums."""
    n, c, _, _ = x.shape
    k, _, kh, kw = w.shape
    if isinstance(op, Conv2dGradWeights):
        rows, cols = conv2d_out(op, x.shape, w.shape)
        return n * rows * cols
    if isinstance(op, Conv2dGradInputs):
        return k * kh * kw
    return c * kh * kw


def conv2d_out(op, xs, ws):
    fwd = Conv2d(op.border_mode, op.subsample, op.filter_flip, op.filter_dilation)
    return tuple(fwd._out_size(xs[2 + a], ws[2 + a], a) for a in range(2))


def _assert_close(got, want, bound, terms):
    assert got.dtype == want.dtype and got.shape == want.shape
    eps = np.finfo(got.dtype).eps
    tol = 2 * (terms + 2) * eps * bound + np.finfo(got.dtype).tiny
    err = np.abs(got.astype("float64") - want.astype("float64"))
    assert (err <= tol).all(), (err - tol).max()


def _strided(a, draw):
    """``a`` itself or an equal non-contiguous view."""
    if draw(st.booleans()):
        return a
    big = np.repeat(a, 2, axis=3)[..., ::2]
    return big if draw(st.booleans()) else np.ascontiguousarray(a[::-1])[::-1]


#: Each parameter set is a C module of its own (the parameters are in its text): a few
#: sets that cover every border mode, strides, dilations and both orientations.
PARAMS = [("valid", (1, 1), True, (1, 1)), ("full", (2, 1), False, (1, 2)),
          ("half", (1, 3), True, (2, 1)), ((0, 2), (2, 2), False, (1, 1)),
          ((1, 0), (1, 1), True, (2, 2))]


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from(["float32", "float64"]))
    border, stride, flip, dil = draw(st.sampled_from(PARAMS))
    n, c, k = draw(st.integers(0, 3)), draw(st.integers(0, 4)), draw(st.integers(1, 7))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    op = Conv2d(border, stride, flip, dil)
    smallest = [(f - 1) * d + 1 - 2 * op._pads(kh, kw)[a]
                for a, (f, d) in enumerate(zip((kh, kw), dil, strict=True))]
    h = draw(st.integers(max(smallest[0], 1), max(smallest[0], 1) + 9))
    w = draw(st.integers(max(smallest[1], 1), max(smallest[1], 1) + 9))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    f = rng.standard_normal((k, c, kh, kw)).astype(dtype)
    rows, cols = conv2d_out(op, x.shape, f.shape)
    g = rng.standard_normal((n, k, rows, cols)).astype(dtype)
    params = (border, stride, flip, dil)
    return params, _strided(x, draw), _strided(f, draw), _strided(g, draw), dtype


@settings(max_examples=25, deadline=None)
@given(case=_cases())
def test_c_kernels_match_perform(case):
    params, x, f, g, dtype = case
    ops = [Conv2d(*params), Conv2dGradWeights(*params), Conv2dGradInputs(*params)]
    for op, (got, want, bound) in zip(ops, _run_all(ops, (x, f, g), dtype), strict=True):
        _assert_close(got, want, bound, _terms(op, x, f))


def test_the_lenet_shapes_match_perform():
    rng = np.random.default_rng(3)
    for xs, ws in (((64, 1, 28, 28), (20, 1, 5, 5)), ((16, 20, 12, 12), (50, 20, 5, 5))):
        x = rng.standard_normal(xs).astype("float32")
        f = rng.standard_normal(ws).astype("float32")
        g = rng.standard_normal((xs[0], ws[0], xs[2] - 4, xs[3] - 4)).astype("float32")
        ops = [Conv2d(), Conv2dGradWeights(), Conv2dGradInputs()]
        for op, (got, want, bound) in zip(ops, _run_all(ops, (x, f, g), "float32"),
                                          strict=True):
            _assert_close(got, want, bound, _terms(op, x, f))


def test_the_kernels_run_in_c_for_float_and_in_python_for_mixed_dtypes():
    X, F = nt.ftensor4("x"), nt.ftensor4("f")
    out = conv2d(X, F, border_mode="half")
    cost = (out * out).sum()
    f = ng.function([X, F], [out] + ng.grad(cost, [X, F]), linker="cvm")
    f.program.wait_compiled()
    kinds = {type(node.op).__name__: kind
             for node, kind in zip(f.program.nodes, f.program.kinds, strict=True)}
    assert kinds["Conv2d"] == kinds["Conv2dGradWeights"] == kinds["Conv2dGradInputs"] == "c"
    mixed = conv2d(nt.ftensor4("a"), nt.dtensor4("b"))
    assert not mixed.owner.op.has_c_code(mixed.owner)


@pytest.mark.parametrize("params", [("valid", (1, 1), True, (1, 1)),
                                    ("full", (2, 1), False, (1, 2)),
                                    ((1, 0), (1, 2), True, (2, 1))])
def test_grad_through_the_c_kernels_passes_verify_grad(params):
    rng = np.random.default_rng(5)
    x, f = rng.standard_normal((2, 2, 6, 7)), rng.standard_normal((3, 2, 2, 3))
    border, stride, flip, dil = params

    def fun(a, b):
        return conv2d(a, b, border_mode=border, subsample=stride, filter_flip=flip,
                      filter_dilation=dil)
    verify_grad(fun, [x, f], linker="c")
    verify_grad(fun, [x, f], linker="debug")


def test_the_debug_linker_agrees_on_a_lenet_layer():
    X, F = nt.ftensor4("x"), nt.ftensor4("f")
    out = nt.tanh(conv2d(X, F)).sum()
    f = ng.function([X, F], [out] + ng.grad(out, [X, F]), linker="debug")
    rng = np.random.default_rng(9)
    f(rng.standard_normal((4, 3, 12, 12)).astype("float32"),
      rng.standard_normal((5, 3, 5, 5)).astype("float32") * 0.1)


def test_bad_shapes_are_refused_naming_the_argument():
    X, F, G = nt.dtensor4("x"), nt.dtensor4("f"), nt.dtensor4("g")
    fwd = _fn([X, F], conv2d(X, F), "c")
    with pytest.raises(ValueError, match="input has 3 channels, the filters expect 2"):
        fwd(np.zeros((1, 3, 5, 5)), np.zeros((4, 2, 3, 3)))
    with pytest.raises(ValueError, match="smaller than the .dilated. filter"):
        fwd(np.zeros((1, 2, 2, 5)), np.zeros((4, 2, 3, 3)))
    for op in (Conv2dGradWeights(), Conv2dGradInputs()):
        for linker in ("c", "py"):
            f = _fn([X, F, G], op(X, F, G), linker)
            with pytest.raises(ValueError, match="argument gradient has shape"):
                f(np.zeros((2, 2, 5, 5)), np.zeros((4, 2, 3, 3)), np.zeros((2, 4, 3, 2)))
            with pytest.raises(ValueError, match="argument gradient has shape"):
                f(np.zeros((2, 2, 5, 5)), np.zeros((4, 2, 3, 3)), np.zeros((1, 4, 3, 3)))


_THREADS_SCRIPT = r"""
import hashlib, numpy as np, nbgraph as ng, nbgraph.tensor as nt
from nbgraph.tensor.conv import conv2d, pool_2d
rng = np.random.default_rng(7)
h = hashlib.sha256()
for dtype, xs, ws, border in [("float32", (64, 20, 12, 12), (50, 20, 5, 5), "valid"),
                              ("float64", (9, 3, 30, 31), (8, 3, 3, 3), "half")]:
    X, F = nt.TensorType(dtype, (None,) * 4)(), nt.TensorType(dtype, (None,) * 4)()
    out = pool_2d(conv2d(X, F, border_mode=border), (2, 2), ignore_border=True)
    f = ng.function([X, F], [out] + ng.grad((out * out).sum(), [X, F]), linker="c")
    for v in f(rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)):
        h.update(v.tobytes())
print(h.hexdigest())
"""


def test_results_do_not_depend_on_the_thread_count(c_cache_dir):
    """Convolutions and pooling (tests/tensor/test_pool_c.py) in 1, 2 and 3 threads."""
    assert_thread_count_independent(_THREADS_SCRIPT,
                                    env={"NBGRAPH_CACHE_DIR": str(c_cache_dir)})
