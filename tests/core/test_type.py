"""nbgraph.core.type: the Type contract, told through the seed's DoubleType example."""

import cffi
import pytest

from core_toys import BoundedType, DoubleType, Narrow, double
from nbgraph.core import (
    CDataType,
    CLinkerType,
    Constant,
    Generic,
    MethodNotDefined,
    NarrowingTrace,
    SingletonType,
    Type,
    Variable,
    generic,
)


# -- filter: the seed's strict / non-strict / allow_downcast rules ----------

class TestDoubleTypeFilter:
    def test_strict_returns_the_float_itself(self):
        value = 2.5
        assert double.filter(value, strict=True) is value

    @pytest.mark.parametrize("value", [3, "3.0", None, True])
    def test_strict_refuses_anything_but_a_float(self, value):
        with pytest.raises(TypeError, match="expected a float"):
            double.filter(value, strict=True)

    def test_non_strict_converts_an_int_that_fits(self):
        result = double.filter(3)
        assert result == 3.0 and isinstance(result, float)

    @pytest.mark.parametrize("allow_downcast", [None, False])
    def test_precision_loss_refused_unless_downcast_allowed(self, allow_downcast):
        big = 2 ** 53 + 1  # not representable as a float
        with pytest.raises(TypeError, match="allow_downcast"):
            double.filter(big, allow_downcast=allow_downcast)

    def test_allow_downcast_accepts_precision_loss(self):
        big = 2 ** 53 + 1
        assert double.filter(big, allow_downcast=True) == float(big)

    def test_none_behaves_like_false(self):
        assert double.filter(7, allow_downcast=None) == double.filter(7, allow_downcast=False)

    def test_filter_inplace_defaults_to_filter(self):
        assert double.filter_inplace(4, storage=1.0) == 4.0
        with pytest.raises(TypeError):
            double.filter_inplace(4, storage=1.0, strict=True)

    def test_filter_is_abstract_in_the_base_class(self):
        with pytest.raises(MethodNotDefined, match="filter"):
            Type().filter(1)


# -- values ---------------------------------------------------------------

class TestValues:
    def test_values_eq_default_is_equality(self):
        assert double.values_eq(1.0, 1.0)
        assert not double.values_eq(1.0, 1.0 + 1e-12)

    def test_values_eq_approx_uses_the_tolerance(self):
        # the seed's own example: a + a + ... + a differs from 6 * a in the last bits
        a = 0.1
        six_adds = a + a + a + a + a + a
        assert six_adds != 6 * a
        assert double.values_eq_approx(six_adds, 6 * a)
        assert double.values_eq_approx(1.0, 1.00001)          # relative error 5e-6
        assert not double.values_eq_approx(1.0, 1.001)        # relative error 5e-4
        assert double.values_eq_approx(1.0, 1.001, tolerance=1e-2)

    def test_values_eq_approx_default_falls_back_to_values_eq(self):
        assert generic.values_eq_approx([1, 2], [1, 2])
        assert not generic.values_eq_approx([1, 2], [1, 3])

    def test_is_valid_value_is_strict_filter(self):
        assert double.is_valid_value(1.5)
        assert not double.is_valid_value(1)
        assert not double.is_valid_value("x")

    def test_value_validity_msg_explains(self):
        assert "expected a float" in double.value_validity_msg(1)
        assert "valid" in double.value_validity_msg(1.5)

    def test_may_share_memory_default_is_identity(self):
        a = [1.0]
        assert double.may_share_memory(a, a)
        assert not double.may_share_memory(a, [1.0])

    def test_shape_info_and_size(self):
        assert double.get_shape_info(2.0) == 2.0
        with pytest.raises(MethodNotDefined):
            double.get_size(2.0)


# -- equality and the seed's three remedies ---------------------------------

