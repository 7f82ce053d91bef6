"""POST /api/v1/authdebug (certification environment only): explains an Authorization header step by step.

It reads no key from any store: it uses the default shared key ``secret`` and a fixed default RSA key pair,
or the ``key`` / ``publicKey`` / ``privateKey`` override headers. It never verifies against a partner's real
credentials, so it cannot be used as an oracle for them. The function does not exist in prod (template
condition) and this module refuses to run there as a second line of defence.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request, Response, json_response
from vaultcore.auth.debug_keys import DEFAULT_RSA_PRIVATE_KEY, DEFAULT_RSA_PUBLIC_KEY, DEFAULT_SHARED_KEY
from vaultcore.auth.hmac_scheme import (
    MAX_AGE_SECONDS,
    HeaderError,
    content_hash,
    digest_response,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash,
)
from vaultcore.errors import NotFound
from vaultcore.settings import settings

__all__ = ["authdebug"]


def _rsa_sign(private_pem: str, message: str) -> str:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    signature = key.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256())  # type: ignore[union-attr,call-arg]
    return base64.b64encode(signature).decode()


def _rsa_verify(public_pem: str, message: str, signature_b64: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        key = serialization.load_pem_public_key(public_pem.encode())
        key.verify(base64.b64decode(signature_b64, validate=True), message.encode(),  # type: ignore[union-attr,call-arg]
                   padding.PKCS1v15(), hashes.SHA256())
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False


def _pem_header(value: str | None) -> str | None:
    """PEM keys in a header arrive with their newlines escaped as \\n, or base64-encoded whole."""
    if not value:
        return None
    text = value.replace("\\n", "\n").strip()
    if "BEGIN" not in text:
        try:
            text = base64.b64decode(text, validate=True).decode("ascii")
        except ValueError:
            return None
    return text


def authdebug(request: Request) -> Response:
    if not settings().is_cert:
        raise NotFound("Not found.")
    now = int(clock.now())
    raw = request.header("authorization") or ""
    body = request.json()
    partner_id = body.get("partnerId") if isinstance(body, dict) else None
    warnings: list[str] = []
    key_override = request.header("key")
    key_text = key_override if key_override is not None else DEFAULT_SHARED_KEY
    public_override = _pem_header(request.header("publickey"))
    private_override = _pem_header(request.header("privatekey"))
    if request.header("publickey") and public_override is None:
        warnings.append("The publicKey header is not a PEM public key; the default public key is used.")
    if request.header("privatekey") and private_override is None:
        warnings.append("The privateKey header is not a PEM private key; the default private key is used.")
    if public_override and not private_override:
        warnings.append("publicKey was overridden without privateKey: the generated RSA signature uses the default "
                        "private key, so it cannot match a signature made with your key pair.")
    public_pem = public_override or DEFAULT_RSA_PUBLIC_KEY
    private_pem = private_override or DEFAULT_RSA_PRIVATE_KEY

    parsed: dict[str, Any] = {"raw": raw, "method": None, "username": None, "nonce": None, "timestamp": None,
                              "response": None}
    parse_error = None
    creds = None
    try:
        creds = parse_authorization(raw)
        parsed.update(method=creds.method, username=creds.username, nonce=creds.nonce, timestamp=creds.timestamp,
                      response=creds.response)
    except HeaderError as exc:
        parse_error = str(exc)
        warnings.append(f"The Authorization header could not be parsed: {exc}.")
    partner_id = partner_id or (creds.username if creds else None)
    method = creds.method if creds else "HMAC"
    nonce = creds.nonce if creds else "<nonce>"
    timestamp = creds.timestamp if creds else now
    path = request.path
    s2s = string_to_hash(path, nonce, timestamp, request.body)
    key = key_text.encode("utf-8")
    if method == "RSA":
        ours = _rsa_sign(private_pem, s2s)
        valid = bool(creds) and _rsa_verify(public_pem, s2s, creds.response) if creds else False
        scheme = "Rsa"
    elif method == "Digest":
        ours = digest_response(key, s2s)
        valid = bool(creds) and responses_equal(ours, creds.response)
        scheme = "Digest"
    else:
        ours = hmac_response(key, s2s)
        valid = bool(creds) and responses_equal(ours, creds.response)
        scheme = "Hmac"
    username = (creds.username if creds else partner_id) or "<partnerId>"
    auth_header = f'{scheme} username="{username}", nonce="{nonce}", timestamp="{timestamp}", response="{ours}"'
    try:
        content = request.body.decode("utf-8")
    except UnicodeDecodeError:
        content = base64.b64encode(request.body).decode()
        warnings.append("The body is not UTF-8; content is shown base64-encoded.")
    incoming_ts = creds.timestamp if creds else None
    result = {
        "partnerId": partner_id,
        "key": key_text if method != "RSA" else ("override" if public_override else "default RSA key pair"),
        "authorizationHeader": parsed,
        "signatureSteps": {
            "httpVerb": "POST",
            "canonicalizedResource": path,
            "nonce": nonce,
            "timestamp": timestamp,
            "content": content,
            "contentHash": content_hash(request.body),
            "stringToSign": s2s,
            "response": ours,
            "authHeader": auth_header,
        },
        "result": {
            "response": {"isValid": valid, "incoming": creds.response if creds else None, "ours": ours},
            "timestamp": {
                "isValid": incoming_ts is not None and 0 <= now - incoming_ts <= MAX_AGE_SECONDS,
                "incoming": incoming_ts,
                "ours": now,
                "offset": (now - incoming_ts) if incoming_ts is not None else None,
            },
        },
        "explanation": [
            "1. The header is parsed into method, username, nonce, timestamp and response"
            + (f" (failed: {parse_error})." if parse_error else "."),
            "2. contentHash is the lowercase hex SHA-256 of the exact body bytes received.",
            "3. stringToSign is: POST, a space, the path, LF, nonce, LF, timestamp, LF, LF, contentHash.",
            {"HMAC": "4. response is the lowercase hex HMAC-SHA256 of stringToSign keyed with the key.",
             "Digest": "4. response is the lowercase hex SHA-256 of stringToSign, LF, then the key.",
             "RSA": "4. response is the base64 RSASSA-PKCS1-v1_5 SHA-256 signature of stringToSign."}[method],
            "5. The timestamp must be at most 15 minutes old; each nonce is accepted once in 15 minutes "
            "(this endpoint does not consume nonces).",
        ],
        "warnings": warnings,
    }
    return json_response(200, json.loads(json.dumps(result)))
