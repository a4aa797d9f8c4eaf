"""The same cases through every way of calling a compiled function.

Paths: the Python linker; the C linker through the C call path (a single
kernel is the Function's ``__call__``; several kernels are cell thunks), with
and without ``trust_input``; the C-VM and debug linkers; and the C linker
with the C call path switched off (the cffi thunks).  Each case (good
inputs, broadcasting, aliased arguments, a previous result kept by the
caller, and each kind of bad argument) must give the Python linker's results,
or an exception of the same class.
"""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt

pytestmark = pytest.mark.needs_cc

GRAPHS = {
    "one kernel": lambda x, y: x * 0.3 + y,
    "several kernels": lambda x, y: [nt.exp(x) * y, (x - y).sum(axis=0)],
}

A = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
B = np.linspace(0.5, 2.0, 4).reshape(1, 4)

GOOD = {
    "same shapes": (A, A[::-1].copy()),
    "broadcast": (A, np.broadcast_to(B, (3, 4)).copy()),
    "strided": (A[:, ::2].copy(), np.asfortranarray(A[:, 1::2])),
    "aliased": (A, A),
}
BAD = {
    "shapes that do not broadcast": (A, np.ones((3, 5))),
    "wrong ndim": (A, np.ones(4)),
    "a string": (A, "nope"),
}


def _paths():
    return ["py", "c", "c-trusted", "cvm", "debug", "c-cffi"]


def _build(path, graph, monkeypatch):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    outs = GRAPHS[graph](x, y)
    linker = {"c-trusted": "c", "c-cffi": "c"}.get(path, path)
    if path == "c-cffi":
        from nbgraph.linkers.c import fastcall

        monkeypatch.setattr(fastcall, "ENABLED", False)
        monkeypatch.setitem(fastcall._state, "module", None)
    f = ng.function([x, y], outs, linker=linker, trust_input=(path == "c-trusted"))
    getattr(f.program, "wait_compiled", lambda: None)()
    if path != "py":
        assert "c" in f.program.kinds, (path, f.program.kinds)
    return f


def _value(out):
    return [np.array(o) for o in out] if isinstance(out, list) else np.array(out)


def _same(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("path", _paths())
def test_every_path_gives_the_python_linkers_results(path, graph, monkeypatch):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    py = ng.function([x, y], GRAPHS[graph](x, y), linker="py")
    f = _build(path, graph, monkeypatch)
    for _name, (a, b) in GOOD.items():
        want = _value(py(a, b))
        first = f(a, b)
        kept = _value(first)
        _same(_value(first), want)
        f(b.copy(), a.copy())  # a later call must not overwrite a result the caller holds
        _same(_value(first), kept)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("path", [p for p in _paths() if p != "c-trusted"])
def test_every_path_refuses_bad_arguments_like_the_python_linker(path, graph, monkeypatch):
    x, y = nt.dmatrix("x"), nt.dmatrix("y")
    py = ng.function([x, y], GRAPHS[graph](x, y), linker="py")
    f = _build(path, graph, monkeypatch)
    for name, (a, b) in BAD.items():
        with pytest.raises(Exception) as want:
            py(a, b)
        with pytest.raises(Exception) as got:
            f(a, b)
        assert type(got.value) is type(want.value), (name, got.value, want.value)
    _same(_value(f(A, A)), _value(py(A, A)))  # and still works afterwards


@pytest.mark.parametrize("path", _paths())
def test_the_call_path_in_use_shows_its_source(path, monkeypatch):
    f = _build(path, "one kernel", monkeypatch)
    source = f.call_source
    assert "def fast(" in source and "def call(_nbg_self" in source
    compile(source, "<call_source>", "exec")  # valid Python as shown
    if path == "c-trusted":
        assert "DIRECT(" in source  # the kernel called with the arguments, no cells
    elif path in ("py", "cvm", "debug", "c-cffi"):
        assert "RUN()" in source
    assert f.call_source is source  # kept on the object, not rendered again


def test_a_setting_change_renders_the_call_again():
    x = nt.dvector("x")
    f = ng.function([x], x * 2.0, linker="py")
    before = f.call_source
    f.trust_input = True
    assert f.call_source != before and "F0(" in before and "F0(" not in f.call_source
    assert np.array_equal(f(np.ones(3)), np.full(3, 2.0))
