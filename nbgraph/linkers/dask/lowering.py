"""Lowering a rewritten graph onto ``dask.array``, node by node.

Each node is lowered by the rule of its Op's declared chunk semantics
(:mod:`nbgraph.core.chunks`); this module never asks which Op it runs.

Values during lowering are dask arrays (the chunked data), NumPy arrays
(constants, shared values, shape arithmetic: small, computed on the driver
at once), or :class:`LazyFull` (a small value broadcast to a shape, handed
to the consuming kernel instead of becoming tasks of its own).

======================  ====================================================
kind                    lowered as
======================  ====================================================
``"elementwise"``       ``da.blockwise`` calling the node's C kernel per block
``"reduction"``         the kernel per block (keeping the reduced axes as 1),
                        then ``da.reduction`` merging partials with the Op's
                        ``combine``
``"dot"``               ``da.dot``
``"concatenate"``       ``da.concatenate``
``"view"``              the Op's ``apply`` on the dask array (array methods)
``"fill"``              a :class:`LazyFull`
``"metadata"``          ``perform`` on a zero-stride array of the right shape
none                    ``perform`` on the driver when no input is chunked;
                        on gathered inputs (with a warning) when they are
                        small; otherwise :class:`NoChunkedRule`
======================  ====================================================
"""

import operator
import warnings

import numpy as np

from nbgraph.core.op import run_node

__all__ = ["LazyFull", "NoChunkedRule", "Lowering", "GATHER_LIMIT_BYTES", "is_dask",
           "already_reduced"]

#: Inputs of a node without a chunked rule are gathered onto the driver (with
#: a warning) up to this many bytes in all; beyond, the node is refused.
GATHER_LIMIT_BYTES = 64 << 20

#: NumPy values (shared variables, constants) up to this size stay one block.
SMALL_BYTES = 16 << 20


class NoChunkedRule(NotImplementedError):
    """A node's Op declares no chunk semantics and its inputs are too big to gather."""


class LazyFull:
    """``value`` (a small NumPy or dask array, padded to ``len(shape)`` dimensions)
    broadcast to ``shape``: materialised only when a consumer cannot broadcast it."""

    def __init__(self, value, shape, dtype):
        self.value = value
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)


def _da():
    import dask.array as da

    return da


def is_dask(value) -> bool:
    """True for a dask collection (an array or anything with a task graph)."""
    return hasattr(value, "__dask_graph__") and not isinstance(value, type)


