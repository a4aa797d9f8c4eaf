"""Bare links of kernel modules run by the linker itself (nbgraph/linkers/c/direct_link.py)."""

import os
import subprocess
import sys
import threading

import pytest

from nbgraph.linkers.c import codegen, compiler, direct_link, elf_symbols, lib_stubs, linking
from nbgraph.linkers.c.cache import get_cache

pytestmark = [pytest.mark.needs_cc,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="bare links are made on Linux only")]

_UNITS = [
    "NBG_EXPORT double nbg_t(double x) { return exp(x) + nbg_u(x); }\n",
    "double nbg_u(double x) { return tanh(x) * pow(x, 1.5); }\n",
]


def _objects(tmp_path, info):
    head = codegen.prelude(info, math=codegen.math_block({"exp", "tanh", "pow"}))
    head += "double nbg_u(double x);\n"
    objects = []
    for k, text in enumerate(_UNITS):
        src, obj = tmp_path / ("u%d.c" % k), tmp_path / ("u%d.o" % k)
        src.write_text(head + text)
        compiler.run_compiler(info.argv + info.flags + ["-c", "-o", str(obj), str(src)],
                              str(src))
        objects.append(str(obj))
    return objects


def _link(info):
    return linking.bare_direct(info, info.argv + info.flags)  # (as a module's link has it)


def test_the_linker_alone_makes_the_drivers_library_byte_for_byte(tmp_path, call_nbg_t):
    info = compiler.probe(get_cache())
    objects = _objects(tmp_path, info)
    cmd = _link(info).command(objects, str(tmp_path / "direct.so"))
    if cmd is None:
        pytest.skip("this compiler's link command is not read directly")
    assert cmd[0] != info.argv[0] and not any(w.startswith("-plugin") for w in cmd)
    compiler.run_compiler(cmd, "direct")
    compiler.run_compiler(info.argv + info.flags + linking.BARE_LINK + [
        "-o", str(tmp_path / "driver.so")] + objects + info.libs + linking.BARE_LIBS, "driver")
    direct, driver = (tmp_path / "direct.so").read_bytes(), (tmp_path / "driver.so").read_bytes()
    assert direct == driver
    assert call_nbg_t(tmp_path / "direct.so") == call_nbg_t(tmp_path / "driver.so")


def test_a_failing_direct_link_is_linked_by_the_driver_and_not_tried_again(tmp_path,
                                                                           monkeypatch, call_nbg_t):
    info = compiler.probe(get_cache())
    link = _link(info)
    if link.command(["x.o"], "x.so") is None:
        pytest.skip("this compiler's link command is not read directly")
    key = direct_link._key("link", link.cc, link.flags, link.libs)
    monkeypatch.setitem(direct_link._recipes, key, [compiler.which("false")])
    monkeypatch.setitem(linking._bare, "ok", True)
    failed = direct_link.STATS["failed"]
    out = tmp_path / "m.so"
    linking.link(info, info.argv + info.flags, str(out), _objects(tmp_path, info), "m.c", ())
    assert out.exists() and direct_link.STATS["failed"] == failed + 1
    assert direct_link._recipes[key] is None  # the driver links from now on
    assert call_nbg_t(out) > 0


def test_no_direct_link_with_a_linker_chosen_by_flags():
    info = compiler.probe(get_cache())
    link = direct_link.DirectLink(info.argv, info.flags + ["-fuse-ld=bfd"], info.libs)
    assert link.command(["a.o"], "a.so") is None


def _stubs(tmp_path, info, recipe):
    d = tmp_path / "stubs"
    d.mkdir()
    stubs = lib_stubs.make(info, recipe, info.libs, str(d))
    if stubs is None:
        pytest.skip("these libraries are not stood in for")
    return stubs


