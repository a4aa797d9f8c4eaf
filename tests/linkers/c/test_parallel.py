"""Loops split across the thread pool: results, determinism, fork, threads, errors.

Every size that matters is tried around each split threshold (read from the
generated C, so the tests follow any re-tuning), with strided, reversed and
broadcast inputs, NaN and infinities.  The pool is run with 3 threads here
(an odd count: uneven chunks), whatever the machine has.
"""

import json
import os
import re
import shutil
import sys
import threading

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers.c import codegen, threads
from nbgraph.tensor.c_code import parallel

pytestmark = pytest.mark.needs_cc


@pytest.fixture(scope="module", autouse=True)
def three_threads():
    old = threads.set_num_threads(3)
    yield
    threads.set_num_threads(old)


def cfun(inputs, outputs):
    return ng.function(inputs, outputs, linker="c")


def split_threshold(f):
    """The ``min_n`` of every split loop in f's kernels (elementwise and reductions)."""
    found = []
    for node in f.program.nodes:
        body = codegen.node_kernel(node).body
        found += [int(n) for n in re.findall(r"nbg_l = \{\w+_unit, \w+_strided, \".*\", "
                                             r"\d+, \d+, \d+, \d+, 64, (\d+), ", body)]
        found += [int(n) for n in re.findall(r"nbg_rs\.min_n = (\d+);", body)]
    assert found, "no parallel loop in %s" % f.program.nodes
    return found[0]


def streamed(node):
    """Whether the node's elementwise loop writes big outputs with non-temporal
    stores (its nbg_loop's stream_item is not 0)."""
    found = re.search(r"nbg_l = \{.*, 64, \d+, ([^,]+), nbg_o\};", codegen.node_kernel(node).body)
    assert found, "no elementwise loop in %s" % node
    return found.group(1) != "0"


def red_block():
    """Elements per block when the reduction driver cuts rows (``NBG_RED_BLOCK``)."""
    from nbgraph.core.c_interface import c_source

    text = c_source("nbgraph.linkers.c", "csrc/reduce.h")
    return int(re.search(r"^#define NBG_RED_BLOCK (\d+)$", text, re.M).group(1))


def sizes_around(t):
    """Sizes around ``t`` (split when the pool is awake) and ``4 t`` (split when it sleeps)."""
    return sorted({0, 1, 7, 63, 65, t - 1, t, t + 1, t + 63, 2 * t + 1, 4 * t - 1, 4 * t,
                   4 * t + 1, 5 * t + 5})


def values(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(n) * 10).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    return rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, n).astype(dtype)


