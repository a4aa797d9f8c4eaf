"""``map``, ``reduce``, ``foldl`` and ``foldr``: common loops written with :func:`scan`.

>>> import numpy as np, nbgraph as ng, nbgraph.tensor as nt
>>> x = nt.dvector("x")
>>> squares, _ = map(lambda v: v * v, x)
>>> total, _ = reduce(lambda v, acc: acc + v, x, nt.constant(0.0))
>>> ng.function([x], [squares, total])(np.array([1.0, 2.0, 3.0]))
[array([1., 4., 9.]), array(6.)]
"""

from nbgraph.tensor.scan.basic import scan

__all__ = ["map", "reduce", "foldl", "foldr"]

_builtin_map = map


def map(fn, sequences, non_sequences=None, truncate_gradient=-1, go_backwards=False,
        name=None):
    """``fn`` applied to each row of ``sequences``: returns ``(outputs, updates)``."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, name=name)


def reduce(fn, sequences, outputs_info, non_sequences=None, go_backwards=False, name=None):
    """Fold ``fn`` over ``sequences``: only the value after the last step of each output
    is returned (with the updates), so no intermediate step is stored."""
    outputs, updates = scan(fn, sequences=sequences, outputs_info=outputs_info,
                            non_sequences=non_sequences, go_backwards=go_backwards,
                            return_list=True, name=name)
    last = [out[-1] for out in outputs]
    return (last[0] if len(last) == 1 else last), updates


def foldl(fn, sequences, outputs_info, non_sequences=None, name=None):
    """:func:`reduce` from the first row to the last."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=False, name=name)


def foldr(fn, sequences, outputs_info, non_sequences=None, name=None):
    """:func:`reduce` from the last row to the first."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=True, name=name)
