"""The ``values`` array of a tokenization request body: ``[{name, value}]``, at most :data:`MAX_VALUES` entries.

Below both :mod:`vaultcore.tokens.api` (tokenize, and the dispatch of the function's other routes) and
:mod:`vaultcore.tokens.endpoints` (detokenize and the batches read the same array), so that the endpoints do not
import the module that dispatches to them.
"""

from __future__ import annotations

from typing import Any

from vaultcore.tokens.errors import VALUES_ENTRY, VALUES_MISSING, TokenServiceError

__all__ = ["MAX_VALUES", "body_values"]

MAX_VALUES = 64


def body_values(raw: Any, required: bool) -> list[tuple[str, str]]:
    """``(name, value)`` pairs of a body's ``values``; an absent array is no pairs unless ``required``."""
    if raw is None and not required:
        return []
    if not isinstance(raw, list) or (required and not raw):
        raise TokenServiceError("values must be a non-empty array of {name, value} objects.", code=VALUES_MISSING)
    if len(raw) > MAX_VALUES:
        raise TokenServiceError(f"values may hold at most {MAX_VALUES} entries.", code=VALUES_MISSING)
    pairs = []
    for i, entry in enumerate(raw):
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str)):
            raise TokenServiceError(f"values[{i}] must be an object with a string name and a string value.",
                                    code=VALUES_ENTRY)
        pairs.append((entry["name"], entry["value"]))
    return pairs
