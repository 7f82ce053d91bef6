"""Gateway merchant accounts: creation, lookup (cached per container), authentication, postback secret.

Registry item ``ACCOUNT#<account_id>`` / ``PROFILE``::

    accountId      12 digits (public-facts: a 12-digit account id)
    partnerId      the partner whose tokenization keys auto-tokenization and token payments use (optional)
    options        {tokenization, token_payments, token_data_in_postback, token_data_in_rsapi, fraud_scoring,
                    fraud_in_rsapi (issue 8: fraud fields in the reporting interface)}
    postbackUrl    https URL checked against the egress policy (CWE-918), or absent
    status         active | disabled
    keyWrapped     api_accesskey KMS-wrapped (envelope encryption like the partners' HMAC keys, DESIGN.md §4;
                   unwrapped keys cached per container by vaultcore.store.keys): authentication compares the key
                   sent, or recomputes the original's hash authentication (which needs the key itself), and the
                   postback sender signs the spec's postback ``hash`` with it
    keyHash        legacy accounts only (issue 20): SHA-256 hex of api_accesskey, from before the key was
                   wrapped. Such an account authenticates with ``api_accesskey`` (hash compare) and its first
                   successful one writes ``keyWrapped`` and empties ``keyHash`` (lazy migration); the others are
                   migrated by :func:`rotate_access_key` (``POST /admin/v1/accounts/{id}/accesskey``).
    postbackSecret the postback signing secret, KMS-wrapped (vaultcore.store.keys; context below)

``api_accesskey`` and ``postback_secret`` are returned once, at creation. The postback sender obtains the URL,
the access key and the secret with :func:`postback_target` (contexts ``{"purpose": "account-accesskey" |
"account-postback", "accountId": <id>}``); the signing key is the UTF-8 bytes of the 64-hex-character secret
the merchant received.

Authentication (spec Authentication rule 2), two forms; every failure is the same ``error_code`` 102 with the
same text (``Invalid account_id``), whatever the cause:

* ``account_id`` and ``api_accesskey``: the key compared with the unwrapped one by :func:`hmac.compare_digest`;
* the original's hash authentication (public-facts), **without** ``api_accesskey``: ``timestamp`` (unix seconds,
  at most 15 minutes old and at most 60 s in the future) and ``hash`` = lowercase hex SHA-256 of
  ``account_id,api_accesskey,timestamp`` followed by the values of the variables named in ``hash_key``
  (comma-separated), all joined by commas; the server recomputes it with the unwrapped key and compares in
  constant time. Sent with ``api_accesskey`` too, both are checked. Issue 27: ``hash_key`` must name every
  variable the request sends but the credentials and the hash's own (:data:`UNHASHED_VARIABLES`), so a hash binds
  the transaction type, the amounts, the payment data, the transaction acted on and all the rest; and each hash
  is accepted once (the Nonces table, as the HMAC scheme's nonces: ``gateway-hash#<account_id>`` / the hash,
  kept until its timestamp is stale).

Every failure counts in the AuthenticationFailures metric (by API and cause) and in the failure count of the
account id from the request's source address (:mod:`vaultcore.store.auth_failures`): at ``AUTH_FAILURE_LIMIT``
failures in a window every attempt on the account from that address is refused until the window ends; other
addresses (the merchant's own servers) are not.

Timing does not tell an unknown account from a known one: a failure that made no table read makes a decoy read
(issue 12), and an account id whose key is not unwrapped (unknown, legacy) costs one KMS Decrypt of a decoy
envelope per container and cache lifetime, as a real account's first unwrap does (:func:`_even_kms`).

Records are cached per container for ``RECORD_CACHE_SECONDS`` (60 s by default): an option or postback URL
changed through the management API reaches every container within that bound.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any

from vaultcore import clock, metrics
from vaultcore.api.http import current_source_ip
from vaultcore.cache import ContainerCache
from vaultcore.errors import Conflict, NotFound, ValidationError
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.ids import numeric_id
from vaultcore.postback.target import PostbackTarget
from vaultcore.store import auth_failures, registry
from vaultcore.store.keys import unwrap_secret, wrap_secret
from vaultcore.store.nonces import claim_nonce

__all__ = [
    "OPTION_NAMES",
    "HASH_WINDOW_SECONDS",
    "HASH_FUTURE_SECONDS",
    "HASH_KEY_MAX_NAMES",
    "UNHASHED_VARIABLES",
    "hash_names_required",
    "Account",
    "create_account",
    "get_account",
    "update_account",
    "load_account",
    "authenticate",
    "expected_hash",
    "access_key_of",
    "rotate_access_key",
    "postback_secret_of",
    "postback_secret_context",
    "postback_target",
    "even_kms",
]

OPTION_NAMES = ("tokenization", "token_payments", "token_data_in_postback", "token_data_in_rsapi", "fraud_scoring",
                "fraud_in_rsapi", "credit")  # issue 20: CREDIT (unreferenced refunds), off unless enabled  # issue 8: the reporting interface returns fraud_score/_recommendation/_reasons
#: A hash is accepted once (issue 27), if its timestamp is at most this old ...
HASH_WINDOW_SECONDS = 15 * 60
#: ... and at most this far in the future (clock drift, as the HMAC scheme allows).
HASH_FUTURE_SECONDS = 60
#: At most this many names in ``hash_key``.
HASH_KEY_MAX_NAMES = 64
#: The variables a ``hash_key`` never names: the credentials and the hash's own.
UNHASHED_VARIABLES = frozenset({"account_id", "api_accesskey", "hash", "hash_key", "timestamp"})
# Hashes used are recorded in the Nonces table under this prefix and the account id (partner ids have no '#').
_HASH_NONCE_PREFIX = "gateway-hash#"
_NEEDS_PARTNER = ("tokenization", "token_payments")
_DUMMY_HASH = hashlib.sha256(b"no such account").hexdigest().encode()
_cache: ContainerCache[Account] = ContainerCache("record_cache_seconds", max_items=4096)
# A key no account has: the stand-in read of a failure that has made no table read yet.
_DECOY_PK = "ACCOUNT#decoy"


@dataclass(frozen=True)
class Account:
    account_id: str
    partner_id: str | None
    options: dict[str, bool] = field(default_factory=dict)
    postback_url: str | None = None
    status: str = "active"
    key_hash: str = ""
    created_at: int = 0
    key_wrapped: dict[str, str] | None = None  # the KMS-wrapped access key (None: a legacy, hash-only account)

    def option(self, name: str) -> bool:
        return bool(self.options.get(name, False))

    @property
    def active(self) -> bool:
        return self.status == "active"

    def public_view(self) -> dict[str, Any]:
        return {"account_id": self.account_id, "partnerId": self.partner_id,
                "options": {k: self.option(k) for k in OPTION_NAMES}, "postback_url": self.postback_url,
                "status": self.status, "created_at": self.created_at}


def _pk(account_id: str) -> str:
    return f"ACCOUNT#{account_id}"


def _from_item(item: dict[str, Any]) -> Account:
    return Account(account_id=item["accountId"], partner_id=item.get("partnerId") or None,
                   options={k: bool(v) for k, v in (item.get("options") or {}).items()},
                   postback_url=item.get("postbackUrl") or None, status=item.get("status", "active"),
                   key_hash=item.get("keyHash", ""), created_at=int(item.get("createdAt", 0)),
                   key_wrapped=item.get("keyWrapped") or None)


def postback_secret_context(account_id: str) -> dict[str, str]:
    return {"purpose": "account-postback", "accountId": account_id}


def _accesskey_context(account_id: str) -> dict[str, str]:
    return {"purpose": "account-accesskey", "accountId": account_id}


# ------------------------------------------------------------------------------------------- management
def _check_options(raw: Any, base: dict[str, bool] | None = None) -> dict[str, bool]:
    if not isinstance(raw, dict):  # absent is {} (the callers); null is no value the document allows
        raise ValidationError("options must be an object of booleans.")
    unknown = sorted(set(raw) - set(OPTION_NAMES))
    if unknown:
        raise ValidationError(f"Unknown option(s): {', '.join(str(u)[:40] for u in unknown[:5])}.")
    out = {k: bool((base or {}).get(k, False)) for k in OPTION_NAMES}
    for name, value in raw.items():
        if not isinstance(value, bool):
            raise ValidationError(f"options.{name} must be a boolean.")
        out[name] = value
    return out


def _check_partner(partner_id: Any) -> str | None:
    if partner_id is None:
        return None
    if not isinstance(partner_id, str) or not partner_id or len(partner_id) > 64:
        raise ValidationError("partnerId must be a partner id.")
    from vaultcore.partners.service import get_partner

    try:
        get_partner(partner_id)
    except NotFound as exc:
        raise ValidationError("partnerId names no partner.") from exc
    return partner_id


def _check_postback_url(url: Any) -> str | None:
    if url is None:
        return None
    if not isinstance(url, str) or not url:
        raise ValidationError("postback_url must be a URL string or null.")
    from vaultcore.net.ssrf import EgressError, EgressPolicy, validate_target_url

    try:
        return validate_target_url(url, EgressPolicy.from_env()).url
    except (EgressError, ValueError) as exc:
        # The egress messages are fixed strings that never echo the URL.
        raise ValidationError(f"postback_url is not allowed: {getattr(exc, 'message', 'invalid URL')}") from exc


def _check_consistency(partner_id: str | None, options: dict[str, bool]) -> None:
    for name in _NEEDS_PARTNER:
        if options.get(name) and not partner_id:
            raise ValidationError(f"options.{name} needs a partnerId (whose tokenization keys it uses).")


def _hash_key(api_accesskey: str) -> str:
    return hashlib.sha256(api_accesskey.encode("utf-8")).hexdigest()


def create_account(body: dict[str, Any]) -> dict[str, Any]:
    """Create an account; the answer holds ``api_accesskey`` and ``postback_secret``, shown this once."""
    unknown = sorted(set(body) - {"partnerId", "options", "postback_url"})
    if unknown:
        raise ValidationError(f"Unknown member(s): {', '.join(str(u)[:40] for u in unknown[:5])}.")
    partner_id = _check_partner(body.get("partnerId"))
    options = _check_options(body.get("options", {}))
    _check_consistency(partner_id, options)
    postback_url = _check_postback_url(body.get("postback_url"))
    api_accesskey = secrets.token_hex(16)  # 32 hex characters, the original's key format
    postback_secret = secrets.token_hex(32)
    now = int(clock.now())
    for _ in range(5):
        account_id = numeric_id(12)
        item = {"pk": _pk(account_id), "sk": "PROFILE", "type": "gateway-account", "accountId": account_id,
                "partnerId": partner_id, "options": options, "postbackUrl": postback_url, "status": "active",
                "keyWrapped": wrap_secret(api_accesskey.encode("ascii"), _accesskey_context(account_id)),
                "postbackSecret": wrap_secret(postback_secret.encode("ascii"), postback_secret_context(account_id)),
                "createdAt": now, "updatedAt": now}
        try:
            registry.put_new(item)
        except registry.ConditionFailed:
            continue  # a 12-digit collision: draw again
        account = _from_item(item)
        return {**account.public_view(), "api_accesskey": api_accesskey, "postback_secret": postback_secret}
    raise Conflict("Could not allocate an account id; retry.")


def get_account(account_id: str) -> Account:
    """The account, read consistently (management API)."""
    if not isinstance(account_id, str) or len(account_id) != 12 or not account_id.isdigit():
        raise NotFound("Account not found.")
    item = registry.get(_pk(account_id), "PROFILE", consistent=True)
    if item is None:
        raise NotFound("Account not found.")
    return _from_item(item)


def update_account(account_id: str, body: dict[str, Any]) -> Account:
    """PATCH semantics: only the members sent change (``options`` merge key by key; null removes a URL)."""
    unknown = sorted(set(body) - {"partnerId", "options", "postback_url", "status"})
    if unknown:
        raise ValidationError(f"Unknown member(s): {', '.join(str(u)[:40] for u in unknown[:5])}.")
    current = get_account(account_id)
    fields: dict[str, Any] = {}
    partner_id = current.partner_id
    if "partnerId" in body:
        partner_id = _check_partner(body["partnerId"])
        fields["partnerId"] = partner_id or ""  # "" = none (an update cannot SET null)
    options = _check_options(body["options"], current.options) if "options" in body else dict(current.options)
    _check_consistency(partner_id, options)
    if "options" in body:
        fields["options"] = options
    if "postback_url" in body:
        fields["postbackUrl"] = _check_postback_url(body["postback_url"]) or ""
    if "status" in body:
        if body["status"] not in ("active", "disabled"):
            raise ValidationError("status must be 'active' or 'disabled'.")
        fields["status"] = body["status"]
    if not fields:
        return current
    fields["updatedAt"] = int(clock.now())
    try:
        item = registry.update_fields(_pk(account_id), "PROFILE", fields)
    except registry.ConditionFailed as exc:
        raise NotFound("Account not found.") from exc
    _cache.invalidate(account_id)
    return _from_item(item)


def load_account(account_id: str) -> Account | None:
    """The account, cached per container; None when unknown."""
    return lookup_account(account_id)[0]


def lookup_account(account_id: str) -> tuple[Account | None, bool]:
    """The account (or None) and whether the table was read (False on a cache hit). Unknown ids are not cached;
    :func:`authenticate` evens out the time instead."""
    cached = _cache.get(account_id)
    if cached is not None:
        return cached, False
    item = registry.get(_pk(account_id), "PROFILE")
    if item is None:
        return None, True
    account = _from_item(item)
    _cache.put(account_id, account)
    return account, True


def postback_secret_of(account_id: str) -> bytes:
    """The account's postback signing key (for the postback sender); unwrapped with the per-container cache."""
    item = registry.get(_pk(account_id), "PROFILE")
    if item is None or "postbackSecret" not in item:
        raise NotFound("Account not found.")
    return unwrap_secret(item["postbackSecret"], postback_secret_context(account_id))


