"""Identifiers returned to callers."""

from __future__ import annotations

import secrets
import time

__all__ = ["message_id", "numeric_id"]


def message_id() -> str:
    """25 numeric characters, unique per response (spec Limits): 13 digits of milliseconds, 12 random digits.

    The time prefix makes ids sortable in logs; 12 random digits (about 40 bits) per millisecond make a
    collision between two containers answering in the same millisecond negligible.
    """
    return f"{int(time.time() * 1000):013d}{secrets.randbelow(10**12):012d}"


def numeric_id(digits: int) -> str:
    """A random numeric id with no leading zero (account ids, transaction ids)."""
    first = str(secrets.randbelow(9) + 1)
    return first + "".join(str(secrets.randbelow(10)) for _ in range(digits - 1))
