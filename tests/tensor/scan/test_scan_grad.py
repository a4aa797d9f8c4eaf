"""Gradients through scan (backpropagation through time) against finite differences.

``verify_grad`` compares ``grad`` of a random projection of each loop's
outputs with central differences; truncation is checked against a NumPy
loop that back-propagates by hand.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scan import reduce as scan_reduce, scan, until
from nbgraph.testing import verify_grad

rng = np.random.default_rng(7)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_grad_of_power_with_respect_to_its_base(linker):
    def power(A):
        steps, _ = scan(lambda p, A: p * A, outputs_info=nt.ones_like(A), non_sequences=A,
                        n_steps=4)
        return steps

    verify_grad(power, [rng.random(3) + 0.5], linker=linker)


@pytest.mark.parametrize("linker", ["py", "cvm", "debug"])
def test_grad_of_an_elman_step_for_every_input(linker):
    def rnn(x, h0, W, U, b):
        h, _ = scan(lambda xt, hp, W, U, b: nt.tanh(nt.dot(xt, W) + nt.dot(hp, U) + b),
                    sequences=x, outputs_info=h0, non_sequences=[W, U, b])
        return h

    pt = [rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 4)),
          rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5,
          rng.standard_normal(4) * 0.1]
    verify_grad(rnn, pt, linker=linker)


def test_grad_through_two_taps():
    def fib(x0):
        out, _ = scan(lambda a, b: a * 0.5 + b * b * 0.3,
                      outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=5)
        return out

    verify_grad(fib, [rng.random((3, 2))])


def test_grad_through_taps_with_a_gap_and_spare_initial_rows():
    def gap(x0):
        out, _ = scan(lambda a, b: a * b + 0.1, outputs_info=dict(initial=x0, taps=[-3, -1]),
                      n_steps=4)
        return out

    verify_grad(gap, [rng.random((5,)) + 0.5])


def test_grad_through_sequence_taps():
    def seqtaps(s, w):
        out, _ = scan(lambda a, b, w: a * b * w, sequences=dict(input=s, taps=[-1, 1]),
                      non_sequences=w)
        return out

    verify_grad(seqtaps, [rng.random(7), rng.random(())])


def test_grad_backwards_and_of_an_output_not_fed_back():
    def both(s, h0):
        (h, y), _ = scan(lambda x, hp: (hp * 0.9 + nt.sin(x), hp * x), sequences=s,
                         outputs_info=[h0, None], go_backwards=True)
        return h.sum() + (y ** 2).sum()

    verify_grad(both, [rng.random(6), rng.random(())])


def test_grad_of_reduce_keeps_only_the_last_step():
    def last(s, w):
        total, _ = scan_reduce(lambda x, acc, w: acc * w + x, s, nt.constant(0.0), w)
        return total

    verify_grad(last, [rng.random(5), np.array(0.7)])


def test_grad_with_until():
    def stop(x0):
        out, _ = scan(lambda p: (p * 1.5, until(p > 10)), outputs_info=x0, n_steps=50)
        return out

    verify_grad(stop, [np.array(1.2)])


def test_grad_with_a_longer_sequence_than_the_loop():
    def part(s, n0):
        out, _ = scan(lambda x, acc: acc + x ** 2, sequences=s, outputs_info=n0, n_steps=3)
        return out

    s, n0 = nt.dvector("s"), nt.dscalar("n0")
    out, _ = scan(lambda x, acc: acc + x ** 2, sequences=s, outputs_info=n0, n_steps=3)
    g = ng.function([s, n0], ng.grad(out[-1], s))(np.arange(5.0), 0.0)
    np.testing.assert_array_equal(g, [0.0, 2.0, 4.0, 0.0, 0.0])
    verify_grad(part, [rng.random(5), np.array(0.2)])


def _truncated_reference(xs, h0, k):
    """d h_T / d(xs, h0) for h_t = tanh(x_t + h_{t-1}), back-propagated k steps only."""
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(x + hs[-1]))
    gx = np.zeros_like(xs)
    g = 1.0
    n = len(xs)
    for t in range(n - 1, max(n - k, 0) - 1, -1):
        da = g * (1 - hs[t + 1] ** 2)
        gx[t] = da
        g = da
    gh0 = g if k >= n else 0.0
    return gx, gh0


@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_truncate_gradient_stops_after_k_steps(k):
    x, h0 = nt.dvector("x"), nt.dscalar("h0")
    h, _ = scan(lambda xt, hp: nt.tanh(xt + hp), sequences=x, outputs_info=h0,
                truncate_gradient=k)
    gx, gh0 = ng.function([x, h0], ng.grad(h[-1], [x, h0]))(np.linspace(-1, 1, 5), 0.3)
    rx, rh0 = _truncated_reference(np.linspace(-1, 1, 5), 0.3, k)
    np.testing.assert_allclose(gx, rx, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gh0, rh0, rtol=1e-12, atol=1e-15)


def test_second_derivative_through_scan():
    x = nt.dscalar("x")
    out, _ = scan(lambda p, x: p * x, outputs_info=nt.constant(1.0), non_sequences=x,
                  n_steps=3)
    g = ng.grad(out[-1], x)
    h = ng.grad(g, x)
    f = ng.function([x], [g, h])
    got = f(1.5)
    np.testing.assert_allclose(got, [3 * 1.5 ** 2, 6 * 1.5], rtol=1e-12)
