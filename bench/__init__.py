"""nbgraph's benchmark suite, run with ``make bench`` (``python -m bench``).

Benchmarks report ratios against NumPy (and numexpr/PyTensor when installed);
they are not part of the test suite and make no timing assertions.
"""
