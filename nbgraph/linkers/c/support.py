"""Support objects: fixed C that many modules share, compiled once per machine.

An Op's support code may mark a block of fixed C (the same text for every
node of one kind, e.g. the matrix product of one compute type) as a *support
object*::

    /* nbgraph support object: begin */
    ... static functions and their state ...
    #if 0 /* nbgraph support object: exports */
    typedef ...;                        (what the kernels need to call them)
    int nbg_f64_mm(const char *A, ...); (the entry points, one prototype each)
    #endif /* nbgraph support object: end */

Compiled as it stands, the block is ordinary static C (the exports are never
compiled).  :func:`nbgraph.linkers.c.compiler.build_library` instead compiles
each such block once into an object file ``support-<key>.o`` kept in the
cache directory (sidecar with size and SHA-256, like a module; the key is its
whole translation unit plus the compiler's flags), and a module only declares
the entry points: each becomes a hidden function ``nbg_sup_<key>_<name>``
taking the module's runtime table first (the object's own copy of the helpers
is bound to it), and a macro of the old name calls it.  The object is
compiled at the same time as the module's own units and linked into the
module, so a module compiles only its kernels while its machine code is what
the inline block gave (same text, same flags, its own translation unit as
a split module's part already was).

Support objects are kept like the runtime library: counted in the cache's
size but never evicted by its limit (a few tens of kilobytes each, one per
compute type and product kind); ``cache clear`` removes them, and a missing
or damaged one is compiled again with the next module that needs it.

A block stays inline when the module is standalone (no runtime table to
bind) or when one of its include guards also appears outside every block
(another Op included part of the same C, e.g. a convolution's matrix
product, and the two must stay one definition).
"""

import os
import re

from nbgraph.linkers.c.compiler import sha256

__all__ = ["BEGIN", "EXPORTS", "END", "SupportObject", "section", "split_objects",
           "published", "publish", "STATS"]

#: The markers of a support-object block (see the module docstring).
BEGIN = "/* nbgraph support object: begin */"
EXPORTS = "#if 0 /* nbgraph support object: exports */"
END = "#endif /* nbgraph support object: end */"

#: Counters: objects found on disk, built, and blocks left inline.
STATS = {"found": 0, "built": 0, "inline": 0}

