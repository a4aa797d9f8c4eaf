"""Random numbers: random-variable nodes drawing from NumPy ``Generator`` states.

A :class:`RandomStream` hands out symbolic draws::

    >>> import numpy as np, nbgraph as ng, nbgraph.tensor as nt
    >>> srng = RandomStream(seed=42)
    >>> u = srng.uniform(0.0, 1.0, size=(2,))
    >>> f = ng.function([], u, linker="py")
    >>> a, b = f(), f()           # each call advances the stream
    >>> bool(np.all(a != b))
    True
    >>> srng.seed(42)             # back to the start
    >>> bool(np.all(f() == a))
    True

How it works
============

Each draw gets its own *state*: a shared variable (:class:`RandomGeneratorSharedVariable`)
holding a ``numpy.random.Generator``.  The draw is a node of
:class:`RandomVariable`, whose inputs are that state, the requested ``size``
and the distribution's parameters, and whose outputs are the advanced state
(hidden) and the drawn values.  ``perform`` copies the generator, draws from the
copy and returns both, so the state a function reads is never changed behind
its back.  The shared variable's ``default_update`` is the advanced state:
every compiled function that draws writes it back after each call, so the next
call continues the stream (``function(..., no_default_updates=True)`` or a list
of shared variables turns that off).

Each random variable ``v`` returned has ``v.rng`` (its state) and ``v.update``
(the pair ``(state, advanced state)``), as in Theano.

Seeds: the ``k``-th draw made by ``RandomStream(seed)`` starts from
``np.random.default_rng(np.random.SeedSequence(seed).spawn(k + 1)[k])``, so a
seed gives the same numbers in every run and with every linker (the draws run
in Python, through ``perform``: there is no C sampling; ``linker="c"`` refuses
these nodes with its usual message and ``"cvm"`` runs them in Python), and
two draws are independent streams.  Float32 draws use NumPy's float32
generators (``dtype=np.float32``), a stream of their own.

``normal`` and ``uniform`` are reparameterised: the node draws a standard
variate (of the parameters' broadcast shape) and the result is
``loc + scale * z`` (``low + (high - low) * u``) built from ordinary ops, so
gradients flow into the parameters.  The other distributions give integers
and no gradient.
"""

from collections.abc import Sequence

import numpy as np

from nbgraph.core.gradient_types import DisconnectedGradient, grad_undefined
from nbgraph.config import config
from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.core.op import Op
from nbgraph.core.type import MethodNotDefined, SingletonType
from nbgraph.tensor.elemwise import broadcast_shapes
from nbgraph.tensor.dtypes import FLOAT_DTYPES
from nbgraph.tensor.type import TensorType, normalize_dtype
from nbgraph.tensor.variable import SharedVariable, TensorVariable, as_tensor_variable
from nbgraph.tensor.grad_rules import zero_gradient

__all__ = ["RandomStream", "RandomVariable", "RandomGeneratorType",
           "RandomGeneratorSharedVariable", "random_generator_type"]

Size = int | Sequence | Variable | None


class RandomGeneratorType(SingletonType):
    """The Type of a ``numpy.random.Generator`` (a random state)."""

    def filter(self, data, strict=False, allow_downcast=None):
        if isinstance(data, np.random.Generator):
            return data
        raise TypeError("expected a numpy.random.Generator, got %s %r" % (
            type(data).__name__, data))

    def values_eq(self, a, b):
        return a.bit_generator.state == b.bit_generator.state

    def grad_zeros_like(self, var):
        # a random state carries no gradient; RandomVariable.grad ignores it
        return None

    def __str__(self):
        return "RandomGeneratorType"


random_generator_type = RandomGeneratorType()


class RandomGeneratorSharedVariable(SharedVariable):
    """A shared variable holding a ``numpy.random.Generator``.

    ``get_value``/``set_value`` copy the generator unless ``borrow=True``;
    ``default_update`` (set by :class:`RandomStream`) is the expression
    functions write back after each call.
    """

    def __init__(self, value, name=None):
        TensorVariable.__init__(self, random_generator_type, None, None, name)
        self.container = [random_generator_type.filter(value)]
        self.default_update = None

    def get_value(self, borrow=False):
        value = self.container[0]
        return value if borrow else _copy_generator(value)

    def set_value(self, value, borrow=False):
        value = random_generator_type.filter(value)
        self.container[0] = value if borrow else _copy_generator(value)

    def clone(self, name=None):
        new = RandomGeneratorSharedVariable(self.container[0],
                                            self.name if name is None else name)
        new.container = self.container
        new.default_update = self.default_update
        new.tag = self.tag.copy()
        return new

    def __repr__(self):
        return self.name or "<RandomGenerator>"


