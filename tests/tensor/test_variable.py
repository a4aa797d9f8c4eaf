"""Tensor Variables: constructors, operators, methods, indexing, constants, shared variables.

Every value is computed with the Python linker and compared with NumPy on the
same data; every static type is compared with the shape/dtype NumPy produces.
"""

import operator

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core.graph import Variable
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import (
    SharedVariable, TensorConstant, TensorVariable, as_tensor_variable, constant, shared,
    tensor,
)


def run(inputs, outputs, *values):
    """Compile with the Python linker and call."""
    return nbgraph.function(list(inputs), outputs, linker="py")(*values)


def static_matches(ttype, arr):
    """The static type admits ``arr``: same dtype and ndim, static dims equal."""
    return (ttype.dtype == arr.dtype.name and ttype.ndim == arr.ndim
            and all(s is None or s == a for s, a in zip(ttype.shape, arr.shape, strict=True)))


RNG = np.random.default_rng(1234)


# -- constructors ---------------------------------------------------------------

KINDS = {"scalar": (), "vector": (None,), "matrix": (None, None), "row": (1, None),
         "col": (None, 1), "tensor3": (None,) * 3, "tensor4": (None,) * 4}
PREFIXES = {"b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32",
            "d": "float64"}


class TestConstructors:
    @pytest.mark.parametrize("kind", sorted(KINDS))
    @pytest.mark.parametrize("prefix", sorted(PREFIXES))
    def test_prefixed(self, prefix, kind):
        make = getattr(nt, prefix + kind)
        v = make("v")
        assert isinstance(v, TensorVariable)
        assert v.type == TensorType(PREFIXES[prefix], KINDS[kind])
        assert v.name == "v" and v.owner is None
        assert v.ndim == len(KINDS[kind]) and v.dtype == PREFIXES[prefix]
        assert make().name is None
        assert make() is not make()

    @pytest.mark.parametrize("kind", sorted(KINDS))
    @pytest.mark.parametrize("floatx", ["float32", "float64"])
    def test_unprefixed_follow_floatx(self, kind, floatx):
        with nbgraph.config.change(floatX=floatx):
            v = getattr(nt, kind)("u")
        assert v.type == TensorType(floatx, KINDS[kind])
        assert v.name == "u"

    def test_floatx_is_read_when_called(self):
        with nbgraph.config.change(floatX="float32"):
            a = nt.matrix()
        with nbgraph.config.change(floatX="float64"):
            b = nt.matrix()
        assert a.dtype == "float32" and b.dtype == "float64"

    def test_tensor(self):
        v = tensor("int16", (None, 3, 1), "t")
        assert v.type == TensorType("int16", (None, 3, 1))
        assert v.name == "t"
        assert nt.tensor(dtype="uint8", shape=(2,)).type == TensorType("uint8", (2,))
        assert tensor("bool", (), name="flag").type == TensorType("bool", ())

    def test_tensor_floatx_default(self):
        with nbgraph.config.change(floatX="float32"):
            assert tensor(shape=(None,)).dtype == "float32"

    def test_tensor_with_broadcastable(self):
        assert tensor("float64", broadcastable=(True, False)).type.shape == (1, None)

    def test_tensor_needs_a_shape(self):
        with pytest.raises(TypeError, match="shape"):
            tensor("float64")

    def test_tensor_name_in_the_shape_slot(self):
        with pytest.raises(TypeError, match="shape before the name"):
            tensor("float64", "x")

    def test_tensor_bad_dtype(self):
        with pytest.raises(TypeError, match="object"):
            tensor("object", (None,))


# -- properties -------------------------------------------------------------------

class TestProperties:
    def test_ndim_dtype_broadcastable(self):
        x = tensor("int32", (1, None, 4))
        assert x.ndim == 3 and x.dtype == "int32"
        assert x.broadcastable == (True, False, False)
        assert x.static_shape == (1, None, 4)

    def test_shape_is_a_symbolic_int64_vector(self):
        x = nt.dmatrix("x")
        s = x.shape
        assert isinstance(s, Variable)
        assert s.type.dtype == "int64" and s.type.ndim == 1 and s.type.shape == (2,)
        a = np.zeros((3, 5))
        out = run([x], s, a)
        np.testing.assert_array_equal(out, [3, 5])
        assert out.dtype == np.int64
        assert run([x], x.shape[1], a) == 5

    def test_shape_of_a_scalar(self):
        x = nt.dscalar()
        assert x.shape.type.shape == (0,)
        assert run([x], x.shape, 1.0).shape == (0,)


