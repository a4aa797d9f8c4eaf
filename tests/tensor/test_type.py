"""nbgraph.tensor.type.TensorType: construction, equality, filter, value helpers, relations.

NumPy is the oracle throughout: what filter accepts and returns is compared
with the arrays NumPy builds for the same data.
"""

import numpy as np
import pytest

from nbgraph.core.type import Type
from nbgraph.tensor.type import ALL_DTYPES, TensorType, normalize_dtype
from nbgraph.tensor.variable import TensorVariable

SUPPORTED = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "float32", "float64", "float16", "complex64", "complex128"]


# -- construction ------------------------------------------------------------

class TestConstruction:
    def test_supported_dtypes_are_the_spec_list(self):
        assert sorted(ALL_DTYPES) == sorted(SUPPORTED)

    @pytest.mark.parametrize("dtype", SUPPORTED)
    def test_every_supported_dtype(self, dtype):
        t = TensorType(dtype, (None, 3))
        assert t.dtype == dtype
        assert t.numpy_dtype == np.dtype(dtype)
        assert t.ndim == 2 and t.shape == (None, 3)

    @pytest.mark.parametrize("spelling, name", [
        (np.float32, "float32"), (np.dtype("int16"), "int16"), ("f8", "float64"),
        ("i1", "int8"), (bool, "bool"), ("u8", "uint64"),
    ])
    def test_dtype_spellings_are_normalised(self, spelling, name):
        assert TensorType(spelling, ()).dtype == name

    def test_floatx_dtype_follows_config(self):
        import nbgraph

        with nbgraph.config.change(floatX="float32"):
            assert TensorType("floatX", ()).dtype == "float32"
        with nbgraph.config.change(floatX="float64"):
            assert TensorType("floatX", ()).dtype == "float64"

    def test_shape_entries(self):
        t = TensorType("float64", (2, None, 1, 0))
        assert t.shape == (2, None, 1, 0)
        assert t.broadcastable == (False, False, True, False)
        assert t.ndim == 4

    def test_numpy_integer_shape_entries_become_python_ints(self):
        t = TensorType("float64", (np.int64(2), np.int32(1)))
        assert t.shape == (2, 1)
        assert all(type(s) is int for s in t.shape)

    def test_scalar_type_has_empty_shape(self):
        t = TensorType("int32", ())
        assert t.ndim == 0 and t.shape == () and t.broadcastable == ()

    def test_seed_broadcastable_construction(self):
        t = TensorType(dtype="float64", broadcastable=(False, False))
        assert t.shape == (None, None)
        assert t.broadcastable == (False, False)
        assert t == TensorType("float64", (None, None))

    def test_broadcastable_true_means_size_one(self):
        t = TensorType("float32", broadcastable=(True, False))
        assert t.shape == (1, None)
        assert t.broadcastable == (True, False)

    def test_shape_and_broadcastable_that_agree(self):
        t = TensorType("float64", shape=(1, 3), broadcastable=(True, False))
        assert t.shape == (1, 3)

    @pytest.mark.parametrize("shape, bcast", [
        ((2, None), (True, False)),     # size 2 cannot be broadcastable
        ((None, None), (False,)),       # lengths differ
        ((1,), (False,)),               # static 1 is broadcastable, contradicting False
    ])
    def test_shape_and_broadcastable_that_disagree(self, shape, bcast):
        with pytest.raises(ValueError, match="disagree"):
            TensorType("float64", shape=shape, broadcastable=bcast)

    def test_missing_shape(self):
        with pytest.raises(TypeError, match="shape"):
            TensorType("float64")

    @pytest.mark.parametrize("dtype", ["float128", "complex256", "object", "U3"])
    def test_unsupported_dtype_is_named(self, dtype):
        with pytest.raises(TypeError) as info:
            TensorType(dtype, ())
        name = np.dtype(dtype).name
        assert name in str(info.value)
        assert "float64" in str(info.value)  # the message lists what is supported

    @pytest.mark.parametrize("dtype", ["flot64", "not a dtype"])
    def test_unknown_dtype_is_named(self, dtype):
        with pytest.raises(TypeError, match=dtype):
            TensorType(dtype, ())

    @pytest.mark.parametrize("entry", [-1, 2.0, "3", object(), [2]])
    def test_bad_shape_entry_is_named(self, entry):
        # a negative size is a wrong value (ValueError), the others wrong types (issue 21, 15)
        with pytest.raises(ValueError if entry == -1 else TypeError) as info:
            TensorType("float64", (3, entry))
        text = str(info.value)
        assert "entry 1" in text
        assert repr(entry) in text

    def test_shape_that_is_not_iterable(self):
        with pytest.raises(TypeError, match="shape"):
            TensorType("float64", 2.5)

    def test_int_shape_means_one_dimension(self):
        assert TensorType("float64", 4).shape == (4,)


