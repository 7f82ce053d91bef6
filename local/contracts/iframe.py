"""The payment iFrame's operations in the gateway API's document (issue 19): configurations and instances (HTTP
Basic), the page, its scripts and submissions. Merged into ``openapi/gateway.json`` by :mod:`.gateway`."""

from __future__ import annotations

from typing import Any

from local.contracts.common import body, codes, nullable, obj, parameter, ref, response, text
from vaultcore.iframe import capture, configs, instances
from vaultcore.iframe.errors import CODES, ONERROR_CODES
from vaultcore.iframe.page import STYLE_OPTIONS
from vaultcore.iframe.violations import ERROR_TYPES
from vaultcore.v4.errors import MEMBER_INVALID, SCOPE_MISSING

__all__ = ["paths", "schemas", "SECURITY_SCHEMES"]

SECURITY_SCHEMES = {"accountBasic": {"type": "http", "scheme": "basic", "description": (
    "The payment iFrame's configurations and instances: `account_id` as the user, `api_accesskey` as the "
    "password (the merchant's server only; a page never holds them). Every failure: 401, errCode 1003.")}}
_SETTING = {"type": "string", "enum": list(configs.SETTINGS)}
_ERROR_TEXT = "`{success: false, errCode, errMessage}` (docs/integrators/iframe.md, \"Payment iFrame error codes\")."


