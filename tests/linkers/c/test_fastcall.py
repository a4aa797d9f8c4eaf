"""The C call path (nbgraph/linkers/c/_fastcall.c): values, checks, errors, output
reuse, and what happens when the extension cannot be built or its file is bad."""

import gc
import os
import shutil
import stat
import threading
import warnings
import weakref

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import cache as cache_mod
from nbgraph.linkers.c import cache_limit, fastcall
from nbgraph.linkers.c.cache import CacheSecurityError
from nbgraph.linkers.profile import ProfileStats

pytestmark = pytest.mark.needs_cc


@pytest.fixture(autouse=True)
def _loaded(c_cache_dir):
    if fastcall.get() is None:  # e.g. Python's C headers are not installed
        pytest.skip("the C call path is unavailable: %s"
                    % (fastcall._state["failed"] or "NBGRAPH_C_FASTCALL=0"))


def _is_c(f):
    return type(type(f).__call__).__name__ == "Kernel"


def _ptr(a):
    return a.__array_interface__["data"][0]


def _private_dir(tmp_path, c_cache_dir, name):
    d = tmp_path / name
    d.mkdir(mode=0o700)
    for entry in os.listdir(c_cache_dir):  # reuse the session's compiler probe
        if entry.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, entry), d / entry)
    return d


@pytest.mark.parametrize("trust", [False, True])
def test_values_match_numpy(trust):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    f = ng.function([x, y], nt.exp(x) * y - x / 3.0, linker="c", trust_input=trust)
    assert _is_c(f)
    rng = np.random.default_rng(0)
    for shape_a, shape_b in [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((1, 5), (2, 5)),
                             ((0, 3), (1, 3)), ((200, 300), (200, 300))]:
        a, b = rng.random(shape_a), rng.random(shape_b)
        np.testing.assert_allclose(f(a, b), np.exp(a) * b - a / 3.0, rtol=1e-12,
                                   atol=1e-15)
    s = nt.dscalar("s")
    g = ng.function([x, s], [x * s], linker="c", trust_input=trust)
    out = g(np.ones((2, 2)), np.array(3.0))
    assert isinstance(out, list) and len(out) == 1
    np.testing.assert_array_equal(out[0], np.full((2, 2), 3.0))
    v = nt.dvector("v")
    h = ng.function([v], v.sum(), linker="c", trust_input=trust)  # a prepare-hook kernel
    assert _is_c(h)
    assert float(h(np.arange(5.0))) == 10.0


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_reductions_compute_their_output_shape_in_c(axis):
    m, v = nt.dmatrix("m"), nt.dvector("v")
    a = np.arange(12.0).reshape(3, 4)
    f = ng.function([m], m.sum(axis=axis), linker="c")
    g = ng.function([m, v], (m * v).max(axis=axis), linker="c")  # a fused reduction
    assert _is_c(f)
    np.testing.assert_array_equal(f(a), a.sum(axis=axis))
    np.testing.assert_array_equal(f(a[:, ::-1]), a[:, ::-1].sum(axis=axis))
    np.testing.assert_array_equal(f(np.zeros((0, 4))), np.zeros((0, 4)).sum(axis=axis))
    b = np.arange(4.0) - 2
    np.testing.assert_array_equal(g(a, b), (a * b).max(axis=axis))
    if axis == 0:
        ptr = _ptr(f(a))
        assert _ptr(f(a + 1)) == ptr  # a dropped result is written again
        held = f(a)
        np.testing.assert_array_equal(f(a * 0), [0, 0, 0, 0])
        np.testing.assert_array_equal(held, a.sum(axis=0))


def test_an_input_used_twice_and_reordered():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], y * y - x, linker="c")
    np.testing.assert_array_equal(f(np.ones(3), np.arange(3.0)), np.arange(3.0) ** 2 - 1)


def test_strided_misaligned_and_converted_inputs():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], x - y, linker="c")
    a = np.arange(10.0)
    np.testing.assert_array_equal(f(a[::2], a[::-2]), a[::2] - a[::-2])
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)[1:].view(np.float64)  # misaligned data
    raw[:] = [1, 2, 3, 4]
    assert not raw.flags.aligned
    np.testing.assert_array_equal(f(raw, raw), np.zeros(4))
    np.testing.assert_array_equal(f([1, 2], np.ones(2, dtype=np.float32)), [0, 1])
    np.testing.assert_array_equal(f(np.arange(3.0).astype(">f8"), np.zeros(3)), [0, 1, 2])
    np.testing.assert_array_equal(f(np.ma.masked_array([1.0, 2.0]), np.ones(2)), [0, 1])
    m = nt.dmatrix("m")
    g = ng.function([m], m * 2, linker="c")
    b = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(g(b.T), b.T * 2)
    np.testing.assert_array_equal(g(b[:, ::-3]), b[:, ::-3] * 2)