# -- printing, equality, hashing, clone ---------------------------------------

class TestIdentity:
    @pytest.mark.parametrize("dtype, shape, text", [
        ("float64", (2, None), "TensorType(float64, (2, None))"),
        ("float64", (2, 1), "TensorType(float64, (2, 1))"),
        ("int8", (), "TensorType(int8, ())"),
        ("float32", (None,), "TensorType(float32, (None,))"),
        ("bool", (None, None, 3), "TensorType(bool, (None, None, 3))"),
    ])
    def test_repr_and_str(self, dtype, shape, text):
        t = TensorType(dtype, shape)
        assert repr(t) == text
        assert str(t) == text

    def test_name_changes_only_printing(self):
        named = TensorType("float64", (2, None), name="pair")
        plain = TensorType("float64", (2, None))
        assert repr(named) == "pair"
        assert named == plain and hash(named) == hash(plain)

    def test_eq_and_hash_by_dtype_and_shape(self):
        a = TensorType("float64", (2, None))
        b = TensorType(np.float64, [2, None])
        assert a == b and not (a != b)
        assert hash(a) == hash(b)
        assert len({a, b}) == 1
        assert a != TensorType("float32", (2, None))
        assert a != TensorType("float64", (2, 1))
        assert a != TensorType("float64", (None, None))
        assert a != TensorType("float64", (2, None, None))
        assert a != "TensorType(float64, (2, None))"

    def test_types_key_dicts(self):
        table = {TensorType("int8", (None,)): "a", TensorType("int8", (1,)): "b"}
        assert table[TensorType("int8", (None,))] == "a"
        assert table[TensorType("int8", broadcastable=(True,))] == "b"

    def test_clone_without_changes_is_equal(self):
        t = TensorType("float32", (2, None))
        c = t.clone()
        assert c == t and c is not t

    def test_clone_changes(self):
        t = TensorType("float32", (2, None))
        assert t.clone(dtype="int64") == TensorType("int64", (2, None))
        assert t.clone(shape=(None, 1, 5)) == TensorType("float32", (None, 1, 5))
        assert t.clone(broadcastable=(True, False)) == TensorType("float32", (1, None))
        # the original is untouched
        assert t == TensorType("float32", (2, None))

    def test_clone_with_shape_and_broadcastable(self):
        t = TensorType("float32", (2, None))
        assert t.clone(shape=(1, 4), broadcastable=(True, False)) == \
            TensorType("float32", (1, 4))
        with pytest.raises(ValueError, match="disagree"):
            t.clone(shape=(1, None), broadcastable=(False, False))

    def test_clone_name(self):
        t = TensorType("float32", (2, None))
        assert repr(t.clone(name="pair")) == "pair"
        assert t.clone(name="pair") == t

    def test_clone_validates(self):
        with pytest.raises(TypeError, match="object"):
            TensorType("float32", ()).clone(dtype="object")

    def test_call_makes_a_tensor_variable(self):
        t = TensorType("float64", (2, None))
        v = t("v")
        assert isinstance(v, TensorVariable)
        assert v.type is t and v.name == "v" and v.owner is None
        anonymous = t()
        assert anonymous.name is None
        assert repr(anonymous) == "<TensorType(float64, (2, None))>"
        assert t.make_variable("w").name == "w"

    def test_is_a_type(self):
        assert isinstance(TensorType("float64", ()), Type)

    def test_normalize_dtype(self):
        assert normalize_dtype("f4") == "float32"
        with pytest.raises(TypeError, match="uncommon"):
            normalize_dtype("U3", what="uncommon")


# -- filter -------------------------------------------------------------------

