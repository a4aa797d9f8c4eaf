"""Theano's ways of describing a function's inputs and outputs: In, Out, and the
extras of a compiled Function (``copy``, ``maker``, pickling).

>>> import nbgraph.tensor as nt
>>> from nbgraph import function
>>> x, y = nt.dscalar("x"), nt.dscalar("y")
>>> f = function([x, In(y, value=1.0)], x + y)
>>> float(f(2.0)), float(f(2.0, 3.0)), float(f(2.0, y=10.0))
(3.0, 5.0, 12.0)

``In(var, value=..., name=..., mutable=..., borrow=...)`` gives an input a
default value (used when the caller leaves it out) and a keyword name;
``Out(var, borrow=...)`` wraps an output.  ``mutable`` and ``borrow`` are
permissions in Theano (the function *may* overwrite or keep the caller's
array); nbgraph never needs them, so they are recorded and nothing more: a
function never overwrites an argument, and a returned array is never
overwritten by a later call.
"""

from __future__ import annotations

from typing import Any

from nbgraph.core.graph import Variable

__all__ = ["In", "Out", "FunctionExtras", "FunctionMaker", "unpack_inputs",
           "unpack_outputs", "NO_DEFAULT"]


class _NoDefault:
    """Marker of an input without a default value."""

    def __repr__(self):
        return "NO_DEFAULT"

    def __reduce__(self):
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


class In:
    """An input of :func:`nbgraph.function` with options.

    ``variable``: the root Variable.  ``value``: its default (the call may then
    leave it out); ``name``: the keyword that sets it at call time (default:
    the variable's name).  ``mutable``/``borrow``: accepted and recorded (see
    the module docstring).  ``update``: not supported; use a shared variable
    and ``updates=`` instead.
    """

    def __init__(self, variable: Variable, name: str | None = None, value: Any = NO_DEFAULT,
                 update: Any = None, mutable: bool = False, strict: bool = False,
                 allow_downcast: bool | None = None, autoname: bool = True,
                 borrow: bool = False, implicit: bool = False):
        if not isinstance(variable, Variable):
            raise TypeError("In(variable, ...): variable must be a Variable, got %s %r" % (
                type(variable).__name__, variable))
        if update is not None:
            raise TypeError("In(..., update=) is not supported: keep the state in a shared "
                            "variable and pass updates=[(shared, new_value)] to function()")
        if name is not None and not isinstance(name, str):
            raise TypeError("In(..., name=) must be a string, got %r" % (name,))
        self.variable = variable
        self.name = name if name is not None else (variable.name if autoname else None)
        self.value = value
        self.mutable = bool(mutable)
        self.borrow = bool(borrow)
        self.strict = bool(strict)
        self.allow_downcast = allow_downcast
        self.implicit = bool(implicit)

    @property
    def has_default(self) -> bool:
        """True when the input has a default value."""
        return self.value is not NO_DEFAULT

    def __repr__(self):
        extra = "" if not self.has_default else ", value=%r" % (self.value,)
        return "In(%r%s)" % (self.variable, extra)


class Out:
    """An output of :func:`nbgraph.function`.  ``borrow`` is accepted: nbgraph
    never overwrites a returned array, which is what ``borrow=False`` asks."""

    def __init__(self, variable: Variable, borrow: bool = False):
        if not isinstance(variable, Variable):
            raise TypeError("Out(variable, ...): variable must be a Variable, got %s %r" % (
                type(variable).__name__, variable))
        self.variable = variable
        self.borrow = bool(borrow)

    def __repr__(self):
        return "Out(%r)" % (self.variable,)


def unpack_inputs(inputs):
    """``(variables, specs)``: the Variables of ``inputs`` (Variables or In) and
    one :class:`In` per input (made with defaults for plain Variables)."""
    variables, specs = [], []
    for i, item in enumerate(inputs):
        spec = item if isinstance(item, In) else None
        if spec is None:
            if not isinstance(item, Variable):
                raise TypeError("input %d of function() must be a Variable (or In(variable)), "
                                "got %s %r" % (i, type(item).__name__, item))
            spec = In(item)
        variables.append(spec.variable)
        specs.append(spec)
    return variables, specs


def unpack_outputs(outputs):
    """``outputs`` with every :class:`Out` replaced by its Variable (same nesting)."""
    if isinstance(outputs, Out):
        return outputs.variable
    if isinstance(outputs, (list, tuple)):
        return [o.variable if isinstance(o, Out) else o for o in outputs]
    return outputs


class FunctionMaker:
    """What compiled a Function (Theano's ``f.maker``): ``fgraph`` (the rewritten
    graph), ``inputs`` (one :class:`In` per input), ``outputs``, ``mode``,
    ``linker``."""

    def __init__(self, function):
        self.fgraph = function.fgraph
        self.inputs = list(function.input_specs)
        self.outputs = [Out(v) for v in function.outputs]
        self.mode = function.build_options.get("mode")
        self.linker = function.linker

    def __repr__(self):
        return "<FunctionMaker of %d inputs, %d outputs, linker=%s>" % (
            len(self.inputs), len(self.outputs), self.linker)


