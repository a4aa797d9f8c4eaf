"""Small stand-ins for libm and libmvec that kernel modules are linked against.

Linking a module against the real ``-lm -lmvec`` has ld read their ~1500
dynamic symbols every time (~16 million instructions, more than the rest of
the link).  What the module keeps of them is only a list of imports: for each
math function it calls, its library's name (``DT_NEEDED``) and the symbol's
version (``exp@GLIBC_2.29``; an import without a version would bind to the
oldest one, e.g. glibc's compatibility wrapper of ``exp``).  A *stub* library
carries exactly that for the few hundred names a module can call: the real
library's ``soname`` and, for each name it defines, an empty function of the
same default version.  A module linked against the stubs holds the same
imports as one linked against the real libraries, and loads the real ones.

The stubs are made once per process, on a worker thread started by its
:data:`START_AFTER` th link (a process building one module never pays for
them: three assembler runs and four links, 36 ms of processor time at load
4-5), in a private temporary directory removed at exit (:func:`start`; the
next process making stubs removes those of killed processes, :func:`sweep`):

1. a reference library holding the address of every name of :func:`universe`
   (assembly: no compiler run) is linked against the real libraries; its
   imports say which library and version each name has
   (:mod:`~nbgraph.linkers.c.elf_symbols`);
2. one stub per library file found: a label for each name, a version script;
3. the reference is linked again against the stubs: its imports must be the
   same, else no stubs are used.

A module is linked against them only when every symbol its objects use
without defining is in :func:`universe` (so the reference link looked it up);
anything else is linked against the real libraries.  They are not kept in the
cache directory: a library upgrade cannot leave stale ones behind, and no
file appears there while a process is building its modules.
Numbers: linking a 6-op chain's two units with ld alone (seed 3, 40
alternating rounds, load 2.8): real libraries CPU 5.70 ms min / 6.47 median,
stubs 2.94/3.40 (ld: 20.9 -> 8.9 million instructions, cachegrind).
"""

from __future__ import annotations

import functools
import os
import threading

from nbgraph.linkers.c import compiler, elf_symbols
from nbgraph.linkers.c.compiler import sha256

__all__ = ["universe", "Stubs", "find", "make", "start", "sweep", "STALE_AFTER"]

#: C library functions generated code or GCC may call, looked up too (the real
#: libraries define none of them: a module using them may use the stubs).
_LIBC = ("memcpy", "memset", "memmove", "memcmp", "malloc", "calloc", "realloc", "free",
         "strlen", "abort", "getenv", "snprintf", "vsnprintf", "syscall", "getpid",
         "clock_gettime", "sched_yield", "dlopen", "dlsym", "dlclose", "dl_iterate_phdr",
         "_exit", "__tls_get_addr", "__stack_chk_fail")

#: Names the linker defines in every shared library it makes (whatever it links).
_LINKER_DEFINED = frozenset({"_GLOBAL_OFFSET_TABLE_", "_DYNAMIC"})

#: libmvec's x86-64 variants: (ISA letter, doubles per vector, floats per vector).
_VECTOR_ISAS = (("b", 2, 4), ("c", 4, 8), ("d", 4, 8), ("e", 8, 16))


@functools.cache
def universe() -> frozenset[str]:
    """Every name the reference link looks up: the math functions generated code
    declares (:data:`codegen.MATH_DECLARATIONS
    <nbgraph.linkers.c.codegen.MATH_DECLARATIONS>`, double and float), ``sincos``
    (GCC's pairing of ``sin`` and ``cos``), the vector variants of
    :data:`compiler.MVEC_FUNCTIONS` and ``MVEC_BINARY``, and :data:`_LIBC`.  A
    stub defining every name of <math.h> would cost the link half of what it
    saves."""
    from nbgraph.linkers.c.codegen import MATH_DECLARATIONS

    names = {"sincos", "sincosf"}
    for f in MATH_DECLARATIONS:
        names.update((f, f + "f"))
    for functions, params in ((compiler.MVEC_FUNCTIONS, "v"), (compiler.MVEC_BINARY, "vv")):
        for f in functions:
            for isa, doubles, floats in _VECTOR_ISAS:
                names.add("_ZGV%sN%d%s_%s" % (isa, doubles, params, f))
                names.add("_ZGV%sN%d%s_%sf" % (isa, floats, params, f))
    return frozenset(names | set(_LIBC))


class Stubs:
    """Published stubs: ``paths`` (to link in place of the real libraries)."""

    def __init__(self, paths: list[str]):
        self.paths = list(paths)

    def libs_for(self, objects: list[str]) -> list[str] | None:
        """The stubs' paths when the objects may be linked against them, else None."""
        used = elf_symbols.undefined(objects)
        if used is None or not used - _LINKER_DEFINED <= universe():
            return None
        return self.paths


_found: dict[str, Stubs | None] = {}  # key -> stubs (None: being made, or none)
_lock = threading.Lock()
_links = {"count": 0}

#: Links a process makes before it starts making the stubs.
START_AFTER = 2


@functools.cache
def _universe_digest() -> str:
    return sha256(",".join(sorted(universe())).encode()).hexdigest()


def _key(info, recipe: list[str]) -> str:
    text = "\0".join([info.key_text(), "\0".join(recipe), _universe_digest()])
    return sha256(text.encode()).hexdigest()[:20]


def find(info, recipe: list[str]) -> Stubs | None:
    """This process's stubs for this compiler and link, when they are made."""
    with _lock:
        return _found.get(_key(info, recipe))


