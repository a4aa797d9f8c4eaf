"""ScalarOp: the base class of operations on single numbers.

A ScalarOp says what one element of an elementwise computation does, three
ways: ``impl`` (Python, on NumPy scalars), ``nfunc`` (NumPy, on whole arrays;
what Elemwise.perform calls) and ``c_code`` (a C statement on C numbers; what
the C linker and fused kernels inline).  Its output dtypes follow NumPy.
The built-in ops' bases (Unary/Binary/VariadicScalarOp) are here too; the C
text helpers live in :mod:`nbgraph.tensor.scalar_c` and the gradient
conventions in :mod:`nbgraph.tensor.scalar_gradients` (both re-exported here).

A new op needs only ``nin``, ``nout``, ``impl`` and ``c_code``:

>>> import numpy as np
>>> from nbgraph.tensor.scalar_type import float64
>>> class Hypot(ScalarOp):
...     nin = 2
...     def impl(self, a, b):
...         return np.hypot(a, b)
...     def c_code(self, node, name, inputs, outputs, sub):
...         return "%s = hypot(%s, %s);" % (outputs[0], inputs[0], inputs[1])
>>> node = Hypot().make_node(float64("a"), 4.0)
>>> str(Hypot()), node.outputs[0].type
('hypot', ScalarType(float64))
"""

import functools

import numpy as np

from nbgraph.core.graph import Apply
from nbgraph.core.c_interface import CLinkerOp
from nbgraph.core.op import Op
from nbgraph.core.type import MethodNotDefined
from nbgraph.tensor.dtypes import COMPLEX_DTYPES, dtype_name
from nbgraph.tensor.scalar_c import (
    c_cast,
    c_fail,
    c_type_of,
    c_wide_uint as c_wide_uint,  # re-exported (old home)
    dtype_kind,
    element_code,
    float32_twin,
    float_suffix as float_suffix,  # re-exported (old home)
)
from nbgraph.tensor.scalar_gradients import (
    cast_gradient,
    input_gradient,
    input_gradients,
    is_float_dtype as is_float_dtype,  # re-exported (old home)
    zero_gradients,
)
from nbgraph.tensor.scalar_type import (
    ScalarConstant,
    as_scalar,
    get_scalar_type,
    promote_weak,
    strong_constant,
)

__all__ = [
    "ScalarOp", "BuiltinScalarOp", "BinaryScalarOp", "VariadicScalarOp", "UnaryScalarOp",
    "c_cast", "c_fail", "cast_gradient", "input_gradient", "input_gradients", "zero_gradients",
    "with_out",
    "element_code",
]


class _ArrayFunction:
    """Descriptor wrapping a class's raw ``nfunc`` so it honours ``output_dtypes``.

    Accessed on an instance, it returns a callable taking arrays and
    returning arrays of exactly the op's output dtypes.  Accessed on the
    class, it returns the raw function.
    """

    def __init__(self, raw):
        self.raw = raw

    def __get__(self, obj, cls=None):
        if obj is None:
            return self.raw
        return _BoundArrayFunction(obj, self.raw)


class _BoundArrayFunction:
    __slots__ = ("op", "raw")

    def __init__(self, op, raw):
        self.op = op
        self.raw = raw

    def __call__(self, *arrays, **kwargs):
        arrays = [np.asarray(a) for a in arrays]
        kind, expected = self.op._array_plan(self.raw, tuple(a.dtype.name for a in arrays))
        with np.errstate(all="ignore"):
            if kind != "cast_outputs":
                return self.raw(*arrays, **kwargs)
            out = kwargs.pop("out", None)
            result = self.raw(*arrays, **kwargs)
            single = len(expected) == 1
            results = (result,) if single else tuple(result)
            results = tuple(np.asarray(r).astype(d, copy=False)
                            for r, d in zip(results, expected, strict=True))
            if out is not None:
                targets = out if isinstance(out, tuple) else (out,)
                for target, r in zip(targets, results, strict=True):
                    np.copyto(target, r, casting="unsafe")
                results = targets
        return results[0] if single else results

    def __repr__(self):
        return "<nfunc of %s: %r>" % (self.op, self.raw)


