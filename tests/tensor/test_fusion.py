"""Elementwise and reduction fusion (nbgraph.tensor.fusion).

NumPy is the oracle; every fused function is also compared with the same
graph compiled with ``rewrite=None`` (no rewrites at all), both run by the
Python linker, so only fusion (and canonicalisation) differ.
"""

import sys
import time

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph import function
from nbgraph.core.fgraph import FunctionGraph
from nbgraph.display.text import dprint
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.fusion import (
    MAX_INPUTS, MAX_NODES, FusedReduce, FuseElemwise, FuseReduce, FusionRewriter, LiftDimShuffle,
    fused_elemwise_structure,
)
from nbgraph.tensor.reduction import Reduce
from nbgraph.tensor.rewriting import fast_pipeline, rewrites
from nbgraph.tensor.scalar_composite import Composite
from nbgraph.testing import GRAPH_OPS, GraphOp, random_graph

LINKER = "py"
RNG = np.random.default_rng(1234)


# -- helpers ---------------------------------------------------------------------


def compile_both(inputs, outputs):
    return (function(inputs, outputs, linker=LINKER),
            function(inputs, outputs, linker=LINKER, rewrite=None))


def nodes(f, cls=None):
    found = f.fgraph.toposort()
    return [n for n in found if cls is None or isinstance(n.op, cls)]


def elemwise_nodes(f):
    return nodes(f, Elemwise)


def composites(f):
    return [n for n in elemwise_nodes(f) if isinstance(n.op.scalar_op, Composite)]


def same(a, b):
    """Equal dtype, shape and values (NaN equal to NaN, -0.0 distinct from 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.tobytes() == b.tobytes(), (a, b)


def check(inputs, outputs, values, expected=None, rtol=1e-12):
    """Compile fused and unfused; both agree bit for bit and match NumPy's ``expected``."""
    fused, plain = compile_both(inputs, outputs)
    got, ref = fused(*values), plain(*values)
    if isinstance(outputs, (list, tuple)):
        for g, r in zip(got, ref, strict=True):
            same(g, r)
    else:
        same(got, ref)
    if expected is not None:
        if not isinstance(outputs, (list, tuple)):
            got, expected = [got], [expected]
        for g, e in zip(got, expected, strict=True):
            e = np.asarray(e)
            assert np.asarray(g).dtype == e.dtype, (np.asarray(g).dtype, e.dtype)
            np.testing.assert_allclose(g, e, rtol=rtol, equal_nan=True)
    fused.fgraph.check_integrity()
    return fused


def inner_dtypes(composite):
    from nbgraph.core.graph import io_toposort

    out = [v.type.dtype for v in composite.inputs]
    for node in io_toposort(composite.inputs, composite.outputs):
        out.extend(o.type.dtype for o in node.outputs)
    return out


class PyOnlySquare(ps.ScalarOp):
    """A custom scalar op with a Python implementation and no C code."""

    nin = 1
    nfunc = np.square

    def impl(self, x):
        return x * x


class PyOnlyAdd(ps.ScalarOp):
    nin = 2
    nfunc = np.add


py_square = Elemwise(PyOnlySquare())
py_add = Elemwise(PyOnlyAdd())


# -- the benchmark expressions -------------------------------------------------------


def test_x_plus_2y_minus_z_is_one_node():
    x, y, z = nt.dvector("x"), nt.dvector("y"), nt.dvector("z")
    vx, vy, vz = RNG.normal(size=(3, 7))
    f = check([x, y, z], x + y * 2.0 - z, [vx, vy, vz], vx + vy * 2.0 - vz)
    assert len(nodes(f)) == 1
    (node,) = composites(f)
    assert node.inputs == [x_ for x_ in f.fgraph.inputs]  # x, y, z read once each, in order
    assert str(node.op.scalar_op) == "Composite{((x0 + (x1 * 2.0)) - x2)}"


def test_gaussian_times_sine_plus_product_is_one_node():
    x, y = nt.dvector("x"), nt.dvector("y")
    vx, vy = RNG.normal(size=(2, 50))
    f = check([x, y], nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y, [vx, vy],
              np.exp(-vx ** 2 / 2) * np.sin(vy) + vx * vy)
    assert len(nodes(f)) == 1
    (node,) = composites(f)
    assert len(node.inputs) == 2  # x is used three times inside, read once