class TestFilterStrict:
    def test_exact_ndarray_is_returned_as_is(self):
        t = TensorType("float64", (2, None))
        a = np.zeros((2, 3))
        assert t.filter(a, strict=True) is a

    def test_views_are_accepted(self):
        t = TensorType("float64", (None, None))
        a = np.arange(12.0).reshape(3, 4)[:, ::2].T
        assert t.filter(a, strict=True) is a

    @pytest.mark.parametrize("value", [[1.0, 2.0], 1.0, np.float64(1.0), (1.0,)])
    def test_non_ndarray_is_refused(self, value):
        t = TensorType("float64", (None,) * np.ndim(value))
        with pytest.raises(TypeError, match="strict"):
            t.filter(value, strict=True)

    def test_wrong_dtype_is_refused_even_for_an_upcast(self):
        t = TensorType("float64", (None,))
        with pytest.raises(TypeError) as info:
            t.filter(np.zeros(3, dtype="float32"), strict=True)
        assert "float64" in str(info.value) and "float32" in str(info.value)

    def test_strict_still_checks_the_shape(self):
        t = TensorType("float64", (2,))
        with pytest.raises(TypeError, match="dimension 0"):
            t.filter(np.zeros(3), strict=True)

    def test_is_valid_value_is_strict_filter(self):
        t = TensorType("int32", (None,))
        assert t.is_valid_value(np.zeros(2, dtype="int32"))
        assert not t.is_valid_value(np.zeros(2, dtype="int64"))
        assert not t.is_valid_value([1, 2])
        assert not t.is_valid_value(np.zeros((2, 2), dtype="int32"))


class TestFilterNonStrict:
    @pytest.mark.parametrize("src, dst", [
        ("bool", "int8"), ("int8", "int16"), ("int16", "float32"), ("int32", "float64"),
        ("uint8", "int16"), ("uint32", "int64"), ("float32", "float64"), ("uint16", "uint64"),
        ("int8", "float32"), ("bool", "float64"),
    ])
    def test_safe_upcast_of_arrays(self, src, dst):
        a = np.array([0, 1, 1, 0], dtype=src)
        out = TensorType(dst, (None,)).filter(a)
        assert type(out) is np.ndarray and out.dtype == np.dtype(dst)
        np.testing.assert_array_equal(out, a.astype(dst))
        assert np.can_cast(src, dst, "safe")  # the oracle agrees this is an upcast

    @pytest.mark.parametrize("src, dst", [
        ("float64", "float32"), ("int64", "int32"), ("int16", "int8"), ("int8", "uint8"),
        ("uint8", "int8"), ("float32", "int64"), ("int64", "float32"), ("uint64", "int64"),
        ("int8", "bool"), ("float64", "int64"),
    ])
    @pytest.mark.parametrize("allow_downcast", [None, False])
    def test_downcast_of_arrays_is_refused(self, src, dst, allow_downcast):
        assert not np.can_cast(src, dst, "safe")
        a = np.zeros(3, dtype=src)  # even when the values would fit
        with pytest.raises(TypeError) as info:
            TensorType(dst, (None,)).filter(a, allow_downcast=allow_downcast)
        assert "allow_downcast" in str(info.value)
        assert src in str(info.value)

    @pytest.mark.parametrize("src, dst", [
        ("float64", "float32"), ("int64", "int8"), ("float64", "int32"), ("int16", "bool"),
    ])
    def test_allow_downcast_casts_like_numpy(self, src, dst):
        a = np.array([0.1, 1.7, 300.0, -2.0]).astype(src)
        with np.errstate(all="ignore"):
            expected = a.astype(dst)
            out = TensorType(dst, (None,)).filter(a, allow_downcast=True)
        assert out.dtype == np.dtype(dst)
        np.testing.assert_array_equal(out, expected)

    def test_python_float_may_be_downcast_to_float32_when_allow_downcast_is_none(self):
        t = TensorType("float32", ())
        out = t.filter(0.1)
        assert out.dtype == np.float32 and out.shape == ()
        assert out == np.float32(0.1)

    def test_python_float_downcast_refused_with_allow_downcast_false(self):
        with pytest.raises(TypeError, match="allow_downcast"):
            TensorType("float32", ()).filter(0.1, allow_downcast=False)

    def test_exact_python_float_into_float32_with_false(self):
        out = TensorType("float32", ()).filter(0.5, allow_downcast=False)
        assert out.dtype == np.float32 and out == 0.5

    def test_numpy_float64_scalar_is_not_a_python_float(self):
        # only Python floats get the None exception; NumPy scalars follow NumPy casting
        with pytest.raises(TypeError, match="allow_downcast"):
            TensorType("float32", ()).filter(np.float64(0.1))

    def test_list_of_inexact_floats_is_not_a_python_float(self):
        with pytest.raises(TypeError, match="allow_downcast"):
            TensorType("float32", (None,)).filter([0.1, 0.2])
        out = TensorType("float32", (None,)).filter([0.1, 0.2], allow_downcast=True)
        np.testing.assert_array_equal(out, np.array([0.1, 0.2], dtype="float32"))

    def test_python_float_is_never_rounded_into_an_int(self):
        with pytest.raises(TypeError, match="allow_downcast"):
            TensorType("int32", ()).filter(1.5)

    @pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "float32", "float64"])
    def test_python_ints_that_fit(self, dtype):
        out = TensorType(dtype, ()).filter(7)
        assert out.dtype == np.dtype(dtype) and out == 7

    @pytest.mark.parametrize("dtype, value", [
        ("int8", 300), ("int8", -129), ("uint8", -1), ("uint32", 2 ** 32),
        ("int64", 2 ** 63), ("bool", 2), ("float64", 2 ** 53 + 1), ("float32", 2 ** 24 + 1),
    ])
    def test_python_ints_that_do_not_fit(self, dtype, value):
        with pytest.raises(TypeError) as info:
            TensorType(dtype, ()).filter(value)
        assert dtype in str(info.value)

    def test_huge_python_int_beyond_any_dtype(self):
        with pytest.raises(TypeError, match="int64"):
            TensorType("int64", ()).filter(2 ** 70)

    def test_uint64_holds_python_ints_above_int64(self):
        out = TensorType("uint64", ()).filter(2 ** 64 - 1)
        assert out.dtype == np.uint64 and int(out) == 2 ** 64 - 1

    def test_integral_python_float_into_int(self):
        out = TensorType("int16", ()).filter(3.0)
        assert out.dtype == np.int16 and out == 3

    def test_python_bool(self):
        out = TensorType("bool", ()).filter(True)
        assert out.dtype == np.bool_ and bool(out) is True
        out = TensorType("float64", ()).filter(True)
        assert out.dtype == np.float64 and out == 1.0

    def test_nested_lists_become_arrays(self):
        t = TensorType("float64", (2, None))
        data = [[1, 2, 3], [4, 5, 6]]
        out = t.filter(data)
        assert type(out) is np.ndarray and out.dtype == np.float64
        np.testing.assert_array_equal(out, np.array(data, dtype="float64"))

    def test_tuples_become_arrays(self):
        out = TensorType("int32", (None,)).filter((1, 2, 3))
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, [1, 2, 3])

    def test_same_dtype_array_is_not_copied(self):
        a = np.ones(3, dtype="int16")
        assert TensorType("int16", (None,)).filter(a) is a

    def test_numpy_scalar_of_the_right_dtype(self):
        out = TensorType("float32", ()).filter(np.float32(2.5))
        assert type(out) is np.ndarray and out.dtype == np.float32 and out == 2.5

    def test_nan_and_inf_python_floats(self):
        out = TensorType("float32", (None,)).filter(np.array([np.nan, np.inf], "float32"))
        assert np.isnan(out[0]) and out[1] == np.inf
        with pytest.raises(TypeError):
            TensorType("int32", ()).filter(float("nan"))


