"""Re-execute the tutorial notebooks in fresh kernels and store their outputs.

Usage (from the repository root)::

    .venv/bin/python notebooks/_build.py                 # every notebooks/NN_*.ipynb
    .venv/bin/python notebooks/_build.py 03 05           # some (name, prefix or path)

Each notebook is run top to bottom in a new ``python3`` kernel of the current
environment, with ``notebooks/`` as its working directory (as nbval runs it).
Old outputs are dropped first, the kernelspec metadata is normalised, and the
notebook is written back only if no cell raised: a cell that fails is
reported (cell number and error) and the file on disk is left untouched.
A written notebook is signed (trusted) in this user's notebook-signature
database; ``make lab`` trusts the stored tutorials on any other machine.

Run it after changing a notebook or after a library change that alters what
the notebooks print, then check with ``make test`` (nbval compares the stored
text outputs with a fresh run).
"""

import argparse
import pathlib
import sys
import time

import nbformat
from nbformat.sign import NotebookNotary
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = pathlib.Path(__file__).resolve().parent

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def notebook_paths(names):
    """The notebooks named on the command line, or all tutorials in order."""
    if not names:
        return sorted(HERE.glob("[0-9][0-9]_*.ipynb"))
    paths = []
    for name in names:
        path = pathlib.Path(name)
        if not path.suffix:
            path = path.with_suffix(".ipynb")
        if not path.exists():
            path = HERE / path.name
        if not path.exists():
            matches = sorted(HERE.glob(pathlib.Path(name).name + "*.ipynb"))
            if len(matches) != 1:
                raise SystemExit("no single notebook matching %s in %s" % (name, HERE))
            path = matches[0]
        paths.append(path.resolve())
    return paths


def clear_outputs(nb):
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def execute(path, timeout):
    """Run one notebook; return (ok, seconds)."""
    nb = nbformat.read(str(path), as_version=4)
    clear_outputs(nb)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(HERE)}},
                            record_timing=False, store_widget_state=True,
                            coalesce_streams=True)
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as exc:
        print("FAILED %s:\n%s" % (path.name, exc), file=sys.stderr)
        return False, time.perf_counter() - start
    seconds = time.perf_counter() - start
    nbformat.validate(nb)
    NotebookNotary().sign(nb)  # trusted here: its pictures show when opened in Lab
    nbformat.write(nb, str(path))
    return True, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="names or paths (default: all)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    args = parser.parse_args(argv)
    failed = 0
    for path in notebook_paths(args.notebooks):
        ok, seconds = execute(path, args.timeout)
        print("%-6s %-32s %5.1f s" % ("ok" if ok else "FAILED", path.name, seconds))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
