"""Identifiers returned to callers."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import uuid

from vaultcore import clock

__all__ = ["message_id", "numeric_id", "uuid7", "time_ordered_uuid", "uuid_millis", "is_time_ordered"]

_last_uuid7 = (0, 0)  # (unix ms, 74-bit tail) of this process's last uuid7: the next one is greater
_uuid7_lock = threading.Lock()


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


def _layout(ms: int, tail: int, version: int) -> uuid.UUID:
    """RFC 9562 §5.7 layout: 48-bit unix ms, 4-bit version, 12 bits, 2-bit variant (0b10), 62 bits."""
    rand_a, rand_b = (tail >> 62) & 0xFFF, tail & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | version << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)


def uuid7() -> str:
    """A UUIDv7 (RFC 9562 §5.7; Python 3.11 has none): 48 bits of unix milliseconds from the platform's clock,
    then 74 random bits. Its hex form sorts chronologically, so a DynamoDB sort key made of it is newest last.

    Monotonic within the process (RFC 9562 §6.2, "monotonic random"): an id made in the same millisecond as the
    previous one (or with the clock set back, as tests do) takes the previous tail plus a random step, so ids
    from one container never sort before an earlier one's.
    """
    global _last_uuid7
    ms = int(clock.now() * 1000)
    with _uuid7_lock:
        last_ms, last_tail = _last_uuid7
        tail = secrets.randbits(74)
        if ms <= last_ms:
            ms, tail = last_ms, last_tail + 1 + secrets.randbits(32)
            if tail >> 74:  # the tail ran over (2**42 ids in one millisecond): borrow the next millisecond
                ms, tail = ms + 1, secrets.randbits(74)
        _last_uuid7 = (ms, tail)
    return str(_layout(ms, tail, 7))


def time_ordered_uuid(unix_seconds: float, name: str) -> str:
    """A deterministic time-ordered id (RFC 9562 §5.8, UUIDv8 with §5.7's layout): the 48-bit unix ms of
    ``unix_seconds``, then 74 bits of SHA-256 of ``name``. The same event always gets the same id (a retried
    write writes the same items), and the id sorts by its time as a :func:`uuid7` does."""
    tail = int.from_bytes(hashlib.sha256(name.encode()).digest()[:10], "big") >> 6
    return str(_layout(int(unix_seconds * 1000), tail, 8))


def is_time_ordered(value: str) -> bool:
    """Whether ``value`` is a :func:`uuid7` or a :func:`time_ordered_uuid` (version 7 or 8, RFC 9562 variant)."""
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return parsed.version in (7, 8) and str(parsed) == value


def uuid_millis(value: str) -> int:
    """The unix milliseconds of a time-ordered id (its first 48 bits)."""
    return uuid.UUID(value).int >> 80
