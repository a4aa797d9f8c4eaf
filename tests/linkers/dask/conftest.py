"""Shared helpers of the Dask linker's tests: the reference (the C-VM linker) and
comparisons with a documented tolerance.

Tolerance (see :mod:`nbgraph.linkers.dask`): elementwise results and
reductions whose reduced axes are each one block are compared bit for bit,
except transcendental functions (the kernel's vector and scalar libm paths
meet at other elements in a block than in the whole array: ``ulps.SIMD_ULPS``
on their own results, carried through the operations after them,
:func:`assert_close_through_graph`);
reductions across blocks add partial results in another order:
``rtol=1e-12`` relative to the sum of magnitudes.
"""

import numpy as np
import pytest

pytest.importorskip("dask.array")

import nbgraph
from nbgraph.linkers.dask import DaskLinker


def sync(chunks, **kw):
    """A DaskLinker on the synchronous scheduler returning NumPy arrays."""
    return DaskLinker(chunks=chunks, compute=True, scheduler="sync", **kw)


def reference(inputs, outputs, args):
    """The C-VM linker's results (a list), from its C kernels: a first call while
    the module compiles in the background would run NumPy's loops instead,
    whose transcendentals round differently."""
    f = nbgraph.function(inputs, outputs, linker="cvm", on_unused_input="ignore")
    f.program.wait_compiled()
    out = f(*args)
    return out if isinstance(out, list) else [out]


def run_dask(inputs, outputs, args, linker):
    f = nbgraph.function(inputs, outputs, linker=linker, on_unused_input="ignore")
    out = f(*args)
    return out if isinstance(out, list) else [out]


def assert_bit_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), np.max(np.abs(got - want))
    # the sign of zero too
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def assert_close_ulps(got, want, ulps=None):
    from ulps import SIMD_ULPS, ulp_mismatches

    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert ulp_mismatches(got, want, SIMD_ULPS if ulps is None else ulps).size == 0


#: |f'(a)| of the transcendental functions the tests use, from a and f(a).
_SLOPES = {
    "exp": lambda a, fa: np.abs(fa),
    "sin": lambda a, fa: np.abs(np.cos(a)),
    "cos": lambda a, fa: np.abs(np.sin(a)),
    "tanh": lambda a, fa: 1.0 - fa * fa,
    "log1p": lambda a, fa: 1.0 / np.abs(1.0 + a),
    "sigmoid": lambda a, fa: fa * (1.0 - fa),
}


def _moved(name, vals, errs, out):
    """How far one node's result can move (first order), from its inputs'
    values ``vals`` and how far they can move ``errs``; None: no rule."""
    from ulps import SIMD_ULPS

    a, ea = vals[0], errs[0]
    rounding = np.spacing(np.abs(out))
    if name in _SLOPES:
        return _SLOPES[name](a, out) * ea + SIMD_ULPS * rounding
    if name in ("neg", "abs", "identity"):
        return ea
    if name == "sqrt":
        return ea / (2.0 * np.sqrt(np.abs(a))) + rounding
    b, eb = (vals[1], errs[1]) if len(vals) > 1 else (None, None)
    rules = {
        "add": lambda: ea + eb + rounding,
        "sub": lambda: ea + eb + rounding,
        "mul": lambda: np.abs(b) * ea + np.abs(a) * eb + rounding,
        "true_div": lambda: ea / np.abs(b) + np.abs(a) * eb / (b * b) + rounding,
        "maximum": lambda: np.maximum(ea, eb),
        "minimum": lambda: np.maximum(ea, eb),
        "pow": lambda: (np.abs(b * out / a) * ea + np.abs(out * np.log(np.abs(a))) * eb
                        + SIMD_ULPS * rounding),
    }
    return rules[name]() if name in rules else None


def propagated_error(inputs, output, args):
    """Per element of ``output`` (an elementwise graph), a first-order bound on how
    far it can move when each transcendental result in the graph moves by
    ``ulps.SIMD_ULPS`` ulps (libm's scalar and vector paths meet at other
    elements in a block than in the whole array), carried through the
    operations after it: a sum that cancels turns one ulp of ``exp(x)`` into
    many ulps of ``x + exp(x)``.  Values come from the Python linker."""
    from nbgraph.core.graph import toposort
    from nbgraph.core.nodes import Constant

    nodes = toposort([output])
    variables = [node.outputs[0] for node in nodes]
    values = dict(zip(inputs, args, strict=True))
    errors = {}
    with np.errstate(all="ignore"):
        values.update(zip(variables, nbgraph.function(inputs, variables, linker="py",
                                                      on_unused_input="ignore")(*args),
                          strict=True))
        for node in nodes:
            vals, errs = [], []
            for v in node.inputs:
                vals.append(np.asarray(v.data if isinstance(v, Constant) else values[v]))
                errs.append(errors.get(v, np.zeros(())))
            out = np.asarray(values[node.outputs[0]])
            scalar = getattr(node.op, "scalar_op", None)
            name = None if scalar is None else getattr(scalar, "name", None)
            if scalar is None:  # a DimShuffle (of a constant, in these graphs)
                assert not np.any(errs[0]), "no error rule for %s" % node.op
                moved = np.zeros(())
            else:
                moved = _moved(name, vals, errs, out)
                assert moved is not None, "no error rule for %s" % name
            errors[node.outputs[0]] = np.broadcast_to(moved, out.shape) if np.ndim(moved) else moved
    return np.broadcast_to(errors[output], np.shape(values[output]))


def assert_close_through_graph(inputs, output, args, got, want):
    """``got`` equals ``want`` within :func:`propagated_error` (twice the first-order
    bound) or ``SIMD_ULPS`` ulps; NaN and infinities exactly where ``want`` has them."""
    from ulps import SIMD_ULPS, ulp_mismatches

    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bound = propagated_error(inputs, output, args)
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    zeros = finite & (want == 0) & (got == 0)
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))
    with np.errstate(all="ignore"):
        near = np.abs(got - want) <= 2.0 * bound
    outside = np.flatnonzero(~near & finite)
    if outside.size:
        far = ulp_mismatches(got.reshape(-1)[outside], want.reshape(-1)[outside], SIMD_ULPS)
        assert far.size == 0, (got.reshape(-1)[outside][far], want.reshape(-1)[outside][far],
                               bound.reshape(-1)[outside][far])


def assert_reduction_close(got, want, magnitude):
    """Equal within 1e-12 of the summed magnitudes (partials merged in another order)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    assert np.all(np.abs(got[finite] - want[finite]) <= 1e-12 * (magnitude[finite] + 1e-300))


class _Helpers:
    sync = staticmethod(sync)
    reference = staticmethod(reference)
    run_dask = staticmethod(run_dask)
    assert_bit_equal = staticmethod(assert_bit_equal)
    assert_close_ulps = staticmethod(assert_close_ulps)
    assert_close_through_graph = staticmethod(assert_close_through_graph)
    assert_reduction_close = staticmethod(assert_reduction_close)


@pytest.fixture(scope="session")
def dk():
    """The helpers above (test modules cannot import a conftest under importlib mode)."""
    return _Helpers
