"""Print the NumPy SIMD dispatch targets to switch off with ``NPY_DISABLE_CPU_FEATURES``.

``make test`` runs the scalar, elementwise and reduction tests a second time with
NumPy's runtime dispatch narrowed to its baseline, so that an expectation that holds
only at one SIMD level (NumPy's AVX2 or AVX-512 loops round some transcendental
results differently) fails on every machine, not only on some::

    NPY_DISABLE_CPU_FEATURES="$(python tests/numpy_dispatch.py)" python -m pytest ...

The names come from the installed NumPy, at run time: the dispatch targets it was
built with (``__cpu_dispatch__``) that are not part of its baseline
(``__cpu_baseline__``).  On x86-64 these are the AVX2 and AVX-512 groups (NumPy 2.4:
``X86_V3 X86_V4 AVX512_ICL AVX512_SPR``; older NumPy: ``AVX2 FMA3 AVX512F
AVX512_SKX ...``); on aarch64 the SVE and ASIMD extensions.  Disabling a target the
CPU lacks is harmless, so the same list works on any machine.  Nothing is printed
when NumPy has no dispatch targets (the tests then simply run as usual).
"""

from __future__ import annotations

import platform


def narrowed_features() -> list[str]:
    """The non-baseline dispatch targets of the installed NumPy, in its own spelling."""
    try:
        from numpy._core import _multiarray_umath as umath  # NumPy >= 2
    except ImportError:  # pragma: no cover - NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    baseline = set(getattr(umath, "__cpu_baseline__", ()))
    dispatch = list(getattr(umath, "__cpu_dispatch__", ()))
    targets = [name for name in dispatch if name not in baseline]
    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86"):
        # the wide-vector groups only: AVX2 / AVX-512 (and their x86-64-v3/v4 names)
        wide = ("AVX", "X86_V3", "X86_V4", "FMA3", "F16C")
        targets = [name for name in targets if name.startswith(wide)]
    return targets


if __name__ == "__main__":
    print(" ".join(narrowed_features()))