class FunctionExtras:
    """The Theano-compatible parts of :class:`~nbgraph.linkers.function.Function`:
    default values and keyword names of inputs, ``maker``, ``copy`` and
    pickling.  Mixed into Function; works on the attributes function() sets
    (``build_options``: the arguments it was compiled from; ``input_specs``)."""

    build_options: dict = {}
    input_specs: list = []

    @property
    def maker(self) -> FunctionMaker:
        """A :class:`FunctionMaker`: ``f.maker.fgraph`` is the graph that runs."""
        return FunctionMaker(self)

    @property
    def defaults(self) -> list:
        """The default value of each input (``NO_DEFAULT`` where none)."""
        return [spec.value for spec in self.input_specs]

    def _fill_defaults(self, args, kwargs):
        """Positional arguments for every input: ``args``, then keywords by name,
        then defaults.  Raises TypeError naming what is missing or unknown."""
        names = [spec.name for spec in self.input_specs]
        values = list(args)
        if len(values) > len(names):
            return values  # the caller's count check reports it
        values += [NO_DEFAULT] * (len(names) - len(values))
        for key, value in (kwargs or {}).items():
            if key not in names:
                raise TypeError("%s has no input named %r (inputs: %s)" % (
                    self._describe(), key, names))
            if names.count(key) > 1:
                raise TypeError("%s has %d inputs named %r; pass their values by position"
                                % (self._describe(), names.count(key), key))
            pos = names.index(key)
            if values[pos] is not NO_DEFAULT:
                raise TypeError("%s got two values for input %r" % (self._describe(), key))
            values[pos] = value
        missing = []
        for pos, spec in enumerate(self.input_specs):
            if values[pos] is NO_DEFAULT:
                if spec.has_default:
                    values[pos] = spec.value
                else:
                    missing.append(spec.name or "input %d" % pos)
        if missing:
            raise TypeError("%s is missing values for %s" % (self._describe(), missing))
        return values

    def copy(self, share_memory: bool = False, swap: dict | None = None,
             delete_updates: bool = False, name: str | None = None):
        """A new Function computing the same thing.

        ``share_memory=False`` (the default) gives the copy its own shared
        variables, holding copies of the current values, so its updates leave
        this function's shared variables alone; ``True`` shares them.
        ``swap`` maps shared variables of this function to other shared
        variables (of the same type) that the copy uses instead.
        ``delete_updates=True`` leaves the updates out of the copy.
        """
        from nbgraph.core.graph import clone_replace
        from nbgraph.linkers.function import function

        options = dict(self.build_options)
        if not options:
            raise TypeError("this Function was not made by function(); it cannot be copied")
        swap = self._copy_swap(swap, share_memory)
        outputs, single = options["outputs"], options["single"]
        updates = [] if delete_updates else options["updates"]
        exprs = list(outputs) + [e for _, e in updates]
        if swap and exprs:
            exprs = clone_replace(exprs, list(swap.items()))
        new_outputs = exprs[:len(outputs)]
        new_updates = [(swap.get(t, t), e)
                       for (t, _), e in zip(updates, exprs[len(outputs):], strict=True)]
        kwargs = dict(options["kwargs"])
        if delete_updates:  # the copy keeps the signature, even of inputs now unused
            kwargs["no_default_updates"] = True
            kwargs["on_unused_input"] = "ignore"
        if name is not None:
            kwargs["name"] = name
        return function(list(self.input_specs), new_outputs[0] if single else new_outputs,
                        updates=new_updates, **kwargs)

    def _copy_swap(self, swap: dict | None, share_memory: bool) -> dict:
        """The shared-variable substitutions of :meth:`copy`: ``swap`` checked, plus
        (without ``share_memory``) a fresh copy of every other shared variable,
        whose default updates follow the substitution."""
        from nbgraph.core.graph import clone_replace

        swap = dict(swap or {})
        for old, new in swap.items():
            if old not in self.shared_inputs:
                raise ValueError("swap: %r is not a shared variable of this function" % (old,))
            if new.type != old.type:
                raise TypeError("swap: %r has type %r, %r has type %r; they must be equal" % (
                    old, old.type, new, new.type))
        if share_memory:
            return swap
        for var in self.shared_inputs:
            if var not in swap:
                swap[var] = _own_copy(var)
        for old, new in swap.items():
            update = getattr(old, "default_update", None)
            if update is not None and new is not old:
                new.default_update = clone_replace(update, list(swap.items()))
        return swap

    def __reduce__(self):
        options = self.build_options
        if not options:
            raise TypeError("this Function was not made by function(); it cannot be pickled")
        outputs = options["outputs"][0] if options["single"] else list(options["outputs"])
        return (_rebuild_function,
                (list(self.input_specs), outputs, list(options["updates"]),
                 dict(options["kwargs"])))


def _own_copy(var):
    """A clone of the shared variable ``var`` holding a copy of its current value."""
    new = var.clone()
    new.container = [var.get_value()]
    return new


def _rebuild_function(inputs, outputs, updates, kwargs):
    """Unpickling: compile again (C modules come back from the disk cache)."""
    from nbgraph.linkers.function import function

    return function(inputs, outputs, updates=updates, **kwargs)
