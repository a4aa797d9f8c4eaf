"""nbgraph.core.evaluation: the hook behind Variable.eval."""

import pytest

from core_toys import add, double
from nbgraph.core import evaluation


@pytest.fixture
def evaluator():
    saved = evaluation._evaluator[0]
    yield
    evaluation._evaluator[0] = saved


def test_eval_goes_through_the_registered_evaluator(evaluator):
    calls = []

    def fake(variable, inputs_to_values):
        calls.append((variable, inputs_to_values))
        return 42.0

    evaluation.set_evaluator(fake)
    x = double("x")
    out = add(x, 1.0)
    assert out.eval({x: 1.0}) == 42.0
    assert out.eval() == 42.0
    assert calls == [(out, {x: 1.0}), (out, None)]