def test_a_module_linked_against_the_stubs_imports_what_the_real_libraries_give(tmp_path,
                                                                                call_nbg_t):
    info = compiler.probe(get_cache())
    recipe = _link(info).recipe()
    if recipe is None or not info.libs:
        pytest.skip("this compiler's link command is not read directly")
    stubs = _stubs(tmp_path, info, recipe)
    objects = _objects(tmp_path, info)
    libs = stubs.libs_for(objects)
    assert libs == stubs.paths
    real, stubbed = tmp_path / "real.so", tmp_path / "stubbed.so"
    compiler.run_compiler(direct_link.substitute(recipe, objects, str(real)), "real")
    compiler.run_compiler(direct_link.substitute(recipe, objects, str(stubbed), info.libs, libs),
                          "stubbed")
    found = elf_symbols.imports(str(real))
    assert found is not None and "exp" in found[0] and "pow" in found[0]
    assert elf_symbols.imports(str(stubbed)) == found
    assert call_nbg_t(stubbed) == call_nbg_t(real)


def test_objects_using_a_name_the_stubs_never_looked_up_link_against_the_real_libraries(
        tmp_path):
    info = compiler.probe(get_cache())
    head = codegen.prelude(info) + "double lgamma(double);\n"
    src, obj = tmp_path / "g.c", tmp_path / "g.o"
    src.write_text(head + "NBG_EXPORT double nbg_g(double x) { return lgamma(x); }\n")
    compiler.run_compiler(info.argv + info.flags + ["-c", "-o", str(obj), str(src)], str(src))
    assert "lgamma" not in lib_stubs.universe()
    assert lib_stubs.Stubs(["stub.so"]).libs_for([str(obj)]) is None
    assert lib_stubs.Stubs(["stub.so"]).libs_for(_objects(tmp_path, info)) == ["stub.so"]


def test_a_process_makes_its_stubs_on_a_thread_from_its_second_link(monkeypatch):
    info = compiler.probe(get_cache())
    recipe = _link(info).recipe()
    if recipe is None or not info.libs:
        pytest.skip("this compiler's link command is not read directly")
    monkeypatch.setattr(lib_stubs, "_found", {})
    monkeypatch.setitem(lib_stubs._links, "count", 0)
    lib_stubs.start(info, recipe, info.libs)
    assert lib_stubs._found == {} and lib_stubs.find(info, recipe) is None
    threads = set(threading.enumerate())
    lib_stubs.start(info, recipe, info.libs)
    for thread in set(threading.enumerate()) - threads:
        thread.join(120)
    stubs = lib_stubs.find(info, recipe)
    assert stubs is not None and all(os.path.exists(p) for p in stubs.paths)
    lib_stubs.start(info, recipe, info.libs)  # made once
    assert lib_stubs.find(info, recipe) is stubs


def test_the_link_command_is_kept_in_the_cache_while_the_linker_is_unchanged(tmp_path,
                                                                            monkeypatch):
    info = compiler.probe(get_cache())
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    cache = get_cache(str(d))
    monkeypatch.setattr(direct_link, "_recipes", {})
    monkeypatch.setitem(direct_link._builds, "count", 0)
    assert _link(info).recipe(cache, info.key_text()) is None  # not a process's first build
    assert not [n for n in os.listdir(d) if n.startswith("probe-link-")]
    monkeypatch.setitem(direct_link._builds, "count", direct_link.DERIVE_AFTER)
    assert _link(info).recipe(cache, info.key_text()) is None  # derived on a thread
    _join_derivations()
    recipe = _link(info).recipe(cache, info.key_text())
    if recipe is None:
        pytest.skip("this compiler's link command is not read directly")
    assert [n for n in os.listdir(d) if n.startswith("probe-link-")]
    monkeypatch.setattr(direct_link, "_recipes", {})
    derived = []
    monkeypatch.setattr(direct_link, "_derive", lambda *a: derived.append(a) or ["ld"])
    assert _link(info).recipe(cache, info.key_text()) == recipe and not derived
    monkeypatch.setattr(direct_link, "_recipes", {})
    monkeypatch.setattr(direct_link, "_stamp", lambda path: [0, 0, 0])  # another linker
    assert _link(info).recipe(cache, info.key_text()) is None
    _join_derivations()
    assert _link(info).recipe(cache, info.key_text()) == ["ld"] and len(derived) == 1


