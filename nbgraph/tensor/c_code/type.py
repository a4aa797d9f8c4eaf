"""TensorType's side of the C calling convention (see :mod:`nbgraph.linkers.c`).

``class TensorType(TensorTypeC, Type)``: the hooks of
:class:`~nbgraph.core.c_interface.CLinkerType` for tensors.  A tensor operand
reaches a kernel as ``nbg_ptrs[j]``, the address of its first element, and
``2 * ndim`` entries of ``nbg_dims``: its sizes, then its byte strides.  The
hooks declare, for a tensor named ``x``:

``T *x``
    the data (``T`` is the dtype's C type: ``double``, ``int8_t``, ``uint8_t``
    for bool);
``int64_t x_dims[ndim]``, ``int64_t x_strides[ndim]``
    sizes and byte strides, copied into locals so the C compiler knows that
    writing an output cannot change them.

Output arrays are allocated by NumPy on the Python side before the call, so
``c_sync`` has nothing to write back.
"""

from nbgraph.core.c_interface import CLinkerType
from nbgraph.tensor.dtypes import C_TYPES

__all__ = ["TensorTypeC"]


class TensorTypeC(CLinkerType):
    """The C hooks of TensorType (which sets ``dtype`` and ``ndim``)."""

    c_arg_kind = "tensor"

    @property
    def c_type(self):
        """The C type of one element."""
        return C_TYPES[self.dtype]

    def c_declare(self, name, sub, check_input=True):
        text = "%s *%s;\n" % (C_TYPES[self.dtype], name)
        if self.ndim:
            text += "int64_t %s_dims[%d];\nint64_t %s_strides[%d];\n" % (
                name, self.ndim, name, self.ndim)
        return text

    def c_init(self, name, sub):
        return "%s = NULL;\n" % name

    def c_extract(self, name, sub, check_input=True):
        lines = ["%s = (%s *)(%s);" % (name, C_TYPES[self.dtype], sub["slot"])]
        dims = sub["dims"]
        for d in range(self.ndim):
            lines.append("%s_dims[%d] = %s[%d];" % (name, d, dims, d))
        for d in range(self.ndim):
            lines.append("%s_strides[%d] = %s[%d];" % (name, d, dims, self.ndim + d))
        return "\n".join(lines) + "\n"

    def c_extract_out(self, name, sub, check_input=True):
        return self.c_extract(name, sub, check_input)

    def c_sync(self, name, sub):
        return ""

    def c_cleanup(self, name, sub):
        return ""

    def c_code_cache_version(self):
        return (1,)

    def c_is_simple(self):
        return False

    def c_restricted(self):
        """float16 and complex tensors reach only Ops whose C handles them."""
        return self.dtype in ("float16", "complex64", "complex128")

    def c_literal(self, data):
        """A C expression of the single element of ``data`` (size-1 data only)."""
        import numpy as np

        from nbgraph.tensor.scalar_type import get_scalar_type

        arr = np.asarray(data)
        if arr.size != 1:
            raise ValueError("only a single element has a C literal, got shape %s"
                             % (arr.shape,))
        return get_scalar_type(self.dtype).c_literal(arr.reshape(())[()])
