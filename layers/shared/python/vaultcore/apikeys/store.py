"""API keys in the Registry table, their secrets KMS-wrapped, and the constant-time secret check.

Two items per key, both written by the (rare) management operations and never by a payment:

* ``APIKEY#<id>`` / ``KEY``: the key itself, read (strongly consistent, not cached) by every call it
  authenticates, so that disabling or deleting a key takes effect on the next call, not after a cache lifetime.
  Its partition key is the key's random id: no account's or platform's rate lands on one partition
  (tests/unit/test_capacity_keys.py);
* ``ACCOUNT#<owner>`` / ``APIKEY#<id>``: the same members without the secret, for the owner's list (one Query of
  the owner's partition, beside its ``PROFILE``).

Members: ``keyId``, ``owner`` (the account it was created on), ``label``, ``methods``, ``accounts``, ``scopes``,
``expiresAt`` (unix seconds; 0: never), ``enabled``, ``createdAt``, ``updatedAt``; ``secretWrapped`` on the first
item only. The secret (32 lowercase hex, as the original's example) is shown once, at creation, and stored only
KMS-wrapped (:func:`vaultcore.store.keys.wrap_secret`, context ``{"purpose": "api-key-secret", "keyId": <id>}``):
the HMAC scheme needs the secret itself to check a signature, so a one-way hash would not do.

Timing (issue 12): an unknown key id, a known one with a wrong secret, a disabled or expired one cost the same
work: one table read each (there is no cache to hit), and an id whose secret is not unwrapped costs the decoy KMS
Decrypt the gateway accounts use (:func:`vaultcore.gateway.accounts.even_kms`).
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from vaultcore.gateway.accounts import even_kms
from vaultcore.store import counted, registry
from vaultcore.store.keys import unwrap_secret, wrap_secret

__all__ = ["ApiKey", "KEY_ID", "KEY_PREFIX", "new_key_id", "new_secret", "read_key", "list_keys", "put_key",
           "update_key", "delete_key", "secret_matches", "signing_secret"]

KEY_PREFIX = "api_"
#: ``api_`` and 32 lowercase hex characters (the original's ``^api_[a-z-0-9]{32}$``)
KEY_ID = re.compile(r"api_[0-9a-f]{32}")
_SECRET = re.compile(r"[0-9a-f]{32}")
_KEY_SK = "KEY"
# compared against when there is no secret to compare with: the same compare_digest over the same length
_NO_SECRET = b"\x00" * 32


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    owner: str  # the account the key was created on (its list, its management)
    label: str
    methods: tuple[str, ...]
    accounts: tuple[str, ...]  # the accounts it may act on (the owner's when created without)
    scopes: tuple[str, ...]
    expires_at: int  # unix seconds; 0: never
    enabled: bool
    created_at: int
    secret_wrapped: dict[str, str] | None = None

    def expired(self, now: float) -> bool:
        return bool(self.expires_at) and now >= self.expires_at

    def allows_method(self, method: str) -> bool:
        """``method`` is ``BASIC`` or ``HMAC``; ``ALL`` allows both."""
        return method in self.methods or "ALL" in self.methods

    def reaches(self, account_id: str | None) -> bool:
        return account_id in self.accounts

    def view(self) -> dict[str, Any]:
        """The original's ``ApiKey`` (no secret; ``expiresAt`` only when the key expires)."""
        from datetime import UTC, datetime

        out: dict[str, Any] = {"id": self.key_id, "label": self.label, "methods": list(self.methods),
                               "accounts": list(self.accounts), "scopes": list(self.scopes), "enabled": self.enabled}
        if self.expires_at:
            out["expiresAt"] = datetime.fromtimestamp(self.expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return out


def _context(key_id: str) -> dict[str, str]:
    return {"purpose": "api-key-secret", "keyId": key_id}


def new_key_id() -> str:
    return KEY_PREFIX + secrets.token_hex(16)


def new_secret() -> str:
    return secrets.token_hex(16)


def _from_item(item: dict[str, Any]) -> ApiKey:
    return ApiKey(key_id=item["keyId"], owner=item["owner"], label=item["label"],
                  methods=tuple(item.get("methods") or ()), accounts=tuple(item.get("accounts") or ()),
                  scopes=tuple(item.get("scopes") or ()), expires_at=int(item.get("expiresAt") or 0),
                  enabled=bool(item.get("enabled")), created_at=int(item.get("createdAt") or 0),
                  secret_wrapped=item.get("secretWrapped") or None)


def _members(key: ApiKey, now: int) -> dict[str, Any]:
    return {"type": "api-key", "keyId": key.key_id, "owner": key.owner, "label": key.label,
            "methods": list(key.methods), "accounts": list(key.accounts), "scopes": list(key.scopes),
            "expiresAt": key.expires_at, "enabled": key.enabled, "createdAt": key.created_at, "updatedAt": now}


def read_key(key_id: str) -> ApiKey | None:
    """The key (strongly consistent: a change is seen by the next call), or None. One GetItem."""
    item = registry.get(f"APIKEY#{key_id}", _KEY_SK, consistent=True)
    return _from_item(item) if item is not None else None


def list_keys(owner: str) -> list[ApiKey]:
    """The owner's keys, oldest first (the list copies: no secret)."""
    items = registry.query_prefix(f"ACCOUNT#{owner}", "APIKEY#")
    return sorted((_from_item(i) for i in items), key=lambda k: (k.created_at, k.key_id))


def put_key(key: ApiKey, secret: str, now: int, limit: int) -> ApiKey:
    """Store a new key; its secret wrapped. Raises registry.ConditionFailed if the id exists (drawn again),
    :class:`vaultcore.store.counted.LimitReached` when the owner has ``limit`` keys."""
    wrapped = wrap_secret(secret.encode("ascii"), _context(key.key_id))
    members = _members(key, now)
    # the key, its list copy and the account's key count in one transaction: a key exists with its copy or not at
    # all, and MAX_KEYS holds under concurrent creations (vaultcore.store.counted)
    owner_pk = f"ACCOUNT#{key.owner}"
    counted.put_counted([{"pk": f"APIKEY#{key.key_id}", "sk": _KEY_SK, **members, "secretWrapped": wrapped},
                         {"pk": owner_pk, "sk": f"APIKEY#{key.key_id}", **members}],
                        pk=owner_pk, prefix="APIKEY#", limit=limit,
                        count_existing=lambda: len(registry.query_prefix(owner_pk, "APIKEY#", limit=10**6)))
    return _from_item({**members, "secretWrapped": wrapped})


def update_key(key: ApiKey, now: int) -> ApiKey:
    """Write ``key``'s members (not its secret) to both items; the key item first (it is what authenticates)."""
    members = _members(key, now)
    fields = {k: v for k, v in members.items() if k not in ("type", "keyId", "owner", "createdAt")}
    item = registry.update_fields(f"APIKEY#{key.key_id}", _KEY_SK, fields, expected={"owner": key.owner})
    registry.put({"pk": f"ACCOUNT#{key.owner}", "sk": f"APIKEY#{key.key_id}", **members})
    return _from_item(item)


def delete_key(key: ApiKey) -> None:
    """Remove both items and count one key less, in one transaction (from then on it authenticates nothing)."""
    counted.delete_counted([(f"APIKEY#{key.key_id}", _KEY_SK), (f"ACCOUNT#{key.owner}", f"APIKEY#{key.key_id}")],
                           pk=f"ACCOUNT#{key.owner}", prefix="APIKEY#")


def signing_secret(key: ApiKey | None, key_id: str) -> bytes:
    """The key's secret (unwrapped; cached per container by vaultcore.store.keys), or, for no key, a stand-in
    after the same KMS cost (a decoy Decrypt once per id and cache lifetime), so that time does not tell."""
    if key is not None and key.secret_wrapped is not None:
        return unwrap_secret(key.secret_wrapped, _context(key.key_id))
    even_kms(key_id)
    return _NO_SECRET


def secret_matches(key: ApiKey | None, key_id: str, presented: str) -> bool:
    """Whether ``presented`` is the key's secret: one constant-time comparison whatever the key's state."""
    stored = signing_secret(key, key_id)
    given = presented.encode("utf-8", "replace") if _SECRET.fullmatch(presented) else b"\xff" * 32
    return hmac.compare_digest(given, stored) and stored is not _NO_SECRET
