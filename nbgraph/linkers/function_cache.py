"""The function cache: a new process compiling a graph it compiled before skips the
rewrites and the C code generation.

:func:`nbgraph.function` with a C linker ("c", "cvm") keys the graph it is
given *before* rewriting: :func:`graph_key` digests every node's Op (its class
and ``__props__``), every Type, constant value, variable name and recorded
creation site (``tag``), the options that shape the rewritten graph (rewrite
mode, linker, name), ``config``, the Python and NumPy versions and the files
of nbgraph that the storing process had loaded.  The disk cache
(``config.cache_dir``) then holds, as ``function-<key>.rec``, the rewritten
graph (pickled; the inputs are referred to by position, so shared variables'
values are never stored), its replacement history and the key of its C module
(:meth:`nbgraph.linkers.c.linker.ModulePlan.hint`).  A later process with the
same key unpickles that graph instead of rewriting, and the C linker finds its
module by key instead of generating its source: the Function is the one the
rewrites would have made (same nodes, same creation sites in errors, same
updates and copies).

Entries are for the *next* processes: the storing process never uses its own
(a module-level switch it flips meanwhile, which no key sees, still takes
effect); they are written when it exits (:func:`flush`, or when 64 wait); a
graph whose rewrites took under :data:`STORE_MIN_SECONDS`, a structure this
process already compiled with other constants (a cell run again with a new
value: only the digest is paid) and ``Variable.eval``'s graphs
(:func:`skipped`) are not stored.

An entry is used only when every file it lists is unchanged (size and mtime)
and it unpickles into a graph over the caller's inputs with the order it was
saved with; anything else (a damaged or foreign file, an Op or a value the
digest cannot describe, such as an Op of a user's class or a Python function
in props) compiles as usual and, when possible, stores a new entry.  The file
is read only when it is a private regular file of this user, as the C modules
are (:class:`~nbgraph.linkers.c.cache.ModuleCache`).  ``python -m nbgraph
cache clear`` removes the entries with the modules.  Set :data:`ENABLED` to
False to turn the cache off.
"""

from __future__ import annotations

import atexit
import contextlib
import copyreg
import gc
import io
import marshal
import os
import pickle
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from nbgraph.config import config
from nbgraph.core.graph import io_toposort
from nbgraph.core.nodes import Constant, Variable
from nbgraph.core.props import PropsMixin

try:  # CPython's built-in SHA-256 (same digests): hashlib would load OpenSSL (~3-7 ms)
    from _sha2 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python < 3.12 or another implementation
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,no-redef]

__all__ = ["ENABLED", "FORMAT", "graph_key", "graph_keys", "lookup", "load", "flush", "Entry",
           "STATS"]

#: False: every function() rewrites and generates its C code again.
ENABLED = True

#: False: a process does not use the entries it stored itself (they are for the
#: next processes; meanwhile a module-level switch it flipped, which no key
#: sees, still takes effect); tests set True.
SAME_PROCESS = False

#: A graph whose rewrites took less CPU time than this is not stored.
STORE_MIN_SECONDS = 0.002

#: Changes when the entry's layout changes (older entries are then not read).
FORMAT = 3

_MAGIC = b"nbgraph-function-cache\n"

#: Counters for tests and benchmarks: ``hits``, ``misses``, ``stored``, ``refused``
#: (graphs the digest cannot describe), ``rejected`` (entries found but not used).
STATS = {"hits": 0, "misses": 0, "stored": 0, "refused": 0, "rejected": 0}

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


class Uncacheable(Exception):
    """The graph holds something the digest cannot describe exactly."""


_OURS: dict[type, bool] = {}


def _ours(cls: type) -> bool:
    found = _OURS.get(cls)
    if found is None:
        module = cls.__module__
        found = _OURS[cls] = module == "nbgraph" or module.startswith("nbgraph.")
    return found