def test_refused_arguments_raise_the_usual_errors():
    x = nt.dvector("x")
    f = ng.function([x], x + 1, linker="c")
    with pytest.raises(TypeError, match="bad argument 0 \\(x\\)"):
        f(np.ones((2, 2)))
    with pytest.raises(TypeError, match="bad argument 0"):
        f(np.ones(3, dtype=np.complex128))
    with pytest.raises(TypeError, match="expects 1 arguments"):
        f(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="expects 1 arguments"):
        f()
    np.testing.assert_array_equal(f(x=np.ones(2)), [2, 2])
    t = ng.function([x], x + 1, linker="c", trust_input=True)
    assert _is_c(t)
    with pytest.raises(TypeError, match="dtype float64"):
        t(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match="ndarray"):
        t([1.0, 2.0])
    with pytest.raises(TypeError, match="1 dimensions"):
        t(np.ones((2, 2)))


def test_errors_name_the_node():
    x, y = nt.dvector("x"), nt.dvector("y")
    for trust in (False, True):
        f = ng.function([x, y], x + y, linker="c", trust_input=trust)
        with pytest.raises(ValueError, match="broadcast") as info:
            f(np.ones(3), np.ones(4))
        text = str(info.value)
        assert "Elemwise{add}" in text and "Apply node that caused the error" in text
        assert "x: shape (3,)" in text and "y: shape (4,)" in text
        i, j = nt.lvector("i"), nt.lvector("j")
        g = ng.function([i, j], i ** j, linker="c", trust_input=trust)
        assert _is_c(g)
        with pytest.raises(ValueError, match="negative integer powers") as info:
            g(np.array([2, 3]), np.array([1, -1]))
        assert "pow" in str(info.value) and "Apply node that caused the error" in str(info.value)
        assert "i: shape (2,)" in str(info.value)
        assert all(cell[0] is None for cell in g._plan.arg_cells)  # no argument kept alive
        np.testing.assert_array_equal(g(np.array([2, 3]), np.array([2, 1])), [4, 3])


@pytest.mark.parametrize("n", [7, 300_000])
def test_outputs_are_reused_only_when_nobody_holds_them(n):
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], x * y, linker="c")
    a, b = np.arange(float(n)), np.full(n, 2.0)
    expected = a * 2
    ptr = _ptr(f(a, b))  # dropped at once
    assert _ptr(f(a, b)) == ptr  # so it is written again
    held = f(a, b)
    again = f(a, b)
    assert again is not held and _ptr(again) != _ptr(held)
    np.testing.assert_array_equal(held, expected)
    # a view keeps its base alive: never reused
    view = f(a, b)[1:3]
    base_ptr = _ptr(view) - 8
    other = f(a + 1, b)
    assert _ptr(other) != base_ptr
    np.testing.assert_array_equal(view, expected[1:3])
    del other
    # a weak reference blocks reuse too
    r = f(a, b)
    ref, ptr = weakref.ref(r), _ptr(r)
    del r
    new = f(a * 3, b)
    assert _ptr(new) != ptr
    if ref() is not None:
        np.testing.assert_array_equal(ref(), expected)
    np.testing.assert_array_equal(new, a * 6)


def test_a_changed_or_exported_output_is_not_reused():
    x = nt.dvector("x")
    f = ng.function([x], x + 1, linker="c")
    a = np.arange(6.0)
    r = f(a)
    r.shape = (2, 3)
    ptr = _ptr(r)
    del r
    assert _ptr(f(a)) != ptr
    r = f(a)
    r.flags.writeable = False
    ptr = _ptr(r)
    del r
    assert _ptr(f(a)) != ptr
    r = f(a)
    m = memoryview(r)
    ptr = _ptr(r)
    del r
    out = f(a * 2)
    assert _ptr(out) != ptr
    np.testing.assert_array_equal(np.asarray(m), a + 1)