# -- arithmetic operators -------------------------------------------------------------

BINARY = [
    (operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"),
    (operator.truediv, "/"), (operator.floordiv, "//"), (operator.mod, "%"),
    (operator.pow, "**"),
]
COMPARE = [operator.lt, operator.le, operator.gt, operator.ge]


def _data(dtype, shape, positive=False):
    if dtype == "bool":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        lo = 1 if positive else (0 if np.dtype(dtype).kind == "u" else -5)
        return RNG.integers(lo, 6, size=shape).astype(dtype)
    data = RNG.uniform(0.5, 3.0, size=shape) if positive else RNG.normal(size=shape)
    return data.astype(dtype)


class TestArithmetic:
    @pytest.mark.parametrize("op, sym", BINARY)
    @pytest.mark.parametrize("da, db", [
        ("float64", "float64"), ("float32", "float32"), ("int32", "int32"),
        ("int8", "float32"), ("float32", "int64"), ("int16", "uint8"),
    ])
    def test_binary_operators(self, op, sym, da, db):
        x, y = tensor(da, (None, None), "x"), tensor(db, (1, None), "y")
        a = _data(da, (3, 4), positive=True)
        b = _data(db, (1, 4), positive=True)
        if sym == "**" and np.dtype(db).kind in "iu":
            b = np.minimum(b, 3).astype(db)
        z = op(x, y)
        with np.errstate(all="ignore"):
            expected = op(a, b)
        assert z.dtype == expected.dtype.name
        assert z.type.shape == (None, None)
        out = run([x, y], z, a, b)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        np.testing.assert_allclose(out, expected, rtol=1e-6)

    @pytest.mark.parametrize("op, sym", BINARY)
    def test_reflected_operators_with_python_numbers(self, op, sym):
        x = nt.fvector("x")
        a = _data("float32", (5,), positive=True)
        for left, right, ref in [(x, 2, (a, 2)), (3, x, (3, a)), (x, 1.5, (a, 1.5)),
                                 (2.5, x, (2.5, a))]:
            z = op(left, right)
            expected = op(*ref)
            assert z.dtype == expected.dtype.name == "float32"
            np.testing.assert_allclose(run([x], z, a), expected, rtol=1e-6)

    def test_reflected_operators_with_numpy_arrays(self):
        x = nt.dvector("x")
        a = _data("float64", (4,))
        b = _data("float64", (4,))
        # NumPy must defer to the Variable's reflected operator
        z = b - x
        assert isinstance(z, Variable)
        np.testing.assert_allclose(run([x], z, a), b - a)
        z = b * x
        assert isinstance(z, Variable)
        np.testing.assert_allclose(run([x], z, a), b * a)

    @pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "uint8"])
    def test_unary_minus_and_abs(self, dtype):
        x = tensor(dtype, (None,), "x")
        a = _data(dtype, (6,))
        with np.errstate(all="ignore"):
            neg, ab = -a, np.abs(a)
        for z, expected in [(-x, neg), (abs(x), ab)]:
            assert z.dtype == expected.dtype.name
            out = run([x], z, a)
            assert out.dtype == expected.dtype
            np.testing.assert_array_equal(out, expected)

    def test_unary_plus_is_the_variable(self):
        x = nt.dvector()
        assert +x is x

    @pytest.mark.parametrize("op", COMPARE)
    @pytest.mark.parametrize("other", ["var", 0, 0.5])
    def test_comparisons(self, op, other):
        x = nt.dmatrix("x")
        a = _data("float64", (3, 3))
        if other == "var":
            y = nt.drow("y")
            b = _data("float64", (1, 3))
            z, expected, out = op(x, y), op(a, b), None
            out = run([x, y], z, a, b)
        else:
            z, expected = op(x, other), op(a, other)
            out = run([x], z, a)
        assert z.dtype == "bool"
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, expected)

    def test_reflected_comparison(self):
        x = nt.ivector("x")
        a = np.array([-1, 0, 3], dtype="int32")
        np.testing.assert_array_equal(run([x], 0 < x, a), 0 < a)
        np.testing.assert_array_equal(run([x], 1 >= x, a), 1 >= a)

    def test_integer_division_and_modulo_signs(self):
        x, y = nt.ivector("x"), nt.ivector("y")
        a = np.array([7, -7, 7, -7, 0], dtype="int32")
        b = np.array([2, 2, -2, -2, 3], dtype="int32")
        np.testing.assert_array_equal(run([x, y], x // y, a, b), a // b)
        np.testing.assert_array_equal(run([x, y], x % y, a, b), a % b)
        assert (x // y).dtype == "int32" and (x / y).dtype == "float64"

    def test_float_floor_division_and_modulo(self):
        x, y = nt.dvector("x"), nt.dvector("y")
        a = np.array([7.5, -7.5, 7.5, -7.5])
        b = np.array([2.0, 2.0, -2.0, -2.0])
        np.testing.assert_array_equal(run([x, y], x // y, a, b), a // b)
        np.testing.assert_array_equal(run([x, y], x % y, a, b), a % b)

    def test_expression_tree(self):
        x, y = nt.dmatrix("x"), nt.dvector("y")
        a, b = _data("float64", (3, 4)), _data("float64", (4,))
        z = (x * 2 - y) ** 2 / (1 + abs(y)) + (-x)
        np.testing.assert_allclose(run([x, y], z, a, b),
                                   (a * 2 - b) ** 2 / (1 + np.abs(b)) + (-a))

    def test_cannot_broadcast_static_shapes(self):
        x = tensor("float64", (3, None))
        y = tensor("float64", (4, None))
        with pytest.raises(ValueError, match="broadcast"):
            x + y


# -- identity, truth, iteration -----------------------------------------------------

class TestIdentity:
    def test_eq_is_identity(self):
        x, y = nt.dvector("x"), nt.dvector("x")
        assert (x == x) is True
        assert (x == y) is False
        assert (x != y) is True
        assert x != 1.0

    def test_variables_key_dicts_and_sets(self):
        x, y = nt.dvector("x"), nt.dvector("x")
        d = {x: 1, y: 2}
        assert len(d) == 2 and d[x] == 1 and d[y] == 2
        z = x + y
        assert z in {z} and x not in {y, z}

    def test_bool_raises(self):
        x = nt.dscalar("x")
        with pytest.raises(TypeError, match="truth value"):
            bool(x)
        with pytest.raises(TypeError):
            if x > 0:
                pass
        with pytest.raises(TypeError):
            bool(constant(1.0))

    def test_not_iterable_and_no_len(self):
        x = nt.dvector("x")
        with pytest.raises(TypeError):
            iter(x)
        with pytest.raises(TypeError):
            len(x)

    def test_repr(self):
        assert repr(nt.dvector("x")) == "x"
        assert repr(nt.dvector()) == "<TensorType(float64, (None,))>"


# -- shape-changing methods ------------------------------------------------------------

class TestShapeMethods:
    def test_transpose(self):
        x = tensor("float64", (2, None, 5))
        assert x.T.type == TensorType("float64", (5, None, 2))
        a = _data("float64", (2, 3, 5))
        np.testing.assert_array_equal(run([x], x.T, a), a.T)

    def test_transpose_of_vector_and_scalar(self):
        v, s = nt.dvector(), nt.dscalar()
        assert v.T.type == v.type and s.T.type == s.type
        a = np.arange(3.0)
        np.testing.assert_array_equal(run([v], v.T, a), a)

    @pytest.mark.parametrize("pattern, shape", [
        ((1, 0), (4, 3)),
        (("x", 0, 1), (1, 3, 4)),
        ((0, "x", 1), (3, 1, 4)),
        ((1, "x", 0, "x"), (4, 1, 3, 1)),
    ])
    def test_dimshuffle(self, pattern, shape):
        x = tensor("float32", (3, 4))
        y = x.dimshuffle(*pattern)
        assert y.type == TensorType("float32", shape)
        assert x.dimshuffle(list(pattern)).type == y.type
        a = _data("float32", (3, 4))
        out = run([x], y, a)
        assert out.shape == shape
        kept = [p for p in pattern if p != "x"]
        np.testing.assert_array_equal(out, a.transpose(kept).reshape(shape))

    def test_dimshuffle_drops_broadcastable_dims(self):
        x = nt.drow()
        y = x.dimshuffle(1)
        assert y.type == TensorType("float64", (None,))
        a = np.arange(4.0).reshape(1, 4)
        np.testing.assert_array_equal(run([x], y, a), a[0])

    def test_dimshuffle_cannot_drop_unknown_dims(self):
        with pytest.raises(ValueError, match="size 1"):
            nt.dmatrix().dimshuffle(1)

    @pytest.mark.parametrize("shape_args, numpy_shape", [
        (((6,),), (6,)), (((3, 2),), (3, 2)), ((2, 3), (2, 3)), (((-1, 2),), (-1, 2)),
        (((1, 6, 1),), (1, 6, 1)),
    ])
    def test_reshape(self, shape_args, numpy_shape):
        x = tensor("int64", (2, 3))
        y = x.reshape(*shape_args)
        a = np.arange(6).reshape(2, 3)
        expected = a.reshape(numpy_shape)
        assert y.ndim == expected.ndim and y.dtype == "int64"
        assert static_matches(y.type, expected)
        np.testing.assert_array_equal(run([x], y, a), expected)

    def test_reshape_with_symbolic_entries(self):
        x = nt.dmatrix("x")
        y = x.reshape((x.shape[1], x.shape[0]))
        a = _data("float64", (2, 5))
        np.testing.assert_array_equal(run([x], y, a), a.reshape(5, 2))

    def test_reshape_with_a_shape_vector(self):
        x = nt.dmatrix("x")
        a = _data("float64", (3, 4))
        y = x.reshape(x.T.shape)
        assert y.ndim == 2
        np.testing.assert_array_equal(run([x], y, a), a.reshape(4, 3))

    def test_reshape_with_one_scalar_entry(self):
        x = nt.dmatrix("x")
        n = nt.lscalar("n")
        a = _data("float64", (3, 4))
        assert x.reshape(np.int64(12)).type == TensorType("float64", (12,))
        f = nbgraph.function([x, n], x.reshape(n), linker="py")
        np.testing.assert_array_equal(f(a, 12), a.reshape(12))

    def test_reshape_wrong_size_at_run_time(self):
        x = nt.dvector("x")
        y = x.reshape((2, 3))
        with pytest.raises(ValueError):
            run([x], y, np.zeros(5))

    def test_flatten(self):
        x = nt.dtensor3()
        a = _data("float64", (2, 3, 4))
        np.testing.assert_array_equal(run([x], x.flatten(), a), a.ravel())


# -- reductions ------------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


class TestReductions:
    @pytest.mark.parametrize("method", REDUCTIONS)
    @pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 0, 1)])
    @pytest.mark.parametrize("keepdims", [False, True])
    def test_float(self, method, axis, keepdims):
        x = tensor("float64", (2, None, 4))
        a = _data("float64", (2, 3, 4))
        z = getattr(x, method)(axis=axis, keepdims=keepdims)
        expected = getattr(a, method)(axis=axis, keepdims=keepdims)
        assert z.dtype == expected.dtype.name
        assert z.ndim == expected.ndim
        assert static_matches(z.type, np.asarray(expected))
        np.testing.assert_allclose(run([x], z, a), expected, rtol=1e-12)

    @pytest.mark.parametrize("method", REDUCTIONS)
    @pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint32", "int64",
                                       "float32"])
    def test_dtypes_follow_numpy(self, method, dtype):
        x = tensor(dtype, (None, None))
        a = _data(dtype, (3, 4), positive=True)
        for axis in (None, 1):
            z = getattr(x, method)(axis=axis)
            expected = np.asarray(getattr(a, method)(axis=axis))
            assert z.dtype == expected.dtype.name, (method, dtype, axis)
            out = run([x], z, a)
            assert out.dtype == expected.dtype
            np.testing.assert_allclose(out, expected, rtol=1e-6)

    def test_positional_axis(self):
        x = nt.dmatrix()
        a = _data("float64", (3, 4))
        np.testing.assert_allclose(run([x], x.sum(0), a), a.sum(0))
        np.testing.assert_allclose(run([x], x.max(1, True), a), a.max(1, keepdims=True))

    def test_static_shapes_of_keepdims(self):
        x = tensor("float64", (2, None, 4))
        assert x.sum(axis=1, keepdims=True).type.shape == (2, 1, 4)
        assert x.sum(axis=(0, 2)).type.shape == (None,)
        assert x.max().type.shape == ()

    @pytest.mark.parametrize("axis", [3, -4, (0, 0), 1.0])
    def test_bad_axis(self, axis):
        x = nt.dtensor3()
        with pytest.raises((ValueError, TypeError)):
            x.sum(axis=axis)

    @pytest.mark.parametrize("dtype, acc", [
        ("int8", "float64"), ("float64", "float32"), ("int16", "int8"), ("int32", "int64"),
    ])
    def test_sum_dtype_argument_like_numpy(self, dtype, acc):
        x = tensor(dtype, (None, None))
        a = (np.arange(12).reshape(3, 4) * 11).astype(dtype)
        z = x.sum(axis=0, dtype=acc)
        expected = a.sum(axis=0, dtype=acc)
        assert z.dtype == expected.dtype.name
        out = run([x], z, a)
        assert out.dtype == expected.dtype
        np.testing.assert_allclose(out, expected, rtol=1e-6)

    def test_mean_with_unknown_sizes(self):
        x = nt.fmatrix()
        a = _data("float32", (5, 3))
        z = x.mean(axis=0)
        assert z.dtype == "float32"
        np.testing.assert_allclose(run([x], z, a), a.mean(axis=0), rtol=1e-6)


