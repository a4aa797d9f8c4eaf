"""The graph contract (issue 21): what the engine must neither lose nor refuse.

Each test names the item of the issue it holds; values are checked against
NumPy or against the definition.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Constant, clone, clone_get_equiv, graph_inputs
from nbgraph.core.type import Type
from nbgraph.tensor.type import TensorType
from nbgraph.testing import verify_grad


def test_clone_with_new_inputs_reinfers_output_types_from_narrower_inputs():
    # item 2: a (1,) input in place of a (None,) one narrows the output too
    a = TensorType("float64", (None,))("a")
    b = TensorType("float64", (1,))("b")
    node = (a + b).owner
    assert node.outputs[0].type.shape == (None,)
    narrower = TensorType("float64", (1,))("c")
    clone_node = node.clone_with_new_inputs([narrower, b], strict=True)
    assert clone_node.outputs[0].type.shape == (1,)
    same = node.clone_with_new_inputs([TensorType("float64", (None,))("d"), b])
    assert same.outputs[0].type == node.outputs[0].type


def test_verify_grad_accepts_a_gradient_that_does_not_depend_on_the_input():
    # item 5: d(2x)/dx = 2 whatever x is
    verify_grad(lambda x: x * 2, [np.array(1.0)])
    verify_grad(lambda x: x + 3.5, [np.arange(3.0)])


@pytest.mark.parametrize("linker", ["py", "c", "cvm"])
def test_grad_of_power_with_respect_to_the_exponent_is_zero_at_base_zero(linker):
    # item 7: d(x**y)/dy = x**y log(x) -> 0 as x -> 0 (y > 0), not 0 * -inf
    x, y = nt.dvector("x"), nt.dvector("y")
    g = ng.function([x, y], ng.grad((x ** y).sum(), y), linker=linker)
    xv, yv = np.array([0.0, 2.0, 0.0, 3.0]), np.array([2.0, 3.0, 0.5, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(xv == 0, 0.0, xv ** yv * np.log(xv))
    np.testing.assert_allclose(g(xv, yv), expected, rtol=1e-12)


@pytest.mark.parametrize("make, shape, error", [
    (nt.vector, (None, None), ValueError),
    (nt.dvector, (), ValueError),
    (nt.row, (2, 5), ValueError),
    (nt.col, (3, None), ValueError),
    (nt.dmatrix, [2, 3], TypeError),
    (nt.dmatrix, (2.0, 3), TypeError),
    (nt.scalar, (1,), ValueError),
])
def test_typed_constructors_refuse_a_shape_of_another_kind(make, shape, error):
    # item 8: vector(shape=(None, None)) must not build a matrix
    with pytest.raises(error) as info:
        make(shape=shape)
    assert "shape" in str(info.value)


def test_typed_constructors_take_a_fitting_static_shape():
    assert nt.dvector(shape=(3,)).type == TensorType("float64", (3,))
    assert nt.row(shape=(1, 5)).type.shape == (1, 5)
    assert nt.col(shape=(None, 1)).type.shape == (None, 1)
    assert nt.lmatrix(shape=(np.int64(2), None)).type.shape == (2, None)


def test_clone_never_copies_a_constant_listed_among_the_inputs():
    # item 9
    x = nt.dvector("x")
    c = nt.constant(np.arange(3.0))
    out = x * c
    new_inputs, new_outputs = clone([x, c], [out])
    assert new_inputs[1] is c and new_inputs[0] is not x
    assert new_outputs[0].owner.inputs[1] is c
    assert clone_get_equiv([c], [out])[c] is c
    assert isinstance(new_inputs[1], Constant)


def test_masked_values_are_refused_not_silently_unmasked():
    # item 10: constants and arguments alike
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    with pytest.raises(TypeError, match="masked"):
        nt.constant(masked)
    x = nt.dvector("x")
    f = ng.function([x], x * 2, linker="py")
    with pytest.raises(TypeError, match="masked"):
        f(masked)
    # nothing masked: the values are the data
    np.testing.assert_array_equal(f(np.ma.masked_array([1.0, 2.0])), [2.0, 4.0])
    np.testing.assert_array_equal(nt.constant(np.ma.masked_array([1.0])).data, [1.0])


def test_strict_filter_keeps_subclasses_and_names_the_dtype_it_refuses(tmp_path):
    # item 11
    t = TensorType("float64", (None,))
    mm = np.memmap(tmp_path / "a.bin", dtype="float64", mode="w+", shape=(3,))
    assert t.filter(mm, strict=True) is mm
    with pytest.raises(TypeError, match="dtype int64"):
        t.filter(np.arange(3), strict=True)


def test_base_convert_variable_returns_a_variable_of_an_equal_type():
    # item 11: nothing to convert is not a refusal
    class Plain(Type):
        def filter(self, data, strict=False, allow_downcast=None):
            return data

        def __eq__(self, other):
            return type(other) is Plain

        def __hash__(self):
            return hash(Plain)

    v = Plain()("v")
    assert Plain().convert_variable(v) is v


def test_static_sizes_survive_the_symbolic_shape():
    # item 3: x.shape[i] of a static size is that size; shapes rebuilt from it stay static
    x = TensorType("float64", (50,))("x")
    assert isinstance(x.shape[0], Constant) and int(x.shape[0].data) == 50
    assert nt.zeros(x.shape).type.shape == (50,)
    assert nt.zeros((x.shape[0], 3)).type.shape == (50, 3)
    assert x.reshape(nt.stack([2, 25])).type.shape == (2, 25)
    m = TensorType("float64", (None, 4))("m")
    assert nt.zeros(m.shape).type.shape == (None, 4)
    assert m.reshape(nt.stack([m.shape[1], -1])).type.shape == (4, None)
    f = ng.function([m], [m.shape[0] * 10 + m.shape[1], nt.zeros(m.shape)], linker="py")
    size, zeros = f(np.ones((3, 4)))
    assert int(size) == 34 and zeros.shape == (3, 4)


def test_alloc_keeps_the_static_sizes_of_its_value():
    # item 4: a value dimension of size 5 can only broadcast to 5
    v = TensorType("float64", (None, 1, 5))("v")
    n, k = nt.lscalar("n"), nt.lscalar("k")
    out = nt.alloc(v, n, 1, k)
    assert out.type.shape == (None, 1, 5)
    f = ng.function([v, n, k], out, linker="py")
    assert f(np.ones((2, 1, 5)), 2, 5).shape == (2, 1, 5)
    with pytest.raises(ValueError):
        f(np.ones((2, 1, 5)), 2, 4)


def test_types_of_mixed_specificity_narrow_to_what_both_know():
    # item 1: neither (1, None, 3) nor (None, 5, 3) is a supertype, yet they agree
    from nbgraph.core.fgraph import FunctionGraph

    a = TensorType("float64", (1, None, 3))("a")
    b = TensorType("float64", (None, 5, 3))("b")
    narrowed = a.type.filter_variable(b)
    assert narrowed.type.shape == (1, 5, 3)
    assert type(narrowed.owner.op).__name__ == "SpecifyShape"
    fg = FunctionGraph([a, b], [nt.exp(a)], clone=False)
    fg.replace(a, b)
    fg.check_integrity()
    f = ng.function([b], fg.outputs[0], linker="py")
    np.testing.assert_allclose(f(np.zeros((1, 5, 3))), np.ones((1, 5, 3)))
    with pytest.raises(ValueError):
        f(np.zeros((2, 5, 3)))
    # a real conflict is still refused at build time
    with pytest.raises(TypeError, match="dimension 0"):
        TensorType("float64", (2, None))("u").type.filter_variable(
            TensorType("float64", (3, 1))("v"))


class TestFunctionGraphEditing:
    """item 13: the editing API of a FunctionGraph, with the callbacks it fires."""

    def _graph(self):
        from nbgraph.core.fgraph import Feature, FunctionGraph

        class Log(Feature):
            def __init__(self):
                self.events = []

            def on_import(self, fgraph, node, reason):
                self.events.append(("import", str(node.op)))

            def on_prune(self, fgraph, node, reason):
                self.events.append(("prune", str(node.op)))

        x, y = nt.dvector("x"), nt.dvector("y")
        a = nt.exp(x)
        b = a + y
        c = nt.log(x)
        log = Log()
        fg = FunctionGraph([x, y], [b, c], clone=False, features=[log])
        return fg, log, (x, y, a, b, c)

    def test_remove_node_drops_its_dependents_and_the_outputs_they_feed(self):
        fg, log, (x, y, a, b, c) = self._graph()
        fg.remove_node(a.owner)
        assert fg.outputs == [c]
        assert a.owner not in fg.apply_nodes and b.owner not in fg.apply_nodes
        assert {e[0] for e in log.events} == {"prune"}
        fg.check_integrity()
        assert fg.clients[y] == [] and y in fg.inputs

    def test_remove_input_drops_what_depends_on_it(self):
        fg, log, (x, y, a, b, c) = self._graph()
        fg.remove_input(1)
        assert fg.inputs == [x] and fg.outputs == [c]
        assert y not in fg.variables
        fg.check_integrity()

    def test_import_missing_adds_roots_as_inputs(self):
        from nbgraph.core.fgraph import MissingInputError

        fg, log, (x, y, a, b, c) = self._graph()
        z = nt.dvector("z")
        extra = nt.sin(z) + x
        with pytest.raises(MissingInputError):
            fg.import_var(extra)
        fg.import_var(extra, import_missing=True)
        assert z in fg.inputs and extra.owner in fg.apply_nodes
        assert ("import", str(extra.owner.op)) in log.events

    def test_public_client_bookkeeping(self):
        fg, log, (x, y, a, b, c) = self._graph()
        assert (b.owner, 0) in fg.clients[a]
        fg.add_client(x, ("output", 99))
        assert ("output", 99) in fg.clients[x]
        fg.remove_client(x, ("output", 99))
        assert ("output", 99) not in fg.clients[x]
        with pytest.raises(ValueError):
            fg.remove_client(x, ("output", 99))


@pytest.mark.parametrize("build", [
    lambda x: x.sum(axis=2),
    lambda x: x.max(axis=-3),
    lambda x: nt.concatenate([x, x], axis=3),
    lambda x: nt.stack([x, x], axis=4),
])
def test_an_axis_out_of_range_raises_numpys_axis_error(build):
    # item 15: user code catching AxisError (or ValueError, or IndexError) keeps working
    from numpy.exceptions import AxisError

    with pytest.raises(AxisError):
        build(nt.dmatrix("x"))


class TestGradientModifiers:
    """item 13: identity Ops that shape the gradient, removed from compiled graphs."""

    def test_forward_is_the_identity_and_backward_is_modified(self):
        x = nt.dvector("x")
        xv = np.array([-2.0, 0.5, 3.0])
        cases = [
            (nt.zero_grad, np.zeros(3)),
            (lambda v: nt.grad_scale(v, -0.5), -0.5 * 2 * xv),
            (lambda v: nt.grad_clip(v, -1.0, 1.0), np.clip(2 * xv, -1, 1)),
        ]
        for modify, expected in cases:
            y = modify(x)
            cost = (y ** 2).sum()
            f = ng.function([x], [y, ng.grad(cost, x)], linker="py")
            value, gradient = f(xv)
            np.testing.assert_array_equal(value, xv)
            np.testing.assert_allclose(gradient, expected)

    def test_disconnected_grad_stops_the_gradient(self):
        x = nt.dvector("x")
        cost = (x * nt.disconnected_grad(x)).sum()
        g = ng.function([x], ng.grad(cost, x), linker="py")
        np.testing.assert_array_equal(g(np.array([1.0, 2.0])), [1.0, 2.0])
        only_constant = nt.consider_constant(x).sum()
        assert ng.grad(only_constant, x, disconnected_inputs="ignore") is not None

    @pytest.mark.parametrize("linker", ["c", "cvm"])
    def test_compiled_graphs_drop_them(self, linker):
        x = nt.dvector("x")
        y = nt.grad_clip(nt.exp(x), -1.0, 1.0) * 2
        f = ng.function([x], y, linker=linker)
        assert not any(type(n.op).__name__ == "GradClip" for n in f.fgraph.toposort())
        np.testing.assert_allclose(f(np.zeros(2)), [2.0, 2.0])

    def test_bad_bounds_are_refused(self):
        with pytest.raises(ValueError, match="lower bound"):
            nt.grad_clip(nt.dvector(), 1.0, -1.0)
        with pytest.raises(ValueError, match="finite"):
            nt.grad_scale(nt.dvector(), float("nan"))


class TestOpsDeclaredByTypes:
    """item 13: Ops written Theano's short way (itypes/otypes, as_op)."""

    def test_an_op_with_itypes_and_otypes_needs_no_make_node(self):
        from nbgraph.core.op import Op

        class Double(Op):
            itypes = [TensorType("float64", (None,))]
            otypes = [TensorType("float64", (None,))]

            def perform(self, node, inputs, output_storage):
                output_storage[0][0] = inputs[0] * 2

        x = nt.dvector("x")
        f = ng.function([x], Double()(x) + 1, linker="py")
        np.testing.assert_array_equal(f(np.arange(3.0)), [1.0, 3.0, 5.0])
        with pytest.raises(TypeError, match="input 0"):
            Double()(nt.lvector("i"))
        with pytest.raises(TypeError, match="takes 1 inputs"):
            Double()(x, x)

    def test_as_op_wraps_a_numpy_function(self):
        from nbgraph.core.op import as_op

        @as_op(itypes=[TensorType("float64", (None, None))],
               otypes=[TensorType("float64", (None,))],
               infer_shape=lambda node, shapes: [(shapes[0][0],)])
        def row_norms(a):
            return np.sqrt((a ** 2).sum(axis=1))

        m = nt.dmatrix("m")
        out = row_norms(m)
        a = np.arange(6.0).reshape(2, 3)
        np.testing.assert_allclose(ng.function([m], out, linker="cvm")(a),
                                   np.linalg.norm(a, axis=1))
        assert str(out.owner.op) == "FromFunctionOp{row_norms}"


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_reductions_take_numpys_dtype_and_theanos_acc_dtype(linker):
    # item 13: dtype= accumulates and returns in that dtype; acc_dtype= only accumulates
    x = nt.bvector("x")
    a = np.array([100, 100, 100, -7], dtype="int8")
    cases = [
        (x.sum(dtype="int8"), a.sum(dtype="int8")),
        (x.sum(dtype="float32"), a.sum(dtype="float32")),
        (x.prod(dtype="float64"), a.prod(dtype="float64")),
        (x.mean(dtype="float32"), a.mean(dtype="float32")),
        (nt.sum(x, acc_dtype="int16", dtype="int8"), a.astype("int16").sum().astype("int8")),
        (nt.sum(x, acc_dtype="float64"), a.sum()),
        (nt.prod(x, no_zeros_in_input=True), a.prod()),
    ]
    f = ng.function([x], [c for c, _ in cases], linker=linker)
    for got, (var, expected) in zip(f(a), cases, strict=True):
        assert var.dtype == np.asarray(expected).dtype
        assert got.dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(TypeError, match="float"):
        x.mean(dtype="int32")


