"""Support objects: Dot's fixed C compiled once per cache directory and linked
into the modules that need it (nbgraph/linkers/c/support.py), and the bare link
of kernel modules (linking.link)."""

import itertools
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import cache as cache_mod
from nbgraph.linkers.c import codegen, compiler, linking, support
from nbgraph.linkers.c.cache import get_cache
from nbgraph.tensor.c_code import dot

pytestmark = pytest.mark.needs_cc

_counter = itertools.count()


def _fresh_dir(tmp_path, c_cache_dir, name):
    """A new cache directory holding only the session's compiler probe and
    runtime (so nothing but the modules and support objects is built)."""
    d = tmp_path / name
    d.mkdir(mode=0o700)
    for entry in os.listdir(c_cache_dir):
        if entry.startswith(("probe-", "runtime-")):
            shutil.copy(os.path.join(c_cache_dir, entry), d / entry)
    return d


def _objects(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("support-")
                  and n.endswith(".o"))


def _mm_graph(k):
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    return [A, B], nt.tanh(nt.dot(A, B) * k)


def test_the_markers_of_dot_are_the_support_objects():
    text = dot.SUPPORT_OBJECT % ("BODY", "EXPORTS")
    assert text == support.section("BODY", "EXPORTS")


def test_a_dot_module_links_one_object_that_a_second_module_reuses(tmp_path, c_cache_dir):
    d = _fresh_dir(tmp_path, c_cache_dir, "reuse")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 3))
    with config.change(cache_dir=d):
        k = 1.0 + next(_counter) / 977.0
        f = ng.function(*_mm_graph(k), linker="c")
        np.testing.assert_allclose(f(a, b), np.tanh(a @ b * k), rtol=1e-12)
        objects = _objects(d)
        assert len(objects) == 1
        assert os.path.exists(d / (objects[0][:-2] + ".meta"))
        built = support.STATS["built"]
        # a structurally different graph of the same dtype: same object, not rebuilt
        A, B, C = nt.dmatrix("A"), nt.dmatrix("B"), nt.dmatrix("C")
        g = ng.function([A, B, C], nt.exp(nt.dot(A, B)) + nt.dot(A, B).sum() * C,
                        linker="c")
        c = rng.standard_normal((7, 3))
        np.testing.assert_allclose(g(a, b, c), np.exp(a @ b) + (a @ b).sum() * c,
                                   rtol=1e-12)
        assert _objects(d) == objects and support.STATS["built"] == built


def _results_bits(d):
    rng = np.random.default_rng(1)
    cases = [((33, 70), (70, 19)), ((1, 300), (300, 1)), ((64, 64), (64, 64)), ((0, 4), (4, 3))]
    out = []
    with config.change(cache_dir=d):
        A, B = nt.dmatrix("A"), nt.dmatrix("B")
        v, w = nt.dvector("v"), nt.dvector("w")
        f = ng.function([A, B, v, w], [nt.dot(A, B), nt.dot(A, v), nt.dot(w, B)], linker="c")
        for sa, sb in cases:
            a, b = rng.standard_normal(sa), rng.standard_normal(sb)
            v, w = rng.standard_normal(sa[1]), rng.standard_normal(sb[0])
            out += [r.tobytes() for r in f(a, b, v, w)]
            out += [r.tobytes() for r in f(np.asfortranarray(a), b[:, ::-1], v[::-1], w)]
    return out


def test_results_are_bit_identical_to_the_inline_support_code(tmp_path, c_cache_dir,
                                                               monkeypatch):
    linked = _results_bits(_fresh_dir(tmp_path, c_cache_dir, "linked"))
    assert support.STATS["built"] >= 1
    monkeypatch.setattr(support, "split_objects", lambda parts, info, extra=(): (parts, []))
    inline_dir = _fresh_dir(tmp_path, c_cache_dir, "inline")
    inline = _results_bits(inline_dir)
    assert not _objects(inline_dir)
    assert linked == inline


