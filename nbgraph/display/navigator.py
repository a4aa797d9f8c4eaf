"""GraphNavigator: an interactive view of a big graph (ipywidgets), collapsed by scope.

>>> import nbgraph, nbgraph.tensor as nt
>>> from nbgraph.display import GraphNavigator
>>> x = nt.dvector("x")
>>> with nbgraph.scope("layer1"):
...     y = nt.tanh(x * 2.0)
>>> nav = GraphNavigator(y + 1.0, collapse=True)
>>> nav.boxes()
['layer1']
>>> nav.toggle("layer1")                 # expand it (a click on the box does the same)
>>> nav.expanded
['layer1']
>>> nav.search.value = "tanh"            # search by name or Op: matches are outlined
>>> [nav.describe(n) for n in nav.found]
['a1: Elemwise{tanh}']

The panel (an ``ipywidgets.VBox``) has, top to bottom:

- a toolbar: ``search`` (Text: a name, an Op or a label such as
  ``grad(cost, W0)``; the boxes holding a match open and matches are
  outlined), ``matches`` (Dropdown of what was found: choosing one selects it),
  ``box`` (Dropdown of every scope box, with ``toggle_button`` to expand or
  collapse it), ``expand_all`` / ``collapse_all`` and ``rankdir``
  (ToggleButtons top-to-bottom / left-to-right); for a compiled Function
  called with ``profile=True``, ``show_values`` (run-time shapes and small
  values of the last call on the edges) and ``show_profile`` (boxes coloured
  by their share of the time);
- ``canvas`` (HTML): the diagram as inline SVG.  Wheel to zoom, drag to pan,
  hover a node for its type and static shape, click a box to expand or
  collapse it, click a node to select it.  (Clicks reach Python through the
  hidden ``pick`` Text box.)  The layout is computed once per change of what
  is expanded (``dot`` output is cached), never on pan, zoom or hover;
- ``details`` (HTML): the selected node: Op, output types, scope, the line
  that built it, its dprint subtree, the narrowing trace of the rewrite that
  put it there (for a FunctionGraph or Function with a history), and, when
  run-time values are known (``values=``), their shape, dtype and range.

Graphs start collapsed (every scope box shut) beyond
:data:`~nbgraph.display.dense.AUTO_COLLAPSE` Apply nodes.  A saved or exported
notebook shows a static snapshot (the picture and the details) next to the
widget (:mod:`nbgraph.display.snapshot`).
"""

from __future__ import annotations

import html
import time

from nbgraph.display.groups import parse_path, path_text
from nbgraph.display.snapshot import LiveSnapshot

__all__ = ["GraphNavigator", "CANVAS_HEIGHT"]

#: Height (px) of the canvas the diagram is panned and zoomed in.
CANVAS_HEIGHT = 560
_FIT_WIDTH = 860

# Inline handlers of the canvas (no quotes, <, > or & inside: they sit in attributes).
_APPLY = ("this.firstElementChild.style.transform='translate('+this.dataset.x+'px,'"
          "+this.dataset.y+'px) scale('+this.dataset.z+')';")
_WHEEL_JS = ("event.preventDefault();var z=parseFloat(this.dataset.z),x=parseFloat(this.dataset.x),"
             "y=parseFloat(this.dataset.y),r=this.getBoundingClientRect(),"
             "mx=event.clientX-r.left,my=event.clientY-r.top,"
             "n=Math.min(8,Math.max(0.02,z*Math.pow(1.15,-Math.sign(event.deltaY))));"
             "this.dataset.x=mx-(mx-x)*n/z;this.dataset.y=my-(my-y)*n/z;this.dataset.z=n;"
             + _APPLY)
_DOWN_JS = ("this.dataset.d='1';this.dataset.m='0';this.dataset.px=event.clientX;"
            "this.dataset.py=event.clientY;this.style.cursor='grabbing';")
_MOVE_JS = ("if(this.dataset.d!=='1')return;var dx=event.clientX-parseFloat(this.dataset.px),"
            "dy=event.clientY-parseFloat(this.dataset.py);"
            "if(Math.sign(Math.max(Math.abs(dx),Math.abs(dy))-2)===1)this.dataset.m='1';"
            "this.dataset.x=parseFloat(this.dataset.x)+dx;"
            "this.dataset.y=parseFloat(this.dataset.y)+dy;this.dataset.px=event.clientX;"
            "this.dataset.py=event.clientY;" + _APPLY)
