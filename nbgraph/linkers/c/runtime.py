"""The Python side of a kernel call through cffi: checking and packing arguments,
allocating outputs with NumPy, calling the kernel, turning error codes into
exceptions (the call path's fallback, and the whole path without the extension;
the extension's ``Kernel`` objects are made in :mod:`~nbgraph.linkers.c.kernel_calls`).

See :mod:`nbgraph.linkers.c` for the calling convention.  cffi's ABI-mode
calls release the GIL while a kernel runs.
"""

import sys

import numpy as np

from nbgraph.linkers.c.threads import ERRLEN
from nbgraph.linkers.c.kernel_calls import (  # noqa: F401 - (names of this module too)
    ELEMWISE_GIL_ELEMENTS,
    POINTER_CACHE_BYTES,
    error_from_message,
    make_cell_thunk,
    make_kernel_call,
    tensor_operands,
)
from nbgraph.linkers.c.outputs import (
    broadcast_shape,
    make_prepare,
    output_rule,
    rule_problem,
)
from nbgraph.linkers.codecache import compile_source

__all__ = ["make_c_thunk", "c_thunk_maker", "fast_thunk_maker", "make_c_runner", "kernel_error",
           "error_from_message", "make_kernel_call", "make_cell_thunk"]

_ndarray = np.ndarray


def kernel_error(code, err, ffi, node):
    """The exception for kernel return ``code`` with the message in ``err``."""
    msg = ffi.string(err)
    err[0] = b"\0"
    return error_from_message(code, msg, node)


def _tensor_checker(var, node, role, index):
    """A function(value) -> (value, pointer) for a tensor operand, refusing values
    the kernel could not read safely and copying misaligned ones."""
    ttype = var.type
    dtype = ttype.numpy_dtype
    ndim = ttype.ndim
    what = "%s %d of %s" % (role, index, node.op)

    def slow(value, fb, cast):
        if isinstance(value, np.generic) and ndim == 0 and value.dtype == dtype:
            value = np.asarray(value)
        if not isinstance(value, _ndarray):
            raise TypeError("%s must be a numpy.ndarray of dtype %s, got %s" % (
                what, dtype, type(value).__name__))
        if value.dtype != dtype:
            raise TypeError("%s must have dtype %s, got %s" % (what, dtype, value.dtype))
        if value.ndim != ndim:
            raise TypeError("%s must have %d dimensions, got shape %s" % (
                what, ndim, value.shape))
        if not value.flags.aligned:
            if role == "output":
                raise TypeError("%s is a misaligned array" % what)
            value = value.copy()
        try:
            return value, fb(value)
        except (ValueError, TypeError, BufferError):
            addr = value.__array_interface__["data"][0]
            return value, cast("void *", addr)

    return dtype, ndim, slow


