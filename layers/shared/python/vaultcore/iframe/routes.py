"""HTTP routes of the payment iFrame on the gateway API (wiring: ``functions/iframe/app.py``).

Merchant server, HTTP Basic ``account_id:api_accesskey`` (the path's ``account_id`` must be the caller's):

* ``POST|GET /api/v4/accounts/{account_id}/payment-iframe``: create (201 ``{id, ...}``) / list (a bare array,
  ``page`` and ``limit``, the original's ``X-*`` paging headers);
* ``GET|PATCH|DELETE /api/v4/accounts/{account_id}/payment-iframe/{id}``: read / change (both 201, as the
  original's document has them: :data:`READ_STATUS`) / remove (204);
* ``POST /api/v4/accounts/{account_id}/payment-iframe/{id}/instance/init``: an instance and its bearer token;
* ``GET /api/v4/accounts/{account_id}/payment-iframe/{id}/instance/{instance_id}``: an instance and its eTokens.

Browser (no account credentials):

* ``GET /iframe/v1/checkout.js``: the client library the merchant page includes;
* ``GET /iframe/v1/frame`` and ``GET /iframe/v1/frame.js``: the iframe page and its script (:mod:`.page`);
* ``POST /iframe/v1/submit`` with ``Authorization: Bearer <token>``: a submission (:mod:`.capture`).

Every other path under ``/api/v4`` (``/api/v4/{proxy+}``, any method): 404.

Errors: ``{success: false, errCode, errMessage}`` (:mod:`vaultcore.iframe.errors`); every authentication failure
is the uniform 401 / 1003. On the ``/api/v4`` paths the function's wrapper answers them as the original's
``ApiViolation`` (:mod:`vaultcore.iframe.violations`), our errCode kept as its extension member.
"""

from __future__ import annotations

import uuid
from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import MethodNotAllowed, NotFound
from vaultcore.iframe import capture, configs, instances, page
from vaultcore.iframe.errors import BODY_INVALID, IframeError
from vaultcore.v4.auth import authorize
from vaultcore.v4.lists import paged

__all__ = ["route"]

_BASE = "/api/v4/accounts/{account_id}/payment-iframe"
_V4_ANY = "/api/v4/{proxy+}"
_INSTANCE = _BASE + "/{id}/instance/{instance_id}"
# The original's scope for each operation ("The API Key calling this endpoint must have one of the following
# scopes": the operation's own, or a wildcard over it, which vaultcore.v4.auth.grants allows).
_SCOPES = {(_BASE, "POST"): "pcx:iframe:create", (_BASE, "GET"): "pcx:iframe:read",
           (_BASE + "/{id}", "GET"): "pcx:iframe:read", (_BASE + "/{id}", "PATCH"): "pcx:iframe:update",
           (_BASE + "/{id}", "DELETE"): "pcx:iframe:delete",
           (_BASE + "/{id}/instance/init", "POST"): "pcx:iframe:instance:create",
           (_INSTANCE, "GET"): "pcx:iframe:instance:read"}
# The original's document answers a configuration's GET and PATCH and an instance's GET with 201, and a client
# generated from it accepts nothing else for them (a 200 is an "unexpected status"): its statuses on its paths.
READ_STATUS = 201
_JS = {"Content-Type": "application/javascript; charset=utf-8", "Cache-Control": "public, max-age=300",
       "X-Content-Type-Options": "nosniff", "Cross-Origin-Resource-Policy": "cross-origin"}


def _body(request: Request) -> Any:
    body = request.json()
    if not isinstance(body, dict):
        raise IframeError(BODY_INVALID, "The body must be one JSON object.")
    return body


def _api(request: Request, resource: str) -> Response:
    method = request.method.upper()
    account = authorize(request, _SCOPES).account
    config_id = request.path_params.get("id", "")
    if resource == _BASE:
        if method == "POST":
            return json_response(201, configs.create(account, _body(request)))
        return paged(request, configs.list_configs(account))
    if resource == _BASE + "/{id}":
        if method == "GET":
            return json_response(READ_STATUS, configs.get(account, config_id))
        if method == "PATCH":
            return json_response(READ_STATUS, configs.patch(account, config_id, _body(request)))
        configs.delete(account, config_id)
        return Response(204, "", {})
    if resource == _INSTANCE:
        return json_response(READ_STATUS, instances.get_instance(account, config_id,
                                                         request.path_params.get("instance_id", "")))
    return json_response(201, instances.init_instance(account, config_id, _body(request)))


def _bearer(request: Request) -> str | None:
    scheme, _, token = (request.header("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def route(request: Request) -> Response:
    resource = request.resource
    method = request.method.upper()
    if resource.startswith(_BASE):
        return _api(request, resource)
    if resource == _V4_ANY:
        # every other path under /api/v4: the original's not_found body (violations), not API Gateway's own
        raise NotFound("No such operation.")
    if resource == "/iframe/v1/submit":
        if method != "POST":
            raise MethodNotAllowed(["POST"])
        body = request.json()
        return json_response(200, capture.submit(_bearer(request), body, uuid.uuid4().hex))
    if method != "GET":
        raise MethodNotAllowed(["GET"])
    if resource == "/iframe/v1/frame":
        status, headers, html = page.render_frame(request.query.get("token"), request.query.get("origin"),
                                                  request.query.get("style"))
        return Response(status, html, headers)
    if resource in ("/iframe/v1/checkout.js", "/iframe/v1/frame.js"):
        return Response(200, page.static_file(resource.rsplit("/", 1)[1]), _JS)
    raise NotFound("Not found.")
