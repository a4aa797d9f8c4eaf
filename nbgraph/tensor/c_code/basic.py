"""C kernels for the structural ops: Shape, ShapeI, SpecifyShape, DimShuffle,
Reshape and Alloc.

Views cannot be made in C (generated code does not use NumPy's C-API), so
the view ops split the work: the Python side makes the view (SpecifyShape's output
rule is "same as input 0", DimShuffle's ``c_prepare_outputs`` runs
``perform``), the kernel checks what the op asserts (SpecifyShape's sizes,
DimShuffle's dropped dimensions).  Such ops answer ``c_view_only``: the C-VM
linker runs their cheap ``perform`` instead (same checks, no call), the
"c" and debug linkers run the kernels.  Reshape copies in C when its input
is not contiguous; Alloc fills its output in C.
"""

import numpy as np

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.tensor.c_code.elemwise import LoopInput, literal_of, broadcast_loop
from nbgraph.tensor.dtypes import C_TYPES as _C_TYPES

__all__ = ["ShapeC", "ShapeIC", "SpecifyShapeC", "DimShuffleC", "ReshapeC", "AllocC"]


def _what(op):
    return str(op).replace('"', "'").replace("\\", "/").replace("%", "%%")


def _resolve_shape(x, shape):
    shape = [int(s) for s in shape]
    size = x.size
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise ValueError("reshape: cannot reshape an array of shape %s into %s" % (
            x.shape, tuple(shape)))
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError("reshape: cannot reshape an array of shape %s into %s" % (
                x.shape, tuple(shape)))
        shape[shape.index(-1)] = size // known
    elif int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError("reshape: cannot reshape an array of shape %s into %s" % (
            x.shape, tuple(shape)))
    return tuple(shape)


class ShapeC(CLinkerOp):
    """The C side of Shape: the sizes of its input, written by C."""

    def c_handles_restricted(self, node):
        """Yes: it only moves or checks elements (float16 and complex too)."""
        return True

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        nd = node.inputs[0].type.ndim
        if nd == 0:
            return "(void)%s;" % outputs[0]
        lines = ["if (%s_strides[0] != 8) { nbg_errorf(nbg_err, \"Shape: the output must be "
                 "contiguous\"); goto nbg_fail; }" % outputs[0]]
        for d in range(nd):
            lines.append("%s[%d] = %s_dims[%d];" % (outputs[0], d, inputs[0], d))
        return "\n".join(lines)


class ShapeIC(CLinkerOp):
    """The C side of ShapeI: one size of its input."""

    def c_handles_restricted(self, node):
        """Yes: it only moves or checks elements (float16 and complex too)."""
        return True

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        return "*%s = %s_dims[%d];" % (outputs[0], inputs[0], self.i)


class SpecifyShapeC(CLinkerOp):
    """The C side of SpecifyShape: its output is its input; the C checks the sizes."""

    def c_handles_restricted(self, node):
        """Yes: it only moves or checks elements (float16 and complex too)."""
        return True

    def c_code_cache_version(self):
        return (1,)

    def c_output_rule(self, node):
        return OutputRule.same_as(0)

    def c_view_only(self, node):
        return True

    def c_code(self, node, name, inputs, outputs, sub):
        x = inputs[0]
        nd = len(self.shape)
        conds = ["%s_dims[%d] != %d" % (x, d, s) for d, s in enumerate(self.shape) if s is not None]
        if not conds:
            return "(void)%s;" % outputs[0]
        want = "(%s%s)" % (", ".join("?" if s is None else str(s) for s in self.shape),
                           "," if nd == 1 else "")
        return ("if (%s) { char nbg_b[200]; nbg_errorf(nbg_err, \"SpecifyShape: expected shape %s, "
                "got %%s\", nbg_shape_text(nbg_b, 200, %d, %s_dims)); goto nbg_fail; }\n(void)%s;"
                % (" || ".join(conds), want, nd, x, outputs[0]))


class DimShuffleC(CLinkerOp):
    """The C side of DimShuffle: the view is made in Python, the C checks dropped dimensions."""

    def c_handles_restricted(self, node):
        """Yes: it only moves or checks elements (float16 and complex too)."""
        return True

    def c_code_cache_version(self):
        return (1,)

    def c_view_only(self, node):
        return True

    def c_prepare_outputs(self, node, inputs):
        cell = [None]
        self.perform(node, inputs, [cell])
        return [cell[0]]

    def c_code(self, node, name, inputs, outputs, sub):
        conds = ["%s_dims[%d] != 1" % (inputs[0], d) for d in self.dropped]
        if not conds:
            return "(void)%s;" % outputs[0]
        return ("if (%s) { nbg_errorf(nbg_err, \"%s: dropped dimensions must have size 1\"); "
                "goto nbg_fail; }\n(void)%s;" % (" || ".join(conds), _what(self), outputs[0]))