def test_rewrite_none_does_not_fuse():
    x, y, z = nt.dvector("x"), nt.dvector("y"), nt.dvector("z")
    f = function([x, y, z], x + y * 2.0 - z, linker=LINKER, rewrite=None)
    assert not composites(f)
    assert len(elemwise_nodes(f)) == 3


def test_pipeline_has_the_fusion_stage_after_canonicalisation():
    assert "elemwise_fusion" in rewrites
    stages = fast_pipeline().rewriters
    names = [type(s).__name__ for s in stages]
    assert names.index("FusionRewriter") > names.index("EquilibriumRewriter")
    # the last merge, then the in-place stage (ifelse's no-copy stage belongs to it)
    tail = names[names.index("InplaceElemwise") - 1:]
    assert tail[0] == "MergeRewriter"
    assert set(tail[1:]) <= {"InplaceElemwise", "IfElseView"}


def test_registering_the_fusion_stage_again_replaces_it():
    before = rewrites["elemwise_fusion"]
    try:
        again = FusionRewriter()
        rewrites.register("elemwise_fusion", again, "fusion", position=100)
        assert rewrites.query("fusion").count(again) == 1
        assert before not in rewrites.query("fusion")
    finally:
        rewrites.register("elemwise_fusion", before, "fusion", position=100)


# -- broadcasting ----------------------------------------------------------------------


@pytest.mark.parametrize("static", [False, True])
def test_matrix_row_col_scalar_fuse_and_broadcast_like_numpy(static):
    vm, vr, vc = RNG.normal(size=(4, 5)), RNG.normal(size=(1, 5)), RNG.normal(size=(4, 1))
    vs = np.float64(0.5)
    if static:
        m, r, c = nt.tensor("float64", (4, 5)), nt.tensor("float64", (1, 5)), \
            nt.tensor("float64", (4, 1))
    else:
        m, r, c = nt.dmatrix("m"), nt.drow("r"), nt.dcol("c")
    s = nt.dscalar("s")
    out = nt.tanh(m * r + c) - s * nt.exp(r) + c / 3.0
    f = check([m, r, c, s], out, [vm, vr, vc, vs],
              np.tanh(vm * vr + vc) - vs * np.exp(vr) + vc / 3.0)
    assert len(elemwise_nodes(f)) == 1
    (node,) = elemwise_nodes(f)
    assert node.outputs[0].type == out.type
    broadcastable = sorted(tuple(i.type.broadcastable) for i in node.inputs)
    assert broadcastable == sorted([(False, False), (True, False), (False, True),
                                    (True, True)])


def test_vector_ops_lifted_through_the_broadcast_dimshuffle():
    m, v = nt.dmatrix("m"), nt.dvector("v")
    vm, vv = RNG.normal(size=(3, 4)), RNG.normal(size=4)
    f = check([m, v], m * nt.exp(v) + nt.sin(v), [vm, vv], vm * np.exp(vv) + np.sin(vv))
    assert len(elemwise_nodes(f)) == 1
    assert all(isinstance(n.op, (Elemwise, DimShuffle)) for n in nodes(f))


def test_lift_dimshuffle_alone():
    v = nt.dvector("v")
    m = nt.dmatrix("m")
    fg = FunctionGraph([m, v], [m + nt.exp(nt.sin(v)).dimshuffle("x", 0)])
    assert LiftDimShuffle().rewrite(fg) >= 1
    fg.check_integrity()
    order = [type(n.op).__name__ for n in fg.toposort()]
    assert order == ["DimShuffle", "Elemwise", "Elemwise", "Elemwise"]


def test_runtime_broadcast_errors_still_raise():
    x, y = nt.dvector("x"), nt.dvector("y")
    fused, plain = compile_both([x, y], nt.exp(x) + y * 2.0)
    for f in (fused, plain):
        with pytest.raises(ValueError):
            f(np.ones(3), np.ones(4))


def test_exported_value_with_a_smaller_runtime_shape_is_not_widened():
    # t has x's run-time shape (1, 3); the sum with m is (4, 3).  A fused node
    # would compute t at (4, 3), so t must not be an output of m's group.
    x, m = nt.dmatrix("x"), nt.dmatrix("m")
    t = nt.exp(x) + 1.0
    out = t * m
    vx, vm = RNG.normal(size=(1, 3)), RNG.normal(size=(4, 3))
    f = check([x, m], [out, t], [vx, vm], [(np.exp(vx) + 1.0) * vm, np.exp(vx) + 1.0])
    assert f(vx, vm)[1].shape == (1, 3)
    exp_count = sum(str(n.op).count("exp") for n in elemwise_nodes(f))
    assert exp_count == 1  # not computed twice


