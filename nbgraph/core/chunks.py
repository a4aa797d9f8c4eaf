"""Chunk semantics: what an Op declares so that a chunked linker can run it.

A linker that splits arrays into blocks (the Dask linker,
:mod:`nbgraph.linkers.dask`) never asks which Op it runs.  It asks the Op,
through :meth:`nbgraph.core.op.Op.chunk_semantics`, how the node's outputs
relate to its inputs' blocks, and gets one of these declarations (or None:
the node has no chunked rule).

Kinds
=====

``"elementwise"``
    every output element depends only on the input elements at the same
    (broadcast) position; all inputs have the output's ndim, size-1 static
    dimensions broadcast.  The node can run per block.  ``subset(node,
    indices)`` (optional) returns an equivalent node computing only the
    outputs at ``indices`` (a chunked linker splits multi-output nodes whose
    outputs read different inputs).
``"reduction"``
    the one output is a reduction over ``axes`` of an elementwise value of
    the inputs (which have the same ndim): running the node on a block gives
    the block's partial result (those axes dropped), and
    ``combine(partials, axis, keepdims)`` reduces partials (NumPy arrays of
    the output dtype) into the result; ``identity`` is the value of an
    empty reduction (None: an empty reduction is an error).
``"view"``
    ``apply(x, *others)`` computes the output from the first input with
    methods and indexing that NumPy and Dask arrays share (``transpose``,
    ``reshape``, ``[...]``); the other inputs are small values (indices,
    shape entries) given as NumPy values.
``"concatenate"``
    the output joins the inputs along ``axis``.
``"dot"``
    the matrix or vector product of the two inputs (1-d or 2-d).
``"fill"``
    the output is the first input (a small value) broadcast to the shape the
    other inputs give (each a 0-d integer).
``"metadata"``
    the outputs depend only on the inputs' shapes and dtypes (``perform`` may
    run on any array of the right shape and dtype, e.g. a zero-stride one).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChunkSemantics", "CHUNK_KINDS"]

#: The kinds a chunked linker knows how to lower.
CHUNK_KINDS = ("elementwise", "reduction", "view", "concatenate", "dot", "fill", "metadata")


@dataclass(frozen=True)
class ChunkSemantics:
    """How a node's outputs relate to its inputs' blocks (see the module docstring)."""

    kind: str
    axes: tuple[int, ...] = ()
    axis: int = 0
    combine: Callable[..., Any] | None = None
    identity: Any = None
    apply: Callable[..., Any] | None = None
    subset: Callable[..., Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in CHUNK_KINDS:
            raise ValueError("ChunkSemantics kind must be one of %s, got %r" % (
                CHUNK_KINDS, self.kind))
        if self.kind == "reduction" and self.combine is None:
            raise ValueError("a 'reduction' ChunkSemantics needs combine(partials, axis, "
                             "keepdims)")
        if self.kind == "view" and self.apply is None:
            raise ValueError("a 'view' ChunkSemantics needs apply(x, *others)")

    @classmethod
    def elementwise(cls, subset: Callable[..., Any] | None = None) -> "ChunkSemantics":
        """Outputs computed position by position (``subset(node, indices)``: see above)."""
        return cls("elementwise", subset=subset)

    @classmethod
    def reduction(cls, axes: Iterable[int], combine: Callable[..., Any],
                  identity: Any = None) -> "ChunkSemantics":
        """A reduction over ``axes`` whose partial results ``combine`` merges."""
        return cls("reduction", axes=tuple(axes), combine=combine, identity=identity)

    @classmethod
    def view(cls, apply: Callable[..., Any]) -> "ChunkSemantics":
        """The output is ``apply(x, *others)`` with array methods Dask shares."""
        return cls("view", apply=apply)

    @classmethod
    def concatenate(cls, axis: int) -> "ChunkSemantics":
        """The inputs joined along ``axis``."""
        return cls("concatenate", axis=int(axis))
