"""The bounded disk cache: NBGRAPH_CACHE_MAX_MB, least-recently-used eviction, cache prune.

Eviction unlinks (library first, then sidecar) and never rewrites a file, so a
process that has a library loaded keeps computing with it, and one that finds a
half-removed entry rebuilds it.
"""

import itertools
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.__main__ import main as cli
from nbgraph.config import config
from nbgraph.linkers.c import cache_limit
from nbgraph.linkers.c.cache import STATS, ModuleCache

_counter = itertools.count(1)


def fake_module(directory, key, size, used):
    """A library and sidecar of ``size`` bytes in all, last used at ``used``."""
    with open(os.path.join(directory, key + ".so"), "wb") as f:
        f.write(b"\0" * (size - 10))
    meta = os.path.join(directory, key + ".meta")
    with open(meta, "wb") as f:
        f.write(b"\0" * 10)
    os.utime(os.path.join(directory, key + ".so"), (used, used))
    os.utime(meta, (used, used))


@pytest.fixture
def private_dir(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return str(d)


def test_prune_removes_least_recently_used_first_down_to_the_low_water_mark(private_dir):
    now = time.time()
    for i in range(10):  # 10 modules of 1000 bytes, k0 the oldest
        fake_module(private_dir, "k%d" % i, 1000, now - 1000 + i * 10)
    fake_module(private_dir, "runtime-abc", 3000, now - 5000)  # always kept
    fake_module(private_dir, "nbg-fastcall-abc", 3000, now - 5000)
    done = cache_limit.prune(private_dir, limit=10000, now=now)
    left = sorted(n for n in os.listdir(private_dir) if n.endswith(".so"))
    # 16000 bytes held, at most 9000 after: the 7 oldest modules go
    assert done["removed"] == 7 and done["freed"] == 7000 and done["bytes"] == 9000
    assert left == ["k7.so", "k8.so", "k9.so", "nbg-fastcall-abc.so", "runtime-abc.so"]
    assert not any(n.startswith("k0") for n in os.listdir(private_dir))  # sidecar too


def test_prune_within_the_limit_or_without_one_removes_nothing(private_dir):
    now = time.time()
    for i in range(3):
        fake_module(private_dir, "k%d" % i, 1000, now - 100)
    assert cache_limit.prune(private_dir, limit=5000, now=now)["removed"] == 0
    assert cache_limit.prune(private_dir, limit=0, now=now)["removed"] == 0  # 0: no limit
    assert len(os.listdir(private_dir)) == 6


def test_a_module_used_moments_ago_is_kept(private_dir):
    now = time.time()
    fake_module(private_dir, "old", 1000, now - 100)
    fake_module(private_dir, "fresh", 1000, now - 0.5)
    done = cache_limit.prune(private_dir, limit=500, now=now)
    assert done["removed"] == 1
    assert os.path.exists(os.path.join(private_dir, "fresh.so"))


def test_leftovers_of_dead_builds_are_removed_and_live_ones_kept(private_dir):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    os.mkdir(os.path.join(private_dir, ".build-%s-abc" % dead))
    open(os.path.join(private_dir, ".tmp-%s-xyz" % dead), "w").close()
    os.mkdir(os.path.join(private_dir, ".build-%d-mine" % os.getpid()))
    old = os.path.join(private_dir, ".build-legacy")
    os.mkdir(old)
    os.utime(old, (time.time() - 2 * cache_limit.STALE_AFTER,) * 2)
    assert cache_limit.remove_stale_temporaries(private_dir) == 3
    assert os.listdir(private_dir) == [".build-%d-mine" % os.getpid()]


def _build(cache_dir):
    """A function whose C module no other call of this helper shares: the graph's
    structure differs (constants alone are kernel arguments, not module source)."""
    n = next(_counter) + 1
    x = nt.dvector("x")
    e = x
    for _ in range(n):
        e = nt.sin(e) * 0.5
    with config.change(cache_dir=cache_dir):
        f = ng.function([x], e, linker="c")

    def want(v):
        for _ in range(n):
            v = np.sin(v) * 0.5
        return v
    return f, want


@pytest.mark.needs_cc
def test_loading_from_disk_records_the_use(private_dir):
    f, k = _build(private_dir)
    key = os.path.basename(f.program.module.path)[:-3]
    meta = os.path.join(private_dir, key + ".meta")
    os.utime(meta, (1000.0, 1000.0))
    again = ModuleCache(private_dir)  # a fresh process's view: nothing in memory
    before = STATS["disk_loads"]
    assert again._load_published(key, lambda lib, key, path: lib) is not None
    assert STATS["disk_loads"] == before + 1
    assert os.stat(meta).st_atime > time.time() - 60  # the access time records the use
    assert os.stat(meta).st_mtime == 1000.0  # the file itself is unchanged


@pytest.mark.needs_cc
def test_builds_keep_the_directory_within_the_limit_and_loaded_modules_keep_working(
        private_dir):
    f, k = _build(private_dir)
    g, k2 = _build(private_dir)
    assert f.program.module.path != g.program.module.path
    v = np.arange(5.0)
    for name in os.listdir(private_dir):  # both used long ago
        if name.endswith((".so", ".meta")) and not name.startswith("runtime-"):
            os.utime(os.path.join(private_dir, name), (1000.0, 1000.0))
    assert cache_limit.wait_pruned(60)  # (finished builds' directories go on a thread)
    held = cache_limit.usage(private_dir)
    with config.change(cache_max_mb=(held - 1) / (1024 * 1024)):
        h, k3 = _build(private_dir)  # its build prunes the two old modules
        assert cache_limit.wait_pruned(60)  # (on a thread, with the limit of then)
    assert not os.path.exists(f.program.module.path)
    assert not os.path.exists(g.program.module.path)
    assert os.path.exists(h.program.module.path)
    # the unlinked libraries stay mapped in this process: f and g still compute
    np.testing.assert_allclose(f(v), k(v), rtol=1e-12)
    np.testing.assert_allclose(g(v), k2(v), rtol=1e-12)
    np.testing.assert_allclose(h(v), k3(v), rtol=1e-12)


@pytest.mark.needs_cc
def test_a_half_evicted_entry_is_rebuilt_never_loaded(private_dir):
    f, k = _build(private_dir)
    key = os.path.basename(f.program.module.path)[:-3]
    os.unlink(os.path.join(private_dir, key + ".meta"))  # eviction caught midway
    again = ModuleCache(private_dir)
    assert again._load_published(key, lambda lib, key, path: lib) is None


def test_cli_info_shows_size_and_limit_and_prune_applies_it(private_dir, capsys):
    now = time.time()
    for i in range(4):
        fake_module(private_dir, "k%d" % i, 100_000, now - 1000 + i)
    with config.change(cache_max_mb=0.25):
        assert cli(["cache", "info", "--dir", private_dir]) == 0
        out = capsys.readouterr().out
        assert "total size: 390.6 KiB" in out and "size limit: 256.0 KiB" in out
        assert cli(["cache", "prune", "--dir", private_dir]) == 0
        out = capsys.readouterr().out
    assert out.startswith("removed 2 modules (195.3 KiB)")
    assert sorted(n for n in os.listdir(private_dir) if n.endswith(".so")) == ["k2.so", "k3.so"]
    assert cli(["cache", "prune", "--dir", private_dir, "--max-mb", "0.1"]) == 0
    assert "removed 2 modules" in capsys.readouterr().out
    with config.change(cache_max_mb=0):
        cli(["cache", "info", "--dir", private_dir])
        assert "size limit: none" in capsys.readouterr().out


def test_builds_measure_only_new_names_and_see_other_processes_modules(private_dir,
                                                                       monkeypatch):
    now = time.time()
    for i in range(4):
        fake_module(private_dir, "k%d" % i, 1000, now - 1000 + i)
    first = cache_limit.prune_if_due(private_dir, limit=10_000, now=now)
    assert first is not None and first["bytes"] == 4000  # a process's first build sweeps
    measured = []
    real = cache_limit._entry_bytes

    def counting(path):  # (a pruning of another cache may run on a thread meanwhile)
        if os.path.dirname(path) == private_dir:
            measured.append(os.path.basename(path))
        return real(path)
    monkeypatch.setattr(cache_limit, "_entry_bytes", counting)
    fake_module(private_dir, "mine", 1000, now - 500)  # published by this process ...
    fake_module(private_dir, "other", 4000, now - 600)  # ... and by another one
    assert cache_limit.prune_if_due(private_dir, limit=10_000, now=now + 1) is None
    assert sorted(measured) == ["mine.meta", "mine.so", "other.meta", "other.so"]
    measured.clear()
    # 9000 bytes now: a lower limit makes the next build evict, oldest first
    done = cache_limit.prune_if_due(private_dir, limit=4_900, now=now + 2)
    assert done is not None and done["bytes"] <= 4_900 * cache_limit.LOW_WATER
    assert done["removed"] >= 1 and not os.path.exists(os.path.join(private_dir, "k0.so"))
    # within the limit: nothing measured again but a temporary; after the interval, all
    os.mkdir(os.path.join(private_dir, ".build-1-x"))
    measured.clear()
    assert cache_limit.prune_if_due(private_dir, limit=10_000, now=now + 3) is None
    assert measured == [".build-1-x"]
    late = cache_limit.prune_if_due(private_dir, limit=10_000,
                                    now=now + 3 + cache_limit.SWEEP_INTERVAL)
    assert late is not None and len(measured) > 1


def test_usage_counts_every_file_and_build_directories(private_dir):
    fake_module(private_dir, "k0", 1000, time.time())
    build = os.path.join(private_dir, ".build-1-x")
    os.mkdir(build)
    with open(os.path.join(build, "nbg.c"), "wb") as f:
        f.write(b"x" * 300)
    os.symlink("/nonexistent", os.path.join(private_dir, "dangling"))
    assert cache_limit.usage(private_dir) == 1300 + os.lstat(
        os.path.join(private_dir, "dangling")).st_size
    assert cache_limit.usage(os.path.join(private_dir, "missing")) == 0


def test_function_records_are_evicted_like_modules_oldest_first(private_dir):
    now = time.time()
    fake_module(private_dir, "k0", 1000, now - 900)
    for i, age in enumerate((1000, 100)):  # record f0 older than k0, f1 newer
        path = os.path.join(private_dir, "function-f%d.rec" % i)
        with open(path, "wb") as f:
            f.write(b"\0" * 1000)
        os.utime(path, (now - age, now - age))
    done = cache_limit.prune(private_dir, limit=2500, now=now)
    # 3000 bytes held, at most 2250 after: the oldest entry (record f0) goes
    assert done["removed"] == 1 and done["freed"] == 1000
    assert sorted(os.listdir(private_dir)) == ["function-f1.rec", "k0.meta", "k0.so"]


@pytest.mark.needs_cc
def test_a_process_exiting_right_after_its_build_still_prunes(private_dir):
    for k in range(4):  # old modules, 4 x 100 kB
        fake_module(private_dir, "old%d" % k, 100_000, 1000.0 + k)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(ng.__file__)))
    env = dict(os.environ, NBGRAPH_CACHE_DIR=private_dir, NBGRAPH_CACHE_MAX_MB="0.25",
               PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = ("import numpy as np, nbgraph as ng, nbgraph.tensor as nt\n"
            "x = nt.dvector('x')\n"
            "f = ng.function([x], x * %r, linker='c')\n"
            "print(f(np.ones(2))[0])\n" % (1.0 + next(_counter) / 997.0))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=repo, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    # the pruning after its build ran on a thread, and the exit waited for it
    left = [n for n in os.listdir(private_dir) if n.startswith("old")]
    assert len(left) < 8, left


def test_a_finished_build_directory_is_removed_off_the_main_thread(private_dir):
    """On the main thread the removal is queued for the pruning thread (a new
    module's first result does not wait for it); on another thread it is done
    at once; either way it is gone once :func:`wait_pruned` returns."""
    import threading

    queued = os.path.join(private_dir, ".build-%d-a" % os.getpid())
    os.makedirs(os.path.join(queued, "sub"))
    with open(os.path.join(queued, "sub", "x.c"), "w") as f:
        f.write("int x;\n")
    cache_limit.remove_after_build(queued)
    assert cache_limit.wait_pruned(60)
    assert not os.path.exists(queued)
    other = os.path.join(private_dir, ".build-%d-b" % os.getpid())
    os.mkdir(other)
    seen = []

    def build_thread():
        cache_limit.remove_after_build(other)
        seen.append(os.path.exists(other))
    t = threading.Thread(target=build_thread)
    t.start()
    t.join()
    assert seen == [False]
