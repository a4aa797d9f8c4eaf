"""Compiling and linking a module by running the compiler's programs, not its driver.

A kernel module's objects are linked *bare* (see
:func:`nbgraph.linkers.c.linking.link`).  Through GCC that runs three programs:
the driver, ``collect2`` and ``ld``, and the first two only work out ld's
command line, which is the same for every module built with the same flags.
This module asks the driver for that command once (``-###``, which prints
it without running it; kept in the cache directory as ``probe-link-*.rec``
while the linker binary is unchanged, so a fresh process does not ask again),
then runs ``ld`` with it directly, only the output and the object files
changed (and ``-lm -lmvec`` by their stubs, :mod:`~nbgraph.linkers.c.lib_stubs`).
The library is the same, byte for byte.  Linking a 6-op chain's two units
(seed 3, 40 alternating rounds, load 4.3): through the driver 8.97 ms wall min
/ 12.35 median, CPU 8.66 / 9.66 ms; ld alone 6.17 / 8.16, CPU 5.87 / 6.66 (the
driver and collect2 are two more programs to start).

The command is used only when the compiler is GCC's driver itself (not a
script or ccache wrapping it: those see every compilation and link, as
before), and it can be read unambiguously: the linker is
``collect2`` (replaced by the ``ld`` the driver names with
``-print-prog-name=ld``) or a program named ``ld``/``ld.*``; no linker plugin
(``-fno-use-linker-plugin``), no ``-fuse-ld``, ``--ld-path`` or a compiler
configured with its own linker (``--with-ld``, ``real-ld``).  Otherwise, and
once a direct link has failed where the driver's link then worked, modules are
linked through the driver as before.

Each translation unit is compiled the same way (:class:`DirectCompile`): the
driver's ``-pipe -###`` names the compiler proper (``cc1``, its ``-march=native``
already resolved) and the assembler; both are run, piped, without the driver
(one program fewer to start per unit, ~1.5 ms of processor time; the object
file is the same, byte for byte).  Two units of a 6-op chain compiled at once
(20 alternating rounds, load 9): CPU 94.6 -> 91.4 ms median.  A unit they fail
to compile is compiled by the driver (whose messages a compile error shows);
if the driver succeeds, units are compiled through it from then on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from nbgraph.linkers import meanwhile
from nbgraph.linkers.c.compiler import sha256

__all__ = ["DirectLink", "DirectCompile", "compile_units", "substitute", "wait_derived",
           "wait_exit", "STATS"]

#: Placeholder names of the output and of the object files in the derived command,
#: and of a compiled unit's object and source.
_OUT = "nbg-direct-link-out.so"
_IN = "nbg-direct-link-in.o"
_OUT_O, _IN_C = "nbg-direct-out.o", "nbg-direct-in.c"

#: Counters: links run by the linker alone (against the real libraries, against
#: their stubs), units compiled by cc1 and as alone, and links or units they
#: failed (the driver ran them).
STATS = {"direct": 0, "stubs": 0, "compiled": 0, "failed": 0}

_recipes: dict[tuple[str, ...], list[str] | None] = {}
_pending: set[tuple[str, ...]] = set()  # keys being derived on a thread
_derivers: list[threading.Thread] = []  # the threads deriving them
_builds = {"count": 0}  # kernel modules this process has compiled

#: Builds a process makes before it derives the recipes its cache has no record of.
DERIVE_AFTER = 2
_lock = threading.Lock()


class _DriverStep:
    """One step the GCC driver runs (``kind``: "link" or "compile"), run without
    it: the recipe read from the driver once, and the rule that a failure the
    driver then mends sends this process back to the driver for good."""

    kind = ""

    def __init__(self, cc: list[str], flags: list[str], libs: Sequence[str] = ()):
        self.cc, self.flags, self.libs = list(cc), list(flags), list(libs)
        self.tried = False

    def _derive(self) -> list[str] | None:
        raise NotImplementedError

    def recipe(self, cache=None, identity: str = "") -> list[str] | None:
        """The step's command with placeholder names (see :func:`substitute`), or
        None when it is not known (see the module docstring).  Read once per
        process; with a ``cache`` (and the compiler's ``identity``,
        :meth:`~nbgraph.linkers.c.compiler.CompilerInfo.key_text`) the answer is
        kept in its directory for the next processes (``probe-<kind>-*.rec``,
        used while the program it names is unchanged)."""
        return _recipe(self.kind, (self.cc, self.flags, self.libs), cache, identity,
                       self._derive)

    def driver_worked(self) -> None:
        """The driver did what this step alone failed to: go through the driver
        from now on in this process (for this command)."""
        if self.tried:
            with _lock:
                _recipes[_key(self.kind, self.cc, self.flags, self.libs)] = None


class DirectLink(_DriverStep):
    """The bare link the driver command ``cc + flags + ["-o", out] + objects + libs``
    runs, as ld's own command."""

    kind = "link"

    def _derive(self) -> list[str] | None:
        return _derive(self.cc, self.flags, self.libs)

    def command(self, objects: list[str], out_path: str) -> list[str] | None:
        """ld's command linking ``objects`` into ``out_path`` (against the real
        libraries), or None when it is not known."""
        recipe = self.recipe()
        return None if recipe is None else substitute(recipe, objects, out_path)

    def run(self, objects: list[str], out_path: str, src_path: str, info=None) -> bool:
        """Whether ld alone linked ``objects`` into ``out_path`` (False: its command
        is not known, or it failed; the caller links through the driver).  With
        the compiler's ``info``, a build inside a cache directory links against
        its library stubs (:mod:`~nbgraph.linkers.c.lib_stubs`) when they serve."""
        from nbgraph.linkers.c.compiler import CompileError, run_compiler

        cache = _cache_of(out_path)
        recipe = self.recipe(cache, "" if info is None else info.key_text())
        if recipe is None:
            return False
        stubs = None if info is None else _stub_paths(info, recipe, objects)
        cmd = substitute(recipe, objects, out_path, info.libs if stubs else (), stubs)
        self.tried = True
        try:
            run_compiler(cmd, src_path)
        except CompileError:
            STATS["failed"] += 1
            return False
        STATS["stubs" if stubs else "direct"] += 1
        return True