class TestTypeEquality:
    def test_two_instances_are_unequal_by_default(self):
        double1 = DoubleType()
        double2 = DoubleType()
        assert double1 == double1
        assert double1 != double2
        assert not double1 == double2
        assert len({double1, double2}) == 2  # identity hash too

    def test_remedy_1_define_eq_and_hash(self):
        class EqDoubleType(DoubleType):
            def __eq__(self, other):
                return type(self) is type(other)

            def __hash__(self):
                return hash(type(self))

        assert EqDoubleType() == EqDoubleType()
        assert hash(EqDoubleType()) == hash(EqDoubleType())
        assert len({EqDoubleType(), EqDoubleType()}) == 1
        assert EqDoubleType() != DoubleType()
        # a variable of one instance is accepted where another instance is expected
        var = EqDoubleType()("v")
        assert EqDoubleType().filter_variable(var) is var

    def test_remedy_2_new_returns_one_instance(self):
        class OnlyDoubleType(DoubleType):
            _instance = None

            def __new__(cls):
                if cls._instance is None:
                    cls._instance = super().__new__(cls)
                return cls._instance

        assert OnlyDoubleType() is OnlyDoubleType()
        assert OnlyDoubleType() == OnlyDoubleType()
        var = OnlyDoubleType()("v")
        assert OnlyDoubleType().filter_variable(var) is var
        assert OnlyDoubleType().clone() == OnlyDoubleType()

    def test_remedy_3_single_advertised_instance(self):
        import core_toys

        assert core_toys.double is double
        a, b = double("a"), double("b")
        assert a.type == b.type
        assert double.filter_variable(a) is a

    def test_props_give_value_equality(self):
        assert BoundedType(0, 1) == BoundedType(0, 1)
        assert hash(BoundedType(0, 1)) == hash(BoundedType(0, 1))
        assert BoundedType(0, 1) != BoundedType(0, 2)
        assert str(BoundedType(0, 1)) == "BoundedType{0, 1}"

    def test_singleton_type_equal_by_class(self):
        class Unit(SingletonType):
            def filter(self, data, strict=False, allow_downcast=None):
                return data

        class Other(SingletonType):
            def filter(self, data, strict=False, allow_downcast=None):
                return data

        assert Unit() == Unit()
        assert hash(Unit()) == hash(Unit())
        assert Unit() != Other()
        assert Unit().clone() == Unit()
        assert Generic() == generic


# -- variables ------------------------------------------------------------

class TestMakeVariable:
    def test_make_variable_and_call(self):
        v = double.make_variable("v")
        w = double("w")
        u = double()
        for var, name in ((v, "v"), (w, "w"), (u, None)):
            assert isinstance(var, Variable)
            assert var.type is double
            assert var.owner is None and var.index is None
            assert var.name == name
        assert v is not w

    def test_make_constant(self):
        c = double.make_constant(2)
        assert isinstance(c, Constant)
        assert c.data == 2.0 and isinstance(c.data, float)


class TestClone:
    def test_clone_without_props_copies(self):
        d = DoubleType()
        copy = d.clone()
        assert isinstance(copy, DoubleType) and copy is not d

    def test_clone_with_props_changes_parameters(self):
        t = BoundedType(0, 10)
        assert t.clone() == t
        assert t.clone(hi=5) == BoundedType(0, 5)

    def test_clone_with_unknown_parameter(self):
        with pytest.raises(TypeError, match="unknown parameters.*'width'"):
            BoundedType(0, 10).clone(width=3)


class TestRelations:
    def test_defaults_use_equality(self):
        other = DoubleType()
        assert double.in_same_class(double) is True
        assert double.in_same_class(other) is False
        assert double.is_super(double) is True
        assert double.is_super(other) is None  # undecided
        assert double.convert_variable(other()) is None

    def test_overridden_relations(self):
        wide, narrow = BoundedType(0, 10), BoundedType(2, 3)
        assert wide.in_same_class(narrow)
        assert wide.is_super(narrow)
        assert not narrow.is_super(wide)


# -- filter_variable ------------------------------------------------------

