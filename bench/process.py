"""Running benchmark code in a fresh interpreter."""

import os
import subprocess
import sys

__all__ = ["seconds_printed"]


#: Run after the timed code, untimed: a process that used nbgraph's C linker waits for
#: its background builds (the call-path extension, ...) before it exits, so no
#: orphaned compiler keeps a core busy while the next row is timed (a softmax row
#: after the empty-cache rows read 2x slow now and then).
_SETTLE = """
import sys as _sys
_background = _sys.modules.get("nbgraph.linkers.c.background")
if _background is not None:
    _background.wait_all(600)
"""


def seconds_printed(code, env=None, cwd=None):
    """Run ``code`` with ``python -c`` and return the number on the last line it prints
    (its own timing, in seconds); ``env`` defaults to this process's environment.
    The process then waits for nbgraph's background builds, if it started any."""
    out = subprocess.run([sys.executable, "-c", code + _SETTLE], capture_output=True, text=True,
                         check=True, env=dict(os.environ) if env is None else env, cwd=cwd)
    return float(out.stdout.strip().splitlines()[-1])