# -- intermediates used outside the group ---------------------------------------------


def test_intermediate_read_outside_becomes_an_extra_output():
    x, y, w = nt.dmatrix("x"), nt.dmatrix("y"), nt.dmatrix("w")
    t = nt.exp(x * y + 1.0)
    a = t * 2.0 - y
    vx, vy, vw = RNG.normal(size=(3, 3, 3))
    vt = np.exp(vx * vy + 1.0)
    f = check([x, y, w], [a, nt.dot(t, w)], [vx, vy, vw], [vt * 2.0 - vy, vt @ vw])
    assert len(elemwise_nodes(f)) == 1
    (node,) = elemwise_nodes(f)
    assert len(node.outputs) == 2  # a and t
    assert str(node.op).count("exp") == 1
    (dot,) = [n for n in nodes(f) if not isinstance(n.op, Elemwise)]
    assert dot.inputs[0].owner is node


def test_siblings_fuse_into_one_multi_output_node():
    x, y = nt.dvector("x"), nt.dvector("y")
    t = x * y
    vx, vy = RNG.normal(size=(2, 6))
    f = check([x, y], [nt.exp(t), nt.sin(t) + 1.0], [vx, vy],
              [np.exp(vx * vy), np.sin(vx * vy) + 1.0])
    assert len(nodes(f)) == 1
    assert len(nodes(f)[0].outputs) == 2
    assert str(nodes(f)[0].op).count("*") == 1  # t computed once


def test_output_that_is_also_an_intermediate():
    x = nt.dvector("x")
    t = nt.sqrt(x) + 1.0
    vx = np.abs(RNG.normal(size=5))
    f = check([x], [t, t * t], [vx], [np.sqrt(vx) + 1.0, (np.sqrt(vx) + 1.0) ** 2])
    assert len(nodes(f)) == 1 and len(nodes(f)[0].outputs) == 2


def test_group_crossing_a_non_elementwise_node_is_not_a_cycle():
    # e = a + tanh(dot(a, W)): a cannot join e's group through dot
    x, w = nt.dmatrix("x"), nt.dmatrix("w")
    a = nt.exp(x) * 2.0
    e = a + nt.tanh(nt.dot(a, w))
    vx, vw = RNG.normal(size=(2, 3, 3))
    va = np.exp(vx) * 2.0
    f = check([x, w], e, [vx, vw], va + np.tanh(va @ vw))
    assert len(elemwise_nodes(f)) == 2


def test_python_only_ops_fuse_apart_from_c_ops_and_no_cycle_forms():
    # A = {a1, a2, a3} has C code, B = {b1, b2, b3} has none; a1 -> b1 and
    # b2 -> a2, so fusing both groups would make a cycle: one stays unfused.
    x, y = nt.tensor("float64", (4,), "x"), nt.tensor("float64", (4,), "y")
    a1 = nt.exp(x)
    b2 = py_square(y)
    b1 = py_square(a1)
    a2 = nt.sin(b2)
    a3 = a1 + a2
    b3 = py_add(b1, b2)
    fg = FunctionGraph([x, y], [a3, b3])
    assert len(FuseElemwise().find_groups(fg)) == 1
    vx, vy = RNG.normal(size=(2, 4))
    f = check([x, y], [a3, b3], [vx, vy],
              [np.exp(vx) + np.sin(vy ** 2), np.exp(vx) ** 2 + vy ** 2])
    assert len(composites(f)) == 1
    for node in composites(f):
        kinds = {n.op.has_c_code(n) for n in fused_elemwise_structure(node)["order"]}
        assert len(kinds) == 1


def test_python_only_ops_fuse_together():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = py_add(py_square(x), py_square(y))
    vx, vy = RNG.normal(size=(2, 4))
    f = check([x, y], out, [vx, vy], vx ** 2 + vy ** 2)
    (node,) = nodes(f)
    assert not node.op.scalar_op.has_c_code()
    assert str(node.op.scalar_op) == "Composite{pyonlyadd(pyonlysquare(x0), pyonlysquare(x1))}"


