"""Per-partner tokenization master keys: versioned, KMS-wrapped in the Registry, rotated and retired.

Records: ``PARTNER#<partnerId>`` / ``TOKENKEY#<version:06d>`` with ``version``, ``status``, ``createdAt``
and ``env`` (32 random bytes wrapped by :func:`vaultcore.store.keys.wrap_secret`, encryption context
``{purpose: token-key, partnerId, version}`` so a blob copied to another record or partner does not open).

Life cycle (NIST SP 800-57 Part 1 section 5.3, PCI DSS 3.6.4 / 3.7.4-3.7.5):

* ``current``: exactly one version; new bfids and tokens are made under it. Created lazily by the first
  tokenization of a partner with one conditional put, so concurrent first uses agree on one key.
* ``active``: a former current version after :func:`rotate_keys`; it still verifies bfids and detokenizes the
  tokens made under it, and never makes new ones.
* ``retired``: :func:`retire_key`; its wrapped key material is deleted in the same write (crypto-shredding), so
  its bfids no longer verify and its tokens can never be detokenized again. Irreversible; the current version
  can never be retired.

Caches per container: the key ring (versions and statuses) for ``RECORD_CACHE_SECONDS`` (60 s), so a
rotation or retirement made in another container takes effect here within that bound; unwrapped master keys
through :mod:`vaultcore.store.keys` for ``KEY_CACHE_SECONDS`` (300 s), and the subkeys derived from them
(:func:`vaultcore.tokens.bfid.derive_subkeys` and :func:`~vaultcore.tokens.bfid.derive_tag_key`: the FF1 AES-256
key, the bfid MAC key and the token tag key) for as long. A version that is unknown to the cached ring is looked
up again at most once per ``_MISS_SECONDS`` per version, so bfids naming invented versions cannot turn into a
stream of Registry reads.

:class:`KeyRecord`, :class:`TokenKeys` are written by hand for a measured cold start reason (:mod:`vaultcore.plain`:
a dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms;
docs/design/benchmarks.md).
"""

from __future__ import annotations

import secrets
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.errors import DependencyError
from vaultcore.logs import get_logger
from vaultcore.partners.service import get_partner
from vaultcore.plain import Frozen, init
from vaultcore.store import registry
from vaultcore.store import tokens as token_store
from vaultcore.store.keys import unwrap_secret, wrap_secret
from vaultcore.tokens.bfid import derive_subkeys, derive_tag_key
from vaultcore.tokens.errors import (
    KEY_CURRENT,
    KEY_ROTATION_RACE,
    KEY_VERSION_UNKNOWN,
    TokenConflict,
    TokenNotFound,
)

__all__ = ["KeyRecord", "TokenKeys", "current_keys", "keys_for_version", "list_keys", "rotate_keys",
           "retire_key", "reset_caches", "KEY_BYTES", "MAX_KEY_VERSION"]

KEY_BYTES = 32
MAX_KEY_VERSION = 0xFFFF  # the bfid carries the version in 2 bytes
_MISS_SECONDS = 10.0
_log = get_logger("tokens.keys")
_ring_cache: ContainerCache[tuple[KeyRecord, ...]] = ContainerCache("record_cache_seconds", max_items=4096)
_subkey_cache: ContainerCache[TokenKeys] = ContainerCache("key_cache_seconds", max_items=4096)
_miss_cache: ContainerCache[bool] = ContainerCache(_MISS_SECONDS, max_items=4096)


class KeyRecord(Frozen):
    """One version of a partner's key ring (no key material in repr or views)."""

    __slots__ = ("partner_id", "version", "status", "created_at", "retired_at", "envelope")
    _no_repr = frozenset({"envelope"})
    partner_id: str
    version: int
    status: str  # current | active | retired
    created_at: int
    retired_at: int | None
    envelope: dict[str, str] | None

    def __init__(self, partner_id: str, version: int, status: str, created_at: int, retired_at: int | None = None,
                 envelope: dict[str, str] | None = None) -> None:
        init(self, partner_id=partner_id, version=version, status=status, created_at=created_at, retired_at=retired_at,
             envelope=envelope)

    def public_view(self) -> dict[str, Any]:
        view: dict[str, Any] = {"version": self.version, "status": self.status, "createdAt": self.created_at}
        if self.retired_at is not None:
            view["retiredAt"] = self.retired_at
        return view


