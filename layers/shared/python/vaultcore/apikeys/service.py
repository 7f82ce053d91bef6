"""API keys: create, list, read, change, delete, with the original's members and validation.

Members (the original's ``CreateApiKeyRequest`` / ``UpdateApiKeyRequest``; anything else is refused, as its
``additionalProperties: false``):

* ``label`` (required at creation): the original's pattern ``^[0-9a-zA-z-_\\s]{3,100}$``;
* ``methods``: ``HMAC``, ``BASIC``, ``ALL`` (how the key may authenticate, :mod:`vaultcore.v4.auth`); default
  ``["ALL"]``;
* ``accounts``: the accounts (12 digits) the key may act on; default the account it is created on;
* ``scopes`` (required at creation, at least one): names of :mod:`.catalog`, wildcards included;
* ``expiresAt`` (RFC 3339 date-time, in the future; null: never) takes precedence over ``expiresIn``
  (``"<n> <unit>"``, unit second, minute, hour, day, week, month (30 days) or year (365 days), singular or
  plural: the original's pattern); neither: the key never expires;
* ``enabled``: default true.

Never more than the caller (the issue's rule, PCI DSS 7.2 least privilege): every scope a key is given must be
allowed by the calling key's own scopes (:func:`vaultcore.v4.auth.grants`: ``pcx:iframe:*`` may give
``pcx:iframe:read`` and ``pcx:iframe:*``, not ``pcx:payments:read``) and every account must be one the calling
key may act on; otherwise 403 naming the scope or account. A key may change or delete only a key it covers
(whose scopes and accounts it could have given), so a narrow key can neither widen, extend nor revoke a broader
one. A key that expires gives no expiry later than its own (none, at creation, is refused too): neither to a key
it creates nor, by PATCH, to one it changes, itself included. Reading and listing show no secret, and need only ``pcx:api_key:read``.

Sub-accounts: this platform has no account hierarchy; the account's own ``api_accesskey`` acts on its own account
only, so every key's ``accounts`` is, today, the account it belongs to. The member is kept and checked on every
call (the path's account must be one of them), so that a hierarchy needs no change to keys.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from vaultcore import clock
from vaultcore.apikeys import catalog
from vaultcore.apikeys.store import (
    KEY_ID,
    ApiKey,
    delete_key,
    list_keys,
    new_key_id,
    new_secret,
    put_key,
    read_key,
    update_key,
)
from vaultcore.cards.masking import holds_pan_in_any_form
from vaultcore.errors import Conflict, NotFound
from vaultcore.store import counted, registry
from vaultcore.v4.auth import Principal, grants
from vaultcore.v4.errors import AccountNotAllowed, MemberInvalid, ScopeMissing

__all__ = ["create", "list_for", "get", "patch", "delete", "METHODS", "MAX_KEYS", "parse_expires_in"]

METHODS = ("HMAC", "BASIC", "ALL")
MAX_KEYS = 100  # keys per account: one page of the original's list (its largest `limit`)
_CREATE = frozenset({"label", "methods", "accounts", "scopes", "expiresIn", "expiresAt", "enabled"})
_UPDATE = _CREATE
# The original's label pattern, ^[0-9a-zA-z-_\s]{3,100}$, spelt out: its A-z range holds [ \ ] ^ _ ` too.
_LABEL = re.compile(r"[0-9a-zA-Z\[\\\]^_`\-\s]{3,100}")
_ACCOUNT = re.compile(r"[0-9]{12}")
_EXPIRES_IN = re.compile(r"([0-9]{1,6}) (second|minute|hour|day|week|month|year)s?")
_UNIT = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400,
         "year": 365 * 86400}
_EXPIRY_MEMBERS = frozenset({"expiresAt", "expiresIn"})
_MAX_LIFETIME = 10 * 365 * 86400  # a key lives at most ten years (rotation: docs/integrators/api-keys.md)


def _body(body: Any, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise MemberInvalid("body", "one JSON object")
    for name in sorted(body):
        if name not in allowed:
            raise MemberInvalid(str(name)[:40], "not a member of this request")
    return body


def _label(value: Any) -> str:
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise MemberInvalid("label", "3 to 100 letters, digits, spaces, hyphens or underscores")
    if holds_pan_in_any_form(value):
        # digits and spaces are a label's characters, so a card number fits the original's pattern: refused, as
        # in every other value a merchant stores here (PCI DSS 3.4), and never named
        raise MemberInvalid("label", "must not hold a card number")
    return value


def _methods(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > len(METHODS) or any(m not in METHODS for m in value):
        raise MemberInvalid("methods", "one or more of HMAC, BASIC, ALL")
    return tuple(dict.fromkeys(value))


def _accounts(principal: Principal, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > 100 or any(
            not isinstance(a, str) or not _ACCOUNT.fullmatch(a) for a in value):
        raise MemberInvalid("accounts", "one or more 12-digit account ids")
    for account_id in value:
        if account_id not in principal.accounts:
            raise AccountNotAllowed(account_id)  # never more than the caller
    return tuple(dict.fromkeys(value))


def _scopes(principal: Principal, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > len(catalog.SCOPES) or any(
            not isinstance(s, str) or s not in catalog.SCOPE_NAMES for s in value):
        raise MemberInvalid("scopes", "one or more scopes of GET /api/v4/api-key-scopes")
    for scope in value:
        if not grants(principal.scopes, scope):
            raise ScopeMissing((scope,))  # to give a scope the caller must hold it
    return tuple(dict.fromkeys(value))


def parse_expires_in(value: Any) -> int:
    """Seconds of an ``expiresIn`` (``"1 hour"``, ``"30 days"``); 422 when it is not one."""
    match = _EXPIRES_IN.fullmatch(value) if isinstance(value, str) else None
    seconds = int(match.group(1)) * _UNIT[match.group(2)] if match else 0
    if not 0 < seconds <= _MAX_LIFETIME:
        raise MemberInvalid("expiresIn", "a whole number and a unit (second, minute, hour, day, week, month, year), "
                                         "at most 10 years")
    return seconds


def _expires_at(value: Any, now: float) -> int:
    if value is None:
        return 0
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise MemberInvalid("expiresAt", "an RFC 3339 date-time with its offset")
    at = int(when.timestamp())
    if not now < at <= now + _MAX_LIFETIME:
        raise MemberInvalid("expiresAt", "in the future, at most 10 years ahead")
    return at


def _expiry(body: dict[str, Any], now: float, current: int) -> int:
    """The expiry the request asks for: a date-time ``expiresAt`` first (the original: it "takes precedence"),
    else ``expiresIn`` from now, else ``expiresAt: null`` (no expiry: the member is nullable), else ``current``."""
    if body.get("expiresAt") is not None:
        return _expires_at(body["expiresAt"], now)
    if body.get("expiresIn") is not None:
        return int(now) + parse_expires_in(body["expiresIn"])
    if "expiresAt" in body:
        return 0
    return current


def _within_caller(principal: Principal, expires_at: int) -> int:
    """``expires_at`` when the request sets an expiry (or creates a key) the caller may give: no later than the
    calling key's own (a key that expires gives no key of a longer life, nor extends one, itself included, past
    it; PCI DSS 8.6 / 7.2: a credential's limits are its issuer's). The account key (``expires_at`` 0) gives any."""
    limit = principal.expires_at
    if limit and (expires_at == 0 or expires_at > limit):
        raise MemberInvalid("expiresAt", "no later than the calling key's own expiry")
    return expires_at


def _enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise MemberInvalid("enabled", "true or false")
    return value


def _covers(principal: Principal, key: ApiKey) -> None:
    """The caller could have given ``key`` everything it has; else 403 naming what it lacks."""
    for scope in key.scopes:
        if not grants(principal.scopes, scope):
            raise ScopeMissing((scope,))
    for account_id in key.accounts:
        if account_id not in principal.accounts:
            raise AccountNotAllowed(account_id)


def create(principal: Principal, body: Any) -> dict[str, Any]:
    """A new key of the path's account; the answer (``ApiKeyExtended``) holds its ``secret``, shown this once."""
    body = _body(body, _CREATE)
    if "label" not in body:
        raise MemberInvalid("label", "required")
    if "scopes" not in body:
        raise MemberInvalid("scopes", "required")
    now = clock.now()
    owner = principal.account.account_id
    key = ApiKey(key_id="", owner=owner, label=_label(body["label"]),
                 methods=_methods(body["methods"]) if "methods" in body else ("ALL",),
                 accounts=_accounts(principal, body["accounts"]) if "accounts" in body else (owner,),
                 scopes=_scopes(principal, body["scopes"]),
                 expires_at=_within_caller(principal, _expiry(body, now, 0)),
                 enabled=_enabled(body["enabled"]) if "enabled" in body else True, created_at=int(now))
    secret = new_secret()
    for _ in range(3):
        try:
            stored = put_key(replace(key, key_id=new_key_id()), secret, int(now), MAX_KEYS)
        except counted.LimitReached:
            raise Conflict(f"An account has at most {MAX_KEYS} API keys: delete one first.") from None
        except registry.ConditionFailed:
            continue  # 128 random bits collided: draw again
        return {**stored.view(), "secret": secret}
    raise Conflict("Could not allocate an API key id; retry.")


