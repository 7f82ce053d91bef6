"""The merchants' API keys in the gateway API's document (issue 31): the original's ``api-keys`` operations and
``api-key-scopes``, with its schema names and members. Merged into ``openapi/gateway.json`` by :mod:`.gateway`."""

from __future__ import annotations

from typing import Any

from local.contracts.common import body, obj, parameter, ref, response, text
from local.contracts.iframe import _PAGING_HEADERS as PAGING_HEADERS  # the original's list headers, one table
from vaultcore.apikeys import catalog, service
from vaultcore.apikeys.store import KEY_ID

__all__ = ["paths", "schemas", "SECURITY_SCHEMES"]

SECURITY_SCHEMES = {
    "apiKeyBasic": {"type": "http", "scheme": "basic", "description": (
        "An API key: `api_<id>` as the user, its `secret` as the password (the key's `methods` allow BASIC or "
        "ALL); or the account's own `account_id:api_accesskey`, which holds every scope. Every failure: 401, "
        "errCode 1003; a scope the key lacks: 403, errCode 911, the scope named.")},
    "apiKeyHmac": {"type": "apiKey", "in": "header", "name": "Authorization", "x-scheme": "Hmac", "description": (
        "An API key whose `methods` allow HMAC or ALL: `Hmac username=\"api_<id>\", nonce=\"...\", "
        "timestamp=\"...\", response=\"...\"`, `response` the hex HMAC-SHA256 keyed with the secret over "
        "`<METHOD> <path>\\n<nonce>\\n<timestamp>\\n\\n<hex SHA-256 of the body>`; each nonce once, the "
        "timestamp within 15 minutes (docs/integrators/api-keys.md).")}}
_SECURITY: list[dict[str, list[str]]] = [{"apiKeyBasic": []}, {"apiKeyHmac": []}]


def _members() -> dict[str, Any]:
    return {
        "label": text(r"[0-9a-zA-Z\[\\\]^_`\-\s]{3,100}", "A word or short phrase that describes the key (the "
                                                         "original's `^[0-9a-zA-z-_\\s]{3,100}$`)."),
        "methods": {"type": "array", "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": list(service.METHODS)},
                    "description": "How the key may authenticate: HTTP Basic, the HMAC scheme, or ALL (default)."},
        "accounts": {"type": "array", "minItems": 1, "maxItems": 100, "items": text("[0-9]{12}"),
                     "description": "The accounts the key may act on (default: the account it is created on); "
                                    "only accounts the calling key may act on (403 otherwise)."},
        "scopes": {"type": "array", "minItems": 1, "maxItems": len(catalog.SCOPES), "items": ref("APIKeyScopes"),
                   "description": "What the key may do; each one the calling key holds itself (403 otherwise)."},
        "expiresAt": {"type": "string", "format": "date-time",
                      "description": "When the key stops working (takes precedence over `expiresIn`)."},
        "enabled": {"type": "boolean", "description": "A disabled key authenticates nothing."},
    }


def schemas() -> dict[str, Any]:
    members = _members()
    expires_in = text(r"[0-9]{1,6} (second|minute|hour|day|week|month|year)s?",
                      "How long the key lives from now (a month is 30 days, a year 365); at most 10 years; "
                      "not used when `expiresAt` is sent.")
    view = {"id": text(KEY_ID, "The key's id (`api_` and 32 hex characters); the Basic user."), **members}
    request = {**members, "expiresIn": expires_in,
               "expiresAt": dict(members["expiresAt"], type=["string", "null"])}
    return {
        "APIKeyScopes": {"type": "string", "enum": list(catalog.SCOPES),
                         "description": "A scope (`pcx:<area>:*` allows the whole area): GET /api/v4/api-key-scopes."},
        "ApiKey": obj(view, ["id", "label", "methods", "accounts", "scopes", "enabled"],
                      description="An API key (its secret is shown once, at creation)."),
        "ApiKeyExtended": obj({**view, "secret": text("[0-9a-f]{32}", "The key's secret: answered by its "
                                                                       "creation only, and stored only wrapped.")},
                              ["id", "label", "methods", "accounts", "scopes", "enabled"],
                              description="An API key and, at its creation, its secret."),
        "ApiKeys": {"type": "array", "items": ref("ApiKey"),
                    "description": "The original's list: a bare array (paging in the X-* headers)."},
        "CreateApiKeyRequest": obj(request, ["label", "scopes"]),
        "UpdateApiKeyRequest": obj(request),
        "ListApiKeyScopesEntry": obj({
            "scope": ref("APIKeyScopes"), "description": {"type": "string"},
            "category": {"type": "string"},
            "level": {"type": "integer", "minimum": 0, "description": "Child scopes have a higher level."},
            "enabled": {"type": "boolean", "description": "False: this platform has no operation the scope allows "
                                                          "yet (Account Updater, Apple Pay)."}},
            ["scope", "description", "category", "level", "enabled"]),
        "ListApiKeyScopes": {"type": "array", "items": ref("ListApiKeyScopesEntry")},
    }


