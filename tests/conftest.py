"""Shared pytest set-up for nbgraph's test suite.

Two markers (declared in pyproject.toml) let a test state what the machine must
provide; the test is skipped, with the reason shown by ``-ra``, when it does not:

``@pytest.mark.needs_dot``
    graphviz's ``dot`` program is on ``PATH``.
``@pytest.mark.needs_cc``
    a C compiler is available: ``$CC`` when set, otherwise ``cc`` or ``gcc``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import pytest

# helper modules shared by several test directories (ulps.py) live next to this file;
# --import-mode=importlib does not put it on sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

DOT_MISSING = "graphviz's dot program is not installed (apt-get install graphviz)"


def find_c_compiler() -> str | None:
    """Return the path of the C compiler to use, or None.

    ``$CC`` wins when set (its first word, so ``CC="ccache gcc"`` works);
    otherwise ``cc``, then ``gcc``, are looked up on ``PATH``.
    """
    cc = os.environ.get("CC", "").strip()
    if cc:
        try:
            words = shlex.split(cc)
        except ValueError:
            words = []
        return shutil.which(words[0]) if words else None
    return shutil.which("cc") or shutil.which("gcc")


def _cc_missing_reason() -> str:
    cc = os.environ.get("CC", "").strip()
    if cc:
        return f"no working C compiler: CC={cc!r} is not on PATH"
    return (
        "no working C compiler: neither cc nor gcc is on PATH "
        "(apt-get install gcc libc6-dev, or set CC)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests whose ``needs_dot`` / ``needs_cc`` requirement is not met."""
    skip_dot = None
    if shutil.which("dot") is None:
        skip_dot = pytest.mark.skip(reason=DOT_MISSING)
    skip_cc = None
    if find_c_compiler() is None:
        skip_cc = pytest.mark.skip(reason=_cc_missing_reason())
    for item in items:
        if skip_dot is not None and item.get_closest_marker("needs_dot") is not None:
            item.add_marker(skip_dot)
        if skip_cc is not None and item.get_closest_marker("needs_cc") is not None:
            item.add_marker(skip_cc)


@pytest.fixture(scope="session", autouse=True)
def c_cache_dir(tmp_path_factory):
    """One private C module cache for the whole test session.

    Tests never touch the user's cache, and graphs compiled by one test are
    reused by the next.  Subprocesses inherit it through NBGRAPH_CACHE_DIR.
    """
    from nbgraph.config import config

    path = tmp_path_factory.mktemp("nbgraph-c-cache")
    os.chmod(path, 0o700)
    old_env = os.environ.get("NBGRAPH_CACHE_DIR")
    os.environ["NBGRAPH_CACHE_DIR"] = str(path)
    with config.change(cache_dir=path):
        yield path
    if old_env is None:
        os.environ.pop("NBGRAPH_CACHE_DIR", None)
    else:
        os.environ["NBGRAPH_CACHE_DIR"] = old_env
