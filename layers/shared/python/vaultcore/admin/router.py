"""A small router for the management API (``/admin/v1/...``): method + path template → function.

Each domain registers its routes in its own ``admin`` module (``@route("POST", "/admin/v1/partners")``);
:mod:`vaultcore.admin.routes` imports the one a request needs (all of them:
:func:`vaultcore.admin.routes.register_all`). Path parameters are passed as keyword arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import MethodNotAllowed, NotFound, ValidationError

__all__ = ["route", "dispatch", "json_body", "ok", "created"]

Handler = Callable[..., Response]
_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = []


def route(method: str, template: str) -> Callable[[Handler], Handler]:
    pattern = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template) + "/?$")

    def register(fn: Handler) -> Handler:
        _ROUTES.append((method.upper(), pattern, fn))
        return fn

    return register


def dispatch(request: Request) -> Response:
    allowed: list[str] = []
    for method, pattern, fn in _ROUTES:
        m = pattern.match(request.path)
        if m is None:
            continue
        if method == request.method:
            return fn(request, **m.groupdict())
        allowed.append(method)
    if allowed:
        # HTTP 405 with the Allow header (RFC 9110 §15.5.6); errCode 405 as before.
        raise MethodNotAllowed(sorted(set(allowed)))
    raise NotFound("No such management resource.")


def json_body(request: Request) -> dict[str, Any]:
    if not request.body.strip():
        return {}
    body = request.json()
    if not isinstance(body, dict):
        raise ValidationError("The request body must be a JSON object.", code=400)
    return body


def ok(payload: Any) -> Response:
    return json_response(200, payload)


def created(payload: Any) -> Response:
    return json_response(201, payload)
