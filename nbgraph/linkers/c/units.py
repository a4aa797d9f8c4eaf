"""Splitting a one-unit module by function: its heaviest helper compiled beside it.

A module too small to be split by kernels (:data:`codegen.SPLIT_CHARS
<nbgraph.linkers.c.codegen.SPLIT_CHARS>`) still spends most of its compile
time on one function when it holds an elementwise loop: the -O3 row function
(vectorised loops).  On two cores that function compiles in a translation unit
of its own while the other unit compiles the rest (:func:`split_functions`).
Random 6-op chains (valgrind, compiler instructions): 189-204 million in one
unit, 115-132 + 143-146 million in two, so the longer unit is 23-30% shorter
(x * 2.0 + y, whose row has the streaming loop too: 264 -> 198 + 137); the
compiler does ~30-40% more work in all (each unit parses the prelude and
starts GCC's back end, ~60-70 million instructions), and the objects are
linked by a command of their own.

Moving a function must not change a kernel's results whichever way its module
was cut (libmvec's vector functions and libm's scalar ones may round
differently, so no loop may be vectorised otherwise than in one unit): a
function is moved only when no function calls it (its address is taken, e.g.
handed to the runtime's row driver, so the compiler can neither inline nor
specialise it in either place); the -O3 helpers only it names (e.g. the
unit-stride loop it calls) move with it, still static, so their callers and
uses are what they were; every other function it names is declared
``NBG_NOINLINE`` and compiled at -O1 (``NBG_STRIDED_ROW``, ``NBG_GLUE``: no
vectorisation at -O1, so what the compiler's interprocedural passes may do
differently to such a helper, called from the other unit, e.g. keep a
parameter it would drop, changes no value).  The moved function and the
-O1 helpers it names lose ``static`` (modules are built with
``-fvisibility=hidden``: they stay private to the library); each unit declares
what it uses from the other.  Functions compiled at -O1 are never moved: they
are the cheap rest.  An -O3 helper
that other functions use too keeps the function in place.

Only plain generated C is cut: top-level functions, declarations, typedefs and
``#define`` lines; text with a preprocessor conditional or a static variable
at top level (whose two copies would differ) is left in one unit.
"""

import re
import threading

__all__ = ["top_level", "split_functions", "MIN_MOVED_COST"]

#: A function is moved to a unit of its own only when its estimated compile work
#: (:func:`nbgraph.linkers.c.codegen._cost`, characters: its length plus 9000 per
#: loop, with the -O3 helpers moved with it) is at least this: any -O3 function
#: with a loop (an elementwise row of one operation weighs ~9.8 thousand, of a
#: 6-op chain 19-48 thousand).
MIN_MOVED_COST = 9_000

_IDENT = re.compile(r"[A-Za-z_]\w*")
_HIDDEN = '__attribute__((visibility("hidden"))) '

#: A function compiled at -O1 inside -O3 modules: cheap to compile, never moved.
_LIGHT = ("NBG_GLUE", "NBG_STRIDED_ROW", "optimize(")


class Item:
    """One top-level piece of C: ``text``, and for a function definition its
    ``name`` and ``header`` (the text before its body)."""

    def __init__(self, text, name=None, header=None):
        self.text = text
        self.name = name
        self.header = header

    def prototype(self):
        """The function's declaration, not static, hidden (-fvisibility=hidden
        applies to definitions: a declaration says so itself, so the other unit
        calls it and takes its address directly, not through the GOT)."""
        return _HIDDEN + _unstatic(self.header).strip() + ";"

    def definition(self):
        """The function's definition, not static."""
        return _unstatic(self.header) + self.text[len(self.header):]


def _unstatic(header):
    return re.sub(r"(^|\s)static\s", r"\1", header, count=1)


def _skip_literal(text, i):
    """The index after the string, character literal or comment starting at ``i``
    (or ``i`` when none starts there)."""
    c = text[i]
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


#: What :func:`top_level` stops at: a comment, a literal, a brace, a semicolon, a "#".
_TOKEN = re.compile(r"/[*/]|[\"'{};#]")


def top_level(text):
    """The top-level :class:`Item` s of the C ``text`` in order, or None when it
    holds something this module does not cut (a preprocessor conditional, a
    static variable, unbalanced braces)."""
    items, start, depth, at, function, header_end = [], 0, 0, 0, False, 0
    while True:
        found = _TOKEN.search(text, at)
        if found is None:
            break
        i, c = found.start(), found.group()
        if c in ("/*", "//", '"', "'"):
            at = _skip_literal(text, i)
            continue
        at = i + 1
        if c == "#" and depth == 0 and not text[start:i].strip():
            end = text.find("\n", i)
            end = len(text) if end < 0 else end + 1
            line = text[i:end]
            if not line.lstrip("# \t").startswith("define") or line.rstrip().endswith("\\"):
                return None
            items.append(Item(text[start:end]))
            start = at = end
        elif c == "{":
            if depth == 0:
                function = text[start:i].rstrip().endswith(")")
                header_end = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0 and function:
                item = _function(text[start:i + 1], header_end - start)
                if item is None:
                    return None
                items.append(item)
                start, function = i + 1, False
        elif c == ";" and depth == 0:
            piece = text[start:i + 1]
            if _is_variable(piece):
                return None
            items.append(Item(piece))
            start = i + 1
    if depth != 0 or text[start:].strip():
        return None
    return items


