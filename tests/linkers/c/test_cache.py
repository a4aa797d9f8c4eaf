"""The compiled-module cache: reuse in memory and on disk, corruption, races, permissions.

Each test builds a graph with a unique constant, so its module is new to the
session's cache directory whatever ran before.
"""

import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import background, cache_limit
from nbgraph.linkers.c import cache as cache_mod
from nbgraph.linkers.c import fastcall
from nbgraph.linkers.c.cache import CacheSecurityError, load_record

pytestmark = pytest.mark.needs_cc


@pytest.fixture(autouse=True)
def _fastcall_loaded(c_cache_dir):
    """Load the C call path's extension from the session cache first: the
    directories these tests inspect then hold compiled modules only."""
    fastcall.get()


def _libraries(directory):
    """The compiled modules in ``directory`` (not the C call path's extension nor
    the thread-pool runtime)."""
    return [n for n in os.listdir(directory)
            if n.endswith(".so") and not n.startswith(("nbg-fastcall-", "runtime-"))]

_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _constants_in_the_c_text(monkeypatch):
    """Each test's unique constant must give a module no cache has."""
    from nbgraph.tensor.c_code import constants

    monkeypatch.setattr(constants, "ENABLED", False)


def unique_graph_code(tag):
    """Python source building f (linker c) and printing its result and the cache counters."""
    k = 1.0 + next(_counter) / 1000.0 + (hash(tag) % 1000) / 1e7
    return f"""
import time, json
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import cache
from nbgraph.tensor.c_code import constants
constants.ENABLED = False  # the unique constant gives a module no cache has
x, y = nt.dvector("x"), nt.dvector("y")
t0 = time.perf_counter()
f = ng.function([x, y], nt.exp(x) * {k!r} + y, linker="c")
r = f(np.arange(4.0), np.ones(4))
t1 = time.perf_counter()
print(json.dumps({{"result": r.tolist(), "stats": cache.STATS, "seconds": t1 - t0,
                  "kinds": f.program.kinds, "path": f.program.module.path}}))
""", k


def _run(python_process, code, cache_dir=None):
    proc = python_process(code, cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _listing(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        st = os.stat(os.path.join(directory, name))
        out[name] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def test_same_graph_in_one_process_compiles_once():
    x = nt.dvector("x")
    k = 2.0 + next(_counter) / 997.0
    before = dict(cache_mod.STATS)
    f1 = ng.function([x], nt.sin(x) * k, linker="c")
    f2 = ng.function([x], nt.sin(x) * k, linker="c")
    g = nt.dvector("g")
    f3 = ng.function([g], nt.sin(g) * k, linker="c")  # equal structure, other variables
    assert cache_mod.STATS["compiles"] - before["compiles"] == 1
    assert f1.program.module is f2.program.module is f3.program.module
    np.testing.assert_allclose(f3(np.arange(3.0)), np.sin(np.arange(3.0)) * k)


def test_a_second_process_compiles_nothing(python_process, tmp_path):
    # A directory of its own: background compiles started by earlier tests of this
    # session may still publish into the session's directory while it is listed.
    private = tmp_path / "cache"
    private.mkdir(mode=0o700)
    code, k = unique_graph_code("second")
    first = _run(python_process, code, private)
    assert first["stats"]["compiles"] == 1
    before = _listing(private)
    second = _run(python_process, code, private)
    assert second["stats"]["compiles"] == 0
    assert second["stats"]["disk_loads"] == 1
    assert second["result"] == first["result"]
    assert second["kinds"] == ["c"]
    assert _listing(private) == before  # nothing written, replaced or touched
    np.testing.assert_allclose(first["result"], np.exp(np.arange(4.0)) * k + 1)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "missing_sidecar", "bad_sidecar"])
def test_a_corrupt_library_is_rebuilt(python_process, c_cache_dir, damage):
    code, k = unique_graph_code("corrupt-" + damage)
    first = _run(python_process, code)
    so = first["path"]
    meta = so[:-3] + ".meta"
    if damage == "truncate":
        with open(so, "r+b") as f:
            f.truncate(os.path.getsize(so) // 2)
    elif damage == "garbage":
        size = os.path.getsize(so)
        with open(so, "wb") as f:
            f.write(os.urandom(size))
    elif damage == "missing_sidecar":
        os.unlink(meta)
    else:
        with open(meta, "w") as f:
            f.write("{not a record")
    again = _run(python_process, code)
    assert again["stats"]["compiles"] == 1
    assert again["result"] == first["result"]
    with open(meta, "rb") as f:
        record = load_record(f.read())
    assert record["size"] == os.path.getsize(so)
    third = _run(python_process, code)  # the repaired entry is used as it is
    assert third["stats"]["compiles"] == 0


def test_four_processes_racing_on_one_graph(c_cache_dir, tmp_path):
    race_dir = tmp_path / "race"
    race_dir.mkdir(mode=0o700)
    # Reuse the session's compiler probe, thread runtime and call-path extension: the
    # race is about one module, and four processes each building those too on two
    # busy cores could outlast the exit-time join of a background build.
    for name in os.listdir(c_cache_dir):
        if name.startswith(("probe-", "runtime-", "nbg-fastcall-")):
            shutil.copy(os.path.join(c_cache_dir, name), race_dir / name)
    code, k = unique_graph_code("race")
    env = dict(os.environ, NBGRAPH_CACHE_DIR=str(race_dir))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(ng.__file__)))
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=repo)
             for _ in range(4)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["result"] == results[0]["result"] for r in results)
    libraries = _libraries(race_dir)
    assert len(libraries) == 1
    assert not [n for n in os.listdir(race_dir) if n.startswith(".")]  # no temporaries left
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, cwd=repo, timeout=300)
    assert json.loads(after.stdout.strip().splitlines()[-1])["stats"]["compiles"] == 0


