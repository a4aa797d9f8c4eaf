"""Elementwise ops on tensors (Elemwise), their dtype promotion and gradients.

``Elemwise(scalar_op)`` lifts a :class:`~nbgraph.tensor.scalar.ScalarOp` to
arrays with NumPy broadcasting and NumPy (NEP 50) dtype promotion: inputs of
fewer dimensions are padded on the left by a DimShuffle, static sizes that
cannot broadcast raise ValueError when the graph is built, and Python numbers
are weak (``fvector * 2.0`` is float32).  DimShuffle and SumToShape live in
:mod:`nbgraph.tensor.dimshuffle` and are re-exported here.

>>> from nbgraph.tensor.constructors import fvector, dmatrix
>>> from nbgraph.tensor import scalar
>>> Elemwise(scalar.mul)(fvector("v"), 2.0).type
TensorType(float32, (None,))
>>> DimShuffle(2, (1, 0))(dmatrix("m")).type
TensorType(float64, (None, None))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nbgraph.core.graph import Apply, Variable
from nbgraph.core.op import Op, OutputStorage
from nbgraph.tensor.c_code.elemwise import ElemwiseC
from nbgraph.core.gradient_types import is_disconnected, null_reason
from nbgraph.tensor import scalar as ps
from nbgraph.tensor.grad_rules import input_gradient, zero_gradient
from nbgraph.tensor.dimshuffle import DimShuffle, SumToShape, sum_to_shape
from nbgraph.tensor.dtypes import COMPLEX_DTYPES, dtype_name
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import TensorConstant, as_tensor_variable

if TYPE_CHECKING:
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.tensor.scalar_op import ScalarOp
    from nbgraph.tensor.type import StaticShape
    from nbgraph.tensor.variable import AnyTensor

__all__ = [
    "Elemwise", "DimShuffle", "SumToShape", "sum_to_shape", "broadcast_shapes",
    "promote_weak_tensors", "elemwise_output_dtypes", "add", "mul", "sub", "true_div",
]


def broadcast_shapes(*shapes: Sequence[int | None],
                     names: Sequence[object] | None = None) -> StaticShape:
    """The static shape NumPy broadcasting gives, or ValueError for static conflicts.

    Entries are ints or None (unknown); all shapes must have the same length.
    ``names``: one object per shape (a Variable, say) whose repr names it in the
    error; the reprs are only computed when there is an error.
    """
    out: list[int | None] = []
    for dim, sizes in enumerate(zip(*shapes, strict=True)):
        known = {s for s in sizes if s is not None and s != 1}
        if len(known) > 1:
            who = ", ".join("%s has %s" % (repr(names[i]) if names else "input %d" % i, s)
                            for i, s in enumerate(sizes) if s is not None)
            raise ValueError("cannot broadcast dimension %d: %s" % (dim, who))
        if known:
            out.append(known.pop())
        elif all(s == 1 for s in sizes):
            out.append(1)
        else:
            out.append(None)
    return tuple(out)


def _is_python_number(x: object) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def promote_weak_tensors(inputs: Sequence[Any],
                         scalar_op: ScalarOp | None = None) -> list[Any]:
    """Replace weak inputs (Python numbers, weak constants) by constants of NumPy's dtype.

    The dtypes come from ``scalar_op.promote_inputs`` (the scalar layer's NEP 50
    rules, so tensors and scalars agree): a weak integer that does not fit
    (``int8 + 300``) raises ValueError, a comparison with one compares exactly
    (``int8 < 300`` is true), a float too large for float32 becomes inf.
    Without ``scalar_op`` the plain rule of
    :func:`nbgraph.tensor.scalar.promote_weak` applies.
    """
    weak = [_is_python_number(v) or (isinstance(v, TensorConstant) and v.weak)
            for v in inputs]
    if not any(weak):
        return list(inputs)
    scalars = [ps.as_scalar(v if _is_python_number(v) else v.data.item()) if w
               else ps.ScalarType(v.type.dtype)() for v, w in zip(inputs, weak, strict=True)]
    promote = ps.promote_weak if scalar_op is None else scalar_op.promote_inputs
    promoted = promote(scalars)
    out = []
    for var, is_weak, scalar in zip(inputs, weak, promoted, strict=True):
        if not is_weak:
            out.append(var)
            continue
        dtype = scalar.type.dtype
        data = np.asarray(scalar.data, dtype=dtype)
        out.append(_keep_user_constant(var, data) if isinstance(var, TensorConstant)
                   else TensorConstant(TensorType(dtype, ()), data))
    return out


def _keep_user_constant(var, data):
    """The user's own weak constant ``var`` promoted to ``data``'s dtype, still in the graph.

    A weak constant the caller made (``c = constant(2.0)``) stays an input of
    the node: as it is when the dtype already matches, else through a Cast
    (constant folding removes it when compiling), so ``grad(c + y, c)`` finds
    ``c``.  Only where casting its stored value would not give NumPy's value
    (a Python int beyond 64 bits held as a float) does a new constant stand in.
    """
    if var.dtype == data.dtype.name:
        return var
    with np.errstate(all="ignore"):
        cast_value = np.asarray(var.data).astype(data.dtype)
    if cast_value.tobytes() != data.tobytes():
        return TensorConstant(TensorType(data.dtype, ()), data)
    return Elemwise(ps.Cast(data.dtype.name))(var)


# (scalar_op, input dtypes) -> output dtypes; bounded below.  Composites are not
# kept here: each fused group makes its own, so a notebook evaluating thousands of
# distinct expressions kept thousands of Composites (with their inner graphs) alive
# through this table; a Composite's entries live on the Composite itself.
_OUTPUT_DTYPES: dict[tuple[ScalarOp, tuple[str, ...]], tuple[str, ...]] = {}


def elemwise_output_dtypes(scalar_op: ScalarOp, dtypes: Sequence[str]) -> list[str]:
    """Output dtypes of ``scalar_op`` applied to inputs of ``dtypes`` (memoised:
    building a scalar node to find out is the costly part of every Elemwise node)."""
    memo: dict[Any, tuple[str, ...]]
    if isinstance(scalar_op, ps.Composite):
        memo = scalar_op.__dict__.setdefault("_elemwise_dtypes", {})
        key: Any = tuple(dtypes)
    else:
        memo = _OUTPUT_DTYPES
        key = (scalar_op, tuple(dtypes))
    hashable = True
    try:
        return list(memo[key])
    except KeyError:
        pass
    except TypeError:  # an unhashable scalar op
        hashable = False
    cls = type(scalar_op)
    if cls.make_node is ps.ScalarOp.make_node and cls.promote_inputs is ps.ScalarOp.promote_inputs:
        found = _scalar_output_dtypes(scalar_op, dtypes)
    else:
        node = scalar_op.make_node(*[ps.get_scalar_type(d)() for d in dtypes])
        found = [out.type.dtype for out in node.outputs]
    if hashable:
        if len(memo) >= 4096:
            memo.clear()
        memo[key] = tuple(found)
    return found


def _scalar_output_dtypes(scalar_op: ScalarOp, dtypes: Sequence[str]) -> list[str]:
    """What ``ScalarOp.make_node`` gives its outputs for inputs of ``dtypes`` (same checks,
    same errors), without building the node: on these inputs (no weak constants) its
    conversions and promotions change nothing."""
    scalar_op._check_arity(len(dtypes))
    for d in dtypes:
        ps.get_scalar_type(d)
    out_dtypes = list(scalar_op.output_dtypes(*dtypes))
    if len(out_dtypes) != scalar_op._nout():
        raise ValueError("%s.output_dtypes returned %d dtypes for %d outputs" % (
            scalar_op, len(out_dtypes), scalar_op._nout()))
    return [ps.get_scalar_type(dtype_name(d, "output dtype")).dtype for d in out_dtypes]


class Elemwise(ElemwiseC, Op):
    """A scalar op applied element by element over broadcast arrays.

    ``inplace_pattern`` maps output indices to the input whose memory they
    overwrite (set by the in-place rewrite, never by users).
    """

    __props__ = ("scalar_op", "inplace_pattern")

    def __init__(self, scalar_op: ScalarOp,
                 inplace_pattern: Mapping[int, int] | None = None) -> None:
        if not isinstance(scalar_op, ps.ScalarOp):
            raise TypeError("Elemwise needs a ScalarOp, got %r" % (scalar_op,))
        self.scalar_op = scalar_op
        self.inplace_pattern = tuple(sorted((inplace_pattern or {}).items()))
        self.destroy_map = {o: [i] for o, i in self.inplace_pattern}
        self.nfunc = getattr(scalar_op, "nfunc", None)

    def __getstate__(self):
        # nfunc is derived from scalar_op (and may be a local function): rebuilt on load
        state = dict(self.__dict__)
        state.pop("nfunc", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.nfunc = getattr(self.scalar_op, "nfunc", None)

    def __str__(self) -> str:
        if self.inplace_pattern:
            return "Elemwise{%s, inplace}" % (self.scalar_op,)
        return "Elemwise{%s}" % (self.scalar_op,)

    def make_node(self, *inputs: Any) -> Apply:
        nin = self.scalar_op.nin
        if nin not in (-1, None) and len(inputs) != nin:
            raise TypeError("%s takes %d inputs, got %d" % (self, nin, len(inputs)))
        converted = []
        for i, inp in enumerate(inputs):
            if _is_python_number(inp):
                converted.append(inp)  # kept exact (2**70 has no dtype) until promoted
                continue
            try:
                converted.append(as_tensor_variable(inp))
            except TypeError as exc:
                raise TypeError("%s: argument %d: %s" % (self, i, exc)) from exc
        try:
            converted = promote_weak_tensors(converted, self.scalar_op)
        except ValueError as exc:
            raise ValueError("%s: %s" % (self, exc)) from None
        dtypes = elemwise_output_dtypes(self.scalar_op, [v.dtype for v in converted])
        return self.apply_to_tensors(converted, dtypes)

    def apply_to_tensors(self, tensors: Sequence[AnyTensor], dtypes: Sequence[str]) -> Apply:
        """The node over ``tensors`` (TensorVariables, weak constants already promoted)
        with outputs of ``dtypes``: ``make_node``'s last step, which a caller that
        knows the output dtypes (``Elemwise.grad``) takes directly."""
        ndim = max((v.type.ndim for v in tensors), default=0)
        padded = [v if v.type.ndim == ndim else
                  DimShuffle(v.ndim, ("x",) * (ndim - v.ndim) + tuple(range(v.ndim)))(v)
                  for v in tensors]
        shape = broadcast_shapes(*[v.type.shape for v in padded], names=tensors)
        return Apply(self, padded, [TensorType(d, shape)() for d in dtypes])

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        if self.nfunc is not None:
            target = self._inplace_target(node, inputs)
            if target is not None:
                results = [self.nfunc(*inputs, out=target)]
            else:
                results = self.nfunc(*inputs)
                if len(node.outputs) == 1:
                    results = [results]
        else:
            results = self._vectorized(node, inputs)
        for cell, out, value in zip(output_storage, node.outputs, results, strict=True):
            dtype = out.type.numpy_dtype
            if type(value) is not np.ndarray or value.dtype != dtype:
                value = np.asarray(value, dtype=dtype)
            cell[0] = value

    def _inplace_target(self, node, inputs):
        """The input array a single-output in-place node writes into, or None.

        None (a fresh result: ``destroy_map`` permits overwriting, it does not
        require it) when the array is not a writeable ndarray of the output's
        shape.
        """
        if not self.inplace_pattern or len(node.outputs) != 1:
            return None
        target = inputs[self.inplace_pattern[0][1]]
        if type(target) is not np.ndarray or not target.flags.writeable \
                or target.dtype != node.outputs[0].type.numpy_dtype:
            return None
        shapes = [np.shape(i) for i in inputs]
        if any(s != target.shape for s in shapes):
            try:
                if np.broadcast_shapes(*shapes) != target.shape:
                    return None
            except ValueError:
                return None  # NumPy's own error comes from the fresh computation
        return target

    def make_py_thunk(self, node, in_cells, out_cells):
        """A lean thunk calling the NumPy ufunc directly when its dtypes already match.

        Returns None (use :meth:`perform`) for in-place nodes, several
        outputs, or dtypes NumPy would not produce by itself.
        """
        raw = getattr(type(self.scalar_op), "nfunc", None)
        plan = getattr(self.scalar_op, "_array_plan", None)
        if self.inplace_pattern or len(node.outputs) != 1 or raw is None or plan is None:
            return None
        # only a plain ufunc (or a wrapper of one) qualifies: an nfunc that is a
        # property (Cast) or a Python function is left to perform()
        if not isinstance(getattr(raw, "ufunc", raw), np.ufunc):
            return None
        kind, _ = plan(raw, tuple(i.type.dtype for i in node.inputs))
        raw = getattr(raw, "ufunc", raw)
        if kind != "direct" or raw.nin != len(node.inputs):
            return None
        (out,) = out_cells
        asarray, ndarray = np.asarray, np.ndarray
        if len(in_cells) == 1:
            (a,) = in_cells

            def thunk():
                r = raw(a[0])
                out[0] = r if type(r) is ndarray else asarray(r)
        elif len(in_cells) == 2:
            a, b = in_cells

            def thunk():
                r = raw(a[0], b[0])
                out[0] = r if type(r) is ndarray else asarray(r)
        else:
            return None
        return thunk

    def _vectorized(self, node, inputs):
        arrays = np.broadcast_arrays(*inputs)
        shape = arrays[0].shape if arrays else ()
        outs = [np.empty(shape, dtype=o.type.numpy_dtype) for o in node.outputs]
        impl = self.scalar_op.impl
        for index in np.ndindex(*shape):
            values = impl(*[a[index] for a in arrays])
            if len(outs) == 1:
                values = (values,)
            for o, v in zip(outs, values, strict=True):
                o[index] = v
        return outs

    def chunk_semantics(self, node: Apply) -> ChunkSemantics | None:
        """Elementwise: runs per block (see :mod:`nbgraph.tensor.chunking`)."""
        from nbgraph.tensor import chunking

        return None if self.inplace_pattern else chunking.elementwise()

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        from nbgraph.tensor.basic import constant_shape_entry

        out_shape = []
        for dim, size in enumerate(node.outputs[0].type.shape):
            if size is not None:
                out_shape.append(constant_shape_entry(size))
                continue
            # Inputs whose size here may differ from 1; at run time any of them
            # may still be 1 and broadcast, so pick the first that is not 1.
            candidates = [shp[dim] for inp, shp in zip(node.inputs, input_shapes, strict=True)
                          if inp.type.shape[dim] != 1]
            chosen = candidates[0]
            for other in candidates[1:]:
                chosen = _switch_on_one(chosen, other)
            out_shape.append(chosen)
        return [tuple(out_shape)] * len(node.outputs)

    def grad(self, inputs, output_grads):
        if self.scalar_op.holomorphic and any(
                v.dtype in COMPLEX_DTYPES for v in list(inputs) + list(output_grads)):
            # Theano's gradient of a real cost C in z = x + iy is dC/dx + i dC/dy: for a
            # holomorphic op, conj(f'(z)) * gz, i.e. the real formula taken on conj(gz), conjugated
            conj = Elemwise(ps.conj)
            flipped = self._grad([conj(g) if _is_complex(g) else g for g in output_grads], inputs)
            return [conj(g) if _is_complex(g) else g for g in flipped]
        return self._grad(output_grads, inputs)

    def _grad(self, output_grads, inputs):
        recipe = _scalar_gradient(self.scalar_op, [i.dtype for i in inputs],
                                  [g.dtype for g in output_grads])
        lifted = dict(zip(recipe.inputs, inputs, strict=True))
        lifted.update(zip(recipe.output_grads, output_grads, strict=True))
        _lift_scalar_graph(recipe.order, lifted)
        return [_input_grad(sgrad, inp, inputs, lifted)
                for inp, sgrad in zip(inputs, recipe.input_grads, strict=True)]


class _ScalarGradient:
    """A scalar op's gradient graph over placeholder scalars, for one set of dtypes."""

    def __init__(self, scalar_op, in_dtypes, grad_dtypes):
        self.inputs = [ps.get_scalar_type(d)() for d in in_dtypes]
        self.output_grads = [ps.get_scalar_type(d)() for d in grad_dtypes]
        results = scalar_op.grad(self.inputs, self.output_grads)
        if results is None or len(results) != len(in_dtypes):
            raise ValueError("%s.grad returned %r for %d inputs" % (
                scalar_op, results, len(in_dtypes)))
        self.input_grads = list(results)
        from nbgraph.core.graph import toposort

        self.order = toposort([g for g in results if isinstance(g, Variable)
                               and g.owner is not None])


