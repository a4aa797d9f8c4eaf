"""Set-up for tests/core: makes the shared toy Types and Ops importable.

pytest runs with ``--import-mode=importlib``, which does not put test
directories on ``sys.path``; the helper module ``core_toys`` lives next to
this file, so this directory is added once here.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
