"""Partner authentication for the secure API, the parser, tokenization and the proxy (spec: Authentication).

Order of checks for the HMAC scheme, each failure the same AuthenticationFailed (uniform 1003 / 8003):
parse the header → load the partner (cached, unknown ids too) → signature over the exact body (hashed once)
with each live HMAC key in its accepted forms (the key as issued, and the legacy decoded form while the
migration lasts; constant time, stand-in keys for an unknown or disabled partner) → active → timestamp within
15 minutes (and not more than 60 s in the future) → the nonce, last, with one conditional put, so a forged
request cannot burn a legitimate caller's nonce. Every failure costs the same store calls (see _Attempt).

A partner whose API security is ``hmac`` is accepted only with HMAC. A partner on ``key`` security may use
``Authorization: Basic base64(partnerId:partnerKey)``, HMAC, or (where the endpoint takes it) the body's
``partnerId``/``partnerKey``, whose errors are the specific 1101-1105 codes of the public facts.

:class:`AuthenticatedPartner` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a
dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request
from vaultcore.auth.hmac_scheme import (
    MAX_AGE_SECONDS,
    MAX_FUTURE_SKEW_SECONDS,
    HeaderError,
    SchemeCredentials,
    content_hash,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash_of,
)
from vaultcore.errors import AuthenticationFailed, VaultError
from vaultcore.logs import get_logger
from vaultcore.metrics import authentication_failed
from vaultcore.partners.service import Partner, hmac_signing_keys, load_partner, lookup_partner, partner_key_matches
from vaultcore.plain import Frozen, init
from vaultcore.store.nonces import claim_nonce, decoy_claim

log = get_logger(__name__)

__all__ = ["AuthenticatedPartner", "authenticate", "authenticate_header", "PartnerAuthError", "signature_matches",
           "request_paths"]


class PartnerAuthError(VaultError):
    """Body-credential errors of key-security partners (public facts: 1101-1105)."""


def _failed(reason: str) -> AuthenticationFailed:
    authentication_failed(reason)  # the AuthenticationFailures metric, by cause (vaultcore.metrics)
    return AuthenticationFailed(reason)


def _body_error(message: str, code: int, status: int) -> PartnerAuthError:
    authentication_failed(code)
    return PartnerAuthError(message, code=code, status=status)


class AuthenticatedPartner(Frozen):
    __slots__ = ("partner", "method")
    partner: Partner
    method: str  # "hmac", "basic" or "body"

    def __init__(self, partner: Partner, method: str) -> None:
        init(self, partner=partner, method=method)

    @property
    def partner_id(self) -> str:
        return self.partner.partner_id


# Stand-in keys for a partner that cannot be checked (unknown or disabled): the signature loop runs over as
# many keys as a partner with one live key and the legacy form, so the time does not tell the cause.
_DECOY_KEYS = [("issued", b"0" * 88), ("decoded", b"0" * 64)]
_DECOY_PARTNER_ID = "#decoy"  # no partner has it: partner ids are letters and digits


class _Attempt:
    """One authentication attempt: on failure, every cause costs the same work (issue 12, timing).

    Each failure makes exactly one partner-table read and one conditional nonce write: a cause that has not
    made them yet makes stand-in ones (a read of a key no partner has; the conditional put a reused nonce
    fails, on an item that always exists). So an unknown partner (whose lookup reads the table), a known one
    (cached: no read), a disabled one, a wrong signature, a stale timestamp and a reused nonce (whose real claim
    failed) cannot be told apart by their time. Success pays none of this.
    """

    def __init__(self) -> None:
        self.read = False
        self.claimed = False

    def fail(self, reason: str) -> AuthenticationFailed:
        if not self.read:
            lookup_partner(_DECOY_PARTNER_ID, cached=False)
        if not self.claimed:
            decoy_claim(int(clock.now()))
        return _failed(reason)


def signature_matches(keys: list[tuple[str, bytes]], paths: set[str], creds: SchemeCredentials,
                      body_hash: str) -> str | None:
    """The label of the key form that produced ``creds.response`` over one of ``paths``, or None.

    Every key and path is tried (no early exit), so the time depends only on how many there are.
    """
    matched: str | None = None
    for label, key in keys:
        for path in paths:
            expected = hmac_response(key, string_to_hash_of(path, creds.nonce, creds.timestamp, body_hash))
            if responses_equal(expected, creds.response) and matched is None:
                matched = label
    return matched


def request_paths(request: Request) -> set[str]:
    """The canonical resources a signature may cover: the path as routed and as sent (with a stage prefix)."""
    return {request.path, request.raw_path} - {""}


def _verify_hmac(request: Request, header: str) -> AuthenticatedPartner:
    attempt = _Attempt()
    try:
        creds = parse_authorization(header)
    except HeaderError as exc:
        raise attempt.fail(f"malformed header: {exc}") from None
    if creds.method != "HMAC":
        raise attempt.fail("scheme not accepted")
    partner, attempt.read = lookup_partner(creds.username)
    usable = partner is not None and partner.active
    keys = hmac_signing_keys(partner) if usable else _DECOY_KEYS  # type: ignore[arg-type]
    body_hash = content_hash(request.body)  # once per check, whatever the number of keys and paths
    form = signature_matches(keys, request_paths(request), creds, body_hash)
    if partner is None:
        raise attempt.fail("unknown partner")
    if not partner.active:
        raise attempt.fail("partner disabled")
    if form is None:
        raise attempt.fail("signature mismatch")
    now = int(clock.now())
    if now - creds.timestamp > MAX_AGE_SECONDS:
        raise attempt.fail("timestamp too old")
    if creds.timestamp - now > MAX_FUTURE_SKEW_SECONDS:
        raise attempt.fail("timestamp in the future")
    # The nonce must stay unusable for as long as its timestamp is acceptable.
    expires_at = max(now, creds.timestamp) + MAX_AGE_SECONDS + MAX_FUTURE_SKEW_SECONDS
    attempt.claimed = True
    if not claim_nonce(partner.partner_id, creds.nonce, now, expires_at):
        raise attempt.fail("nonce reused")
    if form != "issued":
        log.info("hmac signed with the legacy decoded key form", extra={"partner_id": partner.partner_id})
    return AuthenticatedPartner(partner, "hmac")


def _verify_basic(header: str) -> AuthenticatedPartner:
    attempt = _Attempt()
    encoded = header.strip()[5:].strip()
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise attempt.fail("malformed basic header") from None
    partner_id, sep, partner_key = decoded.partition(":")
    if not sep:
        raise attempt.fail("malformed basic header")
    partner, attempt.read = lookup_partner(partner_id)
    key_ok = partner is not None and partner_key_matches(partner, partner_key)
    if partner is None:
        raise attempt.fail("unknown partner")
    if not partner.active:
        raise attempt.fail("partner disabled")
    if partner.api_security == "hmac":
        raise attempt.fail("partner requires hmac")
    if not key_ok:
        raise attempt.fail("wrong partner key")
    return AuthenticatedPartner(partner, "basic")


def authenticate_header(request: Request) -> AuthenticatedPartner:
    header = request.header("authorization")
    if not header or not header.isascii():
        raise _failed("missing or non-ASCII authorization header")
    scheme = header.strip().split(" ", 1)[0].lower()
    if scheme == "basic":
        return _verify_basic(header)
    return _verify_hmac(request, header)


def authenticate(request: Request, body: dict[str, Any] | None, *, body_credentials: bool) -> AuthenticatedPartner:
    """Authenticate by header when one is sent, else by body credentials where the endpoint allows them."""
    if request.header("authorization") is not None or not body_credentials:
        return authenticate_header(request)
    body = body or {}
    partner_id = body.get("partnerId")
    partner_key = body.get("partnerKey")
    if not isinstance(partner_id, str) or not partner_id:
        raise _body_error("partnerId is required.", 1101, 400)
    if not isinstance(partner_key, str) or not partner_key:
        raise _body_error("partnerKey is required.", 1102, 400)
    partner = load_partner(partner_id)
    if partner is None:
        raise _body_error("Partner not found.", 1103, 401)
    if partner.api_security == "hmac":
        # HMAC partners are accepted only with HMAC, and their failures never reveal a cause.
        raise _failed("partner requires hmac")
    if not partner.active:
        raise _body_error("Partner is disabled.", 1104, 401)
    if not partner_key_matches(partner, partner_key):
        raise _body_error("Invalid partner key.", 1105, 401)
    return AuthenticatedPartner(partner, "body")
