"""A compiled Function's profile in a notebook: the HTML table and the SVG bar chart.

:func:`profile_html` is what a :class:`~nbgraph.linkers.profile.ProfileStats`
shows as ``text/html`` (its ``text/plain`` is its own ``str``): the slowest
nodes in a table sortable by clicking a header, the rest summed in one row,
the time per Op class and per Op when nodes were left out, and
:func:`profile_chart_svg`, a bar chart of time and output memory per node.
:func:`format_seconds` and :func:`format_bytes` write the numbers (the dense
diagram's time overlay and the explorer use them too).

:mod:`nbgraph.display.rich` re-exports every public name here.
"""

import html

from nbgraph.display.names import safe_repr

__all__ = ["profile_html", "profile_chart_svg", "format_seconds", "format_bytes"]

# Sorts the table on a header click (no global script: works wherever inline
# handlers run).  Numbers compare numerically, the rest as text; a second
# click on the same header reverses the order.
_SORT_JS = (
    "var t=this.closest('table'),b=t.tBodies[0],i=this.cellIndex,"
    "d=this.getAttribute('data-dir')==='desc'?'asc':'desc';"
    "Array.prototype.forEach.call(this.parentNode.cells,function(h){"
    "h.removeAttribute('data-dir');});"
    "this.setAttribute('data-dir',d);"
    "var r=Array.prototype.slice.call(b.rows);"
    "r.sort(function(x,y){var p=x.cells[i].getAttribute('data-v'),"
    "q=y.cells[i].getAttribute('data-v'),m=parseFloat(p),n=parseFloat(q),"
    "c=(isNaN(m)||isNaN(n))?p.localeCompare(q):m-n;return d==='asc'?c:-c;});"
    "r.forEach(function(x){b.appendChild(x);});")

assert not set('"&<>') & set(_SORT_JS)  # safe as is inside onclick="..."

_PROFILE_COLUMNS = (
    # (header, row key, formatter)
    ("#", "index", str),
    ("node", "node", None),
    ("runs in", "kind", None),
    ("calls", "calls", str),
    ("total time", "seconds", None),
    ("per call", "per_call", None),
    ("share", "share", None),
    ("output memory", "bytes", None),
)

_CHART_ROWS = 10  # the nodes of the table (TOP_NODES)
_TIME_COLOR = "#4c78a8"
_MEMORY_COLOR = "#f58518"


def format_seconds(seconds):
    """``1.5e-05`` -> ``'15.0 \u00b5s'``."""
    if seconds <= 0:
        return "0 s"
    if seconds < 1e-3:
        return "%.1f \u00b5s" % (seconds * 1e6)
    if seconds < 1:
        return "%.2f ms" % (seconds * 1e3)
    return "%.3f s" % seconds


