"""Graph nodes: Variable, Constant, Apply (and the ``tag`` bag, Scratchpad).

A graph is bipartite: a :class:`Variable` is data, an :class:`Apply` is one
application of an Op to input Variables, producing output Variables.  Each
output points back to its Apply through ``owner`` and ``index``; roots have
``owner=None``.  The walks over these nodes (toposort, clone, ...) live in
:mod:`nbgraph.core.graph`, which also re-exports every name here.

>>> from nbgraph.core.type import Generic
>>> x = Variable(Generic(), name="x")
>>> x.owner is None, x.index is None, x.name
(True, True, 'x')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nbgraph.config import config
from nbgraph.core import type as _type
from nbgraph.core.scope import current_scope
from nbgraph.core.trace import creation_site

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.op import Op
    from nbgraph.core.type import Type

__all__ = ["Scratchpad", "Variable", "Constant", "Apply"]

_next_auto_id = itertools.count()
_UNSET = object()  # Apply.__init__: the creation site, not looked up yet


class Scratchpad:
    """A free attribute bag (``var.tag``) for notes attached to graph nodes."""

    if TYPE_CHECKING:  # any attribute may be set on it
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __repr__(self) -> str:
        items = ", ".join("%s=%r" % kv for kv in sorted(vars(self).items()))
        return "Scratchpad(%s)" % items

    def update(self, other: Scratchpad) -> Scratchpad:
        """Copy every attribute of ``other`` onto self."""
        vars(self).update(vars(other))
        return self

    def copy(self) -> Scratchpad:
        """A shallow copy of the bag."""
        return Scratchpad().update(self)


class Variable:
    """A typed datum in a graph: an input, a constant, or an Op's output.

    Fields: ``type`` (a Type), ``owner`` (the Apply computing it, or None),
    ``index`` (its position in ``owner.outputs``), ``name`` (for printing)
    and ``tag`` (a free attribute bag).
    """

    __array_priority__ = 1000  # let NumPy defer to our operators

    def __init__(self, type: Type, owner: Apply | None = None, index: int | None = None,
                 name: str | None = None) -> None:
        if not isinstance(type, _type.Type):
            raise TypeError("Variable needs a Type as its type, got %r" % (type,))
        if owner is not None and not isinstance(owner, Apply):
            raise TypeError("owner must be an Apply or None, got %r" % (owner,))
        if index is not None and not isinstance(index, int):
            raise TypeError("index must be an int or None, got %r" % (index,))
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a str or None, got %r" % (name,))
        self.type: Any = type  # a Type (Any: subclasses' types add attributes, ndim...)
        self.owner: Apply | None = owner
        self.index = index
        self.name = name
        self.tag = Scratchpad()
        self.auto_name = "auto_%d" % next(_next_auto_id)

    def __repr__(self) -> str:
        if self.name is not None:
            return self.name
        if self.owner is not None:
            return "%s.%s" % (self.owner.op, self.index)
        return "<%r>" % (self.type,)

    __str__ = __repr__

    def clone(self, name: str | None = None) -> Variable:
        """A new root Variable with the same type, name (or ``name``) and a copy of the tag.

        A plain Variable of a Type that prefers a richer class (a TensorType
        makes TensorVariables) is cloned into that class, so graphs built the
        long way, with ``Variable(type=...)``, get the tensor methods the
        rewrites rely on.
        """
        new: Variable = _clone_class(self, Variable, "variable_type")(
            self.type, None, None, self.name if name is None else name)
        new.tag = self.tag.copy()
        return new

    def get_parents(self) -> list[Apply]:
        """The Apply owning this variable, as a list (empty for roots)."""
        return [self.owner] if self.owner is not None else []

    def eval(self, inputs_to_values: Mapping[Any, Any] | None = None, linker: Any = None) -> Any:
        """Compute this variable's value, compiling once and reusing the result.

        ``inputs_to_values`` maps input Variables (or their names) to values;
        ``linker`` picks the linker (None: the configured default; "dask" or a
        ``DaskLinker`` returns a dask array, or NumPy with ``compute=True``).
        """
        from nbgraph.core import evaluation

        if linker is None:
            return evaluation.evaluate(self, inputs_to_values)
        return evaluation.evaluate(self, inputs_to_values, linker=linker)


class Constant(Variable):
    """A Variable with a fixed value, ``data``, filtered by its type.

    Array data is made read-only; ``data`` can be set once.  A Constant has
    no owner and cannot be a function input.  Two constants with equal type
    and data share a :meth:`signature`, which is how the merge rewriter finds
    duplicates (``==`` itself stays identity, so constants can key dicts).
    """

    def __init__(self, type: Type, data: Any, name: str | None = None) -> None:
        super().__init__(type, None, None, name)
        self._data: Any = _UNSET
        self._signature: tuple[Any, Any] | None = None
        self.data = data

    @property
    def data(self) -> Any:
        """The constant's value (read-only)."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if self._data is not _UNSET:
            raise AttributeError("Constant %r already holds data; it cannot be changed" % self)
        value = self.type.filter(value)
        self._data = _freeze(value)
        self._signature = None

    @property
    def value(self) -> Any:
        """Alias of :attr:`data`."""
        return self._data

    def signature(self) -> tuple[Any, Any]:
        """A hashable key equal for constants of equal type and data."""
        if self._signature is None:
            self._signature = (self.type, self.type.data_signature(self._data))
        return self._signature

    def equals(self, other: object) -> bool:
        """True when ``other`` is a Constant of the same type with equal data."""
        return (isinstance(other, Constant) and self.type == other.type
                and self.signature() == other.signature()
                and bool(self.type.values_eq(self._data, other._data)))

    def clone(self, name: str | None = None) -> Constant:
        """A new Constant sharing the (read-only) data."""
        new: Constant = _clone_class(self, Constant, "constant_type")(
            self.type, self._data, self.name if name is None else name)
        new.tag = self.tag.copy()
        return new

    def __repr__(self) -> str:
        if self.name is not None:
            return self.name
        return _short_value(self._data)

    __str__ = __repr__

    @property
    def owner(self) -> None:
        """Always None."""
        return None

    @owner.setter
    def owner(self, value: Apply | None) -> None:
        if value is not None:
            raise ValueError("a Constant cannot have an owner (tried to set %r)" % (value,))