def test_python_only_op_in_a_chain_splits_the_chain():
    x = nt.dvector("x")
    out = nt.exp(py_square(nt.sin(x) + 1.0) * 2.0)
    vx = RNG.normal(size=4)
    f = check([x], out, [vx], np.exp((np.sin(vx) + 1.0) ** 2 * 2.0))
    assert [n.op.scalar_op.has_c_code(None) for n in elemwise_nodes(f)].count(False) == 1
    assert len(elemwise_nodes(f)) == 3


# -- dtypes ------------------------------------------------------------------------------


def test_float32_chain_stays_float32():
    x, y = nt.fvector("x"), nt.fvector("y")
    out = nt.exp(x * 2.0 + y) / 3.0 - 1
    vx, vy = RNG.normal(size=(2, 8)).astype("float32")
    f = check([x, y], out, [vx, vy], np.exp(vx * 2.0 + vy) / 3.0 - 1, rtol=1e-6)
    (node,) = composites(f)
    assert set(inner_dtypes(node.op.scalar_op)) == {"float32"}


def test_int8_overflow_wraps_and_int8_intermediate_is_kept():
    x, y = nt.bvector("x"), nt.bvector("y")
    out = (x + y) * 1.5
    vx = np.array([100, -100, 7, 127], dtype="int8")
    vy = np.array([100, -100, 8, 1], dtype="int8")
    expected = (vx + vy) * 1.5  # NumPy wraps the int8 sum first
    assert expected[0] == -84.0
    f = check([x, y], out, [vx, vy], expected)
    (node,) = composites(f)
    dtypes = inner_dtypes(node.op.scalar_op)
    assert dtypes[:3] == ["int8", "int8", "int8"]  # x0, x1, x0 + x1
    assert node.outputs[0].dtype == "float64"


def test_mixed_integer_dtypes_match_numpy():
    a, b, c = nt.tensor("uint8", (None,)), nt.tensor("int16", (None,)), nt.fvector("c")
    out = (a * 3 + b) // 2 - c
    va = np.array([250, 3, 0], dtype="uint8")
    vb = np.array([-300, 5, 7], dtype="int16")
    vc = np.array([0.5, 1.5, -2.0], dtype="float32")
    check([a, b, c], out, [va, vb, vc], (va * 3 + vb) // 2 - vc)


def test_comparisons_and_switch_fuse_with_bool_intermediates():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = nt.switch(nt.and_(x > 0, y < 1.0), x * y, -x)
    vx, vy = RNG.normal(size=(2, 9))
    f = check([x, y], out, [vx, vy], np.where((vx > 0) & (vy < 1.0), vx * vy, -vx))
    (node,) = composites(f)
    assert "bool" in inner_dtypes(node.op.scalar_op)


# -- NaN and inf ---------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the unfused run's NumPy warnings
def test_nan_and_inf_propagate_through_fused_nodes():
    x = nt.dvector("x")
    out = nt.log(x) * 0.0 + nt.exp(x) - x * 0.0
    vx = np.array([-1.0, 0.0, np.inf, -np.inf, np.nan, 2.0])
    with np.errstate(all="ignore"):
        expected = np.log(vx) * 0.0 + np.exp(vx) - vx * 0.0
    f = check([x], out, [vx], expected)
    assert len(nodes(f)) == 1
    assert np.isnan(f(vx)[[0, 1, 2, 4]]).all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_nan_and_inf_propagate_through_fused_reductions(kind):
    x = nt.dmatrix("x")
    out = getattr(nt, kind)(x * 2.0, axis=1)
    vx = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 2.0], [-np.inf, np.inf, 0.0]])
    with np.errstate(all="ignore"):
        expected = getattr(np, kind)(vx * 2.0, axis=1)
    f = check([x], out, [vx], expected)
    assert [type(n.op) for n in nodes(f)] == [FusedReduce]


# -- reductions ------------------------------------------------------------------------