def format_bytes(nbytes):
    """``2048`` -> ``'2.0 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return "%d B" % nbytes if unit == "B" else "%.1f %s" % (value, unit)
        value /= 1024
    return "%d B" % nbytes  # pragma: no cover


def profile_html(stats, top=None, groups=None):
    """A ProfileStats as HTML: the slowest nodes (sortable by clicking a header), the
    rest in one "other N nodes" row, the time per Op class and per Op when nodes were
    left out, and a bar chart of the nodes shown.

    Labels are one line (the full text in their tooltip), numbers never wrap, and
    each time column uses one unit.  ``top`` / ``groups`` default to
    :data:`~nbgraph.linkers.profile.TOP_NODES` / ``TOP_GROUPS``.
    """
    from nbgraph.display.drawing import LINKER_NAMES
    from nbgraph.linkers.profile import TOP_GROUPS, TOP_NODES

    top = TOP_NODES if top is None else top
    groups = TOP_GROUPS if groups is None else groups
    rows = stats.rows()
    shown, rest = rows[:top], rows[top:]
    units = {key: _time_unit(max([r[key] for r in rows] + [0.0]))
             for key in ("seconds", "per_call")}
    parts = ['<div class="nbgraph-profile">', _title(stats, rows)]
    parts.append('<table class="nbgraph-profile-table" style="border-collapse:collapse;'
                 'font-size:0.9em;margin:0.3em 0">')
    parts.append("<thead><tr>%s</tr></thead><tbody>" % _header_cells(units))
    parts.extend(_node_row(r, units, LINKER_NAMES) for r in shown)
    parts.append("</tbody>")
    if rest:
        parts.append(_other_row(rest, units["seconds"]))
    parts.append("</table>")
    if rest:
        for title, table in (("by Op class", stats.by_class()), ("by Op", stats.by_op())):
            parts.append(_group_table(title, table, groups, _CELL))
    parts.append(profile_chart_svg(stats, rows))
    parts.append("</div>")
    return "\n".join(parts)


#: The style of a table cell; ``%s`` is its alignment.
_CELL = ("border:1px solid #ccc;padding:2px 8px;text-align:%s;vertical-align:top;"
         "white-space:nowrap")


def _align(key):
    return "left" if key in ("node", "kind") else "right"


def _title(stats, rows):
    """The line above the table: which function, how many calls, time and nodes."""
    esc = html.escape
    return ('<p style="margin:0.2em 0"><b>profile</b> of <code>%s</code>: %d call%s, '
            '%s in nodes (%d node%s)</p>' % (esc(safe_repr(stats.function)), stats.calls,
                                            "" if stats.calls == 1 else "s",
                                            esc(format_seconds(stats.total_time)),
                                            len(rows), "" if len(rows) == 1 else "s"))


def _header_cells(units):
    """The clickable column headers; the time columns name their unit."""
    titles = {key: "%s (%s)" % (name, units[key][0])
              for key, name in (("seconds", "total time"), ("per_call", "per call"))}
    return "".join('<th style="%s;cursor:pointer" title="click to sort" onclick="%s">%s</th>'
                   % (_CELL % _align(key), _SORT_JS, html.escape(titles.get(key, title)))
                   for title, key, _ in _PROFILE_COLUMNS)


def _node_row(r, units, linker_names):
    """One node's row: each cell shows a formatted value and sorts by the raw one."""
    esc = html.escape
    node_text = safe_repr(r["node"])
    kind = linker_names.get(r["kind"], str(r["kind"]))
    shown_cells = {
        "index": str(r["index"]),
        "node": '<code title="%s">%s</code>' % (esc(node_text), esc(_cut(node_text, 48))),
        "kind": esc(kind),
        "calls": str(r["calls"]),
        "seconds": "%.3f" % (r["seconds"] * units["seconds"][1]),
        "per_call": "%.3f" % (r["per_call"] * units["per_call"][1]),
        "share": "%.1f%%" % (100 * r["share"]),
        "bytes": esc(format_bytes(r["bytes"])),
    }
    sort_value = {"node": node_text, "kind": kind}
    cells = []
    for _, key, _ in _PROFILE_COLUMNS:
        value = sort_value.get(key, r[key])
        cells.append('<td style="%s" data-v="%s">%s</td>' % (
            _CELL % _align(key), esc(str(value)), shown_cells[key]))
    return "<tr>%s</tr>" % "".join(cells)


def _other_row(rest, t_unit):
    """The footer row summing the nodes left out of the table."""
    cell = _CELL
    return ('<tfoot><tr><td style="%s" colspan="4"><i>other %d node%s</i></td>'
            '<td style="%s">%.3f</td><td style="%s"></td><td style="%s">%.1f%%</td>'
            '<td style="%s"></td></tr></tfoot>' % (
                cell % "left", len(rest), "" if len(rest) == 1 else "s",
                cell % "right", sum(r["seconds"] for r in rest) * t_unit[1],
                cell % "right", cell % "right",
                100 * sum(r["share"] for r in rest), cell % "right"))


