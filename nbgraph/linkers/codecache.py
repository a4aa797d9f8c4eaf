"""Code objects of generated Python, compiled once per text.

The linkers generate small Python functions (a Program's run, a kernel's
call, a Function's ``__call__``) whose text depends only on the graph's
structure; ``compile()`` of that text costs more than everything else of
linking a small graph that is already in the module cache.  Structurally
equal graphs (a notebook cell run again, a constant changed) reuse the code
object; each use still runs it in a fresh namespace.

A later process reuses them too: :func:`recording` lists the texts a block
compiled, the function cache (:mod:`nbgraph.linkers.function_cache`) stores
their code objects with its entry, and :func:`preload` gives them back to the
process that loads the entry, so linking a graph from the disk compiles no
Python.
"""

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from types import CodeType

__all__ = ["compile_source", "recording", "compiled", "preload", "LIMIT"]

#: Code objects kept (least recently used first out).
LIMIT = 512

_codes: "OrderedDict[tuple[str, str], CodeType]" = OrderedDict()
_lock = threading.Lock()
_recording = threading.local()


def compile_source(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, memoised."""
    key = (source, filename)
    keys = getattr(_recording, "keys", None)
    if keys is not None:
        keys.append(key)
    with _lock:
        code = _codes.get(key)
        if code is not None:
            _codes.move_to_end(key)
            return code
    code = compile(source, filename, "exec")
    _keep(key, code)
    return code


def _keep(key: tuple[str, str], code: CodeType) -> None:
    with _lock:
        _codes[key] = code
        while len(_codes) > LIMIT:
            _codes.popitem(last=False)


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    """The ``(source, filename)`` of every :func:`compile_source` call this thread
    makes in the block (memoised ones too), in a list filled as they come."""
    outer = getattr(_recording, "keys", None)
    keys: list[tuple[str, str]] = []
    _recording.keys = keys
    try:
        yield keys
    finally:
        _recording.keys = outer
        if outer is not None:
            outer.extend(keys)


def compiled(keys: Iterable[tuple[str, str]]) -> list[tuple[str, str, CodeType]]:
    """``(source, filename, code)`` of those of ``keys`` still memoised, once each."""
    out = []
    seen = set()
    with _lock:
        for key in keys:
            code = _codes.get(key)
            if code is not None and key not in seen:
                seen.add(key)
                out.append((key[0], key[1], code))
    return out


def preload(items: Iterable[tuple[str, str, CodeType]]) -> None:
    """Memoise code objects compiled elsewhere: ``compile_source(source, filename)``
    then returns ``code`` (one already memoised is kept)."""
    for source, filename, code in items:
        key = (source, filename)
        with _lock:
            if key in _codes:
                continue
        _keep(key, code)