class TestFilterVariable:
    def test_same_type_returns_the_variable(self):
        v = double("v")
        assert double.filter_variable(v) is v

    def test_other_type_refused_naming_variable_and_types(self):
        g = generic("g")
        with pytest.raises(TypeError) as info:
            double.filter_variable(g)
        message = str(info.value)
        assert "g" in message and "Generic" in message and "DoubleType" in message

    def test_unequal_instance_of_same_class_refused(self):
        v = DoubleType()("stranger")
        with pytest.raises(TypeError, match="stranger"):
            double.filter_variable(v)

    def test_a_type_where_a_variable_is_expected(self):
        with pytest.raises(TypeError, match=r"got the Type DoubleType itself.*DoubleType\(\)"):
            double.filter_variable(double)

    def test_plain_value_becomes_a_constant(self):
        c = double.filter_variable(2)
        assert isinstance(c, Constant) and c.type is double and c.data == 2.0

    def test_more_specific_type_is_kept(self):
        narrow = BoundedType(2, 3)("n")
        assert BoundedType(0, 10).filter_variable(narrow) is narrow

    def test_more_general_type_is_converted(self):
        wide = BoundedType(0, 10)("w")
        result = BoundedType(2, 3).filter_variable(wide)
        assert result.type == BoundedType(2, 3)
        assert result.owner.op == Narrow(2, 3)
        assert result.owner.inputs == [wide]

    def test_conversion_can_be_forbidden(self):
        wide = BoundedType(0, 10)("w")
        with pytest.raises(TypeError, match="w"):
            BoundedType(2, 3).filter_variable(wide, allow_convert=False)

    def test_trace_records_acceptance(self):
        v = double("v")
        trace = NarrowingTrace(double, v)
        assert double.filter_variable(v, trace=trace) is v
        assert trace.result is v and trace.error is None and trace.accepted
        assert [(s.question, s.answer) for s in trace.steps] == [("same type?", "yes")]
        text = str(trace)
        assert "1. same type? -> yes" in text and "result: v" in text

    def test_trace_records_conversion_steps(self):
        wide = BoundedType(0, 10)("w")
        target = BoundedType(2, 3)
        trace = NarrowingTrace(target, wide)
        result = target.filter_variable(wide, trace=trace)
        assert trace.result is result and trace.accepted
        questions = [s.question for s in trace.steps]
        assert questions[0] == "same type?" and trace.steps[0].answer == "no"
        assert "converted by" in questions
        step = trace.steps[questions.index("converted by")]
        assert step.answer == "Narrow{2, 3}"
        assert "steps, accepted" in repr(trace)

    def test_trace_records_refusal(self):
        g = generic("g")
        trace = NarrowingTrace(double, g)
        with pytest.raises(TypeError) as info:
            double.filter_variable(g, trace=trace)
        assert trace.error is info.value
        assert trace.result is None and not trace.accepted
        assert trace.steps[0].question == "same type?" and trace.steps[0].answer == "no"
        assert any(s.question == "conversion possible?" for s in trace.steps)
        assert "refused:" in str(trace)
        assert "refused" in repr(trace)

    def test_trace_of_a_wrapped_constant(self):
        trace = NarrowingTrace(double, 3)
        c = double.filter_variable(3, trace=trace)
        assert trace.result is c
        assert trace.steps[0].answer == "no" and "constant" in trace.steps[0].detail

    def test_unused_trace_prints(self):
        # A trace that filter_variable has not filled yet must still print.
        trace = NarrowingTrace(double, double("v"))
        assert "v" in str(trace) and "0 steps" in repr(trace)


# -- Generic, CDataType, CLinkerType --------------------------------------

class TestGeneric:
    def test_any_object_passes(self):
        obj = object()
        assert generic.filter(obj) is obj
        assert generic.filter(obj, strict=True) is obj
        assert generic.is_valid_value(obj)
        assert str(generic) == "Generic"

    def test_values_eq_survives_odd_objects(self):
        class Weird:
            def __eq__(self, other):
                raise ValueError("no")

        w = Weird()
        assert generic.values_eq(w, w)
        assert not generic.values_eq(w, Weird())


