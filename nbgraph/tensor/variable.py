"""Tensor Variables: operators, constants, shared variables and ``tensor()``.

The typed constructors (``dmatrix``, ...) are in :mod:`nbgraph.tensor.constructors`.

>>> from nbgraph.tensor.constructors import dmatrix, fvector
>>> x = dmatrix("x")
>>> x.type
TensorType(float64, (None, None))
>>> (x + 1).dtype, (fvector() * 2.0).dtype
('float64', 'float32')
"""

from __future__ import annotations

import numbers
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import numpy as np

from nbgraph.core.graph import Constant, Variable
from nbgraph.tensor.type import ALL_DTYPES, TensorType, normalize_dtype, unmask
from nbgraph.tensor.variable_methods import TensorMethods

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

    from nbgraph.tensor.type import StaticShape
    from nbgraph.tensor.op_args import Axes, DTypeLike, ShapeLike, TensorLike

__all__ = [
    "TensorVariable", "TensorConstant", "AnyTensor", "SharedVariable", "as_tensor_variable",
    "constant",
    "shared", "tensor",
]  # the typed constructors (dvector, ...) are in nbgraph.tensor.constructors


_Self = TypeVar("_Self", bound="_TensorOperators")


def _m() -> ModuleType:
    from nbgraph.tensor import math

    return math