def _group_table(title, table, groups, cell):
    esc = html.escape
    unit = _time_unit(max([g["seconds"] for g in table] + [0.0]))
    out = ['<table class="nbgraph-profile-groups" style="border-collapse:collapse;'
           'font-size:0.9em;margin:0.3em 0;display:inline-table;vertical-align:top;'
           'margin-right:1.5em">',
           '<thead><tr><th style="%s">%s</th><th style="%s">time (%s)</th>'
           '<th style="%s">share</th><th style="%s">nodes</th></tr></thead><tbody>' % (
               cell % "left", esc(title), cell % "right", unit[0], cell % "right",
               cell % "right")]
    for g in table[:groups]:
        out.append('<tr class="nbgraph-group"><td style="%s"><code title="%s">%s</code></td>'
                   '<td style="%s">%.3f</td><td style="%s">%.1f%%</td><td style="%s">%d</td></tr>'
                   % (cell % "left", esc(g["name"]), esc(_cut(g["name"], 40)), cell % "right",
                      g["seconds"] * unit[1], cell % "right", 100 * g["share"],
                      cell % "right", g["nodes"]))
    if len(table) > groups:
        others = table[groups:]
        out.append('<tr class="nbgraph-group"><td style="%s"><i>other %d</i></td>'
                   '<td style="%s">%.3f</td><td style="%s">%.1f%%</td><td style="%s">%d</td>'
                   '</tr>' % (cell % "left", len(others), cell % "right",
                              sum(g["seconds"] for g in others) * unit[1], cell % "right",
                              100 * sum(g["share"] for g in others), cell % "right",
                              sum(g["nodes"] for g in others)))
    out.append("</tbody></table>")
    return "\n".join(out)


def _time_unit(largest):
    """(name, factor) of the unit in which ``largest`` seconds reads best."""
    for unit, factor in (("s", 1.0), ("ms", 1e3)):
        if largest * factor >= 1.0:
            return unit, factor
    return "\u00b5s", 1e6


def _cut(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def profile_chart_svg(stats, rows=None):
    """An SVG bar chart: per node, total time (blue) and output memory (orange)."""
    esc = html.escape
    rows = stats.rows() if rows is None else rows
    if not rows:
        return "<p><i>no nodes to chart</i></p>"
    if not stats.calls:
        return "<p><i>no calls recorded yet: call the function, then display its profile</i></p>"
    shown = rows[:_CHART_ROWS]
    label_w, bar_w, value_w, gap, row_h, top = 250, 170, 72, 16, 18, 22
    panel = bar_w + value_w
    width = label_w + 2 * panel + gap
    height = top + row_h * len(shown) + (row_h if len(rows) > len(shown) else 0) + 4
    max_time = max(r["seconds"] for r in rows) or 1.0
    max_bytes = max(r["bytes"] for r in rows) or 1
    x_time = label_w
    x_mem = label_w + panel + gap
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="Helvetica,Arial,sans-serif" font-size="11" role="img">' % (
               width, height),
           '<text x="%d" y="14" font-weight="bold">time</text>' % x_time,
           '<text x="%d" y="14" font-weight="bold">output memory</text>' % x_mem]
    for n, r in enumerate(shown):
        y = top + n * row_h
        label = safe_repr(r["node"])
        short = label if len(label) <= 40 else label[:39] + "\u2026"
        out.append('<text x="%d" y="%d" text-anchor="end"><title>%s</title>%s</text>' % (
            label_w - 6, y + 12, esc(label), esc(short)))
        t_w = bar_w * r["seconds"] / max_time
        m_w = bar_w * r["bytes"] / max_bytes
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
            x_time, y + 2, t_w, row_h - 5, _TIME_COLOR))
        out.append('<text x="%.1f" y="%d" fill="#333">%s</text>' % (
            x_time + t_w + 4, y + 12, esc(format_seconds(r["seconds"]))))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
            x_mem, y + 2, m_w, row_h - 5, _MEMORY_COLOR))
        out.append('<text x="%.1f" y="%d" fill="#333">%s</text>' % (
            x_mem + m_w + 4, y + 12, esc(format_bytes(r["bytes"]))))
    if len(rows) > len(shown):
        out.append('<text x="6" y="%d" fill="#666">\u2026 %d more nodes (the "other" row)'
                   '</text>' % (top + len(shown) * row_h + 12, len(rows) - len(shown)))
    out.append("</svg>")
    return "\n".join(out)
