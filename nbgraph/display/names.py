"""Short names for what diagrams, reprs and profiles show: types, outputs, update targets.

:func:`type_notation` writes a tensor type the way a reader says it,
``float64[?, 3]`` (dtype, then the static shape with ``?`` for an unknown
dimension; ``float64[]`` for a 0-d tensor), instead of the full
``TensorType(float64, (None, 3))`` repr.  Any other Type keeps its ``str``.

:func:`output_labels` gives the names the user knows a compiled Function's
outputs by: the caller's output Variables' names (``out[1]`` when unnamed)
and, for the outputs that compute ``updates``, ``update -> W0``.

:func:`safe_repr` and :func:`one_line` write an object or an error for a
display, which must not raise.
"""

__all__ = ["type_notation", "output_labels", "plural", "safe_repr", "one_line"]


def type_notation(type_) -> str:
    """``TensorType(float64, (None, 3))`` -> ``'float64[?, 3]'``; other Types: ``str(type)``."""
    dtype = getattr(type_, "dtype", None)
    shape = getattr(type_, "shape", None)
    if dtype is not None and isinstance(shape, tuple):
        return "%s[%s]" % (dtype, ", ".join("?" if s is None else str(s) for s in shape))
    try:
        return str(type_)
    except Exception:  # a broken __str__ must not break a display
        return type(type_).__name__


def output_labels(function) -> dict:
    """``{fgraph output Variable: label}`` for a compiled Function (empty for anything else).

    The i-th output is labelled with the name of the i-th Variable the
    caller passed (``out[i]`` when it has none); an output computing an
    update is labelled ``update -> NAME`` with the shared variable's name.
    """
    fgraph = getattr(function, "fgraph", None)
    caller_outputs = getattr(function, "outputs", None)
    if fgraph is None or caller_outputs is None:
        return {}
    outputs = list(fgraph.outputs)
    labels = {}
    n_out = len(caller_outputs)
    for i, var in enumerate(outputs[:n_out]):
        name = getattr(caller_outputs[i], "name", None) or getattr(
            getattr(caller_outputs[i], "tag", None), "grad_of", None)  # grad(cost, W0)
        label = name if name else ("out" if n_out == 1 else "out[%d]" % i)
        labels.setdefault(var, label)
    updates = getattr(function, "updates", None) or ()
    # outputs past the updates' (if any) are not labelled: shorter wins
    for (target, _), var in zip(updates, outputs[n_out:], strict=False):
        label = "update -> %s" % (target.name or "shared")
        if var in labels:
            labels[var] += ", " + label
        else:
            labels[var] = label
    return labels


def plural(n: int, word: str, words: str | None = None) -> str:
    """``plural(1, "node")`` -> ``'1 node'``; ``plural(3, "node")`` -> ``'3 nodes'``."""
    return "%d %s" % (n, word if n == 1 else (words or word + "s"))


def safe_repr(obj) -> str:
    """``repr(obj)``, or ``<ClassName>`` when its ``__repr__`` fails (a display must not)."""
    try:
        return repr(obj)
    except Exception:
        return "<%s>" % type(obj).__name__


def one_line(exc) -> str:
    """An exception's message on one line (its type name when the message is empty)."""
    return " ".join(str(exc).split()) or type(exc).__name__
