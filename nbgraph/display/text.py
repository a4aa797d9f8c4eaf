"""Plain-text rendering of graphs: :func:`dprint` and :func:`dprint_text`.

Each output is drawn as an indented tree, one line per Variable::

    add [id A] ''
     |mul [id B] ''
     | |y [id C]
     | |z [id D]
     |x [id E]

A line for the output of an Apply node reads ``str(op)`` (followed by
``.index`` when the node has several outputs), its id, its type when asked
for, and its name in quotes (``''`` when it has none).  A line for a root
Variable or a Constant reads ``repr(var)``, its id and, when asked for, its
type.  Ids are handed out in the order lines are printed; a node met a second
time gets its first id back and is printed on one line without its inputs,
and every output of a multi-output node carries the node's id.

The walk keeps its own stack, so graphs thousands of nodes deep print without
touching Python's recursion limit.  A tree nested deeper than ``max_nesting``
levels is not indented further: the node at that level is marked
``(continued below)`` and its inputs are printed as a separate tree, under the
same id, once the current tree is finished.  That keeps the text linear in the
size of the graph instead of quadratic.
"""

import sys
from collections import deque

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Variable
from nbgraph.display.names import type_notation

__all__ = ["dprint", "dprint_text"]

_ID_STYLES = ("CHAR", "int", "")

_CONTINUED = " (continued below)"

_EXPECTED = ("a Variable, an Apply, a FunctionGraph, an object whose .fgraph is a "
             "FunctionGraph (a compiled Function), or a list/tuple of Variables and Applys")


def dprint(obj, print_type=False, file=None, depth=None, ids="CHAR", *, max_nesting=100,
           print_destroy_map=False, print_view_map=False, scopes=False):
    """Print the graph behind ``obj`` as an indented text tree.

    Parameters
    ----------
    obj
        A Variable; an Apply (each of its outputs is printed); a list or tuple
        of Variables and Applys; a FunctionGraph (its outputs, in order); or
        any object whose ``fgraph`` attribute is a FunctionGraph, such as a
        compiled Function.  Several outputs print one tree after another and
        share one set of ids.
    print_type : bool or "short"
        Add each Variable's type, as ``<repr(type)>``, after its id;
        ``"short"`` writes it in the short notation of
        :func:`nbgraph.display.names.type_notation` (``<float64[?, 3]>``).
    file
        None prints to ``sys.stdout`` (looked up at call time); ``"str"``
        returns the text instead of printing it; anything else must be a
        file-like object with a ``write`` method, which receives the text.
    depth : int or None
        Print at most this many levels (``depth=1``: only the top lines).
        None prints everything.
    ids : {"CHAR", "int", ""}
        ``"CHAR"`` labels nodes ``A`` .. ``Z``, ``AA``, ``AB``, ...;
        ``"int"`` labels them ``0``, ``1``, ...; ``""`` leaves ids out.
    max_nesting : int or None
        Deepest indentation level of one tree; deeper parts continue below
        as separate trees (see the module docstring).  None never splits.
    print_destroy_map, print_view_map : bool
        Add ``d={output: [input, ...]}`` (which inputs a node overwrites) and
        ``v={...}`` (which inputs its outputs are views of) after a node's
        name, for nodes that have them.
    scopes : bool
        Group by scope (``with nbgraph.scope(...)``): a node whose scope
        differs from the line above it in the tree is marked ``@ layer1/affine``
        (``@ -`` when it leaves every scope), and a "Scopes:" section lists
        each scope with the ids of its nodes.

    Returns
    -------
    The text when ``file="str"``; None when printing to stdout (so a notebook
    cell ending with ``dprint(x)`` shows only the tree); otherwise the file
    written to.  The text ends with a newline unless nothing was printed.

    Examples
    --------
    >>> from nbgraph.core import Apply, Generic, Op
    >>> class Add(Op):
    ...     __props__ = ()
    ...     def make_node(self, a, b):
    ...         return Apply(self, [a, b], [Generic()()])
    >>> x, y = Generic()("x"), Generic()("y")
    >>> total = Add()(Add()(x, y), x)
    >>> _ = dprint(total)
    Add [id A] ''
     |Add [id B] ''
     | |x [id C]
     | |y [id D]
     |x [id C]
    >>> print(dprint(total, print_type=True, depth=1, file="str"), end="")
    Add [id A] <Generic> ''
    """
    outputs = outputs_of(obj)
    _check_limit("depth", depth)
    _check_limit("max_nesting", max_nesting)
    if ids not in _ID_STYLES:
        raise ValueError("ids must be one of %s, got %r" % (
            ", ".join(repr(s) for s in _ID_STYLES), ids))
    _check_file(file)
    maps = tuple(m for m, on in (("destroy_map", print_destroy_map),
                                 ("view_map", print_view_map)) if on)
    print_type = _type_mode(print_type)
    groups = {} if scopes else None
    lines = _render(outputs, print_type, depth, ids, max_nesting, maps, groups)
    if groups:
        lines += _scopes_section(groups)
    from nbgraph.display.inner import inner_graph_lines  # loops' bodies (Op.inner_graphs)

    lines += inner_graph_lines(outputs, lambda outs: _render(outs, print_type, depth,
                                                             ids, max_nesting, maps))
    return _write("".join(line + "\n" for line in lines), file)


