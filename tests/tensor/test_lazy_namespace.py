"""``import nbgraph.tensor`` loads the tensor types, constructors and common ops; the other
modules (loops, random streams, nnet, indexing, creation, ...) load when one of their names is
first read.  Every public name still resolves, to the same object as before."""

import importlib
import sys

import pytest

import nbgraph.tensor as nt

from fresh_python import run_python

# modules a fresh ``import nbgraph.tensor`` must not load
LAZY = ["ifelse", "random", "ufuncs", "advanced_indexing", "creation", "extra_ops", "shape_ops",
        "sorting", "complex_ops", "scalar_tensor", "nnet", "complex_constructors", "plurals",
        "gradient_ops", "scan", "rewriting"]

# modules whose whole ``__all__`` the namespace re-exports (``from m import *`` before)
STARRED = ["ufuncs", "advanced_indexing", "creation", "extra_ops", "shape_ops", "sorting",
           "complex_constructors", "plurals"]


def _run(code):
    return run_python(code).split()


def test_every_public_name_resolves():
    for name in nt.__all__:
        assert getattr(nt, name) is not None, name
    assert len(set(nt.__all__)) == len(nt.__all__)
    assert set(nt.__all__) <= set(dir(nt))


@pytest.mark.parametrize("module", sorted(nt._LAZY_MODULES))
def test_lazy_table_gives_the_modules_objects(module):
    mod = importlib.import_module("nbgraph.tensor." + module)
    names = nt._LAZY_MODULES[module].split()
    if module in STARRED:
        assert set(names) == set(mod.__all__)
    for name in names:
        assert getattr(nt, name) is getattr(mod, name), name


def test_star_import_and_submodules():
    namespace = {}
    exec("from nbgraph.tensor import *", namespace)
    assert namespace["softmax"] is nt.nnet.softmax
    assert namespace["floor"] is nt.ufuncs.floor
    assert callable(namespace["scan"]) and namespace["scan"] is nt.scan
    assert nt.extra_ops.argmax is nt.argmax
    with pytest.raises(AttributeError, match="no_such_name"):
        nt.no_such_name  # noqa: B018


def test_ifelse_stays_the_function():
    module = importlib.import_module("nbgraph.tensor.ifelse")
    assert nt.ifelse is module.ifelse is sys.modules["nbgraph.tensor.ifelse"].ifelse


def test_fresh_import_leaves_the_lazy_modules_unloaded():
    code = ("import sys, nbgraph.tensor as nt\n"
            "print(' '.join(m for m in %r if 'nbgraph.tensor.' + m in sys.modules) or '-')\n"
            % (LAZY,))
    assert _run(code) == ["-"]


def test_fresh_process_first_uses():
    code = ("import sys, types, nbgraph.tensor as nt\n"
            "x = nt.dmatrix('x')\n"
            "print(nt.softmax(x).owner.op.__class__.__module__)\n"
            "print('nbgraph.tensor.nnet' in sys.modules, 'nbgraph.tensor.scan' in sys.modules)\n"
            "import nbgraph.tensor.ifelse\n"
            "print(isinstance(nt.ifelse, types.FunctionType), callable(nt.scan))\n"
            "from nbgraph.tensor import argmax, dvectors, IfElse, zero_grad\n"
            "print(argmax.__module__, IfElse.__module__)\n"
            "print(sorted(set(nt.__all__) - set(dir(nt))) or '-')\n")
    assert _run(code) == ["nbgraph.tensor.nnet", "True", "False", "True", "True",
                          "nbgraph.tensor.extra_ops", "nbgraph.tensor.ifelse", "-"]


def test_the_pipeline_registers_the_ifelse_rewrites_without_ifelse_imported():
    code = ("import sys, nbgraph as ng, nbgraph.tensor as nt\n"
            "c, x = nt.dscalar('c'), nt.dmatrix('x')\n"
            "f = ng.function([c, x], nt.switch(c > 0, nt.exp(x).sum(), x.max()), linker='py')\n"
            "print(sorted({type(n.op).__name__ for n in f.fgraph.apply_nodes}))\n")
    assert "'IfElse'," in _run(code)


def test_type_checkers_see_the_same_names():
    """The ``if TYPE_CHECKING:`` imports of nbgraph/tensor/__init__.py give what the
    lazy table gives: the starred modules whole, the others name by name."""
    import ast

    tree = ast.parse(open(nt.__file__, encoding="utf-8").read())
    (block,) = [node for node in tree.body if isinstance(node, ast.If)
                and getattr(node.test, "id", None) == "_TYPE_CHECKING"]
    starred, named, modules = set(), {}, set()
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        module = node.module.rsplit(".", 1)[1]
        if node.module == "nbgraph.tensor":
            modules.update(a.name for a in node.names)
        elif node.names[0].name == "*":
            starred.add(module)
        else:
            named[module] = {a.name for a in node.names}
    assert starred == set(STARRED)
    assert modules == set(nt._LAZY_SUBMODULES)
    for module, names in nt._LAZY_MODULES.items():
        if module not in STARRED:
            assert named.pop(module) == set(names.split()), module
    assert named == {}


def test_scalar_lazy_table_gives_the_modules_names():
    """``nbgraph.tensor.scalar`` loads its float, binary and special ops on first use:
    its table lists each module's whole ``__all__``, and every name resolves to the
    module's object (attribute, ``from ... import``, ``nt.scalar``, ``__all__``, dir)."""
    from nbgraph.tensor import scalar as ps

    for module, names in ps._LAZY_MODULES.items():
        mod = importlib.import_module("nbgraph.tensor." + module)
        assert names.split() == list(mod.__all__), module
        for name in names.split():
            assert getattr(ps, name) is getattr(mod, name) is getattr(nt.scalar, name), name
            assert name in ps.__all__ and name in dir(ps)
    assert len(set(ps.__all__)) == len(ps.__all__)
    with pytest.raises(AttributeError, match="no_such_op"):
        ps.no_such_op  # noqa: B018


def test_fresh_import_leaves_the_scalar_lazy_modules_unloaded():
    code = ("import sys, nbgraph.tensor as nt\n"
            "lazy = ['scalar_float', 'scalar_binary', 'scalar_special']\n"
            "print(' '.join(m for m in lazy if 'nbgraph.tensor.' + m in sys.modules) or '-')\n"
            "from nbgraph.tensor.scalar import hypot, erf\n"
            "print(nt.scalar.floor.__class__.__module__, hypot.__class__.__module__)\n")
    assert _run(code) == ["-", "nbgraph.tensor.scalar_float", "nbgraph.tensor.scalar_binary"]
