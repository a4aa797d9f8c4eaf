"""Command line: ``python -m nbgraph cache info|prune|clear``.

``cache info`` prints where compiled C modules are cached, how many there are,
how much space the directory takes and its limit (``NBGRAPH_CACHE_MAX_MB``);
``cache prune`` removes the least recently used modules until the directory
fits the limit (``--max-mb`` for another one) and leftovers of killed builds;
``cache clear`` removes every module (running processes keep the libraries
they loaded: files are unlinked, never rewritten).
"""

import argparse
import sys


def _size_text(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return "%d bytes" % n  # pragma: no cover


def _cache(args):
    from nbgraph.linkers.c.cache import CacheSecurityError, get_cache

    cache = get_cache(args.dir)
    if args.action == "info":
        info = cache.info()
        print("nbgraph C module cache")
        print("  location:   %s%s" % (info["directory"], "" if info["exists"] else
                                      " (not created yet)"))
        print("  entries:    %d compiled module%s" % (info["entries"],
                                                      "" if info["entries"] == 1 else "s"))
        print("  total size: %s" % _size_text(info["bytes"]))
        print("  size limit: %s" % ("none (NBGRAPH_CACHE_MAX_MB=0)" if not info["limit"] else
                                    "%s (NBGRAPH_CACHE_MAX_MB; least recently used modules "
                                    "are removed beyond it)" % _size_text(info["limit"])))
        if info["probe_records"]:
            print("  compiler probe records: %d" % info["probe_records"])
        if info["temporaries"]:
            print("  leftover temporaries: %d (removed by 'cache prune' when their process is "
                  "gone, or 'cache clear')" % info["temporaries"])
        return 0
    if args.action == "prune":
        limit = None if args.max_mb is None else int(args.max_mb * 1024 * 1024)
        try:
            done = cache.prune(limit)
        except CacheSecurityError as exc:
            print("error: %s" % exc, file=sys.stderr)
            return 1
        print("removed %d module%s (%s) and %d leftover temporar%s; %s held, limit %s" % (
            done["removed"], "" if done["removed"] == 1 else "s", _size_text(done["freed"]),
            done["temporaries"], "y" if done["temporaries"] == 1 else "ies",
            _size_text(done["bytes"]), _size_text(done["limit"]) if done["limit"] else "none"))
        return 0
    try:
        removed = cache.clear()
    except CacheSecurityError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1
    print("removed %d file%s from %s" % (removed, "" if removed == 1 else "s", cache.directory))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nbgraph",
                                     description="nbgraph command line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="inspect, prune or clear the compiled C module cache")
    cache.add_argument("action", choices=["info", "prune", "clear"])
    cache.add_argument("--max-mb", type=float, default=None,
                       help="prune: the size limit in MiB (default: NBGRAPH_CACHE_MAX_MB)")
    cache.add_argument("--dir", default=None,
                       help="cache directory (default: config.cache_dir / NBGRAPH_CACHE_DIR)")
    args = parser.parse_args(argv)
    if args.command == "cache":
        return _cache(args)
    return 2  # pragma: no cover - argparse refuses other commands


if __name__ == "__main__":
    sys.exit(main())