def _copy_generator(rng):
    bit = type(rng.bit_generator)()
    bit.state = rng.bit_generator.state
    return np.random.Generator(bit)


# -- the distributions --------------------------------------------------------
# name: (number of parameters, draw(rng, size, params, op) -> array, support ndim)
def _draw_standard_normal(rng, size, params, op):
    return rng.standard_normal(size, dtype=op.dtype)


def _draw_standard_uniform(rng, size, params, op):
    return rng.random(size, dtype=op.dtype)


def _draw_binomial(rng, size, params, op):
    n, p = params
    return rng.binomial(n, p, size)


def _draw_bernoulli(rng, size, params, op):
    return rng.binomial(1, params[0], size)


def _draw_integers(rng, size, params, op):
    low, high = params
    return rng.integers(low, high, size, dtype=np.int64)


def _draw_choice(rng, size, params, op):
    a = params[0]
    a = int(a) if np.ndim(a) == 0 else a
    p = params[1] if len(params) > 1 else None
    return rng.choice(a, size, replace=op.replace, p=p)


def _draw_permutation(rng, size, params, op):
    x = params[0]
    return rng.permutation(int(x) if np.ndim(x) == 0 else x)


def _draw_multinomial(rng, size, params, op):
    n, pvals = params
    return rng.multinomial(n, pvals, size)


_DISTRIBUTIONS = {
    "standard_normal": _draw_standard_normal,
    "standard_uniform": _draw_standard_uniform,
    "binomial": _draw_binomial,
    "bernoulli": _draw_bernoulli,
    "integers": _draw_integers,
    "choice": _draw_choice,
    "permutation": _draw_permutation,
    "multinomial": _draw_multinomial,
}
#: distributions whose values broadcast their parameters elementwise
_ELEMENTWISE = ("standard_normal", "standard_uniform", "binomial", "bernoulli", "integers")


class RandomVariable(Op):
    """Draws from a NumPy Generator: inputs ``(rng, size, *params)``, outputs
    ``(new_rng, values)`` (``values`` is the default output).

    ``dist`` names the distribution (see the module doc), ``dtype`` the values'
    dtype, ``ndim`` their number of dimensions, ``has_size`` whether ``size``
    was given (an int64 vector; ignored otherwise), ``replace`` is ``choice``'s.
    For the two standard distributions the parameters only give the shape.
    """

    __props__ = ("dist", "dtype", "ndim", "has_size", "replace")
    default_output = 1

    def __init__(self, dist, dtype, ndim, has_size, replace=True):
        if dist not in _DISTRIBUTIONS:
            raise ValueError("unknown distribution %r; known: %s" % (
                dist, ", ".join(sorted(_DISTRIBUTIONS))))
        self.dist = dist
        self.dtype = normalize_dtype(dtype)
        self.ndim = int(ndim)
        self.has_size = bool(has_size)
        self.replace = bool(replace)

    def make_node(self, rng, size, *params, static_shape=None):
        if not isinstance(rng, Variable) or rng.type != random_generator_type:
            raise TypeError("RandomVariable: rng must be a variable of RandomGeneratorType, "
                            "got %r" % (rng,))
        size = as_tensor_variable(size)
        if size.type.ndim != 1 or size.type.dtype != "int64":
            raise TypeError("RandomVariable: size must be an int64 vector, got %r" % (size,))
        params = [as_tensor_variable(p) for p in params]
        shape = static_shape if static_shape is not None else (None,) * self.ndim
        outputs = [random_generator_type(), TensorType(self.dtype, shape)()]
        return Apply(self, [rng, size] + params, outputs)

    def perform(self, node, inputs, output_storage):
        rng, size, *params = inputs
        rng = _copy_generator(rng)
        shape = tuple(int(s) for s in size) if self.has_size else None
        if shape is not None and self.dist in _ELEMENTWISE and params:
            try:
                full = np.broadcast_shapes(shape, *[np.shape(p) for p in params])
            except ValueError:
                full = None
            if full != shape:
                raise ValueError("%s: parameters of shapes %s do not broadcast to size %s" % (
                    self.dist, [np.shape(p) for p in params], shape))
        elif shape is None and self.dist in ("standard_normal", "standard_uniform"):
            shape = np.broadcast_shapes(*[np.shape(p) for p in params])
        value = _DISTRIBUTIONS[self.dist](rng, shape, params, self)
        output_storage[0][0] = rng
        output_storage[1][0] = np.asarray(value, dtype=self.dtype)

    def grad(self, inputs, output_grads):
        # the state and the size only choose which numbers come out; a draw has no
        # gradient in its parameters (normal and uniform get theirs from the ops
        # around their standard draw, which reads its parameters' shapes only)
        rng, size, *params = inputs
        if self.dist in ("standard_normal", "standard_uniform"):  # params give the shape only
            return [DisconnectedGradient(), DisconnectedGradient()] + [
                zero_gradient(p) for p in params]
        return [DisconnectedGradient(), DisconnectedGradient()] + [
            grad_undefined(self, 2 + i, p, "a random draw has no gradient in its parameters")
            for i, p in enumerate(params)]

    def infer_shape(self, node, input_shapes):
        if self.has_size and self.dist in _ELEMENTWISE + ("choice",):
            size = node.inputs[1]
            return [None, tuple(size[i] for i in range(self.ndim))]
        raise MethodNotDefined("%s: shape known only at run time" % self)

    def do_constant_folding(self, node):
        return False

    def __str__(self):
        return "RandomVariable{%s, %s}" % (self.dist, self.dtype)


