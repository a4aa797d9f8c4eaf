"""Loops over symbolic graphs: :func:`scan` and the helpers built on it.

``scan(fn, sequences, outputs_info, non_sequences, n_steps, ...)`` returns
``(outputs, updates)``; :class:`Scan` is the Op it builds (a loop over an
inner FunctionGraph, compiled once by the outer function's linker);
:func:`until` marks a stop condition; :func:`map`, :func:`reduce`,
:func:`foldl` and :func:`foldr` cover the common loops.  Gradients through a
loop (backpropagation through time) come from ``Scan.grad``; the rewrites in
:mod:`nbgraph.tensor.scan.rewriting` move loop-invariant work out, keep only
the last step where only it is read, and merge loops over the same sequences.

The package itself is callable, as Theano's ``theano.scan`` was:
``nbgraph.tensor.scan(fn, ...)`` is ``nbgraph.tensor.scan.scan(fn, ...)``.
"""

import sys as _sys
import types as _types

from nbgraph.tensor.scan.basic import ScanUpdates, scan, until
from nbgraph.tensor.scan.helpers import foldl, foldr, map, reduce
from nbgraph.tensor.scan.op import Scan
from nbgraph.tensor.scan import rewriting as _rewriting  # noqa: F401  (registers rewrites)
from nbgraph.tensor.scan import pushout as _pushout  # noqa: F401  (registers rewrites)

__all__ = ["scan", "until", "map", "reduce", "foldl", "foldr", "Scan", "ScanUpdates"]


class _CallableModule(_types.ModuleType):
    """This package's module type: calling it calls :func:`scan`."""

    def __call__(self, *args, **kwargs):
        return scan(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
