"""The generated Python calls of a Function, rendered from its call plan.

:class:`~nbgraph.linkers.call_plan.CallPlan` says what a call does; the
plain call (:meth:`Function._call`) interprets it.  This module renders the
same steps as straight-line Python for the common call (positional
arguments, no profile), so a call costs one Python frame:

- :func:`render_call`: every Function (cells, the program's ``run``);
- :func:`render_direct`: a trusted Function whose graph is one C kernel
  taking the arguments directly (no cells, no ``run``).

Each returns the functions and their source; ``Function.call_source`` shows
the source, as torch.fx keeps a GraphModule's ``code``.  When an argument is
refused, generated code hands the call to the interpreted path, which
reports the error, so messages are written once.
"""

from __future__ import annotations

import weakref
from typing import Any

from nbgraph.linkers.codecache import compile_source
from nbgraph.linkers.concurrency import contended_call

__all__ = ["MISSING", "slow_call", "render_call", "render_direct"]

#: A parameter left out of a generated ``__call__`` (its default value).
MISSING = object()


def slow_call(function, args: tuple, kwargs: dict) -> Any:
    """The generated ``__call__``'s way out: every case but plain positional calls."""
    return function._call(tuple(a for a in args if a is not MISSING), kwargs)


def render_call(function) -> tuple[Any, Any, str]:
    """``(fast, call, source)`` for ``function``'s plan: ``fast(*args)`` runs a
    positional call; ``call`` is the class's ``__call__``."""
    from numpy import ndarray  # here: ``import nbgraph`` does not import NumPy

    plan = function._plan
    # (a weak reference: the generated code must not keep the Function alive)
    names = {"RUN": function._run, "SELF": weakref.ref(function), "ndarray": ndarray}
    params = _params(plan.nargs)
    body = _argument_lines(plan, names, params)
    for k, (cell, container) in enumerate(plan.shared_cells):
        names["s%d" % k], names["S%d" % k] = cell, container
        body.append("s%d[0] = S%d[0]" % (k, k))
    # (a failing run's frame is left out of IPython's and pytest's tracebacks)
    body += ["try:", "    RUN()", "except BaseException:", "    __tracebackhide__ = True",
             "    raise"]
    body += _result_lines(plan, names)
    return _entry_points(function, names, body, params, "<nbgraph function call>")


def render_direct(function, direct, argmap: list[int], n_outputs: int) -> tuple[Any, Any, str]:
    """``(fast, call, source)`` calling the program's single kernel ``direct``
    with the arguments in ``argmap`` order (trusted calls only)."""
    plan = function._plan
    params = _params(plan.nargs)
    names = {"DIRECT": direct, "P": function.program}
    ret = "DIRECT(%s)" % ", ".join(params[k] for k in argmap)
    if not plan.single and n_outputs == 1:
        ret = "[%s]" % ret
    failed = []
    for i, cell in enumerate(plan.arg_cells):
        names["c%d" % i] = cell
        failed.append("c%d[0] = %s" % (i, params[i]))  # for the error's input listing
    body = ["try:", "    return " + ret, "except Exception as exc:",
            "    __tracebackhide__ = True"] + _indent(failed) + ["    P.reraise(exc, 0)"]
    return _entry_points(function, names, body, params, "<nbgraph direct call>")


def _params(n: int) -> list[str]:
    return ["_nbg_arg%d" % i for i in range(n)]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _argument_lines(plan, names: dict, params: list[str]) -> list[str]:
    """Step 1 of the plan: arguments into cells; a refused one goes to ``_call_held``."""
    body = []
    for i, cell in enumerate(plan.arg_cells):
        names["c%d" % i] = cell
        if plan.trust_input:
            body.append("c%d[0] = %s" % (i, params[i]))
            continue
        names["F%d" % i] = plan.filters[i]
        spec = getattr(plan.input_types[i], "filter_fast_path", lambda: None)()
        if spec is None:
            body.append("c%d[0] = F%d(%s)" % (i, i, params[i]))
            continue
        # the values the type's filter returns unchanged, accepted inline
        names["D%d" % i], ndim = spec
        body += ["if type(%s) is ndarray and %s.dtype is D%d and %s.ndim == %d:"
                 % (params[i], params[i], i, params[i], ndim),
                 "    c%d[0] = %s" % (i, params[i]),
                 "else:",
                 "    c%d[0] = F%d(%s)" % (i, i, params[i])]
    if plan.trust_input or not plan.arg_cells:
        return body
    return (["try:"] + _indent(body) + ["except (TypeError, ValueError):"] +
            ["    c%d[0] = None" % i for i in range(plan.nargs)] +
            ["    return SELF()._call_held((%s), None)" % "".join(p + ", " for p in params)])


