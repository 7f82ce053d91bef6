"""The ``values`` array of a tokenization request body (``[{name, value}]``, at most :data:`MAX_VALUES` entries),
and its ``omit`` mode.

Below both :mod:`vaultcore.tokens.api` (tokenize, and the dispatch of the function's other routes) and
:mod:`vaultcore.tokens.endpoints` (detokenize and the batches read the same array), so that the endpoints do not
import the module that dispatches to them.
"""

from __future__ import annotations

import re
from typing import Any

from vaultcore.api.http import Request
from vaultcore.tokens.errors import OMIT_INVALID, VALUES_ENTRY, VALUES_MISSING, TokenServiceError

__all__ = ["MAX_VALUES", "body_values", "omit_mode"]

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


_OMIT = re.compile(r"[012](\.0{1,6})?")


def omit_mode(request: Request, body: dict[str, Any]) -> int:
    """0 (answer the tokens), 1 (leave them out, keep them for one read) or 2 (answer and keep): the query's
    ``omit`` when sent (``0``, ``1`` or ``2``, or the same as a decimal: ``1.0``), else the body's boolean ``omit`` (true = 1). 3022 otherwise."""
    raw = request.query.get("omit")
    if raw is not None:
        # The original's document types omit as a number, so its generated clients may send "1.0".
        if not _OMIT.fullmatch(raw):
            raise TokenServiceError("omit must be 0, 1 or 2.", code=OMIT_INVALID)
        raw = raw[0]
        if "omit" in body and not isinstance(body["omit"], bool):
            raise TokenServiceError("omit must be true or false.", code=OMIT_INVALID)
        return int(raw)
    omit = body.get("omit", False)
    if not isinstance(omit, bool):
        raise TokenServiceError("omit must be true or false.", code=OMIT_INVALID)
    return 1 if omit else 0
