"""The in-memory side of the C module cache: loaded modules by key.

:class:`RecentModules` holds the last few stored or found modules strongly and
the rest weakly, so a library is closed once nothing uses it (see
:class:`nbgraph.linkers.c.cache.ModuleCache`).
"""

import weakref
from collections import OrderedDict

__all__ = ["RecentModules"]


class RecentModules:
    """A dict of loaded modules holding the ``recent`` last stored or found ones
    strongly and the rest weakly (a library is closed when nothing uses it)."""

    def __init__(self, recent):
        self._weak = weakref.WeakValueDictionary()
        self._strong = {}  # values without weak references (a cffi Lib): kept
        self._recent = OrderedDict()
        self._limit = recent

    def get(self, key, default=None):
        found = self._strong.get(key)
        if found is not None:
            return found
        found = self._weak.get(key)
        if found is None:
            return default
        self._keep(key, found)
        return found

    def __setitem__(self, key, value):
        try:
            self._weak[key] = value
        except TypeError:
            self._strong[key] = value
            return
        self._keep(key, value)

    def _keep(self, key, value):
        recent = self._recent
        recent[key] = value
        recent.move_to_end(key)
        while len(recent) > self._limit:
            recent.popitem(last=False)

    def __len__(self):
        return len(self._weak) + len(self._strong)

    def __contains__(self, key):
        return key in self._weak or key in self._strong

    def pop(self, key, default=None):
        self._recent.pop(key, None)
        found = self._strong.pop(key, None)
        return found if found is not None else self._weak.pop(key, default)

    def clear(self):
        self._recent.clear()
        self._weak.clear()
        self._strong.clear()
