"""The secure API (SecureApi): partner and device validation, authdebug, tokenization."""

from __future__ import annotations

from typing import Any

from local.contracts import errors
from local.contracts.common import (
    basic_scheme,
    body,
    codes,
    document,
    hmac_scheme,
    nullable,
    obj,
    parameter,
    ref,
    response,
    text,
)
from vaultcore.api.secure import MAX_REFERENCE_LENGTH
from vaultcore.tokens.api import MAX_VALUES
from vaultcore.tokens.bfid import BFID_MIN_LENGTH, BFID_TEXT_MAX_LENGTH
from vaultcore.tokens.endpoints import BATCH_BUDGET_SECONDS, MAX_BATCH_ITEMS
from vaultcore.tokens.templates import _TEMPLATE_REF

MESSAGE_ID = text("^[0-9]{25}$", "Unique identifier of the response: 25 digits.")
REFERENCE = text(description=f"The caller's reference: a string of at most {MAX_REFERENCE_LENGTH} characters, "
                             "echoed in the response whether the call succeeds or not. Otherwise (null included) "
                             "errCode 1002, and an error never echoes it.",
                 maxLength=MAX_REFERENCE_LENGTH)
PARTNER_ID = text(description="Body credentials (key-security partners): the partner id. Ignored when an "
                              "`Authorization` header is sent. Missing: 1101.")
PARTNER_KEY = text(description="Body credentials: the partner key. Missing: 1102; wrong: 1105.")
CLIENT_ID = text(description="The partner's client the device belongs to, as registered (serial + clientId is "
                             "unique per partner). Not a string: 1201.")


