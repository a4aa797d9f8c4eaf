"""``elemwise_output_dtypes`` finds a scalar op's output dtypes without building a scalar
node when the op keeps ScalarOp's make_node: the same dtypes, or the same error, as the
node would give, for every scalar op of nbgraph.tensor.scalar and every dtype pair."""

import itertools

import pytest

from nbgraph.tensor import scalar as ps
from nbgraph.tensor.dtypes import ALL_DTYPES
from nbgraph.tensor.elemwise import _scalar_output_dtypes


def _ops():
    found = {}
    for name in dir(ps):
        op = getattr(ps, name)
        if isinstance(op, ps.ScalarOp) and type(op).make_node is ps.ScalarOp.make_node \
                and type(op).promote_inputs is ps.ScalarOp.promote_inputs:
            found.setdefault(str(op), op)
    return sorted(found.items())


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


def _by_node(op, dtypes):
    node = op.make_node(*[ps.get_scalar_type(d)() for d in dtypes])
    return [o.type.dtype for o in node.outputs]


@pytest.mark.parametrize(("name", "op"), _ops())
def test_same_dtypes_or_error_as_the_node(name, op):
    arities = [op.nin] if op.nin not in (-1, None) else [2, 3]
    for n in sorted({*arities, 1, 2}):
        combos = itertools.product(ALL_DTYPES, repeat=n) if n <= 2 else \
            [(d,) * n for d in ALL_DTYPES]
        for dtypes in combos:
            slow = _outcome(_by_node, op, dtypes)
            fast = _outcome(_scalar_output_dtypes, op, dtypes)
            assert fast == slow, (name, dtypes)