class TestFilterShapeChecks:
    @pytest.mark.parametrize("value", [np.zeros(3), np.zeros((2, 2, 2)), 1.0, [[[1.0]]]])
    def test_ndim_mismatch_names_expected_and_received(self, value):
        t = TensorType("float64", (None, None))
        with pytest.raises(TypeError) as info:
            t.filter(value)
        text = str(info.value)
        assert "expects ndim 2" in text
        assert "with ndim %d" % np.ndim(value) in text
        assert "TensorType(float64, (None, None))" in text

    def test_static_dim_mismatch_names_expected_and_received(self):
        t = TensorType("float64", (2, None))
        with pytest.raises(TypeError) as info:
            t.filter(np.zeros((3, 5)))
        text = str(info.value)
        assert "size 2" in text and "dimension 0" in text and "(3, 5)" in text

    def test_static_one_requires_one(self):
        t = TensorType("float64", (None, 1))
        assert t.filter(np.zeros((4, 1))).shape == (4, 1)
        with pytest.raises(TypeError, match="dimension 1"):
            t.filter(np.zeros((4, 2)))

    def test_static_zero(self):
        t = TensorType("float64", (0,))
        assert t.filter(np.zeros(0)).shape == (0,)
        with pytest.raises(TypeError):
            t.filter(np.zeros(1))

    def test_unknown_dims_accept_any_size(self):
        t = TensorType("int64", (None, 3))
        for n in (0, 1, 7):
            assert t.filter(np.zeros((n, 3), dtype="int64")).shape == (n, 3)