class _Digest:
    """Text describing a graph exactly, built once per function() call."""

    def __init__(self, memo: dict[int, str] | None = None) -> None:
        self.parts: list[str] = []
        # Ops and Types already described in this graph (id -> text): the graph
        # holds them, so their ids stay theirs while the digest is built
        self.memo: dict[int, str] = {} if memo is None else memo

    def value(self, v: Any) -> None:
        parts = self.parts
        t = type(v)
        if t in _SCALARS:
            parts.append(repr(v))  # exact, and tells 1, 1.0, True and '1' apart
        elif t is tuple or t is list:
            if all(type(item) in _SCALARS for item in v):
                parts.append(repr(v))
                return
            parts.append("%s%d(" % (t.__name__, len(v)))
            for item in v:
                self.value(item)
            parts.append(")")
        elif t is dict or t is frozenset or t is set:
            items = sorted(v.items() if t is dict else ((x, None) for x in v), key=repr)
            parts.append("%s%d(" % (t.__name__, len(items)))
            for k, item in items:
                self.value(k)
                self.value(item)
            parts.append(")")
        elif isinstance(v, PropsMixin) and v.__props__ is not None and _ours(t):
            parts.append(self.props_text(v))
        else:
            self.numpy_value(v)

    def props_text(self, v: PropsMixin) -> str:
        found = self.memo.get(id(v))
        if found is not None:
            return found
        sub = _Digest(self.memo)
        t = type(v)
        sub.parts.append("%s.%s{" % (t.__module__, t.__qualname__))
        for item in v._props():
            sub.value(item)
        sub.parts.append("}")
        text = self.memo[id(v)] = " ".join(sub.parts)
        return text

    def numpy_value(self, v: Any) -> None:
        import numpy as np

        if isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                raise Uncacheable("an object array")
            data = np.ascontiguousarray(v)
            self.parts.append("array:%s:%r:%s" % (v.dtype.str, v.shape,
                                                  sha256(data.tobytes()).hexdigest()))
        elif isinstance(v, np.generic):
            self.parts.append("np:%s:%s" % (v.dtype.str, v.tobytes().hex()))
        elif isinstance(v, np.dtype):
            self.parts.append("dtype:%s" % v.str)
        else:
            raise Uncacheable("a value of type %s" % type(v).__qualname__)

    def variable(self, var: Variable, kind: str) -> None:
        cls = type(var)
        if not _ours(cls):
            raise Uncacheable("a Variable of class %s" % cls.__qualname__)
        self.parts.append("%s %s.%s" % (kind, cls.__module__, cls.__qualname__))
        self.value(var.type)
        self.value(var.name)
        self.value(var.tag.__dict__)


def graph_key(inputs, outputs, options: dict) -> str | None:
    """The cache key of the graph from ``inputs`` to ``outputs`` (not yet rewritten)
    compiled with ``options``, or None when the graph holds something the digest
    cannot describe."""
    keys = graph_keys(inputs, outputs, options)
    return None if keys is None else keys[0]


def graph_keys(inputs, outputs, options: dict) -> tuple[str, str] | None:
    """``(key, structure)``: :func:`graph_key`, and the same without the constants'
    values (the graph's structure), or None."""
    d = _Digest()
    values = _Digest(d.memo)
    index: dict[Variable, int] = {}
    try:
        d.parts += [_static_text(), repr(sorted(config.as_dict().items())),
                    repr(sorted(options.items())), _registry_text()]
        for i, var in enumerate(inputs):
            index[var] = len(index)
            d.variable(var, "in%d" % i)
        for node in io_toposort(inputs, outputs):
            op = node.op
            if not _ours(type(op)) or op.__props__ is None:
                raise Uncacheable("the Op %s" % (op,))
            d.value(op)
            ins = []
            for var in node.inputs:
                k = index.get(var)
                if k is None:
                    if not isinstance(var, Constant):
                        raise Uncacheable("a root that is not an input")
                    k = index[var] = len(index)
                    d.variable(var, "const")
                    values.value(var.data)
                ins.append(k)
            d.value(ins)
            for out in node.outputs:
                index[out] = len(index)
                d.variable(out, "out")
        outs = []
        for var in outputs:
            if var not in index:  # an output that is a constant
                index[var] = len(index)
                d.variable(var, "const")
                values.value(var.data)
            outs.append(index[var])
        d.value(outs)
    except Uncacheable:
        STATS["refused"] += 1
        return None
    h = sha256("\n".join(d.parts).encode())
    structure = h.hexdigest()[:40]
    h.update(("\n" + "\n".join(values.parts)).encode())
    return h.hexdigest()[:40], structure


