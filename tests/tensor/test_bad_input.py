"""Bad input to the tensor Ops: a clear exception naming what was wrong, never a crash.

Where the static types tell, the error comes when the graph is built; otherwise
it comes at run time as a ValueError/IndexError whose message names the Apply
node ("Apply node that caused the error: ...").
"""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt


def compile_(inputs, outputs):
    return nbgraph.function(inputs, outputs, linker="py")


x = nt.dmatrix("x")
y = nt.dmatrix("y")
v = nt.dvector("v")
t3 = nt.dtensor3("t3")
s23 = nt.tensor("float64", (2, 3), "s23")


# -- build time: dtype / ndim an Op cannot take ---------------------------------------------

@pytest.mark.parametrize("build,exc,pattern", [
    (lambda: nt.dot(t3, v), TypeError, r"dot: argument x \(t3\) must be 1-d or 2-d"),
    (lambda: nt.dot(v, t3), TypeError, r"argument y \(t3\)"),
    (lambda: nt.dot(nt.dscalar("s"), v), TypeError, r"argument x \(s\).*0 dimensions"),
    (lambda: nt.dot(s23, nt.tensor("float64", (4,), "w4")), ValueError,
     "inner dimensions differ.*3.*w4.*4"),
    (lambda: nt.outer(x, v), TypeError, "outer needs two vectors.*x"),
    (lambda: x.dimshuffle(0), ValueError, r"drops dimension 1 of x.*not statically of size 1"),
    (lambda: x.dimshuffle(1), ValueError, r"drops dimension 0 of x"),
    (lambda: x.dimshuffle(0, 2), ValueError, r"entry 2 must be 'x' or a dimension in \[0, 2\)"),
    (lambda: x.dimshuffle(0, 0), ValueError, "repeats a dimension"),
    (lambda: x.dimshuffle(0, "y"), ValueError, "'y'"),
    (lambda: nt.DimShuffle(3, (0, 1, 2))(x), TypeError, "expects 3 dimensions, got x with 2"),
    (lambda: s23.reshape((4, 2)), ValueError, r"cannot reshape \(2, 3\) \(6 elements\)"),
    (lambda: s23.reshape((4, -1)), ValueError, r"cannot reshape 6 elements into \(4, -1\)"),
    (lambda: x.reshape((-1, -1)), ValueError, "only one dimension may be -1"),
    (lambda: x.reshape((-2, 3)), ValueError, "negative size"),
    (lambda: x.reshape((2.5, 3)), TypeError, "shape entry 0 must be an int.*2.5"),
    (lambda: x.reshape((nt.dscalar("f"), 3)), TypeError, "shape entry 0 must be an integer.*f"),
    (lambda: nt.reshape(x, (2, 3), ndim=3), ValueError, "ndim=3"),
    (lambda: nt.and_(x, y), TypeError, "and_.*float64"),
    (lambda: nt.invert(v), TypeError, "invert.*float64"),
    (lambda: -nt.tensor("bool", (None,)), TypeError, "neg.*bool"),
    (lambda: nt.cast(x, "object"), TypeError, "object"),
    (lambda: nt.cast(x, "banana"), TypeError, "banana"),
    (lambda: nt.sub(x), TypeError, "takes 2 inputs, got 1"),
    (lambda: nt.switch(x, x), TypeError, "takes 3 inputs, got 2"),
    (lambda: s23 + nt.tensor("float64", (4, 3), "s43"), ValueError,
     "cannot broadcast dimension 0.*2.*s43 has 4"),
    (lambda: nt.bvector("b") + 300, ValueError, "300 is out of bounds for int8"),
])
def test_build_time_type_errors(build, exc, pattern):
    with pytest.raises(exc, match=pattern):
        build()


# -- build time: things that are not array-like ---------------------------------------------

NOT_ARRAYS = [{"a": 1}, "abc", None, object(), ["a", "b"], [[1, 2], [3]], b"xy",
              nt.TensorType("float64", (None,))]


@pytest.mark.parametrize("bad", NOT_ARRAYS, ids=lambda b: type(b).__name__)
def test_not_array_like_in_elemwise_names_the_argument(bad):
    with pytest.raises(TypeError, match="argument 1"):
        nt.add(x, bad)
    with pytest.raises(TypeError, match="argument 0"):
        nt.exp(bad)
    with pytest.raises(TypeError):
        x * bad


