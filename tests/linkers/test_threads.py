"""One Function, many threads: right answers with every linker, atomic shared updates.

Real threads, started together at a barrier, each checking every result it gets
against NumPy.  Arrays are big enough (200,000 elements) that the C kernels
release the GIL, so calls really overlap; see nbgraph.linkers.concurrency for
the design these tests hold it to.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.linkers import eval_cache
from nbgraph.testing import run_in_threads

LINKERS = ["py", "c", "cvm", "debug"]
THREADS = 4


def c_linker(linker):
    if linker != "py":
        # (not "from conftest import ...": with --import-mode=importlib the name
        # "conftest" is whichever conftest.py was imported last)
        from nbgraph.linkers.c.compiler import find_compiler

        if find_compiler() is None:
            pytest.skip("no C compiler")


def run_threads(work, n=THREADS):
    """Run ``work(k)`` on ``n`` threads started together; re-raise the first error."""
    run_in_threads(work, n, start_timeout=60)


def calls_agree(f, make_args, want, calls):
    wrong = []

    def work(k):
        args = make_args(k)
        expected = want(*args)
        for _ in range(calls):
            got = f(*args)
            got = got if isinstance(got, list) else [got]
            for g, w in zip(got, expected, strict=True):
                if not np.allclose(g, w, rtol=1e-12, atol=0):
                    wrong.append(k)

    run_threads(work)
    assert not wrong, "%d wrong results from threads %s" % (len(wrong), sorted(set(wrong)))


def size_for(linker):
    return 20_000 if linker == "debug" else 200_000


@pytest.mark.parametrize("linker", LINKERS)
def test_one_function_from_four_threads(linker):
    c_linker(linker)
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) * 2 + 1, linker=linker)
    if linker == "cvm":
        f.program.wait_compiled(timeout=300)
    n = size_for(linker)
    calls_agree(f, lambda k: [np.random.default_rng(k).random(n)],
                lambda a: [np.exp(a) * 2 + 1], 40 if linker != "debug" else 5)


@pytest.mark.parametrize("linker", LINKERS)
def test_a_program_of_several_nodes_from_four_threads(linker):
    """Storage cells, intermediates released mid-run, two outputs: per-thread state."""
    c_linker(linker)
    x, y = nt.dvector("x"), nt.dvector("y")
    outs = [nt.exp(x) * y + 1.0, (x * y).sum(), nt.sqrt(x + y).max()]
    f = ng.function([x, y], outs, linker=linker, rewrite=None)
    if linker == "cvm":
        f.program.wait_compiled(timeout=300)
    n = size_for(linker) // 4

    def make(k):
        rng = np.random.default_rng(100 + k)
        return [rng.random(n), rng.random(n)]

    calls_agree(f, make, lambda a, b: [np.exp(a) * b + 1.0, (a * b).sum(),
                                       np.sqrt(a + b).max()],
                30 if linker != "debug" else 4)


@pytest.mark.parametrize("trust", [False, True])
def test_the_cffi_call_path_from_four_threads(monkeypatch, trust):
    """Without the C call path extension, calls go through cffi and shared scratch."""
    c_linker("c")
    from nbgraph.linkers.c import fastcall

    monkeypatch.setattr(fastcall, "get", lambda: None)
    monkeypatch.setattr(fastcall, "get_now", lambda: None)  # what linking asks
    x = nt.dvector("x")
    f = ng.function([x], nt.exp(x) * 2 + 1, linker="c", trust_input=trust)
    assert getattr(f, "_c_call", None) is None
    calls_agree(f, lambda k: [np.random.default_rng(k).random(200_000)],
                lambda a: [np.exp(a) * 2 + 1], 40)


def test_errors_in_one_thread_leave_the_others_right():
    c_linker("c")
    x, y = nt.dvector("x"), nt.dvector("y")
    f = ng.function([x, y], nt.exp(x) + y, linker="c")
    good = np.random.default_rng(0).random(100_000)
    wrong, raised = [], []

    def work(k):
        for i in range(30):
            if k == 0 and i % 2:
                try:
                    f(good, good[:7])
                except ValueError as exc:
                    raised.append(str(exc))
                continue
            if not np.allclose(f(good, good), np.exp(good) + good, rtol=1e-12):
                wrong.append(k)

    run_threads(work)
    assert not wrong
    assert len(raised) == 15 and all("shape" in m or "broadcast" in m for m in raised)


@pytest.mark.parametrize("linker", LINKERS)
def test_shared_updates_are_atomic_per_call(linker):
    """800 increments from 4 threads: none lost, each call saw a distinct value."""
    c_linker(linker)
    count = ng.shared(np.array(0.0), "count")
    f = ng.function([], count, updates={count: count + 1.0}, linker=linker)
    seen = [[] for _ in range(THREADS)]

    def work(k):
        for _ in range(200):
            seen[k].append(float(f()))

    run_threads(work)
    assert float(count.get_value()) == 800.0
    values = sorted(v for s in seen for v in s)
    assert values == [float(i) for i in range(800)]


def test_two_functions_updating_the_same_shared_variables():
    """A pair of shared variables moved together by two functions; a third reads
    them: every call sees a + b == 0 (never half of another call's updates)."""
    c_linker("c")
    a = ng.shared(np.zeros(1000), "a")
    b = ng.shared(np.zeros(1000), "b")
    up = ng.function([], [], updates=[(a, a + 1.0), (b, b - 1.0)], linker="cvm")
    down = ng.function([], [], updates=[(b, b + 2.0), (a, a - 2.0)], linker="py")
    total = ng.function([], (a + b).sum(), linker="c")
    sums = []

    def work(k):
        for _ in range(100):
            if k == 0:
                up()
            elif k == 1:
                down()
            else:
                sums.append(float(total()))

    run_threads(work)
    assert set(sums) == {0.0}
    np.testing.assert_array_equal(a.get_value(), np.full(1000, -100.0))
    np.testing.assert_array_equal(b.get_value(), np.full(1000, 100.0))


def test_profiled_calls_from_threads_are_all_counted():
    x = nt.dvector("x")
    f = ng.function([x], (x * 2.0).sum(), linker="py", profile=True)
    v = np.arange(1000.0)

    def work(k):
        for _ in range(50):
            assert float(f(v)) == 999000.0

    run_threads(work)
    assert f.profile.calls == 200
    assert f.profile.node_calls == [200] * len(f.profile.nodes)


def test_eval_from_threads_distinct_and_shared_graphs():
    eval_cache.clear_cache()
    x = nt.dvector("x")
    same = nt.exp(x) * 3.0 + 1.0
    v = np.linspace(0, 1, 50_000)
    wrong = []

    def work(k):
        for i in range(20):
            if not np.allclose(same.eval({x: v}), np.exp(v) * 3.0 + 1.0, rtol=1e-12):
                wrong.append((k, "same"))
            own = (x * float(k * 100 + i)).sum()  # a new graph each time
            if float(own.eval({x: v})) != pytest.approx(v.sum() * (k * 100 + i)):
                wrong.append((k, i))

    run_threads(work)
    assert not wrong
    assert eval_cache.cache_stats()["entries"] <= eval_cache.MAX_ENTRIES


def test_background_compilation_while_threads_call():
    """cvm functions built on several threads run in Python, switch to C mid-way,
    and give the same answers throughout."""
    c_linker("cvm")
    from nbgraph.linkers.c import background

    if not background.ENABLED:
        pytest.skip("background compilation is switched off (NBGRAPH_C_BACKGROUND=0)")
    x = nt.dvector("x")
    token = np.random.default_rng().integers(1 << 40)  # a graph no cache holds yet
    f = ng.function([x], nt.tanh(x * 0.5) + float(token), linker="cvm")
    v = np.linspace(-3, 3, 100_000)
    want = np.tanh(v * 0.5) + float(token)
    wrong = []

    def work(k):
        for _ in range(40):
            if not np.allclose(f(v), want, rtol=1e-12):
                wrong.append(k)

    run_threads(work)
    assert not wrong
    assert f.program.wait_compiled(timeout=300)
    np.testing.assert_allclose(f(v), want, rtol=1e-12)


def test_a_twin_is_made_only_under_contention():
    x = nt.dvector("x")
    f = ng.function([x], x + 1.0, linker="py")
    for _ in range(100):
        f(np.ones(3))
    assert f._twins == []
    calls_agree(f, lambda k: [np.full(10_000, float(k))], lambda a: [a + 1.0], 200)
    assert len(f._twins) <= THREADS - 1
