"""Reading the symbol tables of 64-bit little-endian ELF files (x86-64, AArch64).

Two questions the link of a kernel module asks (see
:mod:`nbgraph.linkers.c.lib_stubs`): which symbols do these object files use
without defining them, and which versioned symbols does this shared library
import, from which library file.  Anything else, or a file this reader does
not understand, answers None.
"""

from __future__ import annotations

import struct

__all__ = ["undefined", "imports"]

_SHDR = struct.Struct("<IIQQQQIIQQ")  # name type flags addr offset size link info align entsize
_SYM = struct.Struct("<IBBHQQ")        # name info other shndx value size
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_SHT_VERNEED, _SHT_VERSYM = 0x6FFFFFFE, 0x6FFFFFFF
_GLOBAL, _WEAK = 1, 2


def _sections(data: bytes):
    """[(type, offset, size, link)] of the file's sections, or None."""
    if data[:6] != b"\x7fELF\x02\x01" or len(data) < 64:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize != _SHDR.size or shoff + shnum * shentsize > len(data):
        return None
    out = []
    for k in range(shnum):
        f = _SHDR.unpack_from(data, shoff + k * shentsize)
        out.append((f[1], f[4], f[5], f[6]))
    return out


def _string(data: bytes, table: tuple, offset: int) -> str:
    start = table[1] + offset
    return data[start:data.index(b"\0", start)].decode("ascii", "replace")


def _symbols(data: bytes, sections: list, kind: int):
    """[(name, binding, section index)] of the first symbol table of ``kind``."""
    for typ, offset, size, link in sections:
        if typ == kind:
            strings = sections[link]
            return [(_string(data, strings, s[0]), s[1] >> 4, s[3])
                    for s in (_SYM.unpack_from(data, offset + i)
                              for i in range(0, size, _SYM.size))]
    return []


def undefined(paths: list[str]) -> frozenset[str] | None:
    """The global symbols the object files ``paths`` use and none of them
    defines, or None when one is not a 64-bit little-endian ELF file."""
    used, defined = set(), set()
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        sections = _sections(data)
        if sections is None:
            return None
        for name, binding, shndx in _symbols(data, sections, _SHT_SYMTAB):
            if name and binding in (_GLOBAL, _WEAK):
                (defined if shndx else used).add(name)
    return frozenset(used - defined)


def imports(path: str) -> tuple[dict[str, tuple[str, str]], frozenset[str]] | None:
    """``(versioned, plain)`` for the shared library at ``path``: the undefined
    dynamic symbols with a version, name -> (library file, version), and those
    without; None when it is not a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    sections = _sections(data)
    if sections is None:
        return None
    needed = {}  # version index -> (file, version name)
    versym = None
    for typ, offset, size, link in sections:
        if typ == _SHT_VERSYM:
            versym = struct.unpack_from("<%dH" % (size // 2), data, offset)
        elif typ == _SHT_VERNEED:
            strings, at = sections[link], offset
            while True:
                _, count, file_at, aux, nxt = struct.unpack_from("<HHIII", data, at)
                entry = at + aux
                for _ in range(count):
                    _, _, other, name_at, aux_next = struct.unpack_from("<IHHII", data, entry)
                    needed[other] = (_string(data, strings, file_at),
                                     _string(data, strings, name_at))
                    entry += aux_next
                if not nxt:
                    break
                at += nxt
    versioned, plain = {}, set()
    for k, (name, binding, shndx) in enumerate(_symbols(data, sections, _SHT_DYNSYM)):
        if not name or shndx or binding not in (_GLOBAL, _WEAK):
            continue
        index = versym[k] & 0x7FFF if versym is not None and k < len(versym) else 0
        if index in needed:
            versioned[name] = needed[index]
        else:
            plain.add(name)
    return versioned, frozenset(plain)
