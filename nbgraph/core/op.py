"""Ops: the definitions of computations that Apply nodes apply.

An Op is like a function definition; ``op.make_node(*inputs)`` is like a
call, returning an :class:`~nbgraph.core.graph.Apply`.  Parameters that
change what the Op computes are attributes listed in ``__props__``; they give
equality, hashing and ``str`` (``Name{p1, p2}``).

>>> from nbgraph.core.type import Generic
>>> from nbgraph.core.graph import Apply
>>> class Pair(Op):
...     __props__ = ("swap",)
...     def __init__(self, swap=False):
...         self.swap = swap
...     def make_node(self, a, b):
...         return Apply(self, [a, b], [Generic()()])
...     def perform(self, node, inputs, output_storage):
...         a, b = inputs
...         output_storage[0][0] = (b, a) if self.swap else (a, b)
>>> str(Pair(True)), Pair(True) == Pair(True), Pair(True) == Pair(False)
('Pair{True}', True, False)
>>> g = Generic()
>>> run_node(Pair(True).make_node(g("a"), g("b")), [1, 2])
[(2, 1)]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast


from nbgraph.core.graph import Apply
from nbgraph.core.gradient_types import DisconnectedGradient, NullGradient
from nbgraph.core.props import PropsMixin
from nbgraph.core.type import MethodNotDefined

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.chunks import ChunkSemantics
    from nbgraph.core.fgraph import FunctionGraph
    from nbgraph.core.graph import Variable
    from nbgraph.core.type import Type

#: Where ``perform`` stores its results: one one-element list per output.
OutputStorage = list[list[Any]]

__all__ = ["Op", "run_node", "NullGradient", "DisconnectedGradient", "FromFunctionOp", "as_op"]


class Op(PropsMixin):
    """Base class of all Ops.

    Subclasses implement :meth:`make_node` and usually :meth:`perform`;
    :meth:`grad` and :meth:`infer_shape` are optional.  An Op with C code
    also derives from :class:`nbgraph.core.c_interface.CLinkerOp`
    (``class MyOp(CLinkerOp, Op)``), which declares the C hooks.

    ``view_map`` / ``destroy_map`` map an output index to the input indices
    it views (shares memory with) or overwrites.  ``default_output`` names
    the output ``op(...)`` returns when the node has several (the others
    stay hidden).
    """

    default_output: int | None = None
    view_map: dict[int, list[int]] = {}
    destroy_map: dict[int, list[int]] = {}

    #: Ops declared Theano's short way list their input and output Types here;
    #: the default :meth:`make_node` then checks and builds the node.
    itypes: Sequence[Type] | None = None
    otypes: Sequence[Type] | None = None

    def make_node(self, *inputs: Any) -> Apply:
        """Check and wrap ``inputs`` and return ``Apply(self, inputs, outputs)``.

        The default serves Ops that declare ``itypes``/``otypes``: each input
        goes through its declared Type's ``filter_variable`` (a TypeError names
        the input that does not fit) and each output is a new Variable of its
        declared Type.  Other Ops must override it.
        """
        if self.itypes is None or self.otypes is None:
            raise MethodNotDefined("%s does not implement make_node() (or declare itypes and "
                                   "otypes)" % type(self).__name__)
        if len(inputs) != len(self.itypes):
            raise TypeError("%s takes %d inputs (itypes), got %d" % (
                self, len(self.itypes), len(inputs)))
        checked = []
        for i, (itype, var) in enumerate(zip(self.itypes, inputs, strict=True)):
            try:
                checked.append(itype.filter_variable(var))
            except TypeError as exc:
                raise TypeError("%s: input %d: %s" % (self, i, exc)) from exc
        return Apply(self, checked, [otype() for otype in self.otypes])

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """Build a node and return its default output (or all outputs)."""
        node = self.make_node(*inputs, **kwargs)
        if not isinstance(node, Apply):
            raise TypeError("%s.make_node() must return an Apply, got %r" % (self, node))
        if self.default_output is not None:
            return node.outputs[self.default_output]
        if len(node.outputs) == 1:
            return node.outputs[0]
        return list(node.outputs)

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        """Compute the outputs' values from ``inputs`` (a list of values).

        ``output_storage[i]`` is a one-element list; store output ``i`` in
        ``output_storage[i][0]``.  What is already there (a previous result,
        or None) may be reused or discarded.
        """
        raise MethodNotDefined("%s has no Python implementation (perform)" % self)

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]) -> list[Any]:
        """Symbolic gradients of a cost with respect to each input.

        ``output_grads[i]`` is d(cost)/d(outputs[i]).  Return one entry per
        input: a Variable (zeros where the gradient is zero), a
        :class:`DisconnectedGradient` where the outputs do not depend on the
        input, or a :class:`NullGradient` (see ``grad_undefined``) where the
        gradient is undefined -- never None (see
        :mod:`nbgraph.core.gradient_types`).
        """
        raise MethodNotDefined("%s does not implement grad()" % self)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        """Symbolic output shapes from the inputs' shapes (tuples of scalar Variables)."""
        raise MethodNotDefined("%s does not implement infer_shape()" % self)

    # -- laziness (honoured by every linker's scheduler) -------------------
    def lazy_inputs(self, node: Apply) -> Sequence[int]:
        """Indices of the inputs this node may do without: empty for an eager Op.

        The linkers compute a lazy input, and the nodes only it needs, only
        when :meth:`needed_inputs` asks for it (a conditional computes the
        branch it takes).  ``perform`` receives None for the others.
        """
        return ()

    def needed_inputs(self, node: Apply, values: Sequence[Any]) -> Sequence[int]:
        """The lazy inputs to compute, given ``values`` (one per input: the
        eager inputs' values, None for the lazy ones)."""
        return self.lazy_inputs(node)

    def do_constant_folding(self, node: Apply) -> bool:
        """False to forbid folding this node when all its inputs are constant."""
        return True

    # -- chunked execution (the Dask linker) -----------------------------------
    def chunk_semantics(self, node: Apply) -> ChunkSemantics | None:
        """How ``node`` runs on blocks of its inputs: a
        :class:`~nbgraph.core.chunks.ChunkSemantics`, or None (the default: no
        chunked rule; a chunked linker refuses the node or runs it on gathered
        values)."""
        return None

    # -- inner graphs (loops, conditionals: Ops running graphs of their own) --
    def inner_graphs(self) -> list[FunctionGraph]:
        """The FunctionGraphs this Op runs inside itself (display shows them); none here."""
        return []

    def link_inner_graphs(self, node: Apply, link: Callable[[FunctionGraph], Any],
                          ) -> Callable[[Apply, list[Any], OutputStorage], None] | None:
        """A perform for ``node`` whose inner graphs run as compiled by ``link``.

        Linkers call this once per node when they link a graph: ``link(fgraph)``
        links an inner graph with the same linker as the outer one and returns
        its program (``input_cells``, ``output_cells``, ``run()``).  Return a
        callable with :meth:`perform`'s signature, or None (the default) to
        run :meth:`perform` itself.
        """
        return None

    def __repr__(self) -> str:
        return str(self)


