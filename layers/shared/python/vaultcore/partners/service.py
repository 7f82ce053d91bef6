"""Partners: creation, lookup (cached per container), credential checks and key rotation.

Credentials at rest:
- the partner key is stored only as its SHA-256 (it is 256 bits of randomness, so a fast hash is enough and
  a leaked table reveals no usable key);
- the HMAC shared key must be recoverable to verify signatures, so it is stored KMS-wrapped.
Rotation keeps the previous credential valid for an overlap window (default 24 hours) so partners can
roll out the new one without downtime; both checks are constant-time.

:class:`Partner` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.errors import Conflict, NotFound, ValidationError
from vaultcore.lazy_re import lazy
from vaultcore.plain import Frozen, init
from vaultcore.settings import settings
from vaultcore.store import registry
from vaultcore.store.keys import unwrap_secret, wrap_secret

__all__ = ["Partner", "create_partner", "load_partner", "get_partner", "set_partner_status", "rotate_credential",
           "partner_key_matches", "hmac_keys_of", "hmac_signing_keys", "DEFAULT_OVERLAP_SECONDS", "API_SECURITY",
           "default_api_security",
           "invalidate_partner", "issued_hmac_key", "lookup_partner"]

DEFAULT_OVERLAP_SECONDS = 24 * 3600
API_SECURITY = ("key", "hmac")


def default_api_security() -> str:
    """The API security of a partner created without ``apiSecurity``.

    In production ``hmac``: HMAC is the scheme the original platform requires in production (public facts), and
    the stronger one (a header is usable once and signs the body). In the cert environment ``key`` (Basic
    ``partnerId:partnerKey``, HMAC, and the body credentials where an endpoint takes them): that is how the
    original onboards partners for integration, and its published tokenization and Decryptx clients send Basic or
    body credentials and cannot sign, so a partner moving over would otherwise get 1003 on every call. Either is
    set explicitly with ``apiSecurity`` (docs/operators/onboarding.md)."""
    return "key" if settings().is_cert else "hmac"
PARTNER_ID = lazy(r"[A-Za-z0-9]{3,40}")  # ASCII letters and digits (the management API's document)
PARTNER_NAME_TEXT = lazy(r"\S")  # a name is 1 to 100 characters, not only white space
_cache: ContainerCache[Partner] = ContainerCache("record_cache_seconds", max_items=2048)


class Partner(Frozen):
    __slots__ = ("partner_id", "name", "api_security", "status", "key_hashes", "hmac_keys", "permissions")
    partner_id: str
    name: str
    api_security: str
    status: str
    key_hashes: list[dict[str, Any]]
    hmac_keys: list[dict[str, Any]]
    #: Permissions set through the management API (issue 21): ``detokenize`` (off unless set) lets the partner
    #: reveal values through the secure API's detokenize endpoints, for templates whose accessMode allows it.
    permissions: dict[str, Any]

    def __init__(self, partner_id: str, name: str, api_security: str, status: str,
                 key_hashes: list[dict[str, Any]] | None = None, hmac_keys: list[dict[str, Any]] | None = None,
                 permissions: dict[str, Any] | None = None) -> None:
        init(self, partner_id=partner_id, name=name, api_security=api_security, status=status,
             key_hashes=[] if key_hashes is None else key_hashes, hmac_keys=[] if hmac_keys is None else hmac_keys,
             permissions={} if permissions is None else permissions)

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def may_detokenize(self) -> bool:
        return self.permissions.get("detokenize") is True

    def public_view(self) -> dict[str, Any]:
        return {"partnerId": self.partner_id, "name": self.name, "apiSecurity": self.api_security,
                "status": self.status,
                "hmacKeyVersions": [k["v"] for k in self.hmac_keys],
                "credentialsExpiring": [c.get("notAfter") for c in self.key_hashes + self.hmac_keys
                                        if c.get("notAfter")]}


def invalidate_partner(partner_id: str) -> None:
    _cache.invalidate(partner_id)


def _from_item(item: dict[str, Any]) -> Partner:
    return Partner(partner_id=item["partnerId"], name=item.get("name", ""), api_security=item["apiSecurity"],
                   status=item.get("status", "active"), key_hashes=list(item.get("keyHashes", [])),
                   hmac_keys=list(item.get("hmacKeys", [])),
                   permissions=dict(item.get("permissions") or {}))


def _hash_key(partner_key: str) -> str:
    return hashlib.sha256(partner_key.encode("utf-8")).hexdigest()


def _new_partner_key() -> str:
    return secrets.token_urlsafe(32)


def _new_hmac_secret() -> bytes:
    # 32 random bytes as 64 hex characters: the decoded form of hmacKey is printable, so it can also be
    # written into a proxy configuration's hmac `secret` (spec: "the Base64-decoded key").
    return secrets.token_hex(32).encode("ascii")


def issued_hmac_key(stored_secret: bytes) -> str:
    """The ``hmacKey`` text a partner receives: base64 of the stored secret. Partners sign with this text,
    byte for byte (spec, Authentication: "keyed with the shared key"); its base64-decoded form (the stored
    secret) is what a proxy configuration's ``hmac.secret`` holds (spec: "the Base64-decoded key")."""
    return base64.b64encode(stored_secret).decode("ascii")


