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

from nbgraph.core.c_interface import CLinkerOp

__all__ = ["KernelView", "kernel_view"]


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