def test_a_dropped_function_releases_its_last_output():
    x = nt.dvector("x")
    f = ng.function([x], x + 1, linker="c")
    r = f(np.ones(1000))
    ref = weakref.ref(r)
    del r
    assert ref() is not None  # kept for the next call
    del f
    assert ref() is None


def test_threads_share_one_function_safely():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], x * y + 1.0, linker="c")
    a = np.arange(100_000.0)
    errors = []

    def work(k):
        b = np.full(a.size, float(k))
        for _ in range(20):
            out = f(a, b)
            if not np.array_equal(out, a * k + 1.0):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_profile_and_trust_input_switch_the_call_path():
    x = nt.dvector("x")
    f = ng.function([x], x * 2, linker="c")
    assert _is_c(f)
    f.profile = ProfileStats(f)
    assert not _is_c(f)
    f(np.ones(3))
    assert f.profile.calls == 1
    f.profile = None
    assert _is_c(f)
    f.trust_input = True
    assert _is_c(f)
    np.testing.assert_array_equal(f(np.ones(2)), [2, 2])


def test_programs_of_several_kernels_run_them_from_their_cells():
    x, m = nt.dvector("x"), nt.dmatrix("m")
    f = ng.function([m, x], m + x, linker="c")  # DimShuffle, then the addition
    assert not _is_c(f)
    kernels = [t for t in f.program.thunks if type(t).__name__ == "Kernel"]
    assert len(kernels) == len(f.program.nodes) == 2
    b = np.arange(3.0)
    np.testing.assert_array_equal(f(np.ones((2, 3)), b), b + np.ones((2, 3)))
    ptr = _ptr(f(np.ones((2, 3)), b))
    held = f(np.ones((2, 3)), b)
    assert _ptr(held) == ptr  # the program's output, dropped by the caller: reused
    assert _ptr(f(np.ones((2, 3)), b)) != ptr  # held: never
    with pytest.raises(ValueError, match="broadcast") as info:
        f(np.ones((2, 3)), np.ones(4))
    assert "Apply node that caused the error" in str(info.value)
    i, j = nt.lvector("i"), nt.lvector("j")
    g = ng.function([i, j], (i ** j) * 2, linker="c", rewrite=None)
    with pytest.raises(ValueError, match="negative integer powers") as info:
        g(np.array([2, 3]), np.array([1, -1]))
    assert "Elemwise{pow}" in str(info.value)
    np.testing.assert_array_equal(g(np.array([2, 3]), np.array([2, 1])), [8, 6])
    s = ng.shared(np.ones(3), name="s")
    h = ng.function([x], x + s, linker="c")
    assert not _is_c(h)
    np.testing.assert_array_equal(h(np.ones(3)), [2, 2, 2])


def test_in_place_kernels_write_into_their_input():
    X, w = nt.dmatrix("X"), nt.dvector("w")
    f = ng.function([X, w], nt.exp(-nt.dot(X, w)) * 2.0, linker="cvm")
    assert f.program.wait_compiled(timeout=120)
    kinds = {type(n.op).__name__: (k, type(t).__name__) for n, k, t in
             zip(f.program.nodes, f.program.kinds, f.program.thunks, strict=True)}
    assert kinds["Elemwise"] == ("c", "Kernel")
    assert any(n.op.inplace_pattern for n in f.program.nodes
               if type(n.op).__name__ == "Elemwise")
    a, b = np.arange(12.0).reshape(4, 3) / 10, np.array([0.5, -1.0, 2.0])
    first = f(a, b)
    np.testing.assert_allclose(first, np.exp(-a.dot(b)) * 2.0, rtol=1e-14)
    second = f(a * 2, b)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, np.exp(-a.dot(b)) * 2.0, rtol=1e-14)
    np.testing.assert_allclose(second, np.exp(-(a * 2).dot(b)) * 2.0, rtol=1e-14)


def test_big_intermediates_are_not_kept_between_calls():
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) * 2 + nt.cos(x), linker="c", rewrite=None)
    assert len(f.program.nodes) > 2
    f(np.ones(100_000))
    kept = [a for t in f.program.thunks for a in gc.get_referents(t)
            if isinstance(a, np.ndarray) and a.size == 100_000]
    assert len(kept) <= 1  # at most the program's output