def test_a_damaged_object_is_compiled_again_not_linked(tmp_path, c_cache_dir):
    d = _fresh_dir(tmp_path, c_cache_dir, "damaged")
    a, b = np.ones((3, 4)), np.ones((4, 2))
    with config.change(cache_dir=d):
        ng.function(*_mm_graph(2.0 + next(_counter) / 977.0), linker="c")
    (name,) = _objects(d)
    with open(d / name, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xfe")
    built = support.STATS["built"]
    cache_mod._caches.pop(str(d), None)
    A, B = nt.dmatrix("A"), nt.dmatrix("B")
    with config.change(cache_dir=d):  # another structure: a new module
        f = ng.function([A, B], nt.sin(nt.dot(A, B)), linker="c")
        np.testing.assert_allclose(f(a, b), np.sin(a @ b), rtol=1e-12)
    assert support.STATS["built"] == built + 1
    assert get_cache(d).verify_library(str(d / name), str(d / (name[:-2] + ".meta")))


def test_blocks_stay_inline_when_standalone_or_their_guards_are_used_outside():
    info = compiler.probe(get_cache())
    body = "#ifndef NBG_T_GUARD\n#define NBG_T_GUARD\nstatic int t_f(int a) { return a; }\n#endif"
    block = support.section(body, "int t_f(int a);")
    head = codegen.prelude(info)
    parts, objects = support.split_objects([head + block + "int k(void) { return t_f(1); }"],
                                           info)
    assert len(objects) == 1 and "nbg_sup_" in parts[0] and "static int t_f" not in parts[0]
    assert "static int t_f" in objects[0].source and "#if 0" not in objects[0].source
    for other in (codegen.as_standalone(head, info) + block,
                  head + "#ifndef NBG_T_GUARD\n#endif\n" + block):
        parts, objects = support.split_objects([other], info)
        assert parts == [other] and objects == []


def test_a_bare_linked_module_resolves_every_symbol_in_a_bare_child(tmp_path, call_nbg_t):
    info = compiler.probe(get_cache())
    math = codegen.math_block({"exp", "pow", "tanh"})
    source = codegen.prelude(info, math=math) + (
        'NBG_EXPORT double nbg_t(double x) {\n'
        '    char b[64]; volatile unsigned __int128 d = 3;\n'
        '    snprintf(b, sizeof b, "%g", x);\n'
        '    return exp(x) + pow(x, 1.5) + tanh(x) + (double)strlen(b)\n'
        '        + (double)((unsigned __int128)x / d);\n}\n')
    out = tmp_path / "bare.so"
    compiler.build_library(info, source, str(tmp_path / "bare.c"), str(out))
    expected = np.exp(2.0) + 2.0 ** 1.5 + np.tanh(2.0) + 1 + 0
    assert call_nbg_t(out) == pytest.approx(expected, rel=1e-12)
    if sys.platform.startswith("linux"):
        assert linking._bare["ok"] is True


def test_the_probe_check_runs_the_library_in_a_preloaded_true(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    good = tmp_path / "good.so"
    compiler.build_library(info, "#include <stdint.h>\n" + compiler.probe_function(info.mvec),
                           str(tmp_path / "good.c"), str(good))
    calls = []
    run = subprocess.run

    def spy(cmd, *args, **kw):
        calls.append(cmd[0])
        return run(cmd, *args, **kw)
    monkeypatch.setattr(subprocess, "run", spy)
    assert compiler.loads_and_runs(str(good))
    assert calls == [compiler.which("true")]  # no interpreter was needed
    bad = tmp_path / "bad.so"  # the test function gives a wrong answer
    compiler.build_library(info, "#include <stdint.h>\n" + compiler.probe_function(
        info.mvec).replace("return 42;", "return 41;"), str(tmp_path / "bad.c"), str(bad))
    assert not compiler.loads_and_runs(str(bad))
    plain = tmp_path / "plain.so"  # no self-test: the interpreter's check decides
    compiler.build_library(info, "#include <stdint.h>\n" + compiler.probe_function(
        info.mvec).split("char *getenv")[0], str(tmp_path / "plain.c"), str(plain))
    calls.clear()
    assert compiler.loads_and_runs(str(plain))
    assert calls == [compiler.which("true"), sys.executable]


def test_a_failing_bare_link_falls_back_to_the_usual_one(tmp_path, monkeypatch):
    info = compiler.probe(get_cache())
    monkeypatch.setattr(linking, "BARE_LIBS", ["-lnbgraph_no_such_library"])
    monkeypatch.setitem(linking._bare, "ok", None)
    out = tmp_path / "m.so"
    text = codegen.prelude(info) + "NBG_EXPORT int nbg_t(void) { return 3; }\n"
    compiler.build_library(info, text, str(tmp_path / "m.c"), str(out))
    assert out.exists() and linking._bare["ok"] is False
    monkeypatch.setitem(linking._bare, "ok", True)  # it worked before: an error is an error
    with pytest.raises(compiler.CompileError, match="nbgraph_no_such_library"):
        compiler.build_library(info, codegen.prelude(info) + "int nbg_u(void) { return 4; }\n",
                               str(tmp_path / "n.c"), str(tmp_path / "n.so"))