# -- dot, astype -------------------------------------------------------------------------

class TestDotAndCast:
    @pytest.mark.parametrize("sa, sb", [
        ((3, 4), (4, 5)), ((3, 4), (4,)), ((4,), (4, 5)), ((4,), (4,)),
    ])
    def test_dot(self, sa, sb):
        x = tensor("float64", (None,) * len(sa))
        y = tensor("float64", (None,) * len(sb))
        a, b = _data("float64", sa), _data("float64", sb)
        z = x.dot(y)
        expected = a.dot(b)
        assert z.ndim == np.ndim(expected) and z.dtype == "float64"
        np.testing.assert_allclose(run([x, y], z, a, b), expected)
        np.testing.assert_allclose(run([x, y], x @ y, a, b), a @ b)

    def test_dot_static_shape(self):
        x, y = tensor("float32", (3, None)), tensor("float32", (None, 5))
        assert x.dot(y).type == TensorType("float32", (3, 5))

    def test_dot_mixed_dtypes(self):
        x, y = tensor("int32", (None, None)), tensor("float32", (None, None))
        a = _data("int32", (2, 3))
        b = _data("float32", (3, 2))
        z = x.dot(y)
        assert z.dtype == np.dot(a, b).dtype.name
        np.testing.assert_allclose(run([x, y], z, a, b), np.dot(a, b), rtol=1e-6)

    @pytest.mark.parametrize("src, dst", [
        ("float64", "int32"), ("float32", "float64"), ("int64", "int8"), ("int32", "bool"),
        ("bool", "float32"), ("float64", "uint8"),
    ])
    def test_astype(self, src, dst):
        x = tensor(src, (None,))
        a = np.array([0, 1, 2, -3, 250, 1.7][: 6]).astype(src) if src != "bool" else \
            np.array([True, False, True])
        z = x.astype(dst)
        assert z.type == TensorType(dst, (None,))
        with np.errstate(all="ignore"):
            expected = a.astype(dst)
        out = run([x], z, a)
        assert out.dtype == np.dtype(dst)
        np.testing.assert_array_equal(out, expected)

    def test_astype_same_dtype_is_identity(self):
        x = nt.dvector()
        assert x.astype("float64") is x
        assert x.astype(np.float64) is x

    def test_astype_bad_dtype(self):
        with pytest.raises(TypeError, match="object"):
            nt.dvector().astype("object")