class NodeCall:
    """Calls one kernel on values: ``call(inputs) -> outputs``."""

    def __init__(self, node, kernel, module):
        self.node = node
        self.kernel = kernel
        self.module = module
        ffi = module.ffi
        self.ffi = ffi
        self.err = ffi.new("char[%d]" % ERRLEN)
        from nbgraph.linkers.c.codegen import operand_layout  # (a fallback, made on first use)

        layout, _ = operand_layout(node)
        self.in_kinds = [kind for _, role, kind, _ in layout if role == "in"]
        self.out_kinds = [kind for _, role, kind, _ in layout if role == "out"]
        self.in_checks = [
            _tensor_checker(v, node, "input", i) if k == "tensor" else None
            for i, (v, k) in enumerate(zip(node.inputs, self.in_kinds, strict=True))]
        self.out_checks = [
            _tensor_checker(v, node, "output", i) if k == "tensor" else None
            for i, (v, k) in enumerate(zip(node.outputs, self.out_kinds, strict=True))]
        self.prepare = make_prepare(node)
        self.freefns = []
        names = getattr(module, "freefunc_names", [])
        for var in node.outputs:
            f = getattr(var.type, "freefunc", None)
            self.freefns.append(module.freefns[names.index(f)] if f else None)

    def pack(self, values, checks, kinds, ptrs, dims):
        fb = self.ffi.from_buffer
        cast = self.ffi.cast
        out = []
        for v, chk, kind in zip(values, checks, kinds, strict=True):
            if kind == "tensor":
                dtype, ndim, slow = chk
                if type(v) is _ndarray and v.dtype is dtype and v.ndim == ndim:
                    try:
                        if not v.flags.aligned:
                            raise ValueError
                        p = fb(v)
                    except (ValueError, TypeError, BufferError):
                        v, p = slow(v, fb, cast)
                else:
                    v, p = slow(v, fb, cast)
                ptrs.append(p)
                if ndim:
                    dims.extend(v.shape)
                    dims.extend(v.strides)
            elif kind == "cdata":
                if not isinstance(v, self.ffi.CData):
                    raise TypeError("input of %s must be a cffi pointer, got %s" % (
                        self.node.op, type(v).__name__))
                ptrs.append(v)
            else:  # pragma: no cover - other kinds are not C-capable
                raise TypeError("cannot pass %r to C" % (v,))
            out.append(v)
        return out

    def __call__(self, inputs):
        ptrs, dims = [], []
        inputs = self.pack(inputs, self.in_checks, self.in_kinds, ptrs, dims)
        outs = list(self.prepare(inputs))
        cells = []
        for j, kind in enumerate(self.out_kinds):
            if kind == "cdata":
                cell = self.ffi.new("void *[1]")
                cells.append(cell)
                outs[j] = cell
        for o, chk, kind in zip(outs, self.out_checks, self.out_kinds, strict=True):
            if kind == "tensor":
                self.pack([o], [chk], ["tensor"], ptrs, dims)
            else:
                ptrs.append(o)
        code = self.kernel(ptrs, dims, self.err)
        if code:
            raise kernel_error(code, self.err, self.ffi, self.node)
        results = []
        for j, kind in enumerate(self.out_kinds):
            if kind == "cdata":
                p = outs[j][0]
                if p == self.ffi.NULL:
                    raise ValueError("the C code of %s returned a NULL pointer for output %d"
                                     % (self.node.op, j))
                free = self.freefns[j]
                results.append(self.ffi.gc(p, free) if free is not None else p)
            else:
                results.append(outs[j])
        return results


def make_c_runner(node, kernel, module):
    """A function(input values) -> output values running ``node``'s kernel."""
    return NodeCall(node, kernel, module)


def _pointer_of(fb, cast):
    def pointer(value):
        try:
            return fb(value)
        except (ValueError, TypeError, BufferError):  # not C-contiguous
            return cast("void *", value.__array_interface__["data"][0])
    return pointer


def _input_checker(var, node, index, cell, fb, cast):
    """Full check of input ``index``; returns (value, pointer) and fills its pointer cell."""
    dtype, ndim, slow = _tensor_checker(var, node, "input", index)
    limit = POINTER_CACHE_BYTES

    def check(value):
        if type(value) is _ndarray and value.dtype == dtype and value.ndim == ndim \
                and value.flags.aligned:
            try:
                p = fb(value)
            except (ValueError, TypeError, BufferError):
                value, p = slow(value, fb, cast)
        else:
            value, p = slow(value, fb, cast)
        if value.nbytes <= limit:
            cell[0] = value
            cell[1] = p
        return value, p
    return check


def _output_checker(var, node, index, fb, cast):
    dtype, ndim, slow = _tensor_checker(var, node, "output", index)

    def check(value):
        if type(value) is _ndarray and value.dtype == dtype and value.ndim == ndim \
                and value.flags.aligned:
            try:
                return value, fb(value)
            except (ValueError, TypeError, BufferError):
                pass
        return slow(value, fb, cast)
    return check


#: References a reusable output has at the reuse check: the pointer cell's
#: slot, the cffi buffer made from it, the thunk's local name, and
#: ``sys.getrefcount``'s own argument.
_REUSE_REFS = 4

_TEMPLATE = """
def build(K, ARGS, ERR, NULL, fb, empty, fail, prepare, node, bshape, LIMIT, INS, OUTS, refs):
%(unpack)s
    def thunk(%(params)s):
%(body)s
    return thunk
"""


def _fast_from_buffer(ffi):
    """A one-argument ``from_buffer`` with as little Python in between as possible."""
    backend = getattr(ffi, "_backend", None)
    if backend is None:  # the pre-parsed (out-of-line) FFI: its method is C code
        return ffi.from_buffer
    import functools

    return functools.partial(backend.from_buffer, ffi.BCharA)