def _check_limit(name, value):
    """``depth`` / ``max_nesting``: None or an int of at least 1."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be a positive int or None, got %s %r" % (
            name, type(value).__name__, value))
    if value < 1:
        raise ValueError("%s must be at least 1 (use None for no limit), got %d" % (name, value))


def _check_file(file):
    if not (file is None or (isinstance(file, str) and file == "str")
            or callable(getattr(file, "write", None))):
        raise TypeError("file must be None (stdout), \"str\" (return the text) or a "
                        "file-like object with a write() method, got %s %r" % (
                            type(file).__name__, file))


def _type_mode(print_type):
    """``"short"``, True or False."""
    if isinstance(print_type, str) and print_type != "short":
        raise ValueError("print_type must be True, False or 'short', got %r" % (print_type,))
    return print_type if print_type == "short" else bool(print_type)


def _scopes_section(groups):
    """The "Scopes:" lines: each scope path with the ids of its nodes."""
    return ["", "Scopes:"] + ["%s: %s (%d node%s)" % (
        path, ", ".join(found), len(found), "" if len(found) == 1 else "s")
        for path, found in sorted(groups.items())]


def _write(text, file):
    """Return, print or write ``text`` as dprint's ``file`` says."""
    if isinstance(file, str):
        return text
    if file is None:
        sys.stdout.write(text)
        return None
    file.write(text)
    return file


def dprint_text(obj, **kwargs):
    """Return the text :func:`dprint` would print (``dprint(obj, file="str", ...)``).

    >>> from nbgraph.core import Generic
    >>> dprint_text(Generic()("x"))
    'x [id A]\\n'
    """
    if "file" in kwargs:
        raise TypeError("dprint_text() always returns the text; it takes no file argument")
    return dprint(obj, file="str", **kwargs)


# ---------------------------------------------------------------------------
# helpers


def outputs_of(obj, who="dprint", expected=_EXPECTED):
    """The Variables to show for ``obj``, in order, or a TypeError.

    Shared with :mod:`nbgraph.display.diagram`; ``who`` and ``expected`` word
    the error for the calling function.
    """
    if isinstance(obj, Variable):
        return [obj]
    if isinstance(obj, Apply):
        return list(obj.outputs)
    if isinstance(obj, FunctionGraph):
        return list(obj.outputs)
    if isinstance(obj, (list, tuple)):
        outputs = []
        for i, item in enumerate(obj):
            if isinstance(item, Variable):
                outputs.append(item)
            elif isinstance(item, Apply):
                outputs.extend(item.outputs)
            else:
                raise TypeError("%s expects %s; item %d of the %s is %s %s" % (
                    who, expected, i, type(obj).__name__, type(item).__name__,
                    _short(item)))
        return outputs
    fgraph = getattr(obj, "fgraph", None)
    if isinstance(fgraph, FunctionGraph):
        return list(fgraph.outputs)
    raise TypeError("%s expects %s; got %s %s" % (who, expected, type(obj).__name__,
                                                  _short(obj)))


def _short(obj, limit=60):
    try:
        text = repr(obj)
    except Exception:  # a broken __repr__ must not hide the real error
        return "(unprintable)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _char_id(n):
    """0 -> 'A', 25 -> 'Z', 26 -> 'AA', 27 -> 'AB', ... (bijective base 26)."""
    letters = []
    n += 1
    while n:
        n, rem = divmod(n - 1, 26)
        letters.append(chr(ord("A") + rem))
    return "".join(reversed(letters))


