"""POST /api/v1/authdebug (certification environment only): explains an Authorization header step by step.

It reads no key from any store: it uses the default shared key ``secret`` and a fixed default RSA key pair,
or the ``key`` / ``publicKey`` / ``privateKey`` override headers. It never verifies against a partner's real
credentials, so it cannot be used as an oracle for them. The function does not exist in prod (template
condition) and this module refuses to run there as a second line of defence.

Its verdict is the API's, step by step, for the key given in ``key`` taken as a partner's ``hmacKey`` as
issued: the same header parser, the same accepted key forms (the issued key, and the legacy decoded form while
that migration is on), the same canonical resources (the path as routed and as sent; the ``resource`` header
names another, e.g. the API path a header was made for), the same timestamp window (15 minutes old, 60 s in
the future) and the nonce: whether the API has already seen it (a read of the nonce table; nothing is
written, so checking a header here does not spend it). ``result.isValid`` and ``result.failedStep`` give the
overall verdict; only the partner's existence and status, which need its record, are not checked.
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
    MAX_FUTURE_SKEW_SECONDS,
    HeaderError,
    accepted_key_forms,
    content_hash,
    digest_response,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash_of,
)
from vaultcore.errors import NotFound
from vaultcore.settings import settings
from vaultcore.store.nonces import nonce_seen

__all__ = ["authdebug"]


def _rsa_sign(private_pem: str, message: str) -> str:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):  # _pem_header and the settings give RSA keys only
        raise TypeError("not an RSA private key")
    signature = key.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256())
    return base64.b64encode(signature).decode()


def _rsa_verify(public_pem: str, message: str, signature_b64: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_public_key(public_pem.encode())
        if not isinstance(key, rsa.RSAPublicKey):
            return False
        key.verify(base64.b64decode(signature_b64, validate=True), message.encode(), padding.PKCS1v15(),
                   hashes.SHA256())
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False


def _pem_header(value: str | None, private: bool) -> str | None:
    """An RSA key from a header (PEM with newlines escaped as \\n, or PEM base64-encoded whole), or None
    when it is not one of the kind asked for (the caller then uses the default and says so)."""
    if not value:
        return None
    text = value.replace("\\n", "\n").strip()
    if "BEGIN" not in text:
        try:
            text = base64.b64decode(text, validate=True).decode("ascii")
        except ValueError:
            return None
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        if private:
            key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
            return text if isinstance(key, rsa.RSAPrivateKey) else None
        return text if isinstance(serialization.load_pem_public_key(text.encode("ascii")), rsa.RSAPublicKey) else None
    except (ValueError, TypeError, UnicodeError):
        return None


def _nonce_seen(partner_id: str, nonce: str, now: int) -> bool:
    return nonce_seen(partner_id, nonce, now)


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
    public_override = _pem_header(request.header("publickey"), private=False)
    private_override = _pem_header(request.header("privatekey"), private=True)
    if request.header("publickey") and public_override is None:
        warnings.append("The publicKey header is not a PEM RSA public key; the default public key is used.")
    if request.header("privatekey") and private_override is None:
        warnings.append("The privateKey header is not an unencrypted PEM RSA private key; the default private key "
                        "is used.")
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
    resource = request.header("resource")
    if resource is not None and not (resource.startswith("/") and resource.isascii() and len(resource) <= 512):
        warnings.append("The resource header is not a path; this request's path is used.")
        resource = None
    paths = [resource] if resource else sorted({request.path, request.raw_path} - {""}, key=len, reverse=True)
    path = paths[-1] if not resource else resource  # shown: the path as routed (or the override)
    body_hash = content_hash(request.body)
    s2s = string_to_hash_of(path, nonce, timestamp, body_hash)
    key_bytes = key_text.encode("utf-8")
    forms = accepted_key_forms(key_bytes, accept_decoded=settings().hmac_accept_decoded_key)
    matched_form = None
    if method == "RSA":
        ours = _rsa_sign(private_pem, s2s)
        valid = bool(creds) and any(_rsa_verify(public_pem, string_to_hash_of(p, nonce, timestamp, body_hash),
                                                creds.response) for p in paths) if creds else False
        scheme = "Rsa"
    else:
        respond = digest_response if method == "Digest" else hmac_response
        ours = respond(key_bytes, s2s)
        for label, key in forms:
            for candidate in paths:
                given = creds.response if creds else ""
                if creds and responses_equal(respond(key, string_to_hash_of(candidate, nonce, timestamp, body_hash)),
                                             given) and matched_form is None:
                    matched_form = label
        valid = matched_form is not None
        scheme = "Digest" if method == "Digest" else "Hmac"
    if matched_form == "decoded":
        warnings.append("The response was made with the base64-DECODED key. Sign with the key exactly as issued "
                        "(the hmacKey text); the decoded form is accepted only during the migration.")
    elif not valid and method != "RSA" and len(key_text) == 64 and all(c in "0123456789abcdef" for c in key_text):
        warnings.append("The key header looks like the decoded form of an issued hmacKey: pass the key as issued.")
    username = (creds.username if creds else partner_id) or "<partnerId>"
    auth_header = f'{scheme} username="{username}", nonce="{nonce}", timestamp="{timestamp}", response="{ours}"'
    try:
        content = request.body.decode("utf-8")
    except UnicodeDecodeError:
        content = base64.b64encode(request.body).decode()
        warnings.append("The body is not UTF-8; content is shown base64-encoded.")
    incoming_ts = creds.timestamp if creds else None
    offset = (now - incoming_ts) if incoming_ts is not None else None
    timestamp_valid = offset is not None and -MAX_FUTURE_SKEW_SECONDS <= offset <= MAX_AGE_SECONDS
    nonce_seen = bool(creds) and _nonce_seen(creds.username, creds.nonce, now)  # type: ignore[union-attr]
    failed_step = ("header" if creds is None else "scheme" if creds.method != "HMAC" else
                   "response" if not valid else "timestamp" if not timestamp_valid else
                   "nonce" if nonce_seen else None)
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
                "isValid": timestamp_valid,
                "incoming": incoming_ts,
                "ours": now,
                "offset": offset,
            },
            "nonce": {"isValid": bool(creds) and not nonce_seen, "seen": nonce_seen},
            "keyForm": matched_form,
            # The API's verdict for this header (HMAC is the only scheme the APIs accept; Digest and RSA are
            # explained here for integrators of the original's other schemes).
            "isValid": failed_step is None,
            "failedStep": failed_step,
        },
        "explanation": [
            "1. The header is parsed into method, username, nonce, timestamp and response"
            + (f" (failed: {parse_error})." if parse_error else "."),
            "2. contentHash is the lowercase hex SHA-256 of the exact body bytes received.",
            "3. stringToSign is: POST, a space, the path, LF, nonce, LF, timestamp, LF, LF, contentHash.",
            {"HMAC": "4. response is the lowercase hex HMAC-SHA256 of stringToSign keyed with the key.",
             "Digest": "4. response is the lowercase hex SHA-256 of stringToSign, LF, then the key.",
             "RSA": "4. response is the base64 RSASSA-PKCS1-v1_5 SHA-256 signature of stringToSign."}[method],
            "5. The timestamp must be at most 15 minutes old and at most 60 seconds in the future; each nonce is "
            "accepted once in 15 minutes (this endpoint reads whether the API has seen it, and does not consume it).",
            "6. The key is the partner's hmacKey exactly as issued (its bytes, not base64-decoded).",
        ],
        "warnings": warnings,
    }
    return json_response(200, json.loads(json.dumps(result)))
