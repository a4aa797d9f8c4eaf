"""Share of nbgraph's functions that carry complete type annotations.

A function counts as *annotated* when it has a return annotation and every
parameter other than a leading ``self``/``cls`` has one.  A function is
*public* when its own name and the names of every enclosing class and module
do not start with an underscore (``__init__`` of a public class counts as
public: it is the constructor's signature); functions nested inside other
functions are not counted.

Run from the repository root::

    python tools/annotated_share.py [PACKAGE_DIR ...]      # default: nbgraph
    python tools/annotated_share.py --by-package nbgraph

Prints ``annotated/total (percent)`` for public functions and for all
functions, overall and, with ``--by-package``, per sub-package.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FunctionInfo", "functions_in", "is_annotated", "main", "share"]


@dataclass(frozen=True)
class FunctionInfo:
    """One ``def`` found in a module: where it is, and whether it is public and annotated."""

    path: Path
    qualname: str
    public: bool
    annotated: bool


def is_annotated(node: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> bool:
    """True when ``node`` annotates its return and every parameter but a method's first."""
    if node.returns is None:
        return False
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if method and positional and not _is_staticmethod(node):
        positional = positional[1:]
    params = [*positional, *args.kwonlyargs]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    return all(p.annotation is not None for p in params)


def _is_staticmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _module_is_public(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).with_suffix("").parts
    return not any(p.startswith("_") and p != "__init__" for p in parts)


def _name_is_public(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def functions_in(path: Path, root: Path) -> Iterator[FunctionInfo]:
    """Every module-level function and class method of the file at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_public = _module_is_public(path, root)

    def walk(body: list[ast.stmt], prefix: str, public: bool, in_class: bool) -> Iterator[FunctionInfo]:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                yield FunctionInfo(
                    path,
                    prefix + stmt.name,
                    public and _name_is_public(stmt.name),
                    is_annotated(stmt, method=in_class),
                )
            elif isinstance(stmt, ast.ClassDef):
                yield from walk(
                    stmt.body,
                    f"{prefix}{stmt.name}.",
                    public and not stmt.name.startswith("_"),
                    True,
                )
            elif isinstance(stmt, ast.If | ast.Try):
                # definitions under `if TYPE_CHECKING:` or `try: ... except ImportError:`
                for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
                    yield from walk(block, prefix, public, in_class)

    yield from walk(tree.body, "", module_public, False)


def share(infos: list[FunctionInfo]) -> tuple[int, int]:
    """(annotated, total) over ``infos``."""
    return sum(i.annotated for i in infos), len(infos)


def _fmt(annotated: int, total: int) -> str:
    pct = 100.0 * annotated / total if total else 0.0
    return f"{annotated}/{total} ({pct:.1f}%)"


def main(argv: list[str] | None = None) -> int:
    """Print the annotated shares of the given package directories."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=["nbgraph"])
    parser.add_argument("--by-package", action="store_true", help="one line per sub-package too")
    opts = parser.parse_args(argv)
    for package in opts.packages:
        root = Path(package).resolve()
        infos = [f for p in sorted(root.rglob("*.py")) for f in functions_in(p, root.parent)]
        public = [i for i in infos if i.public]
        print(f"{package}: public {_fmt(*share(public))}; all {_fmt(*share(infos))}")
        if opts.by_package:
            groups: dict[str, list[FunctionInfo]] = {}
            for info in infos:
                rel = info.path.relative_to(root).parts
                groups.setdefault(rel[0] if len(rel) > 1 else "(top level)", []).append(info)
            for name, group in sorted(groups.items()):
                pub = [i for i in group if i.public]
                print(f"  {name:14s} public {_fmt(*share(pub))}; all {_fmt(*share(group))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