def make_fast_thunk(node, kernel, module, storage, pointer_cells, direct=False, nparams=None):
    """A thunk for a node whose operands are all tensors, generated as straight-line
    Python: type checks, cached pointers, NumPy output allocation, one kernel call.

    With ``direct=True`` the function takes the node's input values as arguments
    and returns its output (a list when the node has several) instead of reading
    and filling storage cells: a compiled function that is this one node calls it
    as its whole body.  It shares the thunk's pointer cells, so both may be used.
    Inputs from ``nparams`` on (constants passed as kernel arguments) are read
    from their cells even then.  The generated text is ``thunk.source``.
    """
    return fast_thunk_maker(node, module.ffi, storage, pointer_cells, direct, nparams)(kernel)


def fast_thunk_maker(node, ffi, storage, pointer_cells, direct=False, nparams=None):
    """All of :func:`make_fast_thunk` but the kernel: a function(kernel) -> thunk
    (made while the module compiles, so installing it costs one call)."""
    nparams = len(node.inputs) if nparams is None else nparams
    fb, cast = ffi.from_buffer, ffi.cast
    err = ffi.new("char[%d]" % ERRLEN)
    args = ffi.new("void *[%d]" % max(len(node.inputs) + len(node.outputs), 1))

    def fail(code):
        raise kernel_error(code, err, ffi, node)

    def bshape(shapes, node):
        return broadcast_shape(list(shapes), "operands of %s" % node.op)

    ins = [(storage[var], pointer_cells[var], var.type.numpy_dtype,
            _input_checker(var, node, k, pointer_cells[var], fb, cast))
           for k, var in enumerate(node.inputs)]
    outs = [(storage[var], pointer_cells[var], var.type.numpy_dtype,
             _output_checker(var, node, j, fb, cast)) for j, var in enumerate(node.outputs)]
    source = thunk_source(node, direct, nparams)
    namespace = {}
    exec(compile_source(source, "<nbgraph kernel call: %s>" % node.op), namespace)
    rest = (args, err, ffi.NULL, _fast_from_buffer(ffi), np.empty, fail, make_prepare(node),
            node, bshape, POINTER_CACHE_BYTES, ins, outs, sys.getrefcount)

    def make(kernel):
        thunk = namespace["build"](kernel, *rest)
        thunk.source = source
        return thunk
    return make


def thunk_source(node, direct=False, nparams=None):
    """The Python text of :func:`make_fast_thunk`'s function for ``node``."""
    nparams = len(node.inputs) if nparams is None else nparams
    unpack = ["ci%d, pi%d, dti%d, chki%d = INS[%d]" % ((k,) * 5)
              for k in range(len(node.inputs))]
    unpack += ["co%d, po%d, dto%d, chko%d = OUTS[%d]" % ((j,) * 5)
               for j in range(len(node.outputs))]
    body, dims = _input_lines(node, direct, nparams)
    rule = output_rule(node)
    if rule.kind == "broadcast" and not rule.in_place and not rule_problem(node, rule):
        body += _broadcast_output_lines(node, dims)
    else:
        body += _prepared_output_lines(node, dims)
    body += ["rc = K(ARGS, %s, ERR)" % (" + ".join(dims) if dims else "NULL"),
             "if rc:", "    fail(rc)"]
    body += _store_lines(node, direct)
    params = ""
    if direct:
        n_out = len(node.outputs)
        body.append("return o0" if n_out == 1 else
                    "return [%s]" % ", ".join("o%d" % j for j in range(n_out)))
        params = ", ".join("v%d" % k for k in range(nparams))
    return _TEMPLATE % {"unpack": "\n".join("    " + line for line in unpack) or "    pass",
                        "body": "\n".join("        " + line for line in body),
                        "params": params}


def _input_lines(node, direct, nparams):
    """Checking each input (cached pointer, else the full check); and the dims terms."""
    body, dims = [], []
    for k, var in enumerate(node.inputs):
        nd = var.type.ndim
        if not direct or k >= nparams:
            body.append("v%d = ci%d[0]" % (k, k))
        body += ["if v%d is pi%d[0] and v%d.dtype is dti%d:" % (k, k, k, k),
                 "    ARGS[%d] = pi%d[1]" % (k, k),
                 "else:",
                 "    v%d, ARGS[%d] = chki%d(v%d)" % (k, k, k, k),
                 "s%d = v%d.shape" % (k, k),
                 ("if s%d:" % k) if nd == 0 else ("if len(s%d) != %d:" % (k, nd)),
                 "    v%d, ARGS[%d] = chki%d(v%d)" % (k, k, k, k)]
        if nd:
            dims.append("s%d + v%d.strides" % (k, k))
    return body, dims


