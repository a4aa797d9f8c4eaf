"""Mode: Theano's way of choosing a linker and a rewrite set, mapped onto nbgraph's.

>>> Mode(linker="py", optimizer="fast_run")
Mode(linker='py', optimizer='fast_run')
>>> get_mode("FAST_COMPILE").linker, get_mode("DebugMode").linker
('py', 'debug')

The named modes:

========================  =================  =========================================
name                      nbgraph linker     rewrites
========================  =================  =========================================
``"FAST_RUN"``            the default        the fast pipeline
``"FAST_COMPILE"``        ``"py"``           the fast pipeline without fusion/in-place
``"DebugMode"``           ``"debug"``        the fast pipeline
``"DEBUG_MODE"``          ``"debug"``        the fast pipeline
``"PYTHON"`` / ``"py"``   ``"py"``           the fast pipeline
``"JAX"`` etc.            refused, saying what to use instead
========================  =================  =========================================

Theano's linker names map as: ``"py"`` -> ``"py"``, ``"c"`` -> ``"c"``,
``"cvm"``, ``"vm"``, ``"c|py"``, ``"cvm_nogc"``, ``"c|py_nogc"`` -> ``"cvm"``,
and nbgraph's own names pass through.  Optimizer names: ``"fast_run"``,
``"o4"`` and ``"default"`` -> the full pipeline; ``"fast_compile"``,
``"o1"`` -> the pipeline without the "fusion" and "inplace" stages;
``"merge"`` -> merging only; ``None``/``"None"`` -> no rewrites.
``mode.excluding(tag, ...)`` removes rewrites carrying a tag (e.g. "fusion",
"inplace", or one rewrite's name); ``mode.including(...)`` accepts the names
of stages that are already in.
"""

from __future__ import annotations

from nbgraph.linkers.function import LINKERS

__all__ = ["Mode", "get_mode", "get_default_mode", "MODES"]

_LINKER_NAMES = {
    "py": "py", "c": "c", "cvm": "cvm", "vm": "cvm", "c|py": "cvm", "cvm_nogc": "cvm",
    "c|py_nogc": "cvm", "vm_nogc": "cvm", "debug": "debug", "auto": None, None: None,
}
_OPTIMIZERS = {
    "fast_run": ("fast", ()), "o4": ("fast", ()), "o3": ("fast", ()), "default": ("fast", ()),
    "fast": ("fast", ()),
    "fast_compile": ("fast", ("fusion", "inplace")), "o1": ("fast", ("fusion", "inplace")),
    "o2": ("fast", ("inplace",)),
    "merge": ("merge", ()), "none": (None, ()), None: (None, ()),
}