class _TensorOperators(TensorMethods):
    """Operators and methods shared by every tensor Variable."""

    type: TensorType

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self.type.ndim

    @property
    def dtype(self) -> str:
        """Dtype name."""
        return self.type.dtype

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """Which dimensions are statically of size 1."""
        return self.type.broadcastable

    @property
    def shape(self) -> AnyTensor:
        """The symbolic shape: an int64 vector (index it for one dimension)."""
        from nbgraph.tensor.basic import shape

        return shape(self)

    @property
    def static_shape(self) -> StaticShape:
        """The static shape tuple of the type (None where unknown)."""
        return self.type.shape

    @property
    def T(self) -> TensorVariable:
        """The transpose (reversed dimensions)."""
        return self.dimshuffle(*reversed(range(self.ndim)))

    def __add__(self, other: TensorLike) -> TensorVariable:
        return _m().add(self, other)

    def __radd__(self, other: TensorLike) -> TensorVariable:
        return _m().add(other, self)

    def __sub__(self, other: TensorLike) -> TensorVariable:
        return _m().sub(self, other)

    def __rsub__(self, other: TensorLike) -> TensorVariable:
        return _m().sub(other, self)

    def __mul__(self, other: TensorLike) -> TensorVariable:
        return _m().mul(self, other)

    def __rmul__(self, other: TensorLike) -> TensorVariable:
        return _m().mul(other, self)

    def __truediv__(self, other: TensorLike) -> TensorVariable:
        return _m().true_div(self, other)

    def __rtruediv__(self, other: TensorLike) -> TensorVariable:
        return _m().true_div(other, self)

    def __floordiv__(self, other: TensorLike) -> TensorVariable:
        return _m().int_div(self, other)

    def __rfloordiv__(self, other: TensorLike) -> TensorVariable:
        return _m().int_div(other, self)

    def __mod__(self, other: TensorLike) -> TensorVariable:
        return _m().mod(self, other)

    def __rmod__(self, other: TensorLike) -> TensorVariable:
        return _m().mod(other, self)

    def __pow__(self, other: TensorLike) -> TensorVariable:
        return _m().pow(self, other)

    def __rpow__(self, other: TensorLike) -> TensorVariable:
        return _m().pow(other, self)

    def __neg__(self) -> TensorVariable:
        return _m().neg(self)

    def __pos__(self: _Self) -> _Self:
        return self

    def __abs__(self) -> TensorVariable:
        return _m().abs(self)

    def __invert__(self) -> TensorVariable:
        return _m().invert(self)

    def __and__(self, other: TensorLike) -> TensorVariable:
        return _m().and_(self, other)

    def __rand__(self, other: TensorLike) -> TensorVariable:
        return _m().and_(other, self)

    def __or__(self, other: TensorLike) -> TensorVariable:
        return _m().or_(self, other)

    def __ror__(self, other: TensorLike) -> TensorVariable:
        return _m().or_(other, self)

    def __xor__(self, other: TensorLike) -> TensorVariable:
        return _m().xor(self, other)

    def __rxor__(self, other: TensorLike) -> TensorVariable:
        return _m().xor(other, self)

    def __lshift__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.ufuncs import left_shift
        return left_shift(self, other)

    def __rlshift__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.ufuncs import left_shift
        return left_shift(other, self)

    def __rshift__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.ufuncs import right_shift
        return right_shift(self, other)

    def __rrshift__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.ufuncs import right_shift
        return right_shift(other, self)

    def __lt__(self, other: TensorLike) -> TensorVariable:
        return _m().lt(self, other)

    def __le__(self, other: TensorLike) -> TensorVariable:
        return _m().le(self, other)

    def __gt__(self, other: TensorLike) -> TensorVariable:
        return _m().gt(self, other)

    def __ge__(self, other: TensorLike) -> TensorVariable:
        return _m().ge(self, other)

    # == stays identity so Variables can key dicts and sets; use eq()/neq().
    __hash__ = Variable.__hash__

    def __bool__(self) -> NoReturn:
        raise TypeError("a symbolic tensor has no truth value; use nbgraph.tensor.switch or "
                        "compare values after evaluating")

    def __iter__(self) -> NoReturn:
        raise TypeError("a symbolic tensor cannot be iterated; index it instead")

    def __len__(self) -> NoReturn:
        raise TypeError("a symbolic tensor has no len(); use x.shape[0]")

    def __getitem__(self, index: Any) -> AnyTensor:
        from nbgraph.tensor.subtensor import getitem

        return getitem(self, index)

    def dimshuffle(self, *pattern: int | str | list[int | str] | tuple[int | str, ...],
                   ) -> TensorVariable:
        """Reorder, drop (size-1 only) or add ('x') dimensions."""
        from nbgraph.tensor.elemwise import DimShuffle

        if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
            return DimShuffle(self.ndim, tuple(pattern[0]))(self)
        return DimShuffle(self.ndim, cast("tuple[int | str, ...]", pattern))(self)

    def reshape(self, *shape: ShapeLike, ndim: int | None = None) -> TensorVariable:
        """A view with another shape (one entry may be -1)."""
        from nbgraph.tensor.basic import reshape

        if len(shape) == 1 and (
                not isinstance(shape[0], (numbers.Integral, Variable))
                or (isinstance(shape[0], Variable) and getattr(shape[0].type, "ndim", 0) == 1)):
            return reshape(self, shape[0], ndim=ndim)  # a sequence or a shape vector
        # several entries, each one size
        return reshape(self, cast("Sequence[int | Variable]", shape), ndim=ndim)

    def astype(self, dtype: DTypeLike) -> TensorVariable:
        """The values cast to ``dtype``."""
        return _m().cast(self, dtype)

    @property
    def real(self) -> TensorVariable:
        """The real part (NumPy's ``.real``)."""
        from nbgraph.tensor.complex_ops import real

        return real(self)

    @property
    def imag(self) -> TensorVariable:
        """The imaginary part (NumPy's ``.imag``)."""
        from nbgraph.tensor.complex_ops import imag

        return imag(self)

    def conj(self) -> TensorVariable:
        """The complex conjugate (NumPy's ``.conj()``)."""
        from nbgraph.tensor.complex_ops import conj

        return conj(self)

    def sum(self, axis: Axes | None = None, keepdims: bool = False, dtype: DTypeLike = None,
            acc_dtype: DTypeLike = None) -> TensorVariable:
        """Sum over ``axis`` (None: all); see :func:`nbgraph.tensor.math.sum`."""
        return _m().sum(self, axis=axis, keepdims=keepdims, dtype=dtype, acc_dtype=acc_dtype)

    def prod(self, axis: Axes | None = None, keepdims: bool = False, dtype: DTypeLike = None,
             acc_dtype: DTypeLike = None, no_zeros_in_input: bool = False) -> TensorVariable:
        """Product over ``axis`` (see :func:`nbgraph.tensor.math.prod`)."""
        return _m().prod(self, axis=axis, keepdims=keepdims, dtype=dtype, acc_dtype=acc_dtype,
                         no_zeros_in_input=no_zeros_in_input)

    def mean(self, axis: Axes | None = None, keepdims: bool = False, dtype: DTypeLike = None,
             acc_dtype: DTypeLike = None) -> TensorVariable:
        """Mean over ``axis`` (see :func:`nbgraph.tensor.math.mean`)."""
        return _m().mean(self, axis=axis, keepdims=keepdims, dtype=dtype, acc_dtype=acc_dtype)

    def max(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """Maximum over ``axis``."""
        return _m().max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Axes | None = None, keepdims: bool = False) -> TensorVariable:
        """Minimum over ``axis``."""
        return _m().min(self, axis=axis, keepdims=keepdims)

    def dot(self, other: TensorLike) -> TensorVariable:
        """Matrix/vector product."""
        return _m().dot(self, other)

    def __matmul__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.linalg import matmul

        return matmul(self, other)

    def __rmatmul__(self, other: TensorLike) -> TensorVariable:
        from nbgraph.tensor.linalg import matmul

        return matmul(other, self)

    def dprint(self, file: IO[str] | None = None, print_type: bool = False,
               **kwargs: Any) -> Any:
        """Print this variable's graph as text (see :func:`nbgraph.dprint`)."""
        from nbgraph.display.text import dprint

        return dprint(self, file=file, print_type=print_type, **kwargs)


