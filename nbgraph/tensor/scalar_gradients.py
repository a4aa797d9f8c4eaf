"""Gradients of scalar ops by Theano's conventions: each input's gradient in its dtype.

A float input gets its gradient cast to its own dtype; an integer input,
differentiated as if real, keeps a float gradient; a missing (None) gradient
is a zero.  Re-exported by :mod:`nbgraph.tensor.scalar_op`.

>>> is_float_dtype("float16"), is_float_dtype("int64")
(True, False)
"""

__all__ = ["cast_gradient", "input_gradient", "input_gradients", "is_float_dtype",
           "zero_gradients"]


def is_float_dtype(dtype):
    """True for the dtypes gradients flow through (floats of any width, complex)."""
    return dtype in ("float32", "float64", "float16", "complex64", "complex128")


def cast_gradient(g, x):
    """``g`` converted to ``x``'s float dtype (gradients keep their input's dtype)."""
    from nbgraph.tensor.scalar_logic import cast

    if g is None:
        return None
    if g.type.dtype != x.type.dtype:
        return cast(g, x.type.dtype)
    return g


def input_gradients(grads, inputs):
    """The built-in ops' input gradients from ``grads`` (None: zero), by Theano's
    convention: see :func:`input_gradient`."""
    return [input_gradient(g, x) for g, x in zip(grads, inputs, strict=True)]


def input_gradient(g, x):
    """``g`` as the gradient of the scalar input ``x``: cast to ``x``'s dtype for a
    float ``x``; for an integer ``x`` (differentiated as if real), kept in its own
    float dtype (float64 if ``g`` is an integer); zero where ``g`` is None."""
    if g is None:
        return x.type.grad_zeros_like(x)
    if is_float_dtype(x.type.dtype):
        return cast_gradient(g, x)
    if not is_float_dtype(g.type.dtype):
        from nbgraph.tensor.scalar_logic import cast

        return cast(g, "float64")
    return g


def zero_gradients(inputs):
    """Zero gradients for every input (a piecewise-constant op: comparisons, rounding)."""
    return [x.type.grad_zeros_like(x) for x in inputs]