def _wrap_hmac(partner_id: str, version: int, secret: bytes) -> dict[str, Any]:
    return {"v": version, "env": wrap_secret(secret, {"purpose": "partner-hmac", "partnerId": partner_id})}


def create_partner(name: str | None, api_security: str, partner_id: str | None = None) -> dict[str, Any]:
    if not isinstance(name, str) or not PARTNER_NAME_TEXT.search(name) or len(name) > 100:
        raise ValidationError("name is required (1 to 100 characters, not only white space).")
    if not isinstance(api_security, str) or api_security not in API_SECURITY:
        raise ValidationError("apiSecurity must be 'key' or 'hmac'.")
    if partner_id is not None and (not isinstance(partner_id, str) or not PARTNER_ID.fullmatch(partner_id)):
        raise ValidationError("partnerId must be 3 to 40 letters or digits.")
    partner_id = partner_id or "p" + secrets.token_hex(8)
    partner_key = _new_partner_key()
    hmac_secret = _new_hmac_secret()
    item = {"pk": f"PARTNER#{partner_id}", "sk": "PROFILE", "type": "partner", "partnerId": partner_id,
            "name": name.strip(), "apiSecurity": api_security, "status": "active",
            "keyHashes": [{"h": _hash_key(partner_key)}], "hmacKeys": [_wrap_hmac(partner_id, 1, hmac_secret)],
            "createdAt": int(clock.now())}
    try:
        registry.put_new(item)
    except registry.ConditionFailed as exc:
        raise Conflict("A partner with this partnerId already exists.") from exc
    return {"partnerId": partner_id, "name": name.strip(), "partnerKey": partner_key,
            "hmacKey": issued_hmac_key(hmac_secret), "apiSecurity": api_security, "status": "active"}


def load_partner(partner_id: str) -> Partner | None:
    """The partner, cached per container for RECORD_CACHE_SECONDS; None when unknown."""
    return lookup_partner(partner_id)[0]


def lookup_partner(partner_id: str, *, cached: bool = True) -> tuple[Partner | None, bool]:
    """The partner (or None) and whether the table was read to answer (False on a cache hit).

    Unknown ids are not cached (a partner created a moment later must work at once in every container); the
    authenticator evens out the time of the two cases instead (auth.authenticator._Attempt).
    """
    if not isinstance(partner_id, str) or not partner_id or len(partner_id) > 64:
        return None, False
    hit = _cache.get(partner_id) if cached else None
    if hit is not None:
        return hit, False
    item = registry.get(f"PARTNER#{partner_id}", "PROFILE")
    if item is None:
        return None, True
    partner = _from_item(item)
    if cached:
        _cache.put(partner_id, partner)
    return partner, True


def get_partner(partner_id: str) -> Partner:
    item = registry.get(f"PARTNER#{partner_id}", "PROFILE", consistent=True)
    if item is None:
        raise NotFound("Partner not found.")
    return _from_item(item)


def set_partner_status(partner_id: str, status: str) -> Partner:
    if status not in ("active", "disabled"):
        raise ValidationError("status must be 'active' or 'disabled'.")
    try:
        item = registry.update_fields(f"PARTNER#{partner_id}", "PROFILE", {"status": status})
    except registry.ConditionFailed as exc:
        raise NotFound("Partner not found.") from exc
    invalidate_partner(partner_id)
    return _from_item(item)


PERMISSIONS = ("detokenize",)