def test_sum_of_squared_difference_is_one_fused_reduce():
    x, y = nt.dvector("x"), nt.dvector("y")
    vx, vy = RNG.normal(size=(2, 100))
    f = check([x, y], nt.sum((x - y) ** 2), [vx, vy], np.sum((vx - vy) ** 2), rtol=1e-12)
    assert len(nodes(f)) == 1
    (node,) = nodes(f)
    assert isinstance(node.op, FusedReduce)
    assert node.op.kind == "sum" and node.op.axis == (0,)
    assert node.inputs == f.fgraph.inputs
    assert str(node.op) == "Sum{axis=0}(Composite{((x0 - x1) ** 2.0)})"
    assert f(vx, vy).dtype == np.float64 and f(vx, vy).shape == ()


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_with_axis_and_keepdims(kind, axis, keepdims):
    x, y = nt.tensor3("x"), nt.dmatrix("y")
    vx = RNG.normal(size=(2, 3, 4)) * 0.5
    vy = RNG.normal(size=(3, 4))
    out = getattr(nt, kind)(nt.tanh(x) * y + 1.0, axis=axis, keepdims=keepdims)
    expected = getattr(np, kind)(np.tanh(vx) * vy + 1.0, axis=axis, keepdims=keepdims)
    f = check([x, y], out, [vx, vy], expected, rtol=1e-12)
    assert sum(isinstance(n.op, FusedReduce) for n in nodes(f)) == 1
    assert not elemwise_nodes(f)


@pytest.mark.parametrize("dtype,acc", [("int8", "int64"), ("uint8", "uint64"),
                                       ("bool", "int64"), ("float32", "float32"),
                                       ("int32", "int64")])
def test_fused_reduction_accumulates_like_numpy(dtype, acc):
    x, y = nt.tensor(dtype, (None,)), nt.tensor(dtype, (None,))
    if dtype == "bool":
        vx, vy = np.array([True, False, True]), np.array([True, True, False])
        out, expected = nt.sum(nt.or_(x, y)), np.sum(vx | vy)
    else:
        vx = np.array([100, 120, 3, 5], dtype=dtype)
        vy = np.array([100, 10, 2, 1], dtype=dtype)
        out, expected = nt.sum(x * y), np.sum(vx * vy)  # products wrap in dtype first
    f = check([x, y], out, [vx, vy], expected, rtol=1e-6)
    assert f(vx, vy).dtype == acc
    (node,) = nodes(f)
    assert isinstance(node.op, FusedReduce)
    assert node.op.elemwise_dtype(node) == dtype


def test_mean_and_prod_and_max_fuse():
    x = nt.dmatrix("x")
    vx = RNG.normal(size=(5, 6))
    f = check([x], [nt.mean(x * x, axis=0), nt.prod(x + 1.0, axis=1), nt.max(abs(x))], [vx],
              [np.mean(vx * vx, axis=0), np.prod(vx + 1.0, axis=1), np.max(np.abs(vx))])
    assert sum(isinstance(n.op, FusedReduce) for n in nodes(f)) == 3


def test_reduction_whose_input_is_used_elsewhere_is_not_fused():
    x = nt.dvector("x")
    t = nt.exp(x) - 2.0  # (exp(x) - 1 would become expm1 in the stabilize stage)
    vx = RNG.normal(size=7)
    f = check([x], [nt.sum(t), t * 3.0], [vx], [np.sum(np.exp(vx) - 2.0),
                                                  (np.exp(vx) - 2.0) * 3.0])
    assert not any(isinstance(n.op, FusedReduce) for n in nodes(f))
    assert any(isinstance(n.op, Reduce) for n in nodes(f))
    assert sum(str(n.op).count("exp") for n in elemwise_nodes(f)) == 1


def test_empty_max_raises_and_empty_sum_is_zero():
    x = nt.dvector("x")
    fmax = function([x], nt.max(x * 2.0), linker=LINKER)
    fsum = function([x], nt.sum(x * 2.0), linker=LINKER)
    assert isinstance(nodes(fmax)[0].op, FusedReduce)
    with pytest.raises(ValueError, match="empty"):
        fmax(np.zeros(0))
    same(fsum(np.zeros(0)), np.float64(0.0))


def test_reduction_of_broadcast_inputs():
    r, c = nt.drow("r"), nt.dcol("c")
    vr, vc = RNG.normal(size=(1, 5)), RNG.normal(size=(4, 1))
    f = check([r, c], nt.sum(r * c, axis=0), [vr, vc], np.sum(vr * vc, axis=0))
    (node,) = nodes(f)
    assert isinstance(node.op, FusedReduce)