def _natural_dtypes(raw, dtypes):
    """Output dtype names NumPy gives when ``raw`` runs on 0-d ones of ``dtypes``."""
    with np.errstate(all="ignore"):
        result = raw(*[np.ones((), dtype=d) for d in dtypes])
    if not isinstance(result, tuple):
        result = (result,)
    return tuple(np.asarray(r).dtype.name for r in result)


class ScalarOp(CLinkerOp, Op):
    """Base of operations on scalars (the element kernels of Elemwise).

    Class attributes:

    ``nin``
        number of inputs; ``-1`` for variadic ops taking two or more
        (``add``, ``mul``: fusion builds n-ary sums and products).
    ``nout``
        number of outputs (default 1).
    ``nfunc``
        a NumPy ufunc or array function computing the op on whole arrays, or
        None.  Set it in a subclass as the raw function (``nfunc = np.hypot``);
        on an instance ``op.nfunc(*arrays, out=None)`` returns arrays of
        exactly :meth:`output_dtypes`.  A raw
        Python function used as nfunc must accept ``out=`` like a ufunc.

    Methods a subclass may provide: :meth:`impl` (Python, on scalars;
    defaults to ``nfunc``), :meth:`c_code`, :meth:`c_support_code`,
    :meth:`grad`, :meth:`output_dtypes`.  Ops equal by class and
    ``__props__`` compare equal; ``str(op)`` is a short lowercase name.
    """

    nin = None
    nout = 1
    nfunc = None
    __props__ = ()
    #: Whether complex inputs are allowed: None (the default) lets NumPy decide
    #: for an op whose ``nfunc`` is a NumPy ufunc (its loops say which dtypes it
    #: has) and refuses complex for any other op; True or False decide.
    complex_support = None
    #: True when :meth:`c_code` computes complex64/complex128 operands as NumPy
    #: does; otherwise such nodes run in Python.
    c_complex = False
    #: True when computing a float16 node in float32 and rounding the result
    #: gives NumPy's float16 answer (its float16 loops do that for arithmetic
    #: and transcendental functions); False for ops that work on the bits of
    #: the format itself (``nextafter``): their float16 nodes run in Python.
    c_half_via_float32 = True
    #: False for ops that are not holomorphic on complex inputs (abs, real,
    #: imag, conj, angle): their :meth:`grad` gives Theano's complex gradient
    #: ``dC/dRe(z) + i dC/dIm(z)`` itself.  For the others Elemwise derives it
    #: from the real formula: ``conj(grad(inputs, conj(gz)))``.
    holomorphic = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        raw = cls.__dict__.get("nfunc")
        if raw is not None and callable(raw) and not isinstance(
                raw, (_ArrayFunction, property)):
            cls.nfunc = _ArrayFunction(raw)

    # -- building --------------------------------------------------------
    def make_node(self, *inputs):
        """Wrap ``inputs`` as scalars, promote weak constants, and build the Apply."""
        self._check_arity(len(inputs))
        variables = []
        for i, x in enumerate(inputs):
            try:
                variables.append(as_scalar(x))
            except (TypeError, ValueError) as exc:
                raise type(exc)("%s: input %d: %s" % (self, i, exc)) from None
        try:
            variables = self.promote_inputs(variables)
        except ValueError as exc:
            raise ValueError("%s: %s" % (self, exc)) from None
        dtypes = [v.type.dtype for v in variables]
        out_dtypes = list(self.output_dtypes(*dtypes))
        if len(out_dtypes) != self._nout():
            raise ValueError("%s.output_dtypes returned %d dtypes for %d outputs" % (
                self, len(out_dtypes), self._nout()))
        outputs = [get_scalar_type(dtype_name(d, "output dtype"))() for d in out_dtypes]
        return Apply(self, variables, outputs)

    def _nout(self):
        return self.nout

    def _check_arity(self, n):
        nin = self.nin
        if nin is None:
            raise TypeError("%s (%s) does not set nin, its number of inputs" % (
                self, type(self).__name__))
        if nin == -1:
            if n < 2:
                raise TypeError("%s takes 2 or more inputs, got %d" % (self, n))
        elif n != nin:
            raise TypeError("%s takes %d input%s, got %d" % (
                self, nin, "" if nin == 1 else "s", n))

    def promote_inputs(self, inputs):
        """Replace weak (Python-number) constants by strong ones (:func:`promote_weak`).

        A Python int too big for the integer dtype NumPy's rule picks is still
        accepted when the op computes in floats anyway (``int8_var / 300``),
        as NumPy accepts it: it becomes a constant of the op's float dtype.
        """
        try:
            return promote_weak(inputs)
        except ValueError:
            rescued = self._promote_into_float_loop(inputs)
            if rescued is None:
                raise
            return rescued

    def _promote_into_float_loop(self, inputs):
        weak = [isinstance(v, ScalarConstant) and v.weak for v in inputs]
        strong = [v.type.dtype for v, w in zip(inputs, weak, strict=True) if not w]
        try:
            dtype = np.result_type(*strong, *[
                v.python_value for v, w in zip(inputs, weak, strict=True) if w]).name
            loop = self.output_dtypes(*[dtype if w else v.type.dtype
                                        for v, w in zip(inputs, weak, strict=True)])[0]
        except (TypeError, ValueError, OverflowError):
            return None
        if np.dtype(dtype).kind not in "iu" or np.dtype(loop).kind != "f":
            return None
        return [strong_constant(v, loop) if w else v for v, w in zip(inputs, weak, strict=True)]

    def output_dtypes(self, *dtypes):
        """Output dtype names for inputs of ``dtypes``.

        With an ``nfunc``: what NumPy gives (asked by running it on 0-d ones;
        float16 from 8-bit integers and bools as in NumPy).  Without:
        ``[np.result_type(*dtypes)] * nout``.
        """
        cache = self.__dict__.setdefault("_dtype_cache", {})
        key = tuple(dtypes)
        found = cache.get(key)
        if found is None:
            found = cache[key] = tuple(self._compute_output_dtypes(key))
        return list(found)

    def _raw_nfunc(self):
        for klass in type(self).__mro__:
            if "nfunc" in klass.__dict__:
                attr = klass.__dict__["nfunc"]
                if isinstance(attr, _ArrayFunction):
                    return attr.raw
                break
        return self.nfunc

    def _compute_output_dtypes(self, dtypes):
        raw = self._raw_nfunc()
        if any(d in COMPLEX_DTYPES for d in dtypes) and not self._allows_complex(raw):
            raise TypeError("%s is not defined for complex inputs (dtypes %s): NumPy has no "
                            "such function on complex numbers" % (self, ", ".join(dtypes)))
        if raw is None:
            return [dtype_name(np.result_type(*dtypes), "output dtype")] * self._nout()
        try:
            natural = _natural_dtypes(raw, dtypes)
        except TypeError as exc:
            raise TypeError("%s does not support inputs of dtype (%s): %s" % (
                self, ", ".join(dtypes), exc)) from None
        out = []
        for d in natural:
            try:
                out.append(dtype_name(d, "output dtype"))
            except TypeError as exc:
                raise TypeError("%s on (%s): %s" % (self, ", ".join(dtypes), exc)) from None
        return out

    def _allows_complex(self, raw):
        if self.complex_support is not None:
            return bool(self.complex_support)
        return isinstance(getattr(raw, "ufunc", raw), np.ufunc)

    def _array_plan(self, raw, dtypes):
        plans = self.__dict__.setdefault("_array_plans", {})
        plan = plans.get(dtypes)
        if plan is None:
            expected = tuple(self.output_dtypes(*dtypes))
            natural = _natural_dtypes(raw, dtypes)
            if natural == expected:
                plan = ("direct", expected)
            else:
                plan = ("cast_outputs", expected)
            plans[dtypes] = plan
        return plan

    # -- running ---------------------------------------------------------
    def impl(self, *values):
        """The outputs for scalar input values (one value, or a tuple when nout > 1)."""
        if self.nfunc is None:
            raise MethodNotDefined("%s has neither impl() nor nfunc" % self)
        return self.nfunc(*values)

    def perform(self, node, inputs, output_storage):
        """Run :meth:`impl` and store NumPy scalars of the output dtypes."""
        with np.errstate(all="ignore"):
            results = self.impl(*inputs)
        if len(node.outputs) == 1:
            results = (results,)
        elif not isinstance(results, (tuple, list)) or len(results) != len(node.outputs):
            raise ValueError("%s.impl must return %d values, got %r" % (
                self, len(node.outputs), results))
        for cell, out, value in zip(output_storage, node.outputs, results, strict=True):
            cell[0] = as_dtype(value, out.type.dtype)

    # -- C ---------------------------------------------------------------
    #: The cost of one element in C, in adds (data, not parsed from C): 1 for
    #: cheap arithmetic, 2 for a division or a square root, 5 for a libm
    #: function (vectorised by libmvec: ~1-2 ns); a Composite sums its nodes'
    #: extra costs.  A loop is split across threads from a size inversely
    #: proportional to it (:mod:`nbgraph.tensor.c_code.parallel`).
    element_cost = 1

    def c_code(self, node, name, inputs, outputs, sub):
        """C statements assigning each of ``outputs`` from ``inputs``.

        ``inputs`` / ``outputs`` are the C names of scalar values of
        ``node.inputs[i].type.c_type`` / ``node.outputs[i].type.c_type``;
        ``name`` is a unique identifier the code may use to make local names;
        ``sub["fail"]`` is a C statement aborting the kernel with an error
        (see :func:`c_fail`).  The code may use ``<math.h>``, ``<stdint.h>``
        and what :meth:`c_support_code` defines.
        """
        raise MethodNotDefined("%s has no C implementation" % self)

    def has_c_code(self, node):
        """True when the subclass defines :meth:`c_code`."""
        return type(self).c_code is not ScalarOp.c_code

    def c_handles_restricted(self, node):
        """Whether the C of ``node`` is right for its float16/complex operands.

        float16: yes when the op has C for the float32 twin of the node (the
        element is computed in float32 and rounded, as NumPy does) and
        :attr:`c_half_via_float32` holds;
        complex: when the class sets :attr:`c_complex`.
        """
        if node is None:
            return False
        dtypes = [v.type.dtype for v in node.inputs + node.outputs]
        if any(d in COMPLEX_DTYPES for d in dtypes):
            return bool(self.c_complex) and "float16" not in dtypes
        if "float16" in dtypes:
            if not self.c_half_via_float32:
                return False
            twin = float32_twin(self, node)
            return twin is not None and bool(self.has_c_code(twin))
        return True

    def c_headers(self):
        """``math.h`` and ``stdint.h``."""
        return ["math.h", "stdint.h"]

    # -- printing --------------------------------------------------------
    def __str__(self):
        name = getattr(type(self), "name", None) or type(self).__name__.lower()
        if self.__props__:
            return "%s{%s}" % (name, ", ".join(str(v) for v in self._props()))
        return name


