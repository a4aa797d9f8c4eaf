"""Types: static descriptions of the values a Variable may hold.

A Type is a set of constraints on run-time data (``float64`` arrays of two
dimensions whose first dimension is 2, say).  It makes Variables
(``make_variable``/``__call__``), checks and converts data (``filter``), and
decides whether a Variable of one Type may stand where another Type is
expected (``filter_variable``).  Only ``filter`` is abstract; every other
method has a usable default.

>>> class Anything(Type):
...     def filter(self, data, strict=False, allow_downcast=None):
...         return data
>>> Anything().is_valid_value(3)
True
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbgraph.core.props import PropsMixin

if TYPE_CHECKING:  # names used in annotations only
    from nbgraph.core.graph import Constant, Variable

__all__ = [
    "Type",
    "TraceSink",
    "DowncastError",
    "Generic",
    "generic",
    "SingletonType",
    "MethodNotDefined",
    "NarrowingStep",
    "NarrowingTrace",
]


class MethodNotDefined(NotImplementedError):
    """A Type or Op does not implement an optional hook (C code, most often)."""


class DowncastError(TypeError):
    """A value fits a Type only by losing information (``filter`` refuses it
    unless ``allow_downcast=True``).  ``reason`` says what would be lost,
    without advice; the message adds the advice for ``filter``'s callers."""

    def __init__(self, reason: str,
                 advice: str = "cast it first or pass allow_downcast=True") -> None:
        super().__init__("%s; %s" % (reason, advice))
        self.reason = reason


class NarrowingStep:
    """One decision taken while fitting a Variable to a Type.

    ``question`` is what was asked ("same type?"), ``answer`` the outcome
    ("no"), ``detail`` why, in words a reader can check.
    """

    __slots__ = ("question", "answer", "detail")

    def __init__(self, question: str, answer: str, detail: str = "") -> None:
        self.question = question
        self.answer = answer
        self.detail = detail

    def __repr__(self) -> str:
        text = "%s %s" % (self.question, self.answer)
        return text + (" (%s)" % self.detail if self.detail else "")


class NarrowingTrace:
    """Record of every decision :meth:`Type.filter_variable` takes.

    ``steps`` lists :class:`NarrowingStep` objects in order; ``result`` is the
    Variable filter_variable returned (None when it refused), ``error`` the
    exception it raised (None when it accepted).  ``nbgraph.display`` renders
    traces as numbered text or HTML; the core only records them.
    """

    def __init__(self, target_type: Type, variable: Any) -> None:
        self.target_type = target_type
        self.variable = variable
        self.steps: list[NarrowingStep] = []
        self.result: Variable | None = None
        self.error: BaseException | None = None

    def add(self, question: str, answer: str, detail: str = "") -> NarrowingStep:
        """Append a step and return it."""
        step = NarrowingStep(question, answer, detail)
        self.steps.append(step)
        return step

    @property
    def accepted(self) -> bool:
        """True when the variable was accepted (possibly after conversion)."""
        return self.error is None and self.result is not None

    def __str__(self) -> str:
        lines = ["narrowing %s to %r" % (_var_text(self.variable), self.target_type)]
        for i, step in enumerate(self.steps, 1):
            line = "%d. %s -> %s" % (i, step.question, step.answer)
            if step.detail:
                line += " - " + step.detail
            lines.append(line)
        if self.error is not None:
            lines.append("refused: %s" % self.error)
        elif self.result is not None:
            lines.append("result: %s of type %r" % (_var_text(self.result), self.result.type))
        else:
            lines.append("no decision recorded yet")
        return "\n".join(lines)

    def __repr__(self) -> str:
        if self.error is not None:
            outcome = "refused"
        else:
            outcome = "accepted" if self.result is not None else "undecided"
        return "<NarrowingTrace %s -> %r: %d steps, %s>" % (
            _var_text(self.variable), self.target_type, len(self.steps), outcome)


class _NoTrace:
    """Stand-in for a NarrowingTrace when nobody asked for one."""

    __slots__ = ()

    def add(self, question: str, answer: str, detail: str = "") -> None:
        """Record nothing."""
        return None


_NO_TRACE = _NoTrace()

#: What :meth:`Type.explain_relation` writes its steps to: a NarrowingTrace, or a
#: stand-in that records nothing (when nobody asked for a trace).
TraceSink = NarrowingTrace | _NoTrace


def _var_text(var: Any) -> str:
    return repr(var) if var is not None else "None"


