"""Running code in a fresh interpreter: for tests of what a new process imports or
does on its first use.  ``tests/conftest.py`` puts this directory on ``sys.path``:
``from fresh_python import run_python``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbgraph

#: The checkout under test (the directory holding the ``nbgraph`` package).
ROOT = str(Path(nbgraph.__file__).resolve().parent.parent)


def run_python(code: str, timeout: float = 300) -> str:
    """The standard output of ``python -c code`` run from :data:`ROOT` with it first on
    ``PYTHONPATH`` (so the child imports this checkout's nbgraph, not another
    install); the test fails, with the child's standard error, if it exits non-zero."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
