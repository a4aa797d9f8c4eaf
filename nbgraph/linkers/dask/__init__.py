"""The Dask linker: the same graph, chunked, out of core or on a cluster.

``function(inputs, outputs, linker="dask")`` (or ``linker=DaskLinker(chunks=...,
compute=..., scheduler=..., progress=...)``) returns a :class:`DaskFunction`.
Each call lowers the rewritten graph (the fast pipeline without the in-place
stage, and with multi-output fused nodes split by the inputs their outputs
read) onto ``dask.array``, node by node, by each Op's declared chunk
semantics (:mod:`nbgraph.core.chunks`):

* elementwise groups (fused ``Composite`` nodes) run their compiled C kernel
  on each block through ``da.blockwise``;
* reductions and fused reductions run the kernel per block, keeping the
  reduced axes, and merge the partial results with the Op's ``combine``
  through ``da.reduction``;
* products go to ``da.dot``, views (transpose, reshape, indexing) to the
  dask array's own methods, joins to ``da.concatenate``; a constant fill is
  handed to the consuming kernel as a small value instead of becoming tasks;
* shape arithmetic runs on the driver at once; an Op with no chunked rule
  runs on its gathered inputs with a warning when they are small, and is
  refused (:class:`NoChunkedRule`, naming it) otherwise.

When the chunked arguments are split along their rows only (a tall design
matrix and its targets), a graph of elementwise work, products with small
operands and reductions over the rows runs as one task per row block
instead (:mod:`~nbgraph.linkers.dask.blocks`): the per-block part of the
graph is compiled as one function, called on each block (in cache-sized
tiles when it only produces partial results), and the partial results are
merged by a tree of tasks (``DaskLinker(row_blocks=False)`` turns it off).

Kernels are referenced by content hash (:mod:`~nbgraph.linkers.dask.kernels`):
workers load the compiled module from their own cache, or build the one
node they need once per process.  Numerics: elementwise results equal the C
linker's bit for bit, but for transcendental functions (``exp``, ``tanh``,
...): a block's edges move where the kernel's vector loop (glibc's libmvec)
hands over to its scalar one (libm), which may round a few ulps apart, and
the operations after them carry that difference (a sum that cancels
magnifies it in ulps of its result); a reduction along axes that are not split into
several blocks too; across blocks (and tiles), partial sums are added in a
different order (within a few ulps times the number of blocks).

:func:`local_cluster` starts a ``distributed.LocalCluster`` for nbgraph
(memory limit per worker, one C thread per worker process, start-up
warnings logged instead of printed into notebook cells).  Inside any
distributed worker, kernel outputs of 8 MB or more reuse the memory of released
results (:mod:`~nbgraph.linkers.dask.reuse`; ``NBGRAPH_DASK_BLOCK_POOL=0``
in the workers' environment turns it off).
"""

from nbgraph.linkers.dask.cluster import local_cluster
from nbgraph.linkers.dask.function import DaskFunction, DaskLinker, split_multi_output_nodes
from nbgraph.linkers.dask.kernels import ChunkKernel, kernel_stats
from nbgraph.linkers.dask.lowering import NoChunkedRule

__all__ = ["DaskLinker", "DaskFunction", "ChunkKernel", "NoChunkedRule", "kernel_stats",
           "local_cluster", "split_multi_output_nodes", "make_function"]


def make_function(fgraph, inputs, outputs, single, shared_inputs, updates, linker,
                  name=None, input_specs=None) -> DaskFunction:
    """The :class:`DaskFunction` for a rewritten graph (called by ``function()``)."""
    return DaskFunction(fgraph, inputs, outputs, single, shared_inputs, updates, linker,
                        name=name, input_specs=input_specs)
