"""``scan``: build a loop from a Python step function.

>>> import numpy as np, nbgraph as ng, nbgraph.tensor as nt
>>> A, k = nt.dvector("A"), nt.iscalar("k")
>>> powers, updates = scan(lambda prev, A: prev * A, outputs_info=nt.ones_like(A),
...                        non_sequences=A, n_steps=k)
>>> f = ng.function([A, k], powers[-1], updates=updates)
>>> f(np.array([1.0, 2.0, 3.0]), 3)
array([ 1.,  8., 27.])

How the step function is called
===============================
``fn`` receives, in this order: for each sequence, its row at each of its
taps (``dict(input=x, taps=[-2, 0])`` gives ``x[t-2]`` then ``x[t]``; a
plain sequence gives ``x[t]``); for each entry of ``outputs_info`` that is
fed back, its values at each of its taps (a plain initial value means tap
-1, the previous step); then the non-sequences, as the very Variables given
(so ``grad`` of an outer expression works inside ``fn``).  Any other Variable
``fn`` reads from outside (a shared variable, an outer result) becomes an
input of the loop too; with ``strict=True`` that is an error instead.

``fn`` returns the step's outputs (a Variable or a list), optionally with a
dict of updates for shared variables (``{w: w + 1}``: inside the loop ``w``
holds its value of the current step, and scan's returned updates give its
value after the last step) and an :func:`until` condition, in any order.
Random numbers drawn inside the step (a ``RandomStream``) advance their
state from step to step; scan's updates carry the state out of the loop,
as for any shared variable (the gradient of such a loop is refused: draw
outside for all steps and pass the draws as a sequence).

The number of steps is ``n_steps`` when given (each sequence must then be
long enough), else the length of the shortest sequence (less the span of its
taps).  ``go_backwards`` reads the sequences from the end; outputs are still
stacked in the order the steps ran.  Results: one Variable per entry of
``outputs_info`` (all steps stacked along a new first axis; the initial
values are not included), as a single Variable when there is exactly one and
``return_list`` is False, and an ordered dict of updates.
"""

from collections import OrderedDict

import numpy as np

from nbgraph.core.fgraph import FunctionGraph
from nbgraph.core.graph import Constant, Variable, clone_replace, graph_inputs, toposort
from nbgraph.tensor.scan.op import Scan
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import SharedVariable, as_tensor_variable

__all__ = ["scan", "until", "ScanUpdates"]


class until:
    """A stop condition returned by a scan step: the loop ends after the step where
    ``condition`` (a scalar) is true."""

    def __init__(self, condition):
        cond = as_tensor_variable(condition)
        if cond.ndim != 0:
            raise TypeError("until() needs a scalar condition, got %r of type %r" % (
                cond, cond.type))
        self.condition = cond

    def __repr__(self):
        return "until(%r)" % (self.condition,)


class ScanUpdates(OrderedDict):
    """The updates scan returns: shared variable -> its value after the loop
    (pass it to ``function(..., updates=...)``)."""


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _tensor(x, what):
    if isinstance(x, Variable):
        return x
    try:
        return as_tensor_variable(x)
    except TypeError as exc:
        raise TypeError("%s must be a tensor, got %r" % (what, x)) from exc


def _int_taps(taps, what, negative_only=False):
    taps = list(taps) if isinstance(taps, (list, tuple)) else [taps]
    out = []
    for k in taps:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError("the taps of %s must be ints, got %r" % (what, k))
        out.append(int(k))
    if not out:
        raise ValueError("%s has an empty list of taps" % what)
    if len(set(out)) != len(out):
        raise ValueError("the taps of %s repeat a value: %r" % (what, out))
    if negative_only and any(k >= 0 for k in out):
        raise ValueError("the taps of %s must be negative (past steps), got %r" % (what, out))
    return out


def _parse_sequences(sequences):
    seqs = []
    for i, entry in enumerate(_as_list(sequences)):
        what = "sequence %d" % i
        if isinstance(entry, dict):
            unknown = set(entry) - {"input", "taps"}
            if unknown or "input" not in entry:
                raise ValueError("%s: a sequence dict takes the keys 'input' and 'taps', got "
                                 "%s" % (what, sorted(entry)))
            var = _tensor(entry["input"], what)
            taps = _int_taps(entry.get("taps", [0]) if entry.get("taps") is not None else [0],
                             what)
        else:
            var, taps = _tensor(entry, what), [0]
        if not isinstance(var.type, TensorType) or var.ndim < 1:
            raise TypeError("%s must have at least one dimension to loop over, got %r of type "
                            "%r" % (what, var, var.type))
        seqs.append((var, taps))
    return seqs


