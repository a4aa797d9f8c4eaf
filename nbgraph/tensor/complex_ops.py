"""Complex numbers on tensors: ``real``, ``imag``, ``conj``, ``angle`` (NumPy's functions).

``complex64``/``complex128`` tensors work with every elementwise op NumPy
defines on them (``+ - * / **``, ``exp``, ``abs``...), with reductions and
``dot``; an op NumPy does not define on complex numbers (``floor``,
``sigmoid``) refuses them with a TypeError when the graph is built.

>>> from nbgraph.tensor.variable import tensor
>>> z = tensor("complex64", (None,), "z")
>>> real(z).type, conj(z).type
(TensorType(float32, (None,)), TensorType(complex64, (None,)))
"""

from nbgraph.tensor import scalar as ps
from nbgraph.tensor.elemwise import Elemwise

__all__ = ["real", "imag", "conj", "conjugate", "angle"]

#: The real part (a real tensor is its own real part).
real = Elemwise(ps.real)
#: The imaginary part (zeros for a real tensor).
imag = Elemwise(ps.imag)
#: The complex conjugate (a real tensor is its own conjugate).
conj = Elemwise(ps.conj)
conjugate = conj
#: The argument in (-pi, pi]; NumPy's ``angle`` (in radians).
angle = Elemwise(ps.angle)