def as_dtype(value, dtype):
    """``value`` as a NumPy scalar of ``dtype`` (NumPy's conversion rules, no warnings)."""
    if isinstance(value, np.generic) and value.dtype.name == dtype:
        return value
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


# ---------------------------------------------------------------------------
# the built-in ops' shared machinery


class BuiltinScalarOp(ScalarOp):
    """Shared machinery of the built-in ops: a C expression per output and printing.

    Subclasses implement ``c_expr(in_dtypes, out_dtype, args)`` returning the
    C expression of the single output, and may set ``symbol`` (infix
    operator used when printing Composites).
    """

    symbol = None

    def c_code(self, node, name, inputs, outputs, sub):
        in_dtypes = [v.type.dtype for v in node.inputs]
        out_dtype = node.outputs[0].type.dtype
        return "%s = %s;" % (outputs[0], self.c_expr(in_dtypes, out_dtype, list(inputs)))

    def c_code_cache_version(self):
        return (1,)

    def format_expr(self, args):
        """Text of this op applied to the argument texts (for Composite's str)."""
        if self.symbol is not None and len(args) >= 2:
            return "(%s)" % (" %s " % self.symbol).join(args)
        return "%s(%s)" % (self, ", ".join(args))


class BinaryScalarOp(BuiltinScalarOp):
    """A two-input arithmetic op computed in its output dtype (NumPy's loop dtype).

    Subclasses give ``c_bool``, ``c_int`` and ``c_float`` expression builders
    for operands already converted to that dtype.
    """

    nin = 2

    def c_expr(self, in_dtypes, out_dtype, args):
        a = c_cast(args[0], in_dtypes[0], out_dtype)
        b = c_cast(args[1], in_dtypes[1], out_dtype)
        return self.c_loop(a, b, out_dtype)

    def c_loop(self, a, b, dtype):
        """C expression of the op on ``a`` and ``b``, both of ``dtype``."""
        kind = dtype_kind(dtype)
        if kind == "c":
            return self.c_cplx(a, b, dtype)
        if kind == "b":
            return self.c_bool(a, b)
        if kind in "iu":
            return self.c_int(a, b, dtype)
        return self.c_float(a, b, dtype)

    def c_bool(self, a, b):
        raise TypeError("%s has no bool loop" % self)

    def c_cplx(self, a, b, dtype):
        """C of the op on complex ``a`` and ``b`` (ops that set ``c_complex``)."""
        raise TypeError("%s has no complex loop" % self)


