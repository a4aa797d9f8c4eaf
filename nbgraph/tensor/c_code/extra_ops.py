"""C for the op library's reductions: ``all``/``any`` (BoolReduce).

``any`` is the reduction loop's bool "sum" (``||``, identity false) of
``x != 0``, ``all`` its bool "prod" (``&&``, identity true): empty reductions
give NumPy's answers, NaN counts as true, and large loops split across the
thread pool like every reduction.
"""

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.tensor.c_code.elemwise import LoopInput, literal_of
from nbgraph.tensor.c_code.reduction import c_op_name, reduction_loop
from nbgraph.tensor.dtypes import C_TYPES as _C_TYPES

__all__ = ["BoolReduceC"]


class BoolReduceC(CLinkerOp):
    """The C side of BoolReduce (``kind`` "all" or "any" over ``axis``)."""

    def has_c_code(self, node):
        return node.inputs[0].type.ndim <= 32

    def c_code_cache_version(self):
        return (2,)

    def c_output_rule(self, node):
        """The input's shape less the reduced axes."""
        return OutputRule.drop_axes(self.axis)

    def c_code(self, node, name, inputs, outputs, sub):
        (x,) = node.inputs
        literal = literal_of(x)
        inp = LoopInput(inputs[0], _C_TYPES[x.type.dtype], literal,
                        literal is not None or all(s == 1 for s in x.type.shape))

        def element(in_exprs, target):
            return "%s = (uint8_t)((%s) != 0);" % (target, in_exprs[0])

        kind = "sum" if self.kind == "any" else "prod"
        return reduction_loop(x.type.ndim, self.axis, [inp], outputs[0], kind, "bool", element,
                              c_op_name(self), sub)