def _result_lines(plan, names: dict) -> list[str]:
    """Step 4 of the plan: results, updates, cells emptied, return."""
    body, results = [], []
    for j, (cell, copy_needed) in enumerate(zip(plan.out_cells, plan.copy_outputs,
                                                strict=True)):
        names["o%d" % j] = cell
        body.append("r%d = o%d[0]" % (j, j))
        if copy_needed:
            body += ["if isinstance(r%d, ndarray):" % j, "    r%d = r%d.copy()" % (j, j)]
        results.append("r%d" % j)
    for k, (container, cell, copy_needed) in enumerate(plan.update_cells):
        names["U%d" % k], names["u%d" % k] = container, cell
        body.append("v = u%d[0]" % k)
        if copy_needed:
            body += ["if isinstance(v, ndarray):", "    v = v.copy()"]
        body.append("U%d[0] = v" % k)
    for k, cell in enumerate(plan.cleared_cells):
        names["z%d" % k] = cell
        body.append("z%d[0] = None" % k)
    body += ["c%d[0] = None" % i for i in range(plan.nargs)]
    body.append("return r0" if plan.single else "return [%s]" % ", ".join(results))
    return body


def _entry_points(function, names: dict, body: list[str], params: list[str],
                  filename: str) -> tuple[Any, Any, str]:
    """Compile ``body`` as ``fast(*params)`` and as the class's ``__call__``,
    both holding the Function's token (and shared-variable gate)."""
    _guard_names(function, names)
    body = _guarded(body, params, function._gate is not None)
    # The same body as the class's __call__: positional arguments bound
    # directly; anything else (keywords, a wrong count, profiling) goes to _call.
    names["MISSING"], names["SLOWCALL"] = MISSING, slow_call
    call_body = ["if %s:" % " or ".join(_call_guard(function, params)),
                 "    return SLOWCALL(_nbg_self, (%s) + _nbg_rest, _nbg_kw)"
                 % "".join(p + ", " for p in params)] + body
    # (parameter names no input's keyword can collide with)
    source = "def fast(%s):\n%s\n" % (", ".join(params), "\n".join(_indent(body)))
    source += "\ndef call(_nbg_self, %s*_nbg_rest, **_nbg_kw):\n%s\n" % (
        "".join(p + "=MISSING, " for p in params), "\n".join(_indent(call_body)))
    exec(compile_source(source, filename), names)
    return names["fast"], names["call"], source


def _guard_names(function, names: dict) -> None:
    """The names :func:`_guarded` code uses."""
    token = function._token
    names.update(TAKE=token.pop, GIVE=token.append, CONTENDED=contended_call)
    names.setdefault("SELF", weakref.ref(function))
    if function._gate is not None:
        names.update(GATE_IN=function._gate.enter, GATE_OUT=function._gate.leave)


def _guarded(body: list[str], params: list[str], gated: bool) -> list[str]:
    """``body`` wrapped so that it runs holding the token (a twin runs the call
    when the token is taken) and, with shared variables, their locks.

    Invariant every call path must keep (the C ``Kernel`` path excepted: it
    touches no cells): storage cells, a program's scratch and the shared
    containers are only read or written while the token (and gate) is held.
    """
    if gated:
        body = ["GATE_IN()", "try:"] + _indent(body) + ["finally:", "    GATE_OUT()"]
    return (["try:", "    TAKE()", "except IndexError:",
             "    return CONTENDED(SELF, (%s))" % "".join(p + ", " for p in params),
             "try:"] + _indent(body) + ["finally:", "    GIVE(True)"])


def _call_guard(function, params: list[str]) -> list[str]:
    """The conditions sending a generated ``__call__`` to :meth:`Function._call`
    (a profiled function always goes there; setting ``profile`` regenerates it)."""
    if function._profile is not None:
        return ["True"]
    return ["_nbg_rest", "_nbg_kw"] + (["%s is MISSING" % params[-1]] if params else [])
