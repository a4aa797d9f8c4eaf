"""Rich notebook display: ``_repr_mimebundle_`` for graphs, functions, traces and profiles.

How the methods reach the classes
---------------------------------
``nbgraph.core`` and ``nbgraph.linkers`` never import ``nbgraph.display``.
Instead, importing ``nbgraph.display`` (which ``import nbgraph`` always does)
calls :func:`install`, which sets one ``_repr_mimebundle_`` attribute on each
displayable class: Variable (and so every subclass: constants, tensors),
Apply, FunctionGraph, Replacement, NarrowingTrace, Function and ProfileStats.
Each attribute is a thin function calling :func:`mimebundle`.  A method
rather than an IPython formatter registration keeps it working in every
front end that honours the protocol (Jupyter, VS Code, nbclient), with or
without an IPython shell existing when nbgraph is imported, and lets tests
call it directly.  ``install`` is idempotent and never replaces a
``_repr_mimebundle_`` a class defines itself; :func:`uninstall` removes what
it added.  ``repr()`` is untouched: it stays the short text
(``SpecifyShape.0``, ``<TensorType(float64, (2, 1))>``).

What a bundle holds
-------------------
Always ``text/plain`` (dprint text for graphs, numbered steps for a trace, a
table for a profile; never a memory address).  Then, only for MIME types the
front end can show, ``image/svg+xml`` (graph diagrams) or ``text/html``
(traces, histories, profiles; graphs with a rewrite history).  The wanted
types are those allowed by ``include``/``exclude`` and, under IPython, listed
in ``get_ipython().display_formatter.active_types``: a terminal IPython lists
only ``text/plain`` there, so nothing is rendered for it.

When graphviz's ``dot`` is missing, slow (over :data:`RENDER_TIMEOUT`
seconds) or fails, the bundle falls back to its text with a one-line hint
(:data:`DOT_HINT`).  Nothing here raises: an exception in a display hook
would fail the notebook cell, so any error becomes a line of text.

A profile's HTML table and chart are built in :mod:`nbgraph.display.profiles`
(``profile_html``, ``profile_chart_svg``, ``format_seconds`` and
``format_bytes`` are importable from here too).
"""

import html
import re
import shutil
import subprocess
import sys
import threading

import graphviz

from nbgraph.display.diagram import diagram
from nbgraph.display.names import safe_repr as _safe_repr
from nbgraph.display.picture import img_html
from nbgraph.display.profiles import (  # re-exported: the profile's HTML lives there
    format_bytes,
    format_seconds,
    profile_chart_svg,
    profile_html,
)

__all__ = [
    "mimebundle",
    "render_svg",
    "DiagramUnavailable",
    "install",
    "uninstall",
    "wanted_types",
    "DOT_HINT",
    "RENDER_TIMEOUT",
    "TEXT_MAX_LINES",
    "sanitize_svg",
    "clear_cache",
    "profile_html",
    "profile_chart_svg",
    "format_seconds",
    "format_bytes",
    "picture_bundle",
    "alt_text",
]

#: The hint shown instead of a diagram when graphviz's ``dot`` program is missing.
DOT_HINT = ("(diagram unavailable: graphviz's dot program is not installed; "
            "apt-get install graphviz)")

#: Seconds ``dot`` may take before a display gives up on the diagram.
RENDER_TIMEOUT = 10.0

#: Longest ``text/plain`` a display produces; longer texts are cut with a note.
TEXT_MAX_LINES = 200

_SVG = "image/svg+xml"
_HTML = "text/html"
_TEXT = "text/plain"

_CACHE_SIZE = 64
_svg_cache = {}  # DOT source -> sanitised SVG (most recent last)
_cache_lock = threading.Lock()


class DiagramUnavailable(RuntimeError):
    """A diagram could not be rendered; ``str()`` is a one-line hint for the reader."""


# ---------------------------------------------------------------------------
# rendering


