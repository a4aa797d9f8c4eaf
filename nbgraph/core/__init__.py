"""Graph primitives: Types, Variables, Apply nodes, Ops, FunctionGraph, rewriting, grad.

This package knows nothing about NumPy tensors, linkers or display.
"""

from nbgraph.core.features import Feature, Replacement
from nbgraph.core.fgraph import FunctionGraph, MissingInputError
from nbgraph.core.gradient import DisconnectedInputError, NullGradientError, grad, subgraph_grad
from nbgraph.core.gradient_types import (
    DisconnectedType, NullType, grad_not_implemented, grad_undefined,
)
from nbgraph.core.graph import (
    Apply,
    Constant,
    Scratchpad,
    Variable,
    ancestors,
    applys_between,
    clone,
    clone_get_equiv,
    clone_replace,
    equal_computations,
    graph_inputs,
    io_toposort,
    toposort,
    variables_between,
)
from nbgraph.core.op import DisconnectedGradient, NullGradient, Op, run_node
from nbgraph.core.rewriting import (
    EquilibriumRewriter,
    GraphRewriter,
    MergeRewriter,
    NodeRewriter,
    RewriteRegistry,
    SequentialRewriter,
    WalkingRewriter,
    node_rewriter,
)
from nbgraph.core.transfer import register_transfer, transfer
from nbgraph.core.c_interface import CDataType, CLinkerOp, CLinkerType, OutputRule
from nbgraph.core.type import (
    Generic,
    MethodNotDefined,
    NarrowingStep,
    NarrowingTrace,
    SingletonType,
    Type,
    generic,
)

__all__ = [
    "Apply", "CDataType", "CLinkerOp", "CLinkerType", "OutputRule", "Constant",
    "DisconnectedGradient",
    "DisconnectedInputError", "EquilibriumRewriter", "Feature", "FunctionGraph", "Generic",
    "GraphRewriter", "MergeRewriter", "MethodNotDefined", "MissingInputError", "NarrowingStep",
    "NarrowingTrace", "NodeRewriter", "NullGradient", "NullGradientError", "Op", "Replacement",
    "RewriteRegistry", "Scratchpad", "SequentialRewriter", "SingletonType", "Type", "Variable",
    "WalkingRewriter", "ancestors", "applys_between", "clone", "clone_get_equiv",
    "clone_replace", "equal_computations", "generic", "grad", "graph_inputs", "io_toposort",
    "node_rewriter", "register_transfer", "run_node", "toposort", "transfer",
    "variables_between", "subgraph_grad", "DisconnectedType", "NullType", "grad_undefined",
    "grad_not_implemented",
]