def test_vector_dot_gradients_keep_static_sizes():
    # item 11: the two vectors share one length, so (1,) is known for both gradients
    a = TensorType("float64", (1,))("a")
    for b in (nt.dvector("b"), nt.fvector("bf")):
        ga, gb = ng.grad(nt.dot(a, b), [a, b])
        assert ga.type == a.type and gb.type.shape == (1,) and gb.dtype == b.dtype
        values = ng.function([a, b], [ga, gb], linker="py")(np.array([2.0]),
                                                             np.array([3.0], dtype=b.dtype))
        np.testing.assert_allclose(values[0], [3.0])
        np.testing.assert_allclose(values[1], [2.0])
    verify_grad(lambda u, v: nt.dot(u, v), [np.array([0.5, 2.0]), np.array([1.5, -1.0])])


@pytest.mark.parametrize("other_dtype", ["float64", "float32"])
def test_grad_reaches_the_users_own_weak_constant_after_promotion(other_dtype):
    # item 6: promoting c (a Python-number constant) must not swap it for a new constant
    c = nt.constant(2.0)
    y = nt.tensor(other_dtype, (None,), "y")
    z = c + y
    assert z.dtype == other_dtype
    assert c in graph_inputs([z])
    g = ng.grad(z.sum(), c)
    yv = np.arange(3, dtype=other_dtype)
    assert float(g.eval({y: yv})) == 3.0
    for linker in ["py", "debug"]:
        f = ng.function([y], z, linker=linker, rewrite=None)
        np.testing.assert_array_equal(f(yv), yv + 2.0)
        assert f(yv).dtype == other_dtype


