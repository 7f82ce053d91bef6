"""Partner authentication for the secure API, the parser, tokenization and the proxy (spec: Authentication).

Order of checks for the HMAC scheme, each failure the same AuthenticationFailed (uniform 1003 / 8003):
parse the header → load the partner (cached) → active → signature over the exact body with each live HMAC
key (constant time) → timestamp within 15 minutes (and not more than 60 s in the future) → the nonce, last,
with one conditional put, so a forged request cannot burn a legitimate caller's nonce.

A partner whose API security is ``hmac`` is accepted only with HMAC. A partner on ``key`` security may use
``Authorization: Basic base64(partnerId:partnerKey)``, HMAC, or (where the endpoint takes it) the body's
``partnerId``/``partnerKey``, whose errors are the specific 1101-1105 codes of the public facts.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request
from vaultcore.auth.hmac_scheme import (
    MAX_AGE_SECONDS,
    MAX_FUTURE_SKEW_SECONDS,
    HeaderError,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash,
)
from vaultcore.errors import AuthenticationFailed, VaultError
from vaultcore.partners.service import Partner, hmac_keys_of, load_partner, partner_key_matches
from vaultcore.store.nonces import claim_nonce

__all__ = ["AuthenticatedPartner", "authenticate", "authenticate_header", "PartnerAuthError"]


class PartnerAuthError(VaultError):
    """Body-credential errors of key-security partners (public facts: 1101-1105)."""


@dataclass(frozen=True)
class AuthenticatedPartner:
    partner: Partner
    method: str  # "hmac", "basic" or "body"

    @property
    def partner_id(self) -> str:
        return self.partner.partner_id


def _verify_hmac(request: Request, header: str) -> AuthenticatedPartner:
    try:
        creds = parse_authorization(header)
    except HeaderError as exc:
        raise AuthenticationFailed(f"malformed header: {exc}") from None
    if creds.method != "HMAC":
        raise AuthenticationFailed("scheme not accepted")
    partner = load_partner(creds.username)
    if partner is None:
        raise AuthenticationFailed("unknown partner")
    if not partner.active:
        raise AuthenticationFailed("partner disabled")
    paths = {request.path, request.raw_path} - {""}
    matched = False
    for key in hmac_keys_of(partner):
        for path in paths:
            expected = hmac_response(key, string_to_hash(path, creds.nonce, creds.timestamp, request.body))
            matched |= responses_equal(expected, creds.response)
    if not matched:
        raise AuthenticationFailed("signature mismatch")
    now = int(clock.now())
    if now - creds.timestamp > MAX_AGE_SECONDS:
        raise AuthenticationFailed("timestamp too old")
    if creds.timestamp - now > MAX_FUTURE_SKEW_SECONDS:
        raise AuthenticationFailed("timestamp in the future")
    # The nonce must stay unusable for as long as its timestamp is acceptable.
    expires_at = max(now, creds.timestamp) + MAX_AGE_SECONDS + MAX_FUTURE_SKEW_SECONDS
    if not claim_nonce(partner.partner_id, creds.nonce, now, expires_at):
        raise AuthenticationFailed("nonce reused")
    return AuthenticatedPartner(partner, "hmac")


def _verify_basic(header: str) -> AuthenticatedPartner:
    encoded = header.strip()[5:].strip()
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise AuthenticationFailed("malformed basic header") from None
    partner_id, sep, partner_key = decoded.partition(":")
    if not sep:
        raise AuthenticationFailed("malformed basic header")
    partner = load_partner(partner_id)
    if partner is None:
        raise AuthenticationFailed("unknown partner")
    if not partner.active:
        raise AuthenticationFailed("partner disabled")
    if partner.api_security == "hmac":
        raise AuthenticationFailed("partner requires hmac")
    if not partner_key_matches(partner, partner_key):
        raise AuthenticationFailed("wrong partner key")
    return AuthenticatedPartner(partner, "basic")


def authenticate_header(request: Request) -> AuthenticatedPartner:
    header = request.header("authorization")
    if not header or not header.isascii():
        raise AuthenticationFailed("missing or non-ASCII authorization header")
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
        raise PartnerAuthError("partnerId is required.", code=1101, status=400)
    if not isinstance(partner_key, str) or not partner_key:
        raise PartnerAuthError("partnerKey is required.", code=1102, status=400)
    partner = load_partner(partner_id)
    if partner is None:
        raise PartnerAuthError("Partner not found.", code=1103, status=401)
    if partner.api_security == "hmac":
        # HMAC partners are accepted only with HMAC, and their failures never reveal a cause.
        raise AuthenticationFailed("partner requires hmac")
    if not partner.active:
        raise PartnerAuthError("Partner is disabled.", code=1104, status=401)
    if not partner_key_matches(partner, partner_key):
        raise PartnerAuthError("Invalid partner key.", code=1105, status=401)
    return AuthenticatedPartner(partner, "body")