def _join_derivations():
    assert direct_link.wait_derived(60)
    assert not [t for t in threading.enumerate() if t.name == "nbgraph-direct"]


def test_cc1_piped_into_the_assembler_makes_the_drivers_object_byte_for_byte(tmp_path):
    info = compiler.probe(get_cache())
    src = tmp_path / "u.c"
    src.write_text(codegen.prelude(info, math=codegen.math_block({"exp"})) +
                   "NBG_EXPORT void nbg_v(double *x, long n) {\n"
                   "    for (long i = 0; i < n; i++) x[i] = exp(x[i]) * 2.0;\n}\n")
    direct = direct_link.DirectCompile(info.argv, info.flags)
    commands = direct.commands(str(tmp_path / "direct.o"), str(src))
    if commands is None:
        pytest.skip("this compiler's programs are not run directly")
    assert os.path.basename(commands[0][0]) == "cc1"
    assert direct.run([(str(tmp_path / "direct.o"), str(src))]) == []
    compiler.run_compiler(info.argv + info.flags + ["-c", "-o", str(tmp_path / "driver.o"),
                                                    str(src)], str(src))
    assert (tmp_path / "direct.o").read_bytes() == (tmp_path / "driver.o").read_bytes()


def test_a_unit_cc1_fails_is_compiled_by_the_driver_whose_error_is_shown(tmp_path,
                                                                         monkeypatch):
    info = compiler.probe(get_cache())
    direct = direct_link.DirectCompile(info.argv, info.flags)
    if direct.recipe() is None:
        pytest.skip("this compiler's programs are not run directly")
    good, bad = tmp_path / "good.c", tmp_path / "bad.c"
    good.write_text("int nbg_g(int x) { return x + 1; }\n")
    bad.write_text("int nbg_b(int x) { return x + ; }\n")
    units = [(str(tmp_path / "good.o"), str(good)), (str(tmp_path / "bad.o"), str(bad))]
    assert direct.run(units) == [1]
    with pytest.raises(compiler.CompileError, match="expected expression"):
        direct_link.compile_units(info, info.argv + info.flags, units)
    assert direct.recipe() is not None  # a real error: the driver failed too
    false = compiler.which("false")
    key = direct_link._key("compile", direct.cc, direct.flags, ())
    monkeypatch.setitem(direct_link._recipes, key, [false, "|", false])
    direct_link.compile_units(info, info.argv + info.flags, units[:1])
    assert (tmp_path / "good.o").exists() and direct_link._recipes[key] is None


def test_a_compiler_wrapper_sees_every_compilation_and_link(tmp_path):
    info = compiler.probe(get_cache())
    wrapper = tmp_path / "cc"
    wrapper.write_text("#!/bin/sh\nexec %s \"$@\"\n" % info.argv[0])
    wrapper.chmod(0o755)
    assert direct_link.DirectCompile([str(wrapper)], info.flags).recipe() is None
    assert direct_link.DirectLink([str(wrapper)], info.flags + linking.BARE_LINK,
                                  info.libs).recipe() is None
    assert not direct_link._plain_driver(info.argv + ["-O2"])


def test_the_stubs_of_a_killed_process_are_swept_when_old(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(proc.stdout)  # (gone now)
    old, young, live, other = (tmp_path / ("nbgraph-stubs-%s-x" % p)
                               for p in (dead, str(dead) + "0", os.getpid(), "z"))
    for d in (old, young, live, other):
        d.mkdir()
        (d / "stub0.so").write_bytes(b"x")
    for d in (old, live, other):
        os.utime(d, (0, 0))
    now = 2 * lib_stubs.STALE_AFTER
    os.utime(young, (now, now))
    removed = lib_stubs.sweep(str(tmp_path), now=now)
    assert removed == 1 and not old.exists() and young.exists() and live.exists()
    assert other.exists()
