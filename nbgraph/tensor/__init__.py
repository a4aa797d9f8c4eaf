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
from nbgraph.tensor.ifelse import IfElse, ifelse
from nbgraph.tensor import random  # noqa: F401  (nt.random.RandomStream)
from nbgraph.tensor.ufuncs import *  # noqa: F403  (floor, erf, clip, arctan2, ...)
from nbgraph.tensor import ufuncs as _ufuncs
from nbgraph.tensor import advanced_indexing as _advanced_indexing
from nbgraph.tensor import creation as _creation
from nbgraph.tensor import extra_ops as _extra_ops
from nbgraph.tensor import shape_ops as _shape_ops
from nbgraph.tensor import sorting as _sorting
from nbgraph.tensor.advanced_indexing import *  # noqa: F403  (take, take_along_axis, ...)
from nbgraph.tensor.creation import *  # noqa: F403  (arange, eye, tri, linspace, ...)
from nbgraph.tensor.extra_ops import *  # noqa: F403  (argmax, any, var, cumsum, norm, ...)
from nbgraph.tensor.shape_ops import *  # noqa: F403  (flatten, squeeze, tile, split, ...)
from nbgraph.tensor.sorting import *  # noqa: F403  (sort, argsort)
from nbgraph.tensor.complex_ops import real, imag, conj, conjugate, angle
from nbgraph.tensor.scalar_tensor import (
    ScalarFromTensor, ScalarReduce, TensorFromScalar, reduce, scalar_from_tensor,
    tensor_from_scalar,
)
from nbgraph.tensor.nnet import (  # nt.softmax, ...; also nt.nnet.*
    binary_crossentropy, categorical_crossentropy, elu, gelu, log_softmax, logsumexp, one_hot,
    relu, softmax, softmax_crossentropy, softsign,
)
from nbgraph.tensor import nnet
from nbgraph.tensor.subtensor import IncSubtensor, Subtensor, inc_subtensor, set_subtensor
from nbgraph.tensor.type import TensorType
from nbgraph.tensor.variable import (
    SharedVariable, TensorConstant, TensorVariable, as_tensor_variable, constant, shared,
    tensor,
)
from nbgraph.tensor.constructors import *  # noqa: F403  (dvector, fmatrix, ...)
from nbgraph.tensor.complex_constructors import *  # noqa: F403  (cvector, zmatrix, ...)
from nbgraph.tensor.plurals import *  # noqa: F403  (dvectors, fmatrices, ...)
from nbgraph.tensor import complex_constructors as _complex_constructors
from nbgraph.tensor import constructors as _constructors
from nbgraph.tensor import plurals as _plurals
import importlib as _importlib

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
    "ifelse", "IfElse",
] + _advanced_indexing.__all__ + _creation.__all__ + _extra_ops.__all__ + _shape_ops.__all__ + \
    _sorting.__all__ + [n for n in (
    *_constructors.NAMES, *_complex_constructors.NAMES, *_plurals.NAMES) if n != "scalar"]

from nbgraph.tensor import scan  # noqa: E402  (loops; callable: nt.scan(fn, ...))
from nbgraph.tensor.gradient_ops import (  # noqa: E402
    consider_constant, disconnected_grad, grad_clip, grad_scale, zero_grad,
)

__all__ += ["scan", "consider_constant", "disconnected_grad", "grad_clip", "grad_scale",
            "zero_grad"]
__all__ += _ufuncs.__all__
__all__ += ["nnet", "softmax", "log_softmax", "logsumexp", "relu", "elu", "gelu", "softsign",
            "binary_crossentropy", "categorical_crossentropy", "one_hot", "softmax_crossentropy"]
__all__ += ["real", "imag", "conj", "conjugate", "angle"]
__all__ += ["reduce", "ScalarReduce", "TensorFromScalar", "ScalarFromTensor", "tensor_from_scalar",
            "scalar_from_tensor"]