def start(info, recipe: list[str], libs: list[str]) -> None:
    """Count a link; at the :data:`START_AFTER` th, make the stubs on a worker
    thread (once per process and key)."""
    key = _key(info, recipe)
    with _lock:
        _links["count"] += 1
        if _links["count"] < START_AFTER or key in _found:
            return
        _found[key] = None  # (until made)
    thread = threading.Thread(target=_make_quietly, args=(info, recipe, libs, key),
                              name="nbgraph-stubs", daemon=True)
    thread.start()


def _make_quietly(info, recipe, libs, key):
    try:
        stubs = make(info, recipe, libs)
    except Exception:  # noqa: BLE001 - no stubs: modules link against the real libraries
        stubs = None
    with _lock:
        _found[key] = stubs


def make(info, recipe: list[str], libs: list[str], directory: str | None = None) -> Stubs | None:
    """Make and check the stubs (see the module docstring) in ``directory``
    (default: a new private temporary one, removed at exit); None when this
    toolchain's libraries cannot be stood in for.  ``recipe`` is the direct
    link's command (see :class:`~nbgraph.linkers.c.direct_link.DirectLink`)
    and ``libs`` the words of it that name the real libraries."""
    import atexit
    import shutil
    import tempfile

    if directory is None:
        pid = os.getpid()  # (a forked child leaving must not remove its parent's)
        sweep(tempfile.gettempdir())
        directory = tempfile.mkdtemp(prefix="%s%d-" % (_PREFIX, pid))
        atexit.register(lambda: os.getpid() == pid and shutil.rmtree(directory, True))
    return _make(info, recipe, libs, directory)


_PREFIX = "nbgraph-stubs-"

#: Seconds after which the stubs of a process that is gone are removed.
STALE_AFTER = 600.0


def sweep(directory: str, now: float | None = None) -> int:
    """Remove this user's stub directories in ``directory`` whose process is gone
    (killed before its exit handler ran) and that are older than
    :data:`STALE_AFTER`; the number removed."""
    import shutil
    import time

    now = time.time() if now is None else now
    removed = 0
    try:
        names = [n for n in os.listdir(directory) if n.startswith(_PREFIX)]
    except OSError:
        return 0
    for name in names:
        path = os.path.join(directory, name)
        try:
            pid = int(name[len(_PREFIX):].split("-")[0])
            st = os.lstat(path)
            if st.st_uid != os.getuid() or now - st.st_mtime < STALE_AFTER or _alive(pid):
                continue
        except (ValueError, OSError):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _make(info, recipe, libs, workdir):
    from nbgraph.linkers.c.direct_link import substitute

    ref = _assemble(info, workdir, {"ref": "".join(
        ".quad %s\n" % n for n in sorted(universe()))})[0]
    real = os.path.join(workdir, "real.so")
    compiler.run_compiler(substitute(recipe, [ref], real), real)
    found = elf_symbols.imports(real)
    if found is None or not found[0]:
        return None
    sonames = sorted({soname for soname, _ in found[0].values()})
    if not all(s.replace(".", "").replace("-", "").replace("_", "").replace("+", "").isalnum()
               for s in sonames):
        return None
    built = _stubs(info, recipe, libs, workdir, sonames, found[0])
    check = os.path.join(workdir, "check.so")
    compiler.run_compiler(substitute(recipe, [ref], check, libs, built), check)
    if elf_symbols.imports(check) != found:
        return None
    return Stubs(built)


def _assemble(info, workdir, texts):
    """The object files of the assembly ``texts`` ({name: text}), assembled at once."""
    sources = [os.path.join(workdir, name + ".s") for name in texts]
    for path, text in zip(sources, texts.values(), strict=True):
        with open(path, "w") as f:
            f.write(text)
    objects = [path[:-2] + ".o" for path in sources]
    compiler.run_compilers([info.argv + ["-c", "-o", obj, src]
                            for obj, src in zip(objects, sources, strict=True)], sources)
    return objects


def _stubs(info, recipe, libs, workdir, sonames, versioned):
    """Build the stub of each of ``sonames``: a label of each name it defines (no
    code: nothing calls them), each of its version (a version script)."""
    from nbgraph.linkers.c.direct_link import substitute

    texts, links = {}, []
    for k, soname in enumerate(sonames):
        by_version: dict[str, list[str]] = {}
        for name, (file, version) in sorted(versioned.items()):
            if file == soname:
                by_version.setdefault(version, []).append(name)
        texts["stub%d" % k] = "".join(".globl %s\n.type %s, STT_FUNC\n%s:\n" % (n, n, n)
                                      for names in by_version.values() for n in names)
        script = os.path.join(workdir, "stub%d.map" % k)
        with open(script, "w") as f:
            f.write("".join("%s { global: %s; };\n" % (v, "; ".join(names))
                            for v, names in sorted(by_version.items())))
        links.append((soname, script, os.path.join(workdir, "stub%d.so" % k)))
    objects = _assemble(info, workdir, texts)
    compiler.run_compilers([substitute(recipe, ["-soname", soname, "--version-script", script,
                                                obj], out, libs, [])
                            for (soname, script, out), obj in zip(links, objects, strict=True)],
                           [out for _, _, out in links])
    return [out for _, _, out in links]


def _reset_after_fork():
    global _lock
    _lock = threading.Lock()
    for key in [key for key, found in _found.items() if found is None]:
        del _found[key]  # (a thread of the parent was making them)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
