"""Runner-only pages (never part of the deployed stack): the echo target of the demo proxy configuration.

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


from local.iframe_shop import ROUTE as CHECKOUT_ROUTE  # noqa: E402  issue 19 (iframe): the demo shop, payment iFrame
from local.openapi_pages import ROUTE as OPENAPI_ROUTE  # noqa: E402  /openapi/: the API contracts

ROUTES = [CHECKOUT_ROUTE, ("/_local/echo", echo), OPENAPI_ROUTE]
