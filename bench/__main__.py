"""Entry point for ``python -m bench`` (``make bench``).

Prints, for each case, nbgraph's time, NumPy's time and their ratio (and
numexpr's when it is installed).  Timings are the best of several repeats.
"""

import argparse
import sys

from bench.cases import CASES, HEADER, run_case


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("-k", default="", help="run only cases whose name contains this")
    parser.add_argument("--linker", default=None, help="linker to benchmark (default: config)")
    args = parser.parse_args(argv)
    print(HEADER)
    print("-" * len(HEADER))
    for case in CASES:
        if args.k and args.k not in case.name:
            continue
        row = run_case(case, args.linker)
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