def schemas() -> dict[str, Any]:
    address = obj({k: _SETTING for k in configs.ADDRESS_FIELDS}, description="Each billing field: collected and "
                  "required, optional, or not collected (our per-field form).")
    billing = {"description": "The original's one setting (`required`: address1, city, state, zip required and "
                              "address2 optional; `optional`: all five optional; `omit`: none), or our per-field "
                              "object.",
               "oneOf": [_SETTING, address]}
    save = dict(_SETTING, description="`required`: every capture is saved (a STORE through the gateway; the result's "
                                      "`saved.token_id`); `optional`: a checkbox; `omit` (default): never.")
    members = {
        "label": text(r"[^\x00-\x1f\x7f]{1,100}", "A name for the merchant."),
        "language": {"type": "string", "enum": [*configs.LANGUAGES, *configs.LANGUAGE_ALIASES],
                     "description": "Labels and messages: English and Spanish translated, German, French and Italian "
                                    "in English for now; `en` and `es` are accepted as ENGLISH and SPANISH."},
        "timeout": {"type": "integer", "minimum": configs.TIMEOUT_RANGE[0], "maximum": configs.TIMEOUT_RANGE[1],
                    "description": f"Seconds an instance (its bearer token) lives (a whole number: 600.0 is accepted too); default "
                                   f"{configs.DEFAULT_TIMEOUT}."},
        "currency": {"type": "string", "description": "ISO 4217, default USD."},
        "allowedPaymentMethods": {"type": "array", "items": {"type": "string", "enum": list(configs.METHODS)},
                                  "minItems": 1, "maxItems": 2, "uniqueItems": True,
                                  "description": "CLICK_TO_PAY is refused (not offered)."},
        "allowedParentDomains": {"type": "array", "minItems": 0, "maxItems": 10, "items": {"type": "string"},
                                 "description": "CSP frame-ancestors host sources: `[https://]host[:port]`, the host "
                                                "optionally `*.`-prefixed (two labels after it); https only in "
                                                "production; `http://localhost:<port>` and "
                                                "`http://127.0.0.1:<port>` in certification. Empty: the frame is "
                                                "embeddable nowhere (`frame-ancestors 'none'`) and is used top-level "
                                                "by its instance's bearer token only."},
        "cardSettings": obj({"cvv": _SETTING, "billingAddress": billing,
                             "contactInfo": dict(_SETTING, description="Email (per the setting) and phone "
                                                                       "(optional); default omit."),
                             "savePaymentOption": save}),
        "achSettings": obj({"savePaymentOption": save}),
        "antiFraud": {"type": "boolean", "description": "Run the device collection in the iframe and return "
                                                        "`antiFraud.device_trans_id` (needs fraud scoring, 903)."},
    }
    card_view = obj({"cvv": _SETTING, "billingAddress": _SETTING, "contactInfo": _SETTING,
                     "savePaymentOption": _SETTING}, ["cvv", "billingAddress", "contactInfo", "savePaymentOption"])
    view = dict(members, id=text(configs.CONFIG_ID), createdAt={"type": "integer"}, updatedAt={"type": "integer"},
                language={"type": "string", "enum": list(configs.LANGUAGES)}, cardSettings=card_view,
                billingAddressFields=address)
    card = obj({"first1": text("[0-9]"), "last4": text("[0-9]{4}"), "expiration": text("[0-9]{4}"),
                "brand": {"type": "string"}}, ["first1", "last4", "expiration", "brand"])
    return {
        # the original's ApiViolation (open: our errCode is its extension member), on every /api/v4 path
        "ApiViolation": obj({
            "message": {"type": "string", "description": "The original's message of the errorType."},
            "traceId": {"type": "string", "format": "uuid", "description": "The request id (as in our logs)."},
            "errorType": {"type": "string", "enum": list(ERROR_TYPES), "description": "\n".join(
                f"`{t}`: errorCode {c}" for t, (c, _) in ERROR_TYPES.items())},
            "errorCode": {"type": "string", "enum": [c for c, _ in ERROR_TYPES.values()]},
            "value": {"type": "string", "description": "What went wrong (never an input value)."},
            "source": {"type": "string", "description": "`request`, or `headers` for authentication."},
            "details": {"type": "array", "items": obj({"detail": {"type": "string"},
                                                       "source": {"type": "string",
                                                                  "description": "The member at fault."}},
                                                      ["detail", "source"])},
            "errCode": codes({**{c: m for c, (_, m) in CODES.items()},
                               # the v4 API's own (vaultcore.v4.errors): webhooks, API keys, payments
                               MEMBER_INVALID: "a request member is missing or invalid (422, the member in "
                                               "`details[].source`)",
                               SCOPE_MISSING: "the key lacks the operation's scope (403, the scope named)"},
                              "Our error code (extension).")},
            ["message", "traceId", "errorType", "errorCode", "value", "source", "details"], closed=False,
            description="The original's error body on /api/v4 (any other path under /api/v4 answers 404 "
                        "`not_found` too)."),
        "IframeError": obj({"success": {"type": "boolean", "const": False},
                            "errCode": codes({c: m for c, (_, m) in CODES.items()}, "Payment iFrame error codes."),
                            "errMessage": {"type": "string"}}, ["success", "errCode", "errMessage"]),
        "IframeConfigurationCreate": obj(members, ["label", "allowedParentDomains"]),
        "IframeConfigurationPatch": obj(members),
        "IframeConfiguration": obj(view, ["id", *configs.MEMBERS, "billingAddressFields"]),
        "IframeConfigurations": {"type": "array", "items": ref("IframeConfiguration"),
                                 "description": "The original's list: a bare array (paging in the X-* headers)."},
        "IframeInstanceRequest": obj({
            "label": text(r"[^\x00-\x1f\x7f]{1,100}"),
            "reference": text(r"[^\x00-\x1f\x7f]{1,100}", "Your reference; the payment's `custom_id` when it fits "
                                                           "one (1-50 of `A-Za-z0-9._-`) and no customId is sent."),
            "tokens": {"type": "array", "maxItems": 0, "items": {"type": "string"},
                       "description": "Only empty: presetting saved payment tokens is not offered."},
            "customer": ref("IframeCustomer"),
            "language": {"type": "string", "enum": list(configs.LANGUAGES), "description": "Over the configuration's."},
            "timeout": {"type": "integer", "minimum": configs.TIMEOUT_RANGE[0], "maximum": configs.TIMEOUT_RANGE[1],
                        "description": "Seconds, over the configuration's."},
            "amount": {"type": ["string", "number"], "description": "Optional order amount (> 0, 2 decimals)."},
            "currency": {"type": "string", "description": "ISO 4217 (default: the configuration's)."},
            "initializeTransaction": {"type": "boolean", "description": "Accepted: the payment is bound to "
                                                                         "`transactionId` from the start."},
            "customId": text(instances.CUSTOM_ID, "Ours: the gateway's `custom_id` (else from reference, else "
                                                  "generated).")},
            ["label"]),
        "IframeCustomer": obj({
            "name": text(r"[^\x00-\x1f\x7f]{1,100}"), "email": {"type": "string"}, "phone": text(r"\+[0-9]{6,16}"),
            "billingAddress": obj({k: text(r"[^\x00-\x1f\x7f]{1,100}") for k in (
                "address1", "address2", "city", "state", "zip", "country", "company")},
                ["address1", "city", "state", "country"])},
            description="The original's Customer: it fills in the frame's email, phone, address and holder fields."),
        "IframeInstance": obj({
            "id": text(instances.INSTANCE_ID, "The instance (GET .../instance/{instance_id})."),
            "bearerToken": text(instances.BEARER, "Short-lived (the timeout), bound to the configuration and "
                                                  "account, good for 3 submissions."),
            "transactionId": text(instances.CUSTOM_ID, "The `custom_id` the payment with the eToken must carry.")},
            ["id", "bearerToken", "transactionId"]),
        "IframeInstanceView": obj({
            "id": text(instances.INSTANCE_ID), "label": {"type": "string"}, "reference": {"type": "string"},
            "tokens": {"type": "array", "items": {"type": "string"},
                       "description": "The eTokens of its submissions (read once, within one hour)."},
            "customer": ref("IframeCustomer"), "language": {"type": "string", "enum": list(configs.LANGUAGES)},
            "timeout": {"type": "integer"}, "amount": {"type": "string"}, "currency": {"type": "string"}},
            ["id", "label", "tokens", "language", "timeout", "currency"]),
        "IframeSubmission": obj({name: {"type": "boolean"} if name == "savePayment" else {"type": "string"}
                                 for name in capture.FIELDS}, description=(
            "The iframe's fields by name (sent by frame.js, never by the merchant's page).")),
        "IframeResult": obj({
            "eToken": {"type": "string", "description": "The bfid to send as `etoken` (with `custom_id`) in a "
                                                        "SALE; read once, within one hour."},
            "customId": text(instances.CUSTOM_ID), "paymentMethod": {"type": "string", "enum": list(configs.METHODS)},
            "card": card, "bank": obj({"last4": text("[0-9]{4}")}, ["last4"]),
            "antiFraud": obj({"device_trans_id": {"type": "string"}}, ["device_trans_id"]),
            "contact": obj({"email": {"type": "string"}, "phone": {"type": "string"}},
                           description="cardSettings.contactInfo: what the shopper entered (not kept)."),
            "saved": nullable(obj({"token_id": text("[0-9]{12}", "The STORE's transaction_id: `token_id` of "
                                                                 "later payments.")}, ["token_id"]))},
            ["eToken", "customId", "paymentMethod"]),
    }


