"""The OpenAPI 3.1 documents of the six APIs (docs/integrators/openapi.md; how they are kept true: docs/design/api-contracts.md), generated from the code's own tables.

``python -m local.contracts`` writes ``openapi/<api>.json``; ``python -m local.contracts --check`` exits 1 when a
checked-in document differs from what the code generates (``tests/unit/test_openapi_contracts.py`` does the same).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "openapi"
APIS = ("secure", "parser", "proxy", "gateway", "collector", "management")


def build(api: str) -> dict[str, Any]:
    import importlib

    return importlib.import_module(f"local.contracts.{api}").build()  # type: ignore[no-any-return]


def render(document: dict[str, Any]) -> str:
    """The checked-in form: two-space indents, key order as built, a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def generate() -> dict[str, str]:
    """``{file name: text}`` of every document."""
    return {f"{api}.json": render(build(api)) for api in APIS}
