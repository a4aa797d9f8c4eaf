"""Fail when a module of the package imports another module's underscore name.

``from nbgraph.x import _helper`` couples a module to another's private detail
(issue 19, item 7): make the name public (and document it) or move it.  Private
*modules* (``from nbgraph.linkers.c import _ffi``) and dunders are allowed, and
so is binding a public name to a private alias (``import ... as _x``).

Run from the repository root: ``python tools/check_private_imports.py nbgraph``.
Prints one line per finding and exits 1 when there is any.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["findings", "main"]


def _module_of(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _resolve(node: ast.ImportFrom, path: Path, root: Path) -> list[str] | None:
    """The dotted module an import reads from, as parts (None outside the package)."""
    if node.level:
        here = _module_of(path, root)
        package = here if path.name == "__init__.py" else here[:-1]
        base = package[:len(package) - node.level + 1]
        return base + (node.module.split(".") if node.module else [])
    if node.module and node.module.split(".")[0] == root.name:
        return node.module.split(".")
    return None


def _is_module(parts: list[str], root: Path) -> bool:
    target = root.parent.joinpath(*parts)
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def findings(root: Path) -> list[str]:
    """``path:line: name from module`` for every private name imported across modules."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = _resolve(node, path, root)
            if module is None:
                continue
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if _is_module(module + [name], root):
                    continue
                found.append("%s:%d: %s imported from %s" % (
                    path, node.lineno, name, ".".join(module)))
    return found


def main(argv: list[str]) -> int:
    """Check each package directory in ``argv``; 1 when anything is found."""
    found = [f for package in argv or ["nbgraph"] for f in findings(Path(package).resolve())]
    for line in found:
        print(line)
    if found:
        print("%d private name(s) imported across modules: make them public or move them"
              % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
