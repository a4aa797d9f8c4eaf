"""Random graphs for property tests, each with its NumPy mirror (``nbgraph.testing.random_graph``).

A graph is grown from random inputs by applying random operations to random
earlier variables.  Every operation is a pair: the nbgraph expression and the
NumPy expression of the same meaning, so each graph comes with the values
NumPy gives for its outputs (the oracle of values, dtypes and shapes).  An
operation that does not apply to the operands it drew (shapes that do not
broadcast, a dtype it refuses) is skipped, in nbgraph and NumPy alike.

>>> import numpy as np
>>> g = random_graph(np.random.default_rng(0), n_nodes=(4, 6))
>>> len(g.outputs) == len(g.expected) >= 1
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["RandomGraph", "GraphOp", "random_graph", "ELEMENTWISE_OPS", "GRAPH_OPS",
           "INPUT_SPECS", "numpy_inputs"]


@dataclass
class RandomGraph:
    """``inputs`` (Variables), their ``values``, ``outputs`` and NumPy's ``expected`` values."""

    inputs: list
    values: list
    outputs: list
    expected: list
    ops: list = field(default_factory=list)


@dataclass(frozen=True)
class GraphOp:
    """One operation: ``build(rng, *variables)`` returns ``(nbgraph_fn, numpy_fn)``, two
    callables taking the operands (so random choices, an axis say, are made once for both)."""

    name: str
    arity: int
    build: Callable[..., tuple]


def _fixed(name: str, arity: int, sym: Callable, num: Callable) -> GraphOp:
    return GraphOp(name, arity, lambda rng, *args: (sym, num))


def _nt():
    import nbgraph.tensor as nt

    return nt


def _reduce(kind: str) -> GraphOp:
    def build(rng, a):
        axis = int(rng.integers(0, a.ndim)) if a.ndim else None
        keep = bool(rng.integers(0, 2))
        return (lambda x: getattr(_nt(), kind)(x, axis=axis, keepdims=keep),
                lambda x: getattr(np, kind)(x, axis=axis, keepdims=keep))
    return GraphOp(kind, 1, build)


def _dot_constant(rng, a):
    weights = np.full((4, 3), 0.1)
    if a.ndim != 2 or a.type.shape[1] not in (None, 4):
        raise ValueError("dot needs a matrix of 4 columns")
    return (lambda x: _nt().dot(x, _nt().constant(weights)).T, lambda x: np.dot(x, weights).T)


#: Elementwise operations defined on every numeric dtype NumPy has (complex too).
ELEMENTWISE_OPS = [
    _fixed("add", 2, lambda a, b: a + b, np.add),
    _fixed("mul", 2, lambda a, b: a * b, np.multiply),
    _fixed("sub", 2, lambda a, b: a - b, np.subtract),
    _fixed("true_div", 2, lambda a, b: a / b, np.true_divide),
    _fixed("neg", 1, lambda a: -a, np.negative),
    _fixed("abs", 1, lambda a: abs(a), np.absolute),
    _fixed("scale", 1, lambda a: a * 1.5, lambda a: a * 1.5),
    _fixed("shift", 1, lambda a: a + 2, lambda a: a + 2),
    _fixed("exp", 1, lambda a: _nt().exp(a * 0.1), lambda a: np.exp(a * 0.1)),
    _fixed("tanh", 1, lambda a: _nt().tanh(a), np.tanh),
    _fixed("sin", 1, lambda a: _nt().sin(a), np.sin),
    _fixed("square", 1, lambda a: _nt().sqr(a), np.square),
    _fixed("product_of_sums", 2, lambda a, b: (a + b) * (a - 1.0),
           lambda a, b: (a + b) * (a - 1.0)),
]

#: ELEMENTWISE_OPS plus real-only ones, reductions along one axis, a dot and transposes.
GRAPH_OPS = ELEMENTWISE_OPS + [
    _fixed("maximum", 2, lambda a, b: _nt().maximum(a, b), np.maximum),
    _fixed("switch", 2, lambda a, b: _nt().switch(a > b, a, b), lambda a, b: np.where(a > b, a, b)),
    _fixed("cast", 1, lambda a: _nt().cast(a, "float32") * 2,
           lambda a: a.astype("float32") * np.float32(2)),
    _reduce("sum"),
    _reduce("max"),
    GraphOp("dot", 1, _dot_constant),
    _fixed("transpose_twice", 1, lambda a: a.T.T + 0.5, lambda a: a.T.T + 0.5),
]