# (scalar_op, input dtypes, gradient dtypes) -> _ScalarGradient
_SCALAR_GRADIENTS: dict[Any, _ScalarGradient] = {}


def _scalar_gradient(scalar_op, in_dtypes, grad_dtypes):
    """The gradient graph of ``scalar_op`` for these dtypes, built once: it depends on
    nothing else, and building scalar nodes is most of the cost of ``Elemwise.grad``."""
    key = (scalar_op, tuple(in_dtypes), tuple(grad_dtypes))
    try:
        found = _SCALAR_GRADIENTS.get(key)
    except TypeError:  # an unhashable scalar op
        return _ScalarGradient(scalar_op, in_dtypes, grad_dtypes)
    if found is None:
        found = _ScalarGradient(scalar_op, in_dtypes, grad_dtypes)
        if len(_SCALAR_GRADIENTS) >= 4096:
            _SCALAR_GRADIENTS.clear()
        _SCALAR_GRADIENTS[key] = found
    return found


def _input_grad(sgrad, inp, inputs, lifted):
    """The tensor gradient of ``inp`` from its scalar op's gradient ``sgrad``."""
    if is_disconnected(sgrad) or null_reason(sgrad) is not None:
        return sgrad
    if sgrad is None or sgrad.type.grad_is_zero(sgrad):  # None: a user's ScalarOp
        return zero_gradient(inp)
    g = lifted.get(sgrad)
    if g is None:  # a constant
        g = TensorConstant(TensorType(sgrad.type.dtype, ()),
                           np.asarray(sgrad.data, dtype=sgrad.type.dtype))
    if g.ndim < inp.ndim:  # a gradient that does not depend on the point
        from nbgraph.tensor.basic import alloc_like

        g = alloc_like(g, inp)
    if _may_broadcast(inp, inputs):
        return input_gradient(sum_to_shape(g, inp), inp)
    if any(s is not None and t is None for s, t in zip(inp.type.shape, g.type.shape, strict=True)):
        from nbgraph.tensor.basic import specify_shape

        g = specify_shape(g, inp.type.shape)  # keep the static sizes inp has
    return input_gradient(g, inp)