def _errors(*statuses: int) -> dict[str, Any]:
    meaning = {400: "The body is not one JSON object or the input gate refused it (400), or a member is invalid "
                    "(901, 902, 906).", 401: "Authentication failed (1003) or the bearer token is invalid (904).",
               403: "The payment method is not allowed (907).", 404: "No such configuration of this account (404).",
               409: "The account is not ready (903) or the submissions are used up (905).",
               413: "The body is over the input gate's limit.", 500: "Internal error."}
    return {str(s): response(meaning[s] + " " + _ERROR_TEXT, ref("IframeError")) for s in statuses}


#: The original's paging headers of a list (its components/headers): name -> (type, meaning).
_PAGING = {"X-Total": ("integer", "Configurations in the list."), "X-Per-Page": ("integer", "The page's `limit`."),
           "X-Current_page": ("integer", "This page."), "X-Last-Page": ("integer", "The last page."),
           "X-Total-In-This-Page": ("integer", "Items in this page."),
           "X-From": ("integer", "The first item's position (from 1; 0 for an empty page)."),
           "X-To": ("integer", "The last item's position."), "X-Path": ("string", "The list's URL."),
           "X-First-Page-Url": ("string", "The first page."), "X-Last-Page-Url": ("string", "The last page."),
           "X-Prev-Page-Url": ("string", "The previous page (absent on the first)."),
           "X-Next-Page-Url": ("string", "The next page (absent on the last)."),
           "X-Links": ("string", "The pages, as the original's paginator lists them.")}
