"""``Variable.eval``: compile once, then answer from a cache.

Each variable remembers, per (input keys, linker), the Function compiled for
it.  A global, bounded cache keyed by the graph's *structure* lets
structurally equal graphs (the same expression typed again in another cell)
share one compiled Function.  Any in-place graph edit bumps
``nbgraph.core.graph.graph_version()``; the next eval then recomputes the
structural key and recompiles only if the graph really changed.

Threads may evaluate at once: the caches are read and changed under one lock
(compilation happens outside it), and the compiled Functions are themselves
safe to call from several threads (see :mod:`nbgraph.linkers.concurrency`).
"""

import threading
from collections import OrderedDict

from nbgraph.core.graph import Constant, Variable, graph_inputs, graph_version, toposort
from nbgraph.linkers import function_cache
from nbgraph.linkers.function import function, resolve_linker

__all__ = ["evaluate", "structural_key", "clear_cache", "cache_stats", "MAX_ENTRIES"]

MAX_ENTRIES = 256
_PER_VARIABLE = 8
_shared_functions = OrderedDict()
_stats = {"hits": 0, "compiles": 0, "shared_hits": 0}
_lock = threading.Lock()


def cache_stats():
    """Counters: fast hits, compilations, and reuses of a structurally equal graph."""
    return dict(_stats, entries=len(_shared_functions))


def clear_cache():
    """Forget every compiled function shared between graphs."""
    with _lock:
        _shared_functions.clear()


def structural_key(output, inputs):
    """A hashable description of the graph computing ``output`` from ``inputs``.

    Equal keys mean the graphs compute the same thing from inputs of the
    same types given in the same order.
    """
    refs = {}
    for i, var in enumerate(inputs):
        refs[var] = ("in", i, var.type)
    parts = []
    for n, node in enumerate(toposort([output])):
        ins = []
        for var in node.inputs:
            ref = refs.get(var)
            if ref is None:
                if isinstance(var, Constant):
                    ref = ("const", var.signature())
                else:
                    ref = ("root", var)
                refs[var] = ref
            ins.append(ref)
        parts.append((node.op, tuple(ins), tuple(o.type for o in node.outputs)))
        for j, out in enumerate(node.outputs):
            refs[out] = ("node", n, j)
    if output not in refs:
        refs[output] = ("const", output.signature()) if isinstance(output, Constant) \
            else ("root", output)
    return (tuple(parts), refs[output])


class _Entry:
    __slots__ = ("version", "function", "skey")

    def __init__(self, version, fn, skey):
        self.version = version
        self.function = fn
        self.skey = skey


def _resolve_keys(variable, keys):
    resolved = []
    by_name = None
    for key in keys:
        if isinstance(key, Variable):
            resolved.append(key)
            continue
        if not isinstance(key, str):
            raise TypeError("eval: keys must be Variables or their names, got %r" % (key,))
        if by_name is None:
            by_name = {}
            for var in graph_inputs([variable]):
                if var.name is not None and not isinstance(var, Constant):
                    by_name.setdefault(var.name, []).append(var)
        found = by_name.get(key, [])
        if not found:
            raise KeyError("eval: no input named %r in the graph of %r (inputs: %s)" % (
                key, variable, sorted(by_name) or "none"))
        if len(found) > 1:
            raise ValueError("eval: the name %r is ambiguous: %d inputs carry it; use the "
                             "Variables as keys" % (key, len(found)))
        resolved.append(found[0])
    return resolved


def evaluate(variable, inputs_to_values=None, linker=None):
    """The value of ``variable`` given ``inputs_to_values`` (Variables or names -> values)."""
    values = {} if inputs_to_values is None else inputs_to_values
    if not isinstance(values, dict):
        raise TypeError("eval expects a dict mapping input Variables (or names) to values, "
                        "got %s" % type(values).__name__)
    keys = tuple(values)
    cache_key = (keys, linker)
    per_var = variable.__dict__.get("_eval_cache")
    if per_var is None:
        with _lock:
            per_var = variable.__dict__.setdefault("_eval_cache", OrderedDict())
    entry = per_var.get(cache_key)
    version = graph_version()
    if entry is not None and entry.version == version:
        _stats["hits"] += 1
        return entry.function(*values.values())
    inputs = _resolve_keys(variable, keys)
    # (a linker object, e.g. DaskLinker(chunks=...), keys by its options too)
    skey = (structural_key(variable, inputs),
            linker if getattr(linker, "links_functions", False) else resolve_linker(linker))
    if entry is not None and entry.skey == skey:
        entry.version = version
        _stats["hits"] += 1
        return entry.function(*values.values())
    with _lock:
        fn = _shared_functions.get(skey)
        if fn is not None:
            _shared_functions.move_to_end(skey)
            _stats["shared_hits"] += 1
    if fn is None:
        with function_cache.skipped():  # (eval's many small graphs: not kept on disk)
            fn = function(inputs, variable, linker=linker)  # outside the lock: may take long
        with _lock:
            _stats["compiles"] += 1
            fn = _shared_functions.setdefault(skey, fn)  # another thread's, if it won
            while _shared_functions and len(_shared_functions) > MAX_ENTRIES:
                _shared_functions.popitem(last=False)  # even if it shrank
    with _lock:
        per_var[cache_key] = _Entry(version, fn, skey)
        if len(per_var) > _PER_VARIABLE:
            per_var.popitem(last=False)
    return fn(*values.values())
