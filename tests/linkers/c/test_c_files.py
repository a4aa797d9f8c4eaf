"""The fixed C shipped as files (csrc/): every file is package data, every
placeholder is filled (``string.Template``: a missing key fails), and each
header compiles on its own (after the declarations it documents it needs)."""

import os
import string
import subprocess

import pytest

from nbgraph.core.c_interface import c_source, c_template
from nbgraph.linkers.c import codegen
from nbgraph.linkers.c.cache import get_cache
from nbgraph.linkers.c.compiler import ABI_VERSION, probe
from nbgraph.linkers.c.threads import runtime_source

LINKER = "nbgraph.linkers.c"
TENSOR = "nbgraph.tensor.c_code"


def _compile(tmp_path, text, name, extra=()):
    info = probe(get_cache())
    src = tmp_path / (name + ".c")
    src.write_text(text)
    proc = subprocess.run(info.argv + info.flags + list(extra) + ["-fsyntax-only", str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_c_file_is_declared_package_data():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    with open(os.path.join(root, "pyproject.toml")) as f:
        text = f.read()
    for package in (LINKER, TENSOR):
        directory = os.path.join(root, *package.split("."), "csrc")
        assert os.listdir(directory)
        for name in os.listdir(directory):
            assert name.endswith((".c", ".h", ".txt")), name
            assert c_source(package, "csrc/" + name)
            assert "csrc/*%s" % os.path.splitext(name)[1] in text.split('"%s" = [' % package)[1]
        assert '"%s" = [' % package in text


def test_a_missing_placeholder_fails():
    with pytest.raises(KeyError, match="rt_version"):
        c_template(LINKER, "csrc/module_head.h", abi=1, errlen=512, math="")
    assert "$" not in codegen.prelude(None)


def test_the_common_header_compiles_alone(tmp_path):
    _compile(tmp_path, c_source(LINKER, "csrc/common.h"), "common",
             ["-DNBG_ERRLEN=512", "-DNBG_RT_VERSION=1"])


#: What the call path's parts say they need before them (_fastcall.c's head).
_CALL_PATH_HEAD = """#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <dlfcn.h>
#include <stdint.h>
#define NBG_COLD
"""


@pytest.mark.parametrize("name", ["fastcall_kernel.h", "fastcall_open.h"])
def test_the_call_path_s_parts_compile_alone(tmp_path, name):
    import sysconfig

    import numpy

    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("Python's C headers are not installed")
    _compile(tmp_path, _CALL_PATH_HEAD + c_source(LINKER, "csrc/" + name), name[:-2],
             ["-I" + include, "-I" + numpy.get_include()])


def test_the_call_path_is_its_file_with_both_parts_filled_in():
    from nbgraph.linkers.c import fastcall

    text = fastcall._source().decode()
    assert "${" not in text
    for name in ("fastcall_kernel.h", "fastcall_open.h"):
        assert c_source(LINKER, "csrc/" + name) in text
        assert "linkers/c/csrc/" + name in fastcall.KEY_FILES  # a change rebuilds it


@pytest.mark.parametrize("standalone", [False, True])
def test_the_module_head_prelude_and_table_compile_together(tmp_path, standalone):
    tail = c_template(LINKER, "csrc/module_tail.c", table="0", frees="0", abi=ABI_VERSION,
                      nkernels=0, nfreefns=0, attach_parts="")
    _compile(tmp_path, codegen.prelude(None, standalone) + tail, "module_%d" % standalone)


def test_a_linked_module_holds_no_helper_and_declares_no_stdio():
    text = codegen.prelude(None)
    assert "nbg_iter_init(nbg_iter" not in text and "#include <stdio.h>" not in text
    assert "nbg_iter_init(nbg_iter" in codegen.prelude(None, standalone=True)


def test_the_thread_runtime_compiles_alone_as_one_unit_that_links(tmp_path):
    from nbgraph.linkers.c.compiler import build_library
    from nbgraph.linkers.c.threads import RUNTIME_FLAGS

    text = runtime_source()
    assert string.Template.pattern.search(text) is None
    parts = codegen.source_parts(text)
    assert len(parts) == 1
    _compile(tmp_path, parts[0], "runtime", ["-pthread"])
    out = tmp_path / "runtime.so"
    build_library(probe(get_cache()), text, str(tmp_path / "runtime.c"), str(out),
                  ["-Wl,--no-undefined"] + RUNTIME_FLAGS)  # every helper is in one unit
    assert out.exists()


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
@pytest.mark.parametrize("matrix", [False, True])
def test_each_dot_header_compiles_after_the_prelude(tmp_path, dtype, matrix):
    from nbgraph.tensor.c_code import dot

    suffix, ctype, kind = dot._COMPUTE[dtype]
    text = (codegen.prelude(None) + c_source(TENSOR, "csrc/dot_common.h")
            + dot._core(suffix, ctype, kind, matrix) + dot._pack(dtype, suffix, ctype))
    _compile(tmp_path, text, "dot_%s_%d" % (dtype, matrix))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("blas", [True, False])
def test_the_float_matrix_product_support_compiles_alone(tmp_path, monkeypatch, dtype, blas):
    # dot_mm.h, dot_skinny.h and dot_blas.h (with and without the BLAS), warnings as errors
    import nbgraph.tensor as nt
    from nbgraph.tensor.c_code import dot

    monkeypatch.setattr(dot, "C_BLAS", blas)
    x, y = nt.matrix(dtype=dtype), nt.matrix(dtype=dtype)
    node = nt.dot(x, y).owner
    text = codegen.prelude(None) + node.op.c_support_code(node)
    _compile(tmp_path, text, "dot_float_%s_%d" % (dtype, blas),
             ["-Wall", "-Werror", "-Wno-unused-function"])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("ndim", [1, 2])
def test_dot_support_names_nothing_of_math_h(dtype, ndim):
    # a variable named like a libm function (j0, y1, gamma) made every module
    # with a Dot, and its support object, parse <math.h> (~43M compiler
    # instructions each; codegen.math_used reads the whole text)
    import nbgraph.tensor as nt

    x, y = nt.matrix(dtype=dtype), nt.tensor(dtype=dtype, shape=(None,) * ndim)
    node = nt.dot(x, y).owner
    assert codegen.math_used(node.op.c_support_code(node)) == frozenset()


@pytest.mark.parametrize("name", ["conv.h", "pool.h", "softmax.h", "argreduce.h", "fastexp.h"])
def test_op_headers_use_only_math_the_module_head_declares(name):
    # a local variable named like a libm function (j0, y0, nan) or a word in a
    # comment made every module holding the Op parse all of <math.h>
    text = c_source("nbgraph.tensor.c_code", "csrc/" + name)
    assert codegen.math_block(codegen.math_used(text)) != codegen.MATH_H