def test_without_the_extension_calls_use_cffi(tmp_path, c_cache_dir, monkeypatch):
    d = _private_dir(tmp_path, c_cache_dir, "nofast")

    def fail(*args):
        raise fastcall.FastcallUnavailable("no headers here")

    monkeypatch.setattr(fastcall, "_build", fail)
    fastcall._reset_for_tests()
    try:
        with config.change(cache_dir=d), warnings.catch_warnings():
            warnings.simplefilter("error")
            assert fastcall.get() is None
            x, y = nt.dvector("x"), nt.dvector("y")
            k = 1.0 + os.getpid() % 1000 / 7919.0
            for trust in (False, True):
                f = ng.function([x, y], x * y + k, linker="c", trust_input=trust)
                assert not _is_c(f)
                np.testing.assert_array_equal(f(np.ones(2), np.ones(2)), [1 + k, 1 + k])
                with pytest.raises(ValueError, match="broadcast"):
                    f(np.ones(2), np.ones(3))
        assert not [n for n in os.listdir(d)  # no library (its key may be remembered)
                    if n.startswith("nbg-fastcall-") and n != fastcall.KEY_MEMO]
    finally:
        monkeypatch.undo()
        fastcall._reset_for_tests()
    assert fastcall.get() is not None


def test_a_corrupt_or_unsafe_extension_file_is_rebuilt_or_refused(tmp_path, c_cache_dir):
    d = _private_dir(tmp_path, c_cache_dir, "corrupt")
    cache = cache_mod.ModuleCache(d)
    before = dict(fastcall.STATS)
    assert fastcall.load_or_build(cache) is not None
    assert fastcall.STATS["builds"] == before["builds"] + 1
    (so,) = [n for n in os.listdir(d) if n.startswith("nbg-fastcall-") and n.endswith(".so")]
    assert fastcall.load_or_build(cache) is not None  # now from disk
    assert fastcall.STATS["disk_loads"] == before["disk_loads"] + 1
    # garbage in place of the library (a new file: the loaded one is never rewritten)
    tmp = d / "garbage"
    tmp.write_bytes(b"\x7fELF not really" * 100)
    os.chmod(tmp, 0o700)
    os.replace(tmp, d / so)
    assert fastcall.load_or_build(cache) is not None
    assert fastcall.STATS["rebuilt_corrupt"] == before["rebuilt_corrupt"] + 1
    assert fastcall.STATS["builds"] == before["builds"] + 2
    assert (d / so).read_bytes()[:4] == b"\x7fELF" and (d / so).stat().st_size > 2000
    # a sidecar that disagrees
    meta = d / (so[:-3] + ".meta")
    tmp.write_text('{"size": 1, "sha256": "0"}')
    os.chmod(tmp, 0o600)
    os.replace(tmp, meta)
    assert fastcall.load_or_build(cache) is not None
    assert fastcall.STATS["rebuilt_corrupt"] == before["rebuilt_corrupt"] + 2
    # a library other users may write is refused, not loaded
    os.chmod(d / so, 0o766)
    with pytest.raises(CacheSecurityError, match="can be written"):
        fastcall.load_or_build(cache)
    os.chmod(d / so, 0o700)
    os.rename(d / so, tmp_path / "elsewhere.so")
    os.symlink(tmp_path / "elsewhere.so", d / so)
    with pytest.raises(CacheSecurityError, match="symbolic"):
        fastcall.load_or_build(cache)
    assert not stat.S_IMODE(os.stat(d).st_mode) & 0o077


def test_a_fresh_process_loads_it_from_disk(python_process):
    code = """
import json, numpy as np, nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import fastcall
x, y = nt.dvector("x"), nt.dvector("y")
f = ng.function([x, y], x * y - 1.0, linker="c")
ok = type(type(f).__call__).__name__ == "Kernel"
print(json.dumps({"c": ok, "stats": fastcall.STATS, "v": f(np.ones(2), np.ones(2)).tolist()}))
"""
    # the first child puts the runtime, the module and the extension into the session's
    # cache directory (tests run before may have used private ones only)
    for _ in range(2):
        out = python_process(code)
        assert out.returncode == 0, out.stderr
    import json

    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["c"] and result["v"] == [0.0, 0.0]
    assert result["stats"]["builds"] == 0 and result["stats"]["disk_loads"] == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_keeps_using_it():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], x + y * 3.0, linker="c")
    assert _is_c(f)
    f(np.ones(3), np.ones(3))
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            g = ng.function([x, y], x - y * 3.0, linker="c")
            ok = _is_c(g) and np.array_equal(f(np.ones(3), np.ones(3)), [4, 4, 4]) \
                and np.array_equal(g(np.ones(3), np.ones(3)), [-2, -2, -2])
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    gc.collect()