def test_the_pool_is_used():
    x = nt.dvector("x")
    f = cfun([x], x * 1.0123456)
    assert f.program.module.parallel
    assert threads.get_num_threads() == 3
    n = 5 * split_threshold(f)
    np.testing.assert_array_equal(f(np.arange(n, dtype=float)), np.arange(n) * 1.0123456)
    assert threads._state["lib"].nbg_rt_running() == 2  # two workers and the caller


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8"])
def test_elementwise_around_the_threshold(dtype):
    x, y, z = (nt.vector(dtype=dtype, name=n) for n in "xyz")
    f = cfun([x, y, z], x + y * 2 - z)
    for n in sizes_around(split_threshold(f)):
        a, b, c = values(n, dtype, 1), values(n, dtype, 2), values(n, dtype, 3)
        expected = a + b * np.asarray(2, dtype) - c
        got = f(a, b, c)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_transcendental_loops_split_earlier():
    x, y = nt.dvector("x"), nt.dvector("y")
    cheap = cfun([x, y], x + y)
    heavy = cfun([x, y], nt.exp(-x ** 2 / 2) * nt.sin(y) + x * y)
    t = split_threshold(heavy)
    assert t < split_threshold(cheap)
    for n in sizes_around(t):
        a, b = values(n, "float64", 4) / 10, values(n, "float64", 5)
        np.testing.assert_allclose(heavy(a, b), np.exp(-a ** 2 / 2) * np.sin(b) + a * b,
                                   rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_strided_reversed_and_broadcast_inputs(dtype):
    x, y = nt.vector(dtype=dtype, name="x"), nt.vector(dtype=dtype, name="y")
    m = nt.matrix(dtype=dtype, name="m")
    f = cfun([x, y], x * y - x)
    g = cfun([m, x], m * x + m)
    c = nt.tensor(dtype, (None, 1), "c")
    h = cfun([m, c], m - c)
    t = split_threshold(f)
    for n in (t - 1, t + 1, 4 * t + 3):
        a, b = values(2 * n, dtype, 6), values(2 * n, dtype, 7)
        for u, v in ((a[::2], b[1::2]), (a[::-1][:n], b[:n]), (a[:n], b[::-2])):
            np.testing.assert_array_equal(f(u, v), u * v - u)
    for rows, cols in ((4 * t // 100 + 1, 101), (3, 2 * t + 1), (4 * t + 1, 1), (1, 4 * t + 1)):
        M, row, col = values(rows * cols, dtype, 8).reshape(rows, cols), values(cols, dtype, 9), \
            values(rows, dtype, 10)
        np.testing.assert_array_equal(g(M, row), M * row + M)
        np.testing.assert_array_equal(g(M.T.copy().T, row), M * row + M)  # Fortran order
        np.testing.assert_array_equal(g(M[::-1, ::2], row[::2]), M[::-1, ::2] * row[::2]
                                      + M[::-1, ::2])
        np.testing.assert_array_equal(h(M, col[:, None]), M - col[:, None])


@pytest.mark.parametrize("rows, cols, repeated", [
    (600, 10, True), (600, 3, True), (2, 5, True), (40000, 10, True), (100001, 3, True),
    (1, 7, False), (3, 1000, False), (409, 1, False), (7, 513, False)])
def test_short_broadcast_rows_run_as_repeated_copies(rows, cols, repeated):
    """A row broadcast over contiguous rows (the runtime's repeated-row case, when the
    copies fit): NumPy's values; the same bits as the same graph over full-size
    operands (one flat row) when the case applies, and for every thread count."""
    m, w = nt.dmatrix("m"), nt.dmatrix("w")
    r, s = nt.dvector("r"), nt.bvector("s")
    f = cfun([m, r], m + r)
    g = cfun([m, w, r, s], [m * r - w * s, nt.exp(m - r) + s])
    M, W = values(rows * cols, "float64", 20).reshape(rows, cols), \
        values(rows * cols, "float64", 21).reshape(rows, cols)
    R, S = values(cols, "float64", 22), values(cols, "int8", 23)
    np.testing.assert_array_equal(f(M, R), M + R)
    # the same graph over full-size operands (one flat row) gives the same bits
    rf, sf = nt.dmatrix("rf"), nt.bmatrix("sf")
    full = cfun([m, w, rf, sf], [m * rf - w * sf, nt.exp(m - rf) + sf])
    generic = [a.tobytes() for a in full(M, W, *(np.broadcast_to(v, M.shape).copy()
                                                for v in (R, S)))]
    for n in (1, 2, 3):
        threads.set_num_threads(n)
        got = g(M, W, R, S)
        np.testing.assert_array_equal(got[0], M * R - W * S)
        np.testing.assert_allclose(got[1], np.exp(M - R) + S, rtol=1e-13, atol=1e-13)
        if n == 1:
            serial = [a.tobytes() for a in got]
        assert [a.tobytes() for a in got] == serial
        assert (serial == generic) or not repeated
    # a (rows, 1, cols) broadcast over a 3-d array merges to the same 2-d case
    x3 = nt.tensor("float64", (None, None, None), "x3")
    h = cfun([x3, r], x3 * r + 1.5)
    X3 = M.reshape(rows, 1, cols) * np.ones((1, 3, 1))
    np.testing.assert_array_equal(h(X3, R), X3 * R + 1.5)


@np.errstate(invalid="ignore")
def test_nan_and_inf_propagate_in_every_chunk():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = cfun([x, y], x * y + x)
    s = cfun([x], [x.sum(), x.max(), x.min(), (x * 2.0).sum()])
    n = 5 * max(split_threshold(f), split_threshold(s)) + 17
    for where in (0, n // 3, n // 2, n - 1):
        for bad in (np.nan, np.inf, -np.inf):
            a = values(n, "float64", 11)
            a[where] = bad
            b = values(n, "float64", 12)
            np.testing.assert_array_equal(f(a, b), a * b + a)
            got = s(a)
            np.testing.assert_array_equal(got[1:3], [a.max(), a.min()])
            assert np.isnan(got[0]) == np.isnan(a.sum()) and (np.isnan(got[0]) or
                                                             got[0] == pytest.approx(a.sum()))
    a = values(n, "float64", 13)
    a[1], a[n - 2] = np.inf, -np.inf
    assert np.isnan(s(a)[0])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool"])
def test_reductions_around_the_thresholds(dtype):
    x = nt.vector(dtype=dtype, name="x")
    f = cfun([x], [x.sum(), x.max(), x.min()])
    t = split_threshold(f)
    block = red_block()
    for n in sorted(set(sizes_around(t)) | {block - 1, block, block + 1, 2 * block + 1,
                                             t * 4 + block + 3}):
        if n == 0:
            continue
        a = values(n, dtype, 14)
        got = f(a)
        if np.dtype(dtype).kind == "f":
            rtol = 1e-12 if dtype == "float64" else 1e-5
            np.testing.assert_allclose(got[0], a.sum(), rtol=rtol, atol=1e-3 * rtol * n)
        else:
            assert got[0] == a.sum()
        assert got[1] == a.max() and got[2] == a.min()
        np.testing.assert_array_equal(f(a[::-3])[1:], [a[::-3].max(), a[::-3].min()])


@pytest.mark.parametrize("shape", [(3, 200001), (200001, 3), (700, 900), (2, 70001), (1, 300001),
                                   (300001, 1), (5, 7)])
def test_matrix_reductions(shape):
    m = nt.dmatrix("m")
    f = cfun([m], [m.sum(axis=0), m.sum(axis=1), m.sum(), m.max(axis=0), m.min(axis=1),
                   ((m - 1.5) ** 2).sum(axis=1)])
    M = values(shape[0] * shape[1], "float64", 15).reshape(shape)
    for arg in (M, M.T.copy().T, M[::-1]):
        got = f(arg)
        ref = [arg.sum(axis=0), arg.sum(axis=1), arg.sum(), arg.max(axis=0), arg.min(axis=1),
               ((arg - 1.5) ** 2).sum(axis=1)]
        for g, r in zip(got, ref, strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-9)
    ints = (M * 1000).astype(np.int64)
    k = nt.lmatrix("k")
    g = cfun([k], [k.sum(axis=0), k.sum(axis=1), k.prod(axis=0) * 0 + k.max()])
    np.testing.assert_array_equal(g(ints)[0], ints.sum(axis=0))
    np.testing.assert_array_equal(g(ints)[1], ints.sum(axis=1))


_DETERMINISM = r"""
import hashlib, json
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import threads
rng = np.random.default_rng(0)
x, y, m = nt.dvector("x"), nt.dvector("y"), nt.dmatrix("m")
t3 = nt.ftensor3("t")
f = ng.function([x, y], [x.sum(), ((x - y) ** 2).sum(), (x * 1e3).sum(), x.prod(), x.max(),
                         nt.exp(x * 1e-3).sum()], linker="c")
g = ng.function([m], [m.sum(), m.sum(axis=0), m.sum(axis=1), (m * m).sum(axis=1)], linker="c")
h = ng.function([t3], [t3.sum(), t3.sum(axis=(0, 2)), t3.sum(axis=1)], linker="c")
out = []
for n in (1, 8191, 8193, 100003, 2 * 10 ** 6 + 7):
    a, b = rng.standard_normal(n) * 1e4, rng.standard_normal(n)
    out += f(a, b) + f(a[::3], b[::3])
for shape in ((3, 10 ** 6 + 1), (10 ** 6 + 1, 3), (1000, 999)):
    M = rng.standard_normal(shape)
    out += g(M) + g(M.T) + g(M[:, ::2])
T = rng.standard_normal((40, 300, 501)).astype(np.float32)
out += h(T) + h(T.transpose(2, 0, 1))
digest = hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in out)).hexdigest()
print(json.dumps({"digest": digest, "threads": threads.get_num_threads(),
                  "parallel": f.program.module.parallel}))
"""


def test_reductions_are_bit_identical_for_any_thread_count(python_process):
    results = {}
    for n in ("1", "2", "3"):
        proc = python_process(_DETERMINISM, extra_env={"NBGRAPH_NUM_THREADS": n}, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[n] = json.loads(proc.stdout.strip().splitlines()[-1])
        assert results[n]["threads"] == int(n)
        assert results[n]["parallel"] == (n != "1")
    assert results["1"]["digest"] == results["2"]["digest"] == results["3"]["digest"]


def test_in_process_thread_counts_agree_bitwise():
    x = nt.dvector("x")
    f = cfun([x], [(x * 3.25).sum(), x.max(), (x * x).sum()])
    a = values(3 * 10 ** 6 + 11, "float64", 16) * 1e5
    ref = f(a)
    for n in (1, 2, 4, 3):
        threads.set_num_threads(n)
        assert [r.tobytes() for r in f(a)] == [r.tobytes() for r in ref]


_FORK = r"""
import os, sys, time
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import threads
x = nt.dvector("x")
f = ng.function([x], [(x * 2.0 + 1.0).sum(), x * 3.0], linker="c")
a = np.arange(4 * 10 ** 6, dtype=float)
ref = f(a)
assert threads._state["lib"].nbg_rt_running() >= 1
pid = os.fork()
if pid == 0:
    ok = True
    for _ in range(3):
        got = f(a)
        ok = ok and got[0] == ref[0] and np.array_equal(got[1], ref[1])
    ok = ok and threads._state["lib"].nbg_rt_running() >= 1
    os._exit(0 if ok else 3)
deadline = time.time() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() > deadline:
        os.kill(pid, 9)
        print("child hung"); sys.exit(2)
    time.sleep(0.01)
assert f(a)[0] == ref[0]  # the parent's pool still works
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_runs_parallel_kernels(python_process):
    proc = python_process(_FORK, extra_env={"NBGRAPH_NUM_THREADS": "2"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]


def test_concurrent_calls_from_two_python_threads():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = cfun([x, y], [(x * y).sum(), x * y + 1.0])
    g = cfun([x], [nt.sin(x) * 2.0, x.max()])
    n = 5 * max(split_threshold(f), split_threshold(g)) + 1
    a, b = values(n, "float64", 17), values(n, "float64", 18)
    ref_f, ref_g = f(a, b), g(a)
    errors = []

    def run(fn, args, ref):
        try:
            for _ in range(30):
                got = fn(*args)
                for u, v in zip(got, ref, strict=True):
                    if not np.array_equal(u, v):
                        errors.append("mismatch")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    workers = [threading.Thread(target=run, args=(f, (a, b), ref_f)),
               threading.Thread(target=run, args=(g, (a,), ref_g))]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers)
    assert not errors, errors[:3]


def test_an_error_inside_a_parallel_loop_is_raised():
    x, y = nt.lvector("x"), nt.lvector("y")
    f = cfun([x, y], x ** y)
    n = 5 * split_threshold(f) + 1
    a, b = np.full(n, 2, np.int64), np.ones(n, np.int64)
    np.testing.assert_array_equal(f(a, b), a)
    b[n - 5] = -1
    with pytest.raises(ValueError, match="negative integer powers"):
        f(a, b)
    s = cfun([x, y], (x ** y).sum())
    with pytest.raises(ValueError, match="negative integer powers"):
        s(a, b)


def test_large_outputs_use_streaming_stores_and_stay_exact():
    x, y = nt.dvector("x"), nt.dvector("y")
    f = cfun([x, y], x * 0.5 + y)
    assert streamed(f.program.nodes[0])
    n = (16 << 20) // 8 + 12345  # just above NBG_STREAM_MIN
    a, b = values(n + 3, "float64", 19), values(n, "float64", 20)
    for u in (a[:n], a[1:n + 1], a[3:]):  # the head before an aligned tile varies
        np.testing.assert_array_equal(f(u, b), u * 0.5 + b)
    heavy = cfun([x], nt.exp(x))
    assert not streamed(heavy.program.nodes[0])


def test_streamed_tiles_of_several_outputs_and_dtypes():
    """Outputs of different item sizes, each with its tile buffer: every element
    lands where NumPy puts it (the head, the tiles, the short last part)."""
    S = sys.modules["nbgraph.tensor.scalar"]
    from nbgraph.tensor.elemwise import Elemwise

    sx, sy = S.float64("x"), S.float32("y")
    two = Elemwise(S.Composite([sx, sy], [sx * 2.0 + sy, sy * sy]))
    x, y = nt.dvector("x"), nt.fvector("y")
    f = cfun([x, y], two(x, y))
    assert streamed(f.program.nodes[0])
    n = (16 << 20) // 8 + 4097
    a, b = values(n + 1, "float64", 24), values(n, "float32", 25)
    for u in (a[:n], a[1:]):
        got = f(u, b)
        np.testing.assert_array_equal(got[0], u * 2.0 + b)
        np.testing.assert_array_equal(got[1], b * b)


def test_the_debug_linker_agrees_on_parallel_loops():
    x, y, m = nt.dvector("x"), nt.dvector("y"), nt.dmatrix("m")
    f = ng.function([x, y, m], [x * y - 2.0, nt.exp(x / 10) + y, (x - y).sum(), m.sum(axis=0),
                                m.max(axis=1)], linker="debug")
    n = parallel.MIN_PARALLEL * 2 + 3
    a, b = values(n, "float64", 21), values(n, "float64", 22)
    M = values(300 * 1001, "float64", 23).reshape(300, 1001)
    got = f(a, b, M)
    np.testing.assert_allclose(got[2], (a - b).sum())
    np.testing.assert_array_equal(got[4], M.max(axis=1))


def test_thread_count_settings(monkeypatch):
    monkeypatch.setenv("NBGRAPH_NUM_THREADS", "5")
    assert threads.default_num_threads() == 5
    monkeypatch.setenv("NBGRAPH_NUM_THREADS", "zero")
    with pytest.warns(RuntimeWarning, match="NBGRAPH_NUM_THREADS"):
        assert threads.default_num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.delenv("NBGRAPH_NUM_THREADS")
    assert threads.default_num_threads() == len(os.sched_getaffinity(0))
    with pytest.raises(ValueError):
        threads.set_num_threads(0)


def test_one_thread_means_serial_loops(python_process, tmp_path, c_cache_dir):
    """With one thread the runtime library is still loaded (it holds the helpers
    every module calls) but starts no worker."""
    code = ("import numpy as np, nbgraph as ng, nbgraph.tensor as nt, os, json\n"
            "x = nt.dvector('x')\n"
            "f = ng.function([x], (x * 7.5).sum(), linker='c')\n"
            "r = f(np.ones(10 ** 6))\n"
            "from nbgraph.linkers.c import threads\n"
            "print(json.dumps({'r': float(r), 'parallel': f.program.module.parallel, "
            "'workers': threads._state['lib'].nbg_rt_running(), "
            "'bound': f.program.module.bound}))\n")
    d = tmp_path / "one"
    d.mkdir(mode=0o700)
    for name in os.listdir(c_cache_dir):  # reuse the session's compiler probe
        if name.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, name), d / name)
    proc = python_process(code, cache_dir=d, extra_env={"NBGRAPH_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"r": 7.5e6, "parallel": False, "workers": 0, "bound": True}


def _private_dir(tmp_path, c_cache_dir, name):
    d = tmp_path / name
    d.mkdir(mode=0o700)
    for entry in os.listdir(c_cache_dir):  # reuse the session's compiler probe
        if entry.startswith("probe-"):
            shutil.copy(os.path.join(c_cache_dir, entry), d / entry)
    return d


_RUN_ONE = """
import json, warnings
import numpy as np, nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import threads
%s
x = nt.dvector("x")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = ng.function([x], (x * 2.5).sum() + x[0] * 0, linker="cvm")
    f.program.wait_compiled()
    r = f(np.ones(10 ** 6))
print(json.dumps({"r": float(r), "kinds": f.program.kinds, "parallel": f.program.module.parallel,
                  "warnings": [str(w.message) for w in caught]}))
"""


def test_a_runtime_that_does_not_build_leaves_loops_serial(python_process, tmp_path, c_cache_dir):
    d = _private_dir(tmp_path, c_cache_dir, "broken")
    code = _RUN_ONE % 'threads.RUNTIME_SOURCE = "#error no runtime today\\n"'
    proc = python_process(code, cache_dir=d, extra_env={"NBGRAPH_NUM_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["r"] == 2.5e6 and out["parallel"] is False and "c" in out["kinds"]
    assert any("thread-pool runtime is unavailable" in w for w in out["warnings"])


def test_an_unsafe_runtime_library_is_refused(python_process, tmp_path, c_cache_dir):
    d = _private_dir(tmp_path, c_cache_dir, "unsafe")
    env = {"NBGRAPH_NUM_THREADS": "2", "NBGRAPH_C_BACKGROUND": "0"}
    first = python_process(_RUN_ONE % "", cache_dir=d, extra_env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads(first.stdout.strip().splitlines()[-1])["parallel"] is True
    (runtime,) = [n for n in os.listdir(d) if n.startswith("runtime-") and n.endswith(".so")]
    os.chmod(d / runtime, 0o766)
    second = python_process(_RUN_ONE % "", cache_dir=d, extra_env=env)
    assert second.returncode != 0
    assert "CacheSecurityError" in second.stderr and "can be written" in second.stderr
