"""tests/numpy_dispatch.py names NumPy's wide SIMD dispatch targets, and NumPy accepts them."""

import os
import subprocess
import sys

import numpy as np
import pytest

from numpy_dispatch import narrowed_features

try:
    from numpy._core import _multiarray_umath as umath
except ImportError:  # NumPy 1.x
    from numpy.core import _multiarray_umath as umath


def test_names_are_dispatch_targets_of_this_numpy_outside_its_baseline():
    names = narrowed_features()
    dispatch = set(getattr(umath, "__cpu_dispatch__", ()))
    baseline = set(getattr(umath, "__cpu_baseline__", ()))
    assert set(names) <= dispatch - baseline


def test_a_process_with_the_names_disabled_runs_only_the_baseline():
    names = narrowed_features()
    if not names:
        pytest.skip("this NumPy was built without SIMD dispatch targets")
    code = ("import numpy as np\n"
            "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
            "print(' '.join(k for k in %r if f.get(k)))\n"
            "print(np.exp(np.float32(1.0)))\n" % (names,))
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(names))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    enabled, value = done.stdout.splitlines()
    assert enabled == ""  # every named target is off
    assert np.isclose(float(value), np.e)
    assert "Error" not in done.stderr