def _may_broadcast(inp, inputs):
    """Whether the Elemwise output may be larger than ``inp`` in some dimension: where
    ``inp`` is 1 or of unknown size and another input is not statically 1."""
    for d, size in enumerate(inp.type.shape):
        if size is not None and size != 1:
            continue  # the output has this size, or the node fails
        if any(other is not inp and other.type.shape[d] != 1 for other in inputs):
            return True
    return False


def _is_complex(var):
    return getattr(var, "dtype", None) in COMPLEX_DTYPES  # markers have none


def _switch_on_one(size, other):
    """``other if size == 1 else size``: the broadcast size of two dimensions."""
    from nbgraph.tensor.math import eq, switch

    return switch(eq(size, 1), other, size)


def _lift_scalar_graph(order, lifted):
    """Rebuild the scalar nodes ``order`` as Elemwise nodes; ``lifted`` maps scalar
    Variables to tensors (the roots on entry) and receives the new outputs."""
    for node in order:
        args = []
        for var in node.inputs:
            if var in lifted:
                args.append(lifted[var])
            elif var.owner is None:
                args.append(TensorConstant(TensorType(var.type.dtype, ()),
                                           np.asarray(var.data, dtype=var.type.dtype)))
            else:
                raise ValueError("scalar gradient graph uses %r, which is not an input" % var)
        # the scalar node was built from these very dtypes: its outputs' are the node's
        outs = Elemwise(node.op).apply_to_tensors(args, [o.type.dtype for o in node.outputs])
        lifted.update(zip(node.outputs, outs.outputs, strict=True))


add = Elemwise(ps.add)
mul = Elemwise(ps.mul)
sub = Elemwise(ps.sub)
true_div = Elemwise(ps.true_div)