_PAGING_HEADERS = {name: {"description": meaning, "schema": {"type": kind}} for name, (kind, meaning) in _PAGING.items()}


def _v4_errors(*statuses: int) -> dict[str, Any]:
    """The /api/v4 paths' errors: the original's ApiViolation; a member's validation is 422 (module violations)."""
    meaning = {400: "The body is not one JSON object or the input gate refused it (`invalid_request`, errCode 400).",
               401: "Authentication failed (`authentication`, errCode 1003): one answer for every cause.",
               404: "No such configuration or instance of this account (`not_found`).",
               413: "The body is over the input gate's limit (`invalid_request`).",
               422: "A member is missing or invalid (`invalid_request`, errCode 901/902, the member in "
                    "`details[].source`), or the account is not ready (errCode 903).",
               500: "Internal error (`internal_server_error`)."}
    return {str(s): response(meaning[s], ref("ApiViolation")) for s in statuses}


def paths() -> dict[str, Any]:
    basic: list[dict[str, list[str]]] = [{"accountBasic": []}]
    account = parameter("account_id", "path", "The account (the Basic user).", text("[0-9]{12}"))
    config_id = parameter("id", "path", "The configuration id.", {"type": "string"})
    common = (400, 401, 413, 500)
    html = {"text/html": {"schema": {"type": "string"}}}
    js = {"application/javascript": {"schema": {"type": "string"}}}
    return {
        "/api/v4/accounts/{account_id}/payment-iframe": {
            "parameters": [account],
            "get": {"operationId": "listPaymentIframes", "tags": ["iframe"], "security": basic,
                    "summary": "The account's payment iFrame configurations",
                    "parameters": [
                        parameter("page", "query", "The page, from 1 (default 1).",
                                  {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 1}),
                        parameter("limit", "query", "Configurations per page (default and at most 100).",
                                  {"type": "integer", "minimum": 1, "maximum": 100, "default": 100})],
                    "responses": {"200": response("The configurations.", ref("IframeConfigurations"),
                                                  headers=_PAGING_HEADERS),
                                  **_v4_errors(*common, 422)}},
            "post": {"operationId": "createPaymentIframe", "tags": ["iframe"], "security": basic,
                     "summary": "Create a payment iFrame configuration",
                     "requestBody": body(ref("IframeConfigurationCreate"), example={
                         "label": "Web shop", "allowedParentDomains": ["https://shop.example"],
                         "allowedPaymentMethods": ["CARD", "ACH"], "timeout": 900, "language": "SPANISH",
                         "cardSettings": {"cvv": "required", "billingAddress": "required", "contactInfo": "optional",
                                          "savePaymentOption": "optional"},
                         "achSettings": {"savePaymentOption": "omit"}}),
                     "responses": {"201": response("Created.", ref("IframeConfiguration")), **_v4_errors(*common, 422)}},
        },
        "/api/v4/accounts/{account_id}/payment-iframe/{id}": {
            "parameters": [account, config_id],
            "get": {"operationId": "getPaymentIframe", "tags": ["iframe"], "security": basic,
                    "summary": "Read a configuration",
                    "responses": {"201": response("The configuration (201, as the original's document has it).",
                                                  ref("IframeConfiguration")),
                                  **_v4_errors(*common, 404, 422)}},
            "patch": {"operationId": "patchPaymentIframe", "tags": ["iframe"], "security": basic,
                      "summary": "Change members of a configuration (cardSettings merged)",
                      "requestBody": body(ref("IframeConfigurationPatch")),
                      "responses": {"201": response("The configuration (201, as the original's document has it).",
                                                    ref("IframeConfiguration")),
                                    **_v4_errors(*common, 404, 422)}},
            "delete": {"operationId": "deletePaymentIframe", "tags": ["iframe"], "security": basic,
                       "summary": "Remove a configuration (its instances stop working)",
                       "responses": {"204": response("Removed."), **_v4_errors(*common, 404, 422)}},
        },
        "/api/v4/accounts/{account_id}/payment-iframe/{id}/instance/init": {
            "parameters": [account, config_id],
            "post": {"operationId": "initPaymentIframeInstance", "tags": ["iframe"], "security": basic,
                     "summary": "An instance: its bearer token for VaultCheckout.mount",
                     "requestBody": body(ref("IframeInstanceRequest"), example={"label": "Order 1001",
                                                                               "amount": "24.99",
                                                                               "reference": "order-1001"}),
                     "responses": {"201": response("The instance.", ref("IframeInstance")),
                                   **_v4_errors(*common, 404, 422)}},
        },
        "/api/v4/accounts/{account_id}/payment-iframe/{id}/instance/{instance_id}": {
            "parameters": [account, config_id, parameter("instance_id", "path", "The instance's id.",
                                                         {"type": "string"})],
            "get": {"operationId": "getPaymentIframeInstance", "tags": ["iframe"], "security": basic,
                    "summary": "An instance and the eTokens of its submissions",
                    "responses": {"201": response("The instance (201, as the original's document has it).",
                                                  ref("IframeInstanceView")),
                                  **_v4_errors(400, 401, 404, 500)}},
        },
        "/iframe/v1/checkout.js": {"get": {
            "operationId": "iframeLibrary", "tags": ["iframe"], "security": [{}],
            "summary": "The client library (VaultCheckout.mount); `onError` codes: "
                       + ", ".join(f"`{c}`" for c in ONERROR_CODES),
            "responses": {"200": response("JavaScript.", content=js), **_errors(400, 500)}}},
        "/iframe/v1/frame.js": {"get": {
            "operationId": "iframeScript", "tags": ["iframe"], "security": [{}], "summary": "The iframe's script",
            "responses": {"200": response("JavaScript.", content=js), **_errors(400, 500)}}},
        "/iframe/v1/frame": {"get": {
            "operationId": "iframePage", "tags": ["iframe"], "security": [{}],
            "summary": "The iframe page (made by checkout.js)",
            "description": "CSP with `frame-ancestors` from the configuration (`'none'` for a token naming none), "
                           "scripts by nonce; no fields for a bad or expired token or an origin not allowed.",
            "parameters": [parameter("token", "query", "The bearer token.", {"type": "string"}),
                           parameter("origin", "query", "The parent page's origin.", {"type": "string"}),
                           parameter("style", "query", "JSON of the style options: " + ", ".join(STYLE_OPTIONS),
                                     {"type": "string"})],
            "responses": {"200": response("The page.", content=html), **_errors(400, 500)}}},
        "/iframe/v1/submit": {"post": {
            "operationId": "iframeSubmit", "tags": ["iframe"], "security": [{}],
            "summary": "A submission from the iframe (Authorization: Bearer <token>)",
            "parameters": [parameter("Authorization", "header", "`Bearer <bearerToken>`.", {"type": "string"})],
            "requestBody": body(ref("IframeSubmission")),
            "responses": {"200": response("The result submit() resolves with.", ref("IframeResult")),
                          **_errors(400, 401, 403, 409, 413, 500)}}},
    }