# -- FusedReduce as an Op ------------------------------------------------------------------


def _squared_difference():
    a, b = ps.float64("a"), ps.float64("b")
    return Composite([a, b], [(a - b) ** 2])


def test_fused_reduce_props_str_and_make_node():
    comp = _squared_difference()
    op = FusedReduce("sum", (1,), comp)
    assert op == FusedReduce("sum", (1,), _squared_difference())
    assert hash(op) == hash(FusedReduce("sum", (1,), _squared_difference()))
    assert op != FusedReduce("max", (1,), comp)
    assert str(op) == "Sum{axis=1}(Composite{((x0 - x1) ** 2.0)})"
    x, y = nt.dmatrix("x"), nt.dvector("y")
    node = op.make_node(x, y)  # y is padded to a row, as Elemwise does
    assert node.inputs[1].type.broadcastable == (True, False)
    assert node.outputs[0].type == nt.TensorType("float64", (None,))
    neg = FusedReduce("sum", (-1,), comp).make_node(x, y)
    assert neg.op.axis == (1,)
    with pytest.raises(ValueError):
        FusedReduce("mean", (0,), comp)
    with pytest.raises(ValueError):
        FusedReduce("sum", (0,), Composite([ps.float64("a")], [ps.float64("a") * 1,
                                                               ps.float64("a") * 2]))


def test_fused_reduce_perform_and_infer_shape():
    op = FusedReduce("sum", (0,), _squared_difference())
    x, y = nt.dmatrix("x"), nt.drow("y")
    out = op(x, y)
    vx, vy = RNG.normal(size=(4, 3)), RNG.normal(size=(1, 3))
    f = function([x, y], [out, out.shape[0]], linker=LINKER, rewrite=None)
    value, size = f(vx, vy)
    np.testing.assert_allclose(value, np.sum((vx - vy) ** 2, axis=0), rtol=1e-12)
    assert size == 3
    (shape,) = op.infer_shape(out.owner, [(nt.shape_i(x, 0), nt.shape_i(x, 1)),
                                         (nt.shape_i(y, 0), nt.shape_i(y, 1))])
    g = function([x, y], list(shape), linker=LINKER)
    assert [int(s) for s in g(vx, vy)] == [3]


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_fused_reduce_grad_against_finite_differences(kind):
    from nbgraph.testing import verify_grad

    a, b = ps.float64("a"), ps.float64("b")
    op = FusedReduce(kind, (1,), Composite([a, b], [(a - b) ** 2 + ps.sin(a)]))
    verify_grad(lambda x, y: op(x, y), [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))])


def test_fused_reduce_grad_matches_the_unfused_grad():
    op = FusedReduce("sum", (0, 1), _squared_difference())
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    fused_cost = op(x, y)
    plain_cost = op.unfused([x, y])
    vx, vy = RNG.normal(size=(2, 3, 2))
    gf = function([x, y], nbgraph.grad(fused_cost, [x, y]), linker=LINKER)
    gp = function([x, y], nbgraph.grad(plain_cost, [x, y]), linker=LINKER)
    for a, b in zip(gf(vx, vy), gp(vx, vy), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(gf(vx, vy)[0], 2 * (vx - vy), rtol=1e-12)


# -- structure -----------------------------------------------------------------------------


def test_inputs_used_several_times_are_one_input_and_constants_are_inlined():
    x = nt.dmatrix("x")
    out = x * x + x * 2.0 - 3
    vx = RNG.normal(size=(2, 3))
    f = check([x], out, [vx], vx * vx + vx * 2.0 - 3)
    (node,) = nodes(f)
    assert node.inputs == [f.fgraph.inputs[0]]
    comp = node.op.scalar_op
    assert comp.nin == 1
    assert str(comp) == "Composite{(((x0 * x0) + (x0 * 2.0)) - 3.0)}"


def test_big_constants_stay_tensor_inputs():
    x = nt.dvector("x")
    table = nt.constant(np.arange(4.0))
    vx = RNG.normal(size=4)
    f = check([x], nt.exp(x) * table + 1.0, [vx], np.exp(vx) * np.arange(4.0) + 1.0)
    (node,) = nodes(f)
    assert len(node.inputs) == 2


def test_fused_node_structure_for_code_generators():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], [x * y + 1.0, nt.exp(x * y)], linker=LINKER)
    (node,) = nodes(f)
    info = fused_elemwise_structure(node)
    assert info["inputs"] == node.inputs and info["outputs"] == node.outputs
    assert [v.type.dtype for v in info["scalar_inputs"]] == ["float64", "float64"]
    assert len(info["scalar_outputs"]) == 2
    assert all(isinstance(n.op, ps.ScalarOp) for n in info["order"])
    assert node.op.scalar_op.has_c_code()
    code = node.op.scalar_op.c_code(None, "n", ["a", "b"], ["o0", "o1"], {"fail": "return 1;"})
    assert "o0 =" in code and "o1 =" in code
    with pytest.raises(TypeError):
        fused_elemwise_structure(Reduce("sum", (0,)).make_node(x))


