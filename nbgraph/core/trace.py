"""Where a node was built: the user's line, recorded cheaply when an Apply is made.

:func:`creation_site` walks the caller's frames outwards, past nbgraph's own
modules, and returns the first other frame as a small tuple ``(filename,
lineno, function)``: no source is read and no traceback object kept, so
building a node costs well under a microsecond more.  ``Apply`` stores it on
each output as ``var.tag.trace`` when ``config.node_trace`` is on (the
default; ``NBGRAPH_NODE_TRACE=0`` turns it off).  Clones keep the tag, and a
node that a rewrite puts in place of another inherits the replaced
variable's site (:meth:`FunctionGraph.replace`), so the node of a compiled
function that fails still points at the line that built its original.

:func:`describe_site` turns a site into the sentence errors show::

    This node was built at Cell In[10], line 11:
        h = nt.tanh(X.dot(W0) + b0)

(a notebook cell is named as IPython names it; a file as ``File "x.py",
line 3, in f``).  The source line is read only then, through ``linecache``,
which IPython fills with every cell it runs.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

#: Where a node was built: ``(filename, lineno, function)``.
Site = tuple[str, int, str]

__all__ = ["Site", "creation_site", "site_of", "describe_site", "is_internal", "user_traceback"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def creation_site(skip: int = 1) -> Site | None:
    """``(filename, lineno, function)`` of the nearest frame outside nbgraph, or None."""
    try:
        frame: types.FrameType | None = sys._getframe(skip + 1)
    except ValueError:
        return None
    package = _PACKAGE
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not filename.startswith(package) and not filename.startswith("<nbgraph") \
                and code.co_name != "make_node":  # a user's Op: the line applying it
            return (filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def is_internal(filename: str) -> bool:
    """True for nbgraph's own source files and generated code."""
    return filename.startswith(_PACKAGE) or filename.startswith("<nbgraph")


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the entries of nbgraph's own frames (a new traceback chain)."""
    kept = []
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for entry in reversed(kept):
        new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return new


def site_of(var_or_node: Any) -> Site | None:
    """The creation site recorded for a Variable or an Apply (its first output), or None."""
    outputs = getattr(var_or_node, "outputs", None)
    var = outputs[0] if outputs else var_or_node
    tag = getattr(var, "tag", None)
    return getattr(tag, "trace", None)


def _cell_name(filename: str) -> str | None:
    """IPython's name for a cell's file ("Cell In[10]"), or None outside a notebook."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        number = shell.compile._filename_map.get(filename) if shell is not None else None
    except Exception:
        return None
    return None if number is None else "Cell In[%s]" % number


def describe_site(site: Site | None, what: str = "This node") -> str | None:
    """``"This node was built at Cell In[10], line 11:\\n    h = ..."`` (None without a site)."""
    if not site:
        return None
    filename, lineno, function = site
    cell = _cell_name(filename)
    if cell is not None:
        where = "%s, line %d" % (cell, lineno)
    else:
        where = 'File "%s", line %d, in %s' % (filename, lineno, function)
    import linecache  # (with tokenize: loaded when an error shows a site)

    line = linecache.getline(filename, lineno).strip()
    text = "%s was built at %s" % (what, where)
    return "%s:\n    %s" % (text, line) if line else text
