"""Per-node profiling of a compiled Function (``function(..., profile=True)``)."""

__all__ = ["ProfileStats"]


class ProfileStats:
    """Calls, time and output memory for every node of one Function.

    ``rows()`` gives one dict per node (sorted by total time); ``str()`` is a
    text table.  Sizes come from each output Type's ``get_shape_info`` and
    ``get_size``.
    """

    def __init__(self, function):
        self.function = function
        self.nodes = list(function.program.nodes)
        self.calls = 0
        self.node_calls = [0] * len(self.nodes)
        self.node_time = [0.0] * len(self.nodes)
        self.node_bytes = [0] * len(self.nodes)

    def record(self, index, seconds, nbytes):
        """Add one run of node ``index``."""
        self.node_calls[index] += 1
        self.node_time[index] += seconds
        self.node_bytes[index] = max(self.node_bytes[index], nbytes)

    @property
    def kinds(self):
        """How each node runs now ("py" or "c"): read from the program, whose nodes
        switch to C when a background compilation finishes."""
        return list(self.function.program.kinds)

    @property
    def total_time(self):
        """Seconds spent inside nodes, over all calls."""
        return sum(self.node_time)

    def rows(self):
        """One dict per node: node, op, kind, calls, seconds, per_call, share, bytes."""
        total = self.total_time or 1.0
        out = []
        for i, node in enumerate(self.nodes):
            calls = self.node_calls[i]
            out.append({
                "index": i,
                "node": node,
                "op": str(node.op),
                "kind": self.kinds[i],
                "calls": calls,
                "seconds": self.node_time[i],
                "per_call": self.node_time[i] / calls if calls else 0.0,
                "share": self.node_time[i] / total,
                "bytes": self.node_bytes[i],
            })
        out.sort(key=lambda r: (-r["seconds"], r["index"]))
        return out

    def __str__(self):
        header = "%-4s %-36s %-4s %7s %11s %11s %7s %12s" % (
            "#", "node", "kind", "calls", "total (s)", "per call", "share", "out bytes")
        lines = ["profile of %r: %d calls, %.6f s in nodes" % (
            self.function, self.calls, self.total_time), header, "-" * len(header)]
        for r in self.rows():
            label = str(r["node"])
            if len(label) > 36:
                label = label[:33] + "..."
            lines.append("%-4d %-36s %-4s %7d %11.6f %11.2e %6.1f%% %12d" % (
                r["index"], label, r["kind"], r["calls"], r["seconds"], r["per_call"],
                100 * r["share"], r["bytes"]))
        return "\n".join(lines)

    def __repr__(self):
        return "<ProfileStats %d nodes, %d calls>" % (len(self.nodes), self.calls)
