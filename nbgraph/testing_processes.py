"""Running a script in fresh processes under several thread counts, for tests of
results that must not depend on how many threads computed them.

>>> outputs = thread_count_outputs("import os; print(os.environ['NBGRAPH_NUM_THREADS'])",
...                                counts=(1, 2))
>>> outputs
{1: '1', 2: '2'}
"""

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["thread_count_outputs", "assert_thread_count_independent"]

#: The directory holding the ``nbgraph`` package these processes import.
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def thread_count_outputs(script: str, counts: Sequence[int] = (1, 2, 3),
                         env: Mapping[str, str] | None = None,
                         timeout: float = 300.0) -> dict[int, str]:
    """Run ``python -c script`` once per thread count (``NBGRAPH_NUM_THREADS``) and
    return each run's standard output, stripped, by count.

    The processes import this very ``nbgraph`` (its directory leads PYTHONPATH and
    is the working directory); ``env`` adds variables (``NBGRAPH_CACHE_DIR``, say).
    A run that fails raises AssertionError with its standard error.
    """
    outputs = {}
    for count in counts:
        run_env = dict(os.environ, **(env or {}), NBGRAPH_NUM_THREADS=str(count),
                       PYTHONPATH=str(_PACKAGE_ROOT) + os.pathsep +
                       os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout, env=run_env, cwd=str(_PACKAGE_ROOT))
        assert proc.returncode == 0, proc.stderr
        outputs[count] = proc.stdout.strip()
    return outputs


def assert_thread_count_independent(script: str, counts: Sequence[int] = (1, 2, 3),
                                    env: Mapping[str, str] | None = None,
                                    timeout: float = 300.0) -> str:
    """Check that ``script`` prints the same thing (a digest of its results, say)
    under every thread count of ``counts`` (see :func:`thread_count_outputs`);
    return that output.  AssertionError lists the outputs by count otherwise."""
    outputs = thread_count_outputs(script, counts, env, timeout)
    assert len(set(outputs.values())) == 1, (
        "the output depends on NBGRAPH_NUM_THREADS: %r" % (outputs,))
    return outputs[counts[0]]