def secure_schemas(table: dict[int, str]) -> dict[str, Any]:
    """The secure API's shared response schemas (also used by the parser document)."""
    return {
        "ErrorCode": codes(table, "`errCode` of the secure API and parser error body."),
        "SecureError": obj({
            "success": {"const": False},
            "errCode": ref("ErrorCode"),
            "errMessage": text(description="Human-readable; never holds a value, a key or card data."),
            "reference": text(description="The request's `reference`, echoed when it was sent.",
                              maxLength=MAX_REFERENCE_LENGTH),
            "messageId": MESSAGE_ID,
        }, ("success", "errCode", "errMessage"),
            description="Every error of the secure API and parser. Request-validation errors (400 before the "
                        "request ran) carry no `messageId`."),
        "AuthenticationRequired": obj({
            "success": {"const": False},
            "errMessage": {"const": "Authentication required."},
            "errCode": {"const": 1003},
        }, ("success", "errMessage", "errCode"),
            description="Exactly `{\"success\": false, \"errMessage\": \"Authentication required.\", "
                        "\"errCode\": 1003}` for every authentication failure, whatever the cause."),
        "RouteNotFound": obj({
            "success": {"const": False}, "errCode": {"const": 1007},
            "messageId": text(description="API Gateway's request id (not 25 digits: no function ran)."),
            "errMessage": {"type": "string"},
        }, ("success", "messageId", "errCode", "errMessage"),
            description="HTTP 404 for a path this API does not have (API Gateway's gateway response: no function "
                        "runs), in the shape of the original's error bodies."),
        "Success": obj({"success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID},
                       ("success", "messageId")),
    }


def error_responses(*statuses: int, body_credentials: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for status in statuses:
        if status == 401:
            schema = ({"anyOf": [ref("AuthenticationRequired"), ref("SecureError")]} if body_credentials
                      else ref("AuthenticationRequired"))
            out["401"] = response("Authentication failed: the uniform 1003 body" + (
                "; with body credentials of a key-security partner 1103/1104/1105." if body_credentials else "."),
                schema)
        else:
            out[str(status)] = response({
                400: "Invalid request (1001, 1002, 1006, and the operation's own codes).",
                409: "The device is not registered (1202), not active (1203) or runs another firmware (1204).",
                500: "Internal error (errCode 1): a dependency is unavailable.",
            }[status], ref("SecureError"))
    return out


def tokenization_errors(*statuses: int) -> dict[str, Any]:
    """The tokenization API's error responses: the original's ErrorResponse (schema ``TokenizationError``)."""
    text_of = {
        400: "The request could not be read (1001, 1002, 1006, 3000, 3020-3023, 3042, 3043).",
        401: "Authentication failed: 1003, the same code and message for every cause.",
        403: "Not permitted (3040, 3041, 3045).",
        409: "Invalid data: a template, field, value, token or bfid that cannot be used (3001-3005, 3010-3019, "
             "3030, 3046), a device that is not registered or active (1202, 1203).",
        500: "Internal error (errCode 1): a dependency is unavailable.",
        503: "The request's work budget ran out (3044): send the batch again.",
    }
    return {str(st): response(text_of[st], ref("TokenizationError")) for st in statuses}


def _tokenize_schemas() -> dict[str, Any]:
    value = obj({
        "name": text(description="The template field's system name (e.g. `vault_token_card_number`). Not in the "
                                 "template: 3002; twice: 3005."),
        "value": text(description="The clear value, validated per field type before anything is encrypted: card "
                                  "numbers 12-19 digits and Luhn-valid, dates MMYY/MMYYYY/YYYYMMDD (month 01-12), "
                                  "routing numbers 9 digits with the ABA checksum, tax ids 9 digits, bank accounts "
                                  "digits, e-mail `local@dotted.domain` (3003); lengths from the template (3004)."),
    }, ("name", "value"))
    return {
        "TokenizationError": obj({
            "success": {"const": False}, "messageId": MESSAGE_ID, "errCode": ref("ErrorCode"),
            "errMessage": text(description="Human-readable; never holds a value, a token or a key."),
            "reference": text(description="The request's `reference`, echoed when it was sent.",
                              maxLength=MAX_REFERENCE_LENGTH),
            "itemIndex": {"type": "integer", "minimum": 0,
                          "description": "A batch in the original's `batches` form: the entry that failed it."},
            "itemReference": text(description="That entry's `reference`, when it sent a valid one.",
                                  maxLength=MAX_REFERENCE_LENGTH),
        }, ("success", "messageId", "errCode", "errMessage"),
            description="Every error of the tokenization API (the original's ErrorResponse, with `success`). "
                        "Authentication failures are 1003 with the same message whatever the cause."),
        "TokenValue": value,
        "TokenizeRequest": obj({
            "reference": REFERENCE,
            "templateRef": text(_TEMPLATE_REF, "Template reference (`DEMO`, `GATEWAY`, or one created with "
                                                     "the management API). Missing: 3000; unknown: 3001."),
            "values": {"type": "array", "items": ref("TokenValue"), "minItems": 1, "maxItems": MAX_VALUES,
                       "description": f"1 to {MAX_VALUES} values (3020; an entry not `{{name, value}}` of strings: "
                                      "3021). May be omitted when the device headers fill the card fields."},
            "omit": {"type": "boolean", "default": False,
                     "description": "`true` is `?omit=1` (the query parameter wins when both are sent). Not a "
                                    "boolean: 3022."},
        }, ("templateRef",), closed=False,
            description="Unknown members are ignored."),
        "BfidRequest": obj({"reference": REFERENCE, "bfid": BFID_TEXT}, ("bfid",), closed=False,
                           description="Unknown members are ignored. `bfid` missing or not a string: 3010."),
        "DetokenizeRequest": obj({
            "reference": REFERENCE, "bfid": BFID_TEXT,
            "values": {"type": "array", "items": ref("TokenValue"), "minItems": 1, "maxItems": MAX_VALUES,
                       "description": f"1 to {MAX_VALUES} `{{name, value}}`: the tokens to detokenize (3020, 3021)."},
        }, ("bfid", "values"), closed=False, description="Unknown members are ignored."),
        "ValuesResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID, "bfid": BFID_TEXT,
            "values": {"type": "array", "items": value, "description": "Matched by `name` (order not guaranteed)."},
        }, ("success", "messageId", "bfid", "values")),
        "DeleteResponse": obj({"success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
                               "bfid": BFID_TEXT, "deleted": {"const": True},
                               "values": {"type": "array", "items": value,
                                          "description": "Query and delete: the tokens still kept for `read` under "
                                                         "the bfid (tokenize with `omit`), read just before the "
                                                         "deletion; empty otherwise."}},
                              ("success", "messageId", "bfid", "deleted", "values")),
        "BatchTokenizeRequest": obj({
            "reference": REFERENCE,
            "templateRef": text(_TEMPLATE_REF, "The template of every entry that names none."),
            "batches": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_ITEMS,
                        "items": ref("BatchTokenizeEntry"),
                        "description": f"The original's form: 1 to {MAX_BATCH_ITEMS} entries (3042), each "
                                       "tokenized under a new bfid. Wins over `items` when both are sent."},
            "items": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_ITEMS,
                      "items": ref("BatchTokenizeEntry"),
                      "description": f"Our form: 1 to {MAX_BATCH_ITEMS} items (3042), each tokenized on its own "
                                     "under a new bfid and answered on its own."},
            "omit": {"type": "boolean", "default": False, "description": "As for `tokenize` (`?omit=1`)."},
        }, (), closed=False, description="`batches` (the original's form) or `items` (ours); neither: 3042."),
        "BatchTokenizeEntry": obj({"reference": REFERENCE,
                                   "templateRef": text(_TEMPLATE_REF, "Wins over the body's `templateRef`."),
                                   "values": {"type": "array", "items": ref("TokenValue"), "minItems": 1,
                                              "maxItems": MAX_VALUES}}, ("values",), closed=False),
        "BatchDetokenizeRequest": obj({
            "reference": REFERENCE,
            "batches": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_ITEMS,
                        "items": ref("BatchDetokenizeEntry"),
                        "description": f"The original's form: 1 to {MAX_BATCH_ITEMS} entries (3042). Wins over "
                                       "`items` when both are sent."},
            "items": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_ITEMS,
                      "items": ref("BatchDetokenizeEntry"),
                      "description": f"Our form: 1 to {MAX_BATCH_ITEMS} items (3042), answered on their own."},
        }, (), closed=False, description="`batches` (the original's form) or `items` (ours); neither: 3042."),
        "BatchDetokenizeEntry": obj({"reference": REFERENCE, "bfid": BFID_TEXT,
                                     "values": {"type": "array", "items": ref("TokenValue"), "minItems": 1,
                                                "maxItems": MAX_VALUES}}, ("bfid", "values"), closed=False),
        "BfidBatchRequest": obj({
            "reference": REFERENCE,
            "batches": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_ITEMS,
                        "items": obj({"reference": REFERENCE, "bfid": BFID_TEXT}, ("bfid",), closed=False),
                        "description": f"1 to {MAX_BATCH_ITEMS} entries (3042)."},
        }, ("batches",), closed=False),
        "BatchesEntry": obj({
            "reference": REFERENCE, "bfid": BFID_TEXT,
            "values": {"type": "array", "items": value,
                       "description": "Tokens (tokenize, read, delete) or clear values (detokenize); absent with "
                                      "`omit=1`, and in a failed `batch/read` or `batch/delete` entry."},
            "itemIndex": {"type": "integer", "minimum": 0, "description": "A failed read or delete entry."},
            "errCode": ref("ErrorCode"), "errMessage": {"type": "string"},
        }, (), closed=False),
        "BatchesResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
            "batches": {"type": "array", "items": ref("BatchesEntry"), "description": "One per entry, in order."},
        }, ("success", "messageId", "batches"), description="The answer to a batch in the original's form."),
        # the two kinds of item are named schemas: inline, openapi-python-client (0.29) named both of their
        # `values` item models alike and dropped the result
        "BatchItemResult": obj({"itemIndex": {"type": "integer", "minimum": 0}, "itemReference": nullable(REFERENCE),
                                "bfid": BFID_TEXT, "values": {"type": "array", "items": value}},
                               ("itemIndex", "itemReference", "bfid", "values")),
        "BatchItemError": obj({"itemIndex": {"type": "integer", "minimum": 0}, "itemReference": nullable(REFERENCE),
                               "errCode": ref("ErrorCode"), "errMessage": {"type": "string"}},
                              ("itemIndex", "itemReference", "errCode", "errMessage")),
        "BatchItem": {"oneOf": [ref("BatchItemResult"), ref("BatchItemError")],
                      "description": "One per item, in order: its result, or its error (`itemReference` null when the "
                                     "item sent none or an invalid one)."},
        "BatchResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
            "succeeded": {"type": "integer", "minimum": 0, "description": "The `items` form."},
            "failed": {"type": "integer", "minimum": 0, "description": "The `items` form."},
            "items": {"type": "array", "items": ref("BatchItem"), "description": "The `items` form: one per item."},
            "batches": {"type": "array", "items": ref("BatchesEntry"),
                        "description": "The original's `batches` form: one per entry, in order."},
        }, ("success", "messageId"),
            description="One schema for both forms (so a generated client keeps one model): a request with `items` "
                        "is answered `succeeded`, `failed` and `items`; one with `batches`, `batches`."),
        "TemplateValidateRequest": obj({"reference": REFERENCE, "templateRef": text(
            description="The template to check (missing or not a string: 3000).")}, ("templateRef",), closed=False),
        "TemplateValidateResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
            "templateRef": {"type": "string"}, "exists": {"type": "boolean"},
            "active": {"type": "boolean", "description": "Published templates are always active (no deactivation)."},
            "usable": {"type": "boolean", "description": "This partner can tokenize with it."},
            "version": {"type": "integer"}, "builtin": {"type": "boolean"},
            "accessMode": {"type": "string", "enum": ["tokenize", "detokenize"]},
            "fields": {"type": "array", "items": {"type": "string"}, "description": "The field names."},
            "detokenize": {"type": "boolean", "description": "Whether this partner may detokenize under it "
                                                             "(accessMode and permission)."},
        }, ("success", "messageId", "templateRef", "exists", "active", "usable", "fields", "detokenize")),
        "HealthResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
            "status": {"const": "ok", "description": "The credential-free probe (no `templateRef`/`bfid`)."},
            "bfid": text(description="The original's health check: the bfid of the values tokenized, or the one "
                                     "detokenized under."),
            "values": {"type": "array", "items": value,
                       "description": "The original's health check: the tokens (tokenize) or the clear values "
                                      "(detokenize), matched by `name`."},
        }, ("success", "messageId"),
            description="One schema for both answers, so a client's model keeps `success` and `status`: the probe "
                        "answers `status`, the original's health check `bfid` and `values`."),
        "TokenizeResponse": obj({
            "success": {"const": True}, "reference": REFERENCE, "messageId": MESSAGE_ID,
            "bfid": text(f"[A-Za-z0-9_-]{{{BFID_MIN_LENGTH},{BFID_TEXT_MAX_LENGTH}}}",
                         "The token identifier (URL-safe base64): detokenization needs it, with the tokens "
                         "(proxy `vault-id` header, gateway `bfid`)."),
            "values": {"type": "array", "items": value,
                       "description": "The tokens, matched by `name` (order not guaranteed); absent with `omit`."},
        }, ("success", "messageId", "bfid")),
    }