class TestFilterNonArrays:
    @pytest.mark.parametrize("value, what", [
        ("abc", "str"), (None, "NoneType"), (object(), "object"), ({1: 2}, "dict"),
        (1 + 2j, "complex"),
    ])
    def test_non_numeric_objects_are_named(self, value, what):
        with pytest.raises(TypeError) as info:
            TensorType("float64", ()).filter(value)
        assert what in str(info.value)

    def test_ragged_list(self):
        with pytest.raises(TypeError, match="list"):
            TensorType("float64", (None, None)).filter([[1, 2], [3]])

    def test_symbolic_variable_is_not_data(self):
        x = TensorType("float64", (None,))("x")
        with pytest.raises(TypeError, match="TensorVariable"):
            TensorType("float64", (None,)).filter(x)


# -- values_eq / values_eq_approx ---------------------------------------------

class TestValuesEq:
    t64 = TensorType("float64", (None,))
    t32 = TensorType("float32", (None,))

    def test_values_eq_exact(self):
        a = np.array([1.0, 2.0, 3.0])
        assert self.t64.values_eq(a, a.copy())
        assert not self.t64.values_eq(a, a + 1e-12)

    def test_values_eq_nan_equals_nan(self):
        a = np.array([np.nan, 1.0])
        assert self.t64.values_eq(a, a.copy())

    def test_values_eq_shape_and_dtype(self):
        assert not self.t64.values_eq(np.zeros(3), np.zeros(4))
        assert not self.t64.values_eq(np.zeros(3), np.zeros((3, 1)))
        assert not self.t64.values_eq(np.zeros(3), np.zeros(3, dtype="float32"))

    def test_values_eq_ints(self):
        t = TensorType("int32", (None,))
        a = np.array([1, 2], dtype="int32")
        assert t.values_eq(a, a.copy())
        assert not t.values_eq(a, a + 1)

    def test_approx_float64_tolerance(self):
        a = np.array([1.0, 1000.0])
        assert self.t64.values_eq_approx(a, a * (1 + 1e-9))
        assert not self.t64.values_eq_approx(a, a * (1 + 1e-5))

    def test_approx_float32_is_looser(self):
        a = np.array([1.0, 1000.0], dtype="float32")
        b = a * np.float32(1 + 3e-5)
        assert self.t32.values_eq_approx(a, b)
        assert not self.t64.values_eq_approx(a.astype("float64"), b.astype("float64"))
        assert not self.t32.values_eq_approx(a, a * np.float32(1.01))

    def test_approx_explicit_tolerance(self):
        a = np.array([1.0])
        assert self.t64.values_eq_approx(a, a + 0.05, rtol=0.1)
        assert not self.t64.values_eq_approx(a, a + 0.05)

    def test_approx_nan(self):
        a = np.array([np.nan, 1.0])
        assert self.t64.values_eq_approx(a, a.copy())
        assert not self.t64.values_eq_approx(a, np.array([1.0, 1.0]))
        assert not self.t64.values_eq_approx(np.array([1.0, 1.0]), a)

    def test_approx_inf_signs(self):
        pos, neg = np.array([np.inf]), np.array([-np.inf])
        assert self.t64.values_eq_approx(pos, pos.copy())
        assert self.t64.values_eq_approx(neg, neg.copy())
        assert not self.t64.values_eq_approx(pos, neg)
        assert not self.t64.values_eq_approx(pos, np.array([1e308]))

    def test_approx_shape_mismatch_is_false_not_broadcast(self):
        assert not self.t64.values_eq_approx(np.ones(3), np.ones(1))
        assert not self.t64.values_eq_approx(np.ones((2, 3)), np.ones(3))

    def test_approx_integer_type_is_exact(self):
        t = TensorType("int64", (None,))
        assert t.values_eq_approx(np.array([5]), np.array([5]))
        assert not t.values_eq_approx(np.array([5]), np.array([6]))


# -- memory and sizes -----------------------------------------------------------