@pytest.mark.parametrize("name, axis, keepdims", [
    ("logaddexp", 1, False), ("hypot", None, True), ("or_", 0, False),
    ("add", (0, 1), False), ("maximum", 0, True)])
@pytest.mark.parametrize("linker", ["py", "debug"])
def test_reduce_folds_any_binary_scalar_op_like_numpys_ufunc_reduce(name, axis, keepdims, linker):
    # item 13: a generic reduction; add/maximum become the built-in Sum/Max
    from nbgraph.tensor import scalar as ps

    dtype = "int32" if name == "or_" else "float64"
    x = nt.tensor(dtype, (None, None), "x")
    value = (np.arange(12).reshape(3, 4) * 1.5 - 4).astype(dtype)
    out = nt.reduce(getattr(ps, name), x, axis, keepdims=keepdims)
    ufunc = np.bitwise_or if name == "or_" else getattr(np, name)
    expected = ufunc.reduce(value, axis=axis, keepdims=keepdims)
    got = ng.function([x], out, linker=linker)(value)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    if name in ("add", "maximum"):
        assert type(out.owner.op).__name__ in ("Reduce", "DimShuffle")


def test_reduce_of_an_op_without_a_ufunc_folds_left_and_refuses_empty_input():
    from nbgraph.tensor import scalar as ps

    x = nt.dvector("x")
    class Average(ps.ScalarOp):  # a user's op: no ufunc, folded left
        nin = 2

        def impl(self, a, b):
            return (a + b) / 2

        nfunc = staticmethod(lambda a, b, out=None: (np.asarray(a) + b) / 2)

    out = nt.reduce(Average(), x)
    assert float(out.eval({x: np.array([4.0, 2.0, 0.0])})) == 1.5
    with pytest.raises(ValueError, match="no identity"):
        ng.function([x], out, linker="py")(np.zeros(0))
    with pytest.raises(np.exceptions.AxisError):
        nt.reduce(ps.logaddexp, x, axis=1)