class DirectCompile(_DriverStep):
    """The compilation the driver command ``cc + flags + ["-c", "-o", obj, src]``
    runs, as its own two programs: the compiler proper (``cc1``) piped into the
    assembler, as ``-pipe`` makes the driver do (see the module docstring).  Its
    recipe is ``cc1``'s words, ``"|"``, the assembler's words."""

    kind = "compile"

    def _derive(self) -> list[str] | None:
        return _derive_compile(self.cc, self.flags)

    def commands(self, obj: str, src: str, cache=None, identity: str = "", recipe=None):
        """(cc1's command, the assembler's) compiling ``src`` into ``obj``, or None."""
        recipe = recipe or self.recipe(cache, identity)
        if recipe is None:
            return None
        k = recipe.index("|")
        put = {_IN_C: src, _OUT_O: obj}
        return [put.get(w, w) for w in recipe[:k]], [put.get(w, w) for w in recipe[k + 1:]]

    def run(self, units: list[tuple[str, str]], identity: str = "") -> list[int] | None:
        """Compile each ``(obj, src)`` of ``units`` at once; the positions of those
        that failed (the caller compiles them through the driver), or None when
        the commands are not known (all of them)."""
        recipe = self.recipe(_cache_of(units[0][0]), identity) if units else None
        if recipe is None:
            return None
        pipelines = [self.commands(obj, src, recipe=recipe) for obj, src in units]
        self.tried = True
        failed = _run_pipelines(pipelines)
        STATS["compiled"] += len(units) - len(failed)
        STATS["failed"] += len(failed)
        return failed


