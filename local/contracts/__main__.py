"""``python -m local.contracts [--check]``: write (or check) the OpenAPI documents in ``openapi/``."""

from __future__ import annotations

import argparse
import sys

from local.contracts import OUT, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when a checked-in document is not current")
    args = parser.parse_args(argv)
    stale = []
    for name, text in generate().items():
        path = OUT / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(name)
        if not args.check:
            OUT.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"stale OpenAPI documents (run `python -m local.contracts`): {', '.join(stale)}", file=sys.stderr)
        return 1
    print(("stale: " if args.check else "written: ") + (", ".join(stale) or "none"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
