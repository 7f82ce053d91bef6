"""A minimal HTTP client for the end-to-end tests (stdlib only, like an integrator's script).

Every response is checked against its OpenAPI document (:mod:`tests.e2e.contract`); a mismatch fails the test
that made the call (``tests/e2e/conftest.py``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from tests.e2e import contract


def request(url: str, body: bytes | str | dict | None = None, headers: dict[str, str] | None = None,
            method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    if isinstance(body, dict):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, hdrs, data = resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        status, hdrs, data = err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()
    contract.check(method, url, status, hdrs, data)  # against openapi/<api>.json (tests/e2e/contract.py)
    return status, hdrs, data


def post_json(url: str, body: Any = None, headers: dict[str, str] | None = None, method: str = "POST"):
    status, hdrs, data = request(url, body, headers, method)
    try:
        return status, json.loads(data) if data else None
    except ValueError:
        return status, data


def admin(base_url: str, method: str, path: str, body: Any = None):
    return post_json(base_url + path, body, method=method)


def wait_until(predicate: Any, seconds: float = 60.0) -> Any:
    """Poll ``predicate`` until it answers something true (delivery is asynchronous: stream relay, queue,
    sender), and answer that; a generous bound, never a figure a test asserts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")