# -- basic indexing ------------------------------------------------------------------------

INDICES = [
    0, -1, 2, slice(None), slice(1, 3), slice(None, None, -1), slice(-1, 0, -2),
    slice(None, None, 2), slice(5, 1, -1), slice(10, 20), slice(-10, 2),
    (0, 1), (slice(None), 0), (-1, slice(None, None, -1)), (None,), (None, 0),
    (Ellipsis, 0), (0, Ellipsis), (Ellipsis, None), (slice(1, None), None, slice(None, 2)),
    (1, 2, 3), (Ellipsis,), (None, Ellipsis, None), (0, slice(None), -1),
    (slice(None, None, -1), slice(None, None, -1)),
]


class TestIndexing:
    @pytest.mark.parametrize("index", INDICES, ids=repr)
    @pytest.mark.parametrize("static", [True, False])
    def test_matches_numpy(self, index, static):
        shape = (4, 5, 6)
        x = tensor("float64", shape if static else (None,) * 3, "x")
        a = np.arange(np.prod(shape), dtype="float64").reshape(shape)
        z = x[index]
        expected = a[index]
        assert z.dtype == "float64"
        assert z.ndim == expected.ndim
        assert static_matches(z.type, expected), (z.type, expected.shape)
        if static:
            assert z.type.shape == expected.shape
        out = run([x], z, a)
        assert out.shape == expected.shape
        np.testing.assert_array_equal(out, expected)

    def test_symbolic_integer_index(self):
        x, i = nt.dvector("x"), nt.lscalar("i")
        a = np.arange(5.0)
        f = nbgraph.function([x, i], x[i], linker="py")
        assert f(a, 3) == 3.0 and f(a, -1) == 4.0

    def test_symbolic_slice_bounds(self):
        x, i, j = nt.dvector("x"), nt.iscalar("i"), nt.iscalar("j")
        a = np.arange(10.0)
        f = nbgraph.function([x, i, j], x[i:j:-1], linker="py")
        np.testing.assert_array_equal(f(a, 8, 2), a[8:2:-1])

    def test_out_of_range_index_at_run_time(self):
        x = nt.dvector("x")
        with pytest.raises(IndexError):
            run([x], x[7], np.arange(3.0))

    def test_static_out_of_range_index(self):
        x = tensor("float64", (3,))
        with pytest.raises(IndexError):
            x[5]

    def test_too_many_indices(self):
        with pytest.raises(IndexError):
            nt.dvector()[0, 0]

    def test_float_indices_are_refused(self):
        x = nt.dvector()
        with pytest.raises(IndexError):
            x[[0.5, 1.0]]
        with pytest.raises(TypeError):
            x[1.5]

    def test_zero_step(self):
        with pytest.raises(ValueError, match="step"):
            nt.dvector()[::0]


