"""Fixtures of the tensor tests.  ``oracle``: checks shared by the op-library tests,
with NumPy as the oracle and the debug linker beside the Python one.

``check_against(inputs, out, values, expected)`` compiles ``out`` with the Python
linker and (when a C compiler exists) the debug linker, which runs every node's
``perform`` and C code side by side and checks view/destroy maps; it then requires
the result to have NumPy's dtype and shape and NumPy's values (exactly, or within
a few ulps where ``ulps`` is given), the static shape of ``out`` to agree with the
result, and ``infer_shape`` of ``out``'s node to compute the same shape.
"""

import shutil
import types

import numpy as np
import pytest

import nbgraph
from nbgraph.tensor.basic import shape_i

HAVE_CC = bool(shutil.which("cc") or shutil.which("gcc"))

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"]
REAL_DTYPES = ALL_DTYPES[1:]
FLOATS = ["float32", "float64"]


_OWN_MODULES = ("nbgraph.tensor.creation", "nbgraph.tensor.shape_ops",
                "nbgraph.tensor.extra_ops", "nbgraph.tensor.advanced_indexing")


def _needs_debug(outputs):
    """True when a node of the op library in the graph has C code or declares a view."""
    from nbgraph.core.graph import toposort

    for node in toposort(list(outputs)):
        has_c = getattr(node.op, "has_c_code", None)  # CLinkerOps only
        if type(node.op).__module__ in _OWN_MODULES and (
                (has_c is not None and has_c(node)) or node.op.view_map):
            return True
    return False


def linkers(outputs=()):
    """"py", and "debug" (Python vs C, view checks) where the op library's nodes need it."""
    return ("py", "debug") if HAVE_CC and _needs_debug(outputs) else ("py",)


def sym(value, static=False, name=None):
    """A Variable with ``value``'s dtype and ndim (its static shape when ``static``)."""
    import nbgraph.tensor as nt

    value = np.asarray(value)
    return nt.tensor(value.dtype, value.shape if static else (None,) * value.ndim, name)


def infer_shape_of(inputs, var, values):
    """The shape ``var.owner.op.infer_shape`` computes, evaluated."""
    node = var.owner
    if node is None:
        return None
    in_shapes = [tuple(shape_i(i, d) for d in range(i.ndim)) if hasattr(i.type, "ndim")
                 else None for i in node.inputs]
    entries = list(node.op.infer_shape(node, in_shapes)[node.outputs.index(var)])
    if not entries:
        return ()
    f = nbgraph.function(inputs, entries, linker="py", on_unused_input="ignore")
    return tuple(int(v) for v in f(*values))


def assert_same(got, expected, ulps=None, what=""):
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray), (what, type(got))
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    if ulps is None or expected.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=what)
        np.testing.assert_array_max_ulp(got[finite], expected[finite], maxulp=ulps)


def check_against(inputs, out, values, expected, ulps=None, infer=True, static=True,
                  debug=True):
    """``out`` computed from ``values`` equals NumPy's ``expected`` in every linker
    (``debug=False``: the Python linker only, for property tests with many graphs)."""
    expected = np.asarray(expected)
    if static:
        assert out.ndim == expected.ndim, (out.type, expected.shape)
        for s, e in zip(out.type.shape, expected.shape, strict=True):
            assert s is None or s == e, ("static shape", out.type, expected.shape)
    assert out.dtype == expected.dtype.name, ("dtype", out.type, expected.dtype)
    for linker in linkers([out]) if debug else ("py",):
        f = nbgraph.function(inputs, out, linker=linker, on_unused_input="ignore")
        assert_same(f(*values), expected, ulps, linker)
    if infer:
        assert infer_shape_of(inputs, out, values) in (None, expected.shape)


@pytest.fixture(scope="session")
def oracle():
    """The helpers above, for test modules (importlib mode keeps conftest unimportable)."""
    return types.SimpleNamespace(
        check=check_against, same=assert_same, sym=sym, infer_shape=infer_shape_of,
        linkers=linkers, ALL_DTYPES=ALL_DTYPES, REAL_DTYPES=REAL_DTYPES, FLOATS=FLOATS)
