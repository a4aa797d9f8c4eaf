"""The C call path's ``Kernel`` objects (:mod:`~nbgraph.linkers.c.fastcall`) for a
linked program: all a function-cache hit needs to call its kernels (the cffi
fallbacks, generated only when used, are :mod:`~nbgraph.linkers.c.runtime`'s).
"""

from nbgraph.linkers.c.outputs import fastcall_options

__all__ = ["make_cell_thunk", "make_kernel_call", "error_from_message", "tensor_operands",
           "POINTER_CACHE_BYTES", "ELEMWISE_GIL_ELEMENTS"]

#: Arrays up to this many bytes keep their cffi pointer cached between calls (an
#: input passed again, or a value one kernel produced and the next one reads, is
#: not converted again); bigger arrays are never kept alive by the cache.
POINTER_CACHE_BYTES = 1 << 16


def tensor_operands(node) -> bool:
    """Whether every input and output of ``node`` is passed to C as a tensor (the
    only operands the C call path and the generated cffi thunks take)."""
    return all(getattr(v.type, "c_arg_kind", None) == "tensor"
               for v in node.inputs + node.outputs)


def error_from_message(code, message, node):
    """The exception for kernel return ``code`` with ``message`` (bytes) from ``node``."""
    msg = message.decode("utf-8", "replace") or "the C code failed"
    from nbgraph.linkers.c.codegen import ERROR_CODES  # (an error: never on the way to a result)

    cls = ERROR_CODES.get(code, RuntimeError)
    return cls("%s (C code of %s)" % (msg, node.op))


def make_cell_thunk(node, kernel, module, storage, fallback, keep_bytes=-1):
    """A ``_fastcall.Kernel`` thunk reading ``node``'s input cells and filling its
    output cells (``fallback``: the Python thunk, for values it does not take);
    Elemwise outputs up to ``keep_bytes`` (any when negative) are kept for reuse.
    None without the C call path."""
    def on_error(code, message, args):
        raise error_from_message(code, message, node)

    return make_kernel_call(node, kernel, module, fallback, on_error,
                            in_cells=tuple(storage[v] for v in node.inputs),
                            out_cells=tuple(storage[v] for v in node.outputs),
                            limit=keep_bytes)


def make_kernel_call(node, kernel, module, fallback, on_error, **options):
    """A ``_fastcall.Kernel`` running ``node``'s kernel (see :mod:`~nbgraph.linkers.c.fastcall`),
    or None when the extension is unavailable or an operand is not a tensor.

    ``kernel`` is a cffi function pointer or its address (an int).
    Arguments it does not handle itself go to ``fallback`` unchanged;
    ``on_error(code, message, args)`` raises the exception of a failed kernel.
    ``options``: ``argmap``/``nargs``/``method``/``aslist`` (called with
    arguments) or ``in_cells``/``out_cells`` (a thunk over storage cells).
    """
    if not tensor_operands(node):
        return None
    from nbgraph.linkers.c import fastcall

    ext = fastcall.get_now()  # None while it builds: see fastcall.Upgrade
    if ext is None:
        return None
    ins = tuple((v.type.numpy_dtype.num, v.type.ndim) for v in node.inputs)
    outs = tuple((v.type.numpy_dtype.num, v.type.ndim) for v in node.outputs)
    rule_options, prepare = fastcall_options(node)
    options.update(rule_options)
    # The GIL is released while a kernel runs, except for an elementwise loop or
    # reduction (an output rule done in C) on at most ELEMWISE_GIL_ELEMENTS
    # elements (cheap work: releasing costs ~0.1 us); other Ops may do any
    # amount of work on small operands.
    options.setdefault("threshold", ELEMWISE_GIL_ELEMENTS if prepare is None else -1)
    address = kernel if isinstance(kernel, int) else int(module.ffi.cast("uintptr_t", kernel))
    try:
        return ext.Kernel(address, module, ins, outs, prepare, on_error, fallback, **options)
    except (TypeError, ValueError, OverflowError):  # pragma: no cover - an unexpected node
        return None


#: An Elemwise kernel on at most this many elements runs without releasing the GIL.
ELEMWISE_GIL_ELEMENTS = 16384
