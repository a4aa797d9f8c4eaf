"""C code of the tensor Types and Ops, for the C linker (:mod:`nbgraph.linkers.c`).

Each module here holds the C generation of one family of Ops and is bound
onto the Op classes by a short assignment at the end of the Op's module, so
the Ops' Python definitions stay readable and this code stays in one place:

* :mod:`~nbgraph.tensor.c_code.type` — TensorType's CLinkerType hooks;
* :mod:`~nbgraph.tensor.c_code.elemwise` — Elemwise loops (contiguous fast
  path, strided/broadcast general path), for any scalar op with C code,
  Composite included;
* :mod:`~nbgraph.tensor.c_code.reduction` — sum/prod/max/min over any axes,
  and a reusable generator for reductions with an elementwise prologue;
* :mod:`~nbgraph.tensor.c_code.basic` — Shape, ShapeI, SpecifyShape,
  DimShuffle, Reshape, Alloc and SumToShape.

Nothing here imports cffi or runs a compiler: importing it is cheap.
"""