class TestMemory:
    t = TensorType("float64", (None, None))

    def test_views_share_memory(self):
        a = np.arange(12.0).reshape(3, 4)
        assert self.t.may_share_memory(a, a)
        assert self.t.may_share_memory(a, a[1:])
        assert self.t.may_share_memory(a, a.T)
        assert self.t.may_share_memory(a, a.reshape(4, 3))

    def test_copies_do_not(self):
        a = np.arange(12.0).reshape(3, 4)
        assert not self.t.may_share_memory(a, a.copy())
        assert not self.t.may_share_memory(a, np.arange(12.0))

    def test_non_arrays_do_not(self):
        a = np.arange(3.0)
        assert self.t.may_share_memory(a, 1.0) is False
        assert self.t.may_share_memory(None, a) is False

    @pytest.mark.parametrize("dtype", SUPPORTED)
    @pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 5), (4, 1, 3)])
    def test_size_matches_nbytes(self, dtype, shape):
        t = TensorType(dtype, (None,) * len(shape))
        a = np.zeros(shape, dtype=dtype)
        info = t.get_shape_info(a)
        assert info == shape
        assert t.get_size(info) == a.nbytes


# -- relations ---------------------------------------------------------------

class TestRelations:
    def test_in_same_class_is_dtype_and_broadcast_pattern(self):
        t = TensorType("float64", (2, None))
        assert t.in_same_class(TensorType("float64", (None, None)))
        assert t.in_same_class(TensorType("float64", (5, 7)))
        assert not t.in_same_class(TensorType("float64", (2, 1)))
        assert not t.in_same_class(TensorType("float32", (2, None)))
        assert not t.in_same_class(TensorType("float64", (2, None, None)))
        assert not t.in_same_class("float64")

    def test_is_super(self):
        t = TensorType("float64", (2, None))
        assert t.is_super(TensorType("float64", (2, 1)))
        assert t.is_super(TensorType("float64", (2, 9)))
        assert t.is_super(t)
        assert not t.is_super(TensorType("float64", (None, None)))
        assert not t.is_super(TensorType("float64", (3, 1)))
        assert not t.is_super(TensorType("float32", (2, 1)))
        assert not t.is_super(TensorType("float64", (2,)))
        assert TensorType("float64", (None, None)).is_super(t)

    def test_is_super_is_a_partial_order(self):
        a = TensorType("int8", (None, None))
        b = TensorType("int8", (2, None))
        c = TensorType("int8", (2, 1))
        d = TensorType("int8", (None, 1))
        for x in (a, b, c, d):
            assert x.is_super(x)
        assert a.is_super(b) and b.is_super(c) and a.is_super(c)
        assert not b.is_super(a) and not c.is_super(b)
        # b and d are incomparable; both contain c
        assert not b.is_super(d) and not d.is_super(b)
        assert b.is_super(c) and d.is_super(c)

    def test_incompatibility_text(self):
        t = TensorType("float64", (2, 1))
        assert t.incompatibility(TensorType("float64", (2, 1))) is None
        assert t.incompatibility(TensorType("float64", (None, None))) is None
        assert t.incompatibility(TensorType("float32", (2, 1))) == \
            "dtype float32 differs from float64"
        assert t.incompatibility(TensorType("float64", (2,))) == "ndim 1 instead of 2"
        assert t.incompatibility(TensorType("float64", (3, 1))) == \
            "dimension 0 has static size 3, not 2"
        assert "is not a TensorType" in t.incompatibility("thing")

    def test_filter_variable_of_a_type_is_a_clear_error(self):
        t = TensorType("float64", (None,))
        with pytest.raises(TypeError, match="Type"):
            t.filter_variable(TensorType("float64", (None,)))

    def test_filter_variable_of_a_value_makes_a_constant(self):
        t = TensorType("float64", (2,))
        c = t.filter_variable([1, 2])
        assert c.type == t
        np.testing.assert_array_equal(c.data, [1.0, 2.0])

    def test_filter_variable_refuses_other_dtypes(self):
        t = TensorType("float64", (None,))
        v = TensorType("float32", (None,))("v32")
        with pytest.raises(TypeError) as info:
            t.filter_variable(v)
        text = str(info.value)
        assert "v32" in text and "float32" in text and "float64" in text

    def test_filter_variable_refuses_other_ndim(self):
        t = TensorType("float64", (None,))
        v = TensorType("float64", (None, None))("m")
        with pytest.raises(TypeError, match="ndim 2 instead of 1"):
            t.filter_variable(v)

    def test_filter_variable_equal_type(self):
        t = TensorType("float64", (None,))
        v = TensorType("float64", (None,))("v")
        assert t.filter_variable(v) is v

    def test_no_conversion_when_not_allowed(self):
        t = TensorType("float64", (2,))
        v = TensorType("float64", (None,))("v")
        with pytest.raises(TypeError, match="v"):
            t.filter_variable(v, allow_convert=False)