_UP_JS = "this.dataset.d='0';this.style.cursor='grab';"
_CLICK_JS = ("if(this.dataset.m==='1'){this.dataset.m='0';return;}"
             "var t=event.target.closest('g.node,g.cluster');if(!t||!t.id)return;"
             "var p=this.closest('.nbgraph-navigator').querySelector('.nbgraph-pick input');"
             "if(!p)return;p.value=t.id+'|'+Date.now();"
             "p.dispatchEvent(new Event('input',{bubbles:true}));"
             "p.dispatchEvent(new Event('change',{bubbles:true}));")

for _js in (_WHEEL_JS, _DOWN_JS, _MOVE_JS, _UP_JS, _CLICK_JS):
    assert not set('"&<>') & set(_js), _js


class _Deferred(type):
    """Metaclass of the public name: builds the real ipywidgets class on first use."""

    def __call__(cls, *args, **kwargs):
        return _widget_class()(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _widget_class())


class GraphNavigator(metaclass=_Deferred):
    """An interactive, collapsible view of a Variable, a list of them, a FunctionGraph
    or a Function.

    ``GraphNavigator(obj, collapse=None, expand=(), rankdir="TB", values=None,
    profile=None, max_nodes=300, show_types=True)``: the first arguments are
    those of :func:`~nbgraph.display.diagram` in the dense style.  See the
    module docstring for the child widgets.  Also: ``boxes()`` (every scope
    path), ``expanded`` (the open ones), ``toggle(path)``, ``select(name)``
    (a DOT name such as ``"a12"``), ``selected`` (the Apply or root shown in
    ``details``), ``found`` (search matches), ``svg`` (the current picture),
    ``render_seconds`` (the last layout's time), ``snapshot_html()``.
    """


_CLASS = None


def _widget_class():
    global _CLASS
    if _CLASS is None:
        import ipywidgets

        _CLASS = type("GraphNavigator", (_Navigator, LiveSnapshot, ipywidgets.VBox), {
            "__doc__": GraphNavigator.__doc__, "__module__": __name__})
    return _CLASS