def _parse_outputs_info(outputs_info):
    """[(initial or None, taps or None)]: None taps for outputs not fed back."""
    out = []
    for i, entry in enumerate(_as_list(outputs_info)):
        what = "outputs_info[%d]" % i
        if entry is None:
            out.append((None, None))
        elif isinstance(entry, dict):
            unknown = set(entry) - {"initial", "taps"}
            if unknown:
                raise ValueError("%s: takes the keys 'initial' and 'taps', got %s" % (
                    what, sorted(entry)))
            initial = entry.get("initial")
            taps = entry.get("taps", [-1])
            if initial is None or taps is None:
                out.append((None, None))
            else:
                out.append((_tensor(initial, what), _int_taps(taps, what, negative_only=True)))
        else:
            out.append((_tensor(entry, what), [-1]))
    return out


def _update_pairs(item):
    """True for a non-empty list of (shared variable, new value) pairs."""
    return isinstance(item, (list, tuple)) and bool(item) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], SharedVariable)
        for p in item)


def _split_result(result):
    """(outputs, updates, condition) from what the step function returned."""
    outputs, updates, cond = [], None, None

    def take(item):
        nonlocal updates, cond
        if isinstance(item, until):
            if cond is not None:
                raise ValueError("the step function returned two until() conditions")
            cond = item.condition
        elif isinstance(item, dict):
            if updates is not None:
                raise ValueError("the step function returned two dicts of updates")
            updates = item
        elif _update_pairs(item):
            take(OrderedDict(item))
        elif isinstance(item, (list, tuple)):
            outputs.extend(item)
        else:
            outputs.append(item)

    if _update_pairs(result):
        take(result)
    elif isinstance(result, (list, tuple)) and any(
            isinstance(p, (dict, until, list, tuple)) for p in result):
        for item in result:
            take(item)
    elif result is None:
        pass
    else:
        take(result)
    outs = []
    for i, o in enumerate(outputs):
        if o is None:
            raise TypeError("the step function returned None as output %d" % i)
        outs.append(_tensor(o, "output %d of the step function" % i))
    return outs, OrderedDict(updates or ()), cond


def _placeholder(ttype, name):
    return ttype(name=name)


def _safe_cast(out, state_type, what):
    """``out`` as the state's dtype, or a TypeError when that would lose information."""
    if out.type.dtype == state_type.dtype:
        return out
    if np.can_cast(out.type.dtype, state_type.dtype, "safe"):
        from nbgraph.tensor.math import cast

        return cast(out, state_type.dtype)
    raise TypeError(
        "output %s of the step function has dtype %s, but its initial value (outputs_info) has "
        "dtype %s: the loop would have to downcast it. Give an initial value of dtype %s "
        "(e.g. nt.cast(x, '%s'))" % (what, out.type.dtype, state_type.dtype, out.type.dtype,
                                      out.type.dtype))


def _joined_type(a, b):
    """The most specific type both ``a``'s and ``b``'s values fit (same dtype and ndim)."""
    return TensorType(a.dtype, tuple(x if x == y else None
                                     for x, y in zip(a.shape, b.shape, strict=True)))


def _free_variables(outputs, placeholders):
    """The outer Variables the inner graph reads: the largest sub-expressions that do
    not depend on a placeholder (so loop-invariant work is computed once, outside)."""
    order = toposort(outputs)
    dependent = set(placeholders)
    neutral = set()  # computed from constants alone: stays in the body (keeps inner folding)
    for node in order:
        if any(i in dependent for i in node.inputs):
            dependent.update(node.outputs)
        elif all(isinstance(i, Constant) or i in neutral for i in node.inputs):
            neutral.update(node.outputs)
    free = []
    seen = set(neutral)

    def add(var):
        if var not in dependent and not isinstance(var, Constant) and var not in seen:
            seen.add(var)
            free.append(var)

    for node in order:
        if any(o in dependent for o in node.outputs):
            for var in node.inputs:
                add(var)
    for var in outputs:
        add(var)
    return free


def _add_default_updates(outs, updates, cond):
    """Updates for the shared variables with a ``default_update`` (random states) the
    step reads: inside the loop their state advances from step to step, and scan's
    updates give the state after the last step (as Theano did)."""
    pending = [o for o in outs if isinstance(o, Variable)] + list(updates.values())
    if cond is not None:
        pending.append(cond)
    for var in graph_inputs(pending):
        if isinstance(var, SharedVariable) and var not in updates and \
                getattr(var, "default_update", None) is not None:
            updates[var] = var.default_update


