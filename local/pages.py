"""Runner-only pages (never part of the deployed stack): the echo target of the demo proxy configuration, and
the runner's clock.

``/_local/echo`` answers what it received, so the walkthrough can show what a third party gets from the proxy:
the method, the path, the content type, whether an Authorization header came (its scheme only, never its value)
and the body as text. It is reachable only because the local runner allows loopback egress.
"""

from __future__ import annotations

import json
from typing import Any


def echo(platform: Any, method: str, path: str, headers: dict[str, str], body: bytes
         ) -> tuple[int, dict[str, str], bytes]:
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization")
    answer = {
        "received": {
            "method": method,
            "path": path,
            "contentType": lowered.get("content-type"),
            "authorization": (auth.split(" ", 1)[0] + " (value not shown)") if auth else None,
            "body": body.decode("utf-8", "replace"),
        }
    }
    return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()


def clock_page(platform: Any, method: str, path: str, headers: dict[str, str], body: bytes
               ) -> tuple[int, dict[str, str], bytes]:
    """``/_local/clock``: the offset of the runner's clock (vaultcore.clock), read with GET and set with POST
    ``{"offsetSeconds": n}``. A test moves time instead of waiting for it (issue 26: an iFrame bearer token's
    expiry, a day of credits); 0 puts it back. Only the local runner has this page, and the runner listens on
    loopback only. JSON bodies only, like the management API, so a cross-site form cannot post it."""
    from vaultcore import clock

    if method == "POST":
        content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if not content_type.startswith("application/json"):
            return 415, {"Content-Type": "application/json"}, b'{"message": "Content-Type must be application/json"}'
        try:
            offset = json.loads(body or b"{}")["offsetSeconds"]
            if isinstance(offset, bool) or not isinstance(offset, int | float):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return 400, {"Content-Type": "application/json"}, b'{"message": "send {\\"offsetSeconds\\": <number>}"}'
        clock.set_offset(float(offset))
    elif method != "GET":
        return 405, {"Content-Type": "application/json"}, b'{"message": "GET or POST"}'
    return 200, {"Content-Type": "application/json"}, json.dumps({"offsetSeconds": clock.offset()}).encode()


from local.iframe_shop import ROUTE as CHECKOUT_ROUTE  # noqa: E402  issue 19 (iframe): the demo shop, payment iFrame
from local.openapi_pages import ROUTE as OPENAPI_ROUTE  # noqa: E402  /openapi/: the API contracts

ROUTES = [CHECKOUT_ROUTE, ("/_local/echo", echo), ("/_local/clock", clock_page), OPENAPI_ROUTE]