def render_svg(obj, timeout=None, **diagram_kwargs):
    """The SVG text of a diagram, laid out by graphviz's ``dot`` program.

    ``obj`` is a :class:`graphviz.Digraph` (from :func:`diagram`) or anything
    :func:`diagram` accepts, drawn with ``diagram_kwargs``.  The XML prolog and
    every comment (graphviz writes its version in one) are removed, so equal
    graphs give equal SVG and the text can be inlined in HTML.  Results are
    cached by DOT source.

    Raises :class:`DiagramUnavailable` (a one-line hint) when ``dot`` is not
    on PATH, fails, or runs longer than ``timeout`` seconds (default
    :data:`RENDER_TIMEOUT`); a late ``dot`` is killed.
    """
    graph = obj if isinstance(obj, graphviz.Digraph) else diagram(obj, **diagram_kwargs)
    source = graph.source
    with _cache_lock:
        cached = _svg_cache.get(source)
        if cached is not None:
            _svg_cache[source] = _svg_cache.pop(source)  # most recently used last
            return cached
    timeout = RENDER_TIMEOUT if timeout is None else timeout
    svg = sanitize_svg(_run_dot(source, timeout))
    with _cache_lock:
        _svg_cache[source] = svg
        while len(_svg_cache) > _CACHE_SIZE:
            _svg_cache.pop(next(iter(_svg_cache)))
    return svg


def _run_dot(source, timeout):
    """``dot -Tsvg`` on ``source``: the SVG text, or DiagramUnavailable.

    graphviz's own ``Digraph.pipe`` cannot be given a time limit, so the
    program is run here, where ``subprocess.run`` kills it when the limit
    passes: a diagram too big to lay out must not keep a CPU busy after the
    display has given up on it.
    """
    dot = shutil.which("dot")
    if dot is None:
        raise DiagramUnavailable(DOT_HINT)
    try:
        proc = subprocess.run([dot, "-Tsvg"], input=source.encode("utf-8"),
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DiagramUnavailable(
            "(diagram unavailable: dot did not finish within %g s; draw fewer nodes, "
            "e.g. diagram(obj, max_nodes=50))" % timeout) from None
    except FileNotFoundError:
        raise DiagramUnavailable(DOT_HINT) from None
    except OSError as exc:
        raise DiagramUnavailable("(diagram unavailable: cannot run dot: %s)"
                                 % _one_line(exc)) from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace") or "exit status %d" % proc.returncode
        raise DiagramUnavailable("(diagram unavailable: dot failed: %s)" % _one_line(message))
    return proc.stdout.decode("utf-8", "replace")


def clear_cache():
    """Forget the SVG rendered so far (render_svg caches by DOT source)."""
    with _cache_lock:
        _svg_cache.clear()


_PROLOG = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)


def sanitize_svg(svg):
    """``svg`` without its XML prolog, DOCTYPE and comments (graphviz's version among them)."""
    svg = _PROLOG.sub("", svg)
    svg = _COMMENT.sub("", svg)
    return svg.strip() + "\n"


def _one_line(exc):
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _try_svg(obj, **kwargs):
    """(svg, None) or (None, hint)."""
    try:
        return render_svg(obj, **kwargs), None
    except DiagramUnavailable as exc:
        return None, str(exc)
    except Exception as exc:  # a diagram bug must not break the display
        return None, "(diagram unavailable: %s)" % _one_line(exc)


# ---------------------------------------------------------------------------
# which MIME types to produce