def test_existing_multi_output_composites_are_inlined():
    a, b = ps.float64("a"), ps.float64("b")
    two = Elemwise(Composite([a, b], [a + b, a * b]))
    x, y = nt.dvector("x"), nt.dvector("y")
    p, q = two(x, y)
    out = p * q + 1.0
    vx, vy = RNG.normal(size=(2, 5))
    f = check([x, y], out, [vx, vy], (vx + vy) * (vx * vy) + 1.0)
    assert len(nodes(f)) == 1
    assert str(nodes(f)[0].op.scalar_op) == "Composite{(((x0 + x1) * (x0 * x1)) + 1.0)}"


def test_input_limit_splits_wide_sums():
    xs = [nt.dvector("x%d" % i) for i in range(150)]
    out = xs[0]
    for v in xs[1:]:
        out = out + nt.exp(v)
    values = [RNG.normal(size=3) for _ in xs]
    expected = values[0] + sum(np.exp(v) for v in values[1:])
    f = check(xs, out, values)
    np.testing.assert_allclose(f(*values), expected, rtol=1e-12)
    assert 3 <= len(elemwise_nodes(f)) <= 6
    assert all(len(n.inputs) <= MAX_INPUTS for n in elemwise_nodes(f))


def test_max_nodes_bounds_group_size():
    x = nt.dvector("x")
    out = x
    for _ in range(40):
        out = nt.sin(out) + 1.0
    fg = FunctionGraph([x], [out])
    FuseElemwise(max_nodes=16).rewrite(fg)
    fg.check_integrity()
    sizes = [len(n.op.scalar_op.inputs) for n in fg.toposort()]
    assert len(fg.apply_nodes) == 5  # 80 nodes, at most 16 per group
    assert sizes == [1] * 5


def test_fusing_twice_changes_nothing():
    x, y = nt.dvector("x"), nt.dvector("y")
    fg = FunctionGraph([x, y], [nt.sum(nt.exp(x) * y), x + y * 3.0])
    assert FusionRewriter().rewrite(fg) >= 2
    text = dprint(fg, file="str")
    assert FusionRewriter().rewrite(fg) == 0
    assert dprint(fg, file="str") == text


def test_fuse_reduce_alone_wraps_a_plain_elemwise():
    x = nt.dvector("x")
    fg = FunctionGraph([x], [nt.max(nt.exp(x))])
    assert FuseReduce().rewrite(fg) == 1
    (node,) = fg.toposort()
    assert str(node.op) == "Max{axis=0}(Composite{exp(x0)})"


# -- deep graphs --------------------------------------------------------------------------