class TensorVariable(_TensorOperators, Variable):
    """A Variable of a TensorType, with NumPy-like operators."""


class TensorConstant(_TensorOperators, Constant):
    """A constant array.  ``weak`` marks one made from a plain Python number.

    Weak constants follow NEP 50: ``fvector * 2.0`` stays float32 because the
    2.0 takes the other operand's dtype.
    """

    def __init__(self, type: TensorType, data: Any, name: str | None = None,
                 weak: bool = False) -> None:
        super().__init__(type, data, name=name)
        self.weak = weak

    def clone(self, name: str | None = None) -> TensorConstant:
        new = TensorConstant(self.type, self.data, self.name if name is None else name,
                             weak=self.weak)
        new.tag = self.tag.copy()
        return new


TensorType.variable_type = TensorVariable
TensorType.constant_type = TensorConstant

#: A tensor in a graph, computed or constant: both kinds have the tensor operators
#: and methods.  What a function returns when it may hand back a constant.
AnyTensor = TensorVariable | TensorConstant


class SharedVariable(TensorVariable):
    """A root Variable with a value kept between calls of compiled functions.

    Functions read it implicitly (no need to list it as an input) and
    ``updates`` write it.  ``get_value``/``set_value`` copy by default;
    ``borrow=True`` hands over the array itself.
    """

    def __init__(self, type: TensorType, value: Any, name: str | None = None, strict: bool = False,
                 allow_downcast: bool | None = None, borrow: bool = False) -> None:
        super().__init__(type, None, None, name)
        if strict:  # the value must already fit
            data = type.filter(value, strict=True)
        else:
            data = type.filter(value, allow_downcast=allow_downcast)
        if not borrow and _shares_memory(data, value):
            data = data.copy()  # an array of our own, unless borrowing
        self.container = [data]

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> np.ndarray:
        """The current value: a copy, or with ``borrow=True`` the array itself
        (``return_internal_type`` is accepted; the internal type is ndarray)."""
        value = self.container[0]
        return value if borrow else value.copy()

    def set_value(self, value: Any, borrow: bool = False) -> None:
        """Replace the value; it must fit the variable's type.  Without
        ``borrow`` the variable keeps a copy; with it, ``value`` itself when it
        fits as it is."""
        new = self.type.filter(value)
        if not borrow and (new is value or _shares_memory(new, value)):
            new = new.copy()
        self.container[0] = new


    def clone(self, name: str | None = None) -> SharedVariable:
        new = SharedVariable(self.type, self.container[0], self.name if name is None else name,
                             borrow=True)
        new.container = self.container
        new.tag = self.tag.copy()
        return new


def shared(value: Any, name: str | None = None, strict: bool = False,
           allow_downcast: bool | None = None, borrow: bool = False,
           shape: tuple[int | None, ...] | None = None,
           broadcastable: tuple[bool, ...] | None = None) -> SharedVariable:
    """A SharedVariable holding a copy of ``value`` (``value`` itself with
    ``borrow=True``, when it is an ndarray).

    Its type keeps ``value``'s dtype and ndim; dimensions are unknown-size
    unless ``shape`` (or Theano's ``broadcastable``) is given.  ``strict`` and
    ``allow_downcast`` apply to later ``set_value`` calls' checks as in Theano
    (here: ``strict`` requires ``value`` to be an ndarray).
    """
    if strict and not isinstance(value, np.ndarray):
        raise TypeError("shared(value, strict=True) needs a numpy.ndarray, got %s" % (
            type(value).__name__,))
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc":
        raise TypeError("shared() needs numeric data, got %s of dtype %s" % (
            type(value).__name__, arr.dtype))
    if shape is None and broadcastable is None:
        shape = (None,) * arr.ndim
    ttype = TensorType(arr.dtype, shape, broadcastable=broadcastable)
    return SharedVariable(ttype, value if isinstance(value, np.ndarray) else arr, name=name,
                          strict=strict, allow_downcast=allow_downcast, borrow=borrow)