class ReshapeC(CLinkerOp):
    """The C side of Reshape: a view when the input is contiguous, else a copy made in C."""

    def c_handles_restricted(self, node):
        """Yes: it only moves or checks elements (float16 and complex too)."""
        return True

    def c_code_cache_version(self):
        return (1,)

    def c_prepare_outputs(self, node, inputs):
        x = inputs[0]
        shape = _resolve_shape(x, inputs[1:])
        if x.flags.c_contiguous:
            return [x.reshape(shape)]
        return [np.empty(shape, node.outputs[0].type.numpy_dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        x, out = inputs[0], outputs[0]
        ndx = node.inputs[0].type.ndim
        ndo = self.ndim
        ct = _C_TYPES[node.inputs[0].type.dtype]
        nx = "nbg_size(%d, %s_dims)" % (ndx, x) if ndx else "1"
        no = "nbg_size(%d, %s_dims)" % (ndo, out) if ndo else "1"
        lines = ["if (%s != %s) { nbg_errorf(nbg_err, \"Reshape: %%lld elements cannot become "
                 "%%lld\", (long long)%s, (long long)%s); goto nbg_fail; }" % (nx, no, nx, no)]
        lines.append("if ((void *)%s != (void *)%s) {" % (x, out))
        if ndo:
            lines.append("if (!nbg_contiguous(%d, %s_dims, %s_strides, sizeof(%s))) { nbg_errorf("
                         "nbg_err, \"Reshape: the output must be contiguous\"); goto nbg_fail; }"
                         % (ndo, out, out, ct))
        if ndx == 0:
            lines.append("*%s = *%s;" % (out, x))
        else:
            lines.append("""int64_t nbg_cs[%(nd)d], nbg_expect = sizeof(%(ct)s);
int nbg_d;
for (nbg_d = %(nd)d - 1; nbg_d >= 0; nbg_d--) {
    nbg_cs[nbg_d] = nbg_expect; nbg_expect *= %(x)s_dims[nbg_d]; }
if (%(nx)s > 0) {
    const int64_t *const nbg_dl[2] = {%(x)s_dims, %(x)s_dims};
    const int64_t *const nbg_sl[2] = {%(x)s_strides, nbg_cs};
    const int64_t nbg_items[2] = {sizeof(%(ct)s), sizeof(%(ct)s)};
    void *const nbg_bases[2] = {(void *)%(x)s, (void *)%(out)s};
    nbg_iter nbg_it;
    if (nbg_iter_init(&nbg_it, %(nd)d, 2, %(x)s_dims, nbg_dl, nbg_sl, nbg_items, nbg_bases, 0,
                      nbg_err)) { nbg_status = NBG_TYPE_ERROR; goto nbg_fail; }
    do {
        const %(ct)s *nbg_p = (const %(ct)s *)nbg_it.ptr[0];
        %(ct)s *nbg_q = (%(ct)s *)nbg_it.ptr[1];
        const int64_t nbg_ps = nbg_it.inner[0], nbg_qs = nbg_it.inner[1];
        int64_t nbg_i;
        for (nbg_i = 0; nbg_i < nbg_it.n; nbg_i++) nbg_q[nbg_i * nbg_qs] = nbg_p[nbg_i * nbg_ps];
    } while (nbg_iter_next(&nbg_it));
}""" % {"nx": nx, "nd": ndx, "x": x, "out": out, "ct": ct})
        lines.append("}")
        return "\n".join(lines)


class AllocC(CLinkerOp):
    """The C side of Alloc: a fresh array filled in C."""

    def c_code_cache_version(self):
        return (1,)

    def c_prepare_outputs(self, node, inputs):
        shape = tuple(int(s) for s in inputs[1:])
        for i, s in enumerate(shape):
            if s < 0:
                raise ValueError("alloc: shape entry %d is negative (%d)" % (i, s))
        return [np.empty(shape, node.outputs[0].type.numpy_dtype)]

    def c_code(self, node, name, inputs, outputs, sub):
        value = node.inputs[0]
        nd = node.outputs[0].type.ndim
        ct = _C_TYPES[value.type.dtype]
        literal = literal_of(value)
        scalar = literal is not None or all(s == 1 for s in value.type.shape)
        src = LoopInput(inputs[0], ct, literal, scalar, ndim=value.type.ndim)

        def element(ins, outs):
            return "%s = %s;" % (outs[0], ins[0])

        return broadcast_loop(nd, [src], [(outputs[0], ct)], element, what="Alloc", sub=sub)
