"""The management API (ManagementApi, ``/admin/v1/...``).

Every route :mod:`vaultcore.admin.routes` registers must be here (``tests/unit/test_openapi_contracts.py`` checks
the router's table against the document). The proxy configuration schema is the model of
:mod:`vaultcore.proxy.config` (enums, limits and the source/type rule as ``if``/``then``).
"""

from __future__ import annotations

from typing import Any

from local.contracts import errors
from local.contracts.common import body, codes, document, nullable, obj, parameter, ref, response, text
from vaultcore.cards.masking import MASK_PATTERNS
from vaultcore.cards.tracks import TRACK_FORMATS
from vaultcore.devices.profiles import profile_names
from vaultcore.devices.registry import _KCV, _SERIAL, SCHEMES
from vaultcore.gateway.accounts import OPTION_NAMES
from vaultcore.partners.service import API_SECURITY, PARTNER_ID, PARTNER_NAME_TEXT
from vaultcore.proxy import config as pc
from vaultcore.proxy.transform import SOURCES, TYPES
from vaultcore.tokens.alphabets import ALPHABETS
from vaultcore.tokens.templates import _FIELD_NAME, _TEMPLATE_REF, MAX_FIELD_LENGTH, MAX_FIELDS, FieldType, TokenFormat
from vaultcore.wallet.key_forms import ROLES
from vaultcore.wallet.settings import _FILE_NAME, MAX_ASSOCIATION_BYTES, MAX_DOMAINS

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
B = {"type": "boolean"}
# What vaultcore.proxy.config's _string accepts: not empty, not only white space.
_NB: dict[str, Any] = {"minLength": 1, "pattern": pc.NON_BLANK.pattern}
API_SECURITY_DESCRIPTION = (
    "How the partner authenticates on the secure API, the parser, tokenization and the proxy. `key`: "
    "`Authorization: Basic base64(partnerId:partnerKey)`, HMAC, or the body's `partnerId`/`partnerKey` where an "
    "endpoint takes them. `hmac`: HMAC only; every other method is refused with the uniform authentication error. "
    "Default: `key` in the cert environment (as the original onboards partners for integration), `hmac` in "
    "production (the scheme the original requires there). Choose `hmac` when the partner's clients can sign.")


def _place_rules(sources: tuple[str, ...]) -> list[dict[str, Any]]:
    keyed = [s for s in ("header", "query", "variable") if s in sources]
    return [
        {"if": {"properties": {"transformationType": {"enum": ["jsonpath", "xpath", "regex"]}},
                "required": ["transformationType"]},
         "then": {"properties": {"transformationSource": {"const": "body"}}}},
        {"if": {"properties": {"transformationType": {"const": "key"}}, "required": ["transformationType"]},
         "then": {"properties": {"transformationSource": {"enum": keyed}}}},
    ]


def _place(sources: tuple[str, ...]) -> dict[str, Any]:
    return {
        "transformationSource": {"type": "string", "enum": list(sources)},
        "transformationType": {"type": "string", "enum": list(TYPES),
                               "description": "`jsonpath`, `xpath`, `regex` need source `body`; `key` a header, "
                                              "query (or variable) name."},
        "transformationPath": text(description="jsonpath (linear subset: names, indices, slices, wildcards, at most "
                                               "two `..`), xpath (location paths, predicates `[n]`, `[last()]`, "
                                               "`[@a='v']`), regex (at most 512 characters, group `value` or 1), a "
                                               "header/query key, or a variable name (a letter, then letters, "
                                               "digits, `_`, `-`; at most 64). Invalid: 8201/8202."),
    }