# -- constants -------------------------------------------------------------------------------

class TestConstant:
    def test_array_constant(self):
        c = constant(np.arange(6).reshape(2, 3))
        assert isinstance(c, TensorConstant)
        assert c.type == TensorType("int64", (2, 3))
        np.testing.assert_array_equal(c.data, np.arange(6).reshape(2, 3))

    def test_data_is_read_only_and_copied(self):
        a = np.arange(3.0)
        c = constant(a)
        with pytest.raises(ValueError):
            c.data[0] = 10.0
        a[0] = 10.0  # the caller's array stays writable
        assert a[0] == 10.0
        with pytest.raises(AttributeError):
            c.data = np.zeros(3)

    @pytest.mark.parametrize("value, dtype", [
        (2, "int64"), (2.0, "float64"), (True, "bool"), (-7, "int64"),
    ])
    def test_python_numbers_are_weak(self, value, dtype):
        c = constant(value)
        assert c.weak is True
        assert c.type == TensorType(dtype, ())

    @pytest.mark.parametrize("value", [
        np.float64(2.0), np.float32(2.0), np.int64(3), np.int8(3), np.bool_(True),
        np.array(2.0), [1.0, 2.0], (1, 2), np.arange(3),
    ], ids=repr)
    def test_everything_else_is_strong(self, value):
        assert constant(value).weak is False

    def test_explicit_dtype_is_strong(self):
        c = constant(2.0, dtype="float32")
        assert c.weak is False and c.dtype == "float32"

    def test_numpy_scalars_promote_like_numpy(self):
        x = nt.fvector("x")
        a = np.ones(3, dtype="float32")
        for scalar in (np.float64(2.0), np.int64(2), np.float32(2.0), 2.0, 2):
            z = x * scalar
            assert z.dtype == (a * scalar).dtype.name, repr(scalar)

    def test_ndim_padding(self):
        c = constant(3.0, ndim=2)
        assert c.type == TensorType("float64", (1, 1))
        with pytest.raises(ValueError, match="ndim"):
            constant(np.zeros((2, 2)), ndim=1)

    @pytest.mark.parametrize("value", ["abc", None, b"xy", object(), [[1], [1, 2]]])
    def test_bad_values(self, value):
        with pytest.raises(TypeError, match="constant"):
            constant(value)

    def test_variable_is_not_a_value(self):
        with pytest.raises(TypeError, match="Variable"):
            constant(nt.dvector("x"))

    def test_float16_stays_float16(self):
        assert constant(np.ones(2, dtype="float16")).dtype == "float16"

    def test_constant_in_a_graph(self):
        x = nt.dvector("x")
        c = constant(np.array([1.0, 2.0, 3.0]))
        a = np.array([3.0, 2.0, 1.0])
        np.testing.assert_array_equal(run([x], x * c, a), a * c.data)


