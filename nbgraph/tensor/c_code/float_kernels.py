"""What the float-only kernels of the neural-net Ops share (the softmax family in
:mod:`nbgraph.tensor.c_code.nnet`, pooling in :mod:`nbgraph.tensor.c_code.pool`):
C for float32 or float64 operands that all have one dtype, at most 32 dimensions
each, with math.h and stdlib.h (their kernels call libm and malloc)."""

from collections.abc import Sequence
from typing import Any

from nbgraph.core.c_interface import CLinkerOp

__all__ = ["FLOAT_SUFFIX", "FloatKernelC"]

#: Float dtype -> the suffix of its kernels' C names.
FLOAT_SUFFIX = {"float32": "f32", "float64": "f64"}


class FloatKernelC(CLinkerOp):
    """A CLinkerOp mixin: C when :meth:`float_operands` share one float dtype (float32 or
    float64) and have at most 32 dimensions; ``c_version`` is the kernels' cache version."""

    c_version: tuple[int, ...] = (1,)

    def float_operands(self, node: Any) -> Sequence[Any]:
        """The variables that must share the float dtype (default: every operand)."""
        return list(node.inputs) + list(node.outputs)

    def has_c_code(self, node: Any) -> bool:
        """True when the float operands share float32 or float64, up to 32 dimensions."""
        operands = self.float_operands(node)
        dtypes = {v.type.dtype for v in operands}
        return len(dtypes) == 1 and dtypes <= set(FLOAT_SUFFIX) and \
            all(v.type.ndim <= 32 for v in operands)

    def c_code_cache_version(self) -> tuple[int, ...]:
        return self.c_version

    def c_headers(self) -> list[str]:
        return ["math.h", "stdlib.h"]