#: (declared static shape, run-time shape): unknown sizes that are 1 at run time
#: exercise NumPy's run-time broadcasting.
INPUT_SPECS = [((None, None), (3, 4)), ((1, None), (1, 4)), ((None, 1), (3, 1)),
               ((None, None), (1, 4)), ((None, None), (3, 1)), ((3, 4), (3, 4)), ((), ())]


def numpy_inputs(rng: np.random.Generator, dtype: str, shape: Sequence[int]) -> np.ndarray:
    """Random values of ``dtype`` and ``shape`` (normal * 3; complex parts both random)."""
    kind = np.dtype(dtype).kind
    values = rng.normal(size=shape) * 3
    if kind == "c":
        values = values + 3j * rng.normal(size=shape)
    elif kind == "b":
        values = values > 0
    return np.asarray(values).astype(dtype)


def _numpy_value(num_fn, operands):
    """NumPy's value (float16 where NumPy makes it, ``exp`` of an int8 too)."""
    with np.errstate(all="ignore"):
        return np.asarray(num_fn(*operands))


def random_graph(rng: np.random.Generator, *, n_nodes: tuple | int = (3, 25),
                 n_inputs: tuple | int = (2, 5), input_specs: Sequence = INPUT_SPECS,
                 dtypes: Sequence[str] = ("float64",), ops: Sequence[GraphOp] = GRAPH_OPS,
                 window: int | None = None, duplicate: float = 0.0,
                 extra_outputs: tuple = (0, 3)) -> RandomGraph:
    """A random graph and NumPy's values of its outputs.

    ``n_nodes``/``n_inputs``: a count or a ``(low, high)`` range (high excluded);
    ``input_specs``: ``(declared shape, run-time shape)`` pairs drawn per input;
    ``dtypes``: drawn per input; ``ops``: the :class:`GraphOp` table; ``window``:
    when set, the first operand is one of the ``window`` newest variables (long
    connected chains); ``duplicate``: the probability of building the same
    expression twice (for merge).  The last variable is an output, plus a few
    random ones (``extra_outputs`` range).
    """
    import nbgraph.tensor as nt

    def count(spec):
        return int(spec) if np.isscalar(spec) else int(rng.integers(*spec))

    inputs, values = [], []
    for k in range(count(n_inputs)):
        shape, runtime = input_specs[int(rng.integers(0, len(input_specs)))]
        dtype = dtypes[int(rng.integers(0, len(dtypes)))]
        inputs.append(nt.tensor(dtype, shape, "i%d" % k))
        values.append(numpy_inputs(rng, dtype, runtime))
    pool, mirror, used = list(inputs), list(values), []
    target = count(n_nodes) + len(inputs)
    attempts = 0
    while len(pool) < target and attempts < 20 * target:
        attempts += 1
        op = ops[int(rng.integers(0, len(ops)))]
        low = max(0, len(pool) - window) if window else 0
        picks = [int(rng.integers(low, len(pool)))] + [
            int(rng.integers(0, len(pool))) for _ in range(op.arity - 1)]
        args = [pool[i] for i in picks]
        try:
            sym_fn, num_fn = op.build(rng, *args)
            new = sym_fn(*args)
        except (ValueError, TypeError):  # shapes or dtypes that do not combine
            continue
        try:
            value = _numpy_value(num_fn, [mirror[i] for i in picks])
        except ValueError:  # the run-time shapes do not broadcast: leave it out
            continue
        pool.append(new)
        mirror.append(value)
        used.append(op.name)
        if duplicate and rng.random() < duplicate:
            pool.append(sym_fn(*args))
            mirror.append(value)
    chosen = [len(pool) - 1]
    if len(pool) > len(inputs) + 1:
        chosen += [int(i) for i in rng.integers(len(inputs), len(pool), count(extra_outputs))]
    return RandomGraph(inputs, values, [pool[i] for i in chosen], [mirror[i] for i in chosen],
                       used)
