"""Units compiled ahead (nbgraph.linkers.c.prestart): a build that wants a unit
started with the same command and text waits for it and uses its object."""

import os

import pytest

from nbgraph.linkers.c import compiler, direct_link, prestart
from nbgraph.linkers.c.cache import ModuleCache

_UNIT = "int nbg_prestart_%s(int x) { return x + %d; }\n"


@pytest.fixture
def cc_flags():
    argv = compiler.find_compiler()
    return argv + ["-O1", "-fPIC"]


@pytest.fixture(autouse=True)
def _clean():
    prestart.forget()
    yield
    prestart.forget()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _builds(directory):
    return [n for n in os.listdir(directory) if n.startswith(".build-")]


def test_a_started_unit_is_taken_not_compiled_again(tmp_path, cc_flags):
    cache = ModuleCache(tmp_path / "cache")
    texts = [_UNIT % ("a", 1), _UNIT % ("b", 2)]
    assert prestart.start(cache, cc_flags, texts, stem="t") == 2
    assert prestart.pending() == 2
    src = tmp_path / "a.c"
    _write(src, texts[0])
    other = tmp_path / "c.c"
    _write(other, _UNIT % ("c", 3))
    units = [(str(tmp_path / "a.o"), str(src)), (str(tmp_path / "c.o"), str(other))]
    rest = prestart.take(cc_flags, units)
    assert rest == units[1:]  # the unit nobody started is left to compile
    assert (tmp_path / "a.o").stat().st_size > 0
    assert prestart.pending() == 1
    assert prestart.take(cc_flags[:-1], [(str(tmp_path / "b.o"), str(src))]) != []  # flags
    prestart.forget()  # the unit nobody took is stopped, its directory removed
    assert prestart.pending() == 0 and _builds(cache.directory) == []


def test_a_failed_unit_is_compiled_by_the_build_which_reports_the_error(tmp_path, cc_flags):
    cache = ModuleCache(tmp_path / "cache")
    bad = "int nbg_prestart_bad(void) { return undeclared_name; }\n"
    assert prestart.start(cache, cc_flags, [bad]) == 1
    src = tmp_path / "bad.c"
    _write(src, bad)
    units = [(str(tmp_path / "bad.o"), str(src))]
    assert prestart.take(cc_flags, units) == units
    assert _builds(cache.directory) == []  # taken (failed): its directory went with it
    info = compiler.CompilerInfo(cc_flags[:1], "v", [], [], False)
    with pytest.raises(compiler.CompileError, match="undeclared_name"):
        direct_link.compile_units(info, cc_flags, units)


def test_nothing_starts_where_the_cache_cannot_be_written(tmp_path, cc_flags):
    cache = ModuleCache(tmp_path / "cache")
    cache._unwritable = "read-only"
    assert prestart.start(cache, cc_flags, [_UNIT % ("a", 1)]) == 0
    assert prestart.pending() == 0


def test_a_new_module_s_program_is_made_while_its_compiler_runs(tmp_path, monkeypatch):
    import numpy as np

    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.config import config
    from nbgraph.linkers import meanwhile
    from nbgraph.linkers.c.program import CProgram

    import threading

    from nbgraph.linkers.c.background import wait_all

    events, caller = [], threading.get_ident()
    run, prepare = meanwhile.run, CProgram.prepare_install

    def spy_run():  # (this thread's builds only: not the runtime's or the extension's)
        if threading.get_ident() == caller:
            events.append("compilers started")
        run()
        if threading.get_ident() == caller:
            events.append("waiting for them")

    def spy_prepare(self):
        events.append("program made")
        return prepare(self)

    x, y = nt.dvector("x"), nt.dvector("y")
    with config.change(cache_dir=tmp_path / "cache"):  # (an empty cache: it compiles)
        ng.function([x], nt.cos(x) - 1.0, linker="c")(np.ones(3))  # (the runtime is built)
        wait_all(120)
        monkeypatch.setattr(meanwhile, "run", spy_run)
        monkeypatch.setattr(CProgram, "prepare_install", spy_prepare)
        f = ng.function([x, y], nt.exp(x) * y + nt.sin(y), linker="c")
    assert events[:3] == ["compilers started", "program made", "waiting for them"], events
    a, b = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    np.testing.assert_allclose(f(a, b), np.exp(a) * b + np.sin(b), rtol=1e-12)
    assert f.program.kinds == ["c"] * len(f.program.nodes)


def test_private_directories_are_made_and_removed_like_tempfile_and_shutil_do(tmp_path):
    from nbgraph.linkers.c.cache_limit import remove_tree
    from nbgraph.linkers.c.publish import private_directory

    made = {private_directory(str(tmp_path), ".build-1-") for _ in range(20)}
    assert len(made) == 20
    for path in made:
        assert os.path.basename(path).startswith(".build-1-")
        assert os.stat(path).st_mode & 0o777 == 0o700
    path = made.pop()
    os.makedirs(os.path.join(path, "sub", "deeper"))
    _write(os.path.join(path, "sub", "deeper", "a.o"), "x")
    _write(os.path.join(path, "b.c"), "y")
    outside = tmp_path / "outside"
    outside.mkdir()
    _write(outside / "kept", "z")
    os.symlink(outside, os.path.join(path, "link"))  # removed, never followed
    remove_tree(path)
    assert not os.path.exists(path) and (outside / "kept").exists()
    remove_tree(path)  # (gone already: nothing to do, no error)


def test_a_background_compilation_makes_the_kernel_calls_while_its_compiler_runs(
        tmp_path, monkeypatch):
    import threading

    import numpy as np

    import nbgraph as ng
    import nbgraph.tensor as nt
    from nbgraph.config import config
    from nbgraph.linkers.c import fastcall
    from nbgraph.linkers.c.program import CProgram

    threads = []
    prepare = CProgram.prepare_early

    def spy(self):
        threads.append(threading.current_thread().name)
        prepare(self)
        assert self._prepared is not None or fastcall.loaded() is not None

    monkeypatch.setattr(CProgram, "prepare_early", spy)
    x, y = nt.dvector("x"), nt.dvector("y")
    with config.change(cache_dir=tmp_path / "cache"):
        f = ng.function([x, y], nt.cos(x) * y - nt.exp(y), linker="cvm")
        assert f.program.wait_compiled(60)
    assert threads == ["nbgraph-c-compiler"]
    assert "_prepared" not in f.program.__dict__  # used by the install
    a, b = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    np.testing.assert_allclose(f(a, b), np.cos(a) * b - np.exp(b), rtol=1e-12)
    assert "c" in f.program.kinds