class TestCDataType:
    ffi = cffi.FFI()

    def test_construction_normalises_ctype(self):
        t = CDataType("struct counter*", freefunc="counter_free")
        assert t.ctype == "struct counter *"
        assert t.freefunc == "counter_free"
        assert t == CDataType("struct counter *", "counter_free")
        assert t != CDataType("struct counter *")
        assert hash(t) == hash(CDataType("struct  counter *", "counter_free"))
        assert str(t) == "CDataType(struct counter *)"

    @pytest.mark.parametrize("ctype", ["int", 3, "", None])
    def test_ctype_must_be_a_pointer(self, ctype):
        with pytest.raises(TypeError, match="pointer type"):
            CDataType(ctype)

    @pytest.mark.parametrize("freefunc", ["free me", 5, ""])
    def test_freefunc_must_be_a_c_name(self, freefunc):
        with pytest.raises(TypeError, match="freefunc"):
            CDataType("int *", freefunc)

    def test_filter_accepts_a_matching_cffi_pointer(self):
        p = self.ffi.new("int *", 7)
        t = CDataType("int*")
        assert t.filter(p) is p
        assert t.is_valid_value(p)
        assert t.values_eq(p, p)
        assert not t.values_eq(p, self.ffi.new("int *"))

    def test_filter_accepts_void_pointer(self):
        p = self.ffi.cast("void *", self.ffi.new("int *"))
        assert CDataType("double *").filter(p) is p

    def test_filter_refuses_other_pointer_types(self):
        p = self.ffi.new("double *")
        with pytest.raises(TypeError, match="'int \\*', got 'double \\*'"):
            CDataType("int *").filter(p)

    def test_filter_refuses_pointer_to_pointer_mismatch(self):
        pp = self.ffi.new("int **")
        assert CDataType("int **").filter(pp) is pp
        with pytest.raises(TypeError):
            CDataType("int *").filter(pp)

    @pytest.mark.parametrize("value", [3, None, b"abc", "int *", "void *"])
    def test_filter_refuses_non_pointers(self, value):
        # a C type *name* ("int *") is not a pointer value
        with pytest.raises(TypeError, match="expects a cffi pointer"):
            CDataType("int *").filter(value)

    def test_filter_refuses_arrays(self):
        with pytest.raises(TypeError):
            CDataType("int *").filter(self.ffi.new("int[3]"))

    def test_c_hooks(self):
        t = CDataType("struct counter *")
        sub = {"fail": "return -1;", "slot": "args[0]"}
        assert t.c_declare("x", sub) == "struct counter * x;\n"
        assert t.c_init("x", sub) == "x = NULL;\n"
        assert t.c_extract("x", sub) == "x = (struct counter *)(args[0]);\n"
        assert t.c_extract_out("x", sub) == t.c_extract("x", sub)
        assert t.c_sync("x", sub) == "args[0] = (void *)x;\n"
        assert t.c_cleanup("x", sub) == ""
        assert t.c_is_simple() is True
        assert t.c_code_cache_version() == (1,)

    def test_constant_of_cdata(self):
        p = self.ffi.new("int *", 5)
        c = Constant(CDataType("int *"), p)
        assert c.data is p


class TestCLinkerTypeDefaults:
    def test_unimplemented_hooks_raise_method_not_defined(self):
        t = CLinkerType()
        for hook, args in [("c_declare", ("x", {})), ("c_init", ("x", {})),
                           ("c_extract", ("x", {})), ("c_sync", ("x", {})),
                           ("c_extract_out", ("x", {})), ("c_literal", (1,))]:
            with pytest.raises(MethodNotDefined, match=hook.replace("_out", "")):
                getattr(t, hook)(*args)
        assert t.c_cleanup("x", {}) == ""
        assert t.c_code_cache_version() == ()
        assert t.c_is_simple() is False
        assert issubclass(MethodNotDefined, NotImplementedError)
