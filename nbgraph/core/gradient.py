"""Reverse-mode differentiation over any graph whose Types support it.

:func:`grad` walks the Apply nodes between the ``wrt`` variables and the
cost in reverse topological order, asking each Op's ``grad`` for the
gradients of its inputs.  The core knows nothing about tensors: the cost's
Type makes the seed (``grad_ones_like``), absent output gradients are made by
``grad_zeros_like``, several contributions to one variable are added by
``grad_sum``, and ``grad_is_zero`` recognises a zero gradient (so that zeros
are neither added nor propagated).  The tensor layer implements those hooks.

What an Op's ``grad`` may return is described in
:mod:`nbgraph.core.gradient_types` (a Variable, a disconnected marker or an
undefined-gradient marker).  None is accepted from Ops outside nbgraph and
means a zero gradient; nbgraph's own Ops never return it.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

from nbgraph.core.gradient_types import (
    DisconnectedGradient, DisconnectedType, NullGradient, NullType, grad_not_implemented,
    grad_undefined, is_disconnected, null_reason,
)
from nbgraph.core.graph import Apply, Variable, clone_replace, graph_inputs, toposort
from nbgraph.core.scope import label_gradient  # display labels: grad(cost, W0)
from nbgraph.core.type import MethodNotDefined

__all__ = ["grad", "subgraph_grad", "Lop", "Rop", "DisconnectedInputError",
           "NullGradientError", "DisconnectedType", "NullType", "DisconnectedGradient",
           "NullGradient", "grad_undefined", "grad_not_implemented"]


class DisconnectedInputError(ValueError):
    """grad was asked for a variable the cost does not depend on."""


class NullGradientError(TypeError):
    """An Op declared the gradient undefined on the path to a requested input."""


Disconnected = Literal["raise", "warn", "ignore"]


@overload
def grad(cost: Variable | None, wrt: Variable,
         consider_constant: Iterable[Variable] | None = None,
         disconnected_inputs: Disconnected = "raise",
         known_grads: Mapping[Variable, Any] | None = None) -> Variable: ...


# (a tuple gives a tuple, any other sequence a list: the overlap is meant)
@overload
def grad(cost: Variable | None, wrt: tuple[Variable, ...],  # type: ignore[overload-overlap]
         consider_constant: Iterable[Variable] | None = None,
         disconnected_inputs: Disconnected = "raise",
         known_grads: Mapping[Variable, Any] | None = None) -> tuple[Variable, ...]: ...


@overload
def grad(cost: Variable | None, wrt: Sequence[Variable],
         consider_constant: Iterable[Variable] | None = None,
         disconnected_inputs: Disconnected = "raise",
         known_grads: Mapping[Variable, Any] | None = None) -> list[Variable]: ...


def grad(cost: Variable | None, wrt: Variable | Sequence[Variable],
         consider_constant: Iterable[Variable] | None = None,
         disconnected_inputs: Disconnected = "raise",
         known_grads: Mapping[Variable, Any] | None = None) -> Any:
    """Symbolic gradient of the scalar ``cost`` with respect to ``wrt``.

    ``wrt`` is a Variable or a list/tuple of them; the result has the same
    structure.  Variables in ``consider_constant`` are treated as constants
    (no gradient flows through them).  ``disconnected_inputs`` says what to do
    when the cost does not depend on a ``wrt`` variable: "raise" (a
    DisconnectedInputError naming it), "warn" or "ignore" (zeros either way).
    A ``wrt`` the cost depends on only through zero gradients (comparisons,
    rounding) gets zeros, no error; one it reaches only through an Op's
    DisconnectedGradient (a shape or index argument) counts as disconnected;
    one reached through a NullGradient raises NullGradientError.

    Integer ``wrt`` variables are differentiated as if they were real (as in
    Theano): ``grad((i * 2.5).sum(), i)`` is 2.5 everywhere, in the float
    dtype the computation was in; an Op whose outputs are all integers passes
    zeros back (through ``x > 0`` or ``cast(x, "int32")`` the gradient is zero).

    ``known_grads`` maps variables to the gradient of the cost with respect
    to them (Variables, or values their Type accepts): backpropagation starts
    from those too, and a known gradient is final (what the cost would send
    back through that variable is not added).  ``cost`` may then be None: the
    result is the vector-Jacobian product of the known gradients (see
    :func:`Lop`).
    """
    return label_gradient(_backprop(cost, wrt, consider_constant, disconnected_inputs,
                                    _known_gradients(known_grads), final=True), cost, wrt)


def subgraph_grad(wrt: Iterable[Variable], end: Iterable[Variable],
                  start: Mapping[Variable, Any] | None = None, cost: Variable | None = None,
                  details: bool = False) -> tuple[Any, ...]:
    """Gradients of a part of a graph, for backpropagating it piece by piece.

    Backpropagates from ``cost`` and/or from ``start`` (a dict of known
    gradients, as ``known_grads`` of :func:`grad`) down to the variables
    ``end`` and stops there (they are treated as constants).  Returns
    ``(wrt_grads, end_grads)``: the gradients with respect to ``wrt`` and to
    ``end``; passing ``dict(zip(end, end_grads))`` as the next call's
    ``start`` continues into the graph below ``end``.  Disconnected variables
    get zeros.  With ``details=True`` it also returns the two parts summed
    into those results: the gradients from ``start`` and those from ``cost``
    (lists over ``wrt + end``, None for a part not asked for).
    """
    wrt, end = list(wrt), list(end)
    if start is None and cost is None:
        raise TypeError("subgraph_grad: give a cost, start gradients, or both")
    params = list(dict.fromkeys(wrt + end))
    from_start: list[Variable] | None = None
    from_cost: list[Variable] | None = None
    if start is not None:
        from_start = grad(None, params, known_grads=start, consider_constant=end,
                          disconnected_inputs="ignore")
    if cost is not None:
        from_cost = grad(cost, params, consider_constant=end, disconnected_inputs="ignore")
    parts = [p for p in (from_start, from_cost) if p is not None]
    totals = {p: (gs[0] if len(gs) == 1 else p.type.grad_sum(list(gs)))
              for p, gs in zip(params, zip(*parts, strict=True), strict=True)}
    result = ([totals[w] for w in wrt], [totals[e] for e in end])
    return (*result, from_start, from_cost) if details else result


# -- grad in named steps ---------------------------------------------------------------


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: backpropagation makes objects that all
    stay alive, and the collector's passes over a growing heap of them cost more
    than the graph itself on graphs of 10^5 nodes (40% at 20,000 nodes)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _backprop(cost: Variable | None, wrt: Variable | Sequence[Variable],
              consider_constant: Iterable[Variable] | None, disconnected_inputs: str,
              known: dict[Variable, Variable], final: bool) -> Any:
    """grad's traversal; ``final``: a known gradient is not added to (grad's rule),
    else it is one more contribution (Lop's rule: an output may feed another)."""
    with _collector_paused():
        return _backprop_steps(cost, wrt, consider_constant, disconnected_inputs, known, final)


def _backprop_steps(cost: Variable | None, wrt: Variable | Sequence[Variable],
                    consider_constant: Iterable[Variable] | None, disconnected_inputs: str,
                    known: dict[Variable, Variable], final: bool) -> Any:
    """The steps of :func:`_backprop`: check, find what is connected, backpropagate,
    assemble the results."""
    wrt_list = _check_arguments(cost, wrt, disconnected_inputs, known)
    roots: list[Variable] = ([cost] if cost is not None else []) + list(known)
    order = toposort(roots)
    blocked = set(consider_constant or ())
    connected = _connected_variables(order, wrt_list, blocked)
    grads = _Gradients(known, final, blocked)
    if cost is not None and cost not in known:
        grads.add(cost, cost.type.grad_ones_like(cost))
    _backpropagate(reversed(order), connected, grads)
    shown: object = cost if cost is not None else list(known)
    results = [_result(w, grads, shown, disconnected_inputs) for w in wrt_list]
    if isinstance(wrt, Variable):
        return results[0]
    return tuple(results) if isinstance(wrt, tuple) else results


def _check_arguments(cost: object, wrt: Variable | Sequence[Variable],
                     disconnected_inputs: str, known: Mapping[Variable, Variable],
                     ) -> list[Variable]:
    """``wrt`` as a list, after refusing malformed arguments with a clear error."""
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError("disconnected_inputs must be 'raise', 'warn' or 'ignore', got %r"
                         % (disconnected_inputs,))
    if cost is None and not known:
        raise TypeError("grad: cost is None, so known_grads must give at least one gradient")
    if cost is not None and not isinstance(cost, Variable):
        raise TypeError("grad: cost must be a Variable, got %s %r" % (
            type(cost).__name__, cost))
    if not isinstance(wrt, (Variable, list, tuple)):
        raise TypeError("grad: wrt must be a Variable or a list/tuple of Variables, got %s %r"
                        % (type(wrt).__name__, wrt))
    wrt_list: list[Any] = [wrt] if isinstance(wrt, Variable) else list(wrt)
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError("grad: wrt[%d] must be a Variable, got %s %r" % (
                i, type(w).__name__, w))
    return wrt_list


def _connected_variables(order: Iterable[Apply], wrt_list: Iterable[Variable],
                         blocked: set[Variable]) -> set[Variable]:
    """The variables on a path from a ``wrt`` variable that goes through no
    ``blocked`` one (a blocked ``wrt`` starts a path): the only ones whose
    gradients are worth computing."""
    connected = set(wrt_list)
    for node in order:
        if any(inp in connected for inp in node.inputs):
            connected.update(out for out in node.outputs if out not in blocked)
    return connected


def _backpropagate(nodes: Iterable[Apply], connected: set[Variable],
                   grads: _Gradients) -> None:
    """The reverse-mode loop: each node, outputs before inputs, turns the gradients
    of its outputs into gradients of its inputs (the chain rule)."""
    for node in nodes:
        inputs = [inp for inp in node.inputs if inp in connected]
        if inputs and grads.reaches(node, inputs):
            grads.add_from(node, _op_grad(node, grads.output_grads(node)), connected)


def _op_grad(node: Apply, output_grads: list[Variable]) -> list[Any]:
    """``node.op.grad`` with its result checked: one entry per input."""
    try:
        input_grads = node.op.grad(list(node.inputs), output_grads)
    except MethodNotDefined as exc:
        raise NotImplementedError(
            "cannot differentiate through %s: the Op %s does not implement grad()"
            % (node, node.op)) from exc
    input_grads = list(input_grads) if input_grads is not None else []
    if len(input_grads) != len(node.inputs):
        raise ValueError("%s.grad returned %d gradients for %d inputs" % (
            node.op, len(input_grads), len(node.inputs)))
    return input_grads


class _Gradients:
    """What backpropagation knows about each variable's gradient.

    ``terms`` holds the contributions still to be added; ``zero`` the
    variables whose gradient is known to be zero (every contribution so far
    was zero); ``null`` maps a variable to the reason its gradient is
    undefined.  An undefined gradient wins over everything else, and a zero
    one is neither added nor propagated.  The gradients of ``blocked``
    variables (``consider_constant``) are kept but not propagated.
    """

    def __init__(self, known: Mapping[Variable, Variable], final: bool,
                 blocked: set[Variable]) -> None:
        self.terms: dict[Variable, list[Variable]] = {var: [g] for var, g in known.items()}
        self.final = final
        self.known = known
        self.blocked = blocked
        self.zero: set[Variable] = set()
        self.null: dict[Variable, str] = {}

    def add(self, var: Variable, g: Variable) -> None:
        """One more contribution ``g`` to the gradient of ``var``."""
        self.terms.setdefault(var, []).append(g)

    def total(self, var: Variable) -> Variable:
        """The gradient of ``var``: its contributions summed (zeros if none)."""
        terms = self.terms.get(var)
        if not terms:
            return _zeros_like(var)
        if len(terms) > 1:
            terms[:] = [var.type.grad_sum(terms)]
        return terms[0]

    def output_grads(self, node: Apply) -> list[Variable]:
        """The gradients of ``node``'s outputs, as its Op's grad takes them."""
        return [out.type.grad_zeros_like(out) if out in self.blocked else self.total(out)
                for out in node.outputs]

    def reaches(self, node: Apply, inputs: list[Variable]) -> bool:
        """Whether ``node`` needs its Op's grad; settles ``inputs`` here when it
        does not (an undefined gradient, or only zeros, flowing into it)."""
        outputs = [out for out in node.outputs if out not in self.blocked]
        null = next((self.null[out] for out in outputs if out in self.null), None)
        if null is not None:
            for inp in inputs:  # undefined above: undefined below, whatever else flows
                self.null.setdefault(inp, null)
            return False
        if any(out in self.terms for out in outputs):
            return True
        if any(out in self.zero for out in outputs):
            self.zero.update(inputs)
        return False

    def add_from(self, node: Apply, input_grads: list[Any], connected: set[Variable]) -> None:
        """Record what ``node``'s Op returned for each of its connected inputs.

        An Op whose outputs carry no gradient back (integers: see
        ``Type.grad_flows_back``) passes only zeros, whatever it returned,
        except where it said "disconnected" or "undefined".
        """
        flows = any(out.type.grad_flows_back() for out in node.outputs)
        for inp, g in zip(node.inputs, input_grads, strict=True):
            if inp not in connected or is_disconnected(g):
                continue
            why = null_reason(g)
            if why is not None:
                op = str(node.op)
                self.null[inp] = why if op in why else "%s says %s" % (op, why or "no gradient")
            elif g is None:  # accepted from Ops outside nbgraph: a zero gradient
                self.zero.add(inp)
            elif not isinstance(g, Variable):
                raise TypeError("%s.grad returned %r for input %r; expected a Variable" % (
                    node.op, g, inp))
            elif not flows or g.type.grad_is_zero(g):
                self.zero.add(inp)
            elif not (self.final and inp in self.known):  # a known gradient is final
                self.add(inp, g)


def _result(w: Variable, grads: _Gradients, shown: object,
            disconnected_inputs: str) -> Variable:
    """The gradient returned for ``w``, or the error or warning it deserves."""
    if w in grads.null:
        raise NullGradientError("the gradient with respect to %r is undefined: %s"
                                % (w, grads.null[w]))
    if w in grads.terms:
        return grads.total(w)
    if w in grads.zero:
        return _zeros_like(w)
    message = "grad: the cost %r does not depend on %r (it is disconnected)" % (shown, w)
    if disconnected_inputs == "raise":
        raise DisconnectedInputError(message + "; pass disconnected_inputs='ignore' "
                                     "to get zeros")
    if disconnected_inputs == "warn":
        warnings.warn(message, stacklevel=4)
    return _zeros_like(w)


def _zeros_like(var: Variable) -> Variable:
    """A zero gradient for ``var``, made by its Type."""
    zeros: Variable = var.type.grad_zeros_like(var)
    return zeros


def _known_gradients(known_grads: Mapping[Variable, Any] | None) -> dict[Variable, Variable]:
    """``{variable: gradient Variable}`` from ``known_grads`` (values become constants)."""
    known: dict[Variable, Variable] = {}
    for var, g in dict(known_grads or {}).items():
        if not isinstance(var, Variable):
            raise TypeError("known_grads: keys must be Variables, got %s %r" % (
                type(var).__name__, var))
        if g is None:
            continue
        if not isinstance(g, Variable):
            try:
                g = var.type.make_constant(var.type.filter(g))
            except (TypeError, ValueError) as exc:
                raise TypeError("known_grads: the gradient given for %r is not a value of its "
                                "type %r: %s" % (var, var.type, exc)) from exc
        known[var] = g
    return known


def _as_list(x: object, what: str) -> tuple[list[Any], bool]:
    if isinstance(x, Variable):
        return [x], True
    if isinstance(x, (list, tuple)):
        return list(x), False
    raise TypeError("%s must be a Variable or a list of Variables, got %r" % (what, x))


def Lop(f: Variable | Sequence[Variable], wrt: Variable | Sequence[Variable],
        eval_points: Any, consider_constant: Iterable[Variable] | None = None,
        disconnected_inputs: Disconnected = "raise") -> Any:
    """The vector-Jacobian product ``v^T (df/dwrt)`` (reverse mode, no scalar cost).

    ``f`` is a Variable or a list; ``eval_points`` gives one ``v`` per entry of
    ``f`` (same structure, each shaped like its ``f``).  The result has the
    structure of ``wrt``: for each ``x`` in ``wrt``, the sum over ``f`` of
    ``v`` times the Jacobian of ``f`` with respect to ``x``.
    """
    fs, _ = _as_list(f, "Lop: f")
    vs, _ = _as_list(eval_points, "Lop: eval_points")
    if len(fs) != len(vs):
        raise ValueError("Lop: %d outputs but %d eval_points" % (len(fs), len(vs)))
    known: dict[Variable, Variable] = {}
    for fi, vi in zip(fs, vs, strict=True):
        (vi,) = _known_gradients({fi: vi}).values()
        known[fi] = vi if fi not in known else fi.type.grad_sum([known[fi], vi])
    return _backprop(None, wrt, consider_constant, disconnected_inputs, known, final=False)


def Rop(f: Variable | Sequence[Variable], wrt: Variable | Sequence[Variable],
        eval_points: Any, disconnected_outputs: Literal["raise", "ignore"] = "raise") -> Any:
    """The Jacobian-vector product ``(df/dwrt) v`` (forward mode).

    ``wrt`` is a Variable or a list, ``eval_points`` one ``v`` per entry of it
    (each shaped like its ``wrt``); the result has the structure of ``f``: for
    each output, the sum over ``wrt`` of its Jacobian times ``v``.

    It is computed by transposing reverse mode twice, so every Op with a
    ``grad`` supports it: with ``u`` a stand-in shaped like ``f``, ``g(u) =
    Lop(f, wrt, u)`` is linear in ``u`` and ``Lop(g, u, v) = J v``.  The
    result does not depend on ``u``'s value; where it still reads ``u``'s
    shape, ``u`` is replaced by zeros shaped like ``f``.
    ``disconnected_outputs="raise"`` refuses an ``f`` that depends on no
    ``wrt`` variable ("ignore" gives zeros).
    """
    fs, single = _as_list(f, "Rop: f")
    xs, vs = _rop_points(wrt, eval_points)
    stand_ins = [fi.type() for fi in fs]
    for u, fi in zip(stand_ins, fs, strict=True):
        u.name = "u_%s" % fi.name if fi.name else None
    gs = Lop(fs, xs, stand_ins, disconnected_inputs="ignore")
    pairs = [(g, v) for g, v in zip(gs, vs, strict=True) if _depends_on(g, stand_ins)]
    if not pairs:
        if disconnected_outputs == "raise":
            raise DisconnectedInputError("Rop: %r depends on none of %r" % (fs, xs))
        results = [fi.type.grad_zeros_like(fi) for fi in fs]
    else:
        results = Lop([g for g, _ in pairs], stand_ins, [v for _, v in pairs],
                      disconnected_inputs="ignore")
        replacements = [(u, fi.type.grad_zeros_like(fi))
                        for u, fi in zip(stand_ins, fs, strict=True)]
        results = clone_replace(results, replacements)
    return results[0] if single else results


def _rop_points(wrt: object, eval_points: object) -> tuple[list[Any], list[Any]]:
    """``wrt`` and ``eval_points`` as lists of one length, each point shaped like its ``wrt``."""
    xs, _ = _as_list(wrt, "Rop: wrt")
    vs, _ = _as_list(eval_points, "Rop: eval_points")
    if len(xs) != len(vs):
        raise ValueError("Rop: %d wrt variables but %d eval_points" % (len(xs), len(vs)))
    for x, v in zip(xs, vs, strict=True):
        if isinstance(v, Variable) and getattr(v.type, "ndim", None) != getattr(
                x.type, "ndim", None):
            raise TypeError("Rop: eval point %r (%r) must be shaped like %r (%r)" % (
                v, v.type, x, x.type))
    return xs, vs


def _depends_on(var: Variable, roots: Iterable[Variable]) -> bool:
    ins = set(graph_inputs([var]))
    return any(r in ins for r in roots)
