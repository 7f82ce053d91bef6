"""`make bench`: runs every bench module's main() in turn; each prints its figures as JSON."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))
    import bench

    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name.startswith("bench_"):
            module = importlib.import_module(f"bench.{info.name}")
            if hasattr(module, "main"):
                module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