def partner_permissions(partner: Partner) -> dict[str, Any]:
    """The partner's permissions as the management API shows them (every known one, false unless set)."""
    return {"partnerId": partner.partner_id, "permissions": {p: partner.permissions.get(p) is True
                                                            for p in PERMISSIONS}}


def set_partner_permissions(partner_id: str, changes: dict[str, Any]) -> Partner:
    """Merge ``changes`` (permission name -> boolean) into the partner's permissions.

    Other containers see the change within RECORD_CACHE_SECONDS (their cached partner record expires); this one
    at once.
    """
    unknown = sorted(set(changes) - set(PERMISSIONS))
    if unknown:
        raise ValidationError(f"unknown permission {unknown[0][:64]!r} (known: {', '.join(PERMISSIONS)}).")
    for name, value in changes.items():
        if not isinstance(value, bool):
            raise ValidationError(f"{name} must be true or false.")
    current = get_partner(partner_id)
    merged = {**current.permissions, **changes}
    try:
        item = registry.update_fields(f"PARTNER#{partner_id}", "PROFILE", {"permissions": merged})
    except registry.ConditionFailed as exc:
        raise NotFound("Partner not found.") from exc
    invalidate_partner(partner_id)
    return _from_item(item)


def _live(credentials: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    return [c for c in credentials if not c.get("notAfter") or c["notAfter"] > now]


def rotate_credential(partner_id: str, kind: str, overlap_seconds: int = DEFAULT_OVERLAP_SECONDS) -> dict[str, Any]:
    """Issue a new partner key or HMAC key; the previous one stays valid for ``overlap_seconds``."""
    if kind not in ("partnerKey", "hmacKey"):
        raise ValidationError("kind must be 'partnerKey' or 'hmacKey'.")
    from vaultcore.api.values import json_integer

    overlap = json_integer(overlap_seconds)
    if overlap is None or not 0 <= overlap <= 30 * 86400:
        raise ValidationError("overlapSeconds must be an integer from 0 to 2592000.")
    overlap_seconds = overlap
    partner = get_partner(partner_id)
    now = clock.now()
    not_after = int(now) + overlap_seconds
    result: dict[str, Any] = {"partnerId": partner_id, "previousValidUntil": not_after}
    if kind == "partnerKey":
        new_key = _new_partner_key()
        old = [{**c, "notAfter": min(c.get("notAfter") or not_after, not_after)} for c in _live(partner.key_hashes, now)]
        fields = {"keyHashes": [{"h": _hash_key(new_key)}] + old}
        result["partnerKey"] = new_key
    else:
        secret = _new_hmac_secret()
        version = max((k["v"] for k in partner.hmac_keys), default=0) + 1
        old = [{**k, "notAfter": min(k.get("notAfter") or not_after, not_after)} for k in _live(partner.hmac_keys, now)]
        fields = {"hmacKeys": [_wrap_hmac(partner_id, version, secret)] + old}
        result["hmacKey"] = issued_hmac_key(secret)
        result["hmacKeyVersion"] = version
    registry.update_fields(f"PARTNER#{partner_id}", "PROFILE", fields)
    invalidate_partner(partner_id)
    return result


def partner_key_matches(partner: Partner, partner_key: str) -> bool:
    if not isinstance(partner_key, str) or not partner_key or len(partner_key) > 256:
        return False
    given = _hash_key(partner_key).encode()
    now = clock.now()
    ok = False
    for cred in _live(partner.key_hashes, now):
        ok |= hmac.compare_digest(given, cred["h"].encode())  # no early exit: time does not depend on position
    return ok


def hmac_signing_keys(partner: Partner) -> list[tuple[str, bytes]]:
    """Every key a signature of this partner is checked against: for each live HMAC key, the issued form
    and (while the migration is on) the legacy decoded form, labelled ``issued`` / ``decoded``."""
    from vaultcore.auth.hmac_scheme import accepted_key_forms

    accept_decoded = settings().hmac_accept_decoded_key
    return [form for secret in hmac_keys_of(partner)
            for form in accepted_key_forms(issued_hmac_key(secret).encode("ascii"), accept_decoded=accept_decoded)]


def hmac_keys_of(partner: Partner) -> list[bytes]:
    """The partner's live HMAC keys (current first), unwrapped through the per-container key cache."""
    now = clock.now()
    return [unwrap_secret(k["env"], {"purpose": "partner-hmac", "partnerId": partner.partner_id})
            for k in _live(partner.hmac_keys, now)]