def run_node(node: Apply, input_values: Sequence[Any], output_storage: OutputStorage | None = None,
             check: bool = True) -> list[Any]:
    """Run ``node.op.perform`` on values and return the list of output values.

    With ``check`` (the default), a perform that leaves an output unset,
    resizes the storage or stores a value its output's Type rejects raises
    a ValueError/TypeError naming the Op and the output.
    """
    op = node.op
    if len(input_values) != len(node.inputs):
        raise ValueError("%s takes %d inputs, got %d values" % (
            op, len(node.inputs), len(input_values)))
    storage = output_storage or [[None] for _ in node.outputs]
    op.perform(node, list(input_values), storage)
    if not check:
        return [cell[0] for cell in storage]
    if len(storage) != len(node.outputs):
        raise ValueError("%s.perform changed the number of output cells from %d to %d" % (
            op, len(node.outputs), len(storage)))
    results = []
    for i, (cell, out) in enumerate(zip(storage, node.outputs, strict=True)):
        if not isinstance(cell, list) or len(cell) != 1:
            raise ValueError("%s.perform resized output cell %d; store into cell[0] only" % (
                op, i))
        value = cell[0]
        if value is None:
            raise ValueError("%s.perform did not set output %d of %d" % (
                op, i, len(node.outputs)))
        if not out.type.is_valid_value(value):
            raise TypeError("%s.perform stored a bad value for output %d: %s" % (
                op, i, out.type.value_validity_msg(value)))
        results.append(value)
    return results


class FromFunctionOp(Op):
    """An Op whose ``perform`` calls a plain Python function (made by :func:`as_op`)."""

    __props__ = ("fn", "itypes", "otypes", "infer_shape_fn")
    itypes: tuple[Type, ...]
    otypes: tuple[Type, ...]

    def __init__(self, fn: Callable[..., Any], itypes: Sequence[Type], otypes: Sequence[Type],
                 infer_shape_fn: Callable[..., Any] | None = None) -> None:
        self.fn = fn
        self.itypes = tuple(itypes)
        self.otypes = tuple(otypes)
        self.infer_shape_fn = infer_shape_fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __str__(self) -> str:
        return "FromFunctionOp{%s}" % getattr(self.fn, "__name__", repr(self.fn))

    def perform(self, node: Apply, inputs: list[Any], output_storage: OutputStorage) -> None:
        results = self.fn(*inputs)
        if len(self.otypes) == 1:
            results = [results]
        if len(results) != len(self.otypes):
            raise ValueError("%s returned %d values for %d otypes" % (
                self, len(results), len(self.otypes)))
        for cell, otype, value in zip(output_storage, self.otypes, results, strict=True):
            cell[0] = otype.filter(value)

    def infer_shape(self, node: Apply, input_shapes: Sequence[tuple[Any, ...]],
                    ) -> list[tuple[Any, ...]]:
        if self.infer_shape_fn is None:
            raise MethodNotDefined("%s has no infer_shape (pass infer_shape= to as_op)" % self)
        shapes: list[tuple[Any, ...]] = self.infer_shape_fn(node, input_shapes)
        return shapes


def as_op(itypes: Type | Sequence[Type], otypes: Type | Sequence[Type],
          infer_shape: Callable[..., Any] | None = None,
          ) -> Callable[[Callable[..., Any]], FromFunctionOp]:
    """Decorator making an Op of a Python function over values, Theano's ``as_op``.

    ``itypes``/``otypes`` are lists of Types; the decorated name becomes an
    Op instance, called on Variables.  Its ``perform`` calls the function and
    filters each result through its output Type.  It has no gradient.

    >>> from nbgraph.core.type import Generic
    >>> @as_op(itypes=[Generic()], otypes=[Generic()])
    ... def swap(pair):
    ...     return pair[::-1]
    >>> run_node(swap.make_node(Generic()("p")), [(1, 2)])
    [(2, 1)]
    """
    in_types, out_types = _type_list(itypes), _type_list(otypes)

    def make(fn: Callable[..., Any]) -> FromFunctionOp:
        return FromFunctionOp(fn, in_types, out_types, infer_shape)
    return make


def _type_list(types: Type | Sequence[Type]) -> list[Type]:
    if isinstance(types, (list, tuple)):
        return list(types)
    return [cast("Type", types)]
