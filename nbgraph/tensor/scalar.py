"""The scalar world Elemwise kernels and fused Composite loops are built on.

This is the public module; the code lives in

* :mod:`nbgraph.tensor.scalar_type` — :class:`ScalarType`, scalar Variables
  and Constants, :func:`as_scalar` and NumPy-2 (NEP 50) weak promotion;
* :mod:`nbgraph.tensor.scalar_op` — the :class:`ScalarOp` base class and the
  built-in ops' shared machinery;
* :mod:`nbgraph.tensor.scalar_ops` — arithmetic ops;
* :mod:`nbgraph.tensor.scalar_logic` — comparisons, bitwise logic, switch,
  identity and cast;
* :mod:`nbgraph.tensor.scalar_math` — exp, log, ..., sigmoid, softplus;
* :mod:`nbgraph.tensor.scalar_float` — rounding, isnan/isinf/isfinite, clip,
  inverse trigonometric and hyperbolic functions, log2, log10, exp2, ...;
* :mod:`nbgraph.tensor.scalar_binary` — arctan2, hypot, logaddexp,
  copysign, nextafter and the integer shifts;
* :mod:`nbgraph.tensor.scalar_special` — erf, erfc, erfcx, erfinv, gammaln,
  digamma;
* :mod:`nbgraph.tensor.scalar_composite` — :class:`Composite`.

Every op matches NumPy: same output dtype (float16 included), same values
in Python and in C.
complex64/complex128 go wherever NumPy defines the op (:mod:`scalar_complex`).

>>> x = float32("x")
>>> y = exp(x) * 2.0 + 1
>>> y.type, str(y.owner.op)
(ScalarType(float32), 'add')
"""

from typing import Any

from nbgraph.tensor.scalar_composite import Composite
from nbgraph.tensor.scalar_complex import Angle, Conj, Imag, Real, angle, conj, imag, real
from nbgraph.tensor.scalar_math import (
    Cos,
    Exp,
    Expm1,
    Log,
    Log1p,
    Sigmoid,
    Sin,
    Softplus,
    Sqrt,
    Tan,
    Tanh,
    UnaryMath,
    cos,
    exp,
    expm1,
    log,
    log1p,
    sigmoid,
    sin,
    softplus,
    sqrt,
    tan,
    tanh,
)
from nbgraph.tensor.scalar_logic import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NEQ,
    And,
    Bitwise,
    Cast,
    Comparison,
    Identity,
    Invert,
    Or,
    Switch,
    Xor,
    and_,
    cast,
    eq,
    ge,
    gt,
    identity,
    invert,
    le,
    lt,
    neq,
    or_,
    switch,
    xor,
)
from nbgraph.tensor.scalar_op import (
    BinaryScalarOp,
    BuiltinScalarOp,
    ScalarOp,
    UnaryScalarOp,
    VariadicScalarOp,
    c_cast,
    c_fail,
    with_out,
)
from nbgraph.tensor.scalar_ops import (
    Abs,
    Add,
    IntDiv,
    Maximum,
    Minimum,
    Mod,
    Mul,
    Neg,
    Pow,
    Sign,
    Sqr,
    Sub,
    TrueDiv,
    abs_,
    add,
    int_div,
    maximum,
    minimum,
    mod,
    mul,
    neg,
    pow,
    sign,
    sqr,
    sub,
    true_div,
)
from nbgraph.tensor.scalar_type import (
    ScalarConstant,
    ScalarType,
    ScalarVariable,
    all_dtypes,
    as_scalar,
    bool_,
    bool_dtypes,
    check_weak_fits,
    discrete_dtypes,
    float32,
    float64,
    float16,
    complex64,
    complex128,
    half_dtypes,
    complex_dtypes,
    extended_dtypes,
    float_dtypes,
    get_scalar_type,
    int8,
    int16,
    int32,
    int64,
    int_dtypes,
    promote_weak,
    strong_constant,
    uint8,
    uint16,
    uint32,
    uint64,
    uint_dtypes,
    upcast,
    weak_promotion_dtype,
)


# -- names loaded on first use ------------------------------------------------------
# the rounding, float-classification, inverse-trigonometric and hyperbolic ops, the
# binary ufuncs and the special functions: only ``nbgraph.tensor.ufuncs`` builds on
# them, so ``import nbgraph.tensor`` leaves their modules (~1 ms) until one of these
# names is read.  The table must list exactly each module's ``__all__``
# (tests/tensor/test_lazy_namespace.py checks it).
_LAZY_MODULES = {
    "scalar_float": (
        "Floor Ceil Trunc Round RoundHalfAwayFromZero IsNan IsInf IsFinite Clip "
        "Reciprocal ArcSin ArcCos ArcTan Sinh Cosh ArcSinh ArcCosh ArcTanh Log2 Log10 "
        "Exp2 Deg2Rad Rad2Deg floor ceil trunc round_half_to_even "
        "round_half_away_from_zero isnan isinf isfinite clip reciprocal arcsin arccos "
        "arctan sinh cosh arcsinh arccosh arctanh log2 log10 exp2 deg2rad rad2deg"),
    "scalar_binary": (
        "ArcTan2 Hypot LogAddExp CopySign NextAfter LeftShift RightShift arctan2 hypot "
        "logaddexp copysign nextafter left_shift right_shift"),
    "scalar_special": (
        "Erf Erfc Erfcx ErfInv GammaLn Digamma erf erfc erfcx erfinv gammaln digamma"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    import importlib

    value = getattr(importlib.import_module("nbgraph.tensor." + module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    # types, variables, promotion
    "ScalarType", "ScalarVariable", "ScalarConstant", "as_scalar", "get_scalar_type",
    "promote_weak", "weak_promotion_dtype", "check_weak_fits", "strong_constant", "upcast",
    "all_dtypes", "bool_dtypes", "int_dtypes", "uint_dtypes", "float_dtypes",
    "discrete_dtypes",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "float16", "complex64", "complex128",
    "half_dtypes", "complex_dtypes", "extended_dtypes",
    "Real", "Imag", "Conj", "Angle", "real", "imag", "conj", "angle",
    # op machinery
    "ScalarOp", "BuiltinScalarOp", "BinaryScalarOp", "VariadicScalarOp", "UnaryScalarOp",
    "UnaryMath", "Comparison", "Bitwise", "Composite", "c_cast", "c_fail", "with_out",
    # op classes
    "Add", "Sub", "Mul", "TrueDiv", "IntDiv", "Mod", "Pow", "Maximum", "Minimum", "Neg",
    "Abs", "Sign", "Sqr", "LT", "LE", "GT", "GE", "EQ", "NEQ", "And", "Or", "Xor",
    "Invert", "Switch", "Identity", "Cast", "Exp", "Log", "Log1p", "Expm1", "Sqrt", "Sin",
    "Cos", "Tan", "Tanh", "Sigmoid", "Softplus",
    # op instances
    "add", "sub", "mul", "true_div", "int_div", "mod", "pow", "maximum", "minimum", "neg",
    "abs_", "sign", "sqr", "lt", "le", "gt", "ge", "eq", "neq", "and_", "or_", "xor",
    "invert", "switch", "identity", "cast", "exp", "log", "log1p", "expm1", "sqrt", "sin",
    "cos", "tan", "tanh", "sigmoid", "softplus",
]
__all__ += list(_LAZY)
