"""What the cache refuses to load: files and directories of another user, links
another user controls, and libraries that no longer match their sidecar.

Another user's files are made with ``chown`` to ``nobody`` (uid 65534), so those
tests need root; the decision (refuse with :class:`CacheSecurityError`, naming the
path and the fix, rather than warn and build privately) is documented in
``nbgraph/linkers/c/cache.py``.
"""

import itertools
import os

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import cache as cache_mod
from nbgraph.linkers.c.cache import CacheSecurityError

pytestmark = pytest.mark.needs_cc
NOBODY = 65534
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a file to another user (chown to nobody) needs root")
_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _constants_in_the_c_text(monkeypatch):
    """Each test's constant gives a module no cache has."""
    from nbgraph.tensor.c_code import constants

    monkeypatch.setattr(constants, "ENABLED", False)


def _build(directory, k):
    """Compile and run ``x * k + 1`` with ``directory`` as the cache (a fresh view of
    it: nothing this process loaded from there before is reused)."""
    cache_mod._caches.pop(os.path.abspath(directory), None)
    x = nt.dvector("x")
    with config.change(cache_dir=directory):
        f = ng.function([x], x * k + 1, linker="c")
        out = f(np.arange(3.0))
    assert out.tolist() == (np.arange(3.0) * k + 1).tolist()
    return f


def _private(path):
    path.mkdir(mode=0o700)
    return path


def _k():
    return 2.0 + next(_counter) / 512


@needs_root
def test_a_cache_directory_another_user_owns_is_refused(tmp_path):
    d = _private(tmp_path / "theirs")
    os.chown(d, NOBODY, NOBODY)
    with pytest.raises(CacheSecurityError) as info:
        _build(d, _k())
    message = str(info.value)
    assert str(d) in message and "belongs to user id %d" % NOBODY in message
    assert "NBGRAPH_CACHE_DIR" in message  # the fix
    assert os.listdir(d) == []


@needs_root
@pytest.mark.parametrize("which", [".so", ".meta"])
def test_a_library_or_sidecar_another_user_owns_is_refused(tmp_path, which):
    d = _private(tmp_path / "mixed")
    k = _k()
    path = _build(d, k).program.module.path
    target = path[:-3] + which
    os.chown(target, NOBODY, NOBODY)
    with pytest.raises(CacheSecurityError) as info:
        _build(d, k)
    message = str(info.value)
    assert target in message and "belongs to user id %d" % NOBODY in message
    assert "cache clear" in message  # the fix


@needs_root
@pytest.mark.parametrize("where", ["the directory", "a parent"])
def test_a_cache_directory_reached_through_another_users_link_is_refused(tmp_path, where):
    real = _private(tmp_path / "real")
    link = tmp_path / "link"
    os.symlink(real, link)
    d = link if where == "the directory" else link / "cache"
    os.lchown(link, NOBODY, NOBODY)
    with pytest.raises(CacheSecurityError) as info:
        _build(d, _k())
    message = str(info.value)
    assert str(link) in message and "symbolic link" in message and str(real) in message
    assert os.listdir(real) == []
    os.lchown(link, os.getuid(), os.getgid())  # a link of one's own is fine
    _build(d, _k())


def test_a_library_replaced_after_its_sidecar_was_written_is_refused_and_rebuilt(lab):
    d = lab.new_cache("replaced")
    k1, k2 = 1.0 + 9 / 1024, 1.0 + 10 / 1024
    code = lab.graph_code([k1, k2])
    first = lab.run(code, d)
    so1, so2 = first["path"]
    with open(so2, "rb") as f:
        other = f.read()

    def replace(path):
        """Write ``other`` beside ``path`` and rename it over ``path`` (atomic)."""
        with open(str(d / "other.tmp"), "wb") as f:
            f.write(other)
        os.chmod(d / "other.tmp", 0o700)
        os.rename(d / "other.tmp", path)

    replace(so1)  # another valid library (it computes x * k2 + 1) over the first one
    st = os.stat(so2)  # the second changed in place: same size, same times
    with open(so2, "r+b") as f:
        f.seek(len(other) // 2)
        byte = f.read(1)
        f.seek(len(other) // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(so2, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.path.getsize(so2) == st.st_size
    # the thread-pool runtime (there when C loops may use threads) replaced too
    runtimes = [n for n in os.listdir(d) if n.startswith("runtime-") and n.endswith(".so")]
    for name in runtimes:
        replace(d / name)

    after = lab.run(code, d)
    assert after["result"] == [lab.expected(k1), lab.expected(k2)]
    assert after["stats"]["rebuilt_corrupt"] >= 2  # counts every refusal (lookups retry)
    assert after["stats"]["compiles"] == 2 and after["stats"]["disk_loads"] == 0
    assert after["stats"]["runtime_builds"] == len(runtimes)
    lab.assert_consistent(d)  # republished, whole
    again = lab.run(code, d)
    assert again["stats"]["disk_loads"] == 2 and again["stats"]["compiles"] == 0