class TokenKeys(Frozen):
    """The subkeys of one key version: FF1 AES-256 key, bfid HMAC-SHA256 key and token tag HMAC-SHA256 key
    (never in repr)."""

    __slots__ = ("version", "ff1_key", "mac_key", "tag_key")
    _no_repr = frozenset({"ff1_key", "mac_key", "tag_key"})
    version: int
    ff1_key: bytes
    mac_key: bytes
    tag_key: bytes

    def __init__(self, version: int, ff1_key: bytes, mac_key: bytes, tag_key: bytes) -> None:
        init(self, version=version, ff1_key=ff1_key, mac_key=mac_key, tag_key=tag_key)


def _caches() -> tuple[ContainerCache[tuple[KeyRecord, ...]], ContainerCache[TokenKeys], ContainerCache[bool]]:
    return _ring_cache, _subkey_cache, _miss_cache


def reset_caches() -> None:
    """Forget every cached ring and subkey (tests; a container never needs it)."""
    for cache in _caches():
        cache.reset()


def _pk(partner_id: str) -> str:
    return f"PARTNER#{partner_id}"


def _sk(version: int) -> str:
    return f"TOKENKEY#{version:06d}"


def _context(partner_id: str, version: int) -> dict[str, str]:
    return {"purpose": "token-key", "partnerId": partner_id, "version": str(version)}


def _record(item: dict[str, Any]) -> KeyRecord:
    return KeyRecord(partner_id=item["partnerId"], version=int(item["version"]), status=item["status"],
                     created_at=int(item.get("createdAt", 0)), retired_at=item.get("retiredAt"),
                     envelope=item.get("env"))


def _new_item(partner_id: str, version: int, now: int) -> dict[str, Any]:
    secret = secrets.token_bytes(KEY_BYTES)
    envelope = wrap_secret(secret, _context(partner_id, version))
    del secret
    return {"pk": _pk(partner_id), "sk": _sk(version), "type": "token-key", "partnerId": partner_id,
            "version": version, "status": "current", "createdAt": now, "env": envelope}


def _read_ring(partner_id: str) -> tuple[KeyRecord, ...]:
    items = registry.query_prefix(_pk(partner_id), "TOKENKEY#")
    return tuple(sorted((_record(i) for i in items), key=lambda r: r.version))


def _create_first(partner_id: str) -> tuple[KeyRecord, ...]:
    """Version 1, created with a conditional put: of two concurrent first uses, both end up with the winner's."""
    item = _new_item(partner_id, 1, int(clock.now()))
    try:
        registry.put_new(item)
        _log.info("token key created", extra={"partner_id": partner_id, "event": "token-key-created"})
        return (_record(item),)
    except registry.ConditionFailed:
        won = registry.get(_pk(partner_id), _sk(1), consistent=True)
        if won is None:  # created and gone again: only a concurrent manual delete does this
            raise DependencyError("Internal error: the tokenization key is not available.") from None
        return _read_ring(partner_id) or (_record(won),)


def _ring(partner_id: str, *, refresh: bool = False, create: bool = False) -> tuple[KeyRecord, ...]:
    rings, _, _ = _caches()
    ring = None if refresh else rings.get(partner_id)
    if ring is None:
        ring = _read_ring(partner_id)
        if not ring and create:
            ring = _create_first(partner_id)
        if ring:
            rings.put(partner_id, ring)
    return ring


def _subkeys(record: KeyRecord) -> TokenKeys:
    _, subkeys, _ = _caches()
    cache_key = (record.partner_id, record.version)
    cached = subkeys.get(cache_key)
    if cached is not None:
        return cached
    if record.envelope is None:
        raise DependencyError("Internal error: the tokenization key is not available.")
    master = unwrap_secret(record.envelope, _context(record.partner_id, record.version))
    ff1_key, mac_key = derive_subkeys(master)
    keys = TokenKeys(record.version, ff1_key, mac_key, derive_tag_key(master))
    subkeys.put(cache_key, keys)
    return keys