def postback_target(account_id: str) -> PostbackTarget | None:
    """What the postback sender needs for one delivery: URL, access key (for the spec's hash) and signing secret.

    None when the account is unknown, disabled or has no postback URL (nothing to deliver). One Registry read;
    the unwrapped keys are cached per container by :mod:`vaultcore.store.keys`.
    """
    item = registry.get(_pk(account_id), "PROFILE") if isinstance(account_id, str) else None
    if item is None or not item.get("postbackUrl") or item.get("status", "active") != "active":
        return None
    if "keyWrapped" not in item or "postbackSecret" not in item:
        return None
    key = unwrap_secret(item["keyWrapped"], _accesskey_context(account_id)).decode("ascii")
    secret = unwrap_secret(item["postbackSecret"], postback_secret_context(account_id))
    return PostbackTarget(url=item["postbackUrl"], api_accesskey=key, secret=secret)


# ------------------------------------------------------------------------------------------- authentication
def expected_hash(account_id: str, api_accesskey: str, timestamp: str, extra_values: list[str]) -> str:
    """The public-facts hash: lowercase hex SHA-256 of the comma-joined values.

    >>> expected_hash("123456789012", "e6f157d2-66cf-43d5-8a56-c4c57d5760d7", "1360870400", []) == (
    ...     hashlib.sha256(b"123456789012,e6f157d2-66cf-43d5-8a56-c4c57d5760d7,1360870400").hexdigest())
    True
    """
    return hashlib.sha256(",".join([account_id, api_accesskey, timestamp, *extra_values]).encode("utf-8")).hexdigest()


