"""The parser API (ParserApi): device payload decryption."""

from __future__ import annotations

from typing import Any

from local.contracts import errors
from local.contracts.common import (
    basic_scheme,
    body,
    document,
    hmac_scheme,
    nullable,
    obj,
    parameter,
    ref,
    response,
    text,
)
from local.contracts.secure import (
    CLIENT_ID,
    MESSAGE_ID,
    PARTNER_ID,
    PARTNER_KEY,
    REFERENCE,
    error_responses,
    secure_schemas,
)
from vaultcore.devices.decryptx import MAX_VALUES as DECRYPT_MAX_VALUES
from vaultcore.devices.parser import MAX_PAYLOAD_HEX
from vaultcore.devices.profiles import PROFILES, profile_names


def build() -> dict[str, Any]:
    schemas = secure_schemas(errors.PARSER_CODES)
    types = "; ".join(f"`{p.name}`: {p.description}" for p in PROFILES.values())
    schemas["ParserRequest"] = obj({
        "partnerId": PARTNER_ID, "partnerKey": PARTNER_KEY, "reference": REFERENCE,
        "deviceType": {"type": "string", "enum": profile_names(),
                       "description": f"The device-type profile ({types}). Missing: 2000; unknown or not the "
                                      "registered device's type: 2001."},
        "deviceSerial": text(description="The device serial (surrounding spaces ignored). Missing: 1201.",
                             minLength=1),
        "devicePayload": text(f"[0-9A-Fa-f\\s]{{1,{MAX_PAYLOAD_HEX}}}",
                              f"The encrypted payload as hexadecimal text (whitespace ignored), at most "
                              f"{MAX_PAYLOAD_HEX} hex characters: the encrypted field of a terminal (keyed entry "
                              "`PAN[=YYMM[=CVV]]`, track 1, track 2, EMV tag 57/5A) or an audio reader's whole "
                              "message (original or enhanced format, bare or framed). Missing or not hex: 2100."),
        "ksn": text("[0-9A-Fa-f\\s]+", "The DUKPT key sequence number (hex): 10 bytes for TDES, 12 for AES. Required "
                                      "for terminal types; absent for `audio-reader` (inside the payload). 2400."),
        "clientId": nullable(CLIENT_ID),
    }, ("deviceType", "deviceSerial", "devicePayload"), closed=False, description="Unknown members are ignored.")
    section = obj({
        "decrypted": text("[0-9A-F]*", "The meaningful decrypted bytes, upper-case hex (track LRC and padding "
                                       "stripped)."),
        "encoding": {"type": "string", "enum": ["ascii", "hex"], "description": "`hex` for EMV data."},
        "length": {"type": "integer", "minimum": 0, "description": "Length of the meaningful data in bytes."},
        "ascii": {"type": "string", "description": "The data as text."},
        "masked": {"type": "string", "description": "The text with the PAN's middle, the expiry, the discretionary "
                                                    "data and the middle of each name starred."},
    }, ("decrypted", "encoding", "length", "ascii", "masked"))
    schemas["DecryptedSection"] = section
    s = {"type": "string"}
    schemas["ParserResponse"] = obj({
        "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
        "meta": obj({"device": s, "serial": s, "mode": {"type": "string", "enum": ["keyed", "swiped"],
                                                        "description": "EMV payloads answer `swiped`."}},
                    ("device", "serial", "mode")),
        "keyed": ref("DecryptedSection"), "track1": ref("DecryptedSection"), "track2": ref("DecryptedSection"),
        "extracted": obj({"PAN": text("[0-9]{12,19}"), "EXPY": text("[0-9]{4}", "Expiry, MMYY."),
                          "Surname": s, "FirstName": s, "ServiceCode": text("[0-9]{3}"), "Discretionary": s},
                         ("PAN",), description="Keyed: PAN and EXPY (when keyed with it); swiped: PAN, EXPY, names, "
                                               "service code and discretionary data when the track has them."),
    }, ("success", "messageId", "meta", "extracted"),
        description="`keyed` in keyed mode; `track1` and/or `track2` in swiped mode (EMV: `track2`).")
    paths = {"/api/decrypt/parser": {"post": {
        "operationId": "decryptParser", "tags": ["parser"], "summary": "Decrypt a device payload",
        "description": "Body credentials (`partnerId`/`partnerKey`, key-security partners) or an `Authorization` "
                       "header (HMAC partners must use HMAC). The device must be registered to the partner and "
                       "active; its BDK decrypts (software DUKPT or the HSM).",
        "security": [{"hmac": []}, {"basic": []}, {}], "x-body-credentials": ["partnerId", "partnerKey"],
        "requestBody": body(ref("ParserRequest"), example={
            "partnerId": "demokey", "partnerKey": "...", "reference": "swipe-1", "deviceType": "terminal",
            "deviceSerial": "DEMO-TERM-0001", "ksn": "FFFF9876543210E00001",
            "devicePayload": "36227AC1E5487CEFC304F28B5678A371DA3FE838287759D7C62ADCC341AEB406E351597CA82F793A"}),
        "responses": {"200": response("The decrypted, masked and extracted card data.", ref("ParserResponse")),
                      **error_responses(400, 401, 409, 500, body_credentials=True)},
    }}}
    _decryptx(schemas, paths)
    return document(
        api="parser", title="Vault parser API",
        description="DUKPT decryption of reader payloads (`POST /api/decrypt/parser`), and Decryptx's "
                    "`POST /api/decrypt` and `GET /api/healthcheck` as the original's clients call them. Errors: `{success: false, "
                    "errCode, errMessage, reference?, messageId?}` (schema `SecureError`); "
                    "docs/integrators/parser.md, \"Decryption errors\", and docs/integrators/errors.md, "
                    "\"Secure API and parser errors\".",
        paths=paths, schemas=schemas, security_schemes={"hmac": hmac_scheme(), "basic": basic_scheme()},
        tags=[{"name": "parser"}, {"name": "decryptx"}])


