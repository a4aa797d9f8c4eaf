"""The loops of Theano's scan documentation, rewritten here, against NumPy loops.

Each computation is compiled with every linker: "py" (perform), "cvm" (C
kernels inside the loop body where they exist), "c" (every inner node in C,
where the graph allows it) and "debug" (every inner node run both ways and
cross-checked).  NumPy written as a plain Python loop is the oracle.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import foldl, foldr, map as scan_map, reduce as scan_reduce, scan, until

LINKERS = ["py", "cvm", "debug"]
C_LINKERS = LINKERS + ["c"]


def index_vector(n):
    """The sequence 0..n-1, as a constant."""
    return nt.constant(np.arange(n, dtype="int64"))


@pytest.mark.parametrize("linker", C_LINKERS)
def test_power_by_repeated_multiplication(linker):
    A, k = nt.dvector("A"), nt.iscalar("k")
    steps, updates = scan(lambda prev, A: prev * A, outputs_info=nt.ones_like(A),
                          non_sequences=A, n_steps=k)
    assert updates == {}
    # (linker "c" has no C for indexing: the last row is taken outside there)
    outputs = [steps] if linker == "c" else [steps, steps[-1]]
    f = ng.function([A, k], outputs, linker=linker)
    a = np.array([0.5, 2.0, -3.0, 1.25])
    for power in (1, 2, 5):
        every, last = (f(a, power) + [None])[:2]
        last = every[-1] if last is None else last
        expected, acc = [], np.ones_like(a)
        for _ in range(power):
            acc = acc * a
            expected.append(acc)
        np.testing.assert_array_equal(every, np.array(expected))
        np.testing.assert_array_equal(last, a ** power)


@pytest.mark.parametrize("linker", LINKERS)
def test_zero_steps_give_empty_stacks(linker):
    A, k = nt.dvector("A"), nt.iscalar("k")
    steps, _ = scan(lambda prev, A: prev * A, outputs_info=nt.ones_like(A),
                    non_sequences=A, n_steps=k)
    f = ng.function([A, k], steps, linker=linker)
    out = f(np.ones(3), 0)
    assert out.shape == (0, 3) and out.dtype == np.float64


@pytest.mark.parametrize("linker", C_LINKERS)
def test_polynomial_from_coefficients(linker):
    coefficients, x = nt.dvector("coefficients"), nt.dscalar("x")
    powers = nt.constant(np.arange(1000, dtype="int64"))
    terms, _ = scan(lambda c, p, x: c * x ** p, sequences=[coefficients, powers],
                    non_sequences=x)
    f = ng.function([coefficients, x], [terms, terms.sum()], linker=linker)
    coef = np.array([1.0, 0.0, 2.0, -0.5])
    got_terms, got = f(coef, 3.0)
    expected = [c * 3.0 ** p for p, c in enumerate(coef)]
    np.testing.assert_array_equal(got_terms, expected)
    assert got == sum(expected)


@pytest.mark.parametrize("linker", C_LINKERS)
def test_fibonacci_with_two_taps(linker):
    x0 = nt.tensor("float64", shape=(2,), name="x0")
    n = nt.iscalar("n")
    seq, _ = scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=n)
    f = ng.function([x0, n], seq, linker=linker)
    got = f(np.array([0.0, 1.0]), 10)
    ref = [0.0, 1.0]
    for _ in range(10):
        ref.append(ref[-2] + ref[-1])
    np.testing.assert_array_equal(got, ref[2:])


@pytest.mark.parametrize("linker", LINKERS)
def test_taps_on_outputs_use_the_first_rows_of_the_initial_value(linker):
    # initial rows beyond what the taps need are ignored (Theano's rule: the first ones)
    x0 = nt.dvector("x0")
    seq, _ = scan(lambda a, b: 2 * a - b, outputs_info=dict(initial=x0, taps=[-3, -1]),
                  n_steps=4)
    got = ng.function([x0], seq, linker=linker)(np.array([1.0, 2.0, 3.0, 99.0]))
    ref = [1.0, 2.0, 3.0]
    for _ in range(4):
        ref.append(2 * ref[-3] - ref[-1])
    np.testing.assert_array_equal(got, ref[3:])


@pytest.mark.parametrize("linker", LINKERS)
def test_until_stops_after_the_step_whose_condition_holds(linker):
    limit = nt.dscalar("limit")
    values, _ = scan(lambda prev, limit: (prev * 2, until(prev * 2 > limit)),
                     outputs_info=nt.constant(1.0), non_sequences=limit, n_steps=1024)
    f = ng.function([limit], values, linker=linker)
    for lim in (0.5, 45.0, 64.0, 1000.0):
        ref, v = [], 1.0
        for _ in range(1024):
            v *= 2
            ref.append(v)
            if v > lim:
                break
        np.testing.assert_array_equal(f(lim), ref)


@pytest.mark.parametrize("linker", LINKERS)
def test_until_bounded_by_n_steps(linker):
    values, _ = scan(lambda prev: (prev + 1, until(prev > 1e9)), outputs_info=nt.constant(0),
                     n_steps=5)
    np.testing.assert_array_equal(ng.function([], values, linker=linker)(), [1, 2, 3, 4, 5])


@pytest.mark.parametrize("linker", LINKERS)
def test_shared_updates_inside_the_loop(linker):
    total = ng.shared(np.float64(1.0), name="total")
    inc = nt.dscalar("inc")

    def step(inc):
        return total * 10, {total: total + inc}

    seen, updates = scan(step, non_sequences=inc, n_steps=4)
    assert list(updates) == [total]
    f = ng.function([inc], seen, updates=updates, linker=linker)
    np.testing.assert_array_equal(f(2.0), [10.0, 30.0, 50.0, 70.0])
    assert total.get_value() == 9.0
    np.testing.assert_array_equal(f(1.0), [90.0, 100.0, 110.0, 120.0])
    assert total.get_value() == 13.0


@pytest.mark.parametrize("linker", LINKERS)
def test_shared_state_read_through_a_sequence(linker):
    # an accumulator updated in the loop, the loop also reading a sequence
    acc = ng.shared(np.zeros(2), name="acc")
    xs = nt.dmatrix("xs")
    _, updates = scan(lambda x: {acc: acc + x}, sequences=xs)
    f = ng.function([xs], [], updates=updates, linker=linker)
    data = np.arange(6.0).reshape(3, 2)
    f(data)
    np.testing.assert_array_equal(acc.get_value(), data.sum(axis=0))


@pytest.mark.parametrize("linker", LINKERS)
def test_jacobian_by_scan(linker):
    x = nt.dvector("x")
    y = x ** 2 + nt.sin(x).sum()
    J, _ = scan(lambda i, y, x: ng.grad(y[i], x), sequences=index_vector(3),
                non_sequences=[y, x])
    v = np.array([0.3, -1.2, 2.0])
    expected = np.diag(2 * v) + np.cos(v)[None, :]
    np.testing.assert_allclose(ng.function([x], J, linker=linker)(v), expected, rtol=1e-12)


@pytest.mark.parametrize("linker", LINKERS)
def test_hessian_by_scan(linker):
    x = nt.dvector("x")
    cost = (x ** 3).sum() + x[0] * x[1]
    gy = ng.grad(cost, x)
    H, _ = scan(lambda i, gy, x: ng.grad(gy[i], x), sequences=index_vector(3),
                non_sequences=[gy, x])
    v = np.array([1.0, 2.0, -3.0])
    expected = np.diag(6 * v)
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(ng.function([x], H, linker=linker)(v), expected, rtol=1e-12)


@pytest.mark.parametrize("linker", LINKERS)
def test_sequence_taps_and_go_backwards(linker):
    s = nt.dvector("s")
    out, _ = scan(lambda a, b, c: a + 10 * b + 100 * c,
                  sequences=dict(input=s, taps=[-2, 0, 1]))
    back, _ = scan(lambda a, b: a - b, sequences=[s, dict(input=s, taps=[1])],
                   go_backwards=True)
    f = ng.function([s], [out, back], linker=linker)
    data = np.array([1.0, 4.0, 9.0, 16.0, 25.0, 36.0])
    got, got_back = f(data)
    np.testing.assert_array_equal(got, [data[t - 2] + 10 * data[t] + 100 * data[t + 1]
                                        for t in range(2, 5)])
    rev = data[::-1]
    np.testing.assert_array_equal(got_back, rev - rev)


@pytest.mark.parametrize("linker", LINKERS)
def test_map_reduce_foldl_foldr(linker):
    x = nt.dvector("x")
    squares, _ = scan_map(lambda v: v * v, x)
    total, _ = scan_reduce(lambda v, acc: acc + v, x, nt.constant(0.0))
    left, _ = foldl(lambda v, acc: acc * 2 + v, x, nt.constant(0.0))
    right, _ = foldr(lambda v, acc: acc * 2 + v, x, nt.constant(0.0))
    f = ng.function([x], [squares, total, left, right], linker=linker)
    data = np.array([1.0, 2.0, 3.0, 5.0])
    got = f(data)
    lref = rref = 0.0
    for v in data:
        lref = lref * 2 + v
    for v in data[::-1]:
        rref = rref * 2 + v
    np.testing.assert_array_equal(got[0], data ** 2)
    assert got[1] == data.sum() and got[2] == lref and got[3] == rref


@pytest.mark.parametrize("linker", LINKERS)
def test_several_outputs_some_not_fed_back(linker):
    x = nt.dvector("x")
    (running, doubled), _ = scan(lambda v, acc: (acc + v, v * 2), sequences=x,
                                 outputs_info=[nt.constant(0.0), None])
    f = ng.function([x], [running, doubled], linker=linker)
    data = np.array([3.0, 1.0, 4.0])
    r, d = f(data)
    np.testing.assert_array_equal(r, np.cumsum(data))
    np.testing.assert_array_equal(d, data * 2)


@pytest.mark.parametrize("linker", LINKERS)
def test_sequences_of_different_lengths_run_the_shortest(linker):
    a, b = nt.dvector("a"), nt.dvector("b")
    out, _ = scan(lambda x, y: x * y, sequences=[a, b])
    got = ng.function([a, b], out, linker=linker)(np.arange(5.0), np.arange(3.0))
    np.testing.assert_array_equal(got, np.arange(3.0) ** 2)


def test_n_steps_must_not_exceed_a_sequence():
    a, n = nt.dvector("a"), nt.iscalar("n")
    out, _ = scan(lambda x: x + 1, sequences=a, n_steps=n)
    f = ng.function([a, n], out, linker="py")
    np.testing.assert_array_equal(f(np.arange(4.0), 2), [1.0, 2.0])
    with pytest.raises(ValueError, match="sequence 0 .* has 4 rows but the loop runs 6"):
        f(np.arange(4.0), 6)


@pytest.mark.parametrize("linker", LINKERS)
def test_gibbs_style_sampling_with_a_random_stream_inside_the_loop(linker):
    """Theano's shared-variable example: each step samples from the previous sample;
    the random state advances step by step and scan's updates carry it out."""
    from nbgraph.tensor.random import RandomStream

    srng = RandomStream(5)
    W = ng.shared(np.array([[0.5, -1.0], [2.0, 0.25]]), name="W")
    v0 = nt.dvector("v0")
    samples, updates = scan(lambda v: srng.binomial(1, nt.sigmoid(nt.dot(v, W)),
                                                    dtype="float64"),
                            outputs_info=v0, n_steps=4)
    f = ng.function([v0], samples, updates=updates, linker=linker)
    (rng_var,) = updates
    gen = rng_var.get_value()
    v = np.array([1.0, 0.0])
    ref = []
    for _ in range(4):
        p = 1 / (1 + np.exp(-(v @ W.get_value())))
        v = gen.binomial(1, p).astype("float64")
        ref.append(v)
    np.testing.assert_array_equal(f(np.array([1.0, 0.0])), ref)
    with pytest.raises(NotImplementedError, match="outside the loop"):
        ng.grad(samples.sum(), W)
