"""API Gateway REST (proxy integration, payload format 1.0) requests and responses, without a framework.

A tiny hand-written adapter instead of a resolver keeps each handler's cold import small; the event shape
is the one API Gateway sends and the local runner builds.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["Request", "Response", "json_response", "request_from_event"]

MAX_BODY_BYTES = 1_048_576  # API Gateway's own cap is 10 MB; we accept less (DoS) and say so in the README.


@dataclass
class Request:
    method: str
    path: str
    resource: str
    headers: dict[str, str]  # lower-cased names
    query: dict[str, str]
    path_params: dict[str, str]
    body: bytes
    request_id: str
    source_ip: str = ""
    raw_path: str = ""  # the path as the client sent it (with a stage prefix on execute-api URLs)
    _json: Any = field(default=None, repr=False)
    _json_loaded: bool = field(default=False, repr=False)

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    def json(self) -> Any:
        """The body as JSON, or None when it is not valid JSON (callers validate the shape)."""
        if not self._json_loaded:
            self._json_loaded = True
            try:
                self._json = json.loads(self.body) if self.body.strip() else None
            except (ValueError, UnicodeDecodeError):
                self._json = None
        return self._json

    def form(self) -> dict[str, str]:
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        return dict(parse_qsl(text, keep_blank_values=True))


@dataclass
class Response:
    status: int
    body: bytes | str
    headers: dict[str, str] = field(default_factory=dict)

    def to_event(self) -> dict[str, Any]:
        body = self.body.decode("utf-8") if isinstance(self.body, bytes) else self.body
        headers = {"Content-Type": "application/json", "Cache-Control": "no-store", **self.headers}
        return {"statusCode": self.status, "headers": headers, "body": body, "isBase64Encoded": False}


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(payload, separators=(", ", ": ")), headers or {})


def request_from_event(event: dict[str, Any]) -> Request:
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items() if v is not None}
    raw = event.get("body") or ""
    if event.get("isBase64Encoded"):
        body = base64.b64decode(raw)
    else:
        body = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    ctx = event.get("requestContext") or {}
    identity = ctx.get("identity") or {}
    return Request(
        method=str(event.get("httpMethod") or "POST").upper(),
        path=str(event.get("path") or "/"),
        resource=str(event.get("resource") or event.get("path") or "/"),
        headers=headers,
        query={str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items() if v is not None},
        path_params={str(k): str(v) for k, v in (event.get("pathParameters") or {}).items() if v is not None},
        body=body,
        request_id=str(ctx.get("requestId") or ""),
        source_ip=str(identity.get("sourceIp") or ""),
        raw_path=str(ctx.get("path") or event.get("path") or "/"),
    )