def _fail() -> GatewayError:
    return GatewayError(E.AUTHENTICATION)


def account_id_of(variables: dict[str, str]) -> str:
    """The request's ``account_id``: missing is 200 (E.MISSING), not 12 ASCII digits the uniform 101 (counted as a
    malformed authentication), before any table is read."""
    account_id = variables.get("account_id")
    if account_id is None:
        raise GatewayError(E.MISSING, "account_id is required.")
    if len(account_id) != 12 or not (account_id.isascii() and account_id.isdigit()):
        metrics.authentication_failed("malformed", cause="malformed")
        raise GatewayError(E.ACCOUNT_ID)
    return account_id


def authenticate(variables: dict[str, str], *, now: float) -> Account:
    """The account the request's credentials name; every failure is the same error 102 ``Invalid account_id``.

    Each failure counts: the AuthenticationFailures metric (by API and cause, vaultcore.metrics) and the failure
    count of the account id from this source address (vaultcore.store.auth_failures); while that count is at its
    limit every attempt on the account from that address is refused (cause ``throttled``). A hash that passes every other check is claimed
    last, in the Nonces table, so that it is accepted once (a forged request cannot burn it).
    """
    account_id = account_id_of(variables)
    key = variables.get("api_accesskey")
    hashed = any(n in variables for n in ("hash", "timestamp", "hash_key"))
    if not key and not hashed:
        raise GatewayError(E.MISSING, "api_accesskey is required.")
    account, fetched = lookup_account(account_id)
    cause = ""
    try:
        key_ok = True
        if key:
            key_ok = _key_matches(account, account_id, key)
        hash_cause = ""
        if hashed:
            hash_cause = _hash_check(account, account_id, key if key_ok else None, variables, now)
        # Asked whatever the credentials (a right guess must not cost more than a wrong one: the state is read
        # from the table at most once per container and RECORD_CACHE_SECONDS).
        throttled = auth_failures.throttled(_guessing_credential(account_id), now)
        # the first cause in this order (every check above has run, whatever failed: issue 12, timing)
        cause = ("unknown_account" if account is None else "disabled" if not account.active
                 else "access_key" if not key_ok else hash_cause or ("throttled" if throttled else ""))
        if not cause and hashed:
            if not claim_nonce(_HASH_NONCE_PREFIX + account_id, variables["hash"], int(now),
                               int(variables["timestamp"]) + HASH_WINDOW_SECONDS + 1):
                cause = "nonce"
        if cause:
            raise _fail()
    except GatewayError:
        if not fetched:
            # Every 102 costs one table read: a wrong key on a cached account, an unknown id (whose lookup
            # read the table) and a bad hash cannot be told apart by their time (issue 12).
            registry.get(_DECOY_PK, "PROFILE")
        # No decoy nonce write for a hash that failed before its claim: only a hash that was right (whose holder
        # knows it) reaches the claim, so the claim's cost tells nothing, and the decoy item is one constant key.
        metrics.authentication_failed(cause, cause=cause or "other")
        auth_failures.record_failure(_guessing_credential(account_id), now)
        raise
    assert account is not None
    if key and account.key_wrapped is None:
        _migrate(account, key)
    return account