_STATIC: list[str] = []


def _static_text() -> str:
    """The format, Python's and NumPy's versions and nbgraph's directory (the same
    for the whole process): two source trees sharing a cache directory (a
    checkout and a worktree) never use each other's entries, whose saved plans
    name modules generated by the other tree's code."""
    if not _STATIC:
        import numpy

        _STATIC.append(repr(("nbgraph function cache", FORMAT, sys.version, numpy.__version__,
                             _PACKAGE)))
    return _STATIC[0]


def _registry_text() -> str:
    """Raises Uncacheable when the rewrite registry holds a rewrite nbgraph did not
    register itself, or lost one (what a rewrite does is then not in the key)."""
    module = sys.modules.get("nbgraph.tensor.rewriting")
    if module is not None and module.rewrites.altered:
        raise Uncacheable("the rewrite registry was changed")
    return ""


# -- entries -------------------------------------------------------------------


def _input(i: int) -> Any:  # pragma: no cover - replaced by _Unpickler.find_class
    raise RuntimeError("an input reference outside the function cache")


def _dumps(obj: Any, inputs) -> bytes:
    """Pickle ``obj``, a rewritten graph, writing its ``inputs`` as positions (a
    shared variable's value is never stored).  Only Variable classes go through
    Python code (the dispatch table), not every object of the graph."""
    positions = {id(v): i for i, v in enumerate(inputs)}

    def reduce(var):
        i = positions.get(id(var))
        if i is not None:
            return _input, (i,)
        return var.__reduce_ex__(5)

    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=5)
    table = dict(copyreg.dispatch_table)
    for cls in {type(v) for v in inputs} | {type(v) for v in obj[0]}:
        table[cls] = reduce
    for node in obj[2]:
        for var in node.outputs:
            table.setdefault(type(var), reduce)
    pickler.dispatch_table = table
    pickler.dump(obj)
    return buf.getvalue()


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, inputs) -> None:
        super().__init__(file)
        self._inputs = inputs

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_input":
            return self._inputs.__getitem__
        return super().find_class(module, name)


class Entry:
    """One graph to store: the rewritten graph, pickled before it is linked."""

    def __init__(self, key: str, fgraph, seconds: float) -> None:
        self.key = key
        self.data: bytes | None = None
        if seconds < STORE_MIN_SECONDS:
            return  # rewriting again is about as cheap as reading the entry
        try:
            self.data = _dumps((fgraph.outputs, fgraph.history, fgraph.toposort()),
                               fgraph.inputs)
        except Exception:  # an Op or a value that does not pickle: nothing stored
            self.data = None

    def store(self, program, compiled: Iterable[tuple[str, str]] = ()) -> None:
        """Write the entry, with the C module's hint from the linked ``program`` and
        the code objects of the generated Python ``compiled`` (codecache keys) while
        linking it."""
        if self.data is None:
            return
        plan = getattr(program, "_plan", None)
        hint = None
        if plan is not None:
            order = {node: i for i, node in enumerate(program.fgraph.toposort())}
            hint = ([order[node] for node in plan.nodes], plan.hint())
        _queue(self.key, _loaded_files(), hint, self.data, _code_records((), compiled))


def _queue(key: str, files, hint, data: bytes, codes: tuple) -> None:
    cache = _cache()
    if cache is None or cache.ensure_directory() is None:
        return
    record = pickle.dumps((FORMAT, key, os.getpid(), files, hint, data, codes), protocol=5)
    _PENDING.append((cache.directory, _path(cache, key), _MAGIC + record))
    if not DEFER_WRITES or len(_PENDING) > _MAX_PENDING \
            or sum(len(p[2]) for p in _PENDING) > _MAX_PENDING_BYTES:
        flush()
    elif not _AT_EXIT:
        _AT_EXIT.append(atexit.register(flush))


