"""Who calls a v4 operation, and whether it may: the credentials, then the operation's scope, before any other work.

The original's v4 operations take HTTP Basic and name, each, the API-key scopes that allow it ("The API Key
calling this endpoint must have one of the following scopes": ``pcx:<area>:<action>``, ``pcx:<area>:*`` for all
of an area). :func:`authenticate` answers a :class:`Principal` for the path's account and has already checked
that it holds the operation's scope; an operation asks nothing else.

Credentials, three forms:

* ``Authorization: Basic base64(account_id:api_accesskey)``, the account's own key. It holds every scope
  (``pcx:*``) on its own account, so that nothing written for the account key breaks;
* ``Authorization: Basic base64(api_<id>:<secret>)``, an API key (:mod:`vaultcore.apikeys`) whose ``methods``
  allow ``BASIC`` (or ``ALL``);
* ``Authorization: Hmac username="api_<id>", nonce="...", timestamp="...", response="..."``, an API key whose
  ``methods`` allow ``HMAC`` (or ``ALL``), signed with the secure API's scheme (:mod:`vaultcore.auth.hmac_scheme`:
  ``response`` = hex HMAC-SHA256 keyed with the secret's ASCII bytes over ``<METHOD> <path> LF nonce LF timestamp
  LF LF hex SHA-256(body)``; the request's own method, where the secure API's are all POST). The timestamp is
  accepted 15 minutes back and 60 s ahead, the nonce once (the Nonces table, under
  ``gateway-hash#api-key#<id>``: the prefix every gateway-authenticating function may write, template.yaml).

A key is checked whole before any other work: it exists, the secret (or signature) is right, it is enabled, not
expired (``expiresAt`` against :func:`vaultcore.clock.now`), the method is one of its ``methods``, the path's
account is one of its ``accounts`` (and active), the HMAC nonce is new; then the operation's scope.

Every authentication failure is the same 401 / 1003 and counts in AuthenticationFailures by cause (the gateway's
own checks for the account key; for keys one table read whatever the cause, the same constant-time comparison
and, for HMAC, one nonce write: a claim, or a decoy one that always fails); a missing scope is 403 / 911 with the
scope named (:mod:`.errors`): the caller is known by then, and telling it which scope to ask for is what the
original does.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from vaultcore import clock, metrics
from vaultcore.api.http import Request
from vaultcore.apikeys.catalog import grants
from vaultcore.apikeys.store import KEY_ID, KEY_PREFIX, ApiKey, read_key, secret_matches, signing_secret
from vaultcore.auth.hmac_scheme import (
    MAX_AGE_SECONDS,
    MAX_FUTURE_SKEW_SECONDS,
    HeaderError,
    content_hash,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash_of,
)
from vaultcore.errors import AuthenticationFailed, MethodNotAllowed, NotFound
from vaultcore.gateway.accounts import Account, load_account
from vaultcore.gateway.accounts import authenticate as authenticate_account
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.store.nonces import claim_nonce
from vaultcore.v4.errors import ScopeMissing

__all__ = ["Principal", "authorize", "authenticate", "basic_credentials", "grants", "ALL_SCOPES", "KEY_NONCE_PREFIX"]

#: The scope set of an account's own ``api_accesskey``: every scope.
ALL_SCOPES = frozenset({"pcx:*"})
_MAX_HEADER = 400  # a Basic header of an id and a 32..64-character secret is far below this
#: An API key's HMAC nonces are claimed under this owner and the key id: "gateway-hash#" is the Nonces prefix every
#: function that authenticates gateway accounts may write (template.yaml, tests/unit/test_gateway_auth_iam.py).
KEY_NONCE_PREFIX = "gateway-hash#api-key#"
_DECOY_NONCE_OWNER = KEY_NONCE_PREFIX + "decoy"
_DECOY_NONCES = 8  # decoy claims spread over this many items (one per nonce, spread by vaultcore.store.spread)
_DECOY_EXPIRES = 2**40  # the decoy items never expire, so a decoy claim fails as a reused nonce does


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of a v4 operation on one account."""

    account: Account  # the path's account (authenticated, active); the key's owner on paths without an account
    key_id: str | None  # the API key's id; None for the account's own api_accesskey
    scopes: frozenset[str]
    #: the accounts the caller may act on (the account key: its own; a key: its ``accounts``)
    accounts: frozenset[str] = field(default_factory=frozenset)
    #: when the caller stops working (unix s; 0: never, the account key): a key it gives may not outlive it
    expires_at: int = 0

    def allows(self, scope: str) -> bool:
        return grants(self.scopes, scope)

    def require(self, *scopes: str) -> None:
        """403 / 911 unless one of ``scopes`` is allowed (the original's "one of the following scopes")."""
        if not any(self.allows(s) for s in scopes):
            raise ScopeMissing(scopes)  # not an authentication failure: the caller is known


