"""nbgraph.compat: Theano's and PyTensor's names resolve to nbgraph's objects;
names with no equivalent say what to use; install() makes the old imports work."""

import sys

import numpy as np
import pytest

import nbgraph
import nbgraph.compat
import nbgraph.compat.pytensor as pytensor
import nbgraph.compat.pytensor.tensor as pt
import nbgraph.compat.theano as theano
import nbgraph.compat.theano.tensor as T
import nbgraph.tensor as nt
from nbgraph.compat import NoEquivalentError
from nbgraph.config import config


def test_top_level_names_are_nbgraphs():
    assert theano.function is nbgraph.function
    assert theano.shared is nt.shared
    assert theano.grad is nbgraph.grad
    assert theano.In.__module__ == "nbgraph.linkers.io"
    assert theano.printing.pp is nbgraph.display.pp
    assert theano.compile.mode.get_mode("FAST_COMPILE").linker == "py"
    assert theano.tensor is T and pytensor.tensor is pt


def test_tensor_names():
    assert T.dmatrix is nt.dmatrix and T.exp is nt.exp and T.grad is nbgraph.grad
    assert T.nnet.sigmoid is nt.sigmoid
    from nbgraph.tensor.conv import conv2d
    from nbgraph.tensor.pool import max_pool_2d, pool_2d
    assert T.nnet.conv2d is conv2d and T.nnet.conv.conv2d is conv2d
    from nbgraph.compat.theano.tensor.signal import downsample, pool
    assert pool.pool_2d is pool_2d and downsample.max_pool_2d is max_pool_2d
    assert T.matrix_inverse is nbgraph.tensor.linalg.inv
    assert pt.linalg.solve is nbgraph.tensor.linalg.solve


def test_unavailable_names_say_what_to_use_even_through_from_imports():
    with pytest.raises(NoEquivalentError, match="theano.sparse .*dense arrays"):
        _ = theano.sparse
    with pytest.raises(NoEquivalentError, match="conv3d.*conv2d"):
        from nbgraph.compat.theano.tensor.nnet import conv3d  # noqa: F401
    with pytest.raises(AttributeError, match="theano.tensor.no_such_name is not a name"):
        _ = T.no_such_name
    # the gradient helpers exist now (issue 21, items 13-14)
    assert theano.gradient.zero_grad is nbgraph.gradient.zero_grad
    assert theano.gradient.grad_undefined is nbgraph.gradient.grad_undefined


def test_config_float_x_is_nbgraphs():
    assert theano.config.floatX == config.floatX
    with config.change(floatX="float32"):
        assert theano.config.floatX == "float32"
        assert T.matrix("m").dtype == "float32"
    old = config.floatX
    try:
        theano.config.floatX = "float32"
        assert config.floatX == "float32"
    finally:
        config.floatX = old
    assert theano.config.device == "cpu"
    theano.config.compute_test_value = "raise"  # a debugging aid: accepted, no effect
    with pytest.raises(ValueError, match="device='cuda'"):
        theano.config.device = "cuda"
    with pytest.raises(AttributeError, match="nbgraph.config"):
        _ = theano.config.gpuarray__preallocate


def test_random_streams_take_theano_signatures():
    from nbgraph.compat.theano.sandbox.rng_mrg import MRG_RandomStreams
    from nbgraph.compat.theano.tensor.shared_randomstreams import RandomStreams

    for cls in (RandomStreams, MRG_RandomStreams):
        srng = cls(seed=234)
        u = srng.uniform((2, 2))
        n = srng.normal((2, 2), avg=5.0, std=0.001)
        b = srng.binomial(size=(3,), p=1.0, dtype="float32")
        f = theano.function([], [u, n, b])
        vu, vn, vb = f()
        assert vu.shape == (2, 2) and np.all((vu >= 0) & (vu < 1))
        assert np.all(np.abs(vn - 5.0) < 0.01)
        assert vb.dtype == np.float32 and np.array_equal(vb, np.ones(3))
        assert not np.array_equal(f()[0], vu)  # the stream advances
        ri = srng.random_integers((50,), low=1, high=2)
        assert set(theano.function([], ri)().tolist()) <= {1, 2}


def test_printing():
    x = T.dscalar("x")
    assert theano.printing.pp(x ** 2) == "(x ** 2.0)"
    text = theano.printing.debugprint(x * 2, file="str")
    assert text.startswith("Elemwise{mul} [id A]")
    view = theano.printing.pydotprint(theano.function([x], x * 2))
    assert "Elemwise{mul}" in view.text()
    assert "image/svg+xml" in view._repr_mimebundle_() or "dot" in \
        view._repr_mimebundle_()["text/plain"]


def test_install_makes_import_theano_work_and_uninstall_undoes_it():
    nbgraph.compat.install()
    try:
        import theano as th
        import theano.tensor as TT
        from theano.tensor.signal import pool as p
        from pytensor import tensor as ptt

        assert th is theano and TT is T and ptt is pt
        assert p.pool_2d is nbgraph.tensor.pool.pool_2d
        assert th.__spec__.name == "nbgraph.compat.theano"
    finally:
        nbgraph.compat.uninstall()
    assert "theano" not in sys.modules


def test_pytensor_spellings():
    x = pt.tensor("x", shape=(None, 3))
    assert x.type == nt.TensorType(config.floatX, (None, 3))
    y = pt.dvector("y")
    f = pytensor.function([y], pt.exp(y).sum())
    assert f([0.0, 0.0]) == 2.0
    assert pytensor.dprint(y * 2, file="str").startswith("Elemwise{mul}")
    assert pytensor.pp(y * 2) == "(y * 2.0)"


def test_pytensor_graph_functions():
    from nbgraph.tensor.vectorize import graph_replace, vectorize_graph

    assert pytensor.graph_replace is graph_replace
    assert pytensor.vectorize_graph is vectorize_graph
