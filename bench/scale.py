"""Big graphs through every path: ``python -m bench.scale [--nodes N] [-k PATH]``.

Two graphs of about N Apply nodes (default 100,000; a Python number becomes a
0-d constant broadcast by a DimShuffle node, so ``x * 1.0001`` is two nodes):

* ``chain``: ``x = x * 1.0001 + 0.5`` repeated N/4 times (one long dependency
  chain, as deep as the graph is big);
* ``wide``: N/3 distinct terms ``x * c_i`` summed by a balanced tree of
  additions (one variable read N/3 times, shallow).

Each path runs in its own process (under an address-space limit, ``--limit-mb``)
so its peak resident memory (``ru_maxrss``) is its own; the table prints the
seconds the path took (graph building excluded, reported on its own row) and
that peak.  Paths: building the graph, ``dprint``, the diagram (built and
rendered to SVG; big graphs are summarised), ``function(...)`` with each
linker (compile, then one call, values checked against NumPy), ``eval``,
and ``grad`` (compiled with the py linker, checked against the closed form).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

PATHS = ("build", "dprint", "diagram", "py", "c", "cvm", "debug", "eval", "grad")
SHAPES = ("chain", "wide")
VALUE = np.array([0.5, -1.0, 2.0])


def build(shape, nodes):
    """``(x, out, expected)``: the input, the big graph and NumPy's value at VALUE."""
    import nbgraph.tensor as nt

    x = nt.dvector("x")
    if shape == "chain":
        out = x
        expected = VALUE.copy()
        for _ in range(nodes // 4):
            out = out * 1.0001 + 0.5
            expected = expected * 1.0001 + 0.5
        return x, out, expected
    terms = [x * (1.0 + i / nodes) for i in range(nodes // 3)]
    expected = sum(VALUE * (1.0 + i / nodes) for i in range(nodes // 3))
    while len(terms) > 1:
        paired = [a + b for a, b in zip(terms[::2], terms[1::2], strict=False)]
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return x, terms[0], expected


def _grad_expected(shape, nodes):
    if shape == "chain":
        return np.full(3, 1.0001 ** (nodes // 4))
    return np.full(3, sum(1.0 + i / nodes for i in range(nodes // 3)))


def run_path(path, shape, nodes):
    """Run one path on a freshly built graph; return (wall, CPU) seconds it took."""
    import nbgraph
    from nbgraph.display import diagram, render_svg

    t0, c0 = time.perf_counter(), time.process_time()
    x, out, expected = build(shape, nodes)
    if path == "build":
        return time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    if path == "dprint":
        text = nbgraph.dprint(out, file="str")
        assert text.count("\n") >= nodes // 2, "dprint printed too little"
    elif path == "diagram":
        svg = render_svg(diagram(out))
        assert "<svg" in str(svg)
    elif path in ("py", "c", "cvm", "debug"):
        f = nbgraph.function([x], out, linker=path)
        np.testing.assert_allclose(f(VALUE), expected, rtol=1e-9)
    elif path == "eval":
        np.testing.assert_allclose(out.eval({x: VALUE}), expected, rtol=1e-9)
    elif path == "grad":
        g = nbgraph.grad(out.sum(), x)
        f = nbgraph.function([x], g, linker="py")
        np.testing.assert_allclose(f(VALUE), _grad_expected(shape, nodes), rtol=1e-9)
    else:
        raise ValueError("unknown path %r" % path)
    return time.perf_counter() - t0, time.process_time() - c0


def together(shape, nodes, paths):
    """Run ``paths`` one after another on one graph in this process (quicker than one
    process per path; the peak column is then the process's peak so far)."""
    sys.setrecursionlimit(1000)
    for path in paths:
        try:
            wall, cpu = run_path(path, shape, nodes) if path == "build" else _on_built(
                path, shape, nodes)
            secs = "%10.2f %10.2f" % (wall, cpu)
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            secs = "%s: %s" % (type(exc).__name__, str(exc)[:100])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("%-8s %-6s %s %10.0f" % (path, shape, secs, peak), flush=True)


_GRAPHS = {}


def _on_built(path, shape, nodes):
    global build
    if (shape, nodes) not in _GRAPHS:
        _GRAPHS[(shape, nodes)] = build(shape, nodes)
    original = build
    build = lambda shape, nodes: _GRAPHS[(shape, nodes)]  # noqa: E731
    try:
        return run_path(path, shape, nodes)
    finally:
        build = original


def _child(path, shape, nodes):
    sys.setrecursionlimit(1000)  # the default: big graphs must not need more
    try:
        wall, cpu = run_path(path, shape, nodes)
        result = {"seconds": wall, "cpu": cpu}
    except BaseException as exc:  # noqa: BLE001 - reported, not hidden
        result = {"error": "%s: %s" % (type(exc).__name__, str(exc)[:200])}
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result), flush=True)


def measure(path, shape, nodes, limit_mb, timeout):
    """Run one path in a fresh process; a dict with seconds (or error) and peak_mb."""
    code = "from bench.scale import _child; _child(%r, %r, %d)" % (path, shape, nodes)
    limit = limit_mb * 1024 * 1024

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              preexec_fn=cap, timeout=timeout, cwd=here, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "timeout after %d s" % timeout}
    lines = proc.stdout.strip().splitlines()
    if not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or ["exit %d" % proc.returncode]
        return {"error": tail[0][:200]}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("-k", default="", help="only paths whose name contains this")
    parser.add_argument("--shape", choices=SHAPES, default=None)
    parser.add_argument("--limit-mb", type=int, default=6000)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--together", action="store_true",
                        help="all paths of a shape in one process (peak = peak so far)")
    args = parser.parse_args(argv)
    print("%d nodes; wall and CPU seconds of the path (the graph built beforehand), peak RSS "
          "of its process" % args.nodes)
    print("%-8s %-6s %10s %10s %10s" % ("path", "graph", "wall s", "CPU s", "peak MB"))
    if args.together:
        paths = [p for p in PATHS if not args.k or args.k in p or p == "build"]
        for shape in SHAPES:
            if not args.shape or shape == args.shape:
                together(shape, args.nodes, paths)
        return 0
    for path in PATHS:
        if args.k and args.k not in path:
            continue
        for shape in SHAPES:
            if args.shape and shape != args.shape:
                continue
            r = measure(path, shape, args.nodes, args.limit_mb, args.timeout)
            secs = "%10.2f %10.2f" % (r["seconds"], r["cpu"]) if "seconds" in r else r["error"]
            peak = "%.0f" % r["peak_mb"] if "peak_mb" in r else "-"
            print("%-8s %-6s %s %10s" % (path, shape, secs, peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
