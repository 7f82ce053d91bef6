"""JSON values as the OpenAPI documents (JSON Schema 2020-12) define them, for the validators."""

from __future__ import annotations

from typing import Any

__all__ = ["json_integer"]


def json_integer(value: Any) -> int | None:
    """``value`` as an int when JSON Schema calls it an integer (``3`` and ``3.0``; not ``true``, not ``3.5``),
    else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