def _proxy_schemas() -> dict[str, Any]:
    auth_where = "Must be the partner's own credentials (8204)."
    schemas: dict[str, Any] = {
        "PassthroughAuthorization": obj({"type": {"const": "passthrough"},
                                         "headerName": text(description="The header carrying the target's "
                                                                        "credential (missing at call time: 8105).",
                                                            maxLength=128, **_NB)}, ("type",)),
        "BasicAuthorization": obj({"type": {"const": "basic"},
                                   "username": text(description="The partner id. " + auth_where, maxLength=64, **_NB),
                                   "password": text(description="The partner key (`[REDACTED]` when read back). "
                                                                "Not allowed in actions of hmac partners.",
                                                    maxLength=512, **_NB)},
                                  ("type", "username", "password")),
        "HmacAuthorization": obj({"type": {"const": "hmac"},
                                  "username": text(description="The partner id. " + auth_where, maxLength=64, **_NB),
                                  "secret": text(description="The Base64-decoded hmacKey (the issued key is "
                                                             "accepted too; `[REDACTED]` when read back).",
                                                 maxLength=512, **_NB)},
                                 ("type", "username", "secret")),
        "ProxyAuthorization": {"oneOf": [ref("PassthroughAuthorization"), ref("BasicAuthorization"),
                                         ref("HmacAuthorization")],
                               "description": "`hmac-vpc` is not supported (8200)."},
        "Mask": obj({**_place(SOURCES), "pattern": {"type": "string", "enum": list(MASK_PATTERNS)}},
                    ("transformationSource", "transformationType", "transformationPath", "pattern"),
                    allOf=_place_rules(SOURCES), description="Masks apply to the stored proxy logs only."),
        "LogSettings": obj({k: {"type": "array", "items": ref("Mask"), "maxItems": pc.MAX_MASKS}
                            for k in ("requestMasks", "responseMasks", "handledErrorMasks")},
                           description="`handledErrorMasks` apply, on top of `responseMasks`, when the target "
                                       "answers 4xx/5xx."),
        "TokenizationSubstitution": obj({**_place(pc.SUBSTITUTION_SOURCES),
                                         "fieldName": text(description="A field of the action's template (8200).",
                                                           maxLength=64, **_NB),
                                         "required": {"type": "boolean", "default": False,
                                                      "description": "Matching nothing refuses the request (8115; "
                                                                     "response actions: 8118). Not on variables."}},
                                        ("transformationSource", "transformationType", "transformationPath",
                                         "fieldName"), allOf=_place_rules(pc.SUBSTITUTION_SOURCES)),
        "ParserSubstitution": obj({**_place(pc.SUBSTITUTION_SOURCES),
                                   "dataType": {"type": "string", "enum": list(pc.DATA_TYPES),
                                                "description": "`number` only with "
                                                               + ", ".join(sorted(pc.NUMERIC_FORMATS))
                                                               + "; `boolean` not for variables."},
                                   "format": {"type": "string", "enum": list(TRACK_FORMATS)},
                                   "default": nullable(text(description="Written when the card lacks the value: "
                                                                        "digits for `number`; true/false/yes/no/1/0 "
                                                                        "for `boolean`.", maxLength=256)),
                                   "required": {"type": "boolean", "default": False}},
                                  ("transformationSource", "transformationType", "transformationPath", "dataType",
                                   "format"), allOf=_place_rules(pc.SUBSTITUTION_SOURCES)),
        "TokenizationAction": obj({
            "type": {"const": "tokenization"}, "authorization": ref("ProxyAuthorization"),
            "method": {"type": "string", "enum": list(pc.TOKEN_METHODS)},
            "templateRef": text(description="A template of the partner (8200).", maxLength=64, **_NB),
            "substitutions": {"type": "array", "items": ref("TokenizationSubstitution"), "minItems": 1,
                              "maxItems": pc.MAX_SUBSTITUTIONS},
            "model": {"const": "sync"},
        }, ("type", "authorization", "method", "templateRef", "substitutions")),
        "ParserAction": obj({
            "type": {"const": "parser"}, "authorization": ref("ProxyAuthorization"),
            "substitutions": {"type": "array", "items": ref("ParserSubstitution"), "minItems": 1,
                              "maxItems": pc.MAX_SUBSTITUTIONS},
            "model": {"const": "sync"},
        }, ("type", "authorization", "substitutions"),
            description="Decrypts the request's dev-* headers once; each substitution writes its `format` as its "
                        "`dataType`."),
        "ProxyConfiguration": obj({
            "proxy": obj({
                "authorization": ref("ProxyAuthorization"),
                "method": {"type": "string", "enum": list(pc.METHODS)},
                "target": text(description="Absolute https URL with a host name; checked by the egress policy "
                                           "(8203) and again, with DNS, on every call (8110).",
                               maxLength=pc.MAX_TARGET_LENGTH, **_NB),
                "logSettings": ref("LogSettings"),
            }, ("authorization", "method", "target")),
            "actions": {"type": "array", "maxItems": pc.MAX_ACTIONS,
                        "items": {"oneOf": [ref("TokenizationAction"), ref("ParserAction")]},
                        "description": "Run in order; at most one tokenize and one detokenize action."},
            "responseActions": {"type": "array", "maxItems": pc.MAX_RESPONSE_ACTIONS,
                                "items": ref("TokenizationAction"),
                                "description": "Tokenization actions on the target's answer (sources "
                                               + ", ".join(pc.RESPONSE_SOURCES) + "): one tokenize and one "
                                               "detokenize at most; with a request tokenize action, the same "
                                               "templateRef."},
        }, ("proxy", "actions"),
            description=f"Unknown members are refused (8200). At most {pc.MAX_TOTAL_SUBSTITUTIONS} substitutions in "
                        f"all, {pc.MAX_VARIABLES} variables, {pc.MAX_DOCUMENT_BYTES // 1024} KiB as compact JSON."),
        "ProxyConfigurationView": obj({
            "partnerId": S, "configReferenceID": text(r"[A-Za-z0-9_\-]{1,64}"), "version": I,
            "createdAt": nullable(I), "updatedAt": nullable(I), "configuration": ref("ProxyConfiguration"),
        }, ("partnerId", "configReferenceID", "version", "configuration"),
            description="Secrets are shown as `[REDACTED]`."),
        "DryRunRequest": obj({
            "headers": {"type": "object", "additionalProperties": S},
            "query": {"oneOf": [{"type": "object", "additionalProperties": S},
                                {"type": "array", "items": {"type": "array", "items": S, "minItems": 2,
                                                            "maxItems": 2}}]},
            "body": {"description": "Text, or a JSON value (sent as application/json)."},
            "response": obj({"status": I, "headers": {"type": "object", "additionalProperties": S},
                             "body": {}}, description="A sample target response for the response actions."),
        }),
        "DryRunResult": obj({
            "configReferenceID": S, "version": I, "forwarded": {"const": False},
            "authorization": obj({"valid": B, "message": S}, ("valid",)),
            "target": obj({"allowedByPolicy": B, "message": S}, ("allowedByPolicy",)),
            "actions": {"type": "array", "items": {"type": "object"}},
            "responseActions": {"type": "array", "items": {"type": "object"}},
            "response": {"type": "object"},
            "unmatched": {"type": "array", "items": S},
            "error": obj({"code": I, "message": S}, ("code", "message")),
            "request": {"type": "object", "description": "The request as it would be logged (masked)."},
        }, ("configReferenceID", "version", "forwarded", "authorization", "target", "actions", "unmatched",
            "request")),
        "ProxyLogs": obj({"logs": {"type": "array", "items": {"type": "object",
                                                               "description": "One masked exchange."}},
                          "nextToken": S}, ("logs",)),
    }
    return schemas