def test_prefetch_builds_on_a_thread_and_get_waits_for_it(tmp_path, c_cache_dir):
    d = _private_dir(tmp_path, c_cache_dir, "prefetch")
    fastcall._reset_for_tests()
    builds = fastcall.STATS["builds"]
    try:
        with config.change(cache_dir=d):
            fastcall.prefetch()
            fastcall.prefetch()  # one build only
            assert fastcall.get() is not None
        assert fastcall.STATS["builds"] == builds + 1
        assert [n for n in os.listdir(d) if n.startswith("nbg-fastcall-") and n.endswith(".so")]
        assert cache_limit.wait_pruned(60)  # (main-thread builds' directories go on a thread)
        assert not [n for n in os.listdir(d) if n.startswith(".")]  # no temporaries left
    finally:
        fastcall._reset_for_tests()
    assert fastcall.get() is not None


def test_a_kernel_that_is_not_an_elemwise_releases_the_gil(rendezvous):
    RendezvousOp, meet_inside_kernels = rendezvous
    # through the fast call path (trust_input): both kernels are inside C at once,
    # waiting for this thread to run Python (tests/linkers/c/conftest.py; no timing)
    box = nt.dvector("box")
    fs = [ng.function([box], RendezvousOp(k)(box), linker="c", trust_input=True)
          for k in range(2)]
    assert all(_is_c(f) for f in fs)
    results, _ = meet_inside_kernels(fs)
    assert results == [1.0, 1.0]


def test_a_function_cache_hit_opens_its_libraries_without_cffi(python_process, tmp_path):
    """A hit's module and runtime are opened by the extension (NativeModule): no cffi
    import, the same results; its cffi objects are made when a fallback needs them."""
    code = """
import json, sys, numpy as np, nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers import function_cache
from nbgraph.linkers.c import threads
function_cache.STORE_MIN_SECONDS = 0  # (both graphs are stored, however fast they rewrite)
X, w = nt.dmatrix("X"), nt.dvector("w")
cost = nt.sum(nt.log1p(nt.exp(-nt.dot(X, w)))) + 0.01 * nt.sum(w * w)
f = ng.function([X, w], ng.grad(cost, w), linker="c")
x, y = nt.dvector("x"), nt.dvector("y")
g = ng.function([x, y], x * y - 1.0, linker="c")
f.program.wait_compiled(), g.program.wait_compiled()
xv = np.linspace(-1, 1, 60).reshape(20, 3)
wv = np.array([0.5, -0.25, 2.0])
out = {"hits": function_cache.STATS["hits"], "modules": [type(h.program.module).__name__
                                                          for h in (f, g)],
       "f": f(xv, wv).tolist(), "g": g(wv, wv).tolist()}
out["cffi"] = "_cffi_backend" in sys.modules
out["f_lists"] = f(xv.tolist(), wv.tolist()).tolist()
out["g_lists"] = g(wv.tolist(), wv.tolist()).tolist()
# the module's kernels through cffi (fallbacks, runners): made on first use
m = g.program.module
out["same"] = [int(m.ffi.cast("uintptr_t", k)) for k in m.kernels] == m.addresses
from nbgraph.linkers.c.linker import CLinker
node, = g.program.nodes
runner = CLinker("c").c_runners([node])[node]
values = [getattr(v, "data", wv) for v in node.inputs]
out["g_runner"] = np.asarray(runner(values)[0]).tolist()
old = threads.set_num_threads(1)
threads.set_num_threads(old)
out["f_again"] = f(xv, wv).tolist()
print(json.dumps(out))
"""
    import json

    cache = tmp_path / "c"
    runs = []
    for _ in range(3):  # stores, adds the generated Python, uses
        proc = python_process(code, cache_dir=str(cache))
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, last = runs[0], runs[2]
    assert first["hits"] == 0 and last["hits"] == 2
    assert last["modules"] == ["NativeModule", "NativeModule"] and not last["cffi"]
    for key in ("f", "g"):
        assert last[key] == first[key] == last[key + "_lists"] == first[key + "_lists"]
    assert last["f_again"] == first["f"] and last["g_runner"] == first["g"]
    assert last["same"] and first["same"]
