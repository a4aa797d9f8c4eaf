"""Exception classes over the public API (issue 21, item 15): NumPy's and Theano's usage.

One row per refusal: a wrong type raises TypeError, a wrong value ValueError,
an axis out of range ``numpy.exceptions.AxisError`` (a ValueError and an
IndexError, as in NumPy), a bad index IndexError, and the message names the
argument at fault.  Where NumPy has the same call, its exception must be of
the same family as ours (ours is an instance of the most specific of
AxisError, IndexError, TypeError and ValueError that NumPy's is), so an
``except`` clause written for NumPy or Theano catches nbgraph's.

Deliberate choices, each tested below: an index of the wrong type
(``x[1.5]``) raises :class:`~nbgraph.tensor.subtensor.IndexTypeError`, both a
TypeError (Theano) and an IndexError (NumPy); a value a function's input
Type refuses is a TypeError whatever the reason (dtype, ndim or a static
size: Theano's ``filter``); a name ``eval`` does not know is a KeyError.
"""

import numpy as np
import pytest
from numpy.exceptions import AxisError

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.tensor.scalar_type import float64 as scalar_float64
from nbgraph.tensor.subtensor import IndexTypeError

x = nt.dmatrix("x")
v = nt.dvector("v")
w = nt.dvector("w")
s = nt.dscalar("s")
z = nt.zvector("z")
v3 = nt.dvector("v3", shape=(3,))
m23 = nt.dmatrix("m23", shape=(2, 3))
A = np.ones((2, 2))
FAMILIES = (AxisError, IndexError, KeyError, TypeError, ValueError)


def _run(inputs, output, *values):
    return ng.function(inputs, output, linker="py")(*values)


_f = ng.function([x], x * 2, linker="py")
_fv3 = ng.function([v3], v3 * 2, linker="py")


def _q_function():
    q = nt.fmatrix("q")
    return ng.function([q], q * 1, linker="py")


