"""Links with GNU ld's speed-only options (linking.FAST_LINK), through the driver
or by ld alone: the same library byte for byte, and a linker refusing them
links without them."""

import sys

import pytest

from nbgraph.linkers.c import codegen, compiler, linking
from nbgraph.linkers.c.cache import get_cache

pytestmark = [pytest.mark.needs_cc,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the options are given on Linux only")]

_UNIT = "NBG_EXPORT double nbg_t(double x) { return exp(x) + 1.0; }\n"


def _object(tmp_path, info):
    src, obj = tmp_path / "u.c", tmp_path / "u.o"
    src.write_text(codegen.prelude(info, math=codegen.math_block({"exp"})) + _UNIT)
    compiler.run_compiler(info.argv + info.flags + ["-c", "-o", str(obj), str(src)], str(src))
    return str(obj)


def _linked(tmp_path, info, obj, name, extra=("-pthread",)):
    out = tmp_path / name
    linking.link(info, info.argv + info.flags + list(extra), str(out), [obj], str(out),
                 list(extra))
    return out.read_bytes()


def test_the_fast_options_make_the_same_library(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    obj = _object(tmp_path, info)
    monkeypatch.setitem(linking._fast_link, "ok", True)
    fast = _linked(tmp_path, info, obj, "fast.so")
    if not linking._fast_link["ok"]:
        pytest.skip("this linker refuses them")
    monkeypatch.setitem(linking._fast_link, "ok", False)
    assert _linked(tmp_path, info, obj, "plain.so") == fast


def test_a_linker_refusing_them_links_without_them_from_then_on(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    obj = _object(tmp_path, info)
    monkeypatch.setitem(linking._fast_link, "ok", True)
    monkeypatch.setattr(linking, "FAST_LINK", ["-Wl,--nbg-no-such-option-hash-size"])
    assert _linked(tmp_path, info, obj, "a.so")
    assert linking._fast_link["ok"] is False


def test_another_link_error_is_raised_as_before(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    obj = _object(tmp_path, info)
    monkeypatch.setitem(linking._fast_link, "ok", True)
    with pytest.raises(compiler.CompileError, match="nbg_no_such_library"):
        _linked(tmp_path, info, obj, "b.so", ("-pthread", "-lnbg_no_such_library"))
    assert linking._fast_link["ok"] is True


def _ld_alone(tmp_path, info, obj, name):
    """``(flags of the bare link ld runs alone, the library it made)``, or None."""
    link = linking.bare_direct(info, info.argv + info.flags)
    cmd = link.command([obj], str(tmp_path / name))
    if cmd is None:
        return None
    compiler.run_compiler(cmd, name)
    return link.flags, (tmp_path / name).read_bytes()


def test_ld_alone_takes_them_while_the_driver_s_links_do(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    obj = _object(tmp_path, info)
    monkeypatch.setitem(linking._fast_link, "ok", True)
    fast = _ld_alone(tmp_path, info, obj, "fast.so")
    if fast is None:
        pytest.skip("this compiler's link command is not read directly")
    monkeypatch.setitem(linking._fast_link, "ok", False)  # (a link refused them)
    plain = _ld_alone(tmp_path, info, obj, "plain.so")
    assert fast[0] == plain[0] + linking.FAST_LINK
    assert fast[1] == plain[1]
