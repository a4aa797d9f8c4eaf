"""The runtime library's key is remembered in the cache directory (threads.runtime_key):
the memo gives the key a fresh computation would, and is never used once any of what
the key depends on changed (a C file, the flags, the compiler)."""

import os
import shutil

import pytest

from nbgraph.core import c_interface
from nbgraph.linkers.c import fastcall, threads
from nbgraph.linkers.c.cache import ModuleCache, get_cache
from nbgraph.linkers.c.compiler import probe


@pytest.fixture
def info(c_cache_dir):
    return probe(get_cache(str(c_cache_dir)))


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return ModuleCache(str(d))


@pytest.fixture
def computed(monkeypatch):
    """Counts the runtime_source() calls (each one is a key computed, not remembered)."""
    calls = []
    real = threads.runtime_source

    def spy(info=None):
        calls.append(info)
        return real(info)
    monkeypatch.setattr(threads, "runtime_source", spy)
    return calls


def fresh_key(cache, info):
    return cache.runtime_key(threads.runtime_source(info), info, threads.RUNTIME_FLAGS)


def test_the_memo_gives_the_computed_key_without_computing_it(cache, info, computed):
    key = threads.runtime_key(cache, info)
    assert len(computed) == 1
    assert os.path.exists(os.path.join(cache.directory, threads.KEY_MEMO))
    assert threads.runtime_key(cache, info) == key
    assert threads.runtime_key(ModuleCache(cache.directory), info) == key  # another process
    assert len(computed) == 1
    assert key == fresh_key(cache, info)


def test_other_flags_or_another_compiler_miss_the_memo(cache, info, computed, monkeypatch):
    key = threads.runtime_key(cache, info)
    monkeypatch.setattr(threads, "RUNTIME_FLAGS", threads.RUNTIME_FLAGS + ["-g"])
    other = threads.runtime_key(cache, info)
    assert len(computed) == 2 and other != key and other == fresh_key(cache, info)
    monkeypatch.undo()
    monkeypatch.setattr(threads, "runtime_source", lambda i=None: computed.append(i) or "")
    monkeypatch.setattr(type(info), "key_text", lambda self: "another compiler")
    assert threads.runtime_key(cache, info) != key
    assert computed[-1] is info


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """The files the memo watches, copied: a test may edit them."""
    root = tmp_path / "package"
    for name in set(threads.KEY_FILES) | set(fastcall.KEY_FILES):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(threads._PACKAGE_DIR, name), target)
    monkeypatch.setattr(threads, "_PACKAGE_DIR", str(root))
    return root


@pytest.mark.parametrize("name", threads.KEY_FILES)
def test_editing_a_source_file_misses_the_memo(cache, info, computed, package_copy, name):
    threads.runtime_key(cache, info)
    threads.runtime_key(cache, info)
    assert len(computed) == 1
    path = package_copy / name
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # saved again, same size
    threads.runtime_key(cache, info)
    assert len(computed) == 2
    with open(path, "a") as f:  # an edit within the same clock tick: another size
        f.write("\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    threads.runtime_key(cache, info)
    assert len(computed) == 3
    threads.runtime_key(cache, info)
    assert len(computed) == 3


def test_a_missing_source_file_is_never_remembered(cache, info, computed, package_copy):
    os.unlink(package_copy / threads.KEY_FILES[0])
    threads.runtime_key(cache, info)
    threads.runtime_key(cache, info)
    assert len(computed) == 2
    assert not os.path.exists(os.path.join(cache.directory, threads.KEY_MEMO))


def test_the_memo_watches_every_file_the_runtime_text_is_read_from(monkeypatch, info):
    read = []
    real = c_interface.c_source

    def spy(package, name):
        read.append(os.path.join(*package.split(".")[1:], name))
        return real(package, name)
    monkeypatch.setattr(c_interface, "c_source", spy)
    monkeypatch.setattr(c_interface, "_SOURCES", {})
    threads.runtime_source(info)
    assert read and set(read) <= set(threads.KEY_FILES)


@pytest.mark.parametrize("text", ["", "garbage", "%s runtime-../x\n", "%s other-key\n",
                                  "0 runtime-abc\n", "\xff\xfe"])
def test_a_damaged_memo_is_ignored_and_replaced(cache, info, computed, text):
    key = threads.runtime_key(cache, info)
    memo = os.path.join(cache.directory, threads.KEY_MEMO)
    stamp = open(memo).read().split()[0]
    with open(memo, "w", encoding="latin-1") as f:
        f.write(text.replace("%s", stamp) if "%s" in text else text)
    assert threads.runtime_key(cache, info) == key
    assert len(computed) == 2
    assert threads.runtime_key(cache, info) == key
    assert len(computed) == 2


def test_a_test_runtime_source_is_never_remembered(cache, info, monkeypatch):
    monkeypatch.setattr(threads, "RUNTIME_SOURCE", "int nbg_rt_version(void) { return 0; }")
    key = threads.runtime_key(cache, info)
    assert key == cache.runtime_key(threads.RUNTIME_SOURCE, info, threads.RUNTIME_FLAGS)
    assert not os.path.exists(os.path.join(cache.directory, threads.KEY_MEMO))


def test_prefetch_runs_the_runtime_load_on_a_plain_thread(monkeypatch):
    import threading as _threading

    ran = _threading.Event()
    monkeypatch.setitem(threads._state, "table", None)
    monkeypatch.setitem(threads._state, "failed", False)
    monkeypatch.setitem(threads._state, "prefetch", None)
    monkeypatch.setattr(threads, "runtime_table", lambda cache, info: ran.set())
    threads.prefetch(None, None)
    done = threads._state["prefetch"]
    assert done is not None
    assert ran.wait(60)
    assert done.acquire(timeout=60)  # released once the load is over
    done.release()
    threads.prefetch(None, None)  # started once
    assert threads._state["prefetch"] is done


def test_the_exit_join_waits_for_the_prefetch_but_not_in_a_forked_child():
    import _thread
    import time

    done = _thread.allocate_lock()
    done.acquire()
    start = time.monotonic()
    threads._join(done, os.getpid() + 1, 30)  # another process's (a child's copy): no wait
    assert time.monotonic() - start < 10
    timer = __import__("threading").Timer(0.05, done.release)
    timer.start()
    threads._join(done, os.getpid(), 30)  # this process's: until the thread is done
    assert not done.locked()
    timer.join()


@pytest.fixture
def extension_keys(monkeypatch):
    """Counts the call-path extension's keys computed (not remembered)."""
    calls = []
    real = fastcall.cache_key

    def spy(source, info):
        calls.append(info)
        return real(source, info)
    monkeypatch.setattr(fastcall, "cache_key", spy)
    return calls


def test_the_extension_key_is_remembered_too(cache, info, extension_keys, package_copy):
    _, got_info, key, source = fastcall._identity(cache)
    assert key == fastcall.cache_key(source(), got_info)  # (counted: 2 so far)
    assert os.path.exists(os.path.join(cache.directory, fastcall.KEY_MEMO))
    assert fastcall._identity(ModuleCache(cache.directory))[2] == key
    assert len(extension_keys) == 2
    for name in fastcall.KEY_FILES:
        path = package_copy / name
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        assert fastcall._identity(cache)[2] == key
    assert len(extension_keys) == 2 + len(fastcall.KEY_FILES)
