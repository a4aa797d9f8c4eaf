"""Reductions and fused reductions through linker="dask": every axis set of a 3-d
tensor, every kind, uneven chunks; bit-equal to the C linker when each reduced
axis is one block, within the documented tolerance when partials are merged."""

import itertools

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt

SHAPE = (7, 6, 5)
AXES = [ax for n in range(0, 4) for ax in itertools.combinations(range(3), n)]
KINDS = ["sum", "prod", "max", "min"]


def _data():
    rng = np.random.default_rng(42)
    a = rng.standard_normal(SHAPE)
    a.reshape(-1)[[3, 50]] = [np.inf, -np.inf]
    b = rng.uniform(0.5, 1.5, SHAPE)
    b.reshape(-1)[7] = np.nan
    return a, b


def _graph(x, y, kind, axes):
    plain = getattr(x, kind)(axis=axes)
    fused = getattr((x - y) * (x - y) if kind != "prod" else x * y + 1.0, kind)(axis=axes)
    return [plain, fused]


@pytest.fixture(scope="module")
def compiled(dk):
    """One DaskFunction and one reference per kind (all axis sets as outputs)."""
    x, y = nt.dtensor3("x"), nt.dtensor3("y")
    out = {}
    for kind in KINDS:
        outs = [o for axes in AXES for o in _graph(x, y, kind, axes)]
        out[kind] = (nbgraph.function([x, y], outs, linker=dk.sync((3, 6, (2, 3)))),
                     nbgraph.function([x, y], outs, linker=dk.sync((7, 4, 5))),
                     nbgraph.function([x, y], outs, linker="cvm"),
                     [axes for axes in AXES for _ in range(2)])
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_reductions_over_every_axis_set_match_the_c_linker(dk, compiled, kind):
    a, b = _data()
    uneven, one_axis_split, ref, axes_list = compiled[kind]
    want = ref(a, b)
    terms = [np.abs(a), np.nan_to_num((a - b) ** 2, nan=0.0)]
    for f, split in ((uneven, (0, 2)), (one_axis_split, (1,))):
        got = f(a, b)
        for k, (g, w, axes) in enumerate(zip(got, want, axes_list, strict=True)):
            if not set(axes) & set(split):
                dk.assert_bit_equal(g, w)  # every reduced axis is one block
            else:
                mag = terms[k % 2].sum(axis=axes) if kind == "sum" else np.abs(np.asarray(w))
                if kind == "prod":
                    np.testing.assert_allclose(g, w, rtol=1e-12)
                else:
                    dk.assert_reduction_close(g, w, mag * 4)


def test_mean_and_integer_sums(dk):
    x = nt.dmatrix("x")
    i = nt.tensor("int8", (None, None), "i")
    outs = [x.mean(), x.mean(axis=1), i.sum(axis=0), (i * 2).max()]
    a = np.random.default_rng(0).standard_normal((9, 4))
    iv = np.arange(36, dtype="int8").reshape(9, 4)
    got = dk.run_dask([x, i], outs, [a, iv], dk.sync((4, 3)))
    want = dk.reference([x, i], outs, [a, iv])
    dk.assert_bit_equal(got[1], want[1])
    for g, w in zip(got[2:], want[2:], strict=True):
        dk.assert_bit_equal(g, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)


def test_dot_matches_the_c_linker(dk):
    A, B, v = nt.dmatrix("A"), nt.dmatrix("B"), nt.dvector("v")
    outs = [nt.dot(A, B), nt.dot(A, v), nt.dot(v, B), nt.dot(B.T, v), nt.dot(v, v),
            nt.dot(A, B).sum()]
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((11, 8)), rng.standard_normal((8, 5)), rng.standard_normal(8)]
    got = dk.run_dask([A, B, v], outs, args, dk.sync((4, 3)))
    want = dk.reference([A, B, v], outs, args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
