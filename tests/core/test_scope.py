"""Scopes (nbgraph.core.scope): the path of the open ``with scope(...)`` blocks is recorded on
every node built inside, survives cloning and rewriting, and grad labels what it returns."""

import threading

import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.core.scope import current_scope, scope, scope_of


def test_nested_scopes_make_a_path_and_close_on_exit():
    x = nt.dvector("x")
    with scope("layer1"):
        with scope("affine"):
            h = x * 2.0
            assert current_scope() == ("layer1", "affine")
        y = nt.tanh(h)
    z = y + 1.0
    assert scope_of(h) == ("layer1", "affine")
    assert scope_of(h.owner) == ("layer1", "affine")
    assert scope_of(y) == ("layer1",)
    assert scope_of(z) is None and scope_of(x) is None
    assert current_scope() == ()


def test_a_slash_opens_several_scopes_and_an_empty_name_is_refused():
    x = nt.dscalar("x")
    with nbgraph.scope("a/b"):
        y = x + 1.0
    assert scope_of(y) == ("a", "b")
    for bad in ("", "/", None, 3):
        with pytest.raises(ValueError, match="scope name"):
            with scope(bad):
                pass


def test_the_scope_closes_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with scope("broken"):
            raise RuntimeError("boom")
    assert current_scope() == ()


def test_each_thread_has_its_own_open_scopes():
    seen = []

    def other():
        seen.append(current_scope())

    with scope("main"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [()]


def test_compiled_and_rewritten_nodes_keep_their_scope():
    x = nt.dvector("x")
    with scope("layer"):
        y = nt.tanh(x * 2.0 + 1.0)  # fused into one Composite by the rewrites
    f = nbgraph.function([x], [y, x.dot(x)])
    scopes = {str(node.op): scope_of(node) for node in f.fgraph.apply_nodes}
    assert [s for op, s in scopes.items() if "tanh" in op] == [("layer",)]
    assert [s for op, s in scopes.items() if "Dot" in op] == [None]  # built outside


def test_grad_labels_its_results_after_what_they_differentiate():
    x = nt.dvector("x")
    W0 = nt.dmatrix("W0")
    b = nt.dvector("b")
    cost = nt.tanh(W0.dot(x) + b).sum()
    cost.name = "cost"
    gW, gb = nbgraph.grad(cost, [W0, b])
    assert gW.tag.grad_of == "grad(cost, W0)"
    assert gb.tag.grad_of == "grad(cost, b)"
    assert gW.name is None  # names are the user's
    single = nbgraph.grad(cost, x)
    assert single.tag.grad_of == "grad(cost, x)"
