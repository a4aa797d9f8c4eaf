"""Entry point for ``python -m bench``."""


def main() -> int:
    print("no benchmarks yet")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
