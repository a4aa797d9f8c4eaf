"""Legacy import paths: Theano and PyTensor programs run with their imports changed.

::

    import nbgraph.compat.theano as theano
    import nbgraph.compat.theano.tensor as T
    from nbgraph.compat.theano.tensor.signal import pool

or, once per process, :func:`install` and then the programs' own
``import theano`` / ``import pytensor`` lines::

    import nbgraph.compat
    nbgraph.compat.install()
    import theano.tensor as T           # nbgraph.compat.theano.tensor

The modules only map names onto nbgraph's API (and adapt a few signatures,
such as Theano's ``RandomStreams.normal(size, avg, std)``); a name with no
equivalent raises :class:`~nbgraph.compat._names.NoEquivalentError` saying
what to use instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from nbgraph.compat._names import NoEquivalentError

__all__ = ["install", "uninstall", "NoEquivalentError"]

_PACKAGES = ("theano", "pytensor")


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``theano[.x]`` / ``pytensor[.x]`` as ``nbgraph.compat.theano[.x]``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in _PACKAGES:
            return None
        real = importlib.util.find_spec("nbgraph.compat." + fullname)
        if real is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, self, is_package=real.submodule_search_locations is not None)

    def __init__(self):
        self._real_specs = {}

    def create_module(self, spec):
        module = importlib.import_module("nbgraph.compat." + spec.name)
        self._real_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system wrote the alias's spec over the real one: put it back
        module.__spec__ = self._real_specs[module.__name__]


_FINDER = _AliasFinder()


def install() -> None:
    """Make ``import theano`` and ``import pytensor`` (and their submodules) import
    nbgraph's compatibility modules.  Refused when the real package is already
    imported in this process."""
    for name in _PACKAGES:
        existing = sys.modules.get(name)
        if existing is not None and not existing.__name__.startswith("nbgraph.compat"):
            raise RuntimeError("the real %r package is already imported; call "
                               "nbgraph.compat.install() before importing it" % name)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo :func:`install` (modules already imported under the old names stay)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in list(sys.modules):
        if name.split(".")[0] in _PACKAGES and \
                getattr(sys.modules[name], "__name__", "").startswith("nbgraph.compat"):
            del sys.modules[name]
