"""The NumPy tensor world built on nbgraph.core: types, variables, ops, grad.

>>> import nbgraph.tensor as nt
>>> x = nt.dmatrix("x")
>>> (x.T.dot(x) + 1).type
TensorType(float64, (None, None))
"""

from nbgraph.core.graph import Apply, Constant, Variable
from nbgraph.tensor.basic import (
    Alloc, Dot, Join, Reshape, Shape, ShapeI, SpecifyShape, alloc, concatenate, dot, join,
    ones, ones_like, reshape, shape, shape_i, specify_shape, stack, zeros, zeros_like,
)
from nbgraph.tensor.elemwise import DimShuffle, Elemwise
from nbgraph.tensor.math import (
    abs, add, and_, cast, cos, eq, exp, expm1, ge, gt, int_div, invert, le, log, log1p, lt,
    max, maximum, mean, min, minimum, mod, mul, neg, neq, or_, outer, pow, prod, sigmoid, sin,
    softplus, sqr, sqrt, sub, sum, switch, tan, tanh, true_div, where, xor,
)
from nbgraph.tensor.reduction import Reduce
from nbgraph.tensor.subtensor import IncSubtensor, Subtensor, inc_subtensor, set_subtensor
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import (
    SharedVariable, TensorConstant, TensorVariable, as_tensor_variable, constant, shared,
    tensor,
)
from nbgraph.tensor.constructors import *  # noqa: F403  (dvector, fmatrix, ...)
from nbgraph.tensor import constructors as _constructors
import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
import sys as _sys
import types as _types

_scalar_module = _importlib.import_module("nbgraph.tensor.scalar")


class _ScalarEntry:
    """``nt.scalar`` is two things, as in Theano: called, it makes a 0-d tensor of
    config.floatX (``nt.scalar("x")``); its attributes are those of the module
    :mod:`nbgraph.tensor.scalar` (``nt.scalar.ScalarOp``)."""

    def __init__(self, constructor, module):
        self._constructor = constructor
        self._module = module
        self.__doc__ = constructor.__doc__

    def __call__(self, name=None, dtype=None, shape=()):
        return self._constructor(name, dtype=dtype, shape=shape)

    def __getattr__(self, attr):
        return getattr(self._module, attr)

    def __dir__(self):
        return dir(self._module)

    def __repr__(self):
        return "<nbgraph.tensor.scalar: call it for a 0-d tensor; attributes from %s>" % (
            self._module.__name__)


scalar = _ScalarEntry(_constructors.scalar, _scalar_module)