def _shares_memory(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def constant(value: Any, name: str | None = None, dtype: DTypeLike = None,
             ndim: int | None = None) -> TensorConstant:
    """A TensorConstant of ``value`` with a fully static shape.

    Plain Python numbers make *weak* constants (NEP 50).
    """
    # NumPy scalars are strong even where they subclass Python's (np.float64 is a float)
    weak = (isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)
            and dtype is None)
    if isinstance(value, Variable):
        raise TypeError("constant() needs a value, got the Variable %r" % (value,))
    value = unmask(value, "the constant's value")
    try:
        arr = np.asarray(value, dtype=None if dtype is None else normalize_dtype(dtype))
    except (TypeError, ValueError) as exc:
        raise TypeError("cannot make a tensor constant from %s %r: %s" % (
            type(value).__name__, value, exc)) from exc
    if arr.dtype.kind not in "biufc":
        raise TypeError("cannot make a tensor constant from %s %r (dtype %s)" % (
            type(value).__name__, value, arr.dtype))
    if ndim is not None and arr.ndim != ndim:
        if arr.ndim > ndim:
            raise ValueError("constant %r has %d dimensions, more than ndim=%d" % (
                value, arr.ndim, ndim))
        arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
    return TensorConstant(TensorType(arr.dtype, arr.shape), arr, name=name, weak=weak)


def as_tensor_variable(x: TensorLike, name: str | None = None, ndim: int | None = None,
                       dtype: DTypeLike = None) -> AnyTensor:
    """``x`` as a tensor Variable: Variables pass, numbers and arrays become constants.

    ``ndim``: a Variable of fewer dimensions gains leading broadcastable ones,
    one of more loses leading dimensions of static size 1 (others: ValueError);
    a value is shaped the same way.  ``dtype``: a value becomes a constant of
    that dtype; a Variable of another dtype is refused (TypeError naming both:
    cast it explicitly).  A scalar Variable (ScalarType) becomes a 0-d tensor.
    A Type (rather than a Variable of it) or a non-numeric object raises a
    TypeError saying what was expected.
    """
    _check_ndim_argument(ndim)
    if isinstance(x, Variable):
        return _tensor_of_variable(x, ndim, dtype)
    if isinstance(x, TensorType) or hasattr(x, "make_variable"):
        raise TypeError("expected a Variable or a value, got the Type %r; call it to make a "
                        "Variable" % (x,))
    if isinstance(x, (list, tuple)) and any(isinstance(e, Variable) for e in x):
        from nbgraph.tensor.basic import stack

        out = stack(list(x))
        return out if ndim is None and dtype is None else as_tensor_variable(out, ndim=ndim,
                                                                             dtype=dtype)
    if ndim is not None and np.ndim(x) > ndim:
        x = _drop_leading_ones(x, ndim)
    return constant(x, name=name, ndim=ndim, dtype=dtype)


def _check_ndim_argument(ndim: object) -> None:
    """Refuse an ``ndim`` argument that is not None or a non-negative int."""
    if ndim is None:
        return
    if isinstance(ndim, bool) or not isinstance(ndim, (int, np.integer)):
        raise TypeError("as_tensor_variable: ndim must be an int, got %r" % (ndim,))
    if ndim < 0:
        raise ValueError("as_tensor_variable: ndim must be non-negative, got %d" % ndim)