def _active_types():
    """The front end's active MIME types under IPython, else None (no restriction)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        if shell is None:
            return None
        return list(shell.display_formatter.active_types)
    except Exception:
        return None


def wanted_types(include=None, exclude=None):
    """A predicate: should the MIME type be produced for this display call?"""
    active = _active_types()
    include = None if include is None else set(include)
    exclude = set(exclude or ())

    def want(mime):
        if mime == _TEXT:
            return True
        if include is not None and mime not in include:
            return False
        if mime in exclude:
            return False
        return active is None or mime in active

    return want


# ---------------------------------------------------------------------------
# bundles


def mimebundle(obj, include=None, exclude=None):
    """The display bundle for ``obj`` (what its ``_repr_mimebundle_`` returns).

    Always has ``text/plain``; never raises.
    """
    try:
        want = wanted_types(include, exclude)
        builder = _builder_for(obj)
        if builder is None:
            return {_TEXT: _safe_repr(obj)}
        return builder(obj, want)
    except Exception as exc:  # a display hook must never fail the cell
        return {_TEXT: "%s\n(display failed: %s)" % (_safe_repr(obj), _one_line(exc))}


def _builder_for(obj):
    from nbgraph.core.fgraph import FunctionGraph, Replacement
    from nbgraph.core.graph import Apply, Variable
    from nbgraph.core.type import NarrowingTrace

    if isinstance(obj, Variable):
        return _variable_bundle
    if isinstance(obj, Apply):
        return _apply_bundle
    if isinstance(obj, FunctionGraph):
        return _fgraph_bundle
    if isinstance(obj, NarrowingTrace):
        return _trace_bundle
    if isinstance(obj, Replacement):
        return _replacement_bundle
    linkers = _linker_classes()
    if linkers and isinstance(obj, linkers[0]):
        return _function_bundle
    if linkers and isinstance(obj, linkers[1]):
        return _profile_bundle
    from nbgraph.display.narrowing import HistoryView

    if isinstance(obj, HistoryView):
        return _history_bundle
    return None


def _linker_classes():
    try:
        from nbgraph.linkers.function import Function
        from nbgraph.linkers.profile import ProfileStats
    except Exception:  # pragma: no cover - linkers unavailable
        return ()
    return Function, ProfileStats


def _dprint(obj, print_type="short"):
    from nbgraph.display.text import dprint

    return _cap(dprint(obj, print_type=print_type, file="str").rstrip("\n"))


def _cap(text, max_lines=None):
    max_lines = TEXT_MAX_LINES if max_lines is None else max_lines
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    return "\n".join(lines[:max_lines] + [
        "... %d more lines (print them all with nbgraph.dprint)" % (len(lines) - max_lines)])


def _with_diagram(bundle, obj, want, **kwargs):
    """Add the SVG diagram of ``obj`` when wanted (as SVG and as a fitted ``<img>``
    in HTML), or append the hint to the text."""
    if not (want(_SVG) or want(_HTML)):
        return bundle
    svg, hint = _try_svg(obj, **kwargs)
    if svg is not None:
        _add_picture(bundle, svg, alt_text(obj, kwargs.get("style", "compact")), want)
    else:
        bundle[_TEXT] += "\n" + hint
    return bundle


def _add_picture(bundle, svg, alt, want):
    if want(_SVG):
        bundle[_SVG] = svg
    if want(_HTML):
        bundle[_HTML] = img_html(svg, alt)
    return bundle


def picture_bundle(obj, make_svg, want, what="diagram", text=None):
    """The bundle of a picture of ``obj`` drawn by ``make_svg()`` (text, SVG, fitted HTML).

    ``text`` is the ``text/plain`` (default: the dprint of ``obj``).  Never
    raises: when the picture cannot be drawn, the text carries the hint.
    """
    if text is None:
        try:
            text = _dprint(obj)
        except Exception as exc:
            text = "%s\n(text unavailable: %s)" % (_safe_repr(obj), _one_line(exc))
    bundle = {_TEXT: text}
    if not (want(_SVG) or want(_HTML)):
        return bundle
    try:
        svg = make_svg()
    except DiagramUnavailable as exc:
        bundle[_TEXT] += "\n" + str(exc)
        return bundle
    except Exception as exc:  # a display hook must never fail the cell
        bundle[_TEXT] += "\n(diagram unavailable: %s)" % _one_line(exc)
        return bundle
    return _add_picture(bundle, svg, alt_text(obj, what), want)


def alt_text(obj, what="compact"):
    """A one-sentence description of a diagram of ``obj``, for ``alt`` and ``title``."""
    from nbgraph.display.names import plural
    from nbgraph.display.text import outputs_of

    try:
        fgraph = getattr(obj, "fgraph", None) if not hasattr(obj, "apply_nodes") else obj
        outputs = outputs_of(obj)
        inputs, n = _inputs_and_size(fgraph, outputs)
        ins, outs = _name_list(inputs), _name_list(outputs)
        style = what if what.endswith("diagram") or what.endswith("diagrams") \
            else "%s diagram" % what
        return "nbgraph %s of %s: %s; inputs %s; outputs %s" % (
            style, _safe_repr(obj) if fgraph is not None and fgraph is not obj
            else "a graph", plural(n, "Apply node"), ins or "none", outs or "none")
    except Exception:
        return "nbgraph diagram"


def _inputs_and_size(fgraph, outputs):
    """The graph's inputs (constants left out) and how many Apply nodes it has."""
    from nbgraph.core.graph import Constant, graph_inputs, io_toposort

    if fgraph is not None:
        return list(fgraph.inputs), len(fgraph.apply_nodes)
    inputs = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
    return inputs, len(io_toposort(inputs, outputs))