# -- names loaded on first use ------------------------------------------------------
# ``import nbgraph.tensor`` loads the tensor types, the constructors and the common
# ops above; the modules below (loops, random streams, nnet, indexing, creation,
# shape and sorting ops, the extra ufuncs, ...) are imported the first time one of
# their names is read (``nt.softmax``, ``from nbgraph.tensor import scan``).  The
# table must list exactly what each module gives this namespace:
# tests/tensor/test_lazy_namespace.py compares it with the modules' ``__all__``.
_LAZY_MODULES = {
    "ifelse": "IfElse ifelse",
    "ufuncs": (
        "arccos arccosh arcsin arcsinh arctan arctan2 arctanh bitwise_and bitwise_not "
        "bitwise_or bitwise_xor ceil clip copysign cosh deg2rad digamma erf erfc erfcx erfinv "
        "exp2 floor gammaln hypot isfinite isinf isnan left_shift log10 log2 logaddexp "
        "nextafter psi rad2deg reciprocal right_shift round sgn sign sinh square trunc"),
    "advanced_indexing": (
        "AdvancedIncSubtensor AdvancedScatterAdd AdvancedSubtensor advanced_getitem "
        "advanced_inc_along_axis is_advanced_index take take_along_axis"),
    "creation": (
        "ARange ARangeLength AllocDiag ExtractDiag Eye Linspace arange diag eye full "
        "full_like identity_like linspace tri tril triu"),
    "extra_ops": (
        "ArgReduce BoolReduce CumOp CumprodGrad MaxAndArgmax all any argmax argmin cumprod "
        "cumsum diff max_and_argmax norm std var"),
    "shape_ops": (
        "Repeat Roll Split broadcast_to expand_dims flatten moveaxis repeat roll split "
        "squeeze swapaxes tile transpose"),
    "sorting": "SortOp argsort sort",
    "complex_ops": "real imag conj conjugate angle",
    "scalar_tensor": (
        "reduce ScalarReduce TensorFromScalar ScalarFromTensor tensor_from_scalar "
        "scalar_from_tensor"),
    "nnet": (
        "softmax log_softmax logsumexp relu elu gelu softsign binary_crossentropy "
        "categorical_crossentropy one_hot softmax_crossentropy"),
    "gradient_ops": "consider_constant disconnected_grad grad_clip grad_scale zero_grad",
    "complex_constructors": (
        "cscalar zscalar cvector zvector cmatrix zmatrix crow zrow ccol zcol ctensor3 "
        "ztensor3 ctensor4 ztensor4"),
    "plurals": (
        "scalars vectors matrices rows cols tensor3s tensor4s bscalars bvectors bmatrices "
        "brows bcols btensor3s btensor4s wscalars wvectors wmatrices wrows wcols wtensor3s "
        "wtensor4s iscalars ivectors imatrices irows icols itensor3s itensor4s lscalars "
        "lvectors lmatrices lrows lcols ltensor3s ltensor4s fscalars fvectors fmatrices "
        "frows fcols ftensor3s ftensor4s dscalars dvectors dmatrices drows dcols dtensor3s "
        "dtensor4s cscalars cvectors cmatrices crows ccols ctensor3s ctensor4s zscalars "
        "zvectors zmatrices zrows zcols ztensor3s ztensor4s Several several"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names.split()}

if _TYPE_CHECKING:  # what type checkers and editors read: the same names, imported
    # ("x as x": re-exported, as __all__ is computed)
    from nbgraph.tensor import nnet as nnet, random as random, scan as scan
    from nbgraph.tensor.advanced_indexing import *  # noqa: F403
    from nbgraph.tensor.complex_constructors import *  # noqa: F403
    from nbgraph.tensor.complex_ops import (
        angle as angle, conj as conj, conjugate as conjugate, imag as imag, real as real,
    )
    from nbgraph.tensor.creation import *  # noqa: F403
    from nbgraph.tensor.extra_ops import *  # noqa: F403
    from nbgraph.tensor.gradient_ops import (
        consider_constant as consider_constant, disconnected_grad as disconnected_grad,
        grad_clip as grad_clip, grad_scale as grad_scale, zero_grad as zero_grad,
    )
    from nbgraph.tensor.ifelse import IfElse as IfElse, ifelse as ifelse
    from nbgraph.tensor.nnet import (
        binary_crossentropy as binary_crossentropy,
        categorical_crossentropy as categorical_crossentropy, elu as elu, gelu as gelu,
        log_softmax as log_softmax, logsumexp as logsumexp, one_hot as one_hot, relu as relu,
        softmax as softmax, softmax_crossentropy as softmax_crossentropy, softsign as softsign,
    )
    from nbgraph.tensor.plurals import *  # noqa: F403
    from nbgraph.tensor.scalar_tensor import (
        ScalarFromTensor as ScalarFromTensor, ScalarReduce as ScalarReduce,
        TensorFromScalar as TensorFromScalar, reduce as reduce,
        scalar_from_tensor as scalar_from_tensor, tensor_from_scalar as tensor_from_scalar,
    )
    from nbgraph.tensor.shape_ops import *  # noqa: F403
    from nbgraph.tensor.sorting import *  # noqa: F403
    from nbgraph.tensor.ufuncs import *  # noqa: F403

# subpackages and modules that are public attributes (``nt.scan(...)``, ``nt.nnet.softmax``,
# ``nt.random.RandomStream``); any other submodule is imported on first access as well
_LAZY_SUBMODULES = ("scan", "nnet", "random")


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(_importlib.import_module("nbgraph.tensor." + module), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        from importlib.util import find_spec

        if find_spec("nbgraph.tensor." + name) is not None:
            return _importlib.import_module("nbgraph.tensor." + name)
    raise AttributeError("module 'nbgraph.tensor' has no attribute %r" % (name,))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_SUBMODULES))


class _TensorPackage(_types.ModuleType):
    """This package's module type.  Importing a submodule binds its name in the
    package; ``nbgraph.tensor.ifelse`` is also a function's name, and the function
    stays the package's ``ifelse`` whenever the module is first imported."""

    def __setattr__(self, name: str, value) -> None:
        if name == "ifelse" and isinstance(value, _types.ModuleType):
            value = value.ifelse
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _TensorPackage


__all__ = [
    "Apply", "Constant", "Variable", "scalar", "TensorType", "TensorVariable",
    "TensorConstant", "SharedVariable", "as_tensor_variable", "constant", "shared", "tensor",
    "Elemwise", "DimShuffle", "Reduce", "SpecifyShape", "Alloc", "Shape", "ShapeI",
    "Reshape", "Dot", "Join", "Subtensor", "IncSubtensor",
    "specify_shape", "alloc", "zeros", "ones", "zeros_like", "ones_like", "shape", "shape_i",
    "reshape", "dot", "join", "concatenate", "stack", "inc_subtensor", "set_subtensor",
    "add", "sub", "mul", "true_div", "int_div", "mod", "pow", "neg", "abs", "exp", "log",
    "log1p", "expm1", "sqrt", "sqr", "sin", "cos", "tan", "tanh", "sigmoid", "softplus",
    "maximum", "minimum", "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor",
    "invert", "switch", "where", "cast", "sum", "prod", "mean", "max", "min", "outer",
] + [n for n in _constructors.NAMES if n != "scalar"] + [
    n for n in (*_LAZY_SUBMODULES, *_LAZY) if n not in ("random", "Several", "several")]