class Mode:
    """A linker and a rewrite set for :func:`nbgraph.function`'s ``mode=``.

    ``linker``: a Theano or nbgraph linker name (None: the configured default).
    ``optimizer``: a Theano optimizer name (see the module docstring), or None.
    """

    def __init__(self, linker: str | None = None, optimizer: str | None = "fast_run",
                 exclude: tuple = ()):
        key = linker.lower() if isinstance(linker, str) else linker
        if key not in _LINKER_NAMES:
            raise ValueError("Mode(linker=%r): unknown linker; use one of %s (Theano's names "
                             "'vm', 'cvm', 'c|py' also work)" % (linker, ", ".join(LINKERS)))
        okey = optimizer.lower() if isinstance(optimizer, str) else optimizer
        if okey not in _OPTIMIZERS:
            raise ValueError("Mode(optimizer=%r): unknown optimizer; use 'fast_run', "
                             "'fast_compile', 'merge' or None" % (optimizer,))
        self.linker_name = linker
        self.optimizer = optimizer
        self.exclude = tuple(exclude)

    @property
    def linker(self) -> str | None:
        """The nbgraph linker name (None: config.linker)."""
        key = self.linker_name.lower() if isinstance(self.linker_name, str) else None
        return _LINKER_NAMES[key]

    @property
    def rewrite(self):
        """What :func:`nbgraph.function` receives as ``rewrite=``: "fast", None, or
        a graph rewriter (a reduced pipeline)."""
        okey = self.optimizer.lower() if isinstance(self.optimizer, str) else self.optimizer
        base, dropped = _OPTIMIZERS[okey]
        dropped = tuple(dropped) + self.exclude
        if base == "merge":
            from nbgraph.core.rewriting import MergeRewriter

            return MergeRewriter()
        if base is None or not dropped:
            return base
        from nbgraph.tensor.rewriting import fast_pipeline

        return fast_pipeline(exclude=dropped)

    def excluding(self, *tags: str) -> Mode:
        """This mode without the rewrites tagged with any of ``tags``."""
        return Mode(self.linker_name, self.optimizer, self.exclude + tuple(tags))

    def including(self, *tags: str) -> Mode:
        """This mode with ``tags`` included (nbgraph's stages are all in by default,
        so this only takes back an earlier :meth:`excluding`)."""
        return Mode(self.linker_name, self.optimizer,
                    tuple(t for t in self.exclude if t not in tags))

    def requiring(self, *tags: str) -> Mode:
        """Same as :meth:`including`."""
        return self.including(*tags)

    def clone(self, link_kwargs=None, optimizer="", **kwargs) -> Mode:
        """A copy (``optimizer`` replaced when given)."""
        return Mode(self.linker_name, self.optimizer if optimizer == "" else optimizer,
                    self.exclude)

    def __eq__(self, other):
        return (isinstance(other, Mode) and self.linker == other.linker
                and self.optimizer == other.optimizer and self.exclude == other.exclude)

    def __hash__(self):
        return hash((Mode, self.linker, self.optimizer, self.exclude))

    def __repr__(self):
        extra = ", exclude=%r" % (self.exclude,) if self.exclude else ""
        return "Mode(linker=%r, optimizer=%r%s)" % (self.linker_name, self.optimizer, extra)


#: The named modes (Theano's and PyTensor's spellings).
MODES = {
    "FAST_RUN": Mode(None, "fast_run"),
    "FAST_COMPILE": Mode("py", "fast_compile"),
    "DebugMode": Mode("debug", "fast_run"),
    "DEBUG_MODE": Mode("debug", "fast_run"),
    "PYTHON": Mode("py", "fast_run"),
    "py": Mode("py", "fast_run"),
    "c": Mode("c", "fast_run"),
    "cvm": Mode("cvm", "fast_run"),
    "debug": Mode("debug", "fast_run"),
}
_ELSEWHERE = {
    "JAX": "nbgraph compiles to C and NumPy only; use mode='FAST_RUN'",
    "NUMBA": "nbgraph compiles to C and NumPy only; use mode='FAST_RUN'",
    "PYTORCH": "nbgraph compiles to C and NumPy only; use mode='FAST_RUN'",
    "ProfileMode": "pass profile=True to function() and read f.profile",
    "NanGuardMode": "compile with mode='DebugMode' (it compares Python and C per node)",
}


def get_mode(mode) -> Mode:
    """The :class:`Mode` for ``mode`` (a Mode, a name of :data:`MODES`, or None for
    the default)."""
    if mode is None:
        return get_default_mode()
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        if mode in MODES:
            return MODES[mode]
        if mode in _ELSEWHERE:
            raise ValueError("mode=%r is not available in nbgraph: %s" % (mode, _ELSEWHERE[mode]))
        raise ValueError("unknown mode %r; use one of %s or a Mode(linker=..., optimizer=...)"
                         % (mode, ", ".join(repr(m) for m in MODES)))
    raise TypeError("mode must be a Mode or a mode name, got %s %r" % (
        type(mode).__name__, mode))


def get_default_mode() -> Mode:
    """The mode function() uses when none is given (FAST_RUN: config.linker, full rewrites)."""
    return MODES["FAST_RUN"]
