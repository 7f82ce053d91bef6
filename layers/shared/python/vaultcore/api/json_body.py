"""A request body as JSON, within the input gate's structural caps (issue 12: no 500 for any input).

Below both :mod:`vaultcore.api.http` (``Request.json()`` parses on demand, once) and :mod:`vaultcore.api.gate`
(which asks for that parse before any route runs): the caps and the refusal are the gate's rules, and they live
here so that the request type needs nothing from the gate that checks it.
"""

from __future__ import annotations

import json
from typing import Any

from vaultcore.errors import ValidationError
from vaultcore.net.payloads import find_lone_surrogate, json_depth

__all__ = ["InputRejected", "load_json", "MAX_JSON_DEPTH", "MAX_JSON_ARRAY", "MAX_JSON_MEMBERS"]

MAX_JSON_DEPTH = 32
MAX_JSON_ARRAY = 10_000
MAX_JSON_MEMBERS = 1_000


class InputRejected(ValidationError):
    """A request refused at the edge. ``kind`` is ``text`` (encoding) or ``limit`` (a size or structure cap)."""

    code = 1006
    status = 400

    def __init__(self, message: str, kind: str = "limit") -> None:
        super().__init__(message)
        self.kind = kind


def load_json(body: bytes) -> Any:
    """The body as JSON; None when it is empty or not JSON (the route answers that with its own code).

    Raises :class:`InputRejected` for JSON that is over a structural cap or holds a lone surrogate, which a
    route could otherwise choke on (RecursionError, UnicodeEncodeError on storing or forwarding).
    """
    if not body.strip():
        return None
    try:
        text = body.decode("utf-8")  # strict: RFC 8259 §8.1
    except UnicodeDecodeError:
        return None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise InputRejected(f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels.")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            if len(node) > MAX_JSON_ARRAY:
                raise InputRejected(f"A JSON array has more than {MAX_JSON_ARRAY} items.")
            stack.extend(child for child in node if isinstance(child, list | dict))
        elif isinstance(node, dict):
            if len(node) > MAX_JSON_MEMBERS:
                raise InputRejected(f"A JSON object has more than {MAX_JSON_MEMBERS} members.")
            stack.extend(child for child in node.values() if isinstance(child, list | dict))
    if b"\\u" in body and find_lone_surrogate(value):
        raise InputRejected("The JSON body holds a string that is not valid UTF-8 text (a lone surrogate).", "text")
    return value
