"""Property tests: scan against NumPy loops over dtypes and shapes, 0-size included.

The Python linker keeps each example cheap (no C compilation per dtype); the
C paths run in the example and gradient tests.
"""

import numpy as np
from hypothesis import given, settings, strategies as st

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import scan

DTYPES = ["float32", "float64", "int32", "int64"]


def _array(draw, dtype, shape):
    data = draw(st.lists(st.integers(-5, 5), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
    return np.array(data, dtype=dtype).reshape(shape)


@st.composite
def sequences(draw):
    dtype = draw(st.sampled_from(DTYPES))
    steps = draw(st.integers(0, 5))
    row = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    return dtype, _array(draw, dtype, (steps,) + row)


@settings(max_examples=40, deadline=None)
@given(sequences())
def test_running_sum_and_map_match_numpy(case):
    dtype, data = case
    x = nt.tensor(dtype, (None,) * data.ndim, name="x")
    init = nt.zeros(x.shape[1:], dtype=dtype) if data.ndim > 1 else \
        nt.constant(np.zeros((), dtype))
    (total, doubled), _ = scan(lambda v, acc: (acc + v, v * 2), sequences=x,
                               outputs_info=[init, None])
    got_total, got_doubled = ng.function([x], [total, doubled], linker="py")(data)
    expected = np.cumsum(data, axis=0, dtype=dtype) if len(data) else \
        np.zeros(data.shape, dtype)
    assert got_total.dtype == expected.dtype and got_total.shape == data.shape
    np.testing.assert_array_equal(got_total, expected)
    assert got_doubled.dtype == (data * 2).dtype
    np.testing.assert_array_equal(got_doubled, data * 2)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["float32", "float64"]), st.integers(1, 3), st.integers(0, 6),
       st.data())
def test_taps_on_an_output_match_a_numpy_recurrence(dtype, lag, steps, data):
    taps = sorted(data.draw(st.sets(st.integers(-lag, -1), min_size=1)) | {-lag})
    init = _array(data.draw, dtype, (lag, 2))
    # taps [-1] alone: the initial value is one row, not a stack of rows (Theano's rule)
    plain = taps == [-1]
    x0 = nt.tensor(dtype, (2,) if plain else (None, 2), name="x0")
    coef = [0.5 + 0.25 * k for k in range(len(taps))]

    def step(*past):
        total = past[0] * coef[0]
        for c, p in zip(coef[1:], past[1:], strict=True):
            total = total + p * c
        return total

    out, _ = scan(step, outputs_info=dict(initial=x0, taps=taps), n_steps=steps)
    got = ng.function([x0], out, linker="py")(init[0] if plain else init)
    hist = [row for row in init]
    for _ in range(steps):
        total = hist[taps[0]] * np.asarray(coef[0], dtype)
        for c, tap in zip(coef[1:], taps[1:], strict=True):
            total = total + hist[tap] * np.asarray(c, dtype)
        hist.append(total)
    expected = np.array(hist[lag:], dtype=dtype).reshape((steps, 2))
    assert got.dtype == np.dtype(dtype) and got.shape == (steps, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == "float32" else 1e-15)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 4), st.integers(0, 3), st.booleans())
def test_sequence_taps_and_direction_match_numpy(length, batch, backwards):
    data = np.arange(length * 3 + batch, dtype="float64")[:length + 3]
    x = nt.dvector("x")
    out, _ = scan(lambda a, b: a * 10 + b, sequences=dict(input=x, taps=[-1, 2]),
                  go_backwards=backwards)
    got = ng.function([x], out, linker="py")(data)
    src = data[::-1] if backwards else data
    expected = [src[t] * 10 + src[t + 3] for t in range(max(len(src) - 3, 0))]
    np.testing.assert_array_equal(got, np.array(expected, dtype="float64"))
