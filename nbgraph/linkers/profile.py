"""Per-node profiling of a compiled Function (``function(..., profile=True)``).

A :class:`ProfileStats` accumulates over every call of its Function (``reset()``
starts again).  Its text and its notebook display summarise: the slowest nodes
first (:data:`TOP_NODES` of them, then one "other N nodes" line) and, for a
function with more nodes than that, the time per Op class and per Op.  Times
in one column share one unit.  Without ``profile=True``, ``f.profile`` is
:data:`PROFILE_OFF`, which is falsy and says how to turn profiling on.
"""

__all__ = ["ProfileStats", "PROFILE_OFF", "TOP_NODES", "TOP_GROUPS"]

#: Rows of the per-node table shown by default; the rest are summed in one line.
TOP_NODES = 10

#: Rows of the per-Op-class and per-Op tables shown by default.
TOP_GROUPS = 5


class _ProfileOff:
    """What ``f.profile`` is when ``f`` was compiled without ``profile=True``."""

    def __bool__(self):
        return False

    def __repr__(self):
        return ("profiling is off for this function: compile it with "
                "function(..., profile=True), or set f.profile = True")

    __str__ = __repr__


#: ``f.profile`` of a function compiled without ``profile=True`` (falsy).
PROFILE_OFF = _ProfileOff()


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

    def reset(self):
        """Forget every call recorded so far."""
        n = len(self.nodes)
        self.calls = 0
        self.node_calls = [0] * n
        self.node_time = [0.0] * n
        self.node_bytes = [0] * n

    def by_class(self):
        """Time per Op class: dicts (name, seconds, share, nodes), slowest first."""
        return self._grouped(lambda node: type(node.op).__name__)

    def by_op(self):
        """Time per Op (equal Ops together): dicts (name, seconds, share, nodes)."""
        return self._grouped(lambda node: str(node.op))

    def _grouped(self, key):
        total = self.total_time or 1.0
        groups = {}
        for node, seconds in zip(self.nodes, self.node_time, strict=True):
            entry = groups.setdefault(key(node), [0.0, 0])
            entry[0] += seconds
            entry[1] += 1
        out = [{"name": name, "seconds": t, "share": t / total, "nodes": n}
               for name, (t, n) in groups.items()]
        out.sort(key=lambda r: (-r["seconds"], r["name"]))
        return out

    def summary(self, top=TOP_NODES, groups=TOP_GROUPS):
        """The text table: the ``top`` slowest nodes (the rest in one line), then,
        when nodes were left out, the ``groups`` slowest Op classes and Ops."""
        rows = self.rows()
        unit, scale = _unit(max([r["seconds"] for r in rows] + [0.0]))
        punit, pscale = _unit(max([r["per_call"] for r in rows] + [0.0]))
        header = "%-4s %-36s %-4s %7s %13s %13s %7s %12s" % (
            "#", "node", "kind", "calls", "total (%s)" % unit, "per call (%s)" % punit,
            "share", "out bytes")
        lines = ["profile of %r: %d call%s, %s in nodes" % (
            self.function, self.calls, "" if self.calls == 1 else "s",
            _seconds(self.total_time)), header, "-" * len(header)]
        for r in rows[:top]:
            lines.append("%-4d %-36s %-4s %7d %13.3f %13.3f %6.1f%% %12d" % (
                r["index"], _one_line(str(r["node"]), 36), r["kind"], r["calls"],
                r["seconds"] * scale, r["per_call"] * pscale, 100 * r["share"], r["bytes"]))
        rest = rows[top:]
        if rest:
            lines.append("     other %d node%s: %s (%.1f%%)" % (
                len(rest), "" if len(rest) == 1 else "s",
                _seconds(sum(r["seconds"] for r in rest)), 100 * sum(r["share"] for r in rest)))
            for title, table in (("Op class", self.by_class()), ("Op", self.by_op())):
                lines.append("")
                lines.append("by %s:" % title)
                for g in table[:groups]:
                    lines.append("  %-40s %11s %6.1f%%  %d node%s" % (
                        _one_line(g["name"], 40), _seconds(g["seconds"]), 100 * g["share"],
                        g["nodes"], "" if g["nodes"] == 1 else "s"))
                if len(table) > groups:
                    others = table[groups:]
                    lines.append("  other %d %s%s: %s" % (
                        len(others), title, "es" if title.endswith("class") else "s",
                        _seconds(sum(g["seconds"] for g in others))))
        return "\n".join(lines)

    def __str__(self):
        return self.summary()

    def __repr__(self):
        return "<ProfileStats %d nodes, %d calls>" % (len(self.nodes), self.calls)


_UNITS = (("s", 1.0), ("ms", 1e3), ("us", 1e6))


def _unit(largest):
    """The unit (name, factor) in which ``largest`` seconds reads best."""
    for name, factor in _UNITS:
        if largest * factor >= 1.0:
            return name, factor
    return _UNITS[-1]


def _seconds(seconds):
    name, factor = _unit(seconds)
    return "%.3f %s" % (seconds * factor, name)


def _one_line(text, width):
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."