def _template_schemas() -> dict[str, Any]:
    field_props = {
        "name": text(_FIELD_NAME, "The field's system name, e.g. `vault_token_card_number`."),
        "type": {"type": "string", "enum": [str(t) for t in FieldType]},
        "format": {"type": "string", "enum": [str(f) for f in TokenFormat],
                   "description": "Characters kept in clear."},
        "alphabet": {"type": "string", "enum": sorted(ALPHABETS)},
        "irreversible": B,
        "active": obj({"from": S, "to": S}, description="ISO-8601 durations after tokenization."),
        "minLength": {"type": "integer", "minimum": 1, "maximum": MAX_FIELD_LENGTH},
        "maxLength": {"type": "integer", "minimum": 1, "maximum": MAX_FIELD_LENGTH},
        "luhnValidTokens": {"type": "boolean", "default": False,
                            "description": "Card number fields only (type `card`, `CARD10`, maxLength 12 or more): "
                                           "`true` asks for tokens that pass the Luhn check. By default card-number "
                                           "tokens fail it (they keep format, BIN and last four), so a DLP scan "
                                           "tells a token from a PAN."},
    }
    template = {"templateRef": text(_TEMPLATE_REF), "name": S,
                "fields": {"type": "array", "items": ref("TemplateField"), "minItems": 1, "maxItems": MAX_FIELDS},
                "accessMode": {"type": "string", "enum": ["tokenize", "detokenize"], "default": "tokenize",
                               "description": "`detokenize` lets partners holding the detokenize permission reveal "
                                              "values through the secure API's detokenize endpoints (the latest "
                                              "version decides for every bfid of the template); `tokenize` (the "
                                              "default): clear values leave only through the proxy and the "
                                              "gateway."}}
    view = {**template, "version": I, "createdAt": I, "builtin": B}
    return {
        "TemplateField": obj(field_props, ("name", "type", "format")),
        "TemplateRequest": obj(template, ("fields",), description="Invalid: 3050 (the message names the member)."),
        "Template": obj({**view, "versions": I}, ("templateRef", "fields", "version"),
                        description="`versions`: how many versions exist."),
        "TemplateWithVersions": obj({**view, "versions": {"type": "array", "items": I}},
                                    ("templateRef", "fields", "version", "versions")),
        "Permissions": obj({"partnerId": S, "permissions": obj({"detokenize": B}, ("detokenize",))},
                           ("partnerId", "permissions")),
        "PermissionsRequest": obj({"detokenize": B}, description="Permissions to set (merged); at least one. "
                                                                 "Other containers apply a change within 60 s."),
        "Detokenizations": obj({
            "partnerId": S,
            "records": {"type": "array", "items": obj({
                "auditId": S, "bfid": S, "fields": {"type": "array", "items": S},
                "operation": {"type": "string", "enum": ["detokenize", "batch/detokenize"]},
                "at": I, "sourceIp": S,
            }, ("auditId", "bfid", "fields", "operation", "at", "sourceIp"),
                description="One detokenized bfid: field names, time (epoch milliseconds), the caller's source "
                            "IP; never a value or a token.")},
            "nextToken": S}, ("partnerId", "records")),
        "TokenKey": obj({"version": I, "status": {"type": "string", "enum": ["current", "active", "retired"]},
                         "createdAt": I, "retiredAt": I}, ("version", "status")),
    }