BFID_TEXT = text(f"^[A-Za-z0-9_-]{{{BFID_MIN_LENGTH},{BFID_TEXT_MAX_LENGTH}}}$",
                 "The token identifier. Anything that does not verify for the caller: 3010.")


def _authdebug_schema() -> dict[str, Any]:
    s, i, b = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
    return obj({
        "partnerId": nullable(s),
        "key": text(description="The key used: `secret` (default), the `key` header, or for RSA `default RSA key "
                                "pair`/`override`."),
        "authorizationHeader": obj({"raw": s, "method": nullable({"type": "string", "enum": ["HMAC", "Digest", "RSA"]}),
                                    "username": nullable(s), "nonce": nullable(s), "timestamp": nullable(i),
                                    "response": nullable(s)},
                                   ("raw", "method", "username", "nonce", "timestamp", "response")),
        "signatureSteps": obj({"httpVerb": {"const": "POST"}, "canonicalizedResource": s, "nonce": s,
                               "timestamp": i, "content": s, "contentHash": text("[0-9a-f]{64}"),
                               "stringToSign": s, "response": s, "authHeader": s},
                              ("httpVerb", "canonicalizedResource", "nonce", "timestamp", "content", "contentHash",
                               "stringToSign", "response", "authHeader")),
        "result": obj({
            "response": obj({"isValid": b, "incoming": nullable(s), "ours": s}, ("isValid", "incoming", "ours")),
            "timestamp": obj({"isValid": b, "incoming": nullable(i), "ours": i, "offset": nullable(i)},
                             ("isValid", "incoming", "ours", "offset"),
                             description="`offset` = server time minus the header's timestamp, in seconds."),
            "nonce": obj({"isValid": b, "seen": b}, ("isValid", "seen")),
            "keyForm": nullable({"type": "string", "enum": ["issued", "decoded"]}),
            "isValid": b,
            "failedStep": nullable({"type": "string", "enum": ["header", "scheme", "response", "timestamp",
                                                              "nonce"]}),
        }, ("response", "timestamp", "nonce", "keyForm", "isValid", "failedStep")),
        "explanation": {"type": "array", "items": s},
        "warnings": {"type": "array", "items": s},
    }, ("partnerId", "key", "authorizationHeader", "signatureSteps", "result", "explanation", "warnings"))