_STANDALONE = "#define NBG_STANDALONE 1"
_GUARD = re.compile(r"^#ifndef\s+(\w+)", re.M)
_PROTOTYPE = re.compile(r"^\s*(?P<ret>[A-Za-z_][\w \t\*]*?[\s\*])(?P<name>[A-Za-z_]\w*)\s*"
                        r"\((?P<params>.*)\)\s*$", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")


def section(body: str, exports: str) -> str:
    """The text of a support-object block: ``body`` (static C) and ``exports``
    (the typedefs and prototypes a kernel needs to call its entry points)."""
    return "%s\n%s\n%s\n%s\n%s\n" % (BEGIN, body.rstrip("\n"), EXPORTS,
                                      exports.strip("\n"), END)


class SupportObject:
    """One block to compile on its own: ``key`` (names the file), ``source``
    (its whole translation unit) and ``interface`` (what replaces the block in
    the module's text)."""

    def __init__(self, key: str, source: str, interface: str):
        self.key = key
        self.source = source
        self.interface = interface

    @property
    def file_name(self) -> str:
        """``support-<key>.o``."""
        return "support-%s.o" % self.key


def _blocks(text):
    """[(start, end, body, exports)] of the blocks in ``text``."""
    out, at = [], 0
    while True:
        start = text.find(BEGIN, at)
        if start < 0:
            return out
        mid = text.find(EXPORTS, start)
        end = text.find(END, mid if mid >= 0 else start)
        if mid < 0 or end < 0:
            return out  # a damaged block: left as it is (it compiles inline)
        out.append((start, end + len(END), text[start + len(BEGIN):mid],
                    text[mid + len(EXPORTS):end]))
        at = end + len(END)


def _statements(exports):
    return [s.strip() for s in exports.split(";") if s.strip()]


def _parameters(params):
    """The names of a prototype's parameters (the last identifier of each)."""
    names = []
    for param in params.split(","):
        words = _IDENT.findall(param)
        if not words or param.strip() == "void":
            continue
        names.append(words[-1])
    return names


def _object(body, exports, info, extra_flags):
    """The :class:`SupportObject` of one block, or None when its exports are not
    prototypes this module can wrap."""
    from nbgraph.linkers.c import codegen

    typedefs, entries = [], []
    for statement in _statements(exports):
        if statement.startswith("typedef"):
            typedefs.append(statement + ";")
            continue
        match = _PROTOTYPE.match(statement)
        if match is None:
            return None
        entries.append((match.group("ret").strip(), match.group("name"),
                        match.group("params").strip()))
    head = codegen.prelude(info, math=codegen.math_block(codegen.math_used(body)))
    text = head + body
    flags = " ".join(list(info.flags) + list(extra_flags))
    key = sha256("\0".join([text, exports, flags, info.key_text()]).encode()).hexdigest()[:32]
    tag = key[:12]
    wrappers, interface = [], list(typedefs)
    for ret, name, params in entries:
        wrapped = "nbg_sup_%s_%s" % (tag, name)
        args = ", ".join(_parameters(params))
        wrappers.append(
            '__attribute__((visibility("hidden"))) %s %s(const nbg_runtime *nbg_rt_in, %s) {\n'
            "    if (nbg_rt != nbg_rt_in) __atomic_store_n(&nbg_rt, nbg_rt_in, __ATOMIC_RELAXED);\n"
            "    return %s(%s);\n}" % (ret, wrapped, params, name, args))
        interface += ["%s %s(const nbg_runtime *, %s);" % (ret, wrapped, params),
                      "#ifndef %s" % name,
                      "#define %s(...) %s(nbg_rt, __VA_ARGS__)" % (name, wrapped),
                      "#endif"]
    source = text + "\n/* the entry points, bound to the calling module's runtime */\n" + \
        "\n".join(wrappers) + "\n"
    return SupportObject(key, source, "/* support object %s */\n%s\n" % (
        key, "\n".join(interface)))


def split_objects(parts, info, extra_flags=()):
    """``(parts, objects)``: the translation units of a module with each
    support-object block replaced by its interface, and the distinct
    :class:`SupportObject` s they link (blocks that must stay inline, see the
    module docstring, are left as they are)."""
    if not any(BEGIN in part for part in parts):
        return list(parts), []
    objects, out = {}, []
    for part in parts:
        blocks = _blocks(part)
        if not blocks or _STANDALONE in part:
            out.append(part)
            continue
        outside = part
        for start, end, _, _ in reversed(blocks):
            outside = outside[:start] + outside[end:]
        guards_outside = set(_GUARD.findall(outside))
        pieces, at = [], 0
        for start, end, body, exports in blocks:
            obj = None
            if not guards_outside.intersection(_GUARD.findall(body)):
                obj = _object(body, exports, info, extra_flags)
            if obj is None:
                STATS["inline"] += 1
                continue
            obj = objects.setdefault(obj.key, obj)
            pieces += [part[at:start], obj.interface]
            at = end
        pieces.append(part[at:])
        out.append("".join(pieces))
    return out, list(objects.values())


def _cache_of(workdir):
    """The module cache whose build directory ``workdir`` is (a ``.build-*``
    directory inside it), or None for a private build outside it."""
    if not os.path.basename(workdir).startswith(".build-"):
        return None
    from nbgraph.linkers.c.cache import get_cache

    return get_cache(os.path.dirname(workdir))


def _paths(cache, obj):
    base = os.path.join(cache.directory, "support-" + obj.key)
    return base + ".o", base + ".meta"


def published(obj: SupportObject, workdir: str) -> str | None:
    """The path of ``obj``'s published object file when the cache directory of
    ``workdir`` holds a valid one (checked like a module: owner, size and
    SHA-256 against its sidecar), else None."""
    cache = _cache_of(workdir)
    if cache is None:
        return None
    path, meta = _paths(cache, obj)
    if not os.path.exists(path) or not cache.verify_library(path, meta, "support object"):
        return None
    STATS["found"] += 1
    return path


def publish(obj: SupportObject, built: str, workdir: str, record: dict) -> None:
    """Publish the object file ``built`` (compiled in ``workdir``) as the cache's
    ``support-<key>.o`` (sidecar first, atomic renames), unless the build is
    private or a valid one is already there."""
    cache = _cache_of(workdir)
    STATS["built"] += 1
    if cache is None:
        return
    path, meta = _paths(cache, obj)
    with open(built, "rb") as f:
        data = f.read()
    cache.publish_file(workdir, built, data, path, meta, record)
