"""C code of the tensor Types and Ops, for the C linker (:mod:`nbgraph.linkers.c`).

Each module here holds the C side of one family of Ops as mixin classes
deriving from :class:`~nbgraph.core.c_interface.CLinkerOp` (or
``CLinkerType``); an Op names its mixin in its class line, ``class
Elemwise(ElemwiseC, Op)``, so the Ops' Python definitions stay readable and
this code stays in one place:

* :mod:`~nbgraph.tensor.c_code.type` — ``TensorTypeC``, TensorType's hooks;
* :mod:`~nbgraph.tensor.c_code.elemwise` — Elemwise loops (contiguous fast
  path, strided/broadcast general path), for any scalar op with C code,
  Composite included;
* :mod:`~nbgraph.tensor.c_code.reduction` — sum/prod/max/min over any axes,
  and a reusable generator for reductions with an elementwise prologue;
* :mod:`~nbgraph.tensor.c_code.basic` — Shape, ShapeI, SpecifyShape,
  DimShuffle, Reshape, Alloc and SumToShape;
* :mod:`~nbgraph.tensor.c_code.parallel` and
  :mod:`~nbgraph.tensor.c_code.parallel_reduce` — how big elementwise loops
  and reductions are split across the thread pool of
  :mod:`nbgraph.linkers.c.threads` (reductions bit-identical for any thread
  count);
* :mod:`~nbgraph.tensor.c_code.dot` — Dot: matrix-vector loops split across
  threads, a blocked matrix product (its fixed C in ``csrc/dot_*.h``);
* :mod:`~nbgraph.tensor.c_code.conv` — the 2-d convolution and its two
  gradients, over the matrix product's micro-kernel (``csrc/conv.h``);
* :mod:`~nbgraph.tensor.c_code.pool` — 2-d pooling and its gradient, one
  pass per plane (``csrc/pool.h``).

Nothing here imports cffi or runs a compiler: importing it is cheap.
"""