DEVICE_HEADERS = [
    parameter("dev-device-serial", "header", "Device payload (optional): the device serial."),
    parameter("dev-device-type", "header", "Device payload: the device type (`GET /admin/v1/device-types`)."),
    parameter("dev-payload", "header", "Device payload: the encrypted payload, hex, as `devicePayload` of the parser."),
    parameter("dev-ksn", "header", "Device payload: the DUKPT KSN (hex); required for `terminal` types, absent for "
                                   "`audio-reader` (inside the payload)."),
    parameter("dev-client-id", "header", "Device payload: the device's clientId (optional)."),
]


def build() -> dict[str, Any]:
    schemas = secure_schemas(errors.secure_table())
    schemas.update(_tokenize_schemas())
    schemas["PartnerValidateRequest"] = obj({"reference": REFERENCE}, closed=False,
                                            description="Optional body; unknown members are ignored.")
    schemas["DeviceValidateRequest"] = obj({
        "partnerId": PARTNER_ID, "partnerKey": PARTNER_KEY, "reference": REFERENCE,
        "serial": text(description="The device serial (surrounding spaces ignored). Missing: 1201; not registered "
                                   "to the partner: 1202.", minLength=1),
        "firmware": text(description="Firmware read from the device: compared when the registry knows it (1204)."),
        "clientId": nullable(CLIENT_ID),
    }, ("serial",), closed=False, description="Unknown members are ignored.")
    schemas["AuthDebugResponse"] = _authdebug_schema()
    header_security: list[dict[str, list[str]]] = [{"hmac": []}, {"basic": []}]
    body_security: list[dict[str, list[str]]] = [{"hmac": []}, {"basic": []}, {}]
    paths: dict[str, Any] = {
        "/api/partner/validate": {"post": {
            "operationId": "partnerValidate", "tags": ["partners"], "summary": "Prove the partner's credentials",
            "description": "HMAC (or Basic for key-security partners). The body is optional.",
            "security": header_security,
            "requestBody": body(ref("PartnerValidateRequest"), required=False,
                                example={"reference": "walkthrough-1"}),
            "responses": {"200": response("Valid credentials.", ref("Success"),
                                          example={"success": True, "reference": "walkthrough-1",
                                                   "messageId": "1795317291957736178457228"}),
                          **error_responses(400, 401, 500)},
        }},
        "/api/device/validate": {"post": {
            "operationId": "deviceValidate", "tags": ["devices"],
            "summary": "Is this device registered to the partner, active, on the expected firmware?",
            "description": "Body credentials (`partnerId` + `partnerKey`, key-security partners) or an "
                           "`Authorization` header (HMAC partners must use HMAC).",
            "security": body_security, "x-body-credentials": ["partnerId", "partnerKey"],
            "requestBody": body(ref("DeviceValidateRequest"),
                                example={"partnerId": "demokey", "partnerKey": "...", "serial": "DEMO-TERM-0001",
                                         "firmware": "1.0.0", "reference": "r-1"}),
            "responses": {"200": response("The device is registered, active and on its firmware.", ref("Success")),
                          **error_responses(400, 401, 409, 500, body_credentials=True)},
        }},
        "/api/tokenization/tokenize": {"post": {
            "operationId": "tokenize", "tags": ["tokenization"], "summary": "Tokenize values against a template",
            "description": "Vaultless, format-preserving tokens under one new bfid. With the optional device "
                           "headers the payload is decrypted as by the parser (same 1201/1202/1203/2xxx codes) and "
                           "fills `vault_token_card_number`, `vault_token_card_expiration` (MMYY), "
                           "`vault_token_first_name`/`vault_token_last_name` when the template has them and the "
                           "body did not send them (3030: the template has no card number field).",
            "security": header_security,
            "parameters": DEVICE_HEADERS,
            "requestBody": body(ref("TokenizeRequest"), example={
                "reference": "t-1", "templateRef": "DEMO",
                "values": [{"name": "vault_token_card_number", "value": "4242424242424242"}]}),
            "responses": {"200": response("The tokens and their bfid.", ref("TokenizeResponse")),
                          **tokenization_errors(400, 401, 403, 409, 500)},
        }},
    }
    paths["/api/tokenization/tokenize"]["post"]["parameters"] = [parameter(
        "omit", "query", "`1`: the answer leaves `values` out and the tokens are kept for one `read` (one hour); "
                         "`2`: the answer carries them and they are kept for `read` too; `0` (or none): kept for "
                         "the gateway's read step only (`1.0` is read as `1`). Not 0, 1 or 2: 3022. The query "
                         "string is not part of the HMAC signature (the canonical resource is the path).",
        {"type": "string", "enum": ["0", "1", "2"]})] + DEVICE_HEADERS
    signed: dict[str, Any] = {"security": header_security, "tags": ["tokenization"]}
    paths["/api/tokenization/detokenize"] = {"post": {
        "operationId": "detokenize", **signed, "summary": "Clear values of tokens issued under a bfid",
        "description": "Allowed when the partner holds the detokenize permission (3040, HTTP 403; management API) "
                       "and the latest version of the bfid's template has `accessMode: detokenize` (3041, HTTP "
                       "403). Irreversible fields 3012, a token not issued under the bfid 3015, a deleted bfid "
                       "3017. An audit record (partner, bfid, field names, time, source IP; never a value) is "
                       "written before the values are answered.",
        "requestBody": body(ref("DetokenizeRequest")),
        "responses": {"200": response("The clear values, matched by name.", ref("ValuesResponse")),
                      **tokenization_errors(400, 401, 403, 409, 500)}}}
    paths["/api/tokenization/read"] = {"post": {
        "operationId": "readTokens", **signed, "summary": "The tokens kept for a bfid, once",
        "description": "The tokens of a tokenize with `?omit=1`/`?omit=2` (or of the payment iFrame), once per bfid "
                       "(a second read: 3018, HTTP 409), within the one-hour read window (3011); not kept for read "
                       "3019; deleted 3017. With an `Idempotency-Key` the read is that key's: a retry with the "
                       "same key after a lost answer or a 500 gets the same tokens again (within the read window); "
                       "every other reader still gets 3018.",
        "parameters": [parameter(
            "Idempotency-Key", "header", "1-255 printable ASCII characters (3023): the reader's identity. The first "
                                         "read with this key claims the bfid's tokens; a retry with the same key "
                                         "gets them again within the one-hour read window; other keys, or none, "
                                         "3018. Kept only as a hash, until the read window ends. Not part of the "
                                         "HMAC signature.",
            text("[\\x20-\\x7e]{1,255}"))],
        "requestBody": body(ref("BfidRequest")),
        "responses": {"200": response("The tokens.", ref("ValuesResponse")),
                      **tokenization_errors(400, 401, 403, 409, 500)}}}
    paths["/api/tokenization/delete"] = {"post": {
        "operationId": "deleteBfid", **signed, "summary": "Delete a bfid (revocation)",
        "description": "Idempotent. Answers the tokens still kept for `read` under the bfid (query and delete; "
                       "none otherwise). Afterwards no token under the bfid (or any extension of it) detokenizes or "
                       "reads again, anywhere (3017; proxy and gateway too): within 1 s in every container.",
        "requestBody": body(ref("BfidRequest")),
        "responses": {"200": response("Deleted.", ref("DeleteResponse")),
                      **tokenization_errors(400, 401, 409, 500)}}}
    batch_text = (f"Two forms, up to {MAX_BATCH_ITEMS} entries (3042); one signature covers the whole batch. The "
                  "original's `batches` answers `batches`, or the error of its first failed entry (`itemIndex`, "
                  "`itemReference`). Our `items` answers each item on its own: its entry carries `itemIndex` and "
                  "`itemReference`, and `errCode`/`errMessage` when it failed. Work is bounded: entries are "
                  f"processed within {BATCH_BUDGET_SECONDS:g} s of work; the rest answer 3044.")
    answer = ref("BatchResponse")
    paths["/api/tokenization/batch/tokenize"] = {"post": {
        "operationId": "batchTokenize", **signed, "summary": "Tokenize many items",
        "description": batch_text + " Tokens are kept for `read` only with `omit`, as for `tokenize`.",
        "parameters": [paths["/api/tokenization/tokenize"]["post"]["parameters"][0]],
        "requestBody": body(ref("BatchTokenizeRequest")),
        "responses": {"200": response("One entry per item.", answer),
                      **tokenization_errors(400, 401, 403, 409, 500, 503)}}}
    paths["/api/tokenization/batch/detokenize"] = {"post": {
        "operationId": "batchDetokenize", **signed, "summary": "Detokenize many items",
        "description": batch_text + " Needs the detokenize permission (3040 for the whole request); each item's "
                                    "template its accessMode (3041 in the item); one audit record per item.",
        "requestBody": body(ref("BatchDetokenizeRequest")),
        "responses": {"200": response("One entry per item.", answer),
                      **tokenization_errors(400, 401, 403, 409, 500, 503)}}}
    for kind, summary, what in (("read", "Read the tokens kept for many bfids, once each", "`read`"),
                                ("delete", "Delete many bfids, answering their kept tokens", "`delete`")):
        paths[f"/api/tokenization/batch/{kind}"] = {"post": {
            "operationId": f"batch{kind.capitalize()}", **signed, "summary": summary,
            "description": f"{what} of each entry, in order. Its effect is for good, so a failed entry does not "
                           "fail the others: it carries `itemIndex`, `errCode` and `errMessage` instead of `values`.",
            **({"parameters": paths["/api/tokenization/read"]["post"]["parameters"]} if kind == "read" else {}),
            "requestBody": body(ref("BfidBatchRequest")),
            "responses": {"200": response("One entry per bfid.", ref("BatchesResponse")),
                          **tokenization_errors(400, 401, 409, 500)}}}
    paths["/api/template/validate"] = {"post": {
        "operationId": "templateValidate", **signed, "summary": "Does a template exist and is it usable?",
        "description": "As the original: HTTP 200 only for a template this partner can use (built-in included); an "
                       "unknown template, another partner's, or a ref in another case is the error 3001 (HTTP "
                       "409).",
        "requestBody": body(ref("TemplateValidateRequest")),
        "responses": {"200": response("Whether it exists, its field names.", ref("TemplateValidateResponse")),
                      **tokenization_errors(400, 401, 409, 500)}}}
    names_values = [
        parameter("fieldNames", "query", "Field names, `|`-separated (the original's health checks)."),
        parameter("fieldValues", "query", "Values (tokenize: clear; detokenize: tokens), `|`-separated, matched to "
                                          "`fieldNames` by position (3021 when the counts differ)."),
        parameter("reference", "query", "Echoed, as a body's `reference` (at most 50 characters, 1002)."),
    ]
    for kind, key in (("tokenize", "templateRef"), ("detokenize", "bfid")):
        paths[f"/api/healthcheck/{kind}"] = {"get": {
            "operationId": f"healthcheck{kind.capitalize()}", "tags": ["tokenization"],
            "security": [*header_security, {}],
            "summary": f"Health of {kind}: a real {kind} call, or a credential-free probe",
            "description": f"With `{key}`, `fieldNames` and `fieldValues` (the original's health check): an "
                           f"authenticated `{kind}` of those values through the tokens service, answered as "
                           f"`{kind}` is" + (" (nothing is kept)" if kind == "tokenize" else
                                             " (its permission, accessMode, use policy and audit record)") +
                           f". Without `{key}`: no credentials; a synthetic value round-trips through the token "
                           "engine under a random key of the container (no partner key) and the Tokens table "
                           "answers one read. Reveals nothing.",
            "parameters": [parameter(key, "query", f"The {'template' if kind == 'tokenize' else 'bfid'} to "
                                                   f"{kind} under: makes this a real, authenticated call."),
                           *names_values],
            "responses": {"200": response("Healthy: the probe's status, or the call's answer.", ref("HealthResponse")),
                          **tokenization_errors(400, 401, 403, 409, 500)}}}
    authdebug: dict[str, Any] = {
        "tags": ["authdebug"], "summary": "Explain an Authorization header (certification environment only)",
        "description": "Reads no key from any store: the key is `secret` unless the `key` header overrides it; RSA "
                       "uses a fixed published key pair unless `publicKey`/`privateKey` override it. Never "
                       "consumes a nonce. The function does not exist in a stack deployed with `Environment=prod`.",
        "security": [{}],
        "parameters": [
            parameter("Authorization", "header", "The header to debug (Hmac, Digest or Rsa form)."),
            parameter("key", "header", "The HMAC/digest key, e.g. your `hmacKey` as issued (default `secret`)."),
            parameter("publicKey", "header", "RSA public key override: PEM (newlines as `\\n`) or base64 of the PEM."),
            parameter("privateKey", "header", "RSA private key override (override both keys together)."),
            parameter("resource", "header", "Check the header against this path instead of the request's."),
        ],
        "requestBody": body({"description": "Any body: hashed exactly as received."}, required=False),
        "responses": {"200": response("The step-by-step explanation and the API's verdict.", ref("AuthDebugResponse")),
                      **error_responses(400, 500)},
    }
    paths["/api/v1/authdebug"] = {"post": {"operationId": "authDebug", **authdebug}}
    paths["/api/authdebug"] = {"post": {"operationId": "authDebugUnversioned", **authdebug,
                                        "description": authdebug["description"] + " Same as /api/v1/authdebug."}}
    return document(
        api="secure", title="Vault secure API",
        description="Partner and device validation, tokenization and (certification only) authdebug. Errors: "
                    "`{success: false, errCode, errMessage, reference?, messageId?}` (schema `SecureError`, codes "
                    "`ErrorCode`); every authentication failure is the uniform 1003 body. "
                    "docs/integrators/errors.md: \"Secure API and parser errors\"; docs/integrators/tokenization.md: "
                    "\"Tokenization error codes\".",
        paths=paths, schemas=schemas,
        security_schemes={"hmac": hmac_scheme(), "basic": basic_scheme()},
        tags=[{"name": n} for n in ("partners", "devices", "tokenization", "authdebug")],
    )


__all__ = ["build", "secure_schemas", "error_responses", "MESSAGE_ID", "REFERENCE", "PARTNER_ID", "PARTNER_KEY",
           "CLIENT_ID"]