def _decryptx(schemas: dict[str, Any], paths: dict[str, Any]) -> None:
    """Decryptx (vaultcore.devices.decryptx): the original's members, statuses and error body."""
    s = {"type": "string"}
    schemas["DecryptRequest"] = obj({
        "partnerId": PARTNER_ID, "partnerKey": PARTNER_KEY, "reference": REFERENCE,
        "serial": text(description="The device serial (surrounding spaces ignored). Missing: 1201; not registered "
                                   "to the partner: 1202; inactive: 1203.", minLength=1),
        "clientId": nullable(CLIENT_ID),
        "firmware": text(description="The firmware read from the device (accepted, not compared)."),
        "hasCcData": {"type": "string", "enum": ["1", "0"], "default": "1",
                      "description": "`1`: a value that holds a card number before decryption, or none after it, "
                                     "fails (its `code` 2105). Anything else: 2102."},
        "decryptionParameters": obj({
            "sequenceNumber": text(description="The DUKPT KSN in `encoding` (10 bytes TDES, 12 AES). 2400."),
            "cbcVector": text(description="The CBC initial vector in `encoding` (one block; zero when absent). "
                                          "Wrong length: the value's `code` 2602."),
            "encoding": {"type": "string", "enum": ["base64", "hex"], "default": "base64",
                         "description": "How the values, `sequenceNumber` and `cbcVector` are written, and how "
                                        "the decrypted values are answered. Anything else: 2102."},
        }, (), closed=False),
        "encrypted": {"type": "array", "minItems": 1, "maxItems": DECRYPT_MAX_VALUES,
                      "items": obj({"name": s, "value": text(description="Encrypted data in `encoding`.",
                                                             minLength=1)}, ("name", "value"), closed=False),
                      "description": f"1 to {DECRYPT_MAX_VALUES} values read from the device (2101)."},
    }, ("serial", "encrypted"), closed=False, description="Unknown members are ignored.")
    schemas["Decrypted"] = obj({
        "name": s, "value": text(description="The decrypted bytes (padding included) in `encoding`; empty when "
                                             "failed."),
        "failed": {"type": "boolean"},
        "code": text(description="Empty, or the public code of the failure (2105, 2600, 2601, 2602, 2605)."),
        "message": s,
    }, ("name", "value", "failed", "code", "message"))
    schemas["DecryptResponse"] = obj({
        "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
        "decrypted": {"type": "array", "items": ref("Decrypted"), "description": "One per value, in order."},
    }, ("success", "reference", "messageId", "decrypted"),
        description="`reference` is always there (empty when none was sent), as the original's document requires.")
    paths["/api/decrypt"] = {"post": {
        "operationId": "decrypt", "tags": ["decryptx"], "summary": "Decrypt up to 100 named values of one device",
        "description": "Decryptx, as the original's clients call it: for readers whose payload is not one of the "
                       "parser's layouts. Each value is decrypted on its own with the device's BDK (software DUKPT "
                       "or the HSM) and answered in clear to the authenticated partner, like the parser's.",
        "security": [{"hmac": []}, {"basic": []}, {}], "x-body-credentials": ["partnerId", "partnerKey"],
        "requestBody": body(ref("DecryptRequest")),
        "responses": {"200": response("One entry per value.", ref("DecryptResponse")),
                      **error_responses(400, 401, 409, 500, body_credentials=True)},
    }}
    schemas["DecryptExternalRequest"] = obj({
        "partnerId": PARTNER_ID, "partnerKey": PARTNER_KEY, "reference": REFERENCE,
        "serial": text(description="The device whose data was decrypted elsewhere (1201, 1202, 1203).",
                       minLength=1),
        "clientId": nullable(CLIENT_ID),
        "encrypted": {"type": "integer", "minimum": 0, "maximum": 1_000_000,
                      "description": "How many values were to be decrypted (2101 otherwise)."},
        "decrypted": {"type": "integer", "minimum": 0, "maximum": 1_000_000,
                      "description": "How many were (2101 otherwise)."},
        "success": {"type": "boolean", "description": "Whether the decryption succeeded (2101 otherwise)."},
        "ip": s, "completed": text(description="When it completed (accepted, not checked)."),
    }, ("serial", "encrypted", "decrypted", "success"), closed=False, description="Unknown members are ignored.")
    schemas["DecryptExternalResponse"] = obj({
        "success": {"type": "boolean", "description": "The request's `success`, mirrored."},
        "reference": REFERENCE, "messageId": MESSAGE_ID,
        "decrypted": {"type": "integer", "minimum": 0, "description": "The request's `decrypted`, mirrored."},
    }, ("success", "reference", "messageId", "decrypted"))
    paths["/api/decrypt-ext"] = {"post": {
        "operationId": "decryptExternal", "tags": ["decryptx"],
        "summary": "Record a decryption done elsewhere (the original's logging hook)",
        "description": "The caller and its device are checked as for `decrypt`; the counts (never a value) are "
                       "logged and the outcome counted in the DecryptResults metric. The answer mirrors the "
                       "request's `success`, `reference` and `decrypted`.",
        "security": [{"hmac": []}, {"basic": []}, {}], "x-body-credentials": ["partnerId", "partnerKey"],
        "requestBody": body(ref("DecryptExternalRequest")),
        "responses": {"200": response("Recorded.", ref("DecryptExternalResponse")),
                      **error_responses(400, 401, 409, 500, body_credentials=True)},
    }}
    query = [parameter(name, "query", text_) for name, text_ in (
        ("partnerId", "Credentials of a key-security partner (or send an `Authorization` header)."),
        ("partnerKey", "The partner key."),
        ("serial", "The device to check."), ("clientId", "The device's clientId, if registered with one."),
        ("reference", "Echoed (at most 50 characters)."),
        ("encryptedName", "Accepted; not decrypted (no sequence number travels with a health check)."),
        ("encryptedValue", "Accepted; not decrypted."))]
    paths["/api/healthcheck"] = {"get": {
        "operationId": "decryptxHealthcheck", "tags": ["decryptx"],
        "summary": "Can this device's data be decrypted now?",
        "description": "The credentials, the device (registered, active), its BDK (key store or HSM) and the "
                       "DUKPT engine (a synthetic block round-trips under the device's BDK and a synthetic KSN). "
                       "`decrypted` is empty.",
        "security": [{"hmac": []}, {"basic": []}, {}], "parameters": query,
        "responses": {"200": response("Healthy.", ref("DecryptResponse")),
                      **error_responses(400, 401, 409, 500, body_credentials=True)},
    }}