def test_scalar_and_tensor_convert_both_ways():
    # item 13: a scalar-to-tensor Op (and back), used by as_tensor_variable
    from nbgraph.tensor import scalar as ps

    s = ps.float32("s")
    t = nt.as_tensor_variable(s)
    assert isinstance(t.owner.op, nt.TensorFromScalar) and t.type == nt.TensorType("float32", ())
    assert float((t * 2).eval({s: np.float32(1.5)})) == 3.0
    back = nt.scalar_from_tensor(t * 2)
    assert back.type == ps.float32
    assert float(ng.grad(t * 3, s).eval()) == 3.0
    with pytest.raises(TypeError, match="0-d"):
        nt.scalar_from_tensor(nt.dvector("v"))


def test_as_tensor_variable_takes_ndim_and_dtype():
    # item 13: ndim pads or squeezes leading size-1 dimensions, dtype makes constants
    x = nt.dvector("x")
    assert nt.as_tensor_variable(x, ndim=3).type.shape == (1, 1, None)
    assert nt.as_tensor_variable(nt.tensor("float64", (1, None)), ndim=1).type.shape == (None,)
    assert nt.as_tensor_variable([1, 2], dtype="float32").type == nt.TensorType("float32", (2,))
    assert nt.as_tensor_variable(np.ones((1, 3)), ndim=1).type.shape == (3,)
    with pytest.raises(TypeError, match="float64, not float32"):
        nt.as_tensor_variable(x, dtype="float32")
    with pytest.raises(ValueError):
        nt.as_tensor_variable(nt.dmatrix("m"), ndim=1)
    with pytest.raises(ValueError):
        nt.as_tensor_variable(np.ones((2, 3)), ndim=1)


@pytest.mark.parametrize("build, error", [
    (lambda: nt.sum(nt.dmatrix("m"), axis=2), np.exceptions.AxisError),
    (lambda: nt.max(nt.dvector("v"), axis=-2), np.exceptions.AxisError),
    (lambda: nt.mean(nt.dvector("v"), axis=(0, 0)), ValueError),
    (lambda: nt.exp("abc"), TypeError),
    (lambda: nt.dvector("v") + nt.bmatrix("m").dimshuffle(0, 1, 2), ValueError),
    (lambda: nt.sum(nt.dvector("v"), axis=1.5), TypeError),
    (lambda: nt.dvector("v").reshape((2, "a")), TypeError),
    (lambda: nt.tensor("float64", (-1,)), ValueError),
])
def test_exception_classes_follow_numpy_and_theano(build, error):
    # item 15: TypeError for a wrong type, ValueError for a wrong value, AxisError for an axis
    with pytest.raises(error):
        build()