def ready(info, out_path: str) -> bool:
    """Whether a kernel module built into ``out_path`` would be compiled and
    linked without the driver (else one driver run compiling and linking a
    one-unit module is cheaper than two)."""
    from nbgraph.linkers.c.linking import bare_direct

    cache, identity = _cache_of(out_path), info.key_text()
    return DirectCompile(info.argv, info.flags).recipe(cache, identity) is not None and \
        bare_direct(info, info.argv + info.flags).recipe(cache, identity) is not None


def compile_units(info, flags: list[str], units: list[tuple[str, str]]) -> None:
    """Compile each ``(object, source)`` of ``units`` at once (``flags`` start
    with the compiler, ``info.argv``): by cc1 and the assembler alone
    (:class:`DirectCompile`), and through the driver those they could not (if
    it succeeds where they failed, through the driver from then on).  Raises
    :class:`~nbgraph.linkers.c.compiler.CompileError` as the driver does."""
    from nbgraph.linkers.c.compiler import run_compilers

    if list(flags) == info.argv + info.flags:  # (a kernel module: not the runtime)
        with _lock:
            _builds["count"] += 1
    from nbgraph.linkers.c import prestart

    units = prestart.take(flags, units)  # (those started ahead: waited for, not compiled again)
    if not units:
        return
    direct = DirectCompile(info.argv, flags[len(info.argv):])
    failed = direct.run(units, info.key_text())
    rest = units if failed is None else [units[k] for k in failed]
    run_compilers([flags + ["-c", "-o", obj, path] for obj, path in rest],
                  [path for _, path in rest])
    if rest and failed is not None:
        direct.driver_worked()