#: Generated Python stored with an entry: at most this many bytes of code objects.
MAX_CODE_BYTES = 256 * 1024


def _code_records(known: tuple, keys: Iterable[tuple[str, str]]) -> tuple:
    """``known`` (``(source, filename, marshalled code)`` records) and those of the
    memoised code objects of ``keys`` not among them, within :data:`MAX_CODE_BYTES`."""
    from nbgraph.linkers import codecache

    have = {(source, filename) for source, filename, _ in known}
    out = list(known)
    size = sum(len(r[0]) + len(r[2]) for r in out)
    for source, filename, code in codecache.compiled(k for k in keys if k not in have):
        data = marshal.dumps(code)
        size += len(source) + len(data)
        if size > MAX_CODE_BYTES:
            break
        out.append((source, filename, data))
    return tuple(out)


def amend(key: str | None, compiled: Iterable[tuple[str, str]]) -> None:
    """After linking a graph loaded from entry ``key``: when the linking compiled
    generated Python the entry lacks (a miss links before its C module is built,
    so it cannot store the module's call code), write the entry again with it."""
    loaded = _LOADED.pop(key, None) if key is not None else None
    if loaded is None:
        return
    files, hint, data, codes = loaded
    have = {(source, filename) for source, filename, _ in codes}
    if all(k in have for k in compiled):
        return
    new = _code_records(codes, compiled)
    if len(new) > len(codes):
        _queue(key, files, hint, data, new)


#: key -> (files, hint, graph data, code records) of the entries this process loaded
#: and has not linked yet (see :func:`amend`)
_LOADED: dict[str, tuple] = {}


#: True: entries are written when the process exits (or when 64 are waiting, or
#: at :func:`flush`): the entries are for the next processes, and writing them
#: would slow the compiles of this one.
DEFER_WRITES = True

_MAX_PENDING = 64
_MAX_PENDING_BYTES = 1 << 20
_PENDING: list[tuple[str, str, bytes]] = []
_AT_EXIT: list[Any] = []
_PID = os.getpid()


def flush() -> int:
    """Write the entries waiting to be written; returns how many were written."""
    pending = list(_PENDING)
    del _PENDING[:len(pending)]
    if os.getpid() != _PID:  # a forked child: the parent writes its own entries
        return 0
    written = 0
    for directory, path, data in pending:
        if _write(directory, path, data):  # (a full or read-only disk: only time is lost)
            written += 1
    STATS["stored"] += written
    return written


def lookup(inputs, outputs, rewrite: Any, linker: str, name: str | None):
    """``(key, found)`` for function(), given the caller's graph (not cloned):
    ``key`` is None when the graph is not cached (another linker, a rewriter
    object, an undescribable graph, :data:`ENABLED` off); ``found`` is
    :func:`load`'s result or None."""
    if not ENABLED or linker not in ("c", "cvm") or rewrite not in ("fast", "exact", None) \
            or getattr(_SKIPPED, "on", False):
        return None, None
    keys = graph_keys(inputs, outputs, {"rewrite": rewrite, "linker": linker, "name": name})
    if keys is None:
        return None, None
    key, structure = keys
    if structure in _SEEN:
        # this process compiled this structure already, with other constants (a
        # cell run again with a new value): not looked up, not stored again
        return None, None
    if len(_SEEN) >= 4096:
        _SEEN.clear()
    _SEEN.add(structure)
    found = load(key, inputs, name)
    if found is _OWN:
        return None, None  # stored by this process: kept as it is for the next ones
    return key, found


_OWN = (None, None)

_SKIPPED = threading.local()


