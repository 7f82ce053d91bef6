"""A minimal HTTP client for the end-to-end tests (stdlib only, like an integrator's script)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


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
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def post_json(url: str, body: Any = None, headers: dict[str, str] | None = None, method: str = "POST"):
    status, hdrs, data = request(url, body, headers, method)
    try:
        return status, json.loads(data) if data else None
    except ValueError:
        return status, data


def admin(base_url: str, method: str, path: str, body: Any = None):
    return post_json(base_url + path, body, method=method)