def _int_steps(n_steps):
    if n_steps is None or isinstance(n_steps, Variable):
        return n_steps
    if isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, (int, np.integer)):
        raise TypeError("n_steps must be an int or an integer scalar Variable, got %r" % (
            n_steps,))
    if n_steps < 0:
        raise ValueError("n_steps must be >= 0, got %d (use go_backwards=True to run "
                         "backwards)" % n_steps)
    return as_tensor_variable(np.int64(n_steps))


def _tap_name(base, tap):
    return "%s[t]" % base if tap == 0 else "%s[t%+d]" % (base, tap)


def _outer_sequences(seqs, go_backwards):
    """(outer slices, inner placeholders, lengths) of the sequences' taps."""
    from nbgraph.tensor.math import maximum

    outer, inner, lengths = [], [], []
    for i, (var, taps) in enumerate(seqs):
        src = var[::-1] if go_backwards else var
        lo, hi = min(taps), max(taps)
        base = var.name or "seq%d" % i
        row = TensorType(var.type.dtype, var.type.shape[1:])
        for k in taps:
            start, stop = k - lo, (k - hi if k != hi else None)
            outer.append(src if start == 0 and stop is None else src[start:stop])
            inner.append(_placeholder(row, _tap_name(base, k)))
        static = var.type.shape[0]
        if static is not None:
            lengths.append(max(static - (hi - lo), 0))
        else:
            n = var.shape[0]
            lengths.append(maximum(n - (hi - lo), 0) if hi != lo else n)
    return outer, inner, lengths


def _steps_from(lengths):
    from nbgraph.tensor.math import minimum

    static = [n for n in lengths if isinstance(n, int)]
    symbolic = [n for n in lengths if not isinstance(n, int)]
    result = as_tensor_variable(np.int64(min(static))) if static else None
    for n in symbolic:
        result = n if result is None else minimum(result, n)
    return result


class _State:
    """One fed-back output: its outer initial value, taps and row type."""

    def __init__(self, index, initial, taps, plain, name):
        self.index = index          # position in outputs_info (None: a shared update)
        self.initial = initial
        self.taps = taps
        self.plain = plain          # initial is one value (taps [-1]), not stacked rows
        self.name = name
        if plain:
            self.row_type = initial.type
        else:
            if not isinstance(initial.type, TensorType) or initial.ndim < 1:
                raise TypeError("outputs_info[%s]: with taps %r the initial value needs one "
                                "row per past step, so at least one dimension; got %r of "
                                "type %r" % (index, taps, initial, initial.type))
            lag = -min(taps)
            rows = initial.type.shape[0]
            if rows is not None and rows < lag:
                raise ValueError("outputs_info[%s]: taps %r need %d initial rows, %r has %d"
                                 % (index, taps, lag, initial, rows))
            self.row_type = TensorType(initial.type.dtype, initial.type.shape[1:])

    def buffer(self):
        """The outer initial buffer: ``-min(taps)`` rows."""
        from nbgraph.tensor.elemwise import DimShuffle

        if not isinstance(self.initial.type, TensorType):
            return self.initial  # an opaque state (a random generator): the value itself
        if self.plain:
            ndim = self.initial.type.ndim
            return DimShuffle(ndim, ("x",) + tuple(range(ndim)))(self.initial)
        lag = -min(self.taps)
        if self.initial.type.shape[0] == lag:
            return self.initial
        return self.initial[:lag]

    def placeholders(self, row_type):
        self.inner = [_placeholder(row_type, _tap_name(self.name, k)) for k in self.taps]
        return self.inner


def _call_step(fn, seq_inner, states, row_types, non_seqs):
    args = list(seq_inner)
    for state, row in zip(states, row_types, strict=True):
        args.extend(state.placeholders(row))
    args.extend(non_seqs)
    return _split_result(fn(*args))


def scan(fn, sequences=None, outputs_info=None, non_sequences=None, n_steps=None,
         truncate_gradient=-1, go_backwards=False, strict=False, return_list=False,
         name=None):
    """Loop ``fn`` over sequences and recurrent states; returns ``(outputs, updates)``.

    See the module docstring for how ``fn`` is called and what it may return.
    """
    _check_arguments(fn, truncate_gradient)
    args = _normalise_arguments(fn, sequences, outputs_info, non_sequences, n_steps,
                                go_backwards, name)
    step = _trace_step(fn, args)
    shared_states, shared_outs = _shared_states(step.updates)
    op, outer = _build_loop(args, step, shared_states, shared_outs, strict,
                            truncate_gradient)
    results = op.make_node(args.n_steps, *outer).outputs
    return _user_results(results, step, shared_states, return_list)


