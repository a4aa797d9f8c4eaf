"""Small Types and Ops the core tests build graphs from.

nbgraph.core knows nothing about tensors, so its tests use toys:

* :class:`DoubleType` - the seed's worked example, a Type for Python floats,
  plus the three gradient hooks the core's ``grad`` needs.  ``double`` is the
  single advertised instance every toy Op uses (the seed's third remedy for
  "two DoubleType() instances are unequal").
* :class:`BoundedType` - floats known to lie in ``[lo, hi]``; a narrower
  interval is a subtype, and ``convert_variable`` narrows through
  :class:`Narrow`.  It exercises the "keep / convert / refuse" decisions of
  ``filter_variable``.
* Ops over doubles: :data:`add`, :data:`mul`, :data:`neg`, :class:`Scale`
  (parametrised), :data:`floor` (no grad), :data:`round_` (undefined grad),
  :data:`divmod_` (two outputs, no default), :data:`with_scratch` (a hidden
  second output).
* :func:`evaluate` - a ten-line interpreter (toposort + run_node) so tests can
  check the numbers a graph, or its gradient, computes.
"""

import math

from nbgraph.core import Apply, Constant, Op, Type, Variable, run_node, toposort
from nbgraph.core.op import NullGradient


class DoubleType(Type):
    """Python floats, following the seed's filter and values_eq_approx rules."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict:
            # strict: the value must already be a float; nothing is converted.
            if isinstance(x, float):
                return x
            raise TypeError("expected a float, got %s %r" % (type(x).__name__, x))
        if allow_downcast:
            return float(x)
        # allow_downcast False or None: convert only when nothing is lost.
        converted = float(x)
        if converted == x:
            return converted
        raise TypeError(
            "DoubleType cannot hold %r (%s) exactly; pass allow_downcast=True to "
            "accept the rounding" % (x, type(x).__name__))

    def values_eq_approx(self, x, y, tolerance=1e-4):
        if x == y:  # also covers 0 == 0, where the relative error is 0/0
            return True
        return abs(x - y) / (abs(x) + abs(y)) < tolerance

    # gradient hooks used by nbgraph.core.grad
    def grad_ones_like(self, var):
        return Constant(self, 1.0)

    def grad_zeros_like(self, var):
        return Constant(self, 0.0)

    def grad_sum(self, terms):
        total = terms[0]
        for term in terms[1:]:
            total = add(total, term)
        return total


#: The one DoubleType every toy Op uses.
double = DoubleType()


def as_double(value, position):
    """``value`` as a Variable of type ``double``; TypeError naming ``position``."""
    if isinstance(value, Variable):
        if value.type != double:
            raise TypeError("argument %d must be a double Variable, got %r of type %r" % (
                position, value, value.type))
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Constant(double, value)
    raise TypeError("argument %d must be a double, got %s %r" % (
        position, type(value).__name__, value))


class BinaryDoubleOp(Op):
    """Two doubles in, one double out."""

    __props__ = ()

    def make_node(self, x, y):
        return Apply(self, [as_double(x, 0), as_double(y, 1)], [double()])


class Add(BinaryDoubleOp):
    def perform(self, node, inputs, output_storage):
        x, y = inputs
        output_storage[0][0] = x + y

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return [gz, gz]


class Mul(BinaryDoubleOp):
    def perform(self, node, inputs, output_storage):
        x, y = inputs
        output_storage[0][0] = x * y

    def grad(self, inputs, output_grads):
        x, y = inputs
        (gz,) = output_grads
        return [mul(gz, y), mul(gz, x)]


class UnaryDoubleOp(Op):
    __props__ = ()

    def make_node(self, x):
        return Apply(self, [as_double(x, 0)], [double()])


class Neg(UnaryDoubleOp):
    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = -inputs[0]

    def grad(self, inputs, output_grads):
        return [neg(output_grads[0])]


class Floor(UnaryDoubleOp):
    """An Op without grad()."""

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = float(math.floor(inputs[0]))


class Round(UnaryDoubleOp):
    """An Op whose gradient is declared undefined."""

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = float(round(inputs[0]))

    def grad(self, inputs, output_grads):
        return [NullGradient("rounding is not differentiable")]


class Scale(UnaryDoubleOp):
    """``factor * x + offset``: a parametrised Op."""

    __props__ = ("factor", "offset")

    def __init__(self, factor, offset=0.0):
        self.factor = factor
        self.offset = offset

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.factor * inputs[0] + self.offset

    def grad(self, inputs, output_grads):
        return [Scale(self.factor)(output_grads[0])]


class DivMod(Op):
    """Two outputs (quotient, remainder) and no default output."""

    __props__ = ()

    def make_node(self, x, y):
        return Apply(self, [as_double(x, 0), as_double(y, 1)], [double(), double()])

    def perform(self, node, inputs, output_storage):
        q, r = divmod(*inputs)
        output_storage[0][0] = float(q)
        output_storage[1][0] = float(r)


class WithScratch(Op):
    """Output 0 is the result; output 1 a hidden scratch value (default_output=0)."""

    __props__ = ()
    default_output = 0

    def make_node(self, x):
        return Apply(self, [as_double(x, 0)], [double(), double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] + 1.0
        output_storage[1][0] = 0.0


add = Add()
mul = Mul()
neg = Neg()
floor = Floor()
round_ = Round()
divmod_ = DivMod()
with_scratch = WithScratch()


class BoundedType(Type):
    """Floats in ``[lo, hi]``; ``BoundedType(0, 10).is_super(BoundedType(2, 3))``."""

    __props__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not isinstance(x, float):
            raise TypeError("expected a float, got %s" % type(x).__name__)
        x = float(x)
        if not self.lo <= x <= self.hi:
            raise ValueError("%r is outside [%r, %r]" % (x, self.lo, self.hi))
        return x

    def in_same_class(self, otype):
        return isinstance(otype, BoundedType)

    def is_super(self, otype):
        if not isinstance(otype, BoundedType):
            return False
        return self.lo <= otype.lo and otype.hi <= self.hi

    def convert_variable(self, var):
        if isinstance(var.type, BoundedType):
            return Narrow(self.lo, self.hi)(var)
        return None


class Narrow(Op):
    """Asserts (and clips to) a narrower interval: the conversion of BoundedType."""

    __props__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    def make_node(self, x):
        return Apply(self, [x], [BoundedType(self.lo, self.hi)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = min(max(inputs[0], self.lo), self.hi)


class BoundedIdentity(Op):
    """Reads one BoundedType value and passes it on with the same type."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]


def evaluate(outputs, givens):
    """Values of ``outputs`` (a Variable or a list) given ``{input: value}``."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    values = dict(givens)

    def value_of(var):
        if isinstance(var, Constant):
            return var.data
        return values[var]

    for node in toposort(outs):
        results = run_node(node, [value_of(v) for v in node.inputs])
        values.update(zip(node.outputs, results, strict=True))
    computed = [value_of(o) for o in outs]
    return computed[0] if single else computed


def chain(x, length, op=None):
    """``op(op(...op(x)))`` with ``length`` applications (default: neg)."""
    op = neg if op is None else op
    out = x
    for _ in range(length):
        out = op(out)
    return out