@contextlib.contextmanager
def skipped() -> Iterator[None]:
    """Compiles in this block (this thread) neither use nor store entries (eval's:
    many small graphs, whose entries would only cost memory until the exit)."""
    before = getattr(_SKIPPED, "on", False)
    _SKIPPED.on = True
    try:
        yield
    finally:
        _SKIPPED.on = before


#: The structures (graph_keys()[1]) this process compiled.
_SEEN: set[str] = set()


def load(key: str, inputs, name: str | None = None):
    """``(rewritten FunctionGraph over clones of inputs, linker hint)`` stored under
    ``key``, or None."""
    from nbgraph.core.fgraph import FunctionGraph

    cache = _cache()
    if cache is None or cache.ensure_directory() is None:
        return None
    path = _path(cache, key)
    try:
        if cache.check_file(path, "function cache entry") is None:
            STATS["misses"] += 1
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        if not data.startswith(_MAGIC):
            raise ValueError("not an entry")
        fmt, stored_key, pid, files, hint, graph, codes = pickle.loads(data[len(_MAGIC):])
        if pid == os.getpid() and not SAME_PROCESS:
            STATS["misses"] += 1
            return _OWN
        if fmt != FORMAT or stored_key != key or not _unchanged(files):
            raise ValueError("stale")
        clones = [var.clone() for var in inputs]
        outputs, history, order = _unpickle(graph, clones)
        new = FunctionGraph(clones, outputs, clone=False, name=name)
        if new.toposort() != order:
            raise ValueError("another order")
    except Exception:  # damaged, foreign or stale: compiled again and replaced
        STATS["rejected"] += 1
        return None
    new.equiv = dict(zip(inputs, clones, strict=True))
    new.history = history
    STATS["hits"] += 1
    _preload(codes)
    if len(_LOADED) >= 64:
        _LOADED.clear()
    _LOADED[key] = (files, hint, graph, codes)
    saved = None
    if hint is not None:
        positions, plan_hint = hint
        saved = ([order[i] for i in positions], plan_hint)
    return new, saved


def _preload(codes: tuple) -> None:
    from nbgraph.linkers import codecache

    try:
        codecache.preload((source, filename, marshal.loads(data))
                          for source, filename, data in codes)
    except (ValueError, EOFError, TypeError):  # a damaged record: compiled again
        pass


def _unpickle(data: bytes, inputs) -> Any:
    # the garbage collector off meanwhile: the new objects would start a full
    # collection of the process's heap (several ms), with nothing to collect
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Unpickler(io.BytesIO(data), inputs).load()
    finally:
        if enabled:
            gc.enable()


def _cache():
    try:
        from nbgraph.linkers.c.cache import get_cache
    except ImportError:  # pragma: no cover - no cffi
        return None
    return get_cache()


def _write(directory: str, path: str, data: bytes) -> bool:
    """Write ``path`` atomically, as the module cache publishes; False when the
    disk refuses."""
    from nbgraph.linkers.c.cache import write_atomic

    try:
        write_atomic(directory, path, data)
    except OSError:
        return False
    return True


def _path(cache, key: str) -> str:
    return os.path.join(cache.directory, "function-%s.rec" % key)


_FILES: dict[int, list[tuple[str, int, int]]] = {}


def _loaded_files() -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of nbgraph's loaded modules and C sources (as
    first seen by this process with as many modules loaded)."""
    count = len(sys.modules)
    found = _FILES.get(count)
    if found is None:
        _FILES.clear()
        found = _FILES[count] = _file_list()
    return found


def _file_list() -> list[tuple[str, int, int]]:
    paths = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(_PACKAGE):
            paths.add(path)
    for sub in ("linkers/c/csrc", "tensor/c_code/csrc"):
        folder = _PACKAGE + sub
        try:
            paths.update(os.path.join(folder, n) for n in os.listdir(folder))
        except OSError:
            pass
    out = []
    for path in sorted(paths):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((path, st.st_size, st.st_mtime_ns))
    return out


def _unchanged(files) -> bool:
    for path, size, mtime in files:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime:
            return False
    return bool(files)