class Lowering:
    """Lowers the nodes of one call.  ``chunks``: how NumPy values that must become
    dask arrays are chunked; ``kernels``: ``{graph node: ChunkKernel}``;
    ``salt``: a token making this call's task names its own; ``gather``: the
    callable that computes dask values (the function's scheduler)."""

    def __init__(self, kernels, chunks, salt, gather):
        self.kernels = kernels
        self.chunks = chunks
        self.salt = salt
        self.gather = gather
        self.gathered = []  # nodes run on gathered values (reported by the Function)

    # -- helpers ----------------------------------------------------------
    def name(self, node, position, tag=""):
        from dask.base import tokenize

        return "nbgraph_%s%s-%s" % (type(node.op).__name__.lower(), tag,
                                    tokenize(self.salt, position, tag))

    def as_dask(self, value, dtype=None):
        """``value`` as a dask array (NumPy values chunked, LazyFull materialised)."""
        da = _da()
        if isinstance(value, LazyFull):
            v = value.value if is_dask(value.value) else np.asarray(value.value)
            chunks = da.core.normalize_chunks(self.chunks, value.shape, dtype=value.dtype) \
                if value.ndim else ()
            out = da.broadcast_to(v, value.shape, chunks=chunks)
            return out.astype(value.dtype, copy=False)
        if is_dask(value):
            return value
        arr = np.asarray(value, dtype=dtype)
        if arr.nbytes <= SMALL_BYTES:  # one block; dask rechunks it to its partner's
            return da.from_array(arr, chunks=arr.shape, name=False)
        from nbgraph.linkers.dask.function import chunks_for

        return da.from_array(arr, chunks=chunks_for(self.chunks, arr.shape), name=False)

    def as_numpy(self, value):
        if isinstance(value, LazyFull):
            return np.broadcast_to(np.asarray(value.value), value.shape).astype(
                value.dtype, copy=False)
        return value

    # -- the node ---------------------------------------------------------
    def lower(self, node, position, values):
        """The output values of ``node`` from its input ``values``."""
        sem = node.op.chunk_semantics(node)
        kind = None if sem is None else sem.kind
        chunked = [is_dask(v) or (isinstance(v, LazyFull) and is_dask(v.value))
                   for v in values]
        if kind == "metadata":
            return self.metadata(node, values)
        if not any(chunked) and kind != "fill":
            return self.on_driver(node, [self.as_numpy(v) for v in values])
        if kind is None:
            return self.gathered_rule(node, values)
        return getattr(self, "rule_" + kind)(node, position, values, sem)

    def on_driver(self, node, values):
        """Run ``node``'s ``perform`` on NumPy values (small ones: constants, shapes)."""
        return run_node(node, values)

    def metadata(self, node, values):
        dummies = []
        for v in values:
            if is_dask(v) or isinstance(v, LazyFull):
                dummies.append(np.broadcast_to(np.empty((), dtype=v.dtype), v.shape))
            else:
                dummies.append(v)
        return run_node(node, dummies, check=False)

    def gathered_rule(self, node, values):
        nbytes = sum(int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
                     for v in values if is_dask(v) or isinstance(v, LazyFull))
        if nbytes > GATHER_LIMIT_BYTES:
            raise NoChunkedRule(
                "linker='dask' cannot run %s (Op %s) on chunks: its Op declares no chunk "
                "semantics (Op.chunk_semantics), and its chunked inputs hold %.1f MB, more "
                "than the %d MB it would gather onto the driver" % (
                    node.op, type(node.op).__name__, nbytes / 1e6, GATHER_LIMIT_BYTES >> 20))
        warnings.warn("linker='dask': %s (Op %s) has no chunked rule; it runs on its "
                      "inputs gathered onto the driver (%.1f MB)" % (
                          node.op, type(node.op).__name__, nbytes / 1e6), RuntimeWarning,
                      stacklevel=2)
        self.gathered.append(node)
        dask_values = [v for v in values if is_dask(v)]
        computed = iter(self.gather(dask_values)) if dask_values else iter(())
        concrete = [next(computed) if is_dask(v) else self.as_numpy(v) for v in values]
        return run_node(node, concrete)

    # -- rules ------------------------------------------------------------
    def _block_args(self, node, values, ndim):
        """blockwise ``(array, index)`` pairs for the kernel's inputs, and whether
        they cover the output's shape."""
        ind = tuple(range(ndim))
        args, shapes = [], []
        for var, v in zip(node.inputs, values, strict=True):
            if _kept(var):
                continue  # a constant compiled into the kernel
            if isinstance(v, LazyFull):
                v = v.value if is_dask(v.value) else np.asarray(v.value, dtype=v.dtype)
                v = v.reshape((1,) * (ndim - v.ndim) + tuple(v.shape))
            if is_dask(v):
                args += [v, ind]
            else:
                v = np.asarray(v, dtype=var.type.numpy_dtype)
                if all(s == 1 for s in v.shape):
                    args += [v, None]
                else:
                    args += [self.as_dask(v), ind]
            shapes.append(tuple(v.shape))
        return args, shapes

    def _fill_missing(self, node, values, ndim):
        """Materialise LazyFulls when the other inputs do not give the full shape."""
        full = [v.shape for v in values if hasattr(v, "shape")]
        target = np.broadcast_shapes(*full) if full else ()
        out = []
        for v in values:
            if isinstance(v, LazyFull):
                others = [np.shape(w) for w in values if w is not v and not
                          isinstance(w, LazyFull)]
                padded = (1,) * (ndim - np.ndim(v.value)) + tuple(np.shape(v.value))
                have = np.broadcast_shapes(padded, *others) if others else padded
                if have != tuple(target):
                    v = self.as_dask(v)
            out.append(v)
        return out

    def rule_elementwise(self, node, position, values, sem):
        da = _da()
        outs = node.outputs
        ndim = outs[0].ndim
        values = self._fill_missing(node, values, ndim)
        args, _ = self._block_args(node, values, ndim)
        kernel = self.kernels[node]
        ind = tuple(range(ndim))
        if len(outs) == 1:
            dtype = outs[0].type.numpy_dtype
            return [da.blockwise(kernel, ind, *args, dtype=dtype,
                                 meta=np.empty((0,) * ndim, dtype),
                                 name=self.name(node, position))]
        # one task per block computes every output (a tuple); each output takes its item
        both = da.blockwise(kernel, ind, *args, dtype=outs[0].type.numpy_dtype,
                            meta=np.empty((0,) * ndim, outs[0].type.numpy_dtype),
                            name=self.name(node, position, "_all"))
        results = []
        for i, out in enumerate(outs):
            dtype = out.type.numpy_dtype
            results.append(da.blockwise(operator.getitem, ind, both, ind, i, None, dtype=dtype,
                                        meta=np.empty((0,) * ndim, dtype),
                                        name=self.name(node, position, "_%d" % i)))
        return results

    def rule_reduction(self, node, position, values, sem):
        da = _da()
        out = node.outputs[0]
        ndim = max(v.ndim for v in node.inputs)
        axes = tuple(sem.axes)
        values = self._fill_missing(node, values, ndim)
        args, _ = self._block_args(node, values, ndim)
        dtype = out.type.numpy_dtype
        partials = da.blockwise(self.kernels[node].reducing(axes), tuple(range(ndim)), *args,
                                dtype=dtype, meta=np.empty((0,) * ndim, dtype),
                                adjust_chunks={a: 1 for a in axes},
                                name=self.name(node, position, "_part"))
        if not axes:
            return [partials]
        result = da.reduction(partials, already_reduced, sem.combine, combine=sem.combine,
                              axis=axes, keepdims=False, dtype=dtype,
                              meta=np.empty((0,) * (ndim - len(axes)), dtype),
                              name=self.name(node, position, "_merge"))
        return [result]

    def rule_dot(self, node, position, values, sem):
        da = _da()
        a, b = (self.as_dask(v) for v in values)
        out = da.dot(a, b)
        return [out.astype(node.outputs[0].type.numpy_dtype, copy=False)]

    def rule_concatenate(self, node, position, values, sem):
        da = _da()
        dtype = node.outputs[0].type.numpy_dtype
        parts = [self.as_dask(v).astype(dtype, copy=False) for v in values]
        return [da.concatenate(parts, axis=sem.axis)]

    def rule_view(self, node, position, values, sem):
        first = self.as_dask(values[0])
        rest = [v if is_dask(v) else self.as_numpy(v) for v in values[1:]]
        out = sem.apply(first, *rest)
        _check_static(node.outputs[0], out)
        return [out]

    def rule_fill(self, node, position, values, sem):
        value, *shape = values
        shape = tuple(int(np.asarray(s)) for s in shape)
        dtype = node.outputs[0].type.numpy_dtype
        if is_dask(value):
            v = value
        else:
            v = np.asarray(self.as_numpy(value), dtype=dtype)
        if v.ndim < len(shape):
            v = v.reshape((1,) * (len(shape) - v.ndim) + tuple(v.shape))
        np.broadcast_shapes(tuple(v.shape), shape)  # refuses a value that cannot fill it
        return [LazyFull(v, shape, dtype)]


def already_reduced(x, axis=None, keepdims=True):
    """The per-block step of a reduction whose blocks the kernel already reduced."""
    return x


def _kept(var):
    from nbgraph.linkers.dask.kernels import is_small_constant

    return is_small_constant(var)


def _check_static(var, value):
    """Refuse a lowered value whose (known) shape contradicts ``var``'s static shape."""
    static = getattr(var.type, "shape", None)
    if static is None:
        return
    shape = getattr(value, "shape", None)
    if shape is None or len(shape) != len(static):
        raise ValueError("linker='dask': %r should have %d dimensions, the lowered value "
                         "has shape %s" % (var, len(static), shape))
    for s, n in zip(static, shape, strict=True):
        if s is not None and not np.isnan(n) and s != n:
            raise ValueError("linker='dask': %r has static shape %s, the lowered value has "
                             "shape %s" % (var, static, shape))