@pytest.mark.parametrize("bad", NOT_ARRAYS, ids=lambda b: type(b).__name__)
def test_not_array_like_elsewhere(bad):
    with pytest.raises(TypeError, match="dot: y"):
        nt.dot(x, bad)
    with pytest.raises(TypeError, match="join: tensor 1"):
        nt.concatenate([x, bad])
    with pytest.raises(TypeError, match="stack: tensor 1"):
        nt.stack([v, bad])
    for build in (lambda: nt.sum(bad), lambda: nt.max(bad), lambda: nt.mean(bad),
                  lambda: nt.cast(bad, "int8"), lambda: nt.specify_shape(bad, (2,)),
                  lambda: nt.reshape(bad, (2,)), lambda: nt.shape(bad),
                  lambda: nt.zeros_like(bad), lambda: nt.alloc(bad, 2),
                  lambda: nt.as_tensor_variable(bad), lambda: nt.constant(bad)):
        with pytest.raises(TypeError):
            build()


def test_tensor_has_no_truth_value_length_or_iteration():
    with pytest.raises(TypeError, match="truth value"):
        bool(x)
    with pytest.raises(TypeError, match="switch"):
        if x > 0:
            pass
    with pytest.raises(TypeError, match="len"):
        len(x)
    with pytest.raises(TypeError, match="iterated"):
        list(x)


# -- build time: axes -----------------------------------------------------------------------