class TestAsTensorVariable:
    def test_variable_passes_through(self):
        x = nt.dvector()
        assert as_tensor_variable(x) is x

    def test_values_become_constants(self):
        c = as_tensor_variable([[1, 2], [3, 4]])
        assert isinstance(c, TensorConstant)
        assert c.type == TensorType("int64", (2, 2))
        assert as_tensor_variable(1.5).weak

    def test_type_is_a_clear_error(self):
        with pytest.raises(TypeError) as info:
            as_tensor_variable(TensorType("float64", (None,)))
        text = str(info.value)
        assert "Type" in text and "TensorType(float64, (None,))" in text
        assert "call it" in text

    def test_ndim_check(self):
        with pytest.raises(ValueError, match="dimensions"):
            as_tensor_variable(nt.dmatrix("m"), ndim=1)

    def test_non_tensor_variable(self):
        from nbgraph.core.type import generic

        with pytest.raises(TypeError, match="tensor"):
            as_tensor_variable(generic("g"))

    def test_list_of_variables_is_stacked(self):
        x, y = nt.dscalar("x"), nt.dscalar("y")
        z = as_tensor_variable([x, y, 3.0])
        assert z.ndim == 1
        np.testing.assert_array_equal(run([x, y], z, 1.0, 2.0), [1.0, 2.0, 3.0])