def test_two_thousand_node_chain_fuses_and_runs():
    depth = 2000
    x = nt.dvector("x")
    out = x
    for k in range(depth):
        out = out * 1.0001 if k % 2 else out + 1e-3
    start = time.perf_counter()
    fused = function([x], out, linker=LINKER)
    print("2,000-node chain compiled (with fusion) in %.3f s" % (time.perf_counter() - start))
    assert len(nodes(fused)) == -(-depth // MAX_NODES)  # bounded loops, not one giant one
    plain = function([x], out, linker=LINKER, rewrite=None)
    assert len(nodes(plain)) >= depth
    value = np.array([0.0, 1.0, -2.0])
    expected = value.copy()
    for k in range(depth):
        expected = expected * 1.0001 if k % 2 else expected + 1e-3
    same(fused(value), plain(value))
    np.testing.assert_allclose(fused(value), expected, rtol=1e-12)
    dprint(fused, file="str")


def test_fusing_a_thousand_nodes_needs_no_recursion():
    x, y = nt.dvector("x"), nt.dvector("y")
    out = x
    for k in range(1000):
        out = nt.sin(out) * y if k % 3 else out + y
    fg = FunctionGraph([x, y], [out])
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        start = time.perf_counter()
        FuseElemwise(max_nodes=None).rewrite(fg)
        print("1,000 elementwise nodes fused in %.3f s" % (time.perf_counter() - start))
    finally:
        sys.setrecursionlimit(limit)
    assert len(fg.apply_nodes) == 1


# -- printing --------------------------------------------------------------------------


def test_dprint_shows_the_composites_readably():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = function([x, y], [(x - y) ** 2, nt.sum((x - y) ** 2 * 0.5)], linker=LINKER)
    text = f.dprint(file="str") if hasattr(f, "dprint") else dprint(f, file="str")
    # the reduction keeps its own elementwise part; the shared square is one loop
    assert text.splitlines()[0] == "Elemwise{Composite{((x0 - x1) ** 2.0)}} [id A] ''"
    assert "Sum{axis=0}(Composite{(x0 * 0.5)}) [id D] ''" in text
    g = function([x, y], nt.sum((x - y) ** 2, axis=0), linker=LINKER)
    assert dprint(g, file="str") == (
        "Sum{axis=0}(Composite{((x0 - x1) ** 2.0)}) [id A] ''\n"
        " |x [id B]\n"
        " |y [id C]\n")


# -- fused == unfused on a batch of expressions -----------------------------------------


EXPRESSIONS = [
    ("affine", lambda x, y: x * 3.0 + y - 1.0),
    ("softplus mix", lambda x, y: nt.softplus(x) - nt.sigmoid(y) * x),
    ("division", lambda x, y: (x + 1.0) / (y * y + 0.5)),
    ("abs max", lambda x, y: nt.maximum(abs(x), y) - nt.minimum(x, -y)),
    ("log1p expm1", lambda x, y: nt.log1p(abs(x)) + nt.expm1(y * 0.1)),
    ("sqrt", lambda x, y: nt.sqrt(x * x + y * y)),
    ("tan cos", lambda x, y: nt.tan(x * 0.3) * nt.cos(y)),
    ("power", lambda x, y: abs(x) ** y),
    ("negation", lambda x, y: -(-(x * y)) + 2),  # noqa: B002 (on purpose)
    ("where", lambda x, y: nt.switch(x > y, x - y, y - x)),
    ("cast", lambda x, y: nt.cast(x * 10.0, "int32") * 2 + nt.cast(y, "float32")),
    ("reduce", lambda x, y: nt.sum(nt.exp(x) * y, axis=0) + nt.max(x - y)),
    ("mean", lambda x, y: nt.mean((x - y) ** 2, axis=1, keepdims=True) / 2.0),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,build", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_fused_equals_unfused(name, build):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    vx, vy = RNG.normal(size=(2, 4, 5))
    vx[0, 0], vy[1, 1] = np.nan, np.inf
    with np.errstate(all="ignore"):
        f = check([x, y], build(x, y), [vx, vy])
    assert len(elemwise_nodes(f)) <= 2


# -- random graphs ---------------------------------------------------------------------------

# The shared generator (nbgraph.testing.random_graph) with a Python-only op among its
# operations, so fused groups meet nodes that stay out of C.
_FUSION_OPS = GRAPH_OPS + [GraphOp("py_square", 1, lambda rng, a: (py_square, np.square))]
_DTYPES = ("float64",) * 8 + ("float32", "int8")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("seed", range(0, 400, 5))
def test_random_graphs_fused_equal_unfused(seed):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, dtypes=_DTYPES, ops=_FUSION_OPS)
    inputs, values, outputs = graph.inputs, graph.values, graph.outputs
    fused = function(inputs, outputs, linker=LINKER, on_unused_input="ignore")
    plain = function(inputs, outputs, linker=LINKER, rewrite=None, on_unused_input="ignore")
    fused.fgraph.check_integrity()
    try:
        expected = plain(*values)
    except ValueError:  # a run-time broadcasting error: the fused graph raises too
        with pytest.raises(ValueError):
            fused(*values)
        return
    for got, ref in zip(fused(*values), expected, strict=True):
        got, ref = np.asarray(got), np.asarray(ref)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-6, equal_nan=True)