@pytest.mark.parametrize("fn", [nt.sum, nt.prod, nt.max, nt.min, nt.mean])
@pytest.mark.parametrize("axis,exc,pattern", [
    (2, ValueError, "axis 2 is out of range for a tensor with 2 dimensions"),
    (-3, ValueError, "axis -3 is out of range"),
    ((0, 0), ValueError, r"axis \(0, 0\) repeats an axis"),
    ((1, -1), ValueError, "repeats an axis"),
    ((0, 5), ValueError, "axis 5"),
    (1.0, TypeError, "axis must be None, an int or a tuple of ints, got 1.0"),
    ("0", TypeError, "axis entries must be ints, got '0'"),
    ((0, 1.0), TypeError, "axis entries must be ints"),
    (True, TypeError, "axis"),
])
def test_bad_reduction_axes(fn, axis, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn(x, axis=axis)


@pytest.mark.parametrize("build,exc,pattern", [
    (lambda: nt.concatenate([x, y], axis=2), ValueError, "axis 2 is out of range"),
    (lambda: nt.concatenate([x, y], axis=-3), ValueError, "out of range"),
    (lambda: nt.concatenate([x, v]), ValueError, r"tensor 1 \(v\) has 1 dimensions, expected 2"),
    (lambda: nt.concatenate([s23, nt.tensor("float64", (2, 4))], axis=0), ValueError,
     r"dimension 1 differs between inputs: \[3, 4\]"),
    (lambda: nt.concatenate([nt.dscalar(), nt.dscalar()]), ValueError, "zero-dimensional"),
    (lambda: nt.concatenate([]), ValueError, "at least one"),
    (lambda: nt.join(1.0, x, y), TypeError, "axis must be an int"),
    (lambda: nt.stack([x, x], axis=3), ValueError, "axis 3 is out of range"),
    (lambda: nt.stack([x, v]), ValueError, r"tensor 1 \(v\) has 1 dimensions"),
    (lambda: nt.stack([]), ValueError, "at least one"),
    (lambda: nt.shape_i(x, 2), ValueError, "axis 2 is out of range for x"),
    (lambda: nt.shape_i(x, -3), ValueError, "out of range"),
    (lambda: nt.specify_shape(nt.tensor("float64", (3, 1), "t31"), (2, 1)), ValueError,
     "dimension 0 of t31 has static size 3.*requested 2"),
    (lambda: nt.specify_shape(x, (2,)), ValueError, "x has 2 dimensions but the shape"),
    (lambda: nt.zeros((-1, 2)), ValueError, r"shape entry 0 is negative \(-1\)"),
    (lambda: nt.zeros((2.0, 2)), TypeError, "shape entry 0 must be an int"),
    (lambda: nt.zeros((True, 2)), TypeError, "shape entry 0"),
    (lambda: nt.zeros((nt.dscalar("f"),)), TypeError, "integer scalar.*f"),
    (lambda: nt.alloc(nt.tensor("float64", (3,), "w3"), 2, 4), ValueError,
     "cannot broadcast a value of size 3 to size 4"),
    (lambda: nt.alloc(x, 3), ValueError, "fewer than the value's 2 dimensions"),
])
def test_bad_structural_arguments(build, exc, pattern):
    with pytest.raises(exc, match=pattern):
        build()


# -- build time: indexing -------------------------------------------------------------------

@pytest.mark.parametrize("index,exc,pattern", [
    ((0, 0, 0), IndexError, "too many indices for x: 3 given, it has 2 dimensions"),
    ((0, Ellipsis, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
    (1.0, TypeError, "index must be an int, got 1.0"),
    (np.float64(1.0), TypeError, "index must be an int"),
    (slice(1.5, None), TypeError, "slice start must be an int, got 1.5"),
    (slice(None, "a"), TypeError, "slice stop"),
    (slice(None, None, 0.5), TypeError, "slice step"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    ([0.5, 1], IndexError, "arrays used as indices must be of integer"),
    (np.zeros((2, 2, 2), bool), IndexError, "too many indices"),
    (([0, 1], [[0, 1, 2]], [0]), IndexError, "too many indices"),
    (True, IndexError, "0-d boolean index is not supported"),
    ("a", TypeError, "index must be an int, got 'a'"),
    ({"a": 1}, TypeError, "index must be an int"),
])
def test_bad_indices(index, exc, pattern):
    with pytest.raises(exc, match=pattern):
        x[index]


def test_symbolic_indices_must_be_integer_scalars():
    with pytest.raises(TypeError, match="index must be an integer scalar.*f"):
        x[nt.dscalar("f")]
    with pytest.raises(IndexError, match="must be of integer.*dv"):
        x[nt.dvector("dv")]
    with pytest.raises(TypeError, match="slice start must be an integer scalar"):
        x[nt.dscalar():]
    with pytest.raises(IndexError, match="0-d boolean index"):
        x[nt.tensor("bool", ())]


@pytest.mark.parametrize("index,pattern", [
    (3, "index 3 is out of bounds for dimension 0 of s34 with size 3"),
    (-4, "index -4 is out of bounds for dimension 0"),
    ((slice(None), 4), "index 4 is out of bounds for dimension 1 of s34 with size 4"),
    ((0, -5), "index -5 is out of bounds for dimension 1"),
    ((Ellipsis, 7), "index 7 is out of bounds for dimension 1"),
])
def test_index_out_of_static_bounds(index, pattern):
    s34 = nt.tensor("float64", (3, 4), "s34")
    with pytest.raises(IndexError, match=pattern):
        s34[index]
    # in bounds is fine; out-of-range *slices* are fine (NumPy clips them)
    assert s34[-3, 3].type.shape == ()
    assert s34[10:].type.shape == (0, 4)


def test_bad_inc_and_set_subtensor():
    with pytest.raises(TypeError, match="needs the result of indexing a tensor, got x"):
        nt.inc_subtensor(x, 1.0)
    with pytest.raises(TypeError, match="indexing"):
        nt.set_subtensor(x[0] * 2, 1.0)
    with pytest.raises(ValueError, match="cannot write 2-d x into a 1-d region of x"):
        nt.set_subtensor(x[0], x)
    with pytest.raises(ValueError, match=r"cannot broadcast w4 of static shape \(4,\)"):
        nt.set_subtensor(s23[0], nt.tensor("float64", (4,), "w4"))
    with pytest.raises(ValueError, match="cannot broadcast"):
        nt.inc_subtensor(s23[:, 1:], nt.tensor("float64", (3, 1)))
    m = nt.imatrix("m")
    with pytest.raises(TypeError, match="cannot add v of dtype float64 into m of dtype int32"):
        nt.inc_subtensor(m[0], v)
    with pytest.raises(TypeError, match="cast it first"):
        nt.inc_subtensor(m[0], 1.5)
    with pytest.raises(TypeError, match="cannot add v of dtype float64 into m"):
        nt.inc_subtensor(m[[0, 1]], v)


# -- run time: shape errors name the node ---------------------------------------------------

RUNTIME_CASES = [
    ("dot_mm", lambda: ([x, y], nt.dot(x, y)), (np.ones((2, 3)), np.ones((2, 3))),
     ValueError, "Dot"),
    ("dot_mv", lambda: ([x, v], nt.dot(x, v)), (np.ones((2, 3)), np.ones(2)), ValueError, "Dot"),
    ("elemwise", lambda: ([x, y], x + y), (np.ones((2, 3)), np.ones((3, 2))), ValueError,
     "Elemwise{add}"),
    ("elemwise_vector", lambda: ([x, v], x * v), (np.ones((2, 3)), np.ones(4)), ValueError,
     "Elemwise{mul}"),
    ("reshape", lambda: ([x], x.reshape((4, 2))), (np.ones((2, 3)),), ValueError, "Reshape"),
    ("reshape_minus_one", lambda: ([x], x.reshape((4, -1))), (np.ones((2, 3)),), ValueError,
     "Reshape"),
    ("join", lambda: ([x, y], nt.concatenate([x, y], axis=1)),
     (np.ones((2, 3)), np.ones((3, 3))), ValueError, "Join"),
    ("specify_shape", lambda: ([x], nt.specify_shape(x, (3, None))), (np.ones((2, 3)),),
     ValueError, "SpecifyShape"),
    ("set_subtensor", lambda: ([x, v], nt.set_subtensor(x[0], v)),
     (np.ones((2, 3)), np.ones(4)), ValueError, "SetSubtensor"),
    ("inc_subtensor", lambda: ([x, v], nt.inc_subtensor(x[:, 0], v)),
     (np.ones((2, 3)), np.ones(3)), ValueError, "IncSubtensor"),
    ("max_of_empty", lambda: ([x], nt.max(x, axis=0)), (np.ones((0, 3)),), ValueError, "Max"),
    ("alloc_value", lambda: ([v], nt.alloc(v, 2, 3)), (np.ones(4),), ValueError, "Alloc"),
]


def _runtime_case(name):
    for case in RUNTIME_CASES:
        if case[0] == name:
            return case
    raise KeyError(name)


@pytest.mark.parametrize("name", [c[0] for c in RUNTIME_CASES])
def test_runtime_shape_errors_name_the_apply_node(name):
    _, build, args, exc, op_text = _runtime_case(name)
    inputs, out = build()
    f = compile_(inputs, out)
    with pytest.raises(exc) as info:
        f(*args)
    message = str(info.value)
    assert "Apply node" in message
    assert op_text in message


def test_runtime_errors_with_symbolic_sizes_and_indices():
    n = nt.lscalar("n")
    f = compile_([n], nt.zeros((n, 2)))
    with pytest.raises(ValueError, match="Apply node.*Alloc"):
        f(-1)
    i = nt.lscalar("i")
    f = compile_([x, i], x[i])
    with pytest.raises(IndexError, match="Apply node.*Subtensor"):
        f(np.ones((2, 3)), 2)
    f = compile_([x, i], x[::i])
    with pytest.raises(ValueError, match="Apply node"):
        f(np.ones((2, 3)), 0)
    f = compile_([x, i], x.reshape((i, -1)))
    with pytest.raises(ValueError, match="Apply node.*Reshape"):
        f(np.ones((2, 3)), 4)
    w = nt.dvector("w")
    f = compile_([v, w], nt.dot(v, w))
    with pytest.raises(ValueError, match="Apply node.*Dot"):
        f(np.ones(3), np.ones(2))
    iv = nt.lvector("iv")
    f = compile_([iv], iv ** iv)
    with pytest.raises(ValueError, match="Apply node.*pow"):
        f(np.array([2, -1]))


def test_runtime_broadcast_of_a_static_one_dim_that_is_not_one():
    # A static size of 1 is part of the type: the function refuses other values.
    r = nt.drow("r")
    f = compile_([x, r], x + r)
    with pytest.raises(TypeError, match="bad argument 1"):
        f(np.ones((2, 3)), np.ones((2, 3)))


@pytest.mark.parametrize("value,pattern", [
    ({"a": 1}, "dict"), ("abc", "str"), (np.ones(3), "expects ndim 2"), (None, "None"),
    (object(), "object"), ([[1.0], [2.0, 3.0]], ""),
])
def test_call_with_values_that_are_not_arrays_of_the_type(value, pattern):
    f = compile_([x], x * 2)
    with pytest.raises(TypeError, match="bad argument 0 \\(x\\)") as info:
        f(value)
    assert pattern in str(info.value)