_UNSET = object()


def _clone_class(var: Variable, base: type[Variable], attr: str) -> type[Any]:
    """The class a clone of ``var`` gets: its own, or its Type's richer one."""
    cls = type(var)
    preferred = getattr(var.type, attr, None)
    if cls is base and isinstance(preferred, type) and issubclass(preferred, base):
        return preferred
    return cls


def _freeze(value: Any) -> Any:
    flags = getattr(value, "flags", None)
    if flags is None or not hasattr(value, "setflags"):
        return value
    if flags.writeable or _writable_base(value):
        value = value.copy()
        value.setflags(write=False)
    return value


def _writable_base(value: Any) -> bool:
    """True when ``value`` is a view of memory someone could still write to."""
    base = getattr(value, "base", None)
    while base is not None:
        flags = getattr(base, "flags", None)
        if flags is None or flags.writeable:
            return True  # a writable array, or a foreign buffer we cannot vouch for
        base = getattr(base, "base", None)
    return False


def _short_value(data: Any, limit: int = 60) -> str:
    if hasattr(data, "tolist") and getattr(data, "size", 2) <= 10:
        text = str(data.tolist()) if getattr(data, "ndim", 0) else str(data.item())
    else:  # (numpy's repr is slow: dprint of a big graph spent most of its time here)
        text = repr(data)
    text = " ".join(text.split())
    if len(text) > limit:
        shape = getattr(data, "shape", None)
        text = "Constant{shape=%s}" % (shape,) if shape is not None else text[:limit - 3] + "..."
    return text


