"""Scan.infer_shape: output shapes from the outer inputs' shapes.

A state's rows have the shape of its initial buffer's rows; an output not fed
back gets the shape its inner expression has, computed by running the inner
nodes' ``infer_shape`` on the outer shapes (given up, with
NotImplementedError, when that shape depends on values computed in the loop).
With a stop condition the number of steps is known only at run time.
"""

from nbgraph.core.graph import Constant, ancestors
from nbgraph.core.type import MethodNotDefined
from nbgraph.tensor.type import TensorType

__all__ = ["scan_infer_shape"]


def _entry(value):
    from nbgraph.tensor.basic import constant_shape_entry

    return constant_shape_entry(value)


def _inner_shapes(op, node, input_shapes):
    """{inner variable: shape tuple} for the inner graph, from the outer shapes."""
    from nbgraph.tensor.basic import shape_i

    ns, nst = op.n_seqs, op.n_states
    shapes = {}
    for var, shp in zip(op.inner_seqs(), input_shapes[1:1 + ns], strict=True):
        shapes[var] = tuple(shp[1:])
    for taps, shp in zip(op.inner_state_taps(), input_shapes[1 + ns:1 + ns + nst], strict=True):
        for var in taps:
            shapes[var] = tuple(shp[1:])
    for var, shp in zip(op.inner_non_seqs(), input_shapes[1 + ns + nst:], strict=True):
        shapes[var] = shp
    for inner in op.fgraph.toposort():
        in_shapes = []
        for var in inner.inputs:
            if var not in shapes:
                if isinstance(var, Constant) and isinstance(var.type, TensorType):
                    shapes[var] = tuple(_entry(s) for s in var.data.shape)
                elif isinstance(var.type, TensorType):
                    shapes[var] = tuple(shape_i(var, d) for d in range(var.type.ndim))
                else:
                    shapes[var] = None
            in_shapes.append(shapes[var])
        try:
            outs = inner.op.infer_shape(inner, in_shapes)
        except (MethodNotDefined, NotImplementedError, TypeError):
            outs = [None] * len(inner.outputs)
        for var, shp in zip(inner.outputs, outs, strict=True):
            shapes[var] = tuple(shp) if shp is not None else None
    return shapes


def scan_infer_shape(op, node, input_shapes):
    """One shape tuple per output of the Scan ``node``."""
    ns, nst = op.n_seqs, op.n_states
    n = node.inputs[0]
    inner_vars = set(op.fgraph.variables)
    result = []
    inner = None
    for j, out in enumerate(node.outputs):
        if j < nst:
            row = tuple(input_shapes[1 + ns + j][1:])
        else:
            if inner is None:
                inner = _inner_shapes(op, node, input_shapes)
            row = inner.get(op.fgraph.outputs[j])
            if row is None or any(v in inner_vars for v in ancestors(list(row))):
                raise NotImplementedError("the shape of output %d of %s depends on values "
                                          "computed inside the loop" % (j, op))
        row = tuple(_entry(s) if s is not None else e
                    for s, e in zip(out.type.shape[-len(row):] if row else (), row, strict=True))
        if op.store[j] == "all":
            if op.until:
                raise NotImplementedError("%s stops on a condition: its number of steps is "
                                          "known only when it runs" % op)
            result.append((n,) + row)
        else:
            result.append(row)
    return result
