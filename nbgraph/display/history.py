"""Replaying a rewrite pipeline step by step: :func:`replay_rewrites`.

``FunctionGraph.history`` records every replacement a rewrite pass made, but
the graph itself only exists in its final state.  To show the graph *as it was*
after each replacement (what :class:`~nbgraph.display.GraphExplorer`'s slider
steps through), :func:`replay_rewrites` runs the "fast" pipeline again on a
fresh copy of the user's graph with a listener that logs every replacement
(and every rewiring it made), so the graph at any step can be rebuilt:

>>> import nbgraph.tensor as nt
>>> x = nt.dvector("x")
>>> replay = replay_rewrites(-(-x) * 1)
>>> [step.reason for step in replay.steps]
[None, 'double_negation', 'fold_constants', 'mul_by_one']
>>> print(replay.steps[-1].text(print_type=False), end="")
x [id A]

Step 0 is the graph before rewriting; step k (1 <= k <= ``len(replay)``)
the graph after k replacements, with that replacement's
:class:`~nbgraph.core.fgraph.Replacement` record (reason, old and new
variable, narrowing trace).  The user's graph is never modified.
"""

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Apply, Variable
from nbgraph.display.names import one_line, safe_repr

__all__ = ["RewriteStep", "RewriteReplay", "replay_rewrites", "graph_of"]


class RewriteStep:
    """The graph at one step of a replayed rewrite.

    ``number``: 0 for the graph before rewriting, k after the k-th
    replacement.  ``graph``: a FunctionGraph holding a copy of the graph at
    that moment (built when first asked for, then kept).  ``record``: the
    Replacement made at this step (None at step 0); ``reason`` and ``trace``
    are its reason and narrowing trace.  ``changed``: the Apply nodes and
    Variables of ``graph`` this step brought in (for highlighting).
    """

    def __init__(self, replay, number, record=None):
        self._replay = replay
        self.number = number
        self.record = record

    @property
    def graph(self):
        return self._replay.graph_at(self.number)[0]

    @property
    def changed(self):
        return self._replay.graph_at(self.number)[1]

    @property
    def reason(self):
        return None if self.record is None else self.record.reason

    @property
    def trace(self):
        """The narrowing trace of this step's replacement (None at step 0)."""
        return None if self.record is None else self.record.trace

    def text(self, print_type=True):
        """The dprint text of the graph at this step."""
        from nbgraph.display.text import dprint_text

        return dprint_text(self.graph, print_type=print_type)

    def describe(self):
        """One line: ``step 2: double_negation: Elemwise{neg}.0 -> x``."""
        if self.record is None:
            return "step 0: the graph before rewriting"
        rec = self.record
        return "step %d: %s: %s -> %s" % (self.number, rec.reason or "no reason given",
                                          safe_repr(rec.old), safe_repr(rec.new))

    def __repr__(self):
        return "<RewriteStep %s>" % self.describe()


class RewriteReplay:
    """The result of :func:`replay_rewrites`.

    ``steps``: ``len(self) + 1`` RewriteSteps (step 0 first).  ``fgraph``:
    the rewritten FunctionGraph the replay produced (keep it unchanged: the
    earlier steps are rebuilt from it).  ``note``: why the history is empty
    when it could not be replayed (else None).

    How the steps are kept: copying the whole graph after every replacement
    costs O(nodes x replacements), minutes for a big graph, so the replay
    only logs each rewiring (which input of which node read what before).
    The graph at step k is the final graph with the rewirings made after
    step k undone, copied into fresh nodes when the step is first looked at.
    """

    _CACHE_SIZE = 32

    def __init__(self, fgraph, note=None):
        self.fgraph = fgraph
        self.note = note
        self.steps = [RewriteStep(self, 0)]
        self._changes = []    # (node or "output", input index, variable read before)
        self._bounds = [0]    # len(self._changes) at the end of each step
        self._fresh = [set()]  # what each step brought into the graph
        self._pending = set()
        self._built = {}

    def __len__(self):
        """The number of replacements (the last step's number)."""
        return len(self.steps) - 1

    def __getitem__(self, k):
        return self.steps[k]

    def __iter__(self):
        return iter(self.steps)

    def __repr__(self):
        return "<RewriteReplay: %d replacement%s>" % (len(self), "" if len(self) == 1 else "s")

    # -- listener hooks (attached to self.fgraph while the pipeline runs) -----
    def on_import(self, fgraph, node, reason):
        self._pending.add(node)
        self._pending.update(node.outputs)

    def on_change_input(self, fgraph, node, i, old, new, reason):
        self._changes.append((node, i, old))

    def on_replace(self, fgraph, record):
        self._pending.add(record.new)
        self._bounds.append(len(self._changes))
        self._fresh.append(self._pending)
        self._pending = set()
        self.steps.append(RewriteStep(self, len(self.steps), record))

    # -- rebuilding a step ----------------------------------------------------
    def graph_at(self, k):
        """``(FunctionGraph, changed)`` of step ``k`` (see :class:`RewriteStep`)."""
        if not 0 <= k < len(self.steps):
            raise IndexError("step %r is out of range 0..%d" % (k, len(self)))
        built = self._built.pop(k, None)
        if built is None:
            built = self._build(k)
        self._built[k] = built  # most recently used last
        while len(self._built) > self._CACHE_SIZE:
            self._built.pop(next(iter(self._built)))
        return built

    def _build(self, k):
        final = self.fgraph
        outputs, inputs_now = self._undone(k)
        equiv = _copy_graph(final.inputs, outputs, inputs_now)
        graph = FunctionGraph(list(final.inputs), [equiv[o] for o in outputs], clone=False,
                              name=final.name)
        changed = frozenset(equiv[item] for item in self._fresh[k] if item in equiv)
        return graph, changed

    def _undone(self, k):
        """The outputs and the changed nodes' inputs as they were before replacement ``k``."""
        outputs = list(self.fgraph.outputs)
        inputs_now = {}
        for node, i, old in reversed(self._changes[self._bounds[k]:]):
            if isinstance(node, str):  # "output"
                outputs[i] = old
            else:
                inputs_now.setdefault(node, list(node.inputs))[i] = old
        return outputs, inputs_now


