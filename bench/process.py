"""Running benchmark code in a fresh interpreter."""

import os
import subprocess
import sys

__all__ = ["seconds_printed"]


def seconds_printed(code, env=None, cwd=None):
    """Run ``code`` with ``python -c`` and return the number on the last line it prints
    (its own timing, in seconds); ``env`` defaults to this process's environment."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ) if env is None else env, cwd=cwd)
    return float(out.stdout.strip().splitlines()[-1])
