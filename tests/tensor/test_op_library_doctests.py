"""The examples in the op library's module docstrings run and show what they say."""

import doctest
import importlib

import pytest

MODULES = ["nbgraph.tensor.creation", "nbgraph.tensor.shape_ops", "nbgraph.tensor.extra_ops",
           "nbgraph.tensor.advanced_indexing", "nbgraph.tensor.sorting",
           "nbgraph.tensor.op_args", "nbgraph.tensor.variable_methods"]


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0 and result.attempted > 0, (name, result)