def _guessing_credential(account_id: str) -> str:
    """What the failure counts key on: the account from this request's source address. A guesser reaching the
    limit is refused, the right key too, for the rest of the window; the merchant's own servers, at other
    addresses, are not (the alarm on AuthenticationFailures is what sees guesses spread over many addresses)."""
    source = current_source_ip()
    return f"{account_id}@{source}" if source else account_id


def access_key_of(account: Account, variables: dict[str, str]) -> str:
    """The access key of an authenticated request (the idempotency fingerprint's key): the one sent, else the
    account's unwrapped key (hash authentication; cached per container)."""
    key = variables.get("api_accesskey")
    if key:
        return key
    assert account.key_wrapped is not None  # hash authentication succeeded, so the key is wrapped
    return unwrap_secret(account.key_wrapped, _accesskey_context(account.account_id)).decode("ascii")


def _stored_key(account: Account | None, account_id: str) -> bytes | None:
    """The account's access key (KMS-unwrapped, cached per container), or None after the same KMS cost."""
    if account is not None and account.key_wrapped is not None:
        return unwrap_secret(account.key_wrapped, _accesskey_context(account_id))
    _even_kms(account_id)
    return None


def _key_matches(account: Account | None, account_id: str, key: str) -> bool:
    presented = key.encode("utf-8", "replace")
    stored = _stored_key(account, account_id)
    if stored is not None:
        return hmac.compare_digest(presented, stored)
    # A legacy account (only the key's hash), or no account: compare against the hash or a dummy one.
    legacy = account.key_hash.encode("ascii") if account is not None and account.key_hash else _DUMMY_HASH
    return hmac.compare_digest(hashlib.sha256(presented).hexdigest().encode(), legacy) and legacy != _DUMMY_HASH


