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

import base64
import binascii
import uuid
from typing import Any

from vaultcore import clock, metrics
from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import AuthenticationFailed, MethodNotAllowed, NotFound
from vaultcore.gateway.accounts import authenticate
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.iframe import capture, configs, instances, page
from vaultcore.iframe.errors import BODY_INVALID, CONFIG_INVALID, IframeError

__all__ = ["route", "authenticate_basic"]

_BASE = "/api/v4/accounts/{account_id}/payment-iframe"
_V4_ANY = "/api/v4/{proxy+}"
_INSTANCE = _BASE + "/{id}/instance/{instance_id}"
PAGE_LIMIT = 100  # the original's default `limit` of its lists
# The original's document answers a configuration's GET and PATCH and an instance's GET with 201, and a client
# generated from it accepts nothing else for them (a 200 is an "unexpected status"): its statuses on its paths.
READ_STATUS = 201
_JS = {"Content-Type": "application/javascript; charset=utf-8", "Cache-Control": "public, max-age=300",
       "X-Content-Type-Options": "nosniff", "Cross-Origin-Resource-Policy": "cross-origin"}


def _refused(reason: str, cause: str) -> AuthenticationFailed:
    metrics.authentication_failed(reason, cause=cause)  # issue 27: Api=iframe (vaultcore.metrics)
    return AuthenticationFailed(reason)


def authenticate_basic(request: Request) -> Any:
    """The gateway account of ``Authorization: Basic base64(account_id:api_accesskey)``; the path's account must
    be it. Every failure is the same 1003 (the gateway's own checks: constant time, decoy reads) and counts in
    AuthenticationFailures (the account's own checks count there, and in the account's failure count)."""
    header = request.header("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token or len(token) > 400:
        raise _refused("iframe: no Basic credentials", "malformed")
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _refused("iframe: malformed Basic credentials", "malformed") from None
    if not sep or not user or not password:
        raise _refused("iframe: malformed Basic credentials", "malformed")
    try:
        account = authenticate({"account_id": user, "api_accesskey": password}, now=clock.now())
    except GatewayError as exc:
        if exc.code not in (E.ACCOUNT_ID, E.AUTHENTICATION):  # those count in authenticate itself
            metrics.authentication_failed("iframe: account", cause="malformed")
        raise AuthenticationFailed("iframe: account authentication failed") from None
    if request.path_params.get("account_id") != account.account_id:
        raise _refused("iframe: the path names another account", "scope")
    return account


def _body(request: Request) -> Any:
    body = request.json()
    if not isinstance(body, dict):
        raise IframeError(BODY_INVALID, "The body must be one JSON object.")
    return body


def _int_query(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise IframeError(CONFIG_INVALID, f"{name}: a whole number, 1 to {high}.")
    return int(raw)


def _page_url(request: Request, page: int, limit: int) -> str:
    """The absolute URL of one page (the original's X-*-Page-Url headers): the caller's scheme and host (API
    Gateway sets X-Forwarded-Proto; the local runner, on a loopback host, is plain HTTP)."""
    host = request.header("host") or "localhost"
    loopback = host.split(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]")
    scheme = request.header("x-forwarded-proto") or ("http" if loopback else "https")
    path = request.raw_path or request.path
    return f"{scheme}://{host}{path}" + (f"?page={page}&limit={limit}" if page else "")


def _list(request: Request, items: list[dict[str, Any]]) -> Response:
    """The original's list: a bare array, paged by ``page`` (default 1) and ``limit`` (default and at most
    :data:`PAGE_LIMIT`), described by its ``X-*`` paging headers (an account has at most
    MAX_CONFIGURATIONS configurations: one page by default)."""
    page = _int_query(request, "page", 1, 1_000_000)
    limit = _int_query(request, "limit", PAGE_LIMIT, PAGE_LIMIT)
    total = len(items)
    last = max(1, -(-total // limit))
    shown = items[(page - 1) * limit:page * limit]
    first_index = (page - 1) * limit + 1 if shown else 0
    url = lambda n: _page_url(request, n, limit)  # noqa: E731 - one line per header below
    links = [f"url={url(page - 1) if page > 1 else ''}|label=&laquo; Previous|active="]
    links += [f"url={url(n)}|label={n}|active={1 if n == page else ''}" for n in range(1, last + 1)]
    links.append(f"url={url(page + 1) if page < last else ''}|label=Next &raquo;|active=")
    headers = {"X-Total": str(total), "X-Per-Page": str(limit), "X-Current_page": str(page),
               "X-Last-Page": str(last), "X-Total-In-This-Page": str(len(shown)),
               "X-From": str(first_index), "X-To": str(first_index + len(shown) - 1 if shown else 0),
               "X-Path": _page_url(request, 0, limit), "X-First-Page-Url": url(1), "X-Last-Page-Url": url(last),
               "X-Links": " ".join(links)}
    if page > 1:
        headers["X-Prev-Page-Url"] = url(min(page - 1, last))
    if page < last:
        headers["X-Next-Page-Url"] = url(page + 1)
    return json_response(200, shown, headers)


def _api(request: Request, resource: str) -> Response:
    method = request.method.upper()
    allowed = {_BASE: ("GET", "POST"), _BASE + "/{id}": ("DELETE", "GET", "PATCH"),
               _BASE + "/{id}/instance/init": ("POST",), _INSTANCE: ("GET",)}.get(resource)
    if allowed is None:
        raise NotFound("No such operation.")
    if method not in allowed:
        raise MethodNotAllowed(list(allowed))
    account = authenticate_basic(request)
    config_id = request.path_params.get("id", "")
    if resource == _BASE:
        if method == "POST":
            return json_response(201, configs.create(account, _body(request)))
        return _list(request, configs.list_configs(account))
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
