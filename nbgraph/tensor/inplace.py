"""The in-place stage of the "fast" pipeline: Elemwise nodes overwrite a dead input.

:class:`InplaceElemwise` turns ``Elemwise(op)`` (fused Composites included)
into ``Elemwise(op, {j: i})`` -- output ``j`` written into the memory of input
``i`` -- when that changes no result:

* the input is an intermediate: it and every value it views (followed back
  through ``view_map`` and ``destroy_map``) is computed by a node, is not a
  constant, a graph input or a graph output, and is read by nothing but the
  next step of that chain, this node last; so no one else ever sees the
  overwritten memory, and the caller's arrays are never touched;
* the memory's owner is not an Op with hidden outputs (``default_output``
  among several): its results may live in its private buffer;
* the input has the output's dtype and provably the output's run-time shape
  (equal symbolic shape keys, :mod:`nbgraph.tensor.shape_keys`): an input
  that NumPy broadcasting could stretch is never written into.  In a graph
  without lazy nodes (every node runs on every call) the keys are compared
  up to what its matrix products prove (:class:`AlignedSizes`): a
  ``Dot(x, y)`` that ran had ``x.shape[-1] == y.shape[0]``, so an SGD
  update ``W - lr * dot(x.T, g)`` may overwrite the product's result.

Nodes are visited in topological order, so a chain of in-place nodes can
form (each overwriting the previous one's result).  One output per node is
made in place.  Every change is a :meth:`FunctionGraph.replace` with reason
``"inplace_elemwise"``.

>>> import nbgraph as ng, nbgraph.tensor as nt
>>> a, b = nt.dmatrix("a"), nt.dmatrix("b")
>>> f = ng.function([a, b], nt.exp(nt.dot(a, b)) + 1, linker="py")
>>> [str(node.op) for node in f.fgraph.toposort()]
['Dot', 'Elemwise{Composite{(exp(x0) + 1.0)}, inplace}']
"""

from nbgraph.core.memory import memory_source
from nbgraph.core.graph import Apply, Constant
from nbgraph.core.rewriting import GraphRewriter
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.rewriting import rewrites
from nbgraph.tensor.shape_keys import shape_keys
from nbgraph.tensor.type import TensorType

__all__ = ["AlignedSizes", "InplaceElemwise", "destroyable"]


def _only_reader(fgraph, var, node):
    """True when ``var`` is an intermediate that ``node`` alone reads."""
    if isinstance(var, Constant) or var.owner is None:
        return False
    clients = fgraph.clients.get(var)
    return bool(clients) and all(client is node for client, _ in clients)


def _private_source(fgraph, var, memo):
    """True when the memory ``var`` uses is reachable only through ``var``.

    Follows ``view_map``/``destroy_map`` back to the owner of the memory:
    each step must be read only by the next, and the owner must not be an Op
    with hidden outputs.  ``memo`` caches answers (the
    walk back along a long chain of in-place nodes is done once).
    """
    path = []
    answer = None
    while True:
        if var in memo:
            answer = memo[var]
            break
        path.append(var)
        owner = var.owner
        src = memory_source(owner, var.index)
        if src is None:
            answer = getattr(owner.op, "default_output", None) is None or len(owner.outputs) == 1
            break
        if not _only_reader(fgraph, src, owner):
            answer = False
            break
        var = src
    for v in path:
        memo[v] = answer
    return answer


def destroyable(fgraph, node, var, memo=None):
    """True when ``node`` may overwrite the memory of its input ``var`` (see module doc)."""
    return _only_reader(fgraph, var, node) and _private_source(
        fgraph, var, {} if memo is None else memo)