def _broadcast_output_lines(node, dims):
    """Fresh outputs of the inputs' broadcast shape (a "broadcast" rule, not in place)."""
    n_in = len(node.inputs)
    out_nd = node.outputs[0].type.ndim
    if out_nd == 0:
        body = ["sh = ()"]
    else:
        body = ["sh = s0"]
        if n_in > 1:
            body.append("if %s:" % " or ".join("s%d != sh" % k for k in range(1, n_in)))
            body.append("    sh = bshape((%s,), node)" % ", ".join("s%d" % k
                                                               for k in range(n_in)))
    for j in range(len(node.outputs)):
        # A small output of the previous call that nobody but this program's
        # pointer cell still references (the caller dropped it) is reused: no
        # allocation, no pointer conversion.  Any other reference (the
        # caller's, a view's base, another cell) blocks it.
        body += ["o%d = po%d[0]" % (j, j),
                 "if o%d is not None and refs(o%d) == %d and o%d.shape == sh:"
                 % (j, j, _REUSE_REFS, j),
                 "    ARGS[%d] = q%d = po%d[1]" % (n_in + j, j, j),
                 "else:",
                 "    o%d = empty(sh, dto%d)" % (j, j),
                 "    ARGS[%d] = q%d = fb(o%d)" % (n_in + j, j, j)]
        if out_nd:
            dims.append("sh + o%d.strides" % j)
    return body


def _prepared_output_lines(node, dims):
    """Outputs from the rule's Python preparation, each checked."""
    n_in = len(node.inputs)
    body = ["outs = prepare([%s])" % "".join("v%d, " % k for k in range(n_in))]
    for j, var in enumerate(node.outputs):
        body.append("o%d, q%d = chko%d(outs[%d])" % (j, j, j, j))
        if var.type.ndim:
            body.append("if len(o%d.shape) != %d:" % (j, var.type.ndim))
            body.append("    o%d, q%d = chko%d(o%d)" % (j, j, j, j))
            dims.append("o%d.shape + o%d.strides" % (j, j))
        body.append("ARGS[%d] = q%d" % (n_in + j, j))
    return body


def _store_lines(node, direct):
    """Storing each output (in its cell) and keeping small ones' pointers."""
    body = []
    for j, var in enumerate(node.outputs):
        if not direct:
            body.append("co%d[0] = o%d" % (j, j))
        static = var.type.shape
        if None not in static and int(np.prod(static, dtype=np.int64)) * \
                var.type.numpy_dtype.itemsize <= POINTER_CACHE_BYTES:
            body += ["po%d[0] = o%d" % (j, j), "po%d[1] = q%d" % (j, j)]
        else:
            body += ["if o%d.nbytes <= LIMIT:" % j,
                     "    po%d[0] = o%d" % (j, j),
                     "    po%d[1] = q%d" % (j, j),
                     "else:",
                     "    po%d[0] = None" % j]
    return body


def c_thunk_maker(node, ffi, storage, pointer_cells):
    """For a node whose operands are all tensors, :func:`make_c_thunk`'s work but
    the kernel (:func:`fast_thunk_maker`); else None."""
    if tensor_operands(node):
        return fast_thunk_maker(node, ffi, storage, pointer_cells)
    return None


def make_c_thunk(node, kernel, module, storage, pointer_cells=None):
    """A no-argument thunk reading ``node``'s input cells and filling its output cells."""
    maker = None if pointer_cells is None else \
        c_thunk_maker(node, module.ffi, storage, pointer_cells)
    if maker is not None:
        return maker(kernel)
    call = NodeCall(node, kernel, module)
    in_cells = [storage[v] for v in node.inputs]
    out_cells = [storage[v] for v in node.outputs]
    if len(in_cells) == 1 and len(out_cells) == 1:
        (a,), (z,) = in_cells, out_cells

        def thunk():
            z[0] = call([a[0]])[0]
    elif len(in_cells) == 2 and len(out_cells) == 1:
        (a, b), (z,) = in_cells, out_cells

        def thunk():
            z[0] = call([a[0], b[0]])[0]
    else:
        def thunk():
            outs = call([c[0] for c in in_cells])
            for cell, value in zip(out_cells, outs, strict=True):
                cell[0] = value
    thunk.call = call
    return thunk
