"""The call plan of a compiled Function: what one call does, as data.

A call of a :class:`~nbgraph.linkers.compiled.Function` does the same steps
whatever path runs it:

1. store each argument in its input cell, through the input Type's filter
   (or as given, with ``trust_input``);
2. copy each shared variable's value into its cell;
3. run the program;
4. read the outputs (copying those whose arrays outlive the call), write the
   updates into the shared variables, and empty the cells the call filled.

:class:`CallPlan` holds those steps' data, computed once per Function.  Its
methods are the plain interpreted call; :mod:`nbgraph.linkers.call_code`
renders the faster generated calls from the same plan, so a rule about
arguments or outputs is written here once.
"""

from __future__ import annotations

import functools
from typing import Any

from nbgraph.core.graph import Constant, Variable
from nbgraph.core.type import DowncastError

__all__ = ["CallPlan"]


class CallPlan:
    """What one call of a Function does (see the module docstring).

    Attributes: ``nargs``; ``arg_cells``, ``input_types``, ``filters`` (one per
    argument); ``shared_cells`` (``(cell, container)`` per shared variable
    read); ``out_cells`` and ``copy_outputs`` (one per output: True when the
    value must be copied before it is returned); ``update_cells``
    (``(container, cell, copy)`` per update); ``cleared_cells`` (emptied after
    each call); ``single`` (one result, not a list); ``trust_input``.
    """

    def __init__(self, fgraph, program, n_out: int, shared_inputs: list, updates: list,
                 input_types: list, allow_downcast: bool | None, single: bool,
                 trust_input: bool) -> None:
        from numpy import ndarray  # here: ``import nbgraph`` does not import NumPy

        self._ndarray = ndarray
        n_in = len(input_types)
        self.nargs = n_in
        self.single = single
        self.trust_input = trust_input
        self.input_types = input_types
        self.filters = [functools.partial(t.filter, allow_downcast=True)
                        if allow_downcast else t.filter for t in input_types]
        cells = program.input_cells
        self.arg_cells = cells[:n_in]
        self.shared_cells = list(zip(cells[n_in:], [s.container for s in shared_inputs],
                                     strict=True))
        out_cells = program.output_cells
        self.out_cells = out_cells[:n_out]
        graph_outs = fgraph.outputs
        # An update whose value is a constant's data or an input's array is
        # stored as a copy, so the shared variable never aliases either.
        self.update_cells = [(target.container, cell, _is_constant_or_input(v, fgraph))
                             for (target, _), cell, v in zip(updates, out_cells[n_out:],
                                                             graph_outs[n_out:], strict=True)]
        # An output is copied before it is returned when its array lives on
        # after the call: a constant's data, an input's value, a value that an
        # update stores in a shared variable, the same variable returned at an
        # earlier position (two results must not be one array), or the visible
        # output of a node with hidden outputs (it may be a view of the node's
        # private buffer, which the next call reuses).
        self.copy_outputs = [
            _is_constant_or_input(v, fgraph) or v in graph_outs[:i]
            or v in graph_outs[n_out:] or _has_hidden_siblings(v)
            for i, v in enumerate(graph_outs[:n_out])]
        # Cells emptied after each call: never a constant's (it holds the data).
        self.cleared_cells = [cell for v, cell in zip(graph_outs, out_cells, strict=True)
                              if not isinstance(v, Constant)]

    # -- the interpreted call ------------------------------------------------
    def store_arguments(self, args, input_names: list, describe: str) -> None:
        """Step 1: each argument into its cell; a refused one raises TypeError
        naming the argument, the function and the expected Type."""
        cells = self.arg_cells
        if self.trust_input:
            for cell, value in zip(cells, args, strict=True):
                cell[0] = value
            return
        for i, (cell, value, fltr) in enumerate(zip(cells, args, self.filters, strict=True)):
            try:
                cell[0] = fltr(value)
            except (TypeError, ValueError) as exc:
                for done in cells[:i]:
                    done[0] = None  # keep no reference to the earlier arguments
                raise TypeError("bad argument %d (%s) to %s: expected %r, got %s: %s" % (
                    i, input_names[i] or "unnamed", describe, self.input_types[i],
                    value_text(value), _reason(exc))) from None

    def load_shared(self) -> None:
        """Step 2: the shared variables' current values into their cells."""
        for cell, container in self.shared_cells:
            cell[0] = container[0]

    def finish(self) -> Any:
        """Step 4: the results (one value, or a list), after writing the updates
        and emptying the cells the call filled."""
        results, ndarray = [], self._ndarray
        for cell, copy_needed in zip(self.out_cells, self.copy_outputs, strict=True):
            value = cell[0]
            if copy_needed and isinstance(value, ndarray):
                value = value.copy()
            results.append(value)
        for container, cell, copy_needed in self.update_cells:
            value = cell[0]
            if copy_needed and isinstance(value, ndarray):
                value = value.copy()
            container[0] = value
        self.clear()
        return results[0] if self.single else results

    def clear(self) -> None:
        """Empty every cell a call fills (after a call, or after a failed one)."""
        for cell in self.cleared_cells:
            cell[0] = None
        for cell in self.arg_cells:
            cell[0] = None

    @property
    def direct_candidate(self) -> bool:
        """True when nothing but arguments and outputs is involved: no shared
        variable, no update, no output to copy (a direct kernel call may do)."""
        return not (self.shared_cells or self.update_cells or any(self.copy_outputs))


def _is_constant_or_input(var: Variable, fgraph) -> bool:
    return isinstance(var, Constant) or var in fgraph.inputs


def _has_hidden_siblings(var: Variable) -> bool:
    """True when ``var`` comes from a node whose Op hides other outputs."""
    node = var.owner
    return (node is not None and len(node.outputs) > 1
            and getattr(node.op, "default_output", None) is not None)


def _reason(exc: Exception) -> Any:
    if isinstance(exc, DowncastError):
        return "%s; cast it first or compile with function(..., " \
            "allow_input_downcast=True)" % (exc.reason,)
    return exc


def value_text(value: Any) -> str:
    """``ndarray of shape (2,) and dtype int64``, or the type and repr of a non-array."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None:
        return "%s of shape %s and dtype %s" % (type(value).__name__, shape, dtype)
    return "%s %r" % (type(value).__name__, value)