def _copy_graph(inputs, outputs, inputs_now):
    """``{original: copy}`` of every Variable and Apply from ``inputs`` to ``outputs``, a node
    reading ``inputs_now[node]`` where given (an explicit-stack walk, no recursion)."""
    equiv = {inp: inp for inp in inputs}
    stack = list(reversed(outputs))
    while stack:
        var = stack[-1]
        if var in equiv:
            stack.pop()
            continue
        node = var.owner
        if node is None:  # a constant (every other root is an input)
            equiv[var] = var
            stack.pop()
            continue
        reads = inputs_now.get(node, node.inputs)
        missing = [inp for inp in reads if inp not in equiv]
        if missing:
            stack.extend(reversed(missing))
            continue
        stack.pop()
        copy = Apply(node.op, [equiv[inp] for inp in reads],
                     [out.clone() for out in node.outputs])
        equiv[node] = copy
        for old, new in zip(node.outputs, copy.outputs, strict=True):
            equiv[old] = new
    return equiv


def graph_of(obj):
    """``(inputs, outputs)`` of the user's graph behind ``obj``.

    ``obj`` is a Variable, a list or tuple of Variables, a FunctionGraph or a
    compiled Function (its inputs and outputs as the caller gave them, its
    shared variables and update expressions too, as function() compiles
    them).  ``inputs`` is None when every non-constant root is an input.
    """
    if isinstance(obj, Variable):
        return None, [obj]
    if isinstance(obj, (list, tuple)):
        if not obj or not all(isinstance(v, Variable) for v in obj):
            raise TypeError("expected a non-empty list of Variables, got %r" % (obj,))
        return None, list(obj)
    if isinstance(obj, FunctionGraph):
        return list(obj.inputs), list(obj.outputs)
    fgraph = getattr(obj, "fgraph", None)
    if isinstance(fgraph, FunctionGraph) and hasattr(obj, "inputs") and hasattr(obj, "outputs"):
        shared = list(getattr(obj, "shared_inputs", ()))
        updates = [expr for _, expr in getattr(obj, "updates", ())]
        return list(obj.inputs) + shared, list(obj.outputs) + updates
    raise TypeError("expected a Variable, a list of Variables, a FunctionGraph or a compiled "
                    "Function, got %s" % type(obj).__name__)


def replay_rewrites(obj, pipeline=None):
    """Run the rewrite pipeline on a copy of ``obj``'s graph, keeping the graph at every step.

    ``obj``: see :func:`graph_of`.  ``pipeline``: a graph rewriter (anything
    with ``rewrite(fgraph)``), default the "fast" pipeline that function()
    runs.  Returns a :class:`RewriteReplay`.  A graph the pipeline cannot be
    replayed on (a Function compiled with ``givens``, whose own inputs do not
    compute its outputs) gives a replay of the compiled graph with no
    replacements and a ``note`` saying why.
    """
    inputs, outputs = graph_of(obj)
    try:
        fgraph = FunctionGraph(inputs, outputs, clone=True)
    except (TypeError, ValueError) as exc:
        compiled = getattr(obj, "fgraph", None)
        if not isinstance(compiled, FunctionGraph):
            raise
        return RewriteReplay(compiled.clone(),
                             note="the rewrites cannot be replayed from the function's "
                                  "inputs (%s); showing the compiled graph" % one_line(exc))
    if pipeline is None:
        from nbgraph.tensor.rewriting import fast_pipeline

        pipeline = fast_pipeline()
    replay = RewriteReplay(fgraph)
    fgraph.attach_feature(replay)
    try:
        pipeline.rewrite(fgraph)
    finally:
        fgraph.remove_feature(replay)
    return replay


