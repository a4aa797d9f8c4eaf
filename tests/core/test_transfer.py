"""nbgraph.core.transfer: register_transfer / transfer."""

import importlib

import pytest

from core_toys import double, neg
from nbgraph.core import register_transfer, transfer

# ``nbgraph.core.transfer`` is also the name of the function, so fetch the module itself
transfer_module = importlib.import_module("nbgraph.core.transfer")


@pytest.fixture
def registry():
    """The list of transfer functions, restored after the test."""
    saved = list(transfer_module.transfer_functions)
    yield transfer_module.transfer_functions
    transfer_module.transfer_functions[:] = saved


def test_cpu_is_built_in():
    x = double("x")
    assert transfer(x, "cpu") is x
    assert transfer(x, None) is x


def test_unknown_target(registry):
    with pytest.raises(ValueError, match="cannot transfer x to target 'gpu'.*_stay_on_cpu"):
        transfer(double("x"), "gpu")


def test_registered_function_is_used(registry):
    calls = []

    def to_device(var, target):
        calls.append((var, target))
        if target == "device":
            moved = neg(var)
            moved.tag.device = target
            return moved
        return None

    assert register_transfer(to_device) is to_device
    x = double("x")
    moved = transfer(x, "device")
    assert moved.tag.device == "device" and moved.owner.inputs == [x]
    assert transfer(x, "cpu") is x  # declined by to_device, handled by the built-in one
    assert calls == [(x, "device"), (x, "cpu")]


def test_newest_first_and_no_duplicates(registry):
    def first(var, target):
        return "first" if target == "t" else None

    def second(var, target):
        return "second" if target == "t" else None

    register_transfer(first)
    register_transfer(second)
    assert transfer(double(), "t") == "second"
    register_transfer(first)  # again: moves to the front, stays registered once
    assert registry.count(first) == 1
    assert transfer(double(), "t") == "first"


def test_needs_a_callable(registry):
    with pytest.raises(TypeError, match="needs a callable"):
        register_transfer("cpu")