class Type(PropsMixin):
    """Interface of every Type, with the documented defaults.

    Subclasses must implement :meth:`filter`.  Equality is identity unless the
    subclass sets ``__props__`` (then instances with equal props are equal) or
    overrides ``__eq__``/``__hash__``.
    """

    #: Class used by make_variable; set to nbgraph.core.graph.Variable below.
    variable_type: type[Variable] | None = None
    #: Class used by make_constant; set to nbgraph.core.graph.Constant below.
    constant_type: type[Constant] | None = None

    # -- values ----------------------------------------------------------
    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """Return ``data`` converted to a legal value of this Type, or raise TypeError.

        ``strict=True``: return ``data`` itself or raise.  Otherwise upcasts
        are allowed; downcasts (precision loss) only when ``allow_downcast``
        is True (``None`` lets the Type choose).
        """
        raise MethodNotDefined("%s must implement filter()" % type(self).__name__)

    def filter_inplace(self, value: Any, storage: Any, strict: bool = False,
                       allow_downcast: bool | None = None) -> Any:
        """Like :meth:`filter`, but may reuse ``storage`` (the old value).

        The default ignores ``storage`` and calls :meth:`filter`.
        """
        return self.filter(value, strict=strict, allow_downcast=allow_downcast)

    def is_valid_value(self, data: Any) -> bool:
        """True when ``filter(data, strict=True)`` accepts ``data`` as it is."""
        try:
            self.filter(data, strict=True)
            return True
        except (TypeError, ValueError):
            return False

    def value_validity_msg(self, data: Any) -> str:
        """A sentence explaining :meth:`is_valid_value`'s answer for ``data``."""
        try:
            self.filter(data, strict=True)
        except (TypeError, ValueError) as exc:
            return str(exc)
        return "%r is a valid value of %r" % (type(data).__name__, self)

    def values_eq(self, a: Any, b: Any) -> bool:
        """True when ``a`` and ``b`` are exactly equal values of this Type."""
        return bool(a == b)

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        """True when ``a`` and ``b`` are equal up to the Type's tolerance.

        The default is exact equality (:meth:`values_eq`).
        """
        return self.values_eq(a, b)

    def data_signature(self, data: Any) -> Any:
        """A hashable key such that equal keys mean equal constants."""
        try:
            hash(data)
        except TypeError:
            return ("id", id(data))
        if isinstance(data, numbers.Number) and not isinstance(data, numbers.Rational):
            # 0.0 == -0.0, yet 1 / c tells them apart: repr keeps the sign (and is exact)
            return (type(data).__name__, data, repr(data))
        return (type(data).__name__, data)

    def may_share_memory(self, a: Any, b: Any) -> bool:
        """True when values ``a`` and ``b`` might share memory (default: ``a is b``)."""
        return a is b

    def get_shape_info(self, obj: Any) -> Any:
        """What :meth:`get_size` needs to size ``obj`` (called while a function runs)."""
        return obj

    def get_size(self, shape_info: Any) -> int:
        """Bytes taken by the value described by ``shape_info``."""
        raise MethodNotDefined("%r cannot report value sizes" % self)

    # -- differentiation hooks (used by nbgraph.core.gradient) -----------
    def grad_ones_like(self, var: Variable) -> Variable:
        """The gradient seed d(var)/d(var) for a cost of this Type."""
        raise TypeError("cannot differentiate a cost of type %r" % self)

    def grad_zeros_like(self, var: Variable) -> Variable:
        """A zero gradient shaped like ``var``."""
        raise TypeError("variables of type %r have no gradient" % self)

    def grad_sum(self, terms: Sequence[Variable]) -> Variable:
        """The sum of several gradient contributions to one variable."""
        raise TypeError("gradients of type %r cannot be added" % self)

    def grad_flows_back(self) -> bool:
        """Whether a gradient arriving at a value of this Type flows back into the
        Op that computed it.  False for integer tensors: an Op whose outputs are
        all of such Types passes zeros to its inputs (Theano's rule).  Default True.
        """
        return True

    def grad_is_zero(self, var: Variable) -> bool:
        """Whether the gradient ``var`` (of this Type) is known to be zero everywhere.

        ``grad`` neither adds nor propagates such a gradient.  The default,
        False, is always safe; a Type recognises the zeros its own
        ``grad_zeros_like`` makes.
        """
        return False

    # -- variables -------------------------------------------------------
    def make_variable(self, name: str | None = None) -> Any:
        """A new Variable of this Type, with no owner."""
        cls = self.variable_type
        if cls is None:  # set when nbgraph.core.graph is imported
            raise TypeError("%r has no Variable class: import nbgraph.core.graph" % self)
        return cls(self, None, name=name)

    def make_constant(self, value: Any, name: str | None = None) -> Any:
        """A Constant of this Type holding ``filter(value)``."""
        cls = self.constant_type
        if cls is None:  # set when nbgraph.core.graph is imported
            raise TypeError("%r has no Constant class: import nbgraph.core.graph" % self)
        return cls(self, value, name=name)

    def __call__(self, name: str | None = None) -> Any:
        """Shortcut for :meth:`make_variable`."""
        return self.make_variable(name)

    def clone(self, **changes: Any) -> Type:
        """A copy of this Type with some parameters changed.

        Types with ``__props__`` are rebuilt from them; others are copied.
        """
        if self.__props__ is not None:
            params = self._props_dict()
            unknown = set(changes) - set(params)
            if unknown:
                raise TypeError("%s.clone() got unknown parameters %s; known: %s" % (
                    type(self).__name__, sorted(unknown), list(params)))
            params.update(changes)
            return type(self)(**params)
        import copy

        new = copy.copy(self)
        for key, value in changes.items():
            setattr(new, key, value)
        return new

    # -- relations between types ----------------------------------------
    def in_same_class(self, otype: Type) -> bool:
        """True when ``otype`` belongs to the same class of types as self.

        Default: each class holds a single type, so this is ``self == otype``.
        """
        return self == otype

    def is_super(self, otype: Type) -> bool | None:
        """True when self's set of values contains ``otype``'s (``self >= otype``).

        Returns None when the relation cannot be decided.  Default: only a
        type in the same class (an equal one) is a subtype.
        """
        if self.in_same_class(otype):
            return True
        return None

    def convert_variable(self, var: Variable) -> Variable | None:
        """Return ``var`` patched so its Type matches self, or None.

        A variable whose type equals self needs no patch and is returned as it
        is; beyond that the default converts nothing, which is always safe.
        """
        if var.type == self:
            return var
        return None

    def explain_relation(self, otype: Type, trace: TraceSink) -> None:
        """Record in ``trace`` how self and ``otype`` relate (hook for subclasses)."""
        trace.add("same class of types?", _yes_no(self.in_same_class(otype)),
                  "%r vs %r" % (self, otype))
        trace.add("is the target a supertype?", _yes_no(self.is_super(otype)))
        trace.add("is the variable's type a supertype?", _yes_no(otype.is_super(self)))

    def filter_variable(self, other: Any, allow_convert: bool = True,
                        trace: NarrowingTrace | None = None) -> Any:
        """Return a Variable of this Type (or a subtype) standing for ``other``.

        ``other`` itself is returned when its Type equals self or is more
        specific; otherwise :meth:`convert_variable` may insert a conversion.
        A non-Variable is wrapped as a constant.  Anything else raises a
        TypeError naming the variable and both types.  Pass a
        :class:`NarrowingTrace` as ``trace`` to record each decision.
        """
        recorder: NarrowingTrace | _NoTrace = _NO_TRACE if trace is None else trace
        try:
            result = self._filter_variable(other, allow_convert, recorder)
        except (TypeError, ValueError) as exc:
            if isinstance(trace, NarrowingTrace):
                trace.error = exc
            raise
        if isinstance(trace, NarrowingTrace):
            trace.result = result
        return result

    def _filter_variable(self, other: Any, allow_convert: bool,
                         trace: TraceSink) -> Any:
        from nbgraph.core.graph import Variable

        if isinstance(other, Type):
            raise TypeError(
                "expected a Variable of type %r, got the Type %r itself; "
                "call it (%r()) to make a Variable" % (self, other, other))
        if not isinstance(other, Variable):
            trace.add("is it a Variable?", "no",
                      "a %s value is wrapped as a constant" % type(other).__name__)
            other = self.make_constant(other)
            trace.add("constant made", repr(other.type))
            return other
        if other.type == self:
            trace.add("same type?", "yes", "%r" % self)
            return other
        trace.add("same type?", "no", "target %r, variable %r" % (self, other.type))
        self.explain_relation(other.type, trace)
        if self.is_super(other.type):
            trace.add("keep the variable?", "yes",
                      "%r is as or more specific than the target" % other.type)
            return other
        if allow_convert:
            converted = self.convert_variable(other)
            if converted is not None and (converted.type == self
                                          or self.is_super(converted.type)):
                trace.add("converted by", _describe_conversion(converted),
                          "result type %r" % converted.type)
                return converted
            trace.add("conversion possible?", "no", "convert_variable returned %s" % (
                "None" if converted is None else "an incompatible %r" % converted.type))
        else:
            trace.add("conversion allowed?", "no", "allow_convert=False")
        raise TypeError(
            "Cannot use variable %r of type %r where type %r is expected%s" % (
                other, other.type, self, _incompat_hint(self, other.type)))

    def __repr__(self) -> str:
        return str(self)


def _incompat_hint(target: Type, other: Type) -> str:
    hint = getattr(target, "incompatibility", None)
    if hint is None:
        return ""
    reason = hint(other)
    return ": " + reason if reason else ""


def _describe_conversion(var: Variable) -> str:
    if var.owner is None:
        return repr(var)
    return str(var.owner.op)


def _yes_no(flag: bool | None) -> str:
    if flag is None:
        return "undecided"
    return "yes" if flag else "no"


class SingletonType(Type):
    """Base for parameterless Types: all instances of one class are equal."""

    __props__ = ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class Generic(SingletonType):
    """Any Python object.  Values pass through filter unchanged.

    Generic values never reach C code (the C linker passes plain C data), so
    an Op with Generic inputs runs in Python.
    """

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        return data

    def values_eq(self, a: Any, b: Any) -> bool:
        if a is b:
            return True
        try:
            return bool(a == b)
        except (TypeError, ValueError):
            return False

    def __str__(self) -> str:
        return "Generic"


generic = Generic()
