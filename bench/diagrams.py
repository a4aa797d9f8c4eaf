"""How long drawing big graphs takes: ``python -m bench.diagrams``.

Times, for each graph, building the DOT source (nbgraph), laying it out with
graphviz's ``dot`` (the render cache is cleared first) and the size of the
SVG produced:

- a 12-layer tanh MLP (width 50) with its gradient with respect to all 24
  parameters, built with one ``nbgraph.scope`` per layer (the tutorial's
  ~400-node graph): collapsed by scope (the default), with the backward
  pass opened, and fully expanded;
- a ~10,000-node graph: a 550-layer MLP (width 8) with its gradient, scoped
  ``block<k>/layer<i>`` (50 layers a block), collapsed (the default), and the
  interactive GraphNavigator built on it with one block box expanded.

Not part of ``make bench`` (no NumPy ratio: these are display timings).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def scoped_mlp(layers, width=50):
    """A scoped tanh MLP's cost and gradients: ``(outputs, n_apply, n_nodes)``."""
    import nbgraph
    import nbgraph.tensor as nt
    from nbgraph.core.graph import io_toposort

    rng = np.random.default_rng(0)
    X, Y = nt.dmatrix("X"), nt.dmatrix("Y")
    params, h = [], X
    for i in range(layers):
        W = nbgraph.shared(rng.normal(size=(width, width)) * 0.1, name="W%d" % i)
        b = nbgraph.shared(np.zeros(width), name="b%d" % i)
        params += [W, b]
        with nbgraph.scope("block%d/layer%d" % (i // 50, i) if layers > 50 else "layer%d" % i):
            h = nt.tanh(h.dot(W) + b)
    cost = ((h - Y) ** 2).mean()
    cost.name = "cost"
    outputs = [cost] + list(nbgraph.grad(cost, params))
    applys = io_toposort([X, Y] + params, outputs)
    variables = {v for n in applys for v in n.inputs + n.outputs}
    return outputs, len(applys), len(applys) + len(variables)


def time_drawing(outputs, **options):
    """(seconds to build the DOT source, seconds for dot, SVG bytes, nodes drawn)."""
    from nbgraph.display import diagram, rich

    rich.clear_cache()
    start = time.perf_counter()
    graph = diagram(outputs, style="dense", **options)
    built = time.perf_counter() - start
    start = time.perf_counter()
    svg = rich.render_svg(graph, timeout=600)
    laid = time.perf_counter() - start
    return built, laid, len(svg.encode("utf-8")), svg.count('class="node"')


def row(name, built, laid, size, drawn):
    return "%-44s %8.2f s %8.2f s %10.1f KiB %7d" % (name, built, laid, size / 1024, drawn)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big-layers", type=int, default=550,
                        help="layers of the ~10,000-node graph")
    args = parser.parse_args(argv)
    print("%-44s %10s %10s %14s %7s" % ("graph", "DOT", "dot", "SVG", "drawn"))
    outputs, n_apply, n_nodes = scoped_mlp(12)
    print("# 12-layer MLP + gradient: %d Apply nodes, %d Apply+Variable nodes" % (
        n_apply, n_nodes))
    print(row("12 layers, collapsed by scope", *time_drawing(outputs, collapse=True)))
    print(row("12 layers, gradient box opened", *time_drawing(
        outputs, collapse=True, expand=["gradient"])))
    print(row("12 layers, fully expanded", *time_drawing(
        outputs, collapse=False, max_nodes=10 ** 6)))
    start = time.perf_counter()
    outputs, n_apply, n_nodes = scoped_mlp(args.big_layers, width=8)
    print("# %d-layer MLP + gradient: %d Apply nodes, %d Apply+Variable nodes (built in %.1f s)"
          % (args.big_layers, n_apply, n_nodes, time.perf_counter() - start))
    print(row("%d layers, collapsed by scope" % args.big_layers, *time_drawing(
        outputs, collapse=True)))
    from nbgraph.display import GraphNavigator, rich

    rich.clear_cache()
    start = time.perf_counter()
    nav = GraphNavigator(outputs)
    made = time.perf_counter() - start
    start = time.perf_counter()
    nav.toggle("block2")
    opened = time.perf_counter() - start
    print("GraphNavigator on it: built (first layout) in %.2f s; expanding one layer box "
          "took %.2f s (layout %.2f s); canvas %.1f KiB" % (
              made, opened, nav.render_seconds, len(nav.canvas.value) / 1024))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