def _check_arguments(fn, truncate_gradient):
    """Refuse a step function that is not callable and a bad ``truncate_gradient``."""
    if not callable(fn):
        raise TypeError("scan needs a callable step function, got %r" % (fn,))
    if isinstance(truncate_gradient, bool) or not isinstance(truncate_gradient, int) or (
            truncate_gradient != -1 and truncate_gradient < 1):
        raise ValueError("truncate_gradient must be -1 (no truncation) or a positive int, got "
                         "%r" % (truncate_gradient,))


class _Arguments:
    """scan's arguments in one form: parsed sequences (their outer slices and inner
    rows), outputs_info entries, non-sequences, the number of steps and the name."""

    def __init__(self, outs_info, non_seqs, seq_outer, seq_inner, n_steps, name):
        self.outs_info = outs_info
        self.non_seqs = non_seqs
        self.seq_outer = seq_outer
        self.seq_inner = seq_inner
        self.n_steps = n_steps
        self.name = name


def _normalise_arguments(fn, sequences, outputs_info, non_sequences, n_steps, go_backwards,
                         name):
    """Parse and check the sequences, outputs_info, non-sequences and n_steps."""
    seqs = _parse_sequences(sequences)
    outs_info = _parse_outputs_info(outputs_info)
    non_seqs = [v if isinstance(v, Variable) else _tensor(v, "non_sequences[%d]" % i)
                for i, v in enumerate(_as_list(non_sequences))]
    n_steps = _int_steps(n_steps)
    seq_outer, seq_inner, lengths = _outer_sequences(seqs, go_backwards)
    if n_steps is None:
        if not lengths:
            raise ValueError("scan needs n_steps when it has no sequences to loop over")
        n_steps = _steps_from(lengths)
    if name is None:
        fname = getattr(fn, "__name__", "")
        name = fname if fname and fname != "<lambda>" else None
    return _Arguments(outs_info, non_seqs, seq_outer, seq_inner, n_steps, name)


class _Step:
    """What calling the step function gave: the recurrent states (with their taps'
    placeholders), the states' inner outputs, the nit-sot outputs, the updates and the
    stop condition."""

    def __init__(self, states, state_outs, nit_outs, updates, cond, outs_info):
        self.states = states
        self.state_outs = state_outs
        self.nit_outs = nit_outs
        self.updates = updates
        self.cond = cond
        self.outs_info = outs_info


def _trace_step(fn, args):
    """Call ``fn`` on placeholders for the sequence rows and state taps (twice when a
    step output is less specific than its initial value) and check its outputs."""
    states = []
    for i, (initial, taps) in enumerate(args.outs_info):
        if initial is not None:
            base = initial.name or "out%d" % i
            states.append(_State(i, initial, taps, taps == [-1], base))
    row_types = [s.row_type for s in states]
    outs, updates, cond = _call_step(fn, args.seq_inner, states, row_types, args.non_seqs)
    generalized = _generalize(states, row_types, outs, args.outs_info)
    if generalized is not None:
        row_types = generalized
        outs, updates, cond = _call_step(fn, args.seq_inner, states, row_types, args.non_seqs)
    _add_default_updates(outs, updates, cond)
    outs_info = args.outs_info
    if outs_info and len(outs) != len(outs_info):
        raise ValueError("the step function returned %d outputs but outputs_info describes %d"
                         % (len(outs), len(outs_info)))
    if not outs_info:
        outs_info = [(None, None)] * len(outs)
    state_outs = [_fit_state(outs[state.index], row, state.index)
                  for state, row in zip(states, row_types, strict=True)]
    nit_outs = [o for o, (init, _) in zip(outs, outs_info, strict=True) if init is None]
    return _Step(states, state_outs, nit_outs, updates, cond, outs_info)