# -- shared variables ---------------------------------------------------------------------------

class TestShared:
    def test_type_from_the_value(self):
        s = shared(np.zeros((2, 3), dtype="float32"), name="w")
        assert isinstance(s, SharedVariable)
        assert s.type == TensorType("float32", (None, None))
        assert s.name == "w"
        assert nbgraph.shared is shared

    def test_static_shape_on_request(self):
        s = shared(np.zeros((2, 3)), shape=(2, None))
        assert s.type.shape == (2, None)
        with pytest.raises(TypeError):
            shared(np.zeros((2, 3)), shape=(3, None))

    def test_python_values(self):
        assert shared(1.5).type == TensorType("float64", ())
        assert shared([1, 2]).type == TensorType("int64", (None,))

    def test_non_numeric(self):
        with pytest.raises(TypeError, match="numeric"):
            shared(["a", "b"])

    def test_constructor_copies(self):
        a = np.arange(3.0)
        s = shared(a)
        a[0] = 99.0
        assert s.get_value()[0] == 0.0

    def test_strict_constructor_checks_and_copies(self):
        a = np.arange(3.0)
        s = shared(a, strict=True)
        a[0] = 99.0
        assert s.get_value()[0] == 0.0
        with pytest.raises(TypeError, match="strict"):
            SharedVariable(TensorType("float64", (None,)), [1.0, 2.0], strict=True)
        with pytest.raises(TypeError, match="float32"):
            SharedVariable(TensorType("float64", (None,)), np.zeros(2, "float32"),
                           strict=True)

    def test_allow_downcast_in_the_constructor(self):
        t = TensorType("float32", (None,))
        with pytest.raises(TypeError, match="allow_downcast"):
            SharedVariable(t, np.array([0.1, 0.2]))
        s = SharedVariable(t, np.array([0.1, 0.2]), allow_downcast=True)
        np.testing.assert_array_equal(s.get_value(), np.array([0.1, 0.2], dtype="float32"))

    def test_get_value_copies_unless_borrowed(self):
        s = shared(np.arange(3.0))
        v = s.get_value()
        v[0] = 99.0
        assert s.get_value()[0] == 0.0
        b = s.get_value(borrow=True)
        assert b is s.get_value(borrow=True)
        b[0] = 42.0
        assert s.get_value()[0] == 42.0

    def test_set_value_copies_unless_borrowed(self):
        s = shared(np.zeros(3))
        new = np.ones(3)
        s.set_value(new)
        new[0] = 5.0
        np.testing.assert_array_equal(s.get_value(), np.ones(3))
        s.set_value(new, borrow=True)
        assert s.get_value(borrow=True) is new

    def test_set_value_checks_the_type(self):
        s = shared(np.zeros((2, 2), dtype="float32"))
        with pytest.raises(TypeError, match="expects ndim 2"):
            s.set_value(np.zeros(3, dtype="float32"))
        with pytest.raises(TypeError, match="allow_downcast"):
            s.set_value(np.zeros((2, 2)))  # float64 array into float32
        with pytest.raises(TypeError):
            s.set_value("abc")
        np.testing.assert_array_equal(s.get_value(), np.zeros((2, 2), dtype="float32"))

    def test_set_value_converts_safely(self):
        s = shared(np.zeros(2))
        s.set_value([1, 2])
        v = s.get_value()
        assert v.dtype == np.float64
        np.testing.assert_array_equal(v, [1.0, 2.0])
        s.set_value(np.array([3, 4], dtype="int8"))
        assert s.get_value().dtype == np.float64

    def test_static_shape_enforced_on_set(self):
        s = shared(np.zeros((2, 3)), shape=(2, 3))
        with pytest.raises(TypeError, match="dimension 1"):
            s.set_value(np.zeros((2, 4)))

    def test_functions_read_the_current_value(self):
        s = shared(np.array([1.0, 2.0]), name="s")
        x = nt.dvector("x")
        f = nbgraph.function([x], x + s, linker="py")
        np.testing.assert_array_equal(f(np.zeros(2)), [1.0, 2.0])
        s.set_value(np.array([10.0, 20.0]))
        np.testing.assert_array_equal(f(np.zeros(2)), [10.0, 20.0])

    def test_updates(self):
        s = shared(np.int64(0), name="count")
        f = nbgraph.function([], s, updates={s: s + 1}, linker="py")
        assert [int(f()) for _ in range(3)] == [0, 1, 2]
        assert s.get_value() == 3

    def test_shared_behaves_like_a_variable(self):
        s = shared(np.arange(4.0))
        z = (s * 2).sum()
        assert z.dtype == "float64"
        assert float(run([], z)) == 12.0
        assert {s: 1}[s] == 1


# -- eval ---------------------------------------------------------------------------------------

class TestEval:
    # eval compiles with config.linker; the Python linker keeps these tests about variables
    def test_eval_with_variables_and_names(self):
        x, y = nt.dvector("x"), nt.dvector("y")
        z = x * y + 1
        a, b = np.arange(3.0), np.ones(3) * 2
        with nbgraph.config.change(linker="py"):
            np.testing.assert_array_equal(z.eval({x: a, y: b}), a * b + 1)
            np.testing.assert_array_equal(z.eval({"x": a, "y": b}), a * b + 1)

    def test_eval_constant_expression(self):
        z = constant(np.arange(3)) * 2
        with nbgraph.config.change(linker="py"):
            np.testing.assert_array_equal(z.eval(), np.arange(3) * 2)
