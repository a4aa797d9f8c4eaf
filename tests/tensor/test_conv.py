"""conv2d and pool_2d: values against a direct-loop NumPy reference written
here from the definitions, gradients against finite differences, shapes,
bad arguments."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbgraph.tensor as nt
from nbgraph import function, verify_grad
from nbgraph.tensor.conv import conv2d, max_pool_2d, pool_2d

RNG = np.random.default_rng(11)


# -- references -----------------------------------------------------------------------


def ref_conv2d(x, w, border="valid", stride=(1, 1), flip=True, dil=(1, 1)):
    """Every output element summed term by term from the definition."""
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    span = ((kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1)
    if border == "valid":
        pad = (0, 0)
    elif border == "full":
        pad = (span[0] - 1, span[1] - 1)
    elif border in ("half", "same"):
        pad = (span[0] // 2, span[1] // 2)
    else:
        pad = border
    if flip:
        w = w[:, :, ::-1, ::-1]
    xp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]), dtype=np.float64)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    rows = (h + 2 * pad[0] - span[0]) // stride[0] + 1
    cols = (wd + 2 * pad[1] - span[1]) // stride[1] + 1
    out = np.zeros((n, k, rows, cols))
    for i in range(rows):
        for j in range(cols):
            for a in range(kh):
                for b in range(kw):
                    patch = xp[:, :, i * stride[0] + a * dil[0], j * stride[1] + b * dil[1]]
                    out[:, :, i, j] += patch @ w[:, :, a, b].T
    return out


def ref_pool(x, ws, ignore_border, stride, pad, mode):
    """Each window clipped by hand, as the module docstring defines."""
    stride = stride or ws
    h, wd = x.shape[-2:]
    sizes = []
    for size, w_, s_, p_ in zip((h, wd), ws, stride, pad, strict=True):
        if ignore_border:
            sizes.append(max((size + 2 * p_ - w_) // s_ + 1, 0))
        elif s_ >= w_:
            sizes.append((size - 1) // s_ + 1)
        else:
            sizes.append(max(0, (size - 1 - w_ + s_) // s_) + 1)
    out = np.zeros(x.shape[:-2] + tuple(sizes))
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            r0, c0 = i * stride[0], j * stride[1]  # padded coordinates
            r1, c1 = r0 + ws[0], c0 + ws[1]
            # image part of the window, in image coordinates
            ir0, ir1 = max(r0 - pad[0], 0), min(r1 - pad[0], h)
            ic0, ic1 = max(c0 - pad[1], 0), min(c1 - pad[1], wd)
            region = x[..., ir0:ir1, ic0:ic1]
            if mode == "max":
                out[..., i, j] = region.max(axis=(-2, -1))
            else:
                total = region.sum(axis=(-2, -1))
                if mode == "sum":
                    out[..., i, j] = total
                elif mode == "average_exc_pad":
                    out[..., i, j] = total / ((ir1 - ir0) * (ic1 - ic0))
                else:
                    inc_r = min(r1, h + 2 * pad[0]) - r0
                    inc_c = min(c1, wd + 2 * pad[1]) - c0
                    out[..., i, j] = total / (inc_r * inc_c)
    return out


# -- conv2d ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(border=st.sampled_from(["valid", "full", "half", (1, 2), (0, 1)]),
       stride=st.sampled_from([(1, 1), (2, 2), (1, 3)]),
       flip=st.booleans(), dil=st.sampled_from([(1, 1), (2, 1), (2, 2)]),
       kh=st.integers(1, 3), kw=st.integers(1, 3), h=st.integers(5, 8), w=st.integers(5, 8))
def test_conv2d_matches_the_definition(border, stride, flip, dil, kh, kw, h, w):
    x = RNG.normal(size=(2, 3, h, w))
    f = RNG.normal(size=(4, 3, kh, kw))
    X, F = nt.dtensor4("x"), nt.dtensor4("f")
    out = conv2d(X, F, border_mode=border, subsample=stride, filter_flip=flip,
                 filter_dilation=dil)
    got = function([X, F], out, linker="py")(x, f)
    want = ref_conv2d(x, f, border, stride, flip, dil)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("border, stride, flip, dil", [
    ("valid", (1, 1), True, (1, 1)), ("full", (2, 1), False, (1, 1)),
    ("half", (1, 1), True, (2, 2)), ((1, 2), (2, 2), False, (1, 2)),
])
def test_conv2d_grad(border, stride, flip, dil):
    x, f = RNG.normal(size=(2, 2, 6, 7)), RNG.normal(size=(3, 2, 2, 3))
    verify_grad(lambda a, b: conv2d(a, b, border_mode=border, subsample=stride,
                                    filter_flip=flip, filter_dilation=dil), [x, f],
                linker="py")


def test_conv2d_float32_and_static_shapes():
    X = nt.tensor("float32", (None, 1, 28, 28), "x")
    F = nt.tensor("float32", (20, 1, 5, 5), "f")
    out = conv2d(X, F)
    assert out.type == nt.TensorType("float32", (None, 20, 24, 24))
    assert conv2d(X, F, border_mode="full", subsample=(2, 2)).type.shape == (None, 20, 16, 16)
    x = RNG.normal(size=(2, 1, 28, 28)).astype("float32")
    f = RNG.normal(size=(20, 1, 5, 5)).astype("float32")
    got = function([X, F], out, linker="py")(x, f)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref_conv2d(x, f), rtol=1e-4, atol=1e-4)
    g = function([X, F], out.shape, linker="py")
    np.testing.assert_array_equal(g(x, f), [2, 20, 24, 24])
    Y = nt.dtensor4("y")
    h = function([Y, F], conv2d(Y, F, subsample=(3, 2), border_mode=(1, 0)).shape,
                 linker="py")
    np.testing.assert_array_equal(h(np.zeros((1, 1, 9, 8)), f),
                                  ref_conv2d(np.zeros((1, 1, 9, 8)), f, (1, 0), (3, 2)).shape)


def test_conv2d_bad_arguments_name_the_argument():
    X, F = nt.dtensor4("x"), nt.dtensor4("f")
    with pytest.raises(TypeError, match="argument input .* must be 4-d"):
        conv2d(nt.dmatrix("m"), F)
    with pytest.raises(ValueError, match="border_mode must be"):
        conv2d(X, F, border_mode="wide")
    with pytest.raises(ValueError, match="subsample entries must be ints >= 1"):
        conv2d(X, F, subsample=(0, 1))
    with pytest.raises(ValueError, match="input .* has 3 channels, filters .* expect 2"):
        conv2d(nt.tensor("float64", (None, 3, None, None)), nt.tensor("float64", (4, 2, 3, 3)))
    with pytest.raises(NotImplementedError, match="num_groups"):
        conv2d(X, F, num_groups=2)
    f = function([X, F], conv2d(X, F), linker="py")
    with pytest.raises(ValueError, match="has 3 channels, the filters expect 2"):
        f(np.zeros((1, 3, 5, 5)), np.zeros((1, 2, 2, 2)))
    with pytest.raises(ValueError, match="smaller than the"):
        f(np.zeros((1, 2, 2, 2)), np.zeros((1, 2, 3, 3)))
    with pytest.raises(ValueError):
        conv2d(X, F, input_shape=(1, 2, 5, 5)).eval({X: np.zeros((1, 2, 4, 4)),
                                                      F: np.zeros((1, 2, 2, 2))})


# -- pooling --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(ws=st.sampled_from([(2, 2), (3, 2), (1, 3)]), ignore_border=st.booleans(),
       stride=st.sampled_from([None, (1, 1), (2, 3), (3, 1)]),
       pad=st.sampled_from([(0, 0), (1, 0), (1, 1)]),
       mode=st.sampled_from(["max", "sum", "average_inc_pad", "average_exc_pad"]),
       h=st.integers(1, 7), w=st.integers(1, 7))
def test_pool_2d_matches_the_definition(ws, ignore_border, stride, pad, mode, h, w):
    if pad != (0, 0) and (not ignore_border or pad[0] >= ws[0] or pad[1] >= ws[1]):
        with pytest.raises(ValueError):
            pool_2d(nt.dtensor4(), ws, ignore_border, stride, pad, mode)
        return
    x = RNG.normal(size=(2, 3, h, w))
    X = nt.dtensor4("x")
    out = pool_2d(X, ws, ignore_border=ignore_border, stride=stride, pad=pad, mode=mode)
    want = ref_pool(x, ws, ignore_border, stride, pad, mode)
    got = function([X], out, linker="py")(x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    shape = function([X], out.shape, linker="py")(x)
    np.testing.assert_array_equal(shape, want.shape)


@pytest.mark.parametrize("mode", ["max", "sum", "average_inc_pad", "average_exc_pad"])
@pytest.mark.parametrize("ws, ignore_border, stride, pad", [
    ((2, 2), True, None, (0, 0)), ((3, 2), False, (2, 1), (0, 0)),
    ((3, 3), True, (2, 2), (1, 1)), ((2, 3), False, None, (0, 0)),
])
def test_pool_2d_grad(mode, ws, ignore_border, stride, pad):
    x = RNG.permutation(2 * 2 * 5 * 7).reshape(2, 2, 5, 7) * 0.1  # no ties
    verify_grad(lambda a: pool_2d(a, ws, ignore_border, stride, pad, mode), [x], linker="py")


def test_pool_any_leading_dims_and_old_names():
    x = RNG.normal(size=(3, 4, 5))
    X = nt.dtensor3("x")
    got = function([X], max_pool_2d(X, (2, 2)), linker="py")(x)
    np.testing.assert_allclose(got, ref_pool(x, (2, 2), False, None, (0, 0), "max"))
    got = function([X], pool_2d(X, ds=(2, 1), st=(1, 1), ignore_border=True), linker="py")(x)
    np.testing.assert_allclose(got, ref_pool(x, (2, 1), True, (1, 1), (0, 0), "max"))
    i = nt.itensor4("i")
    vi = RNG.integers(-50, 50, size=(1, 1, 4, 4)).astype("int32")
    assert function([i], pool_2d(i, (2, 2), True), linker="py")(vi).dtype == np.int32
    assert pool_2d(nt.tensor("float64", (None, 20, 24, 24)), (2, 2), True).type.shape == \
        (None, 20, 12, 12)


def test_pool_bad_arguments():
    X = nt.dtensor4("x")
    with pytest.raises(ValueError, match="mode must be one of"):
        pool_2d(X, (2, 2), mode="median")
    with pytest.raises(TypeError, match="window size ws is required"):
        pool_2d(X)
    with pytest.raises(ValueError, match="needs ignore_border=True"):
        pool_2d(X, (2, 2), pad=(1, 1))
    with pytest.raises(TypeError, match="argument input .* needs at least 2"):
        pool_2d(nt.dvector("v"), (2, 2))
    with pytest.raises(TypeError, match="must be float"):
        pool_2d(nt.itensor4("i"), (2, 2), mode="average_exc_pad")


def test_debug_linker_agrees():
    X, F = nt.dtensor4("x"), nt.dtensor4("f")
    out = pool_2d(nt.tanh(conv2d(X, F)), (2, 2), ignore_border=True).sum()
    g = function([X, F], [out] + list(__import__("nbgraph").grad(out, [X, F])), linker="debug")
    x, f = RNG.normal(size=(2, 1, 8, 8)), RNG.normal(size=(3, 1, 3, 3))
    value = g(x, f)[0]
    np.testing.assert_allclose(value, ref_pool(np.tanh(ref_conv2d(x, f)), (2, 2), True, None,
                                                (0, 0), "max").sum())
