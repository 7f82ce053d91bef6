"""HTTP routes of the dynamic descriptors on the gateway API (wiring: ``functions/dynamic_descriptors/app.py``).

HTTP Basic (:func:`vaultcore.v4.auth.authenticate`), each operation's scope first, as the original's document
names it (``pcx:dynamic_descriptors:<action>``, or ``pcx:dynamic_descriptors:*``):

* ``GET /api/v4/accounts/{account_id}/dynamic_descriptors`` (read): the list, ``page`` / ``limit`` / ``query``,
  the original's bare array and ``X-*`` paging headers (:func:`vaultcore.v4.lists.paged`);
* ``POST /api/v4/accounts/{account_id}/dynamic_descriptors`` (create): 201;
* ``GET|PATCH|DELETE /api/v4/accounts/{account_id}/dynamic_descriptors/{id}`` (read / update / delete): 200, 200,
  204.
"""

from __future__ import annotations

from vaultcore.api.http import Request, Response, json_response
from vaultcore.descriptors import records
from vaultcore.v4.auth import authorize
from vaultcore.v4.errors import MemberInvalid
from vaultcore.v4.lists import paged

__all__ = ["route", "SCOPES"]

_BASE = "/api/v4/accounts/{account_id}/dynamic_descriptors"
_ONE = _BASE + "/{id}"
_ACTIONS = {(_BASE, "GET"): "read", (_BASE, "POST"): "create", (_ONE, "GET"): "read", (_ONE, "PATCH"): "update",
            (_ONE, "DELETE"): "delete"}
SCOPES = {key: f"pcx:dynamic_descriptors:{action}" for key, action in _ACTIONS.items()}
_MAX_QUERY = 100


def route(request: Request) -> Response:
    method = request.method.upper()
    account = authorize(request, SCOPES).account
    if request.resource == _BASE:
        if method == "POST":
            return json_response(201, records.create(account, request.json()))
        query = request.query.get("query")
        if query is not None and len(query) > _MAX_QUERY:
            raise MemberInvalid("query", f"at most {_MAX_QUERY} characters")
        return paged(request, records.list_descriptors(account, query))
    descriptor_id = request.path_params.get("id", "")
    if method == "GET":
        return json_response(200, records.get(account, descriptor_id))
    if method == "PATCH":
        return json_response(200, records.patch(account, descriptor_id, request.json()))
    records.delete(account, descriptor_id)
    return Response(204, "", {})
