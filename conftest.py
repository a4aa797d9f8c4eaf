"""pytest set-up for the examples in nbgraph's docstrings and in README.md.

``make test`` collects them with ``--doctest-modules`` (and ``--doctest-glob``
for the Markdown files), so every example is a test.  A module whose examples
need graphviz's ``dot`` program or a C compiler says so at module level::

    __doctest_requires__ = ("dot",)      # or ("cc",), or both

and its examples are skipped, with the reason, on a machine without it (as
tests marked ``needs_dot``/``needs_cc`` are, see tests/conftest.py).  While
examples run, the C module cache is a private temporary directory, never the
user's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

#: What ``__doctest_requires__`` may name, and how to tell it is there.
REQUIREMENTS = {
    "dot": (lambda: shutil.which("dot") is not None,
            "graphviz's dot program is not installed (apt-get install graphviz)"),
    "cc": (lambda: _compiler_found(),
           "no working C compiler (apt-get install gcc libc6-dev, or set CC)"),
}


def _compiler_found() -> bool:
    from nbgraph.linkers.c.compiler import find_compiler

    return find_compiler() is not None


def _requirements_of(item: pytest.Item) -> tuple[str, ...]:
    module = getattr(getattr(item, "dtest", None), "globs", {})
    needs = module.get("__doctest_requires__", ())
    unknown = set(needs) - set(REQUIREMENTS)
    if unknown:
        raise pytest.UsageError("%s: __doctest_requires__ names %s; known: %s" % (
            item.nodeid, sorted(unknown), sorted(REQUIREMENTS)))
    return tuple(needs)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the examples of modules whose ``__doctest_requires__`` is not met."""
    present: dict[str, bool] = {}
    for item in items:
        if not isinstance(item, pytest.DoctestItem):
            continue
        for need in _requirements_of(item):
            if need not in present:
                present[need] = REQUIREMENTS[need][0]()
            if not present[need]:
                item.add_marker(pytest.mark.skip(reason=REQUIREMENTS[need][1]))


@pytest.fixture(autouse=True)
def _private_cache_for_examples(request: pytest.FixtureRequest,
                                tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Examples compile into a session-wide temporary C cache, not the user's."""
    if not isinstance(request.node, pytest.DoctestItem) or "NBGRAPH_CACHE_DIR" in os.environ:
        yield
        return
    from nbgraph.config import config

    path = _example_cache(tmp_path_factory)
    os.environ["NBGRAPH_CACHE_DIR"] = str(path)
    try:
        with config.change(cache_dir=path):
            yield
    finally:
        os.environ.pop("NBGRAPH_CACHE_DIR", None)


def _example_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp() / "nbgraph-doctest-c-cache"
    base.mkdir(mode=0o700, exist_ok=True)
    return base
