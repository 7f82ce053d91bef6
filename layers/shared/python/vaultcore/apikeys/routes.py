"""HTTP operations of the merchants' API keys on the gateway API (wiring: ``functions/api_keys/app.py``).

The original's paths, statuses and required scopes ("The API Key calling this endpoint must have one of the
following scopes", each operation's description in its document):

* ``POST /api/v4/accounts/{account_id}/api-keys``: create, 201 ``ApiKeyExtended`` with the ``secret`` (shown once);
  ``pcx:api_key:create``;
* ``GET /api/v4/accounts/{account_id}/api-keys``: list, 200, a bare array of ``ApiKey`` with the original's ``X-*``
  paging headers (``page``, ``limit``, ``query``); ``pcx:api_key:read``;
* ``GET /api/v4/accounts/{account_id}/api-keys/{resource_id}``: read, 200 ``ApiKeyExtended`` (no secret);
  ``pcx:api_key:read``;
* ``PATCH .../api-keys/{resource_id}``: change, 200; ``pcx:api_key:update``;
* ``DELETE .../api-keys/{resource_id}``: remove, 204; ``pcx:api_key:delete``;
* ``GET /api/v4/api-key-scopes``: the scope catalog, 200, a bare array of ``ListApiKeyScopesEntry``
  (:data:`vaultcore.apikeys.catalog.LIST_SCOPES`).

Authentication and the scope come first (:func:`vaultcore.v4.auth.authenticate`); errors are ours, answered as the
original's ``ApiViolation`` by the function's wrapper (vaultcore.iframe.violations.v4_errors).
"""

from __future__ import annotations

from vaultcore.api.http import Request, Response, json_response
from vaultcore.apikeys import catalog, service
from vaultcore.v4.auth import authorize
from vaultcore.v4.lists import paged

__all__ = ["route", "KEYS", "KEY", "SCOPES_PATH", "OPERATION_SCOPES"]

KEYS = "/api/v4/accounts/{account_id}/api-keys"
KEY = KEYS + "/{resource_id}"
SCOPES_PATH = "/api/v4/api-key-scopes"
#: (resource, method) -> the original's scope of the operation (a wildcard over it allows it too)
OPERATION_SCOPES: dict[tuple[str, str], tuple[str, ...]] = {
    (KEYS, "POST"): ("pcx:api_key:create",), (KEYS, "GET"): ("pcx:api_key:read",),
    (KEY, "GET"): ("pcx:api_key:read",), (KEY, "PATCH"): ("pcx:api_key:update",),
    (KEY, "DELETE"): ("pcx:api_key:delete",), (SCOPES_PATH, "GET"): catalog.LIST_SCOPES}


def route(request: Request) -> Response:
    resource = request.resource
    method = request.method.upper()
    principal = authorize(request, OPERATION_SCOPES)
    if resource == SCOPES_PATH:
        return json_response(200, catalog.entries())
    if resource == KEYS:
        if method == "POST":
            return json_response(201, service.create(principal, request.json()))
        return paged(request, service.list_for(principal, request.query.get("query")))
    key_id = request.path_params.get("resource_id", "")
    if method == "GET":
        return json_response(200, service.get(principal, key_id))
    if method == "PATCH":
        return json_response(200, service.patch(principal, key_id, request.json()))
    service.delete(principal, key_id)
    return Response(204, "", {})
