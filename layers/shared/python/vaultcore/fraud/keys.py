"""The stack's card fingerprint key: HMAC-SHA-256 keys for fingerprints of card numbers and devices.

PCI DSS 3.5.1 allows a PAN to be rendered unreadable by a *keyed* cryptographic hash of the entire PAN; an
unkeyed hash of a 16-digit number is brute-forced in minutes. The key is 32 random bytes, created on first use
and stored KMS-wrapped in the Registry (``FRAUD#KEY`` / ``FINGERPRINT``, context ``{purpose:
fraud-fingerprint}``); two containers racing to create it settle on one with a conditional put. Fingerprints
are used only inside this stack (velocity and cards-per-device counts), so the key never leaves it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from vaultcore.store import registry
from vaultcore.store.keys import unwrap_secret, wrap_secret

__all__ = ["fingerprint", "reset_caches"]

_CONTEXT = {"purpose": "fraud-fingerprint"}
_key: bytes | None = None


def reset_caches() -> None:
    global _key
    _key = None


def _fingerprint_key() -> bytes:
    global _key
    if _key is not None:
        return _key
    item = registry.get("FRAUD#KEY", "FINGERPRINT", consistent=True)
    if item is None:
        candidate = secrets.token_bytes(32)
        try:
            registry.put_new({"pk": "FRAUD#KEY", "sk": "FINGERPRINT", "secret": wrap_secret(candidate, _CONTEXT)})
            _key = candidate
            return _key
        except registry.ConditionFailed:
            item = registry.get("FRAUD#KEY", "FINGERPRINT", consistent=True)
    assert item is not None
    _key = unwrap_secret(item["secret"], _CONTEXT)
    return _key


def fingerprint(purpose: str, value: str) -> str:
    """HMAC-SHA-256(key, purpose || 0x00 || value), 32 hex characters (128 bits: collisions are negligible)."""
    message = purpose.encode("ascii") + b"\x00" + value.encode("utf-8")
    return hmac.new(_fingerprint_key(), message, hashlib.sha256).hexdigest()[:32]
