"""Linking a shared library through the compiler driver: *bare* for kernel
modules on Linux (no C start-up files, no default libraries), with GNU ld's
speed-only options while no linker refuses them, and by running ``ld``
itself where :mod:`~nbgraph.linkers.c.direct_link` can (object files only).

Each choice that may fail on some machine is tried once per process and
remembered: a bare link that fails at its link step falls back to the usual
one, and a linker that refuses :data:`FAST_LINK` is run without it from then
on.  :func:`nbgraph.linkers.c.compiler.build_library` calls :func:`link`.
"""

import sys

from nbgraph.linkers.c.compiler import CompileError, command_text, run_compiler

__all__ = ["link", "run_link", "bare_direct", "BARE_LINK", "BARE_LIBS", "FAST_LINK"]


#: Whether kernel modules link without the C start-up files and default
#: libraries (None: not tried yet in this process; see :func:`link`).
_bare = {"ok": None}

#: How a bare link names what the default one adds: libgcc's helpers (static,
#: for the few operations a CPU lacks), after the probed libraries.
BARE_LINK = ["-nostdlib"]
BARE_LIBS = ["-lgcc"]


def link(info, flags, out_path, inputs, src_path, extra_flags):
    """Link (or compile and link) ``inputs`` into the library ``out_path``:
    ``flags + ["-o", out_path] + inputs + info.libs``.

    A kernel module (no ``extra_flags``) links *bare* on Linux: no C start-up
    files and no default libraries (a library loaded with dlopen runs no crt
    code; its C library and libm symbols come from its ``DT_NEEDED`` libm and
    the process), which halves the link step.  If a bare link fails, the
    usual one is run and used from then on in this process.  A bare link of
    object files runs the linker itself (:mod:`~nbgraph.linkers.c.direct_link`).
    """
    args = ["-o", out_path] + list(inputs)
    plain = flags + args + info.libs
    if extra_flags or not sys.platform.startswith("linux") or _bare["ok"] is False:
        run_link(info, plain, src_path)
        return
    direct = _direct(info, flags, inputs)
    if direct is not None and direct.run(inputs, out_path, src_path, info):
        _bare["ok"] = True
        return
    try:
        run_link(info, flags + BARE_LINK + args + info.libs + BARE_LIBS, src_path)
        _bare["ok"] = True
    except CompileError as exc:
        if _bare["ok"] or not _is_link_error(str(exc)):
            raise
        _bare["ok"] = False
        run_link(info, plain, src_path)
    if direct is not None:
        direct.driver_worked()


#: Linker options that only make GNU ld faster, the library the same byte for
#: byte: its symbol tables start small and grow (~32K buckets each else, set to
#: zero for every input file).  The runtime library's link on a first use: 69 -> 46
#: million ld instructions; a kernel module's bare link 25 -> 19 (cachegrind), and
#: by ld alone (:func:`bare_direct`) 23.3 -> 16.9.
#: Another linker (gold, lld) refuses them: the link then runs again without
#: them, and so do the process's next links (:func:`run_link`).
FAST_LINK = ["-Wl,--hash-size=31"]
_fast_link = {"ok": True}


def run_link(info, cmd, src_path):
    """Run the driver's link command ``cmd`` (starting with ``info.argv``), with
    :data:`FAST_LINK` on Linux while no link has refused it."""
    if not _fast_link["ok"] or not sys.platform.startswith("linux"):
        run_compiler(cmd, src_path)
        return
    n = len(info.argv)
    try:
        run_compiler(cmd[:n] + FAST_LINK + cmd[n:], src_path)
    except CompileError as exc:
        if "hash-size" not in str(exc).replace(command_text(cmd[:n] + FAST_LINK), ""):
            raise
        _fast_link["ok"] = False
        run_compiler(cmd, src_path)


def _direct(info, flags, inputs):
    """The :func:`bare_direct` link of object files, else None."""
    if not all(path.endswith(".o") for path in inputs):
        return None
    return bare_direct(info, flags)


def bare_direct(info, flags):
    """The :class:`~nbgraph.linkers.c.direct_link.DirectLink` of a bare link with
    ``flags`` (starting with ``info.argv``): with :data:`FAST_LINK` while the
    driver's links take it, as :func:`run_link` would run it."""
    from nbgraph.linkers.c.direct_link import DirectLink

    fast = FAST_LINK if _fast_link["ok"] and sys.platform.startswith("linux") else []
    return DirectLink(info.argv, flags[len(info.argv):] + BARE_LINK + fast,
                      info.libs + BARE_LIBS)


def _is_link_error(text):
    """Whether a failed command's messages come from its link step (GCC's
    collect2, clang's driver, or ld itself)."""
    return any(t in text for t in ("collect2", "ld returned", "linker command failed",
                                   "undefined reference", "cannot find -l"))
