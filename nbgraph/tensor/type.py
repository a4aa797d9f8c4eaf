"""TensorType: NumPy arrays of one dtype and number of dimensions, with partial static shapes.

>>> t = TensorType("float64", (2, None))
>>> t
TensorType(float64, (2, None))
>>> t.broadcastable
(False, False)
>>> t.is_super(TensorType("float64", (2, 1)))
True
>>> t.in_same_class(TensorType("float64", (2, 1)))
False
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.exceptions import ComplexWarning

from nbgraph.config import config
from nbgraph.core.type import DowncastError, TraceSink, Type
from nbgraph.tensor.c_code.type import TensorTypeC
from nbgraph.tensor.dtypes import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    CONTINUOUS_DTYPES,
    DISCRETE_DTYPES,
    EXTENDED_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    UINT_DTYPES,
    dtype_name,
)

if TYPE_CHECKING:
    from nbgraph.core.graph import Variable
    from nbgraph.tensor.op_args import DTypeLike

#: A static shape: one entry per dimension, an int size or None (unknown).
StaticShape = tuple[int | None, ...]

__all__ = [
    "TensorType",
    "ALL_DTYPES",
    "FLOAT_DTYPES",
    "EXTENDED_DTYPES",
    "CONTINUOUS_DTYPES",
    "INT_DTYPES",
    "UINT_DTYPES",
    "DISCRETE_DTYPES",
    "normalize_dtype",
]

# Relative/absolute tolerances of values_eq_approx, per float dtype.
_TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9), "float16": (1e-2, 1e-3),
               "complex64": (1e-4, 1e-5), "complex128": (1e-7, 1e-9)}


def unmask(data: Any, what: str = "the value") -> Any:
    """``data`` without a NumPy mask, or a TypeError when entries are masked.

    nbgraph computes on plain arrays; dropping a mask silently would compute
    on the hidden entries.  A masked array with nothing masked is its data.
    Costs nothing unless ``numpy.ma`` was imported (no masked array exists before).
    """
    ma = sys.modules.get("numpy.ma")
    if ma is None or not isinstance(data, ma.MaskedArray):
        return data
    if ma.is_masked(data):
        raise TypeError("%s is a masked array with masked entries; nbgraph computes on "
                        "plain arrays: pass data.filled(fill_value) or data.data" % what)
    return data.data


_NUMPY_DTYPES = {name: np.dtype(name) for name in ALL_DTYPES}


def normalize_dtype(dtype: DTypeLike, what: str = "dtype") -> str:
    """The canonical dtype name of ``dtype`` ("floatX" means config.floatX)."""
    if dtype == "floatX":
        dtype = config.floatX
    return dtype_name(dtype, what)


class TensorType(TensorTypeC, Type):
    """Type of NumPy ndarrays with a fixed dtype and ndim and a partial static shape.

    ``shape`` holds one entry per dimension: an int (that size, always) or
    None (unknown).  ``broadcastable`` may be given instead, as in Theano:
    True means size 1, False unknown.  Equality and hashing use
    (dtype, shape); ``name`` only changes how the type prints.
    """

    __props__ = ("dtype", "shape")

    def __init__(self, dtype: DTypeLike, shape: Iterable[int | bool | None] | int | None = None,
                 name: str | None = None,
                 broadcastable: Iterable[bool] | None = None) -> None:
        self.dtype = normalize_dtype(dtype)
        if shape is None and broadcastable is None:
            raise TypeError("TensorType needs a shape (or broadcastable), e.g. "
                            "TensorType('float64', (2, None))")
        if broadcastable is not None:
            broadcastable = tuple(bool(b) for b in broadcastable)
            if shape is None:
                shape = tuple(1 if b else None for b in broadcastable)
            elif tuple(s == 1 for s in self._normalize_shape(shape)) != broadcastable:
                raise ValueError("shape %r and broadcastable %r disagree" % (
                    self._normalize_shape(shape), broadcastable))
        self.shape = self._normalize_shape(shape)
        self.name = name
        self.numpy_dtype = _NUMPY_DTYPES.get(self.dtype) or np.dtype(self.dtype)
        self.ndim = len(self.shape)
        self.broadcastable = tuple(s == 1 for s in self.shape)
        self._static_dims = tuple((i, s) for i, s in enumerate(self.shape) if s is not None)

    @staticmethod
    def _normalize_shape(shape: Any) -> StaticShape:
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (shape,)
        try:
            entries = tuple(shape)
        except TypeError as exc:
            raise TypeError("shape must be a tuple of ints or None, got %r" % (shape,)) from exc
        out: list[int | None] = []
        for i, s in enumerate(entries):
            if s is None:
                out.append(None)
            elif isinstance(s, (bool, np.bool_)):
                out.append(1 if s else None)
            elif isinstance(s, (int, np.integer)) and s >= 0:
                out.append(int(s))
            elif isinstance(s, (int, np.integer)):  # a wrong value, not a wrong type
                raise ValueError("shape entry %d must be a non-negative int or None, got %r"
                                 % (i, s))
            else:
                raise TypeError("shape entry %d must be a non-negative int or None, got %r"
                                % (i, s))
        return tuple(out)

    def clone(self, dtype: DTypeLike = None,  # type: ignore[override]  # Theano's signature
              shape: Iterable[int | bool | None] | None = None,
              broadcastable: Iterable[bool] | None = None, name: str | None = None) -> TensorType:
        """A TensorType like this one with ``dtype``/``shape``/``broadcastable`` changed."""
        if shape is None and broadcastable is None:
            shape = self.shape
        # both given: the constructor checks that they agree
        return TensorType(self.dtype if dtype is None else dtype, shape, name=name,
                          broadcastable=broadcastable)

    def __str__(self) -> str:
        if self.name:
            return self.name
        return "TensorType(%s, %r)" % (self.dtype, self.shape)

    # -- values ----------------------------------------------------------
    def filter(self, data: Any, strict: bool = False,
               allow_downcast: bool | None = None) -> np.ndarray:
        """``data`` as an ndarray of this type, or a TypeError naming what differs.

        ``strict``: ``data`` must already be an ndarray of this dtype.
        Otherwise arrays are upcast safely; other dtypes need
        ``allow_downcast=True``.  Python numbers and lists are accepted when
        they convert without changing value (with ``allow_downcast=None`` a
        single Python float may also be rounded to float32, as the seed allows).
        """
        if type(data) is np.ndarray and data.dtype == self.numpy_dtype:
            arr = data
        elif strict:
            if not isinstance(data, np.ndarray):
                raise TypeError("%r expects a numpy.ndarray (strict), got %s" % (
                    self, type(data).__name__))
            if data.dtype != self.numpy_dtype:
                raise TypeError("%r expects dtype %s, got an array of dtype %s (strict: "
                                "no conversion)" % (self, self.dtype, data.dtype))
            # an ndarray subclass of the right dtype (a memmap, say) passes as it is
            arr = unmask(data, "the argument")
        else:
            if hasattr(data, "__dask_graph__") and not isinstance(data, type):
                # np.asarray would compute all of it into this process's memory
                raise TypeError("%r got a dask array (shape %s): compile with "
                                "linker='dask' to run on its chunks, or pass "
                                "its .compute() result" % (self, getattr(data, "shape", "?")))
            arr = self._convert(unmask(data, "the argument"), allow_downcast)
        if arr.ndim != self.ndim:
            raise TypeError("%r expects ndim %d, got an array with ndim %d (shape %s)" % (
                self, self.ndim, arr.ndim, arr.shape))
        for i, s in self._static_dims:
            if arr.shape[i] != s:
                raise TypeError("%r expects size %d in dimension %d, got shape %s" % (
                    self, s, i, arr.shape))
        return arr

    def filter_fast_path(self) -> tuple[np.dtype[Any], int] | None:
        """``(dtype, ndim)`` when :meth:`filter` returns every ``numpy.ndarray`` whose
        dtype is that very dtype object and whose ndim is ``ndim`` unchanged (no
        static sizes to check, filter not overridden), else None.  Function's
        call path accepts such arguments without calling :meth:`filter`."""
        if self._static_dims or type(self).filter is not TensorType.filter:
            return None
        return self.numpy_dtype, self.ndim

    def _convert(self, data: Any, allow_downcast: bool | None) -> np.ndarray:
        from_python = not isinstance(data, (np.ndarray, np.generic))
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as exc:
            raise TypeError("%r cannot convert %s to an array: %s" % (
                self, type(data).__name__, exc)) from exc
        if arr.dtype.kind not in "biufc":
            raise TypeError("%r expects numbers, got %s of dtype %s" % (
                self, type(data).__name__, arr.dtype))
        if arr.dtype == self.numpy_dtype:
            return arr
        if allow_downcast or (not from_python
                              and np.can_cast(arr.dtype, self.numpy_dtype, "safe")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ComplexWarning)
                return arr.astype(self.numpy_dtype)
        if from_python:
            # Python data must keep its value; a round trip catches what a single
            # comparison misses (2**53 + 1 -> float64, -1 -> uint64).
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", ComplexWarning)
                cast = arr.astype(self.numpy_dtype)
                back = cast.astype(arr.dtype)
            nan = arr.dtype.kind in "fc"
            exact = (np.array_equal(back, arr, equal_nan=nan)
                     and np.array_equal(cast, arr, equal_nan=nan))
            # the seed's one exception: a lone Python float may round to float32
            float_ok = (allow_downcast is None and isinstance(data, float)
                        and self.numpy_dtype.kind == "f")
            if exact or float_ok:
                return cast
        raise DowncastError("%r cannot accurately hold %s of dtype %s" % (
            self, type(data).__name__, arr.dtype))

    def values_eq(self, a: Any, b: Any) -> bool:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))

    def values_eq_approx(self, a: Any, b: Any, rtol: float | None = None,
                         atol: float | None = None) -> bool:
        """Equal shapes, NaN and inf in the same places, finite values within tolerance."""
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if self.numpy_dtype.kind not in "fc":
            return bool(np.array_equal(a, b))
        default_rtol, default_atol = _TOLERANCES[self.dtype]
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))

    def data_signature(self, data: Any) -> tuple[str, tuple[int, ...], int]:
        arr = np.asarray(data)
        return (arr.dtype.str, arr.shape, hash(arr.tobytes()))

    def may_share_memory(self, a: Any, b: Any) -> bool:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return bool(np.may_share_memory(a, b))
        return False

    def get_shape_info(self, obj: Any) -> tuple[int, ...]:
        return obj.shape

    def get_size(self, shape_info: Sequence[int]) -> int:
        return int(np.prod(shape_info, dtype=np.int64)) * self.numpy_dtype.itemsize

    def value_zeros(self, shape: int | Sequence[int]) -> np.ndarray:
        """A zero array of this dtype and ``shape``."""
        return np.zeros(shape, dtype=self.numpy_dtype)

    # -- relations -------------------------------------------------------
    def in_same_class(self, otype: Type) -> bool:
        """Same dtype, ndim and broadcast pattern."""
        return (isinstance(otype, TensorType) and otype.dtype == self.dtype
                and otype.broadcastable == self.broadcastable)

    def is_super(self, otype: Type) -> bool:
        """Same dtype and ndim, and every static dim of self is None or equal in ``otype``."""
        return (isinstance(otype, TensorType) and otype.dtype == self.dtype
                and otype.ndim == self.ndim
                and all(s is None or s == o for s, o in zip(self.shape, otype.shape, strict=True)))

    def incompatibility(self, otype: Type) -> str | None:
        """Why ``otype`` cannot stand for self, in words (None if it can)."""
        if not isinstance(otype, TensorType):
            return "%r is not a TensorType" % (otype,)
        if otype.dtype != self.dtype:
            return "dtype %s differs from %s" % (otype.dtype, self.dtype)
        if otype.ndim != self.ndim:
            return "ndim %d instead of %d" % (otype.ndim, self.ndim)
        for i, (s, o) in enumerate(zip(self.shape, otype.shape, strict=True)):
            if s is not None and o is not None and s != o:
                return "dimension %d has static size %d, not %d" % (i, o, s)
        return None

    def explain_relation(self, otype: Type, trace: TraceSink) -> None:
        if not isinstance(otype, TensorType):
            trace.add("is the variable a tensor?", "no", "%r" % (otype,))
            return
        trace.add("same dtype?", "yes" if otype.dtype == self.dtype else "no",
                  "%s vs %s" % (self.dtype, otype.dtype))
        trace.add("same number of dimensions?", "yes" if otype.ndim == self.ndim else "no",
                  "%d vs %d" % (self.ndim, otype.ndim))
        if otype.dtype != self.dtype or otype.ndim != self.ndim:
            return
        trace.add("same class (broadcast pattern)?",
                  "yes" if self.in_same_class(otype) else "no",
                  "%s vs %s" % (self.broadcastable, otype.broadcastable))
        for i, (s, o) in enumerate(zip(self.shape, otype.shape, strict=True)):
            if s == o:
                verdict = "equal"
            elif s is None:
                verdict = "the target is more general"
            elif o is None:
                verdict = "the variable is more general"
            else:
                verdict = "conflict"
            trace.add("dimension %d: target %s, variable %s" % (i, s, o), verdict)
        trace.add("is the target a supertype?", "yes" if self.is_super(otype) else "no")
        trace.add("is the variable's type a supertype?", "yes" if otype.is_super(self) else "no")

    def convert_variable(self, var: Variable) -> Variable | None:
        """``var`` when its type is as specific as self; otherwise, when the two static
        shapes agree wherever both are known, a SpecifyShape narrowing ``var`` to what
        both know (``(1, None, 3)`` and ``(None, 5, 3)`` give ``(1, 5, 3)``); None when
        dtype, ndim or a static size differ."""
        vtype = var.type
        if not isinstance(vtype, TensorType):
            return None
        if self.is_super(vtype):
            return var
        if self.incompatibility(vtype) is None:
            from nbgraph.tensor.basic import specify_shape

            merged = tuple(s if s is not None else o
                           for s, o in zip(self.shape, vtype.shape, strict=True))
            return specify_shape(var, merged)
        return None

    # -- differentiation hooks --------------------------------------------
    def grad_ones_like(self, var: Variable) -> Variable:
        if self.ndim != 0:
            raise TypeError("grad needs a scalar cost; %r has type %r (%d dimensions). "
                            "Reduce it first, e.g. with .sum()" % (var, self, self.ndim))
        from nbgraph.tensor.variable import constant

        if self.dtype in COMPLEX_DTYPES:
            raise TypeError("grad needs a real cost; %r is %s (take abs() or real() of it, "
                            "as Theano required)" % (var, self.dtype))
        dtype = self.dtype if self.dtype in CONTINUOUS_DTYPES else config.floatX
        return constant(np.ones((), dtype=dtype))

    def grad_zeros_like(self, var: Variable) -> Variable:
        from nbgraph.tensor.basic import zeros_like

        dtype = self.dtype if self.dtype in CONTINUOUS_DTYPES else config.floatX
        return zeros_like(var, dtype=dtype)

    def grad_sum(self, terms: Sequence[Variable]) -> Variable:
        from nbgraph.tensor.elemwise import add

        return add(*terms)

    def grad_flows_back(self) -> bool:
        """False for integer and boolean tensors (their Ops pass zeros back)."""
        return self.dtype not in DISCRETE_DTYPES

    def grad_is_zero(self, var: Variable) -> bool:
        """True for zeros as :meth:`grad_zeros_like` makes them: a small constant of
        zeros, or one broadcast by Alloc."""
        from nbgraph.core.graph import Constant
        from nbgraph.tensor.basic import Alloc

        if var.owner is not None and isinstance(var.owner.op, Alloc):
            var = var.owner.inputs[0]
        if not isinstance(var, Constant):
            return False
        data = np.asarray(var.data)
        return data.size <= 64 and not np.any(data)

