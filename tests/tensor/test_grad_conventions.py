"""Gradients on Theano's terms (issue 21, item 14) and the gradient API of item 13.

* ``Op.grad`` returns, for every input, a Variable, zeros, a DisconnectedGradient or
  a NullGradient -- never None -- for every built-in Op we can reach from a broad set
  of expressions, over float and integer inputs;
* an integer input is differentiated as if it were real, in the float dtype the
  computation was in; an Op whose outputs are integers passes zeros back;
* indices and shapes are disconnected; ``grad_undefined`` / ``grad_not_implemented``
  raise only when a requested gradient needs them, naming the Op and the input;
* ``subgraph_grad`` gives the same gradients as one ``grad``, piece by piece.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.core.graph import Apply, Variable, toposort
from nbgraph.core.op import Op
from nbgraph.gradient import (
    DisconnectedGradient, DisconnectedInputError, DisconnectedType, NullGradient,
    NullGradientError, NullType, grad_not_implemented, grad_undefined, subgraph_grad,
)
from nbgraph.tensor.random import RandomStream
from nbgraph.tensor.type import TensorType


def run(inputs, outputs, *values):
    return ng.function(inputs, outputs, linker="py", on_unused_input="ignore")(*values)


# -- the contract: never None ------------------------------------------------------------

def _expressions():
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    v, i = nt.dvector("v"), nt.lvector("i")
    k = nt.lscalar("k")
    m = nt.imatrix("m")
    stream = RandomStream(1)
    return {
        "arithmetic": (x * y + x / y - x ** 2) % 3.0 // 1.5,
        "integer arithmetic": (m * 2 + m // 3 - m % 2) * m,
        "mixed": m * 2.5 + nt.cast(m, "float64") ** 2,
        "comparisons": nt.switch(x > y, x, nt.eq(x, y) * 1.0),
        "unary": nt.exp(x) + nt.log1p(abs(x)) + nt.tanh(x) + nt.sigmoid(x) + nt.sign(x),
        "reductions": x.sum(axis=0) + x.max(axis=0) + x.prod(axis=0) + m.sum(axis=0),
        "shapes": nt.reshape(x, (k, -1)).T.dimshuffle(1, 0, "x").sum() + x.shape[0],
        "indexing": x[k:, 0].sum() + x[i].sum() + m[k].sum() + nt.inc_subtensor(x[k], v).sum(),
        "creation": nt.zeros_like(x).sum() + nt.alloc(v, k, 3).sum() + nt.arange(k).sum(),
        "joins": nt.concatenate([x, y], axis=0).sum() + nt.stack([v, v]).sum(),
        "dot": nt.dot(x, y.T).sum() + nt.dot(m, nt.cast(m, "int64").T).sum() + nt.dot(v, v),
        "nnet": nt.nnet.softmax(x).sum() + nt.argmax(x, axis=1).sum(),
        "random": stream.normal(v, 1.0).sum() + stream.binomial(1, 0.5, size=(3,)).sum(),
    }


@pytest.mark.parametrize("name", sorted(_expressions()))
def test_built_in_ops_never_return_none_from_grad(name):
    out = _expressions()[name]
    nodes = toposort([out])
    assert nodes
    for node in nodes:
        output_grads = [o.type.grad_zeros_like(o) if isinstance(o.type, TensorType) else None
                        for o in node.outputs]
        try:
            grads = node.op.grad(list(node.inputs), output_grads)
        except NotImplementedError:
            continue  # an Op may refuse outright (named in the error)
        assert len(grads) == len(node.inputs), node
        for inp, g in zip(node.inputs, grads, strict=True):
            assert isinstance(g, Variable), "%s.grad returned %r for %r" % (node.op, g, inp)


# -- integers differentiated as if real --------------------------------------------------

def test_the_issue_example_is_two_and_a_half_in_float64():
    x = nt.ivector("x")
    g = ng.grad((x * 2.5).sum(), x)
    assert g.dtype == "float64"
    np.testing.assert_array_equal(run([x], g, np.array([3, -7], "int32")), [2.5, 2.5])


def test_the_gradient_keeps_the_float_dtype_of_the_computation():
    b = nt.tensor("int8", (None,), "b")
    g = ng.grad((b * np.float32(2.5)).sum(), b)  # int8 * float32 is float32 in NumPy
    assert g.dtype == "float32"
    np.testing.assert_array_equal(run([b], g, np.array([1, 2], "int8")), [2.5, 2.5])


FUNCTIONS = {
    "scale": lambda a: a * 2.5,
    "square": lambda a: 0.5 * a ** 2.0,
    "true division": lambda a: a / 3,
    "exp": lambda a: nt.exp(a * 0.1),
    "cast then square": lambda a: nt.cast(a, "float64") ** 2,
    "dot": lambda a: nt.dot(a, nt.constant(np.arange(6.0).reshape(3, 2))),
    "softmax": lambda a: nt.nnet.softmax(a * 0.1) * np.arange(3.0),
    "maximum": lambda a: nt.maximum(a, 1.5) * 2.0,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_inputs_get_the_gradient_of_their_real_values(name, dtype):
    fn = FUNCTIONS[name]
    i = nt.tensor(dtype, (None,), "i")
    f = nt.dvector("f")
    gi = ng.grad(fn(i).sum(), i)
    gf = ng.grad(fn(f).sum(), f)
    assert gi.dtype in ("float32", "float64")
    point = np.array([0, 1, 2], dtype=dtype)
    np.testing.assert_allclose(run([i], gi, point), run([f], gf, point.astype("float64")),
                               rtol=1e-12)


def test_ops_with_integer_outputs_pass_zeros_back():
    i = nt.lvector("i")
    x = nt.dvector("x")
    for cost, wrt in [((i * 3 + 1).sum() * 2.5, i), (nt.cast(x, "int32").sum() * 1.0, x),
                      ((x > 0).sum() * 1.0, x), (nt.argmax(x) * 1.0, x)]:
        g = ng.grad(cost, wrt)  # connected: no error, zeros
        assert g.dtype == "float64"
        point = np.array([1, -2, 3], dtype=wrt.dtype)
        np.testing.assert_array_equal(run([wrt], g, point), np.zeros(3))


# -- disconnected and undefined ----------------------------------------------------------

def test_indices_and_shapes_are_disconnected():
    x, k = nt.dvector("x"), nt.lscalar("k")
    with pytest.raises(DisconnectedInputError, match="k"):
        ng.grad(x[k] * 2.0, k)
    with pytest.raises(DisconnectedInputError, match="x"):
        ng.grad(nt.cast(x.shape[0], "float64"), x)
    g = ng.grad(x[k] * 2.0, k, disconnected_inputs="ignore")
    assert float(run([x, k], g, np.ones(3), 1)) == 0.0
    assert isinstance(x[k].owner.op.grad(x[k].owner.inputs, [nt.dscalar()])[1],
                      DisconnectedGradient)


class _Step(Op):
    """A toy Op whose grad says undefined / not implemented / disconnected by index."""

    __props__ = ("kind",)

    def __init__(self, kind):
        self.kind = kind

    def make_node(self, a, b):
        a, b = nt.as_tensor_variable(a), nt.as_tensor_variable(b)
        return Apply(self, [a, b], [a.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] + np.round(inputs[1])

    def grad(self, inputs, output_grads):
        a, b = inputs
        second = {"undefined": grad_undefined(self, 1, b, "rounding"),
                  "not implemented": grad_not_implemented(self, 1, b),
                  "disconnected": DisconnectedType()()}[self.kind]
        return [output_grads[0], second]


@pytest.mark.parametrize("kind", ["undefined", "not implemented"])
def test_null_gradients_raise_naming_the_op_and_the_input_only_when_needed(kind):
    a, b = nt.dvector("a"), nt.dvector("b")
    cost = _Step(kind)(a, b).sum()
    np.testing.assert_array_equal(run([a, b], ng.grad(cost, a), np.ones(2), np.ones(2)),
                                  np.ones(2))  # b's gradient is not asked for: fine
    with pytest.raises(NullGradientError, match=r"_Step\{%s\}.*input 1 \(b\) is %s"
                       % (kind, kind)):
        ng.grad(cost, b)
    with pytest.raises(NullGradientError):  # undefined above b: undefined at b's inputs too
        c = nt.dvector("c")
        ng.grad(_Step(kind)(a, c * 2.0).sum(), c)


def test_markers_are_variables_of_their_types():
    d = DisconnectedType()()
    assert isinstance(d, DisconnectedGradient) and d.type == DisconnectedType()
    n = grad_undefined("Round", 0, None, "piecewise constant")
    assert isinstance(n, NullGradient) and isinstance(n.type, NullType)
    assert "Round" in n.why and "piecewise constant" in n.why
    with pytest.raises(TypeError, match="no value"):
        d.type.filter(1.0)


def test_an_op_saying_disconnected_leaves_the_input_disconnected():
    a, b = nt.dvector("a"), nt.dvector("b")
    cost = _Step("disconnected")(a, b).sum()
    with pytest.raises(DisconnectedInputError, match="b"):
        ng.grad(cost, b)
    assert ng.grad(cost, [a, b], disconnected_inputs="ignore")[1].dtype == "float64"


def test_none_from_an_op_outside_nbgraph_still_means_zero():
    class Legacy(_Step):
        def grad(self, inputs, output_grads):
            return [output_grads[0], None]

    a, b = nt.dvector("a"), nt.dvector("b")
    g = ng.grad(Legacy("legacy")(a, b).sum(), b)
    np.testing.assert_array_equal(run([a, b], g, np.ones(2), np.ones(2)), np.zeros(2))


def test_a_random_draw_has_no_gradient_in_its_parameters():
    p = nt.dscalar("p")
    draw = RandomStream(0).binomial(1, p, size=(4,), dtype="float64")
    with pytest.raises(NullGradientError, match="random draw"):
        ng.grad(draw.sum(), p)


# -- subgraph_grad -----------------------------------------------------------------------

def test_subgraph_grad_backpropagates_piece_by_piece_like_grad():
    x, w1, w2 = nt.dvector("x"), nt.dvector("w1"), nt.dvector("w2")
    h = nt.tanh(x * w1)
    cost = nt.sum((h * w2) ** 2) + nt.sum(w1 ** 2)
    full = ng.grad(cost, [w1, w2])
    # the upper piece: from the cost down to h
    (g_w2,), (g_h,) = subgraph_grad(wrt=[w2], end=[h], cost=cost)
    # the lower piece: from h's gradient (plus the cost's own w1 term) down to x
    (g_w1,), (g_x,) = subgraph_grad(wrt=[w1], end=[x], start={h: g_h}, cost=nt.sum(w1 ** 2))
    values = (np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.2, -0.1]), np.array([1.0, 2.0, 3.0]))
    got = run([x, w1, w2], [g_w1, g_w2], *values)
    want = run([x, w1, w2], full, *values)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    expected_x = run([x, w1, w2], ng.grad(cost, x), *values)
    np.testing.assert_allclose(run([x, w1, w2], g_x, *values), expected_x, rtol=1e-12)


def test_subgraph_grad_details_and_refusals():
    x, w = nt.dvector("x"), nt.dvector("w")
    h = x * w
    cost = h.sum()
    wrt_grads, end_grads, from_start, from_cost = subgraph_grad(
        wrt=[w], end=[h], cost=cost, details=True)
    assert from_start is None and len(from_cost) == 2
    with pytest.raises(TypeError, match="cost, start gradients, or both"):
        subgraph_grad(wrt=[w], end=[h])