def test_cache_directory_is_created_private(tmp_path):
    target = tmp_path / "made" / "by" / "nbgraph"
    x = nt.dvector("x")
    k = 3.0 + next(_counter) / 991.0
    with config.change(cache_dir=target):
        f = ng.function([x], x * k, linker="c")
        np.testing.assert_allclose(f(np.ones(2)), [k, k])
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700
    # Background builds (the call-path extension) and the removal of a finished
    # build's private directory run on other threads: an entry listed here may
    # be gone when it is looked at, which is not a finding.
    background.wait_all(timeout=120)
    cache_limit.wait_pruned(timeout=60)
    for name in os.listdir(target):
        try:
            mode = os.stat(target / name).st_mode
        except FileNotFoundError:
            assert name.startswith(".build"), name
            continue
        assert not mode & (stat.S_IWGRP | stat.S_IWOTH), name


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o720])
def test_a_cache_directory_others_can_write_is_refused(tmp_path, mode):
    bad = tmp_path / "shared-cache"
    bad.mkdir()
    os.chmod(bad, mode)
    x = nt.dvector("x")
    with config.change(cache_dir=bad):
        with pytest.raises(CacheSecurityError, match="shared-cache") as info:
            ng.function([x], x * (4.0 + next(_counter) / 983.0), linker="c")
    assert "chmod 700" in str(info.value)


def test_a_library_others_can_write_is_refused(tmp_path, c_cache_dir):
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    for name in os.listdir(c_cache_dir):
        if name.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, name), d / name)
    x = nt.dvector("x")
    k = 5.0 + next(_counter) / 977.0
    with config.change(cache_dir=d):
        ng.function([x], nt.cos(x) * k, linker="c")
    so = [n for n in os.listdir(d) if n.endswith(".so")][0]
    os.chmod(d / so, 0o766)
    cache_mod._caches.pop(str(d), None)  # forget what this process loaded
    with config.change(cache_dir=d):
        with pytest.raises(CacheSecurityError, match="can be written"):
            ng.function([x], nt.cos(x) * k, linker="c")


def test_a_symlinked_library_is_refused(tmp_path, c_cache_dir):
    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    for name in os.listdir(c_cache_dir):
        if name.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, name), d / name)
    x = nt.dvector("x")
    k = 6.0 + next(_counter) / 971.0
    with config.change(cache_dir=d):
        ng.function([x], nt.tan(x) * k, linker="c")
    so = [n for n in os.listdir(d) if n.endswith(".so")][0]
    os.rename(d / so, tmp_path / "elsewhere.so")
    os.symlink(tmp_path / "elsewhere.so", d / so)
    cache_mod._caches.pop(str(d), None)
    with config.change(cache_dir=d):
        with pytest.raises(CacheSecurityError, match="symbolic"):
            ng.function([x], nt.tan(x) * k, linker="c")


def test_cache_command_line_info_and_clear(tmp_path, c_cache_dir):
    d = tmp_path / "cli"
    d.mkdir(mode=0o700)
    for name in os.listdir(c_cache_dir):
        if name.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, name), d / name)
    x = nt.dvector("x")
    with config.change(cache_dir=d):
        for j in range(2):
            ng.function([x], x * (7.0 + j + next(_counter) / 967.0), linker="c")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(ng.__file__)))
    env = dict(os.environ, NBGRAPH_CACHE_DIR=str(d))
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    run = lambda *a: subprocess.run([sys.executable, "-m", "nbgraph", "cache", *a],  # noqa: E731
                                    capture_output=True, text=True, env=env, cwd=repo,
                                    timeout=120)
    info = run("info")
    assert info.returncode == 0, info.stderr
    assert str(d) in info.stdout
    assert "entries:    2 compiled modules" in info.stdout
    assert "total size:" in info.stdout
    cleared = run("clear")
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    assert not [n for n in os.listdir(d) if n.endswith((".so", ".meta"))]
    assert "entries:    0 compiled modules" in run("info").stdout


def test_first_call_in_a_fresh_process_with_a_warm_cache_is_fast(python_process):
    code, _ = unique_graph_code("warm")
    _run(python_process, code)
    timings = [_run(python_process, code)["seconds"] for _ in range(2)]
    assert min(timings) < 2.0  # generous: the figure itself is reported by make bench
    time.sleep(0)