class VariadicScalarOp(BinaryScalarOp):
    """An associative op taking two or more inputs (fusion builds n-ary sums).

    ``op(a, b, c)`` means ``op(op(a, b), c)`` with NumPy's dtype at each
    step, so fusing a chain never changes its intermediate dtypes.
    """

    nin = -1

    def c_code(self, node, name, inputs, outputs, sub):
        dtypes = [v.type.dtype for v in node.inputs]
        acc, acc_dtype = inputs[0], dtypes[0]
        lines = []
        for k in range(1, len(inputs)):
            step_dtype = self.output_dtypes(acc_dtype, dtypes[k])[0]
            expr = self.c_loop(c_cast(acc, acc_dtype, step_dtype),
                               c_cast(inputs[k], dtypes[k], step_dtype), step_dtype)
            if k == len(inputs) - 1:
                lines.append("%s = %s;" % (outputs[0], expr))
            else:
                acc = "%s_acc%d" % (name, k)
                lines.append("%s %s = %s;" % (c_type_of(step_dtype), acc, expr))
            acc_dtype = step_dtype
        if len(lines) == 1:
            return lines[0]
        return "{\n%s\n}" % "\n".join(lines)


def fold_ufunc(ufunc):
    """An n-ary ``fold(*arrays, out=None)`` applying the binary ``ufunc`` left to right."""
    def fold(*arrays, out=None):
        result = functools.reduce(ufunc, arrays[:-1])
        return ufunc(result, arrays[-1], out=out)
    fold.__name__ = "%s_n" % ufunc.__name__
    fold.__doc__ = "Left fold of numpy.%s over the arguments." % ufunc.__name__
    fold.ufunc = ufunc  # the binary ufunc, for callers with exactly two operands
    return fold


def with_out(function):
    """Give an array function a ufunc-like ``out=`` argument (the result is copied there)."""
    @functools.wraps(function)
    def wrapper(*arrays, out=None):
        result = function(*arrays)
        if out is None:
            return result
        np.copyto(out, result, casting="unsafe")
        return out
    return wrapper


class UnaryScalarOp(BuiltinScalarOp):
    """A one-input op computed in its output dtype."""

    nin = 1
    prefix = None

    def c_expr(self, in_dtypes, out_dtype, args):
        return self.c_loop(c_cast(args[0], in_dtypes[0], out_dtype), out_dtype)

    def format_expr(self, args):
        if self.prefix is not None:
            return "%s%s" % (self.prefix, args[0])
        return BuiltinScalarOp.format_expr(self, args)