# (id, nbgraph call, exception class, message fragment naming the argument, NumPy call or None)
CASES = [
    # -- tensor constructors -------------------------------------------------------------
    ("tensor dtype", lambda: nt.tensor(dtype="float33", shape=(None,)), TypeError, "float33",
     lambda: np.zeros(1, dtype="float33")),
    ("tensor shape entry type", lambda: nt.tensor(dtype="float64", shape=(2, "a")), TypeError,
     "shape entry 1", lambda: np.zeros((2, "a"))),
    ("tensor shape entry negative", lambda: nt.tensor(dtype="float64", shape=(-1,)),
     ValueError, "shape entry 0", lambda: np.zeros((-1,))),
    ("typed constructor shape list", lambda: nt.dvector(shape=[2]), TypeError, "shape", None),
    ("typed constructor shape length", lambda: nt.dvector(shape=(2, 3)), ValueError,
     "dimension", None),
    ("row of two rows", lambda: nt.row(shape=(2, 5)), ValueError, "dimension 0", None),
    ("complex constructor shape", lambda: nt.zmatrix(shape=(2,)), ValueError, "dimension",
     None),
    ("constant of an object", lambda: nt.constant(object()), TypeError, "object", None),
    ("as_tensor_variable of a str", lambda: nt.as_tensor_variable("abc"), TypeError, "str",
     None),
    ("as_tensor_variable ndim type", lambda: nt.as_tensor_variable(x, ndim="a"), TypeError,
     "ndim", None),
    ("as_tensor_variable ndim negative", lambda: nt.as_tensor_variable(x, ndim=-1),
     ValueError, "ndim", None),
    ("as_tensor_variable ndim too small", lambda: nt.as_tensor_variable(x, ndim=1),
     ValueError, "1 dimensions", None),
    ("as_tensor_variable dtype", lambda: nt.as_tensor_variable(x, dtype="foo"), TypeError,
     "foo", lambda: np.asarray(A, dtype="foo")),
    ("shared of a str", lambda: ng.shared("abc"), TypeError, "str", None),
    # -- Ops' make_node ------------------------------------------------------------------
    ("elemwise operand type", lambda: nt.add(x, "a"), TypeError, "argument 1",
     lambda: np.add(A, "a")),
    ("elemwise arity", lambda: nt.exp(x, x, x), TypeError, "takes 1 inputs", None),
    ("static shapes that cannot broadcast", lambda: v3 + nt.dvector(shape=(4,)), ValueError,
     "dimension 0", lambda: np.ones(3) + np.ones(4)),
    ("dot static inner sizes", lambda: nt.dot(m23, nt.dvector(shape=(4,))), ValueError,
     "inner dimensions", lambda: np.dot(np.ones((2, 3)), np.ones(4))),
    ("dot operand type", lambda: nt.dot(x, "a"), TypeError, "y", None),
    ("outer of a matrix", lambda: nt.outer(x, v), TypeError, "2-d x", None),
    ("cast dtype", lambda: nt.cast(x, "float33"), TypeError, "float33",
     lambda: A.astype("float33")),
    ("complex operand of floor", lambda: nt.floor(z), TypeError, "complex",
     lambda: np.floor(np.ones(2, complex))),
    ("switch condition type", lambda: nt.switch("a", x, x), TypeError, "argument 0", None),
    # -- reductions and axis arguments -----------------------------------------------------
    ("sum axis out of range", lambda: x.sum(axis=2), AxisError, "axis 2",
     lambda: A.sum(axis=2)),
    ("sum negative axis out of range", lambda: x.sum(axis=-3), AxisError, "axis -3",
     lambda: A.sum(axis=-3)),
    ("sum axis type", lambda: x.sum(axis=1.5), TypeError, "axis", lambda: A.sum(axis=1.5)),
    ("sum repeated axis", lambda: x.sum(axis=(0, 0)), ValueError, "axis",
     lambda: A.sum(axis=(0, 0))),
    ("sum dtype", lambda: x.sum(dtype="foo"), TypeError, "dtype", lambda: A.sum(dtype="foo")),
    ("sum acc_dtype", lambda: x.sum(acc_dtype="foo"), TypeError, "acc_dtype", None),
    ("max axis", lambda: x.max(axis=5), AxisError, "axis 5", lambda: A.max(axis=5)),
    ("min axis", lambda: x.min(axis=5), AxisError, "axis 5", lambda: A.min(axis=5)),
    ("mean axis", lambda: x.mean(axis=5), AxisError, "axis 5", lambda: A.mean(axis=5)),
    ("mean axis type", lambda: x.mean(axis=0.5), TypeError, "axis", lambda: A.mean(axis=0.5)),
    ("prod axis", lambda: x.prod(axis=5), AxisError, "axis 5", lambda: A.prod(axis=5)),
    ("var axis", lambda: x.var(axis=5), AxisError, "axis 5", lambda: A.var(axis=5)),
    ("std axis", lambda: x.std(axis=5), AxisError, "axis 5", lambda: A.std(axis=5)),
    ("all axis", lambda: nt.all(x, axis=5), AxisError, "axis 5", lambda: A.all(axis=5)),
    ("any axis", lambda: nt.any(x, axis=5), AxisError, "axis 5", lambda: A.any(axis=5)),
    ("argmax axis", lambda: nt.argmax(x, axis=5), AxisError, "axis 5",
     lambda: A.argmax(axis=5)),
    ("argmax axis type", lambda: nt.argmax(x, axis=0.5), TypeError, "axis",
     lambda: A.argmax(axis=0.5)),
    ("sort axis", lambda: nt.sort(x, axis=3), AxisError, "axis 3", lambda: np.sort(A, 3)),
    ("sort axis type", lambda: nt.sort(x, axis=0.5), TypeError, "axis",
     lambda: np.sort(A, 0.5)),
    ("argsort axis", lambda: nt.argsort(x, axis=5), AxisError, "axis 5",
     lambda: np.argsort(A, 5)),
    ("cumsum axis", lambda: nt.cumsum(x, axis=3), AxisError, "axis 3",
     lambda: np.cumsum(A, 3)),
    ("cumprod axis", lambda: nt.cumprod(x, axis=5), AxisError, "axis 5",
     lambda: np.cumprod(A, 5)),
    ("softmax axis", lambda: nt.softmax(x, axis=5), AxisError, "axis 5",
     lambda: A.max(axis=5)),
    ("log_softmax axis", lambda: nt.log_softmax(x, axis=5), AxisError, "axis 5",
     lambda: A.max(axis=5)),
    ("logsumexp axis", lambda: nt.logsumexp(x, axis=5), AxisError, "axis 5",
     lambda: A.max(axis=5)),
    ("squeeze axis", lambda: nt.squeeze(x, axis=5), AxisError, "axis 5",
     lambda: np.squeeze(A, 5)),
    ("squeeze of a size that is not 1", lambda: nt.squeeze(m23, axis=0), ValueError,
     "axis 0", lambda: np.squeeze(np.ones((2, 3)), 0)),
    ("transpose repeated axis", lambda: nt.transpose(x, (0, 0)), ValueError, "repeated axis",
     lambda: A.transpose((0, 0))),
    ("transpose axis", lambda: nt.transpose(x, (0, 5)), AxisError, "5",
     lambda: A.transpose((0, 5))),
    ("swapaxes axis", lambda: nt.swapaxes(x, 0, 5), AxisError, "axis2",
     lambda: np.swapaxes(A, 0, 5)),
    ("moveaxis destination", lambda: nt.moveaxis(x, 0, 5), AxisError, "destination",
     lambda: np.moveaxis(A, 0, 5)),
    ("expand_dims axis", lambda: nt.expand_dims(x, 5), AxisError, "axis 5",
     lambda: np.expand_dims(A, 5)),
    ("repeat axis", lambda: nt.repeat(x, 2, axis=5), AxisError, "axis 5",
     lambda: np.repeat(A, 2, axis=5)),
    ("take axis", lambda: nt.take(x, nt.lvector(), axis=5), AxisError, "axis 5",
     lambda: np.take(A, [0], axis=5)),
    ("diff axis", lambda: nt.diff(x, axis=5), AxisError, "axis 5", lambda: np.diff(A, axis=5)),
    ("roll axis", lambda: nt.roll(x, 1, axis=5), AxisError, "axis 5",
     lambda: np.roll(A, 1, axis=5)),
    # -- reshape, indexing, join, alloc ----------------------------------------------------
    ("reshape two unknown sizes", lambda: x.reshape((2, -1, -1)), ValueError, "-1",
     lambda: A.reshape((2, -1, -1))),
    ("reshape static size", lambda: v3.reshape((4,)), ValueError, "(3,)",
     lambda: np.ones(3).reshape((4,))),
    ("reshape shape type", lambda: x.reshape("a"), TypeError, "shape entry 0",
     lambda: A.reshape("a")),
    ("reshape shape entry type", lambda: x.reshape((2.5, 2)), TypeError, "shape entry 0",
     lambda: A.reshape((2.5, 2))),
    ("index of a float", lambda: v[1.5], IndexTypeError, "index", lambda: np.ones(2)[1.5]),
    ("index of a str", lambda: v["a"], IndexTypeError, "index", lambda: np.ones(2)["a"]),
    ("index by a float Variable", lambda: v[s], IndexTypeError, "index", None),
    ("slice bound of a float", lambda: v[1.5:], TypeError, "slice start",
     lambda: np.ones(2)[1.5:]),
    ("too many indices", lambda: x[0, 0, 0], IndexError, "too many indices",
     lambda: A[0, 0, 0]),
    ("index out of static bounds", lambda: v3[5], IndexError, "index 5",
     lambda: np.ones(3)[5]),
    ("concatenate axis", lambda: nt.concatenate([x, x], axis=3), AxisError, "axis 3",
     lambda: np.concatenate([A, A], axis=3)),
    ("concatenate axis type", lambda: nt.concatenate([x, x], axis=0.5), TypeError, "axis",
     lambda: np.concatenate([A, A], axis=0.5)),
    ("concatenate ndims", lambda: nt.concatenate([x, v]), ValueError, "tensor 1",
     lambda: np.concatenate([A, np.ones(2)])),
    ("concatenate static sizes", lambda: nt.concatenate([m23, nt.dmatrix(shape=(2, 4))]),
     ValueError, "dimension 1", lambda: np.concatenate([np.ones((2, 3)), np.ones((2, 4))])),
    ("concatenate nothing", lambda: nt.concatenate([]), ValueError, "at least one",
     lambda: np.concatenate([])),
    ("stack axis", lambda: nt.stack([x, x], axis=5), AxisError, "axis 5",
     lambda: np.stack([A, A], axis=5)),
    ("stack nothing", lambda: nt.stack([]), ValueError, "at least one", lambda: np.stack([])),
    ("alloc negative size", lambda: nt.alloc(s, -1), ValueError, "shape entry 0",
     lambda: np.empty(-1)),
    ("alloc size type", lambda: nt.alloc(s, 2.5), TypeError, "shape entry 0",
     lambda: np.empty(2.5)),
    ("zeros size type", lambda: nt.zeros((2, "a")), TypeError, "shape entry 1",
     lambda: np.zeros((2, "a"))),
    ("zeros negative size", lambda: nt.zeros((2, -3)), ValueError, "shape entry 1",
     lambda: np.zeros((2, -3))),
    ("eye negative", lambda: nt.eye(-1), ValueError, "N", lambda: np.eye(-1)),
    ("eye size type", lambda: nt.eye(2.5), TypeError, "N", lambda: np.eye(2.5)),
    ("specify_shape conflict", lambda: nt.specify_shape(v3, (4,)), ValueError, "dimension 0",
     None),
    ("set_subtensor of a non-subtensor", lambda: nt.set_subtensor(v, v), TypeError, "v",
     None),
    ("inc_subtensor of too many dimensions", lambda: nt.inc_subtensor(v[0], v), ValueError,
     "1-d v", None),
    # -- function() and eval() inputs --------------------------------------------------------
    ("argument dtype", lambda: _f(np.ones((2, 2), complex)), TypeError, "argument 0 \\(x\\)",
     None),
    ("argument ndim", lambda: _f(np.ones(2)), TypeError, "argument 0 \\(x\\)", None),
    ("argument static size", lambda: _fv3(np.ones(4)), TypeError, "argument 0 \\(v3\\)", None),
    ("argument of a str", lambda: _f("abc"), TypeError, "argument 0 \\(x\\)", None),
    ("argument needing a downcast", lambda: _q_function()(A), TypeError, "argument 0 \\(q\\)",
     None),
    ("too many arguments", lambda: _f(A, A), TypeError, "expects 1 arguments", None),
    ("missing argument", lambda: _f(), TypeError, "expects 1 arguments", None),
    ("unknown keyword argument", lambda: _f(y=A), TypeError, "'y'", None),
    ("a Constant as input", lambda: (lambda c: ng.function([c], c * 2))(nt.constant(1.0)),
     TypeError, "Constant", None),
    ("an input that is not a Variable", lambda: ng.function([3], s), TypeError, "input 0",
     None),
    ("an input listed twice", lambda: ng.function([x, x], x * 2), ValueError, "listed twice",
     None),
    ("a missing input", lambda: ng.function([s], x * 2), ValueError, "input x", None),
    ("an unused input", lambda: ng.function([x, s], x), ValueError, "s", None),
    ("an output that is not a Variable", lambda: ng.function([x], "a"), TypeError, "output 0",
     None),
    ("unknown linker", lambda: ng.function([x], x, linker="zzz"), ValueError, "zzz", None),
    ("on_unused_input value", lambda: ng.function([x], x, on_unused_input="zzz"), ValueError,
     "on_unused_input", None),
    ("updates of a non-shared variable", lambda: ng.function([x], x, updates=[(x, x)]),
     TypeError, "x", None),
    ("eval missing input", lambda: (x * 2).eval({}), ValueError, "input x", None),
    ("eval value its Type refuses", lambda: (x * 2).eval({x: "abc"}), TypeError, "x", None),
    ("eval unknown name", lambda: (x * 2).eval({"nope": A}), KeyError, "nope", None),
    ("run time: shapes that cannot broadcast", lambda: _run([v, w], v + w, np.ones(2),
                                                            np.ones(3)),
     ValueError, "broadcast", lambda: np.ones(2) + np.ones(3)),
    ("run time: dot sizes", lambda: _run([x, v], nt.dot(x, v), np.ones((2, 3)), np.ones(4)),
     ValueError, "dot", lambda: np.dot(np.ones((2, 3)), np.ones(4))),
    ("run time: reshape size", lambda: _run([v], v.reshape((2, 2)), np.ones(5)), ValueError,
     "reshape", lambda: np.ones(5).reshape((2, 2))),
    ("run time: index out of bounds", lambda: _run([v], v[5], np.ones(3)), IndexError,
     "index 5", lambda: np.ones(3)[5]),
    # -- Type.filter -----------------------------------------------------------------------
    ("filter strict dtype", lambda: nt.imatrix().type.filter(A, strict=True), TypeError,
     "int32", None),
    ("filter ndim", lambda: x.type.filter(np.ones(2)), TypeError, "ndim", None),
    ("filter downcast", lambda: nt.fmatrix().type.filter(A), TypeError, "float64", None),
    ("filter str", lambda: x.type.filter("abc"), TypeError, "str", None),
    ("filter static size", lambda: v3.type.filter(np.ones(4)), TypeError, "size 3", None),
    ("filter complex into float", lambda: x.type.filter(np.ones((2, 2), complex)), TypeError,
     "complex128", None),
    ("scalar filter str", lambda: scalar_float64.filter("abc"), TypeError, "str", None),
    # -- grad --------------------------------------------------------------------------------
    ("grad of a non-scalar cost", lambda: ng.grad(x.sum(axis=0), x), TypeError, "scalar cost",
     None),
    ("grad wrt a number", lambda: ng.grad(x.sum(), 3), TypeError, "wrt", None),
    ("grad wrt a list holding a number", lambda: ng.grad(x.sum(), [x, 3]), TypeError,
     "wrt\\[1\\]", None),
    ("grad cost type", lambda: ng.grad("a", x), TypeError, "cost", None),
    ("grad wrt a disconnected input", lambda: ng.grad(x.sum(), v), ValueError, "v", None),
    ("grad disconnected_inputs value", lambda: ng.grad(x.sum(), x, disconnected_inputs="zzz"),
     ValueError, "disconnected_inputs", None),
    ("grad of a complex cost", lambda: ng.grad(z.sum(), z), TypeError, "real cost", None),
    ("grad known_grads value", lambda: ng.grad(None, x, known_grads={x: "a"}), TypeError,
     "known_grads", None),
]


def _family(exc):
    return next(cls for cls in FAMILIES if isinstance(exc, cls))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("call, expected, fragment, numpy_call", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_exception_class_and_message(call, expected, fragment, numpy_call):
    with pytest.raises(expected, match=fragment) as info:
        call()
    if numpy_call is not None:
        with pytest.raises(Exception) as numpy_info:
            numpy_call()
        family = _family(numpy_info.value)
        assert isinstance(info.value, family), "NumPy raises %s, nbgraph %s" % (
            type(numpy_info.value).__name__, type(info.value).__name__)


def test_an_index_of_the_wrong_type_is_caught_as_numpy_and_theano_catch_it():
    for handler in (TypeError, IndexError):
        with pytest.raises(handler):
            v[1.5]
    assert issubclass(AxisError, ValueError) and issubclass(AxisError, IndexError)


def test_the_table_covers_every_area_of_the_issue():
    ids = " ".join(c[0] for c in CASES)
    for word in ["tensor", "constructor", "elemwise", "axis", "reshape", "index", "concatenate",
                 "alloc", "argument", "eval", "filter", "grad"]:
        assert word in ids, word