def _run_pipelines(pipelines):
    """Run each (cc1, as) pair, cc1's output piped into as, all at once; the
    positions of the pairs that failed or could not be started."""
    import subprocess

    started, failed = [], []
    for k, (cc1, asm) in enumerate(pipelines):
        try:
            first = subprocess.Popen(cc1, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        except OSError:
            failed.append(k)
            continue
        try:
            second = subprocess.Popen(asm, stdin=first.stdout, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        except OSError:
            second = None
        first.stdout.close()
        started.append((k, first, second))
    meanwhile.run()  # (this thread's Python that does not need their output)
    for k, first, second in started:
        codes = [wait_exit(first)] + ([wait_exit(second)] if second is not None else [1])
        if any(codes):
            failed.append(k)
    return sorted(failed)


def wait_exit(proc) -> int:
    """A compiler process's exit status (killed after 600 s: a failure, -9)."""
    import subprocess

    try:
        return proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -9


def _plain_driver(cc: list[str]) -> bool:
    """Whether ``cc`` is GCC's driver itself: one word naming (through its links)
    an executable file whose name has ``gcc`` or is ``cc``.  A wrapper (a
    script, ccache) wants to see every compilation: it keeps them."""
    if len(cc) != 1:
        return False
    real = os.path.realpath(cc[0])
    name = os.path.basename(real)
    try:
        with open(real, "rb") as f:
            elf = f.read(4) == b"\x7fELF"
    except OSError:
        return False
    return elf and ("gcc" in name or name == "cc")


#: Flags with which units are compiled through the driver (it does more than
#: run cc1 and as, or other programs).
_NOT_DIRECT = ("-B", "-save-temps", "-flto", "-fcompare-debug", "-x", "-Wa,", "-Xassembler",
               "-g", "-specs", "--sysroot")


def _derive_compile(cc: list[str], flags: list[str]) -> list[str] | None:
    """cc1's and the assembler's words for ``cc`` and ``flags`` (see
    :meth:`DirectCompile.recipe`), or None."""
    import shlex
    import subprocess

    if not _plain_driver(cc) or any(w.startswith(_NOT_DIRECT) for w in cc + flags):
        return None
    try:
        proc = subprocess.run(cc + flags + ["-pipe", "-###", "-c", "-o", _OUT_O, _IN_C],
                              capture_output=True, text=True, timeout=60)
        lines = [shlex.split(line) for line in proc.stderr.splitlines() if line.startswith(" ")]
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0 or len(lines) != 2 or lines[0][-1:] != ["|"]:
        return None
    cc1, asm = lines[0][:-1], lines[1]
    if os.path.basename(cc1[0]) != "cc1" or os.path.basename(asm[0]) != "as" or \
            cc1.count(_IN_C) != 1 or cc1[-2:] != ["-o", "-"] or asm.count(_OUT_O) != 1 or \
            any(_IN_C in w or _OUT_O in w or "nbg-direct" in w for w in asm[:-1]):
        return None
    kept = []
    for k, word in enumerate(cc1):  # (names of dump files, never written here)
        if word in ("-dumpbase", "-dumpdir", "-dumpbase-ext") or \
                cc1[k - 1] in ("-dumpbase", "-dumpdir", "-dumpbase-ext"):
            continue
        kept.append(word)
    if any("nbg-direct" in w for w in kept if w != _IN_C):
        return None
    from nbgraph.linkers.c.compiler import which

    programs = [which(kept[0]), which(asm[0])]
    if None in programs:
        return None
    return [programs[0]] + kept[1:] + ["|", programs[1]] + asm[1:]


def _recipe(kind, words, cache, identity, derive):
    """The recipe of ``kind`` for ``words`` (cc, flags, libs): remembered in this
    process, else read from ``cache``; else ``derive()`` d, at once without a
    cache, or with one on a thread from the process's :data:`DERIVE_AFTER` th
    build on (recorded there for the next processes; None meanwhile: the driver
    runs, so a process building one module in an empty cache, e.g. a first use,
    waits for none of the driver's answers and pays for none)."""
    key = _key(kind, *words)
    with _lock:
        if key in _recipes:
            return _recipes[key]
    if cache is None:
        found = derive()
        with _lock:
            return _recipes.setdefault(key, found)
    name = kind + "-" + sha256("\0".join(key + (identity,)).encode()).hexdigest()[:24]
    found = _load(cache, name)
    if found is not _MISSING:
        with _lock:
            return _recipes.setdefault(key, found)
    with _lock:
        if key in _recipes or _builds["count"] < DERIVE_AFTER:
            return _recipes.get(key)
        _recipes[key] = None  # (until derived)
        _pending.add(key)
    thread = threading.Thread(target=_derive_and_store, args=(key, cache, name, derive),
                              name="nbgraph-direct", daemon=True)
    with _lock:
        _derivers.append(thread)
    thread.start()
    return None


def wait_derived(timeout: float | None = None) -> bool:
    """Wait until the commands being derived on threads are recorded in their cache
    directories (so its listing is complete); False when ``timeout`` (seconds, for
    each thread) ran out."""
    with _lock:
        threads = list(_derivers)
    for thread in threads:
        thread.join(timeout)
    with _lock:
        _derivers[:] = [t for t in _derivers if t.is_alive()]
        return not any(t in _derivers for t in threads)


def _derive_and_store(key, cache, name, derive):
    try:
        found = derive()
        _store(cache, name, found)
    except Exception:  # noqa: BLE001 - not known: the driver runs
        found = None
    with _lock:
        if key in _pending:
            _pending.discard(key)
            _recipes[key] = found


def substitute(recipe: list[str], objects: list[str], out_path: str, libs=(),
               stubs: list[str] | None = None) -> list[str]:
    """``recipe`` with ``objects`` and ``out_path`` in place of the placeholders,
    and (given ``stubs``) the words ``libs`` replaced by the stubs' paths."""
    out: list[str] = []
    for word in recipe:
        if word == _IN:
            out.extend(objects)
        elif word in libs and stubs is not None:
            out.extend(stubs)
            stubs = []
        else:
            out.append(out_path if word == _OUT else word)
    return out


def _cache_of(out_path):
    """The module cache whose build directory holds ``out_path``, or None."""
    workdir = os.path.dirname(os.path.abspath(out_path))
    if not os.path.basename(workdir).startswith(".build-"):
        return None
    from nbgraph.linkers.c.cache import get_cache

    return get_cache(os.path.dirname(workdir))


def _stub_paths(info, recipe, objects):
    """The library stubs to link ``objects`` against (None: the real libraries),
    starting to make them when they are missing."""
    from nbgraph.linkers.c import lib_stubs

    if not info.libs:
        return None
    found = lib_stubs.find(info, recipe)
    if found is None:
        lib_stubs.start(info, recipe, info.libs)
        return None
    return found.libs_for(objects)


_MISSING = object()


def _load(cache, name):
    """The recipe recorded as ``name`` in ``cache`` (None: known not to be
    usable), or _MISSING when there is no valid record."""
    try:
        record = cache.read_record(name, "link record")
        if record is None:
            return _MISSING
        recipe, stamp = record["recipe"], record["stamp"]
        if recipe is None:
            return None
        if not all(isinstance(w, str) for w in recipe) or _stamp(recipe[0]) != stamp:
            return _MISSING
    except (OSError, KeyError, TypeError, IndexError):
        return _MISSING
    return recipe


def _store(cache, name, recipe):
    """Record ``recipe`` as ``name`` (if the directory can be written)."""
    cache.write_probe(name, {"recipe": recipe,
                             "stamp": None if recipe is None else _stamp(recipe[0])})


def _stamp(path):
    """[size, mtime_ns, inode] of the file ``path`` (None when missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _new_lock_after_fork():
    global _lock
    _lock = threading.Lock()
    for key in _pending:  # (a thread of the parent was deriving them)
        _recipes.pop(key, None)
    _pending.clear()
    _derivers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def _key(kind, cc, flags, libs):
    return (kind,) + tuple(cc) + ("\0",) + tuple(flags) + ("\0",) + tuple(libs)


def _derive(cc: list[str], flags: list[str], libs: list[str]) -> list[str] | None:
    """ld's command for ``cc``, ``flags`` and ``libs``, with the placeholder names."""
    import shlex
    import subprocess

    if not _plain_driver(cc) or \
            any(w.startswith(("-fuse-ld", "--ld-path", "-B")) for w in cc + flags):
        return None
    try:
        proc = subprocess.run(cc + flags + ["-fno-use-linker-plugin", "-###", "-o", _OUT, _IN]
                              + libs, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0 or "--with-ld=" in proc.stderr:
        return None
    lines = [line for line in proc.stderr.splitlines() if line.startswith(" ") and _OUT in line]
    if not lines:
        return None
    try:
        words = shlex.split(lines[-1])
    except ValueError:
        return None
    if words.count(_IN) != 1 or words.count(_OUT) != 1 or \
            any(w.startswith("-plugin") for w in words):
        return None
    linker = _linker(words[0], cc)
    return None if linker is None else [linker] + words[1:]


def _linker(program: str, cc: list[str]) -> str | None:
    """The path of the linker to run in place of ``program`` (the first word
    of the driver's link command), or None."""
    from nbgraph.linkers.c.compiler import which

    name = os.path.basename(program)
    if name == "collect2":
        if os.path.dirname(_print_prog_name(cc, "real-ld") or ""):
            return None  # collect2 would run that one
        program = _print_prog_name(cc, "ld") or ""
        name = os.path.basename(program)
    if name != "ld" and not name.startswith("ld."):
        return None
    return which(program)


def _print_prog_name(cc: list[str], name: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(cc + ["-print-prog-name=" + name], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = proc.stdout.strip()
    return found if proc.returncode == 0 and found else None