def current_keys(partner_id: str) -> TokenKeys:
    """The subkeys of the partner's current version, creating version 1 on first use."""
    ring = _ring(partner_id, create=True)
    current = [r for r in ring if r.status == "current"]
    if not current:
        raise DependencyError("Internal error: the partner has no current tokenization key.")
    return _subkeys(max(current, key=lambda r: r.version))


def warm(partner_id: str) -> None:
    """Read the partner's ring and unwrap its current subkeys into this container's caches, creating nothing: what
    :func:`current_keys` reads first, read ahead (vaultcore.proxy.service's prefetch). A partner without a ring
    is left to :func:`current_keys`, which creates version 1."""
    current = [r for r in _ring(partner_id) if r.status == "current"]
    if current:
        _subkeys(max(current, key=lambda r: r.version))


def keys_for_version(partner_id: str, version: int) -> TokenKeys | None:
    """The subkeys of ``version`` when it is current or active; None when unknown or retired.

    Called before the bfid naming ``version`` is verified: an unknown version costs one ring reload at most
    once per ``_MISS_SECONDS`` (a rotation made in another container is found; invented versions are cheap).
    """
    if not isinstance(version, int) or not 1 <= version <= MAX_KEY_VERSION:
        return None
    _, _, misses = _caches()
    record = next((r for r in _ring(partner_id) if r.version == version), None)
    if record is None:
        if misses.get((partner_id, version)):
            return None
        record = next((r for r in _ring(partner_id, refresh=True) if r.version == version), None)
        if record is None:
            misses.put((partner_id, version), True)
            return None
    if record.status not in ("current", "active"):
        return None
    return _subkeys(record)


def _invalidate(partner_id: str) -> None:
    rings, _, _ = _caches()
    rings.invalidate(partner_id)


def list_keys(partner_id: str) -> list[KeyRecord]:
    """Every version of the partner's ring, oldest first (management API; 404 for an unknown partner)."""
    get_partner(partner_id)
    return list(_read_ring(partner_id))


def rotate_keys(partner_id: str) -> KeyRecord:
    """Make a new current version; the previous current one becomes ``active`` (keeps detokenizing)."""
    get_partner(partner_id)
    ring = _ring(partner_id, refresh=True, create=True)
    current = next((r for r in ring if r.status == "current"), None)
    version = max(r.version for r in ring) + 1
    if version > MAX_KEY_VERSION:
        raise TokenConflict("The partner has used every tokenization key version.", code=KEY_ROTATION_RACE)
    now = int(clock.now())
    item = _new_item(partner_id, version, now)
    try:
        token_store.rotate_key_items(item, None if current is None else _sk(current.version), now)
    except token_store.ConditionFailed:
        _invalidate(partner_id)
        raise TokenConflict("Another key rotation happened at the same time; retry.", code=KEY_ROTATION_RACE) from None
    _invalidate(partner_id)
    _log.info("token key rotated", extra={"partner_id": partner_id, "event": "token-key-rotated"})
    return _record(item)


def retire_key(partner_id: str, version: int) -> KeyRecord:
    """Retire an ``active`` version for good: its tokens are never detokenized again (module docstring)."""
    get_partner(partner_id)
    if not isinstance(version, int) or not 1 <= version <= MAX_KEY_VERSION:
        raise TokenNotFound("No such tokenization key version.", code=KEY_VERSION_UNKNOWN)
    try:
        item = token_store.retire_key_item(_pk(partner_id), _sk(version), int(clock.now()))
    except token_store.ConditionFailed:
        existing = registry.get(_pk(partner_id), _sk(version), consistent=True)
        if existing is None:
            raise TokenNotFound("No such tokenization key version.", code=KEY_VERSION_UNKNOWN) from None
        if existing.get("status") == "current":
            raise TokenConflict("The current tokenization key cannot be retired; rotate first.",
                                code=KEY_CURRENT) from None
        return _record(existing)  # already retired: retiring again changes nothing
    finally:
        _invalidate(partner_id)
    _, subkeys, _ = _caches()
    subkeys.invalidate((partner_id, version))
    _log.info("token key retired", extra={"partner_id": partner_id, "event": "token-key-retired"})
    return _record(item)
