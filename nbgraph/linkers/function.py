"""function(): compile a graph into a callable, and the Function it returns.

>>> import nbgraph.tensor as nt
>>> x, y = nt.dscalar("x"), nt.dscalar("y")
>>> f = function([x, y], x + y)
>>> f(16.3, 12.1)
array(28.4)
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbgraph.config import config
from nbgraph.core import progress
from nbgraph.core.fgraph import FunctionGraph, MissingInputError, path_to
from nbgraph.core.graph import Constant, Variable, ancestors, clone_replace, graph_inputs
from nbgraph.linkers import codecache, function_cache
from nbgraph.linkers.compiled import Function
from nbgraph.linkers.io import unpack_inputs, unpack_outputs

if TYPE_CHECKING:
    from nbgraph.core.rewriting import GraphRewriter
    from nbgraph.linkers.dask.function import DaskFunction, DaskLinker
    from nbgraph.linkers.io import In, Out
    from nbgraph.linkers.mode import Mode

#: Pairs ``(variable, replacement)``, as a dict or a sequence (updates, givens).
Pairs = Mapping[Variable, Any] | Iterable[tuple[Variable, Any]]

__all__ = ["function", "Function", "UnusedInputError", "resolve_linker", "LINKERS"]

LINKERS = ("py", "c", "cvm", "debug", "dask")


class UnusedInputError(ValueError):
    """An input of function() is not needed by any output or update."""


def resolve_linker(linker):
    """The linker name to use for ``linker`` (None/"auto": the configured default;
    a linker object such as :class:`nbgraph.linkers.dask.DaskLinker`: its name)."""
    if getattr(linker, "links_functions", False):
        return linker.name
    name = linker or config.linker
    if name == "auto":
        return _default_linker()
    if name not in LINKERS:
        raise ValueError("unknown linker %r; choose one of %s" % (name, ", ".join(LINKERS)))
    if name in ("c", "cvm"):  # the compiler probe runs during the rewrites
        from nbgraph.linkers import c as c_backend

        c_backend.prepare(runtime=False)
    return name


def _default_linker():
    try:
        from nbgraph.linkers import c as c_backend
    except ImportError:
        return "py"
    return c_backend.default_linker()


def _shared_type():
    from nbgraph.tensor.variable import SharedVariable

    return SharedVariable


def _check_inputs(inputs):
    SharedVariable = _shared_type()
    seen = set()
    for i, var in enumerate(inputs):
        if not isinstance(var, Variable):
            raise TypeError("input %d of function() must be a Variable, got %s %r" % (
                i, type(var).__name__, var))
        if isinstance(var, Constant):
            continue  # refused by _check_constants, after missing inputs are reported
        if isinstance(var, SharedVariable):
            raise TypeError("input %d of function(), %r, is a shared variable: functions read "
                            "it implicitly; do not list it as an input" % (i, var))
        if var.owner is not None:
            raise TypeError("input %d of function(), %r, is computed by %s; inputs must be "
                            "root variables (use givens to substitute an intermediate)" % (
                                i, var, var.owner.op))
        if var in seen:
            raise ValueError("input %d of function(), %r, is listed twice" % (i, var))
        seen.add(var)


def _check_constants(inputs):
    for i, var in enumerate(inputs):
        if isinstance(var, Constant):
            raise TypeError("input %d of function(), %r, is a Constant: its value is fixed, "
                            "so it cannot be an input" % (i, var))


def _normalize_updates(updates):
    SharedVariable = _shared_type()
    pairs = list(updates.items()) if isinstance(updates, dict) else list(updates or ())
    out = []
    for target, expr in pairs:
        if not isinstance(target, SharedVariable):
            raise TypeError("updates must target shared variables; %r is not one" % (target,))
        if not isinstance(expr, Variable):
            from nbgraph.tensor.variable import as_tensor_variable

            expr = as_tensor_variable(expr)
        try:
            expr = target.type.filter_variable(expr)
        except TypeError as exc:
            raise TypeError("the update of %r has type %r, which cannot be stored in %r of "
                            "type %r: %s" % (target, expr.type, target, target.type, exc)) \
                from exc
        out.append((target, expr))
    targets = [t for t, _ in out]
    if len(set(targets)) != len(targets):
        raise ValueError("a shared variable is updated twice: %r" % (targets,))
    return out


def function(inputs: Sequence[Variable | In],
             outputs: Variable | Out | Sequence[Variable | Out] | None = None,
             updates: Pairs | None = None, givens: Pairs | None = None,
             linker: str | DaskLinker | None = None,
             rewrite: str | GraphRewriter | None = "fast", name: str | None = None,
             on_unused_input: str = "raise", profile: bool = False, trust_input: bool = False,
             no_default_updates: bool | Sequence[Variable] = False,
             mode: str | Mode | None = None, allow_input_downcast: bool | None = None,
             accept_inplace: bool = False) -> Function | DaskFunction:
    """Compile ``outputs`` as a function of ``inputs``.

    A single output Variable gives a function returning one array; a list
    gives a list.  ``updates`` (pairs or dict: shared variable -> new value)
    are written after each call; ``givens`` substitutes variables before
    compiling.  ``rewrite="fast"`` runs the rewrite pipeline, including the
    ``stabilize`` stage (:mod:`nbgraph.tensor.stabilize`: ``log(1 - sigmoid(x))``
    becomes ``-softplus(x)`` and the like, changing results only toward the
    exact value); ``rewrite="exact"`` runs it without that stage (NumPy's
    results, overflow included); None runs none (or pass a graph rewriter to
    run instead).  ``linker`` is "py", "c", "cvm" or
    "debug" (default: config.linker).
    A shared variable the graph reads whose ``default_update`` is set (a random
    state) is updated with it unless ``updates`` names it or
    ``no_default_updates`` is True or a list holding it.

    Theano's options: inputs may be :class:`~nbgraph.linkers.io.In` (default
    values, keyword names) and outputs :class:`~nbgraph.linkers.io.Out`;
    ``mode`` (a :class:`~nbgraph.linkers.mode.Mode` or a name such as
    "FAST_RUN", "FAST_COMPILE", "DebugMode") chooses the linker and rewrites
    when ``linker``/``rewrite`` are left at their defaults;
    ``allow_input_downcast=True`` lets arguments be cast to the inputs' dtypes
    even when precision is lost (float64 data into a float32 input);
    ``accept_inplace`` is accepted (nbgraph's graphs never hold user-made
    in-place Ops that could overwrite an argument).
    """
    if on_unused_input not in ("raise", "warn", "ignore"):
        raise ValueError("on_unused_input must be 'raise', 'warn' or 'ignore', got %r" % (
            on_unused_input,))
    if isinstance(inputs, Variable) or not isinstance(inputs, (list, tuple)):
        raise TypeError("function() needs a list of input Variables, got %r" % (inputs,))
    options = {"givens": givens, "linker": linker, "rewrite": rewrite, "name": name,
               "on_unused_input": on_unused_input, "trust_input": trust_input, "mode": mode,
               "allow_input_downcast": allow_input_downcast,
               "no_default_updates": no_default_updates}
    linker, rewrite = _apply_mode(mode, linker, rewrite)
    inputs, input_specs = unpack_inputs(inputs)
    _check_inputs(inputs)
    single, out_list = _output_list(unpack_outputs(outputs))
    explicit_updates = _normalize_updates(updates)
    update_pairs = explicit_updates + _default_updates(out_list, explicit_updates,
                                                       no_default_updates)
    computed = out_list + [expr for _, expr in update_pairs]
    if givens:
        pairs = list(givens.items()) if isinstance(givens, dict) else list(givens)
        computed = clone_replace(computed, pairs) if computed else []
    # a missing input is reported first, even when a Constant is listed too:
    # function([a], [a + b]) names b, function([a, b], [a + b]) then refuses a
    _check_missing(inputs, computed, [t for t, _ in update_pairs])
    _check_constants(inputs)
    _check_unused(inputs, computed, on_unused_input)
    shared_inputs = _shared_inputs(computed, update_pairs)
    linker_name = resolve_linker(linker)
    # a graph compiled before, in any process: its rewritten form from the disk
    key, found = function_cache.lookup(inputs + shared_inputs, computed, rewrite,
                                       linker_name, name)
    saved = entry = None
    if found is not None:
        fgraph, saved = found
    else:
        if linker_name in ("c", "cvm"):  # the runtime loads or builds during the rewrites
            from nbgraph.linkers import c as c_backend

            c_backend.prepare()
        fgraph = FunctionGraph(inputs + shared_inputs, computed, clone=True, name=name)
        start = time.process_time()
        with progress.task("rewriting %s" % (name or "the graph")):  # a line past ~1 s
            _rewrite(fgraph, rewrite, linker_name)
        if key is not None:
            entry = function_cache.Entry(key, fgraph, time.process_time() - start)
    if linker_name == "dask":
        from nbgraph.linkers.dask import make_function

        fn = make_function(fgraph, inputs, out_list, single, shared_inputs, update_pairs,
                           linker, name=name, input_specs=input_specs)
        fn.build_options = {"outputs": out_list, "single": single,
                            "updates": explicit_updates, "kwargs": options}
        return fn
    with progress.task("linking %s (%s)" % (name or "the function", linker_name)), \
            codecache.recording() as compiled:
        fn = Function(fgraph, inputs, out_list, single, shared_inputs, update_pairs,
                      linker_name, name=name, profile=profile, trust_input=trust_input,
                      allow_input_downcast=allow_input_downcast, input_specs=input_specs,
                      saved=saved)
    if entry is not None:
        entry.store(fn.program, compiled)
    elif found is not None:
        function_cache.amend(key, compiled)
    fn.build_options = {"outputs": out_list, "single": single, "updates": explicit_updates,
                        "kwargs": options}
    return fn


def _apply_mode(mode, linker, rewrite):
    """``(linker, rewrite)`` after a Theano ``mode`` fills in what was left at its default."""
    if mode is not None:
        from nbgraph.linkers.mode import get_mode

        mode_obj = get_mode(mode)
        linker = linker if linker is not None else mode_obj.linker
        rewrite = mode_obj.rewrite if rewrite == "fast" else rewrite
    if rewrite not in ("fast", "exact", None) and not hasattr(rewrite, "rewrite"):
        raise ValueError("rewrite must be 'fast', 'exact', None or a graph rewriter, got %r"
                         % (rewrite,))
    return linker, rewrite


def _output_list(outputs):
    """``(single, outputs as a list of Variables)``; a non-Variable output is converted."""
    single = isinstance(outputs, Variable)
    out_list = [outputs] if single else list(outputs or [])
    for i, out in enumerate(out_list):
        if isinstance(out, Variable):
            continue
        from nbgraph.tensor.variable import as_tensor_variable

        try:
            out_list[i] = as_tensor_variable(out)
        except TypeError as exc:
            raise TypeError("output %d of function() must be a Variable, got %r" % (
                i, out)) from exc
    return single, out_list


def _shared_inputs(computed, update_pairs):
    """The shared variables the graph reads or updates, in a fixed order."""
    SharedVariable = _shared_type()
    found = []
    for var in graph_inputs(computed) + [t for t, _ in update_pairs]:
        if isinstance(var, SharedVariable) and var not in found:
            found.append(var)
    return found


def _rewrite(fgraph, rewrite, linker_name=None):
    """Run the rewrite pipeline ("fast", "exact": without ``stabilize``; without
    ``inplace`` for the Dask linker, whose blocks may be read by several tasks),
    a given graph rewriter, or nothing (None)."""
    if rewrite in ("fast", "exact"):
        from nbgraph.tensor.rewriting import rewrite_graph

        exclude = ("stabilize",) if rewrite == "exact" else ()
        if linker_name == "dask":
            exclude += ("inplace",)
        rewrite_graph(fgraph, exclude=exclude)
    elif rewrite is not None:
        rewrite.rewrite(fgraph)


def _default_updates(outputs, update_pairs, no_default_updates):
    """``(shared, default_update)`` pairs for the shared variables the graph reads."""
    if no_default_updates is True:
        return []
    if no_default_updates is False or no_default_updates is None:
        skip = set()
    elif isinstance(no_default_updates, (list, tuple, set)):
        skip = set(no_default_updates)
    else:
        raise TypeError("no_default_updates must be True, False or a list of shared "
                        "variables, got %r" % (no_default_updates,))
    SharedVariable = _shared_type()
    done = {t for t, _ in update_pairs} | skip
    found = []
    pending = list(outputs) + [e for _, e in update_pairs]
    while pending:
        new = []
        for var in graph_inputs(pending):
            update = getattr(var, "default_update", None)
            if isinstance(var, SharedVariable) and update is not None and var not in done:
                done.add(var)
                found.append((var, update))
                new.append(update)
        pending = new  # an update's graph may read further states
    return _normalize_updates(found) if found else []


def _check_missing(inputs, computed, update_targets):
    SharedVariable = _shared_type()
    allowed = set(inputs)
    for var in graph_inputs(computed):
        if var in allowed or isinstance(var, (Constant, SharedVariable)):
            continue
        raise MissingInputError(var, path_to(computed, var))


def _check_unused(inputs, computed, policy):
    if policy == "ignore":
        return
    used = set(ancestors(computed)) if computed else set()
    for i, var in enumerate(inputs):
        if var in used:
            continue
        message = ("input %d of function(), %r, is not used by any output; pass "
                   "on_unused_input='ignore' to allow it" % (i, var))
        if policy == "raise":
            raise UnusedInputError(message)
        warnings.warn(message, stacklevel=3)
