"""Memory over many distinct ``eval()`` graphs: ``python -m bench.eval_memory [--graphs N]``.

Evaluates N (default 10,000) distinct graphs ``(x * i + 1).sum()`` with the
default linker, and prints, every ``--every`` graphs, the memory Python has
allocated (tracemalloc), the process's resident set, the eval cache's entries
and the growth per graph since the previous line.  Bounded memory shows as a
flat "current MB" column once the caches are full (the eval cache keeps
``eval_cache.MAX_ENTRIES`` compiled functions; the C layer keeps a bounded
set of modules).  At the end it prints the growth per 1,000 graphs over the
run after the warm-up (from the first line where the eval cache is full to
the last: the least-squares slope of "current MB", and the change between the
two lines) and the highest "current MB" of each half of that stretch: bounded
memory shows as a slope near 0 and two equal highs.
tests/linkers/test_eval_memory.py checks the same over a few hundred graphs.
"""

import argparse
import gc
import resource
import sys
import time
import tracemalloc

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_memory", description=__doc__)
    parser.add_argument("--graphs", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--linker", default=None, help="NBGRAPH linker (default: config)")
    args = parser.parse_args(argv)

    import nbgraph.tensor as nt
    from nbgraph import config
    from nbgraph.linkers import eval_cache

    if args.linker:
        config.linker = args.linker
    x = nt.dvector("x")
    v = np.ones(3)
    tracemalloc.start()
    start = time.perf_counter()
    previous = None
    points = []  # (graphs, traced MB) once the eval cache is full
    print("linker %s, eval cache of %d entries" % (config.linker, eval_cache.MAX_ENTRIES))
    print("%8s %12s %10s %9s %16s %8s" % ("graphs", "current MB", "RSS MB", "entries",
                                          "KB/graph since", "seconds"))
    for i in range(args.graphs + 1):
        if i % args.every == 0:
            gc.collect()
            current = tracemalloc.get_traced_memory()[0]
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            slope = "-" if previous is None else "%.2f" % ((current - previous) / args.every / 1e3)
            print("%8d %12.2f %10.0f %9d %16s %8.1f" % (
                i, current / 1e6, rss, eval_cache.cache_stats()["entries"], slope,
                time.perf_counter() - start), flush=True)
            previous = current
            if eval_cache.cache_stats()["entries"] >= eval_cache.MAX_ENTRIES:
                points.append((i, current / 1e6))
        if i == args.graphs:
            break
        value = (x * float(i) + 1.0).sum().eval({x: v})
        assert float(value) == 3.0 * i + 3.0
    tracemalloc.stop()
    summarise(points)
    return 0


def summarise(points):
    """Print the growth per 1,000 graphs over ``points`` ((graphs, MB) pairs)."""
    if len(points) < 3:
        print("too few lines after the warm-up for a growth figure")
        return
    xs = np.array([p[0] for p in points], dtype=float)
    ys = np.array([p[1] for p in points])
    slope = np.polyfit(xs, ys, 1)[0] * 1000
    (g0, m0), (g1, m1) = points[0], points[-1]
    half = len(points) // 2
    print("growth from graph %d to %d: %.3f MB per 1,000 graphs (least squares), "
          "%.3f MB per 1,000 end to end" % (g0, g1, slope, (m1 - m0) / (g1 - g0) * 1000))
    print("highest current MB: %.2f in graphs %d-%d, %.2f in graphs %d-%d" % (
        ys[:half].max(), g0, points[half - 1][0], ys[half:].max(), points[half][0], g1))


if __name__ == "__main__":
    sys.exit(main())