def _schemas() -> dict[str, Any]:
    options = obj({name: B for name in OPTION_NAMES})
    account = {"account_id": text("[0-9]{12}"), "partnerId": nullable(S), "options": options,
               "postback_url": nullable(S), "status": {"type": "string", "enum": ["active", "disabled"]},
               "created_at": I}
    role_fields = {}
    for role in ROLES:
        role_fields.update({f"{role}_private_key": S, f"{role}_private_key_passphrase": S,
                            f"{role}_certificate": S, f"{role}_pkcs12": S, f"{role}_pkcs12_passphrase": S})
    fingerprints = {"type": "array", "items": obj({"sha256": text("[0-9a-f]{64}")}, ("sha256",))}
    device = {"partnerId": S, "serial": text(_SERIAL), "clientId": nullable(S),
              "deviceType": {"type": "string", "enum": profile_names()}, "bdkId": S, "firmware": nullable(S),
              "status": {"type": "string", "enum": ["active", "inactive"]}}
    schemas: dict[str, Any] = {
        "ManagementErrorCode": codes(errors.management_table(), "`errCode` of the management API error body."),
        "ManagementError": obj({"success": {"const": False}, "errCode": ref("ManagementErrorCode"),
                                "errMessage": S}, ("success", "errCode", "errMessage")),
        "PartnerRequest": obj({"name": text(description="1-100 characters, not only white space.", minLength=1,
                                            maxLength=100, pattern=PARTNER_NAME_TEXT.pattern),
                               "apiSecurity": {"type": "string", "enum": list(API_SECURITY),
                                               "description": API_SECURITY_DESCRIPTION},
                               "partnerId": text(PARTNER_ID)}, ("name",), closed=False),
        "PartnerCreated": obj({"partnerId": S, "name": S, "partnerKey": S, "hmacKey": S,
                               "apiSecurity": {"type": "string", "enum": list(API_SECURITY)},
                               "status": {"const": "active"}},
                              ("partnerId", "name", "partnerKey", "hmacKey", "apiSecurity", "status"),
                              description="`partnerKey` and `hmacKey` are shown this once."),
        "Partner": obj({"partnerId": S, "name": S, "apiSecurity": {"type": "string", "enum": list(API_SECURITY)},
                        "status": {"type": "string", "enum": ["active", "disabled"]},
                        "hmacKeyVersions": {"type": "array", "items": I},
                        "credentialsExpiring": {"type": "array", "items": I}},
                       ("partnerId", "name", "apiSecurity", "status", "hmacKeyVersions", "credentialsExpiring")),
        "RotateRequest": obj({"kind": {"type": "string", "enum": ["partnerKey", "hmacKey"]},
                              "overlapSeconds": {"type": "integer", "minimum": 0, "maximum": 30 * 86400,
                                                 "default": 86400}}, ("kind",), closed=False),
        "RotateResult": obj({"partnerId": S, "previousValidUntil": I, "partnerKey": S, "hmacKey": S,
                             "hmacKeyVersion": I}, ("partnerId", "previousValidUntil")),
        "BdkRequest": obj({
            "scheme": {"type": "string", "enum": list(SCHEMES)},
            "bdkId": text(r"[A-Za-z0-9_\-]{3,64}"),
            "bdk": text("[0-9A-Fa-f]+", "Clear key, hex (cert only): 32 hex characters for tdes/aes128, 64 for "
                                        "aes256."),
            "components": {"type": "array", "minItems": 2, "maxItems": 3,
                           "items": obj({"component": S, "kcv": text(_KCV)}, ("component", "kcv")),
                           "description": "Cert only: key components XORed into the key, each checked against "
                                          "its KCV."},
            "hsmKeyArn": S, "kcv": text(_KCV),
        }, ("scheme",), closed=False, description="One of `bdk`, `components` or `hsmKeyArn` (+ `kcv`)."),
        "Bdk": obj({"bdkId": S, "scheme": {"type": "string", "enum": list(SCHEMES)}, "kcv": text("[0-9A-Fa-f]{6}"),
                    "hsmKeyArn": S}, ("bdkId", "scheme", "kcv")),
        "DeviceRequest": obj({"serial": text(_SERIAL), "deviceType": {"type": "string", "enum": profile_names()},
                              "bdkId": S, "clientId": text(_SERIAL), "firmware": text(maxLength=64),
                              "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"}},
                             ("serial", "deviceType", "bdkId"), closed=False),
        "Device": obj(device, tuple(device)),
        "DeviceStatusRequest": obj({"status": {"type": "string", "enum": ["active", "inactive"]}}, ("status",),
                                   closed=False),
        "DeviceTypes": obj({"deviceTypes": {"type": "array", "items": obj({
            "name": S, "layout": S, "ksn_source": {"type": "string", "enum": ["request", "payload"]},
            "key_variant": S, "cipher_mode": S, "iv_hex": S, "description": S,
            "payload_formats": {"type": "array", "items": S}}, ("name", "layout", "ksn_source"), closed=False)}},
            ("deviceTypes",)),
        "AccountRequest": obj({"partnerId": nullable(S), "options": options,
                               "postback_url": nullable(text(description="https, SSRF-checked."))},
                              description="Unknown members are refused (400); tokenization and token_payments "
                                          "need a partnerId."),
        "AccountPatch": obj({"partnerId": nullable(S), "options": options, "postback_url": nullable(S),
                             "status": {"type": "string", "enum": ["active", "disabled"]}},
                            description="Only the members sent change; options merge key by key; null removes the "
                                        "postback URL."),
        "Account": obj(account, tuple(account)),
        "AccountCreated": obj({**account, "api_accesskey": text("[0-9a-f]{32}"),
                               "postback_secret": text("[0-9a-f]{64}")},
                              (*account, "api_accesskey", "postback_secret"),
                              description="`api_accesskey` and `postback_secret` are shown this once."),
        "StoredTransaction": obj({"account_id": S, "transaction_id": S, "created_at": I, "last4": S},
                                 ("account_id", "transaction_id"), closed=False,
                                 description="The stored transaction: last four, tokens, authorization data; never "
                                             "card data."),
        "WalletSettingsRequest": obj({
            "merchant_identifier": text(description="1-255 printable characters.", minLength=1, maxLength=255),
            "domains": {"type": "array", "items": S, "maxItems": MAX_DOMAINS},
            "trust_roots": {"type": "array", "items": S, "description": "PEM or base64 DER certificates."},
            "verify_signature": {"type": "boolean", "default": True, "description": "false in cert only."},
            **role_fields,
        }, ("merchant_identifier",), closed=False,
            description="Keys: PEM (SEC1, PKCS#8, PKCS#1), encrypted PEM with `_passphrase`, base64 DER, or "
                        "`<role>_pkcs12` (+ `_passphrase`); a PUT without a key keeps the stored one."),
        "WalletSettings": obj({"account_id": S, "merchant_identifier": S, "domains": {"type": "array", "items": S},
                               "verify_signature": B, "trust_roots": fingerprints,
                               "payment_processing_public_key_hash": S,
                               "has_payment_processing_certificate": B,
                               "payment_processing_certificate_not_after": nullable(S),
                               "merchant_identity_subject": nullable(S), "merchant_identity_not_after": nullable(S)},
                              ("account_id", "merchant_identifier", "domains", "verify_signature", "trust_roots"),
                              description="Never a private key."),
        "DomainAssociationRequest": obj({"content": text(description=f"1 to {MAX_ASSOCIATION_BYTES} bytes.",
                                                         minLength=1),
                                         "file_name": text(_FILE_NAME)}, ("content",), closed=False),
        "DomainAssociation": obj({"account_id": S, "file_name": S, "path": S, "sha256": text("[0-9a-f]{64}"),
                                  "bytes": I}, ("account_id", "file_name", "path", "sha256", "bytes")),
        "TrustRootsRequest": obj({"trust_roots": {"type": "array", "items": S, "minItems": 1}}, ("trust_roots",),
                                 closed=False),
        "TrustRoots": obj({"trust_roots": fingerprints}, ("trust_roots",)),
        "FraudClient": obj({"client_id": text("[a-f0-9]{20}"), "account_id": S,
                            "status": {"type": "string", "enum": ["active", "disabled"]},
                            "script_path": S, "created_at": nullable(I)},
                           ("client_id", "account_id", "status", "script_path")),
        "DeviceReport": obj({"client_id": S, "device_trans_id": S, "sid": nullable(S), "signals": {"type": "object"},
                             "device_id": S, "reused": B, "reports": I, "first_seen": I, "last_seen": I,
                             "expiresAt": I}, ("client_id", "device_trans_id", "signals", "reused", "reports")),
        "DeliveryAttempt": obj({"account_id": S, "delivery_id": S, "transaction_id": S, "attempt": I,
                                "status": {"type": "string", "enum": ["delivered", "failed", "deferred",
                                                                      "dead-lettered", "abandoned"],
                                           "description": "`abandoned`: the account has no postback URL any "
                                                          "more (error `no postback url`); nothing was sent."},
                                "http_status": nullable(I), "duration_ms": {"type": "number"}, "error": nullable(S),
                                "response_excerpt": nullable(S), "at": I},
                               ("delivery_id", "attempt", "status"), closed=False),
    }
    schemas.update(_template_schemas())
    schemas.update(_proxy_schemas())
    return schemas