def hash_names_required(variables: dict[str, str]) -> set[str]:
    """The variables a hash must name in ``hash_key``: every one the request sends but the credentials and the
    hash's own (issue 27: the hash binds the transaction type, the amounts, the payment data, the transaction
    it acts on and everything else the request says)."""
    return set(variables) - UNHASHED_VARIABLES


def _hash_check(account: Account | None, account_id: str, verified_key: str | None, variables: dict[str, str],
                now: float) -> str:
    """The original's hash authentication, with this platform's bindings: ``""`` when the hash is right, fresh
    and names every variable sent, else the cause. ``verified_key`` is the access key sent and already checked.
    """
    sent, timestamp = variables.get("hash", ""), variables.get("timestamp", "")
    names = [n for n in variables.get("hash_key", "").split(",") if n]
    well_formed = (len(sent) == 64 and timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12
                   and len(names) <= HASH_KEY_MAX_NAMES and len(set(names)) == len(names)
                   and not any(n not in variables or n in UNHASHED_VARIABLES for n in names))
    binds_all = well_formed and set(names) == hash_names_required(variables)
    age = now - int(timestamp) if well_formed else 0.0
    fresh = well_formed and -HASH_FUTURE_SECONDS <= age <= HASH_WINDOW_SECONDS
    if verified_key is not None:
        secret = verified_key
    else:
        stored = _stored_key(account, account_id)
        secret = stored.decode("ascii", "replace") if stored is not None else "\x00no key"
    want = expected_hash(account_id, secret, timestamp, [variables.get(n, "") for n in names])
    right = hmac.compare_digest(sent.encode("ascii", "replace"), want.encode("ascii"))
    if not right or not binds_all:
        return "hash"
    return "" if fresh else "timestamp"


