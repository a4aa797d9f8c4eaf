"""The node a kernel is generated from, when it is not the graph's node itself.

An Op may answer ``c_constant_arguments(node)`` (see
:class:`~nbgraph.core.c_interface.CLinkerOp`) with an equivalent *kernel
node* that reads some constants from extra inputs, so that the C text, and
the compiled module, do not depend on their values.  The Program keeps
running the graph's node; this module maps its storage onto the kernel
node's variables: the graph node's inputs and outputs keep their cells, a
constant input replaced by a plain variable reads the constant's cell, and
each appended input gets a cell holding its value.
"""

import io
import pickle

from nbgraph.core.c_interface import CLinkerOp
from nbgraph.core.nodes import Apply

__all__ = ["KernelView", "kernel_view", "dump_views", "load_views"]


class KernelView:
    """``node`` as its kernel sees it: ``knode`` and the values of the appended inputs."""

    __slots__ = ("node", "knode", "extra")

    def __init__(self, node, knode, extra):
        self.node = node
        self.knode = knode
        self.extra = list(extra)

    @property
    def lifted(self):
        """True when the kernel node differs from the graph's node."""
        return self.knode is not self.node

    def storage(self, storage, pointer_cells=None):
        """``(storage, pointer_cells)`` extended with the kernel node's variables."""
        if not self.lifted:
            return storage, pointer_cells
        node, knode = self.node, self.knode
        # the kernel node's inputs are the node's then the lifted constants (below)
        pairs = (list(zip(knode.inputs, node.inputs, strict=False))
                 + list(zip(knode.outputs, node.outputs, strict=True)))
        new = dict(storage)
        cells = None if pointer_cells is None else dict(pointer_cells)
        for kvar, var in pairs:
            new[kvar] = storage[var]
            if cells is not None:
                cells[kvar] = pointer_cells.setdefault(var, [None, None])
        for kvar, value in zip(knode.inputs[len(node.inputs):], self.extra, strict=True):
            new[kvar] = [value]
            if cells is not None:
                cells[kvar] = [None, None]
        return new, cells

    def values(self, inputs):
        """The kernel node's input values from the graph node's."""
        return list(inputs) + self.extra if self.extra else list(inputs)


def kernel_view(node):
    """The :class:`KernelView` of ``node`` (itself unless its Op lifts constants)."""
    op = node.op
    found = op.c_constant_arguments(node) if isinstance(op, CLinkerOp) else None
    if found is None:
        return KernelView(node, node, ())
    knode, extra = found
    return KernelView(node, knode, extra)


def dump_views(nodes, views):
    """The kernel nodes and values of ``views`` (node -> :class:`KernelView`) as
    bytes, for :func:`load_views` in another process (a function-cache hit then
    does not lift the constants again), or None when they do not pickle.  The
    nodes' own variables are written as positions: ``(node, 0 for an input or
    1 for an output, index)``."""
    ids = {}
    for n, node in enumerate(nodes):
        for kind, variables in enumerate((node.inputs, node.outputs)):
            for k, var in enumerate(variables):
                ids.setdefault(id(var), (n, kind, k))
    records = [(views[node].knode, views[node].extra) if views[node].lifted else None
               for node in nodes]
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=5)
    pickler.persistent_id = lambda obj: ids.get(id(obj))  # type: ignore[method-assign]
    try:
        pickler.dump(records)
    except Exception:  # noqa: BLE001 - an Op or a value that does not pickle
        return None
    return buf.getvalue()


class _ViewUnpickler(pickle.Unpickler):
    def __init__(self, file, nodes) -> None:
        super().__init__(file)
        self._nodes = nodes

    def persistent_load(self, pid):
        n, kind, k = pid
        node = self._nodes[n]
        return (node.outputs if kind else node.inputs)[k]


def load_views(nodes, data):
    """``{node: KernelView}`` for ``nodes`` from :func:`dump_views`'s ``data`` (made
    for the same nodes in another process), or None when ``data`` is missing or
    does not fit them (the views are then computed again)."""
    if not isinstance(data, bytes):
        return None
    try:
        records = _ViewUnpickler(io.BytesIO(data), nodes).load()
        if not isinstance(records, list) or len(records) != len(nodes):
            return None
        views = {}
        for node, record in zip(nodes, records, strict=True):
            if record is None:
                views[node] = KernelView(node, node, ())
                continue
            knode, extra = record
            if not isinstance(knode, Apply) or len(knode.outputs) != len(node.outputs) \
                    or len(knode.inputs) != len(node.inputs) + len(extra):
                return None
            views[node] = KernelView(node, knode, extra)
        return views
    except Exception:  # noqa: BLE001 - damaged or foreign: computed again
        return None
