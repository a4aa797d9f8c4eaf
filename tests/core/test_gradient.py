"""nbgraph.core.gradient: reverse-mode traversal over a toy differentiable Type."""

import warnings

import pytest

from core_toys import Scale, add, double, evaluate, floor, mul, neg, round_
from nbgraph.core import (
    Apply,
    Constant,
    DisconnectedGradient,
    DisconnectedInputError,
    NullGradientError,
    Op,
    Variable,
    generic,
    grad,
)


def value(expr, **givens):
    """Evaluate ``expr`` with inputs given by name."""
    from nbgraph.core import graph_inputs

    roots = {v.name: v for v in graph_inputs(expr) if not isinstance(v, Constant)}
    return evaluate(expr, {roots[name]: val for name, val in givens.items() if name in roots})


class Split(Op):
    """x -> (2x, 3x): two outputs whose gradients both flow back to x."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [double(), double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = 2.0 * inputs[0]
        output_storage[1][0] = 3.0 * inputs[0]

    def grad(self, inputs, output_grads):
        g2, g3 = output_grads
        return [add(Scale(2.0)(g2), Scale(3.0)(g3))]


class FirstOnly(Op):
    """(x, y) -> x; declares y disconnected."""

    __props__ = ()

    def make_node(self, x, y):
        return Apply(self, [x, y], [double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]

    def grad(self, inputs, output_grads):
        return [output_grads[0], DisconnectedGradient()]


class TestChainRule:
    def test_product(self):
        x, y = double("x"), double("y")
        cost = mul(mul(x, x), y)  # x^2 y
        gx, gy = grad(cost, [x, y])
        assert value(gx, x=3.0, y=2.0) == 12.0  # 2 x y
        assert value(gy, x=3.0, y=2.0) == 9.0   # x^2

    def test_nested_scales(self):
        x = double("x")
        cost = Scale(3.0)(neg(Scale(2.0, 5.0)(x)))
        assert value(grad(cost, x), x=1.0) == -6.0

    def test_gradient_of_a_variable_with_itself(self):
        x = double("x")
        g = grad(x, x)
        assert isinstance(g, Constant) and g.data == 1.0

    def test_wrt_an_intermediate_variable(self):
        x, y = double("x"), double("y")
        m = mul(x, y)
        cost = neg(mul(m, m))
        assert value(grad(cost, m), x=1.0, y=2.0) == -4.0  # -2 m

    def test_multi_output_op_missing_output_grad_is_zero(self):
        x = double("x")
        two_x, three_x = Split()(x)
        assert value(grad(two_x, x), x=5.0) == 2.0
        assert value(grad(three_x, x), x=5.0) == 3.0
        assert value(grad(add(two_x, three_x), x), x=5.0) == 5.0


class TestAccumulation:
    def test_fan_out(self):
        x, y = double("x"), double("y")
        cost = add(mul(x, y), x)
        assert value(grad(cost, x), x=4.0, y=2.0) == 3.0  # y + 1

    def test_three_uses(self):
        x = double("x")
        cost = add(add(x, x), mul(x, x))
        assert value(grad(cost, x), x=2.0) == 6.0  # 2 + 2x

    def test_diamond(self):
        x = double("x")
        m = mul(x, x)
        cost = mul(Scale(2.0)(m), neg(m))  # -2 x^4
        assert value(grad(cost, x), x=1.5) == pytest.approx(-8 * 1.5 ** 3)


class TestConsiderConstant:
    def test_blocks_gradient_through_a_variable(self):
        x, y = double("x"), double("y")
        m = mul(x, y)
        cost = mul(x, m)  # x^2 y
        assert value(grad(cost, x), x=3.0, y=2.0) == 12.0
        held = grad(cost, x, consider_constant=[m])
        assert value(held, x=3.0, y=2.0) == 6.0  # only the direct use: m = x y

    def test_blocking_the_only_path_disconnects(self):
        x = double("x")
        m = neg(x)
        cost = mul(m, m)
        with pytest.raises(DisconnectedInputError):
            grad(cost, x, consider_constant=[m])


class TestDisconnected:
    def test_raise_names_the_variable(self):
        x, z = double("x"), double("z")
        with pytest.raises(DisconnectedInputError, match="does not depend on z") as info:
            grad(neg(x), [x, z])
        assert isinstance(info.value, ValueError)

    def test_warn_returns_zeros(self):
        x, z = double("x"), double("z")
        with pytest.warns(UserWarning, match="does not depend on z"):
            gx, gz = grad(neg(x), [x, z], disconnected_inputs="warn")
        assert isinstance(gz, Constant) and gz.data == 0.0
        assert value(gx, x=1.0) == -1.0

    def test_ignore_returns_zeros_silently(self):
        x, z = double("x"), double("z")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gz = grad(neg(x), z, disconnected_inputs="ignore")
        assert gz.data == 0.0

    def test_op_declaring_an_input_disconnected(self):
        x, y = double("x"), double("y")
        cost = FirstOnly()(x, y)
        assert value(grad(cost, x), x=1.0) == 1.0
        with pytest.raises(DisconnectedInputError, match="y"):
            grad(cost, y)

    def test_bad_mode(self):
        x = double("x")
        with pytest.raises(ValueError, match="'raise', 'warn' or 'ignore'"):
            grad(neg(x), x, disconnected_inputs="skip")


class TestErrors:
    def test_op_without_grad_is_named(self):
        x = double("x")
        with pytest.raises(NotImplementedError, match="the Op Floor does not implement grad"):
            grad(neg(floor(x)), x)

    def test_op_without_grad_off_the_path_is_fine(self):
        x, y = double("x"), double("y")
        cost = add(neg(x), floor(y))
        assert value(grad(cost, x), x=1.0, y=1.0) == -1.0

    def test_null_gradient(self):
        x = double("x")
        with pytest.raises(NullGradientError, match="Round says rounding is not differentiable"):
            grad(round_(x), x)

    def test_null_gradient_propagates_to_earlier_inputs(self):
        x = double("x")
        cost = round_(neg(x))
        with pytest.raises(NullGradientError, match="rounding is not differentiable"):
            grad(cost, x)
        with pytest.raises(NullGradientError):
            grad(cost, x, disconnected_inputs="ignore")

    def test_null_gradient_wins_over_other_paths(self):
        x = double("x")
        cost = add(round_(x), mul(x, x))
        with pytest.raises(NullGradientError):
            grad(cost, x)

    def test_null_gradient_elsewhere_does_not_matter(self):
        x, y = double("x"), double("y")
        cost = add(round_(y), mul(x, x))
        assert value(grad(cost, x), x=2.0, y=1.0) == 4.0

    def test_wrong_number_of_gradients(self):
        class TooMany(Op):
            def make_node(self, x):
                return Apply(self, [x], [double()])

            def grad(self, inputs, output_grads):
                return [output_grads[0], output_grads[0]]

        x = double("x")
        with pytest.raises(ValueError, match="returned 2 gradients for 1 inputs"):
            grad(TooMany()(x), x)

    def test_gradient_must_be_a_variable(self):
        class Numeric(Op):
            def make_node(self, x):
                return Apply(self, [x], [double()])

            def grad(self, inputs, output_grads):
                return [1.0]

        x = double("x")
        with pytest.raises(TypeError, match="returned 1.0 for input x; expected a Variable"):
            grad(Numeric()(x), x)

    def test_bad_arguments(self):
        x = double("x")
        with pytest.raises(TypeError, match="cost must be a Variable"):
            grad(1.0, x)
        with pytest.raises(TypeError, match=r"wrt\[1\] must be a Variable"):
            grad(neg(x), [x, "y"])

    def test_type_without_gradient_hooks(self):
        g = generic("g")
        with pytest.raises(TypeError, match="cannot differentiate a cost of type Generic"):
            grad(g, g)


class TestStructure:
    def test_single_variable_gives_a_variable(self):
        x = double("x")
        assert isinstance(grad(neg(x), x), Variable)

    def test_list_gives_a_list(self):
        x, y = double("x"), double("y")
        result = grad(mul(x, y), [x, y])
        assert isinstance(result, list) and len(result) == 2
        assert [value(g, x=2.0, y=5.0) for g in result] == [5.0, 2.0]

    def test_tuple_gives_a_tuple(self):
        x, y = double("x"), double("y")
        result = grad(mul(x, y), (y, x))
        assert isinstance(result, tuple)
        assert [value(g, x=2.0, y=5.0) for g in result] == [2.0, 5.0]

    def test_one_element_list(self):
        x = double("x")
        result = grad(neg(x), [x])
        assert isinstance(result, list) and len(result) == 1

    def test_same_variable_twice(self):
        x = double("x")
        a, b = grad(mul(x, x), [x, x])
        assert value(a, x=3.0) == value(b, x=3.0) == 6.0
