"""``import nbgraph`` stays light: NumPy, the tensor package and the C linker load on first use,
and every documented name and subpackage is still an attribute of ``nbgraph``."""

from fresh_python import run_python


def _run(code):
    return run_python(code).split()


def test_import_nbgraph_loads_neither_numpy_nor_tensor_nor_c():
    loaded = set(_run("import nbgraph, sys; print(' '.join(sys.modules))"))
    assert "numpy" not in loaded
    assert "nbgraph.tensor" not in loaded
    assert "nbgraph.linkers.c" not in loaded
    assert "nbgraph.testing" not in loaded


def test_subpackages_and_lazy_names_are_attributes():
    code = ("import nbgraph as ng\n"
            "x = ng.tensor.dvector('x')\n"
            "f = ng.function([x], x * 2.0, linker='py')\n"
            "print(float(f([1.5])[0]), ng.verify_grad.__module__, ng.testing.__name__,\n"
            "      'verify_grad' in dir(ng), ng.config is ng.config, type(ng.config).__name__)\n")
    out = _run(code)
    assert out[:5] == ["3.0", "nbgraph.testing", "nbgraph.testing", "True", "True"]
    assert out[5] != "module"


def test_an_unknown_attribute_still_raises():
    code = ("import nbgraph\n"
            "try:\n    nbgraph.no_such_name\nexcept AttributeError as e:\n    print('ok')\n")
    assert _run(code) == ["ok"]