def _function(text, header_end):
    """The :class:`Item` of a function definition, or None."""
    header = text[:header_end]
    close = header.rstrip()
    level, k = 0, len(close) - 1
    while k >= 0:  # the parameter list's "("
        level += {")": 1, "(": -1}.get(close[k], 0)
        if level == 0:
            break
        k -= 1
    names = _IDENT.findall(close[:k])
    if k < 0 or not names:
        return None
    return Item(text, names[-1], header)


def _is_variable(piece):
    """Whether a top-level declaration defines a static variable (state that two
    units would each have a copy of)."""
    words = piece.strip()
    if words.startswith("typedef") or "(" in words.split("=")[0]:
        return False  # a type, or a function's prototype
    return words.startswith("static") or "=" in words


def _calls(body, name):
    """Whether ``body`` calls ``name`` (its name followed by an argument list)."""
    return re.search(r"\b%s\s*\(" % re.escape(name), body) is not None


#: Recent answers of :func:`split_functions` (by bodies, cost and
#: :data:`MIN_MOVED_COST`): the module text is
#: made for every new graph, cache hits included (its digest is the cache key),
#: and cutting the text costs ~4 ms a module, paid again for each new constant
#: value of the same structure without this memo.
_RECENT: dict = {}
_RECENT_LOCK = threading.Lock()
RECENT_SIZE = 64


def split_functions(bodies, cost):
    """``(moved, rest)`` for the kernel bodies of a one-unit module: ``moved`` the
    text of the other unit's function (the helpers it names declared), ``rest``
    the bodies with that function declared instead of defined; None when no
    function is worth moving and may be (see the module docstring): the heaviest
    one that may is moved.  ``cost`` estimates a function's compile work
    (:func:`~nbgraph.linkers.c.codegen._cost`)."""
    key = (tuple(bodies), cost, MIN_MOVED_COST)
    with _RECENT_LOCK:
        known = key in _RECENT
        found = _RECENT.get(key)
    if not known:
        found = _split_functions(bodies, cost)
        with _RECENT_LOCK:
            _RECENT[key] = found
            while len(_RECENT) > RECENT_SIZE:  # (oldest first: insertion order)
                del _RECENT[next(iter(_RECENT))]
    return None if found is None else (found[0], list(found[1]))


def _split_functions(bodies, cost):
    candidates = []
    for k, body in enumerate(bodies):
        items = top_level(body)
        if items is None:
            continue
        others = [b for j, b in enumerate(bodies) if j != k]
        for item in items:
            if item.name is None or any(mark in item.header for mark in _LIGHT):
                continue
            found = _movable(items, item, others)
            if found is not None:
                weight = sum(cost(f.text) for f in found[0])
                if weight >= MIN_MOVED_COST:
                    candidates.append((-weight, k, items.index(item), items, found))
    if not candidates:
        return None
    _, k, _, items, (group, named) = min(candidates, key=lambda c: c[:3])
    moved, rest = _cut(items, group, named)
    return moved, bodies[:k] + [rest] + bodies[k + 1:]


def _light(item):
    """A helper that may stay in the other unit: never inlined, compiled at -O1."""
    return "NBG_NOINLINE" in item.header and any(m in item.header for m in _LIGHT)


def _movable(items, moved, others):
    """``(group, named)`` when ``moved`` may be moved (see the module docstring):
    ``group`` it and the -O3 helpers only it (transitively) names, which move
    with it, still static; ``named`` the light helpers the group names, which
    stay; else None (a helper of the group named by a function outside it,
    whatever the order of the text)."""
    if any(_calls(_body(item), moved.name) for item in items if item is not moved) \
            or any(moved.name in b for b in others):
        return None
    functions = [item for item in items if item.name is not None]
    group = [moved]
    grew = True
    while grew:
        grew = False
        for item in functions:
            if item in group or _light(item) or not any(_names(g, item) for g in group):
                continue
            group.append(item)
            grew = True
    for item in group[1:]:
        if any(_names(other, item) for other in items if other not in group) \
                or any(item.name in b for b in others):
            return None  # an -O3 helper used elsewhere too: stays with its callers
    named = [item for item in functions if item not in group
             and any(_names(g, item) for g in group)]
    return group, named


def _names(user, item):
    """Whether ``user``'s body names the function ``item``."""
    return item is not user and re.search(r"\b%s\b" % re.escape(item.name),
                                           _body(user)) is not None


def _body(item):
    """An item's text after its function header (all of it for other items)."""
    return item.text[len(item.header or ""):]


def _cut(items, group, named):
    """(the moved unit's text, the rest of the kernel's text): ``group[0]`` is
    the moved function (no longer static), the others move as they are."""
    moved = group[0]
    shared = [item.text for item in items if item.name is None]
    unit = shared + [item.prototype() for item in named] + [
        item.definition() if item is moved else item.text
        for item in items if item in group]
    rest = []
    for item in items:
        if item is moved:
            rest.append(item.prototype())
        elif item in named:
            rest.append(item.definition())
        elif item not in group:
            rest.append(item.text)
    return "\n".join(unit), "\n".join(rest)