class Apply:
    """One application of ``op`` to ``inputs``, producing ``outputs``.

    Building it sets each output's ``owner`` to this node and its ``index``
    to its position.  Outputs must be fresh (ownerless) Variables.
    """

    __slots__ = ("op", "inputs", "outputs", "tag", "__weakref__")
    op: Op
    inputs: list[Variable]
    outputs: list[Variable]
    tag: Scratchpad

    def __init__(self, op: Op, inputs: Iterable[Variable], outputs: Iterable[Variable]) -> None:
        inputs = list(inputs)
        outputs = list(outputs)
        for i, inp in enumerate(inputs):
            if not isinstance(inp, Variable):
                raise TypeError("input %d of Apply(%s) must be a Variable, got %s %r" % (
                    i, op, type(inp).__name__, inp))
        self._check_outputs(op, outputs)
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.tag = Scratchpad()
        # the user's line that built it (nbgraph.core.trace), found only for an output
        # that has none yet: a clone's outputs carry their original's
        site: Any = _UNSET if config.node_trace else None
        path = current_scope()
        for i, out in enumerate(outputs):
            out.owner = self
            out.index = i
            if site is not None and "trace" not in out.tag.__dict__:
                if site is _UNSET:
                    site = creation_site()
                if site is not None:
                    out.tag.trace = site
            if path and "scope" not in out.tag.__dict__:
                out.tag.scope = path  # the open `with scope(...)` blocks (nbgraph.core.scope)

    def _check_outputs(self, op: Op, outputs: list[Variable]) -> None:
        """Refuse outputs that are not fresh Variables of this node, each listed once."""
        seen: set[int] = set()
        for i, out in enumerate(outputs):
            if not isinstance(out, Variable):
                raise TypeError("output %d of Apply(%s) must be a Variable, got %s %r" % (
                    i, op, type(out).__name__, out))
            if isinstance(out, Constant):
                raise TypeError("output %d of Apply(%s) is a Constant; outputs must be "
                                "fresh Variables" % (i, op))
            if out.owner is not None and (out.owner is not self or out.index != i):
                raise ValueError("output %d of Apply(%s), %r, is already the output of %s" % (
                    i, op, out, out.owner.op))
            if id(out) in seen:
                raise ValueError("output %d of Apply(%s), %r, is listed twice" % (i, op, out))
            seen.add(id(out))

    @property
    def nin(self) -> int:
        """Number of inputs."""
        return len(self.inputs)

    @property
    def nout(self) -> int:
        """Number of outputs."""
        return len(self.outputs)

    @property
    def default_output(self) -> Variable:
        """The output ``op(...)`` returns: ``op.default_output`` or the only output."""
        do = getattr(self.op, "default_output", None)
        if do is None:
            if len(self.outputs) == 1:
                return self.outputs[0]
            raise ValueError("%s has %d outputs and no default_output" % (
                self.op, len(self.outputs)))
        if not 0 <= do < len(self.outputs):
            raise ValueError("%s.default_output=%r is out of range for %d outputs" % (
                self.op, do, len(self.outputs)))
        index: int = do
        return self.outputs[index]

    @property
    def out(self) -> Variable:
        """Alias of :attr:`default_output`."""
        return self.default_output

    def get_parents(self) -> list[Variable]:
        """The input Variables."""
        return list(self.inputs)

    def clone(self) -> Apply:
        """A new Apply with the same op and inputs and fresh output Variables."""
        return Apply(self.op, self.inputs, [out.clone() for out in self.outputs])

    def clone_with_new_inputs(self, inputs: Iterable[Variable], strict: bool = True) -> Apply:
        """A copy of this node reading ``inputs`` instead.

        Each new input goes through the old input's ``filter_variable``, so a
        type that cannot stand in for the old one raises TypeError.  Whenever
        an input's type changes (narrower after filtering, or anything with
        ``strict=False``) the node is rebuilt by ``op.make_node``, so its
        outputs get the types the new inputs imply (never stale ones).
        """
        inputs = list(inputs)
        if len(inputs) != len(self.inputs):
            raise ValueError("%s takes %d inputs; clone_with_new_inputs got %d" % (
                self.op, len(self.inputs), len(inputs)))
        remake = False
        checked = []
        for old, new in zip(self.inputs, inputs, strict=True):
            if old.type is new.type or old.type == new.type:
                checked.append(new)
            elif strict:
                filtered = old.type.filter_variable(new)
                checked.append(filtered)
                remake = remake or filtered.type != old.type
            else:
                checked.append(new)
                remake = True
        if remake:
            remade: Apply = self.op.make_node(*checked)
            return remade
        return Apply(self.op, checked, [out.clone() for out in self.outputs])

    def __repr__(self) -> str:
        return "%s(%s)" % (self.op, ", ".join(repr(i) for i in self.inputs))

    __str__ = __repr__


def _link_types() -> None:
    _type.Type.variable_type = Variable
    _type.Type.constant_type = Constant


_link_types()