class _Navigator:
    """The navigator's behaviour; mixed into ipywidgets.VBox by :func:`_widget_class`."""

    def __init__(self, obj, collapse=None, expand=(), rankdir="TB", values=None, profile=None,
                 max_nodes=300, show_types=True, **kwargs):
        import ipywidgets as w

        from nbgraph.display.dense import DenseLayout
        from nbgraph.display.drawing import GraphSource

        self.obj = obj
        self.source = GraphSource.of(obj)
        self.values = values
        self.profile = profile
        self.max_nodes = max_nodes
        self.show_types = show_types
        base = DenseLayout(self.source.outputs, self.source.inputs, labels=self.source.labels,
                           kinds=self.source.kinds, show_types=show_types, max_nodes=max_nodes,
                           rankdir=rankdir, collapse=collapse, expand=expand, values=values,
                           profile=profile)
        self._layout = base
        self._all = sorted({p for path in base.paths.values()
                            for p in (path[:k] for k in range(1, len(path) + 1))})
        self._open = {p for p in self._all if p not in base.collapsed}
        self._inner_open = set(base.expanded_inner)
        self.found = []
        self.selected = None
        self.svg = ""
        self.render_seconds = 0.0

        self.search = w.Text(placeholder="search a name or an Op", continuous_update=False,
                             layout=w.Layout(width="220px"))
        self.matches = w.Dropdown(options=[("(no search)", "")], value="",
                                  layout=w.Layout(width="240px"))
        self.box = w.Dropdown(options=self._box_options() or [("(no scopes)", "")],
                              layout=w.Layout(width="220px"))
        self.toggle_button = w.Button(description="expand / collapse", icon="sitemap",
                                      layout=w.Layout(width="150px"))
        self.expand_all = w.Button(description="expand all", layout=w.Layout(width="100px"))
        self.collapse_all = w.Button(description="collapse all", layout=w.Layout(width="100px"))
        self.rankdir = w.ToggleButtons(options=[("top-down", "TB"), ("left-right", "LR")],
                                       value=rankdir, style={"button_width": "80px"})
        # run-time overlays of a compiled Function, when it has been called
        self.show_values = w.Checkbox(value=values is not None, indent=False,
                                      description="run-time values",
                                      disabled=values is None and _last_args(obj) is None)
        self.show_profile = w.Checkbox(value=profile is not None, indent=False,
                                       description="time share",
                                       disabled=profile is None and not _profiled(obj))
        self.canvas = w.HTML()
        self.canvas.add_class("nbgraph-nav-canvas-widget")
        self.details = w.HTML(layout=w.Layout(max_height="360px", overflow="auto"))
        self.pick = w.Text(continuous_update=True, layout=w.Layout(display="none"))
        self.pick.add_class("nbgraph-pick")
        children = [
            w.HBox([self.search, self.matches, self.rankdir]),
            w.HBox([self.box, self.toggle_button, self.expand_all, self.collapse_all,
                    self.show_values, self.show_profile]),
            self.canvas, self.details, self.pick,
        ]
        super().__init__(children=children, **kwargs)
        self.add_class("nbgraph-navigator")
        self.children = tuple(children) + (self.snapshot_hider(),)
        self.search.observe(self._on_search, names="value")
        self.matches.observe(self._on_match, names="value")
        self.toggle_button.on_click(lambda _: self.toggle(self.box.value))
        self.expand_all.on_click(lambda _: self._set_open(set(self._all)))
        self.collapse_all.on_click(lambda _: self._set_open(set()))
        self.rankdir.observe(lambda _: self.redraw(), names="value")
        self.pick.observe(self._on_pick, names="value")
        self.show_values.observe(self._on_overlay, names="value")
        self.show_profile.observe(self._on_overlay, names="value")
        self.details.value = _HINT
        self.redraw()

    # -- state ----------------------------------------------------------------
    def boxes(self):
        """Every scope box of the graph, as ``"layer1/affine"`` paths."""
        return [path_text(p) for p in self._all]

    @property
    def expanded(self):
        """The open boxes, as paths."""
        return [path_text(p) for p in self._all if p in self._open]

    def toggle(self, path):
        """Expand a collapsed box or collapse an expanded one (``"layer1"``, or an
        Apply's DOT name such as ``"a12"`` for its inner graph)."""
        if not path:
            return
        if path in self._layout.names_of_applys:
            self._inner_open ^= {path}
            self.redraw()
            return
        p = parse_path(path)
        if p not in self._all:
            raise ValueError("no box %r in this graph (boxes: %s)" % (path, self.boxes()))
        opened = set(self._open)
        opened ^= {p}
        if p in opened:  # opening a box opens the boxes around it
            opened.update(p[:k] for k in range(1, len(p)))
        self._set_open(opened)

    def _set_open(self, opened):
        self._open = set(opened)
        self.box.options = self._box_options() or [("(no scopes)", "")]
        self.redraw()

    def _box_options(self):
        return [("%s %s" % ("\u25be" if p in self._open else "\u25b8", path_text(p)),
                 path_text(p)) for p in self._all]


    # -- drawing --------------------------------------------------------------
    def redraw(self):
        """Lay the graph out again for what is expanded now (cached by DOT source)."""
        from nbgraph.display import rich
        from nbgraph.display.picture import svg_size

        start = time.perf_counter()
        try:
            self._layout.set_view(collapsed=[p for p in self._all if p not in self._open],
                                  expanded_inner=self._inner_open, rankdir=self.rankdir.value,
                                  highlight=self._highlighted())
            self.svg = rich.render_svg(self._layout.build())
        except Exception as exc:  # no dot, or a failure: say so, never raise
            self.svg = ""
            self.canvas.value = '<p class="nbgraph-hint" style="color:#666"><i>%s</i></p>' % (
                html.escape(str(exc) if isinstance(exc, rich.DiagramUnavailable)
                            else "(diagram unavailable: %s)" % exc))
            self.update_snapshot()
            return
        self.render_seconds = time.perf_counter() - start
        size = svg_size(self.svg) or (_FIT_WIDTH, CANVAS_HEIGHT)
        zoom = min(1.0, _FIT_WIDTH / size[0], 1.0 if size[1] < 3 * CANVAS_HEIGHT
                   else 2.5 * CANVAS_HEIGHT / size[1])
        self.canvas.value = (
            '<div class="nbgraph-nav-canvas" data-z="%.4f" data-x="0" data-y="0" data-d="0" '
            'data-m="0" title="wheel: zoom, drag: pan, click a box: expand or collapse, '
            'click a node: details" style="position:relative;overflow:hidden;height:%dpx;'
            'background:#ffffff;color:#000;border:1px solid #bbb;border-radius:4px;'
            'cursor:grab;user-select:none" onwheel="%s" onmousedown="%s" onmousemove="%s" '
            'onmouseup="%s" onmouseleave="%s" onclick="%s">'
            '<div class="nbgraph-nav-stage" style="transform-origin:0 0;'
            'transform:translate(0px,0px) scale(%.4f)">%s</div></div>'
            '<div style="font-size:0.85em;color:#666">%s</div>' % (
                zoom, CANVAS_HEIGHT, _WHEEL_JS, _DOWN_JS, _MOVE_JS, _UP_JS, _UP_JS, _CLICK_JS,
                zoom, self.svg, html.escape(self._status())))
        self.update_snapshot()

    def _status(self):
        layout = self._layout
        shut = len(self._all) - len(self._open)
        return "%d Apply nodes, %d boxes (%d collapsed); laid out in %.0f ms" % (
            len(layout.applys), len(self._all), shut, 1000 * self.render_seconds)

    def _highlighted(self):
        marks = set(self.found)
        if self.selected is not None:
            marks.add(self.selected)
        return marks

    def _on_overlay(self, change=None):
        """The overlay toggles: values of the last profiled call, time shares."""
        layout = self._layout
        if self.show_values.value and self.values is None and _last_args(self.obj) is not None:
            from nbgraph.display.overlay import node_values

            self.values = node_values(self.obj, _last_args(self.obj))
        layout.values = (self.values or {}) if self.show_values.value else {}
        if self.show_profile.value and self.profile is None and _profiled(self.obj):
            self.profile = self.obj.profile
        layout.profile = self.profile if self.show_profile.value else None
        layout.shares = layout._shares()
        self.redraw()

    # -- search and selection -------------------------------------------------
    def _on_search(self, change=None):
        query = str(self.search.value).strip().lower()
        layout = self._layout
        found = []
        if query:
            for node in layout.applys:
                words = [str(node.op)] + [layout._out_label(o) or "" for o in node.outputs]
                if any(query in word.lower() for word in words):
                    found.append(node)
            for root in layout.roots:
                if query in (root.name or "").lower():
                    found.append(root)
        self.found = found[:50]
        opened = set(self._open)
        for item in self.found:
            path = layout.paths.get(item, ())
            opened.update(path[:k] for k in range(1, len(path) + 1))
        options = [("%d found" % len(found) if found else "nothing found", "")]
        options += [(self.describe(item), layout.names[item]) for item in self.found]
        self.matches.options = options
        self.matches.value = ""
        self._set_open(opened)

    def _on_match(self, change=None):
        if self.matches.value:
            self.select(self.matches.value)

    def _on_pick(self, change=None):
        name = str(self.pick.value).split("|")[0]
        if not name:
            return
        try:
            if name.startswith("g") or name.startswith("cluster_g"):
                groups = {v: k for k, v in self._layout.group_names.items()}
                path = groups.get(name.replace("cluster_", ""))
                if path is not None:
                    self.toggle(path_text(path))
                return
            self.select(name)
        except Exception as exc:  # never raise from a callback
            self.details.value = "<p><i>%s</i></p>" % html.escape(str(exc))

    def describe(self, item):
        """``a12: Dot`` for an Apply, ``r3: W0`` for a root."""
        layout = self._layout
        name = layout.names.get(item, "?")
        text = str(item.op) if hasattr(item, "op") else (item.name or repr(item))
        return "%s: %s" % (name, text if len(text) <= 40 else text[:39] + "\u2026")

    def select(self, name):
        """Show the details of the node drawn as ``name`` (``"a12"``, ``"r3"``)."""
        layout = self._layout
        items = {v: k for k, v in layout.names.items()}
        base = name.split("_in")[0]
        if base not in items:
            raise ValueError("no node %r in this graph" % (name,))
        if base in layout.names_of_applys and base != name:
            return  # a node of an inner graph: nothing more to show than its tooltip
        self.selected = items[base]
        self.details.value = node_details(self.selected, self)
        self.update_snapshot()

    # -- snapshot ---------------------------------------------------------------
    def snapshot_html(self):
        """The current picture and details as static HTML."""
        from nbgraph.display.picture import img_html

        parts = ['<div class="nbgraph-navigator-snapshot">',
                 '<p style="margin:0.2em 0"><b>GraphNavigator</b> (a live widget; this is a '
                 'snapshot: run the notebook to expand boxes, search and click)</p>']
        if self.svg:
            parts.append(img_html(self.svg, "nbgraph dense diagram, %s" % self._status()))
        else:
            parts.append(self.canvas.value)
        if self.selected is not None:
            parts.append(self.details.value)
        parts.append("</div>")
        return "\n".join(parts)

    def __repr__(self):
        return "<GraphNavigator: %d boxes, %d expanded>" % (len(self._all), len(self._open))