def _render(outputs, print_type, depth, ids, max_nesting, maps=(), groups=None):
    """The lines of the trees for ``outputs`` (an explicit-stack walk)."""
    return _Trees(print_type, depth, ids, max_nesting, maps, groups).render(outputs)


class _Trees:
    """The text trees of several outputs, one line per Variable, sharing one set of ids.

    ``groups`` (a dict, or None when scopes are not shown) collects the ids of
    the nodes of each scope path.
    """

    def __init__(self, print_type, depth, ids, max_nesting, maps, groups):
        self.print_type = print_type
        self.depth = depth
        self.ids = ids
        self.max_nesting = max_nesting
        self.maps = maps
        self.groups = groups
        self.labels = {}  # id(Apply) or id(root Variable) -> label, in first-visit order
        self.expanded = set()  # id(Apply) whose inputs are printed (or scheduled below)
        self.lines = []

    def render(self, outputs):
        """The lines of the trees of ``outputs``, one tree after another."""
        for out in outputs:
            # Blocks: the output itself, then the subtrees cut off by max_nesting.
            blocks = deque([(out, 1, False)])
            while blocks:
                var, level, forced = blocks.popleft()
                # stack items: (variable, line prefix, child prefix, level, nesting, forced,
                # the scope of the line above in the tree)
                stack = [(var, "", "", level, 1, forced, None)]
                line = self._line
                while stack:
                    line(stack, blocks, *stack.pop())
        return self.lines

    def _label_of(self, key):
        label = self.labels.get(key)
        if label is None:
            n = len(self.labels)
            label = _char_id(n) if self.ids == "CHAR" else str(n)
            self.labels[key] = label
        return label

    def _line(self, stack, blocks, var, prefix, child_prefix, level, nest, forced, above):
        """Add the line of ``var``; schedule its inputs on ``stack`` (or ``blocks``)."""
        node = var.owner
        here = _scope_text(node) if self.groups is not None else None
        key = id(node) if node is not None else id(var)
        parts = [prefix, _head(var)]
        if self.ids:
            parts.append(" [id %s]" % self._label_of(key))
        if self.print_type:
            parts.append(_type_part(var, self.print_type))
        if node is not None:
            parts.extend(self._node_parts(var, key, here, above))
            if (node.inputs and (self.depth is None or level < self.depth)
                    and (forced or key not in self.expanded)):
                self.expanded.add(key)
                if self.max_nesting is not None and nest >= self.max_nesting:
                    parts.append(_CONTINUED)
                    blocks.append((var, level, True))
                else:
                    _push_inputs(stack, node, child_prefix, level, nest, here)
        self.lines.append("".join(parts))

    def _node_parts(self, var, key, here, above):
        """The name, scope mark and view/destroy maps written after an Apply's output."""
        parts = [" '%s'" % (var.name if var.name is not None else "")]
        if self.groups is not None and here != above and (here or above):
            parts.append(" @ %s" % (here or "-"))
        if here and self.ids:
            found = self.groups.setdefault(here, [])
            if self.labels[key] not in found:
                found.append(self.labels[key])
        for attr in self.maps:
            mapping = getattr(var.owner.op, attr, None)
            if mapping:
                parts.append(" %s=%s" % (attr[0], dict(sorted(mapping.items()))))
        return parts


def _head(var):
    """``str(op)`` (``.index`` for a multi-output node) for an Apply's output, else ``repr``."""
    node = var.owner
    if node is None:
        return repr(var)
    if len(node.outputs) > 1:
        return str(node.op) + ".%d" % var.index
    return str(node.op)


def _type_part(var, print_type):
    """`` <float64[?]>`` (``print_type="short"``) or `` <TensorType(float64, (None,))>``."""
    if print_type == "short":
        return " <%s>" % type_notation(var.type)
    return " <%r>" % (var.type,)


def _push_inputs(stack, node, child_prefix, level, nest, here):
    """Put ``node``'s inputs on the stack, the first on top, with their tree prefixes."""
    last = len(node.inputs) - 1
    for i in range(last, -1, -1):
        stack.append((node.inputs[i], child_prefix + " |",
                      child_prefix + (" |" if i < last else "  "),
                      level + 1, nest + 1, False, here))


def _scope_text(node):
    """``"layer1/affine"`` for a node built in scopes, else ""."""
    if node is None:
        return ""
    path = getattr(node.outputs[0].tag, "scope", None)
    return "/".join(path) if path else ""
