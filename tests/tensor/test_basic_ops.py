"""SpecifyShape, Alloc and friends, Shape/ShapeI, Reshape, Dot, Join/stack against NumPy."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.tensor.basic import (
    Alloc, Dot, Join, Reshape, Shape, ShapeI, SpecifyShape, alloc_like, shape_i,
)


def compile_(inputs, outputs, **kwargs):
    return nbgraph.function(inputs, outputs, linker="py", **kwargs)


def sym(value, static=False):
    value = np.asarray(value)
    return nt.tensor(value.dtype, value.shape if static else (None,) * value.ndim)


def eval_infer_shape(inputs, var, *values):
    """Evaluate the shape ``var.owner.op.infer_shape`` gives for ``var``."""
    node = var.owner
    in_shapes = [tuple(shape_i(i, d) for d in range(i.ndim)) for i in node.inputs]
    entries = list(node.op.infer_shape(node, in_shapes)[node.outputs.index(var)])
    if not entries:
        return ()
    f = compile_(inputs, entries, on_unused_input="ignore")
    return tuple(int(v) for v in f(*values))


# -- SpecifyShape ---------------------------------------------------------------------------

def test_specify_shape_narrows_type_and_checks_at_run_time():
    x = nt.dmatrix("x")
    s = nt.specify_shape(x, (2, None))
    assert isinstance(s.owner.op, SpecifyShape)
    assert s.type == nt.TensorType("float64", (2, None))
    f = compile_([x], s)
    a = np.ones((2, 5))
    out = f(a)
    np.testing.assert_array_equal(out, a)
    with pytest.raises(ValueError, match="Apply node") as info:
        f(np.ones((3, 5)))
    assert "(2, ?)" in str(info.value) and "(3, 5)" in str(info.value)
    assert eval_infer_shape([x], s, a) == (2, 5)


def test_specify_shape_keeps_known_dims_and_is_identity_when_equal():
    x = nt.tensor("float64", (None, 3))
    s = nt.specify_shape(x, (4, None))
    assert s.type.shape == (4, 3)
    assert nt.specify_shape(x, (None, 3)) is x
    assert nt.specify_shape(x, [None, 3]) is x
    assert SpecifyShape((2, None)) == SpecifyShape([2, None])
    assert hash(SpecifyShape((2, None))) == hash(SpecifyShape((2, None)))


def test_specify_shape_of_a_scalar_and_of_wrong_ndim_at_run_time():
    x = nt.dscalar("x")
    assert nt.specify_shape(x, ()) is x
    v = nt.tensor("float64", (None,))
    f = compile_([v], nt.specify_shape(v, (3,)))
    np.testing.assert_array_equal(f(np.arange(3.0)), np.arange(3.0))
    with pytest.raises(ValueError, match="Apply node"):
        f(np.arange(4.0))


def test_specify_shape_gradient_passes_through():
    x = nt.dvector("x")
    g = nbgraph.grad(nt.sum(nt.specify_shape(x, (3,)) ** 2), x)
    np.testing.assert_allclose(compile_([x], g)(np.array([1.0, 2.0, 3.0])), [2.0, 4.0, 6.0])


# -- Alloc, zeros, ones, *_like -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "uint8", "bool"])
def test_zeros_and_ones(dtype):
    for maker, ref in ((nt.zeros, np.zeros), (nt.ones, np.ones)):
        out = maker((2, 3), dtype=dtype)
        assert out.type == nt.TensorType(dtype, (2, 3))
        got = compile_([], out)()
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, ref((2, 3), dtype=dtype))


def test_zeros_default_dtype_is_floatx_and_int_shape():
    out = nt.zeros(4)
    assert out.type == nt.TensorType(nbgraph.config.floatX, (4,))
    np.testing.assert_array_equal(compile_([], out)(), np.zeros(4))
    assert nt.ones(()).type.shape == ()
    assert compile_([], nt.ones(()))().shape == ()


def test_zeros_with_symbolic_shape():
    n = nt.lscalar("n")
    m = nt.iscalar("m")
    out = nt.zeros((n, 3, m))
    assert out.type.shape == (None, 3, None)
    got = compile_([n, m], out)(2, 4)
    np.testing.assert_array_equal(got, np.zeros((2, 3, 4)))
    x = nt.dmatrix("x")
    out = nt.ones((x.shape[1], 2))
    np.testing.assert_array_equal(compile_([x], out)(np.ones((5, 3))), np.ones((3, 2)))
    out = nt.zeros(x.shape)
    np.testing.assert_array_equal(compile_([x], out)(np.ones((5, 3))), np.zeros((5, 3)))


def test_zeros_of_zero_size():
    got = compile_([], nt.zeros((0, 3)))()
    assert got.shape == (0, 3)


@pytest.mark.parametrize("dtype", [None, "int32", "float32", "bool"])
def test_zeros_like_and_ones_like(dtype):
    x = nt.tensor("float64", (None, 3))
    for maker, ref in ((nt.zeros_like, np.zeros_like), (nt.ones_like, np.ones_like)):
        out = maker(x, dtype=dtype)
        assert out.dtype == (dtype or "float64")
        assert out.type.shape == (None, 3)
        a = np.arange(6.0).reshape(2, 3)
        got = compile_([x], out)(a)
        expected = ref(a, dtype=dtype)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        assert not np.shares_memory(got, a)
        assert eval_infer_shape([x], out, a) == (2, 3)


def test_alloc_broadcasts_the_value():
    v = nt.dvector("v")
    out = nt.alloc(v, 4, 3)
    assert isinstance(out.owner.op, Alloc)
    assert out.type.shape == (4, 3)
    got = compile_([v], out)(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got, np.broadcast_to([1.0, 2.0, 3.0], (4, 3)))
    np.testing.assert_array_equal(compile_([v], out)(np.array([7.0])), np.full((4, 3), 7.0))
    assert eval_infer_shape([v], out, np.ones(3)) == (4, 3)
    out = nt.alloc(2.5, (2, 2))
    np.testing.assert_array_equal(compile_([], out)(), np.full((2, 2), 2.5))


def test_alloc_with_a_runtime_mismatch_raises():
    v = nt.dvector("v")
    f = compile_([v], nt.alloc(v, 4, 3))
    with pytest.raises(ValueError, match="Apply node"):
        f(np.ones(2))


def test_alloc_results_are_not_reused_between_calls():
    n = nt.lscalar("n")
    f = compile_([n], nt.alloc(1.0, n, 2))
    a = f(2)
    b = f(2)
    a[...] = 5.0
    np.testing.assert_array_equal(b, np.ones((2, 2)))


def test_alloc_like():
    x = nt.dmatrix("x")
    out = alloc_like(3.0, x)
    a = np.zeros((2, 5))
    np.testing.assert_array_equal(compile_([x], out)(a), np.full((2, 5), 3.0))


# -- Shape / ShapeI -------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 4)])
def test_shape(shape):
    a = np.ones(shape)
    x = sym(a)
    s = nt.shape(x)
    assert isinstance(s.owner.op, Shape)
    assert s.type == nt.TensorType("int64", (len(shape),))
    got = compile_([x], s)(a)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array(shape, dtype="int64"))
    np.testing.assert_array_equal(compile_([x], x.shape)(a), np.array(shape, dtype="int64"))
    assert eval_infer_shape([x], s, a) == (len(shape),)


def test_shape_i_and_indexing_the_shape():
    x = nt.tensor("float64", (None, 3, None))
    a = np.ones((2, 3, 5))
    for i, expected in enumerate(a.shape):
        entry = shape_i(x, i)
        got = compile_([x], entry, on_unused_input="ignore")(a)
        assert got.dtype == np.int64 and got.shape == () and int(got) == expected
        assert int(compile_([x], x.shape[i], on_unused_input="ignore")(a)) == expected
    assert int(compile_([x], shape_i(x, -1))(a)) == 5
    # a static size gives a constant, no node
    assert shape_i(x, 1).owner is None and int(shape_i(x, 1).data) == 3
    assert isinstance(shape_i(x, 0).owner.op, ShapeI)
    assert ShapeI(0) == ShapeI(0) and ShapeI(0) != ShapeI(1)
    assert eval_infer_shape([x], shape_i(x, 0), a) == ()


# -- Reshape --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,new", [
    ((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (6, -1)), ((2, 3), (-1, 1, 2)),
    ((2, 3, 4), (4, -1)), ((6,), (1, 2, 1, 3)), ((1,), ()), ((), (1, 1)), ((0, 3), (-1, 3)),
    ((0, 3), (3, 0)),
])
def test_reshape_matches_numpy(shape, new):
    a = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape)
    x = sym(a)
    out = x.reshape(new)
    assert isinstance(out.owner.op, Reshape)
    assert out.ndim == len(new)
    got = compile_([x], out)(a)
    expected = a.reshape(new)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if a.size:
        assert np.shares_memory(got, a)  # a view, as view_map says
    # with a fully static input, the output's static shape is known, -1 included
    xs = sym(a, static=True)
    assert xs.reshape(new).type.shape == expected.shape
    assert nt.reshape(x, new).type.shape == tuple(s if s >= 0 else None for s in new)


RESHAPES = [
    ((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (6, -1)), ((2, 3), (-1, 1, 2)),
    ((2, 3, 4), (4, -1)), ((2, 3, 4), (-1, 2, 3)), ((6,), (1, 2, 1, 3)), ((1,), ()),
    ((), (1, 1)), ((), (-1,)), ((0, 3), (-1, 3)), ((0, 3), (3, 0)), ((0, 3), (5, 0)),
    ((4, 0, 2), (-1, 8)), ((3, 4), (2, 2, -1)), ((1, 1), (-1,)),
]


@pytest.mark.parametrize("shape,new", RESHAPES)
@pytest.mark.parametrize("static_input", [False, True])
def test_reshape_infer_shape_matches_numpy(shape, new, static_input):
    a = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape)
    x = sym(a, static=static_input)
    out = x.reshape(new)
    assert eval_infer_shape([x], out, a) == a.reshape(new).shape


@pytest.mark.parametrize("shape,new", RESHAPES)
def test_reshape_infer_shape_with_symbolic_entries(shape, new):
    """Every entry a scalar input, -1 included: the -1 is only known at run time."""
    a = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape)
    x = sym(a)
    entries = [nt.lscalar("s%d" % k) for k in range(len(new))]
    out = x.reshape(entries)
    assert out.type.shape == (None,) * len(new)
    values = [np.int64(v) for v in new]
    assert eval_infer_shape([x] + entries, out, a, *values) == a.reshape(new).shape


def test_reshape_infer_shape_mixes_static_and_symbolic_entries():
    x = nt.dtensor3("x")
    n = nt.lscalar("n")
    a = np.arange(24.0).reshape(2, 3, 4)
    for entries, values in [((n, -1), (4,)), ((-1, n), (2,)), ((2, n, -1), (2,)),
                            ((n, 3, 4), (-1,)), ((n, 0), (0,))]:
        b = a if entries != (n, 0) else np.zeros((0, 5))
        xx = x if b.ndim == 3 else nt.dmatrix("m")
        out = xx.reshape(entries)
        want = b.reshape(tuple(values[0] if e is n else e for e in entries))
        assert eval_infer_shape([xx, n], out, b, np.int64(values[0])) == want.shape


def test_reshape_infer_shape_is_constant_when_static():
    x = nt.tensor("float64", (2, 3))
    (shape,) = x.reshape((3, -1)).owner.op.infer_shape(
        x.reshape((3, -1)).owner, [(shape_i(x, 0), shape_i(x, 1))])
    assert [int(e.data) for e in shape] == [3, 2]


def test_reshape_with_symbolic_entries():
    x = nt.dmatrix("x")
    n = nt.lscalar("n")
    a = np.arange(12.0).reshape(3, 4)
    out = x.reshape((n, -1))
    assert out.type.shape == (None, None)
    np.testing.assert_array_equal(compile_([x, n], out)(a, 2), a.reshape(2, -1))
    out = x.reshape((x.shape[1], x.shape[0]))
    np.testing.assert_array_equal(compile_([x], out)(a), a.reshape(4, 3))
    out = nt.reshape(x, nt.shape(x.T))
    np.testing.assert_array_equal(compile_([x], out)(a), a.reshape(4, 3))
    out = x.reshape(2, 6)
    np.testing.assert_array_equal(compile_([x], out)(a), a.reshape(2, 6))
    np.testing.assert_array_equal(compile_([x], x.flatten())(a), a.ravel())


def test_reshape_method_with_a_shape_vector():
    x = nt.dmatrix("x")
    a = np.arange(12.0).reshape(3, 4)
    out = x.reshape(nt.shape(x.T))
    np.testing.assert_array_equal(compile_([x], out)(a), a.reshape(4, 3))


def test_reshape_of_wrong_size_at_run_time_raises_naming_the_node():
    x = nt.dmatrix("x")
    f = compile_([x], x.reshape((4, -1)))
    with pytest.raises(ValueError, match="Apply node") as info:
        f(np.ones((3, 3)))
    assert "Reshape" in str(info.value)


def test_reshape_keeps_dtype():
    x = nt.tensor("int16", (None, None))
    assert x.reshape((-1,)).dtype == "int16"
    a = np.arange(6, dtype="int16").reshape(2, 3)
    got = compile_([x], x.reshape((-1,)))(a)
    assert got.dtype == np.int16


# -- Dot ------------------------------------------------------------------------------------

DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
              ((0,), (0,)), ((2, 0), (0, 4)), ((1, 3), (3, 1))]


@pytest.mark.parametrize("xs,ys", DOT_SHAPES)
@pytest.mark.parametrize("dx,dy", [("float64", "float64"), ("float32", "float32"),
                                   ("float32", "float64"), ("int32", "int32"),
                                   ("int8", "int8"), ("int64", "float32"),
                                   ("bool", "bool"), ("uint8", "int8")])
def test_dot_matches_numpy(xs, ys, dx, dy):
    rng = np.random.default_rng(0)
    a = (rng.uniform(-2, 2, xs) * 3).astype(dx)
    b = (rng.uniform(-2, 2, ys) * 3).astype(dy)
    expected = np.dot(a, b)
    x, y = sym(a), sym(b)
    out = nt.dot(x, y)
    assert isinstance(out.owner.op, Dot)
    assert out.dtype == expected.dtype.name
    assert out.ndim == expected.ndim
    got = compile_([x, y], out)(a, b)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5 if "float32" in (dx, dy) else 1e-12)
    # operators and methods
    np.testing.assert_allclose(compile_([x, y], x.dot(y))(a, b), expected, rtol=1e-5)
    np.testing.assert_allclose(compile_([x, y], x @ y)(a, b), expected, rtol=1e-5)
    # static shapes
    xs_, ys_ = sym(a, static=True), sym(b, static=True)
    assert nt.dot(xs_, ys_).type.shape == expected.shape
    assert eval_infer_shape([x, y], out, a, b) == expected.shape


def test_dot_misaligned_at_run_time_raises_naming_the_node():
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    f = compile_([x, y], nt.dot(x, y))
    with pytest.raises(ValueError, match="Apply node") as info:
        f(np.ones((2, 3)), np.ones((4, 2)))
    assert "Dot" in str(info.value) and "(2, 3)" in str(info.value)


def test_outer():
    x, y = nt.dvector("x"), nt.dvector("y")
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    out = nt.outer(x, y)
    np.testing.assert_array_equal(compile_([x, y], out)(a, b), np.outer(a, b))
    with pytest.raises(TypeError):
        nt.outer(nt.dmatrix(), y)


# -- Join / concatenate / stack -------------------------------------------------------------

@pytest.mark.parametrize("shapes,axis", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1), ([(2, 3), (2, 3)], -1),
    ([(3,), (2,)], 0), ([(1, 2, 3), (1, 2, 3)], -2), ([(0, 3), (2, 3)], 0),
])
def test_concatenate_matches_numpy(shapes, axis):
    values = [np.arange(int(np.prod(s)), dtype="float64").reshape(s) + i * 100
              for i, s in enumerate(shapes)]
    inputs = [sym(v) for v in values]
    out = nt.concatenate(inputs, axis=axis)
    assert isinstance(out.owner.op, Join)
    expected = np.concatenate(values, axis=axis)
    got = compile_(inputs, out)(*values)
    np.testing.assert_array_equal(got, expected)
    got = compile_(inputs, nt.join(axis, *inputs))(*values)
    np.testing.assert_array_equal(got, expected)
    statics = [sym(v, static=True) for v in values]
    assert nt.concatenate(statics, axis=axis).type.shape == expected.shape


JOINS = [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1), ([(2, 3), (2, 3)], -1),
    ([(3,), (2,)], 0), ([(1, 2, 3), (1, 2, 3)], -2), ([(0, 3), (2, 3)], 0), ([(0,), (0,)], 0),
    ([(5,)], 0), ([(2, 0), (2, 0)], 1), ([(2, 3, 1), (2, 3, 4), (2, 3, 2)], 2),
]


@pytest.mark.parametrize("shapes,axis", JOINS)
@pytest.mark.parametrize("static", ["none", "all", "first"])
def test_join_infer_shape_matches_numpy(shapes, axis, static):
    values = [np.zeros(s) for s in shapes]
    inputs = [sym(v, static=(static == "all" or (static == "first" and i == 0)))
              for i, v in enumerate(values)]
    out = nt.concatenate(inputs, axis=axis)
    assert eval_infer_shape(inputs, out, *values) == np.concatenate(values, axis=axis).shape


@pytest.mark.parametrize("shape,axis", [((3,), 0), ((2, 3), 1), ((2, 3), 2), ((0, 2), 0)])
def test_stack_infer_shape_matches_numpy(shape, axis):
    a = np.zeros(shape)
    x, y = sym(a), sym(a)
    out = nt.stack([x, y], axis=axis)
    assert eval_infer_shape([x, y], out, a, a) == np.stack([a, a], axis=axis).shape


def test_join_promotes_dtypes_like_numpy():
    a = np.array([1, 2], "int8")
    b = np.array([1.5], "float32")
    c = np.array([3], "uint16")
    inputs = [sym(a), sym(b), sym(c)]
    out = nt.concatenate(inputs)
    expected = np.concatenate([a, b, c])
    assert out.dtype == expected.dtype.name
    got = compile_(inputs, out)(a, b, c)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_join_static_shape_merges_other_dims():
    a = nt.tensor("float64", (2, None))
    b = nt.tensor("float64", (None, 3))
    assert nt.concatenate([a, b], axis=0).type.shape == (None, 3)
    c = nt.tensor("float64", (2, 3))
    assert nt.concatenate([c, c], axis=0).type.shape == (4, 3)
    assert nt.concatenate([c, c], axis=1).type.shape == (2, 6)


def test_join_runtime_mismatch_raises_naming_the_node():
    a, b = nt.dmatrix("a"), nt.dmatrix("b")
    f = compile_([a, b], nt.concatenate([a, b], axis=0))
    with pytest.raises(ValueError, match="Apply node"):
        f(np.ones((2, 3)), np.ones((2, 4)))


@pytest.mark.parametrize("shape,axis", [((), 0), ((3,), 0), ((3,), 1), ((3,), -1),
                                        ((2, 3), 0), ((2, 3), 1), ((2, 3), 2), ((2, 3), -3)])
def test_stack_matches_numpy(shape, axis):
    values = [np.arange(int(np.prod(shape)), dtype="float64").reshape(shape) + i
              for i in range(3)]
    inputs = [sym(v) for v in values]
    out = nt.stack(inputs, axis=axis)
    expected = np.stack(values, axis=axis)
    assert out.ndim == expected.ndim
    got = compile_(inputs, out)(*values)
    np.testing.assert_array_equal(got, expected)
    statics = [sym(v, static=True) for v in values]
    assert nt.stack(statics, axis=axis).type.shape == expected.shape


def test_list_of_variables_becomes_a_stack():
    a, b = nt.dscalar("a"), nt.dscalar("b")
    out = nt.as_tensor_variable([a, b, 3.0])
    assert out.type.shape == (3,)
    np.testing.assert_array_equal(compile_([a, b], out)(1.0, 2.0), [1.0, 2.0, 3.0])
