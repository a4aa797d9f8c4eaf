"""The compiler probe's id is remembered per process while the compiler binary is
unchanged (one ``os.stat``, which follows links), and a known probe record is read
once per lookup."""

import os

from nbgraph.linkers.c import compiler
from nbgraph.linkers.c.cache import ModuleCache


def _tool(path, text):
    path.write_text("#!/bin/sh\n# %s\nexit 0\n" % text)
    path.chmod(0o755)
    return str(path)


def test_the_id_is_remembered_until_the_binary_or_its_link_changes(tmp_path, monkeypatch):
    real = _tool(tmp_path / "cc-real", "one")
    link = tmp_path / "cc"
    os.symlink(real, link)
    argv = [str(link), "-m64"]
    first = compiler._probe_id(argv)
    resolved = []
    real_realpath = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p: resolved.append(p) or real_realpath(p))
    assert compiler._probe_id(argv) == first and resolved == []  # remembered
    assert compiler._probe_id([str(link), "-m32"]) != first  # other arguments
    st = os.stat(real)
    _tool(tmp_path / "cc-real", "two, a longer text")  # replaced in place
    os.utime(real, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    second = compiler._probe_id(argv)
    assert second != first and resolved
    other = _tool(tmp_path / "cc-other", "three")  # the link repointed
    os.unlink(link)
    os.symlink(other, link)
    assert compiler._probe_id(argv) not in (first, second)
    assert compiler._probe_id(argv) == compiler._compute_probe_id(argv)


def test_a_recorded_probe_is_read_once(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    cache = ModuleCache(str(d))
    argv = compiler.find_compiler()
    info = compiler.probe(cache, argv)  # in this process's memory...
    pid = compiler._probe_id(argv)
    cache.write_probe(pid, info.as_dict())
    monkeypatch.delitem(compiler._probed, pid)  # ... forgotten, as in a fresh process
    monkeypatch.delitem(compiler._threads, pid, raising=False)  # (nor a probe thread)
    reads = []
    real_read = cache.read_probe
    monkeypatch.setattr(cache, "read_probe", lambda p: reads.append(p) or real_read(p))
    found = compiler.probe_nowait(cache, argv)
    assert found.confirmed and found.key_text() == info.key_text()
    assert reads == [pid]
