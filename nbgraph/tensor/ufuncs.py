"""The rest of NumPy's elementwise functions, on tensors.

Each is an :class:`~nbgraph.tensor.elemwise.Elemwise` of a scalar op from
:mod:`nbgraph.tensor.scalar_float`, :mod:`~nbgraph.tensor.scalar_binary` or
:mod:`~nbgraph.tensor.scalar_special`: NumPy's broadcasting and dtypes,
fused with their neighbours into one C loop.

>>> from nbgraph.tensor.constructors import fvector, ivector
>>> floor(fvector("x")).type, isnan(fvector("x")).dtype, erf(ivector("i")).dtype
(TensorType(float32, (None,)), 'bool', 'float64')
"""

from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import Elemwise
from nbgraph.tensor.math import and_, invert, or_, xor
from nbgraph.tensor.variable import as_tensor_variable

__all__ = [
    "floor", "ceil", "trunc", "round", "sign", "sgn", "clip", "isnan", "isinf", "isfinite",
    "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi", "log2", "log10", "exp2",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
    "reciprocal", "square", "hypot", "logaddexp", "copysign", "nextafter", "deg2rad",
    "rad2deg", "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not",
]

floor = Elemwise(ps.floor)
ceil = Elemwise(ps.ceil)
trunc = Elemwise(ps.trunc)
sign = Elemwise(ps.sign)
sgn = sign
isnan = Elemwise(ps.isnan)
isinf = Elemwise(ps.isinf)
isfinite = Elemwise(ps.isfinite)
erf = Elemwise(ps.erf)
erfc = Elemwise(ps.erfc)
erfcx = Elemwise(ps.erfcx)
erfinv = Elemwise(ps.erfinv)
gammaln = Elemwise(ps.gammaln)
digamma = Elemwise(ps.digamma)
psi = digamma
log2 = Elemwise(ps.log2)
log10 = Elemwise(ps.log10)
exp2 = Elemwise(ps.exp2)
arcsin = Elemwise(ps.arcsin)
arccos = Elemwise(ps.arccos)
arctan = Elemwise(ps.arctan)
arctan2 = Elemwise(ps.arctan2)
sinh = Elemwise(ps.sinh)
cosh = Elemwise(ps.cosh)
arcsinh = Elemwise(ps.arcsinh)
arccosh = Elemwise(ps.arccosh)
arctanh = Elemwise(ps.arctanh)
reciprocal = Elemwise(ps.reciprocal)
square = Elemwise(ps.sqr)
hypot = Elemwise(ps.hypot)
logaddexp = Elemwise(ps.logaddexp)
copysign = Elemwise(ps.copysign)
nextafter = Elemwise(ps.nextafter)
deg2rad = Elemwise(ps.deg2rad)
rad2deg = Elemwise(ps.rad2deg)
left_shift = Elemwise(ps.left_shift)
right_shift = Elemwise(ps.right_shift)
bitwise_and = and_
bitwise_or = or_
bitwise_xor = xor
bitwise_not = invert
_clip = Elemwise(ps.clip)
_round_even = Elemwise(ps.round_half_to_even)
_round_away = Elemwise(ps.round_half_away_from_zero)


def clip(x, a_min, a_max):
    """``x`` limited to ``[a_min, a_max]`` elementwise, as ``np.clip`` (NaN propagates)."""
    return _clip(x, a_min, a_max)


def round(x, mode="half_to_even"):  # noqa: A001  (the NumPy and Theano name)
    """``x`` rounded to integral values; ``mode`` "half_to_even" (NumPy's) or
    "half_away_from_zero" (C's ``round``).  Integers are returned unchanged."""
    x = as_tensor_variable(x)
    if mode == "half_to_even":
        return _round_even(x)
    if mode == "half_away_from_zero":
        return _round_away(x)
    raise ValueError("round: mode must be 'half_to_even' or 'half_away_from_zero', got %r"
                     % (mode,))