def _refused(reason: str, cause: str) -> AuthenticationFailed:
    metrics.authentication_failed(reason, cause=cause)
    return AuthenticationFailed(reason)


def basic_credentials(request: Request) -> tuple[str, str]:
    """(user, password) of ``Authorization: Basic``; a malformed header is the uniform 1003."""
    header = request.header("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token or len(token) > _MAX_HEADER:
        raise _refused("v4: no Basic credentials", "malformed")
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _refused("v4: malformed Basic credentials", "malformed") from None
    if not sep or not user or not password:
        raise _refused("v4: malformed Basic credentials", "malformed")
    return user, password


def authorize(request: Request, scopes: Mapping[tuple[str, str], str | tuple[str, ...]]) -> Principal:
    """The caller of the operation at ``request``'s resource and method, which ``scopes`` maps to the scope(s)
    that allow it: a resource the table does not name is 404, a method it does not name there 405 (its ``Allow``:
    the names the table has), both before any credential is read; then :func:`authenticate` with its scope."""
    method = request.method.upper()
    allowed = sorted(m for (resource, m) in scopes if resource == request.resource)
    if not allowed:
        raise NotFound("No such operation.")
    if method not in allowed:
        raise MethodNotAllowed(allowed)
    needed = scopes[(request.resource, method)]
    return authenticate(request, *((needed,) if isinstance(needed, str) else needed))


def authenticate(request: Request, *scopes: str) -> Principal:
    """The caller, on the path's ``account_id``, holding one of ``scopes`` (none given: any authenticated caller)."""
    header = request.header("authorization") or ""
    if header.partition(" ")[0].lower() == "hmac":
        principal = _key_by_hmac(request, header)
    else:
        user, password = basic_credentials(request)
        if user.startswith(KEY_PREFIX):
            principal = _key_by_basic(request, user, password)
        else:
            principal = _account_key(request, user, password)
    if scopes:
        principal.require(*scopes)
    return principal


def _account_key(request: Request, user: str, password: str) -> Principal:
    """The account's own ``api_accesskey``: the gateway's check (constant time, decoy reads, throttling)."""
    try:
        account = authenticate_account({"account_id": user, "api_accesskey": password}, now=clock.now())
    except GatewayError as exc:
        if exc.code not in (E.ACCOUNT_ID, E.AUTHENTICATION):  # those count in authenticate_account itself
            metrics.authentication_failed("v4: account", cause="malformed")
        raise AuthenticationFailed("v4: account authentication failed") from None
    if request.path_params.get("account_id") not in (None, account.account_id):
        raise _refused("v4: the path names another account", "scope")
    return Principal(account=account, key_id=None, scopes=ALL_SCOPES, accounts=frozenset({account.account_id}))


def _key_cause(request: Request, key: ApiKey | None, credential_ok: bool, method: str,
               now: float, wrong: str = "access_key") -> tuple[str, Account | None]:
    """The first reason ``key`` may not make this call (``""``: none) and the account it acts on.

    The key was read and its secret compared before (whatever the key's state: no early exit), so choosing the
    cause costs nothing that tells it; the account is read (cached per container) only for a key whose holder
    has proved it knows the secret. ``wrong`` is the cause of a wrong secret (Basic) or signature (HMAC)."""
    target = request.path_params.get("account_id") or (key.owner if key is not None else None)
    cause = ("unknown_key" if key is None else wrong if not credential_ok
             else "disabled" if not key.enabled else "expired" if key.expired(now)
             else "method" if not key.allows_method(method) else "scope" if not key.reaches(target) else "")
    if cause or target is None:
        return cause or "scope", None
    account = load_account(target)
    if account is None:
        return "unknown_account", None
    if not account.active:
        return "disabled", None
    return "", account


def _principal(key: ApiKey, account: Account) -> Principal:
    return Principal(account=account, key_id=key.key_id, scopes=frozenset(key.scopes),
                     accounts=frozenset(key.accounts), expires_at=key.expires_at)


def _key_by_basic(request: Request, key_id: str, secret: str) -> Principal:
    """Basic ``api_<id>:<secret>``: one key read, one constant-time comparison, whatever fails."""
    key = read_key(key_id) if KEY_ID.fullmatch(key_id) else None
    ok = secret_matches(key, key_id, secret)
    cause, account = _key_cause(request, key, ok, "BASIC", clock.now())
    if cause:
        raise _refused(f"v4: API key refused ({cause})", cause)
    assert key is not None and account is not None
    return _principal(key, account)


def _decoy_claim(now: int) -> None:
    """The nonce write a failed HMAC check would have made, on an item that always exists (so it fails): every
    HMAC failure costs one conditional put, as a reused nonce's does (issue 12)."""
    claim_nonce(_DECOY_NONCE_OWNER, f"decoy{secrets.randbelow(_DECOY_NONCES)}", now, _DECOY_EXPIRES)


def _key_by_hmac(request: Request, header: str) -> Principal:
    """``Authorization: Hmac username="api_<id>", ...``: the signature over the request's method, path, nonce,
    timestamp and body; then the key's state, the time window, and the nonce, claimed last (a forged request
    cannot burn a legitimate caller's nonce)."""
    now = int(clock.now())
    try:
        creds = parse_authorization(header)
    except HeaderError:
        _decoy_claim(now)
        raise _refused("v4: malformed HMAC header", "malformed") from None
    if creds.method != "HMAC":
        _decoy_claim(now)
        raise _refused("v4: scheme not accepted", "scheme")
    key_id = creds.username
    key = read_key(key_id) if KEY_ID.fullmatch(key_id) else None
    secret = signing_secret(key, key_id)
    body_hash = content_hash(request.body)  # once, whatever the number of paths
    signed = False
    for path in {request.path, request.raw_path} - {""}:  # as routed, and as sent (a stage prefix): no early exit
        expected = hmac_response(secret, string_to_hash_of(path, creds.nonce, creds.timestamp, body_hash,
                                                           request.method.upper()))
        signed = responses_equal(expected, creds.response) or signed
    cause, account = _key_cause(request, key, signed and key is not None, "HMAC", now, wrong="signature")
    stale = now - creds.timestamp > MAX_AGE_SECONDS or creds.timestamp - now > MAX_FUTURE_SKEW_SECONDS
    cause = cause or ("timestamp" if stale else "")
    if cause:
        _decoy_claim(now)
        raise _refused(f"v4: API key refused ({cause})", cause)
    # The nonce stays unusable for as long as its timestamp is acceptable.
    expires_at = max(now, creds.timestamp) + MAX_AGE_SECONDS + MAX_FUTURE_SKEW_SECONDS
    if not claim_nonce(KEY_NONCE_PREFIX + key_id, creds.nonce, now, expires_at):
        raise _refused("v4: API key refused (nonce)", "nonce")
    assert key is not None and account is not None
    return _principal(key, account)