def _errors(*statuses: int) -> dict[str, Any]:
    text_of = {400: "Invalid request (400, 30xx, 82xx; the message names the member).",
               404: "No such resource (404, 3001, 3060).", 409: "Conflict (409, 3061, 3062).",
               500: "Internal error (1)."}
    return {str(s): response(text_of[s], ref("ManagementError")) for s in statuses}


def _op(op_id: str, tag: str, summary: str, ok: tuple[int, str, dict[str, Any] | None], *, req: str | None = None,
        required: bool = True, params: list[dict[str, Any]] | None = None, errs: tuple[int, ...] = (400, 404),
        description: str = "") -> dict[str, Any]:
    status, what, schema = ok
    out: dict[str, Any] = {"operationId": op_id, "tags": [tag], "summary": summary,
                           "responses": {str(status): response(what, schema), **_errors(*errs, 500)}}
    if description:
        out["description"] = description
    if params:
        out["parameters"] = params
    if req:
        out["requestBody"] = body(ref(req), required=required)
    return out


def _list(item: str) -> dict[str, Any]:
    return {"type": "array", "items": ref(item)}


def build() -> dict[str, Any]:
    q = parameter
    client_q = q("clientId", "query", "The device's clientId, when it has one.")
    a = "/admin/v1/accounts/{account_id}"
    p = "/admin/v1/partners/{partner_id}"
    paths: dict[str, Any] = {
        "/admin/v1/partners": {"post": _op("createPartner", "partners", "Create a partner",
                                           (201, "The partner and its credentials (shown once).",
                                            ref("PartnerCreated")), req="PartnerRequest", errs=(400, 409))},
        p: {"get": _op("getPartner", "partners", "A partner (no secrets)", (200, "The partner.", ref("Partner")))},
        f"{p}/disable": {"post": _op("disablePartner", "partners", "Disable a partner",
                                     (200, "The partner.", ref("Partner")))},
        f"{p}/enable": {"post": _op("enablePartner", "partners", "Enable a partner",
                                    (200, "The partner.", ref("Partner")))},
        f"{p}/rotate": {"post": _op("rotatePartnerCredential", "partners", "Rotate the partner key or HMAC key",
                                    (200, "The new credential; the previous one stays valid for the overlap.",
                                     ref("RotateResult")), req="RotateRequest")},
        "/admin/v1/bdks": {"post": _op("importBdk", "devices", "Import or register a BDK",
                                       (201, "The BDK's id and KCV.", ref("Bdk")), req="BdkRequest",
                                       errs=(400, 409))},
        "/admin/v1/bdks/{bdk_id}": {"get": _op("getBdk", "devices", "A BDK (no key material)",
                                               (200, "The BDK.", ref("Bdk")))},
        f"{p}/devices": {
            "post": _op("registerDevice", "devices", "Register a device", (201, "The device.", ref("Device")),
                        req="DeviceRequest", errs=(400, 404, 409)),
            "get": _op("listDevices", "devices", "The partner's devices",
                       (200, "The devices.", obj({"devices": _list("Device")}, ("devices",)))),
        },
        f"{p}/devices/{{serial}}": {"get": _op("getDevice", "devices", "One device",
                                               (200, "The device.", ref("Device")), params=[client_q])},
        f"{p}/devices/{{serial}}/status": {"put": _op("setDeviceStatus", "devices", "Activate or deactivate a device",
                                                      (200, "The device.", ref("Device")), req="DeviceStatusRequest",
                                                      params=[client_q])},
        "/admin/v1/device-types": {"get": _op("deviceTypes", "devices", "The device-type profiles",
                                              (200, "The profiles.", ref("DeviceTypes")), errs=(400,))},
        f"{p}/templates": {
            "post": _op("createTemplate", "tokenization", "Publish a template (an existing templateRef gets its "
                                                          "next version)",
                        (201, "The template.", ref("Template")), req="TemplateRequest"),
            "get": _op("listTemplates", "tokenization", "Built-in and partner templates (latest versions)",
                       (200, "The templates.", obj({"templates": _list("Template")}, ("templates",)))),
        },
        f"{p}/templates/{{template_ref}}": {"get": _op(
            "getTemplate", "tokenization", "One template with its versions",
            (200, "The template.", ref("TemplateWithVersions")),
            params=[q("version", "query", "A version (default the latest).", text("[0-9]{1,6}"))])},
        f"{p}/token-keys": {"get": _op("listTokenKeys", "tokenization", "The tokenization key versions",
                                       (200, "The versions (never key material).",
                                        obj({"partnerId": S, "keys": _list("TokenKey")}, ("partnerId", "keys"))))},
        f"{p}/permissions": {
            "get": _op("getPartnerPermissions", "tokenization", "The partner's permissions",
                       (200, "The permissions (false unless set).", ref("Permissions"))),
            "put": _op("setPartnerPermissions", "tokenization", "Set the partner's permissions (detokenize)",
                       (200, "The permissions.", ref("Permissions")), req="PermissionsRequest")},
        f"{p}/detokenizations": {"get": _op(
            "listDetokenizations", "tokenization", "Audit records of the partner's detokenizations, newest first",
            (200, "A page of records.", ref("Detokenizations")), params=[
                q("bfid", "query", "Only this bfid's records."),
                q("limit", "query", "1-100, default 25.", text("[0-9]+")),
                q("nextToken", "query", "The previous page's `nextToken`.")])},
        f"{p}/token-keys/rotate": {"post": _op("rotateTokenKeys", "tokenization", "A new current key version",
                                               (201, "The new current version.", ref("TokenKey")),
                                               errs=(400, 404, 409))},
        f"{p}/token-keys/{{version}}/retire": {"post": _op(
            "retireTokenKey", "tokenization", "Retire an active key version (irreversible)",
            (200, "The retired version.", ref("TokenKey")), errs=(400, 404, 409))},
        "/admin/v1/accounts": {"post": _op("createAccount", "accounts", "Create a gateway account",
                                           (201, "The account and its secrets (shown once).", ref("AccountCreated")),
                                           req="AccountRequest", required=False, errs=(400, 409))},
        a: {"get": _op("getAccount", "accounts", "An account (no secrets)", (200, "The account.", ref("Account"))),
            "patch": _op("updateAccount", "accounts", "Change an account", (200, "The account.", ref("Account")),
                         req="AccountPatch")},
        f"{a}/accesskey": {"post": _op(
            "rotateAccessKey", "accounts", "Issue a new access key (shown once), stored KMS-wrapped",
            (200, "The new access key; the old one stops working within the record cache lifetime (60 s).",
             obj({"account_id": text("[0-9]{12}"), "api_accesskey": text("[0-9a-f]{32}")},
                 ("account_id", "api_accesskey"))),
            errs=(404,),
            description="Migrates a legacy account (one stored with only a hash of its key, which hash "
                        "authentication cannot use) without waiting for its next login with `api_accesskey`; "
                        "docs/integrators/gateway.md, \"Gateway authentication\".")},
        f"{a}/transactions/{{transaction_id}}": {"get": _op("getStoredTransaction", "accounts",
                                                            "A stored transaction (never card data)",
                                                            (200, "The stored item.", ref("StoredTransaction")))},
        f"{a}/wallet": {
            "put": _op("putWalletSettings", "wallet", "Configure wallet payments",
                       (200, "The settings (no private keys).", ref("WalletSettings")), req="WalletSettingsRequest",
                       errs=(400, 404, 409)),
            "get": _op("getWalletSettings", "wallet", "The wallet settings",
                       (200, "The settings.", ref("WalletSettings"))),
        },
        f"{a}/wallet/domain-association": {"put": _op("putDomainAssociation", "wallet", "The domain association "
                                                                                        "file",
                                                      (200, "Where it is served.", ref("DomainAssociation")),
                                                      req="DomainAssociationRequest")},
        "/admin/v1/wallet/trust-roots": {
            "put": _op("putTrustRoots", "wallet", "The stack-wide default wallet trust roots",
                       (200, "Their fingerprints.", ref("TrustRoots")), req="TrustRootsRequest", errs=(400,)),
            "get": _op("getTrustRoots", "wallet", "The default wallet trust roots",
                       (200, "Their fingerprints.", ref("TrustRoots"))),
        },
        f"{a}/fraud-client": {
            "post": _op("createFraudClient", "fraud", "Issue a collector client id",
                        (201, "The client id and its script path.", ref("FraudClient"))),
            "get": _op("listFraudClients", "fraud", "The account's client ids",
                       (200, "The client ids.", obj({"clients": _list("FraudClient")}, ("clients",)))),
        },
        f"{a}/fraud-client/{{client_id}}": {"delete": _op("disableFraudClient", "fraud", "Disable a client id",
                                                          (200, "The client id, disabled.", ref("FraudClient")))},
        f"{a}/fraud-client/{{client_id}}/devices/{{device_trans_id}}": {"get": _op(
            "getDeviceReport", "fraud", "A stored device report", (200, "The report.", ref("DeviceReport")))},
        f"{p}/proxy-configurations": {
            "post": _op("createProxyConfiguration", "proxy", "Create a proxy configuration",
                        (201, "The configuration, `version` 1.", ref("ProxyConfigurationView")),
                        req="ProxyConfiguration"),
            "get": _op("listProxyConfigurations", "proxy", "The partner's configurations",
                       (200, "The configurations.",
                        obj({"configurations": _list("ProxyConfigurationView")}, ("configurations",)))),
        },
        f"{p}/proxy-configurations/{{reference}}": {
            "get": _op("getProxyConfiguration", "proxy", "One configuration",
                       (200, "The configuration.", ref("ProxyConfigurationView"))),
            "put": _op("replaceProxyConfiguration", "proxy", "Replace a configuration (secrets sent again)",
                       (200, "The configuration, `version` + 1.", ref("ProxyConfigurationView")),
                       req="ProxyConfiguration"),
            "delete": _op("deleteProxyConfiguration", "proxy", "Delete a configuration (calls then get 8004)",
                          (200, "Deleted.", obj({"partnerId": S, "configReferenceID": S, "deleted": {"const": True}},
                                                ("partnerId", "configReferenceID", "deleted")))),
        },
        f"{p}/proxy-configurations/{{reference}}/dry-run": {"post": _op(
            "dryRunProxyConfiguration", "proxy", "Run a configuration on a sample, forwarding nothing",
            (200, "What each action would do and the masked request.", ref("DryRunResult")), req="DryRunRequest",
            required=False)},
        f"{p}/proxy-logs": {"get": _op("listProxyLogs", "proxy", "Masked exchanges, newest first",
                                       (200, "A page of logs.", ref("ProxyLogs")), params=[
                                           q("configReferenceID", "query", "Only this configuration's."),
                                           q("limit", "query", "1-100, default 25.", text("[0-9]+")),
                                           q("nextToken", "query", "The previous page's `nextToken`.")])},
        f"{a}/deliveries": {"get": _op("listDeliveries", "postbacks", "Postback attempts, newest delivery first",
                                       (200, "The attempts.", obj({"account_id": S, "attempts": _list(
                                           "DeliveryAttempt")}, ("account_id", "attempts"))), params=[
                                           q("transaction_id", "query", "Only this transaction's."),
                                           q("delivery_id", "query", "Only this postback's."),
                                           q("limit", "query", "Default 100, at most 1000.", text("[0-9]+"))])},
        f"{a}/deliveries/{{delivery_id}}/redeliver": {"post": _op(
            "redeliverPostback", "postbacks", "Queue one postback again (same delivery id)",
            (200, "Queued.", obj({"delivery_id": S, "queued": {"const": True}}, ("delivery_id", "queued"))))},
        f"{a}/deliveries/requeue": {"post": _op(
            "requeuePostbacks", "postbacks", "Queue again the postbacks of the account's transactions in a window",
            (200, "How many transactions were read and postbacks queued (as first copies: one already claimed or "
                  "delivered is not POSTed again); `next`, when more remain, goes back as `after`.",
             obj({"account_id": S, "scanned": I, "queued": I, "next": {"oneOf": [ref("RequeuePosition"),
                                                                                 {"type": "null"}]}},
                 ("account_id", "scanned", "queued", "next"))),
            req="RequeueRequest", errs=(400,))},
        "/admin/v1/postbacks/redrive": {"post": _op(
            "redrivePostbacks", "postbacks", "Move dead-lettered postbacks back to the queue",
            (200, "How many moved (and relayed: postbacks queued again from the stream relay's failed batches).",
             obj({"moved": I, "relayed": I}, ("moved", "relayed"))),
            req="RedriveRequest", required=False, errs=(400,))},
    }
    schemas = _schemas()
    schemas["RedriveRequest"] = obj({"limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000}},
                                    closed=False)
    schemas["RequeuePosition"] = obj({"transaction_id": S, "created_at": I}, ("transaction_id", "created_at"))
    schemas["RequeueRequest"] = obj({
        "from": {"type": "integer", "minimum": 0, "description": "Unix seconds: the window's first second."},
        "to": {"type": "integer", "minimum": 0, "description": "Unix seconds: its last (at most 31 days after "
                                                               "`from`)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000,
                  "description": "Transactions read by this call at most."},
        "after": ref("RequeuePosition")}, ("from", "to"), closed=False)
    for path, item in paths.items():
        names = [seg[1:-1] for seg in path.split("/") if seg.startswith("{")]
        for operation in item.values():
            operation.setdefault("security", [{"sigv4": []}])
            operation["parameters"] = [q(n, "path", f"The {n.replace('_', ' ')}.") for n in names] + operation.get(
                "parameters", [])
    return document(
        api="management", title="Vault management API",
        description="Partners, credentials, BDKs, devices, templates and tokenization keys, gateway accounts, "
                    "wallets, fraud client ids, proxy configurations and logs, postback deliveries. Errors: "
                    "`{success: false, errCode, errMessage}` with 400, 404, 409 or 500, and 405 (errCode 405, with "
                    "the `Allow` header) for a method the resource does not have (docs/operators/management-api.md).",
        paths=paths, schemas=schemas,
        security_schemes={"sigv4": {"type": "apiKey", "in": "header", "name": "Authorization",
                                    "description": "AWS IAM: requests signed with AWS Signature Version 4 (e.g. "
                                                   "`awscurl --service execute-api`). The local runner's loopback "
                                                   "management API takes no authentication.",
                                    "x-amazon-apigateway-authtype": "awsSigv4"}},
        tags=[{"name": n} for n in ("partners", "devices", "tokenization", "accounts", "wallet", "fraud", "proxy",
                                    "postbacks")])