# One KMS Decrypt per account id with no wrapped key, per container and key-cache lifetime: what a real
# account's first unwrap costs (vaultcore.store.keys caches unwrapped keys for the same lifetime).
_kms_evened: ContainerCache[bool] = ContainerCache("key_cache_seconds", max_items=4096)
# The decoy envelope (a random secret under the platform's KMS key), made once per container and cache lifetime;
# reset with every ContainerCache (tests, SnapStart snapshots).
_decoy_envelope: ContainerCache[dict[str, str]] = ContainerCache("key_cache_seconds", max_items=1)
_DECOY_CONTEXT = {"purpose": "account-accesskey", "accountId": "decoy"}


def _even_kms(account_id: str) -> None:
    if _kms_evened.get(account_id):
        return
    import base64

    from vaultcore.settings import settings
    from vaultcore.store.aws import client
    from vaultcore.store.ddb import aws_errors

    decoy = _decoy_envelope.get("decoy")
    if decoy is None:
        decoy = wrap_secret(secrets.token_bytes(16), _DECOY_CONTEXT)
        _decoy_envelope.put("decoy", decoy)
    with aws_errors("key unwrapping"):  # a KMS failure answers as a real account's unwrap would (error 1)
        client("kms").decrypt(CiphertextBlob=base64.b64decode(decoy["k"]), EncryptionContext=_DECOY_CONTEXT,
                              KeyId=settings().kms_key_id)
    _kms_evened.put(account_id, True)


def even_kms(owner_id: str) -> None:
    """The KMS cost of a first unwrap, for a credential that has no wrapped secret (an unknown id): the API keys'
    check (vaultcore.apikeys.store) evens out its time with the same decoy as the accounts'."""
    _even_kms(owner_id)


def _migrate(account: Account, key: str) -> None:
    """Lazy migration of a legacy (hash-only) account after a successful login: wrap the key, drop the hash.

    Best effort: the login succeeds whatever happens here; a failed write is retried at the next login. The
    condition on the old hash keeps a concurrent :func:`rotate_access_key` from being overwritten."""
    from vaultcore.errors import VaultError
    from vaultcore.logs import get_logger

    try:
        registry.update_fields(_pk(account.account_id), "PROFILE",
                               {"keyWrapped": wrap_secret(key.encode("ascii"), _accesskey_context(account.account_id)),
                                "keyHash": "", "updatedAt": int(clock.now())},
                               expected={"keyHash": account.key_hash})
    except (registry.ConditionFailed, VaultError, UnicodeError):
        get_logger("gateway").warning("access key migration deferred", extra={"account_id": account.account_id})
        return
    _cache.invalidate(account.account_id)


def rotate_access_key(account_id: str) -> dict[str, str]:
    """Issue a new access key (shown once), stored KMS-wrapped; the old key (wrapped or a legacy hash) stops
    working within ``RECORD_CACHE_SECONDS``. The migration of legacy accounts that never log in with their key."""
    get_account(account_id)  # 404 when unknown
    api_accesskey = secrets.token_hex(16)
    try:
        registry.update_fields(_pk(account_id), "PROFILE", {
            "keyWrapped": wrap_secret(api_accesskey.encode("ascii"), _accesskey_context(account_id)),
            "keyHash": "", "updatedAt": int(clock.now())})
    except registry.ConditionFailed as exc:
        raise NotFound("Account not found.") from exc
    _cache.invalidate(account_id)
    return {"account_id": account_id, "api_accesskey": api_accesskey}