def _last_args(obj):
    """The arguments of a Function's last profiled call, or None."""
    return getattr(obj, "_last_args", None)


def _profiled(obj):
    """True for a Function compiled with profile=True and called."""
    stats = getattr(obj, "_profile", None)
    return bool(stats is not None and getattr(stats, "calls", 0))


_HINT = ('<p style="color:#666;margin:0.3em 0"><i>click a node for its details; click a '
         'box (&#9656;) to expand it</i></p>')


def node_details(item, nav=None):
    """HTML describing an Apply node or a root Variable (what ``details`` shows)."""
    from nbgraph.core.trace import describe_site, site_of

    esc = html.escape
    layout = nav._layout if nav is not None else None
    outputs = list(getattr(item, "outputs", [item]))
    rows = []
    title = str(item.op) if hasattr(item, "op") else (item.name or repr(item))
    rows.append("<b>%s</b> <code>%s</code>" % (
        esc(layout.names.get(item, "")) if layout else "", esc(title)))
    rows.extend(_output_line(k, out, layout, nav) for k, out in enumerate(outputs))
    path = layout.paths.get(item) if layout else None
    if path:
        rows.append("scope: <code>%s</code>" % esc(path_text(path)))
    site = describe_site(site_of(item))
    if site:
        rows.append("<pre style=\"margin:0\">%s</pre>" % esc(site))
    rows.append(_dprint_section(outputs[0]))
    rows.append(_trace_section(outputs, nav))
    return '<div class="nbgraph-node-details" style="background:#fff;color:#000">%s</div>' % (
        "<br>".join(r for r in rows if r))