def _name_list(variables):
    """The short names of the first six variables, ``, ...`` when there are more."""
    return ", ".join(_short_name(v) for v in variables[:6]) + (
        ", ..." if len(variables) > 6 else "")


def _short_name(var):
    text = _safe_repr(var)
    return text if len(text) <= 30 else text[:29] + "\u2026"


def _variable_bundle(var, want):
    text = _dprint(var)
    return _with_diagram({_TEXT: text}, var, want)


def _apply_bundle(node, want):
    return _with_diagram({_TEXT: _dprint(node)}, node, want)


def _fgraph_bundle(fgraph, want):
    from nbgraph.display import narrowing

    text = "%s\n%s" % (_safe_repr(fgraph), _dprint(fgraph))
    if fgraph.history:
        text += "\n%d replacement%s in history (nbgraph.display.history_table(fgraph))" % (
            len(fgraph.history), "" if len(fgraph.history) == 1 else "s")
    if fgraph.history and want(_HTML):
        svg, hint = _try_svg(fgraph)
        picture = img_html(svg, alt_text(fgraph)) if svg is not None else _hint_html(hint)
        body = ('<div class="nbgraph-fgraph">\n%s\n<h4 style="margin:0.6em 0 0.3em 0">'
                'rewrite history</h4>\n%s</div>' % (picture, narrowing.history_html(fgraph)))
        return {_TEXT: text, _HTML: body}
    return _with_diagram({_TEXT: text}, fgraph, want)


def _function_bundle(fn, want):
    text = "%s\n%s" % (_safe_repr(fn), _dprint(fn.fgraph))
    return _with_diagram({_TEXT: text}, fn, want)


def _trace_bundle(trace, want):
    from nbgraph.display import narrowing

    return _text_and_html(narrowing.trace_text(trace), want, lambda: narrowing.trace_html(trace))


def _replacement_bundle(rep, want):
    from nbgraph.display import narrowing

    return _text_and_html(narrowing.replacement_text(rep), want,
                          lambda: narrowing.replacement_html(rep))


def _history_bundle(view, want):
    return _text_and_html(view.text(), want, view.html)


def _profile_bundle(stats, want):
    return _text_and_html(str(stats), want, lambda: profile_html(stats))


def _text_and_html(text, want, make_html):
    """``{text/plain: text}``, with ``make_html()`` as text/html when the front end wants it."""
    bundle = {_TEXT: text}
    if want(_HTML):
        bundle[_HTML] = make_html()
    return bundle


def _hint_html(hint):
    return '<p class="nbgraph-hint" style="color:#666"><i>%s</i></p>' % html.escape(hint)


# ---------------------------------------------------------------------------
# attaching the methods


from nbgraph.display.hooks import install, uninstall  # noqa: E402  (re-exported)