# -- the stream -----------------------------------------------------------------
def _size_argument(size):
    """(int64 vector variable, static shape or None, has_size, ndim) for ``size``."""
    if size is None:
        return as_tensor_variable(np.zeros(0, dtype=np.int64)), None, False, None
    if isinstance(size, (int, np.integer)):
        size = (size,)
    if isinstance(size, Variable):
        return _size_vector(size)
    entries = list(size)
    if all(isinstance(s, (int, np.integer)) for s in entries):
        if any(s < 0 for s in entries):
            raise ValueError("size must not have negative entries, got %r" % (tuple(entries),))
        static = tuple(int(s) for s in entries)
        return as_tensor_variable(np.array(static, dtype=np.int64)), static, True, len(static)
    return _size_of_scalars(entries)


def _size_vector(vec):
    """``_size_argument`` of an integer vector Variable of known length."""
    if vec.type.ndim != 1 or vec.type.shape[0] is None:
        raise TypeError("size must be a tuple or a vector of known length, got %r" % (vec,))
    if vec.type.dtype not in ("int64",):
        vec = vec.astype("int64")
    static = tuple(int(s) for s in vec.data) if isinstance(vec, Constant) else None
    return vec, static, True, vec.type.shape[0]


def _size_of_scalars(entries):
    """``_size_argument`` of a sequence holding integer scalar Variables (and ints)."""
    from nbgraph.tensor.basic import stack

    parts = [as_tensor_variable(s) for s in entries]
    for i, s in enumerate(parts):
        if s.type.ndim != 0 or s.type.dtype not in ("int8", "int16", "int32", "int64", "uint8",
                                                      "uint16", "uint32"):
            raise TypeError("size[%d] must be an integer scalar, got %r" % (i, s))
    static = tuple(int(p.data) if isinstance(p, Constant) else None for p in parts)
    return stack([p.astype("int64") for p in parts]), static, True, len(parts)


