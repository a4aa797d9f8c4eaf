"""Shared set-up of the C linker tests.

Every test here needs a C compiler (``needs_cc``: skipped without one).  The
private cache directory of the session (``c_cache_dir``, in tests/conftest.py)
is shared with subprocesses through ``NBGRAPH_CACHE_DIR``.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.needs_cc)


def run_python(code, cache_dir, timeout=120, extra_env=None):
    """Run ``code`` in a fresh interpreter using ``cache_dir``; return CompletedProcess."""
    env = dict(os.environ)
    env["NBGRAPH_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if extra_env:
        env.update(extra_env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(REPO))


@pytest.fixture
def python_process(c_cache_dir):
    """``python_process(code, cache_dir=None, **kw)``: run code in a fresh interpreter."""
    def run(code, cache_dir=None, **kw):
        return run_python(code, cache_dir or c_cache_dir, **kw)
    return run