class AlignedSizes:
    """Shape keys made equal by the matrix products of a graph.

    A ``Dot(x, y)`` fails unless ``x.shape[-1] == y.shape[0]``; in a graph
    without lazy nodes every Dot runs whenever the graph succeeds, so those
    two sizes are equal in every such run.  The sizes each Dot aligns form
    classes (union-find over shape keys, a class named by a member that is not
    a broadcast key when it has one); :meth:`canonical` rewrites keys with
    them: each size by its class, and within a broadcast key ``bcast(S)`` a
    subset ``A`` of ``S`` whose ``bcast(A)`` is in a class by that class
    (broadcasting is associative, commutative and idempotent), a broadcast of
    one size being that size.  Equal canonical keys are equal sizes.  Built
    once per rewrite pass over the graph as it stands (a Dot removed later
    proves nothing any more).
    """

    def __init__(self, fgraph):
        self._parent = {}
        self._bcast = []  # broadcast keys that are in a class with another key
        nodes = list(fgraph.apply_nodes)
        if any(node.op.lazy_inputs(node) for node in nodes):
            return
        from nbgraph.tensor.basic import Dot

        for node in nodes:
            if isinstance(node.op, Dot) and all(isinstance(v.type, TensorType)
                                                for v in node.inputs):
                x, y = node.inputs
                self._union(shape_keys(fgraph, x)[-1], shape_keys(fgraph, y)[0])

    @staticmethod
    def _is_bcast(key):
        return isinstance(key, tuple) and len(key) == 2 and key[0] == "bcast"

    def _find(self, key):
        parent = self._parent
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(key, key) != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    def _union(self, a, b):
        ra, rb = self._find(a), self._find(b)
        if ra == rb:
            return
        if self._is_bcast(ra) and not self._is_bcast(rb):
            ra, rb = rb, ra
        self._parent[rb] = ra  # a class is named by a non-broadcast member when it has one
        for k in (a, b):
            if self._is_bcast(k) and k not in self._bcast:
                self._bcast.append(k)

    def canonical(self, keys):
        """``keys`` (a tuple of shape keys) rewritten with the classes."""
        if not self._parent:
            return tuple(keys)
        return tuple(self._canonical_key(k) for k in keys)

    def _canonical_key(self, key):
        if not self._is_bcast(key):
            root = self._find(key)
            return key if self._is_bcast(root) else root
        atoms = set()
        for a in key[1]:
            root = self._find(a)
            atoms.add(a if self._is_bcast(root) else root)
        changed = True
        while changed and len(atoms) > 1:
            changed = False
            for member in self._bcast:
                root = self._find(member)
                if self._is_bcast(root) or not member[1] <= atoms:
                    continue
                atoms = (atoms - member[1]) | {root}
                changed = True
        return next(iter(atoms)) if len(atoms) == 1 else ("bcast", frozenset(atoms))


def _choice(fgraph, node, memo, aligned=None):
    """``(output index, input index)`` for ``node`` to work in place, or None."""
    for j, out in enumerate(node.outputs):
        if not isinstance(out.type, TensorType):
            continue
        for i, inp in enumerate(node.inputs):
            if not isinstance(inp.type, TensorType) or inp.type.dtype != out.type.dtype \
                    or inp.type.ndim != out.type.ndim:
                continue
            if not destroyable(fgraph, node, inp, memo):
                continue
            a, b = shape_keys(fgraph, inp), shape_keys(fgraph, out)
            if a != b and (aligned is None or aligned.canonical(a) != aligned.canonical(b)):
                continue
            return j, i
    return None


class InplaceElemwise(GraphRewriter):
    """Makes each Elemwise node overwrite one dead input where it is safe."""

    name = "inplace_elemwise"

    def apply(self, fgraph):
        changes = 0
        memo = {}
        aligned = AlignedSizes(fgraph)
        for node in fgraph.toposort():
            op = node.op
            if type(op) is not Elemwise or op.inplace_pattern or node not in fgraph.apply_nodes:
                continue
            choice = _choice(fgraph, node, memo, aligned)
            if choice is None:
                continue
            j, i = choice
            new_op = Elemwise(op.scalar_op, {j: i})
            new = Apply(new_op, list(node.inputs), [o.type() for o in node.outputs])
            for old, out in zip(node.outputs, new.outputs, strict=True):
                out.name = old.name
                if old in fgraph.variables:
                    fgraph.replace(old, out, reason=self.name)
            changes += 1
        return changes


rewrites.register("inplace_elemwise", InplaceElemwise(), "inplace", position=200)