def _errors(*statuses: int) -> dict[str, Any]:
    meaning = {400: "The body is not one JSON object or the input gate refused it (`invalid_request`).",
               401: "Authentication failed (`authentication`, errCode 1003): one answer for every cause (unknown, "
                    "wrong secret, disabled, expired, a method or account the key does not allow).",
               403: "The calling key lacks the operation's scope, or would grant a scope or account it does not "
                    "hold (`authorization`, errCode 911, named in `value`).",
               404: "No such API key of this account (`not_found`).",
               413: "The body is over the input gate's limit (`invalid_request`).",
               422: "A member is missing or invalid (`invalid_request`, errCode 910, the member in "
                    "`details[].source`), or the account has its 100 keys.",
               500: "Internal error (`internal_server_error`)."}
    return {str(s): response(meaning[s], ref("ApiViolation")) for s in statuses}


def paths() -> dict[str, Any]:
    account = parameter("account_id", "path", "The account.", text("[0-9]{12}"))
    key_id = parameter("resource_id", "path", "The key's id.", text(KEY_ID))
    common = (400, 401, 403, 413, 500)
    scope_note = "Scope: one of {}."
    return {
        "/api/v4/accounts/{account_id}/api-keys": {
            "parameters": [account],
            "get": {"operationId": "listApiKeys", "tags": ["api-keys"], "security": _SECURITY,
                    "summary": "The account's API keys (no secrets)",
                    "description": scope_note.format("`pcx:api_key:read`, `pcx:api_key:*`"),
                    "parameters": [
                        parameter("page", "query", "The page, from 1 (default 1).",
                                  {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 1}),
                        parameter("limit", "query", "Keys per page (default and at most 100).",
                                  {"type": "integer", "minimum": 1, "maximum": 100, "default": 100}),
                        parameter("query", "query", "Only keys whose label contains this (any case).",
                                  {"type": "string", "maxLength": 100})],
                    "responses": {"200": response("The keys, oldest first.", ref("ApiKeys"), headers=PAGING_HEADERS),
                                  **_errors(*common, 422)}},
            "post": {"operationId": "createApiKey", "tags": ["api-keys"], "security": _SECURITY,
                     "summary": "Create an API key (its secret is answered this once)",
                     "description": scope_note.format("`pcx:api_key:create`, `pcx:api_key:*`") + " A key never "
                                    "grants more than the key that creates it.",
                     "requestBody": body(ref("CreateApiKeyRequest"), example={
                         "label": "Reporting server", "scopes": ["pcx:payments:read"], "methods": ["HMAC"],
                         "expiresIn": "90 days"}),
                     "responses": {"201": response("Created: the key and its secret.", ref("ApiKeyExtended")),
                                   **_errors(*common, 422)}},
        },
        "/api/v4/accounts/{account_id}/api-keys/{resource_id}": {
            "parameters": [account, key_id],
            "get": {"operationId": "getApiKey", "tags": ["api-keys"], "security": _SECURITY,
                    "summary": "Read an API key (no secret)",
                    "description": scope_note.format("`pcx:api_key:read`, `pcx:api_key:*`"),
                    "responses": {"200": response("The key.", ref("ApiKeyExtended")),
                                  **_errors(*common, 404, 422)}},
            "patch": {"operationId": "updateApiKey", "tags": ["api-keys"], "security": _SECURITY,
                      "summary": "Change members of an API key",
                      "description": scope_note.format("`pcx:api_key:update`, `pcx:api_key:*`") + " Only a key the "
                                     "caller covers (every scope and account of it), and never beyond the caller.",
                      "requestBody": body(ref("UpdateApiKeyRequest"), example={"enabled": False}),
                      "responses": {"200": response("The key.", ref("ApiKeyExtended")),
                                    **_errors(*common, 404, 422)}},
            "delete": {"operationId": "deleteApiKey", "tags": ["api-keys"], "security": _SECURITY,
                       "summary": "Delete an API key (it authenticates nothing from the next call on)",
                       "description": scope_note.format("`pcx:api_key:delete`, `pcx:api_key:*`") + " Only a key "
                                      "the caller covers.",
                       "responses": {"204": response("Deleted."), **_errors(*common, 404, 422)}},
        },
        "/api/v4/api-key-scopes": {
            "get": {"operationId": "listApiKeyScopes", "tags": ["api-keys"], "security": _SECURITY,
                    "summary": "The scopes a key may hold, with description, category and level",
                    "description": scope_note.format(", ".join(f"`{s}`" for s in catalog.LIST_SCOPES)) + " (the "
                                   "original names `pcx:api_key_scopes:read` only, which its scope enum leaves "
                                   "out).",
                    "responses": {"200": response("Every scope.", ref("ListApiKeyScopes")),
                                  **_errors(400, 401, 403, 500)}},
        },
    }