class RandomStream:
    """A source of symbolic random draws, reproducible for a given ``seed``.

    Every method returns a new random Variable with its own state; compiled
    functions advance the states they read (default updates).  ``seed(s)``
    restarts every state created so far as if the stream were new.
    """

    def __init__(self, seed: int | None = None):
        self.state_updates = []  # (shared state, its update), in creation order
        self.seed(seed)

    def seed(self, seed: int | None = None) -> None:
        """Reseed: the k-th state restarts from the k-th child of SeedSequence(seed)."""
        self._seed_sequence = np.random.SeedSequence(seed)
        for state, _ in self.state_updates:
            state.set_value(self._next_generator(), borrow=True)

    def _next_generator(self):
        return np.random.default_rng(self._seed_sequence.spawn(1)[0])

    def updates(self):
        """The ``(state, new state)`` pairs of every draw made so far."""
        return list(self.state_updates)

    def _draw(self, dist, dtype, size, params, ndim_from_params=0, extra_ndim=0,
              replace=True, static_from_params=None):
        vec, static, has_size, ndim = _size_argument(size)
        if not has_size:
            ndim = ndim_from_params
            static = static_from_params
        ndim += extra_ndim
        if static is not None:
            static = tuple(static) + (None,) * (ndim - len(static))
        state = RandomGeneratorSharedVariable(self._next_generator(),
                                              name="rng%d" % len(self.state_updates))
        op = RandomVariable(dist, dtype, ndim, has_size, replace)
        node = op.make_node(state, vec, *params, static_shape=static)
        state.default_update = node.outputs[0]
        self.state_updates.append((state, node.outputs[0]))
        return _with_state(node.outputs[1], node.outputs[1])

    @staticmethod
    def _params(*values):
        params = [as_tensor_variable(v) for v in values]
        ndim = max([p.ndim for p in params] + [0])
        shapes = [(1,) * (ndim - p.ndim) + tuple(p.type.shape) for p in params]
        try:
            static = broadcast_shapes(*shapes) if params else ()
        except ValueError as exc:
            raise ValueError("the parameters do not broadcast: %s" % exc) from None
        return params, ndim, static

    def _float_dtype(self, dtype):
        dtype = normalize_dtype(dtype or config.floatX)
        if dtype not in FLOAT_DTYPES:
            raise TypeError("dtype must be float32 or float64 for a continuous draw, got %r"
                            % (dtype,))
        return dtype

    def normal(self, loc=0.0, scale=1.0, size: Size = None, dtype=None) -> TensorVariable:
        """Normal draws ``loc + scale * z``, ``z`` standard normal (gradients flow into
        ``loc`` and ``scale``)."""
        dtype = self._float_dtype(dtype)
        params, ndim, static = self._params(loc, scale)
        z = self._draw("standard_normal", dtype, size, params, ndim, static_from_params=static)
        return _with_state(_affine(z, loc, scale, 0.0, 1.0), z)

    def uniform(self, low=0.0, high=1.0, size: Size = None, dtype=None) -> TensorVariable:
        """Uniform draws on ``[low, high)``: ``low + (high - low) * u`` (differentiable in
        ``low`` and ``high``)."""
        dtype = self._float_dtype(dtype)
        params, ndim, static = self._params(low, high)
        u = self._draw("standard_uniform", dtype, size, params, ndim,
                       static_from_params=static)
        if _is_value(low, 0.0) and _is_value(high, 1.0):
            return u
        low_v, high_v = as_tensor_variable(low), as_tensor_variable(high)
        return _with_state(low_v + (high_v - low_v) * u, u)

    def binomial(self, n=1, p=0.5, size: Size = None, dtype="int64") -> TensorVariable:
        """Number of successes in ``n`` trials of probability ``p``."""
        params, ndim, static = self._params(n, p)
        return self._draw("binomial", dtype, size, params, ndim, static_from_params=static)

    def bernoulli(self, p=0.5, size: Size = None, dtype="int64") -> TensorVariable:
        """1 with probability ``p``, else 0."""
        params, ndim, static = self._params(p)
        return self._draw("bernoulli", dtype, size, params, ndim, static_from_params=static)

    def integers(self, low, high=None, size: Size = None, dtype="int64") -> TensorVariable:
        """Integers uniform on ``[low, high)`` (``[0, low)`` when ``high`` is None)."""
        if high is None:
            low, high = 0, low
        params, ndim, static = self._params(low, high)
        return self._draw("integers", dtype, size, params, ndim, static_from_params=static)

    def choice(self, a, size: Size = None, replace=True, p=None, dtype=None) -> TensorVariable:
        """Samples of ``a`` (a 1-d array, or an int n for ``arange(n)``), optionally
        without replacement or with probabilities ``p``."""
        a = as_tensor_variable(a)
        if a.ndim > 1:
            raise TypeError("choice: a must be an int or a vector, got %r" % (a,))
        params = [a] if p is None else [a, as_tensor_variable(p)]
        dtype = dtype or (a.dtype if a.ndim == 1 else "int64")
        return self._draw("choice", dtype, size, params, 0, replace=replace,
                          static_from_params=())

    def permutation(self, x, dtype=None) -> TensorVariable:
        """A shuffled copy of ``x`` along its first axis (``arange(x)`` shuffled for an int)."""
        x = as_tensor_variable(x)
        ndim = 1 if x.ndim == 0 else x.ndim
        dtype = dtype or ("int64" if x.ndim == 0 else x.dtype)
        static = (x.type.shape if x.ndim else
                  ((int(x.data),) if isinstance(x, Constant) else (None,)))
        return self._draw("permutation", dtype, None, [x], ndim, static_from_params=static)

    def multinomial(self, n, pvals, size: Size = None, dtype="int64") -> TensorVariable:
        """Counts of ``n`` draws among ``len(pvals)`` outcomes (last axis of ``pvals``)."""
        n, pvals = as_tensor_variable(n), as_tensor_variable(pvals)
        if pvals.ndim < 1:
            raise TypeError("multinomial: pvals must have at least one dimension, got %r"
                            % (pvals,))
        batch = max(n.ndim, pvals.ndim - 1)
        return self._draw("multinomial", dtype, size, [n, pvals], batch, extra_ndim=1)


def _with_state(result, draw):
    """``result`` with Theano's attributes of a random variable: ``rng`` (the shared
    state it draws from) and ``update`` (that state and its advanced value)."""
    node = draw.owner
    result.rng = node.inputs[0]
    result.update = (node.inputs[0], node.outputs[0])
    return result


def _is_value(x, value):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x == value
    return False


def _affine(z, loc, scale, zero, one):
    out = z
    if not _is_value(scale, one):
        out = as_tensor_variable(scale) * out
    if not _is_value(loc, zero):
        out = as_tensor_variable(loc) + out
    return out
