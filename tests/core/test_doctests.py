"""The examples in nbgraph.core's docstrings run and give the output they show."""

import doctest
import importlib
import inspect

import pytest

CORE_MODULES = [
    "nbgraph.core",
    "nbgraph.core.type",
    "nbgraph.core.graph",
    "nbgraph.core.op",
    "nbgraph.core.props",
    "nbgraph.core.fgraph",
    "nbgraph.core.rewriting",
    "nbgraph.core.gradient",
    "nbgraph.core.gradient_types",
    "nbgraph.core.transfer",
    "nbgraph.core.evaluation",
]


@pytest.mark.parametrize("name", CORE_MODULES)
def test_module_doctests(name):
    # import_module, not attribute access: nbgraph.core.transfer is also a function's name
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, "%d of %d examples failed in %s" % (
        result.failed, result.attempted, name)
    if ">>>" in inspect.getsource(module):
        assert result.attempted > 0, "%s shows examples but doctest found none" % name


def test_the_modules_with_examples_are_checked():
    with_examples = [n for n in CORE_MODULES
                     if ">>>" in inspect.getsource(importlib.import_module(n))]
    assert {"nbgraph.core.type", "nbgraph.core.graph", "nbgraph.core.op",
            "nbgraph.core.rewriting", "nbgraph.core.transfer"} <= set(with_examples)
