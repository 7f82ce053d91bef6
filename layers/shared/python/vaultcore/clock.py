"""The platform's clock. One seam so tests can move time (token read windows, nonce and timestamp windows)."""

from __future__ import annotations

import time

__all__ = ["now", "set_offset", "offset"]

_offset_seconds = 0.0


def now() -> float:
    """Unix time in seconds, shifted by the test offset (always 0 in a deployed stack)."""
    return time.time() + _offset_seconds


def set_offset(seconds: float) -> None:
    global _offset_seconds
    _offset_seconds = float(seconds)


def offset() -> float:
    return _offset_seconds
