"""Linking a kernel module by running the linker itself instead of the compiler driver.

A kernel module's objects are linked *bare* (see
:func:`nbgraph.linkers.c.compiler.link`).  Through GCC that runs three programs:
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

The command is used only when it can be read unambiguously: the linker is
``collect2`` (replaced by the ``ld`` the driver names with
``-print-prog-name=ld``) or a program named ``ld``/``ld.*``; no linker plugin
(``-fno-use-linker-plugin``), no ``-fuse-ld``, ``--ld-path`` or a compiler
configured with its own linker (``--with-ld``, ``real-ld``).  Otherwise, and
once a direct link has failed where the driver's link then worked, modules are
linked through the driver as before.
"""

from __future__ import annotations

import os
import threading

from nbgraph.linkers.c.compiler import sha256

__all__ = ["DirectLink", "substitute", "STATS"]

#: Placeholder names of the output and of the object files in the derived command.
_OUT = "nbg-direct-link-out.so"
_IN = "nbg-direct-link-in.o"

#: Counters: links run by the linker alone (against the real libraries, against
#: their stubs), and links it failed (the driver ran them).
STATS = {"direct": 0, "stubs": 0, "failed": 0}

_recipes: dict[tuple[str, ...], list[str] | None] = {}
_lock = threading.Lock()


class DirectLink:
    """The bare link the driver command ``cc + flags + ["-o", out] + objects + libs``
    runs, as ld's own command."""

    def __init__(self, cc: list[str], flags: list[str], libs: list[str]):
        self.cc, self.flags, self.libs = list(cc), list(flags), list(libs)
        self.tried = False

    def recipe(self, cache=None, identity: str = "") -> list[str] | None:
        """ld's command with placeholder names (see :func:`substitute`), or None
        when it is not known (see the module docstring).  Read once per process;
        with a ``cache`` (and the compiler's ``identity``,
        :meth:`~nbgraph.linkers.c.compiler.CompilerInfo.key_text`) the answer is
        kept in its directory for the next processes (``probe-link-*.rec``,
        used while the linker binary it names is unchanged)."""
        key = _key(self.cc, self.flags, self.libs)
        with _lock:
            if key in _recipes:
                return _recipes[key]
        name = "link-" + sha256("\0".join(key + (identity,)).encode()).hexdigest()[:24]
        found = _MISSING if cache is None else _load(cache, name)
        if found is _MISSING:
            found = _derive(self.cc, self.flags, self.libs)
            if cache is not None:
                _store(cache, name, found)
        with _lock:
            return _recipes.setdefault(key, found)

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

    def driver_worked(self) -> None:
        """The driver linked what ld alone failed to: link through the driver from
        now on in this process (for this command)."""
        if self.tried:
            with _lock:
                _recipes[_key(self.cc, self.flags, self.libs)] = None


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
    from nbgraph.linkers.c.publish import load_record

    path = os.path.join(cache.directory, "probe-%s.rec" % name)
    try:
        if cache.ensure_directory() is None or cache.check_file(path, "link record") is None:
            return _MISSING
        with open(path, "rb") as f:
            record = load_record(f.read())
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
    from nbgraph.linkers.c.cache import write_atomic
    from nbgraph.linkers.c.publish import dump_record, write_problem

    record = {"recipe": recipe, "stamp": None if recipe is None else _stamp(recipe[0])}
    try:
        if cache.ensure_directory() is not None:
            write_atomic(cache.directory, os.path.join(cache.directory, "probe-%s.rec" % name),
                         dump_record(record))
    except OSError as exc:
        if write_problem(exc) is None:
            raise


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


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def _key(cc, flags, libs):
    return tuple(cc) + ("\0",) + tuple(flags) + ("\0",) + tuple(libs)


def _derive(cc: list[str], flags: list[str], libs: list[str]) -> list[str] | None:
    """ld's command for ``cc``, ``flags`` and ``libs``, with the placeholder names."""
    import shlex
    import subprocess

    if any(w.startswith(("-fuse-ld", "--ld-path", "-B")) for w in cc + flags):
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