def list_for(principal: Principal, query: str | None) -> list[dict[str, Any]]:
    """The path account's keys (no secrets), oldest first; ``query`` keeps those whose label contains it (any
    case: the original's ``query`` filter)."""
    keys = list_keys(principal.account.account_id)
    if query:
        needle = query.casefold()
        keys = [k for k in keys if needle in k.label.casefold()]
    return [k.view() for k in keys]


def _owned(principal: Principal, key_id: str) -> ApiKey:
    key = read_key(key_id) if KEY_ID.fullmatch(key_id or "") else None
    if key is None or key.owner != principal.account.account_id:
        raise NotFound("No such API key.")
    return key


def get(principal: Principal, key_id: str) -> dict[str, Any]:
    """One key of the path's account (``ApiKeyExtended`` without the secret: it was shown once)."""
    return _owned(principal, key_id).view()


def patch(principal: Principal, key_id: str, body: Any) -> dict[str, Any]:
    """Change the members sent; the caller must cover the key as it is and as it becomes."""
    body = _body(body, _UPDATE)
    key = _owned(principal, key_id)
    _covers(principal, key)
    now = clock.now()
    changed = replace(
        key, label=_label(body["label"]) if "label" in body else key.label,
        methods=_methods(body["methods"]) if "methods" in body else key.methods,
        accounts=_accounts(principal, body["accounts"]) if "accounts" in body else key.accounts,
        scopes=_scopes(principal, body["scopes"]) if "scopes" in body else key.scopes,
        expires_at=_within_caller(principal, _expiry(body, now, key.expires_at))
        if _EXPIRY_MEMBERS & set(body) else key.expires_at,
        enabled=_enabled(body["enabled"]) if "enabled" in body else key.enabled)
    if changed == key:
        return key.view()
    try:
        return update_key(changed, int(now)).view()
    except registry.ConditionFailed:
        raise NotFound("No such API key.") from None  # deleted meanwhile


def delete(principal: Principal, key_id: str) -> None:
    """Remove a key of the path's account: from the next call on it authenticates nothing."""
    key = _owned(principal, key_id)
    _covers(principal, key)
    delete_key(key)