def _output_line(k, out, layout, nav):
    """``label: <type>``, its static shape and, when known, its run-time value."""
    from nbgraph.display.names import type_notation

    esc = html.escape
    label = (layout._out_label(out) if layout else out.name) or "output %d" % k
    shape = getattr(out.type, "shape", None)
    line = "%s: <code>%s</code>" % (esc(label), esc(type_notation(out.type)))
    if shape is not None:
        line += " &middot; static shape %s" % esc(str(tuple(shape)))
    values = getattr(nav, "values", None) or {}
    if out in values:
        line += " &middot; run-time: %s" % esc(value_summary(values[out]))
    return line


def _dprint_section(var):
    """The first four levels of ``var``'s dprint, in an open ``<details>``."""
    from nbgraph.display.text import dprint_text

    try:
        tree = dprint_text(var, print_type="short", depth=4)
    except Exception as exc:
        tree = "(dprint unavailable: %s)" % exc
    return ("<details open><summary>dprint (4 levels)</summary><pre style=\"margin:0\">"
            "%s</pre></details>" % html.escape(tree.rstrip("\n")))


def _trace_section(outputs, nav):
    from nbgraph.display.narrowing import trace_html

    fgraph = getattr(getattr(nav, "source", None), "fgraph", None)
    history = getattr(fgraph, "history", None) or []
    for record in history:
        if any(record.new is out or getattr(record, "requested", None) is out
               for out in outputs) and record.trace is not None:
            try:
                return "<details><summary>narrowing trace (%s)</summary>%s</details>" % (
                    html.escape(record.reason or "rewrite"), trace_html(record.trace,
                                                                        diagrams=False))
            except Exception:
                return ""
    if fgraph is not None:
        return "<i>no rewrite replaced this node's outputs</i>"
    return ""


def value_summary(value):
    """``float64 (3, 4), min -1.2, max 3.4, mean 0.5`` (small values written out)."""
    import numpy as np

    from nbgraph.display.dense import value_text

    arr = np.asarray(value)
    text = "%s %s" % (arr.dtype, value_text(arr, max_items=6))
    if arr.size and arr.dtype.kind in "fiub" and arr.size > 6:
        text += ", min %.4g, max %.4g, mean %.4g" % (arr.min(), arr.max(), arr.mean())
    return text
