"""The proxy API (ProxyApi): a request posted to a stored proxy configuration."""

from __future__ import annotations

from typing import Any

from local.contracts import errors
from local.contracts.common import (
    basic_scheme,
    codes,
    document,
    header,
    hmac_scheme,
    obj,
    parameter,
    ref,
    response,
    text,
)
from vaultcore.proxy.service import _MAX_VAULT_ID, _SAFE_RESPONSE_HEADERS

PATH_ID = r"[A-Za-z0-9_\-]{1,64}"


def build() -> dict[str, Any]:
    schemas: dict[str, Any] = {
        "ProxyErrorCode": codes(errors.proxy_table(), "`code` of the proxy error body."),
        "ProxyError": obj({"success": {"const": False}, "code": ref("ProxyErrorCode"),
                           "message": text(description="Human-readable; never a value, a body or a URL.")},
                          ("success", "code", "message"),
                          description="The proxy's own error body (spec: HTTP 400 and 500 carry it; 401 and 403 "
                                      "too)."),
        # the JSON and form bodies as named object schemas: generated clients tell them apart by class (two
        # untyped `{}` schemas made openapi-python-client test `isinstance(body, Any)`, a TypeError)
        "ProxyJsonBody": {"type": "object", "additionalProperties": True,
                          "description": "A JSON object, forwarded as the target's request body after the "
                                         "configuration's substitutions (other JSON values, e.g. an array, may be "
                                         "sent as raw `application/json` content)."},
        "ProxyFormBody": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "URL-form fields."},
        "ProxyAnswer": {
            "description": "What the partner receives: the target's answer (any JSON), or the proxy's error body. "
                           "A JSON object of exactly `success: false`, `code` and `message` is the proxy's error "
                           "and carries one of its codes.",
            "if": {"type": "object", "required": ["success", "code", "message"], "maxProperties": 3,
                   "properties": {"success": {"const": False}}},
            "then": ref("ProxyError"),
        },
    }
    target_headers = {
        **{canonical: header(f"The target's `{canonical}` (safe response headers only).")
           for canonical in _SAFE_RESPONSE_HEADERS.values()},
        "vault-id": header("After a tokenize action (request or response): the bfid of the tokens written.",
                           text(maxLength=_MAX_VAULT_ID)),
        "vault-unmatched": header("Substitutions that matched nothing: `<action>.<substitution>` (`r` prefix for "
                                  "response actions), comma-separated; absent when every substitution matched."),
        "vault-var-{name}": header("One per exchange variable holding a token (lower-case name)."),
    }
    passthrough = {"*/*": {"schema": {"description": "The target's body, as it answered (with response "
                                                     "actions: tokens in place)."}},
                   "application/json": {"schema": ref("ProxyAnswer")}}
    error_content = {"application/json": {"schema": ref("ProxyAnswer")}, "*/*": {"schema": {}}}
    operation = {
        "operationId": "proxyRequest", "tags": ["proxy"],
        "summary": "Send a request through a stored proxy configuration",
        "description": (
            "The body is parsed by `Content-Type` (JSON and `*+json`, XML and `*+xml`, URL-form; URL-form data may "
            "also come in the query string), the configuration's actions run in order (tokenize, detokenize, "
            "parser), and the result is forwarded to the configuration's `target` with its `method`, through the "
            "egress guard. The answer is the target's status, body and safe headers; a target's own 4xx/5xx is "
            "passed through as is. Bounds: 1 MiB body, JSON depth 32, arrays of 10,000, 1,000 form fields; XML with "
            "a DOCTYPE is refused (8108). Any authentication failure is 8003/401; a path partner that is not the "
            "caller, or a configuration that is not the caller's, is 8004/403. Errors: `ProxyError`."),
        "security": [{"hmac": []}, {"basic": []}],
        "parameters": [
            parameter("partnerID", "path", "The authenticated partner's id (else 8004).", text(PATH_ID)),
            parameter("configReferenceID", "path", "The configuration's reference (`configReferenceID` of the "
                                                   "management API).", text(PATH_ID)),
            parameter("vault-id", "header", "The bfid of the tokens a detokenize action finds (missing or not a bfid "
                                            "of this partner: 8104).", text(maxLength=_MAX_VAULT_ID)),
            parameter("dev-device-serial", "header", "Parser actions: the device serial."),
            parameter("dev-device-type", "header", "Parser actions: the device type."),
            parameter("dev-payload", "header", "Parser actions: the encrypted payload (hex)."),
            parameter("dev-ksn", "header", "Parser actions: the KSN (terminal types)."),
            parameter("dev-client-id", "header", "Parser actions: the device's clientId (optional)."),
        ],
        "requestBody": {"required": False, "description": "JSON, XML, URL-form or none; forwarded byte for byte "
                                                          "when no substitution changed it.",
                        "content": {"application/json": {"schema": ref("ProxyJsonBody")},
                                    "application/xml": {"schema": {}},
                                    "application/x-www-form-urlencoded": {"schema": ref("ProxyFormBody")},
                                    "*/*": {"schema": {}}}},
        "responses": {
            "200": response("The target's answer (or a response action's result).", headers=target_headers,
                            content=passthrough),
            "400": response("A proxy error (81xx), or the target's own 400.", content=error_content),
            "401": response("Authentication error (8003, any cause), or the target's own 401.", content=error_content),
            "403": response("Permission denied (8004), or the target's own 403.", content=error_content),
            "500": response("Internal error (8001; the proxy log holds the detail), or the target's own 500.",
                            content=error_content),
            "default": response("Any other status of the target, passed through.", headers=target_headers,
                                content=passthrough),
        },
    }
    return document(
        api="proxy", title="Vault proxy API",
        description="Partners post to their stored proxy configurations (management API "
                    "`/admin/v1/partners/{id}/proxy-configurations`, schema `ProxyConfiguration` of the management "
                    "document). Errors: `{success: false, code, message}` (docs/integrators/proxy.md, \"Proxy error codes\").",
        paths={"/api/v1/partners/{partnerID}/configurations/{configReferenceID}": {"post": operation}},
        schemas=schemas, security_schemes={"hmac": hmac_scheme(), "basic": basic_scheme()},
        tags=[{"name": "proxy"}])
