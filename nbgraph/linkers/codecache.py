"""Code objects of generated Python, compiled once per text.

The linkers generate small Python functions (a Program's run, a kernel's
call, a Function's ``__call__``) whose text depends only on the graph's
structure; ``compile()`` of that text costs more than everything else of
linking a small graph that is already in the module cache.  Structurally
equal graphs (a notebook cell run again, a constant changed) reuse the code
object; each use still runs it in a fresh namespace.
"""

import threading
from collections import OrderedDict

__all__ = ["compile_source", "LIMIT"]

#: Code objects kept (least recently used first out).
LIMIT = 512

_codes = OrderedDict()
_lock = threading.Lock()


def compile_source(source, filename):
    """``compile(source, filename, "exec")``, memoised."""
    key = (source, filename)
    with _lock:
        code = _codes.get(key)
        if code is not None:
            _codes.move_to_end(key)
            return code
    code = compile(source, filename, "exec")
    with _lock:
        _codes[key] = code
        while len(_codes) > LIMIT:
            _codes.popitem(last=False)
    return code
