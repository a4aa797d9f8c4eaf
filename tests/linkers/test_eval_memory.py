"""Memory per distinct eval() graph stays bounded (no timing, tracemalloc only).

Each distinct graph compiles a Function (a C module with the default linker).
The eval cache keeps MAX_ENTRIES of them; everything else a graph brought along
must go with it: queued background compilations of graphs nobody uses any more
(each held its C source), and loaded libraries no program uses (the module
cache keeps the most recent ones and holds the rest weakly).
"""

import gc
import tracemalloc

import numpy as np

import nbgraph.tensor as nt
from nbgraph.linkers import eval_cache


def _distinct_evals(x, start, stop):
    v = np.ones(3)
    for i in range(start, stop):
        value = (x * float(i) + 1.0).sum().eval({x: v})
        assert float(value) == 3.0 * i + 3.0


def test_memory_stays_bounded_over_many_distinct_eval_graphs(monkeypatch):
    # a small eval cache reaches its steady state after a few graphs (each kept
    # Function weighs ~90 KB: 256 of them are expected memory, not growth)
    monkeypatch.setattr(eval_cache, "MAX_ENTRIES", 16)
    eval_cache.clear_cache()
    x = nt.dvector("x")
    # warm: imports, the eval cache and the C layer's bounded memos (kernel text by
    # structure, ~20 entries of ~26 KB) fill up; measured, memory steps up by ~1.4 MB
    # over the first ~150 graphs and then grows by < 1 KB per graph
    _distinct_evals(x, 0, 160)
    gc.collect()
    loaded_before = _loaded_modules()
    tracemalloc.start()
    try:
        slopes = []
        for start in (160, 240):  # two windows: the growth must be flat, not just small
            base = tracemalloc.get_traced_memory()[0]
            _distinct_evals(x, start, start + 80)
            gc.collect()
            slopes.append((tracemalloc.get_traced_memory()[0] - base) / 80)
    finally:
        tracemalloc.stop()
    # measured here (loaded machine): ~14 KB, then ~3.5 KB per graph in the two windows,
    # the tail of the warm-up; bench/eval_memory.py runs 10,000 graphs and shows the
    # plateau.  What this checks: small, and not growing faster as graphs accumulate
    # (before the bound each queued compilation kept its C source and each loaded
    # module stayed mapped: a constant slope of tens of KB per graph).
    print("bytes per graph in two windows of 80 graphs: %r" % (slopes,))
    assert sum(slopes) * 80 < 160 * 10_000, "bytes per graph in two windows: %r" % (slopes,)
    assert slopes[1] <= slopes[0] + 1_000, "growth accelerates: %r bytes per graph" % (slopes,)
    assert eval_cache.cache_stats()["entries"] <= eval_cache.MAX_ENTRIES
    try:
        from nbgraph.linkers.c import background
        from nbgraph.linkers.c.cache import ModuleCache, get_cache
    except ImportError:  # pragma: no cover - no C backend
        return
    assert len(background._stack) <= background._SWEEP_AT + 1
    # loaded modules: at most those of live functions plus the recently used ones (and
    # whatever earlier tests in this process still hold, counted before the windows:
    # 160 more graphs leave that number where it was)
    bound = max(loaded_before, eval_cache.MAX_ENTRIES + ModuleCache.RECENT) + 8
    assert len(get_cache()._memory) <= bound, (len(get_cache()._memory), loaded_before)


def _loaded_modules():
    """How many C modules this process holds loaded (0 without the C backend)."""
    try:
        from nbgraph.linkers.c.cache import get_cache
    except ImportError:  # pragma: no cover - no C backend
        return 0
    return len(get_cache()._memory)