def _tensor_of_variable(x: Variable, ndim: int | None, dtype: DTypeLike) -> AnyTensor:
    """A Variable as a tensor: a scalar one lifted to 0-d, a tensor one checked
    against ``dtype`` and brought to ``ndim``; any other type refused."""
    if not isinstance(x.type, TensorType) and type(x.type).__name__ == "ScalarType":
        from nbgraph.tensor.scalar_tensor import tensor_from_scalar

        x = tensor_from_scalar(x)
    if not isinstance(x.type, TensorType):
        raise TypeError("expected a tensor Variable, got %r of type %r" % (x, x.type))
    # a Variable of a TensorType is made by TensorType.make_variable (or make_constant)
    tx = cast("AnyTensor", x)
    if dtype is not None and tx.dtype != normalize_dtype(dtype):
        raise TypeError("as_tensor_variable: %r has dtype %s, not %s; cast it explicitly"
                        % (x, tx.dtype, normalize_dtype(dtype)))
    if ndim is not None and tx.ndim != ndim:
        return _to_ndim(tx, ndim)
    return tx


def _drop_leading_ones(x: object, ndim: int) -> np.ndarray:
    """A value of more than ``ndim`` dimensions without its leading ones (each of size 1)."""
    arr = np.asarray(x)
    extra = arr.ndim - ndim
    if any(s != 1 for s in arr.shape[:extra]):
        raise ValueError("as_tensor_variable: a value of shape %s cannot have %d "
                         "dimensions" % (arr.shape, ndim))
    return arr.reshape(arr.shape[extra:])


def _to_ndim(x: AnyTensor, ndim: int) -> TensorVariable:
    """``x`` with leading size-1 dimensions added or (when statically 1) removed."""
    if x.ndim < ndim:
        return x.dimshuffle(*(("x",) * (ndim - x.ndim) + tuple(range(x.ndim))))
    extra = x.ndim - ndim
    if any(s != 1 for s in x.type.shape[:extra]):
        raise ValueError("as_tensor_variable: %r of type %r cannot have %d dimensions (its "
                         "leading dimensions are not statically 1)" % (x, x.type, ndim))
    return x.dimshuffle(*range(extra, x.ndim))


def _is_dtype_name(value: object) -> bool:
    # only full names: one-letter codes ("b", "d", "f") are common variable names
    if isinstance(value, str):
        return value == "floatX" or value in ALL_DTYPES
    if isinstance(value, np.dtype):
        return True
    return isinstance(value, type) and issubclass(value, (bool, int, float, np.generic))


def tensor(*args: Any, name: str | None = None, dtype: DTypeLike = None,
           shape: tuple[int | None, ...] | None = None,
           broadcastable: tuple[bool, ...] | None = None) -> TensorVariable:
    """A new tensor Variable of ``TensorType(dtype, shape)``.

    Two spellings: nbgraph's ``tensor(dtype, shape, name)`` (positional or
    keywords) and PyTensor's ``tensor(name, *, dtype=None, shape=...)``.  A
    first argument that is a dtype's full name (``"float64"``, ``"floatX"``)
    or a NumPy dtype starts nbgraph's form; any other string (or None) is the
    name (so one-letter codes such as ``"d"`` are names here).
    dtype defaults to config.floatX.

    >>> tensor("float32", (2, None), "a").type, tensor("b", shape=(3,)).type
    (TensorType(float32, (2, None)), TensorType(float64, (3,)))
    """
    if len(args) > 3:
        raise TypeError("tensor() takes at most 3 positional arguments (dtype, shape, name), "
                        "got %d" % len(args))
    if args and dtype is None and _is_dtype_name(args[0]):
        given = dict(zip(("dtype", "shape", "name"), args, strict=False))
    elif args and (args[0] is None or isinstance(args[0], str)):
        if len(args) > 1:
            raise TypeError("tensor(name, *, dtype=None, shape=None): pass dtype and shape "
                            "as keywords after the name %r (or use tensor(dtype, shape, name))"
                            % (args[0],))
        given = {"name": args[0]}
    elif args:
        raise TypeError("tensor(): the first argument must be a dtype or a name, got %s %r"
                        % (type(args[0]).__name__, args[0]))
    else:
        given = {}
    for key, value in (("name", name), ("dtype", dtype), ("shape", shape)):
        if value is not None:
            if key in given:
                raise TypeError("tensor() got two values for %r" % key)
            given[key] = value
    shape = given.get("shape")
    if isinstance(shape, str):
        raise TypeError("tensor(dtype, shape, name): pass the shape before the name")
    if shape is None and broadcastable is None:
        raise TypeError("tensor() needs a shape, e.g. tensor('float64', (None, 3)) or "
                        "tensor('x', shape=(None, 3))")
    return TensorType(given.get("dtype") or "floatX", shape,
                      broadcastable=broadcastable)(given.get("name"))