def _shared_states(updates):
    """The shared variables updated inside the loop, as states whose initial value is the
    variable, and their checked new values."""
    shared_states, shared_outs = [], []
    for target, expr in updates.items():
        if not isinstance(target, SharedVariable):
            raise TypeError("scan updates must target shared variables; %r is not one" % (
                target,))
        state = _State(None, target, [-1], True, target.name or "shared")
        state.placeholders(target.type)
        expr = _tensor(expr, "the update of %r" % (target,))
        if isinstance(target.type, TensorType):
            expr = _safe_cast(expr, target.type, "for %r" % target)
        try:
            expr = target.type.filter_variable(expr)
        except TypeError as exc:
            raise TypeError("the update of %r inside scan has type %r, which does not fit "
                            "%r: %s" % (target, expr.type, target.type, exc)) from None
        shared_states.append(state)
        shared_outs.append(expr)
    return shared_states, shared_outs


def _build_loop(args, step, shared_states, shared_outs, strict, truncate_gradient):
    """The Scan Op over the inner graph, and its outer inputs after n_steps."""
    cond = step.cond
    inner_outs = step.state_outs + shared_outs + step.nit_outs + \
        ([cond] if cond is not None else [])
    if not step.state_outs and not shared_outs and not step.nit_outs:
        raise ValueError("the step function returned no output and no update")
    if shared_states:
        inner_outs = clone_replace(inner_outs, [(s.initial, s.inner[0])
                                                for s in shared_states])
    all_states = step.states + shared_states
    placeholders = list(args.seq_inner) + [p for s in all_states for p in s.inner]
    free = _order_free(_free_variables(inner_outs, placeholders), args.non_seqs)
    if strict:
        _check_strict(free, args.non_seqs)
    free_inner = [v.type(name=v.name) for v in free]
    if free:
        inner_outs = clone_replace(inner_outs, list(zip(free, free_inner, strict=True)))
    fgraph = FunctionGraph(placeholders + free_inner, inner_outs, clone=True, name=args.name)
    store = ["all"] * len(step.states) + ["final"] * len(shared_states) + \
        ["all"] * len(step.nit_outs)
    op = Scan(fgraph, len(args.seq_inner), [s.taps for s in all_states], len(step.nit_outs),
              until=cond is not None, store=store, truncate_gradient=truncate_gradient,
              name=args.name)
    return op, args.seq_outer + [s.buffer() for s in all_states] + free


def _user_results(results, step, shared_states, return_list):
    """scan's ``(outputs, updates)`` from the Scan node's outputs: one output per entry
    of outputs_info (states and nit-sot outputs in the user's order)."""
    states = step.states
    by_index = {s.index: results[k] for k, s in enumerate(states)}
    nit_iter = iter(results[len(states) + len(shared_states):])
    user = [by_index[i] if i in by_index else next(nit_iter)
            for i in range(len(step.outs_info))]
    new_updates = ScanUpdates()
    for k, state in enumerate(shared_states):
        new_updates[state.initial] = results[len(states) + k]
    if len(user) == 1 and not return_list:
        return user[0], new_updates
    return user, new_updates


def _generalize(states, row_types, outs, outs_info):
    """Row types relaxed where a step output is less specific than its initial value."""
    if outs_info and len(outs) != len(outs_info):
        return None  # reported by the caller
    changed = False
    new = list(row_types)
    for k, (state, row) in enumerate(zip(states, row_types, strict=True)):
        out = outs[state.index]
        otype = out.type
        if not isinstance(otype, TensorType) or otype.ndim != row.ndim:
            continue
        if not row.is_super(TensorType(row.dtype, otype.shape)):
            new[k] = _joined_type(row, otype)
            changed = True
    return new if changed else None


def _fit_state(out, row, index):
    if not isinstance(out.type, TensorType) or out.type.ndim != row.ndim:
        raise TypeError("output %d of the step function is %r of type %r, but its initial "
                        "value (outputs_info[%d]) has rows of type %r: their number of "
                        "dimensions must agree" % (index, out, out.type, index, row))
    out = _safe_cast(out, row, index)
    if not row.is_super(out.type):
        raise TypeError("output %d of the step function has type %r, which does not fit its "
                        "state's type %r" % (index, out.type, row))
    return out


def _order_free(free, non_seqs):
    """The explicit non-sequences first (in their order), then the other outer values."""
    rank = {v: i for i, v in enumerate(non_seqs)}
    return sorted(free, key=lambda v: (rank.get(v, len(rank)), free.index(v)))


def _check_strict(free, non_seqs):
    allowed = set(non_seqs)
    for var in free:
        if var in allowed:
            continue
        for root in graph_inputs([var], blockers=list(allowed)):
            if root in allowed or isinstance(root, Constant):
                continue
            raise ValueError("scan(strict=True): the step function reads %r, which is not "
                             "given in non_sequences" % (root,))
