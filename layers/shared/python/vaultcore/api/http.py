"""API Gateway REST (proxy integration, payload format 1.0) requests and responses, without a framework.

A tiny hand-written adapter instead of a resolver keeps each handler's cold import small; the event shape
is the one API Gateway sends and the local runner builds.

:class:`Request`, :class:`Response` are written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a
dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import base64
import json
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl

from vaultcore.api.json_body import load_json
from vaultcore.plain import Mutable

__all__ = ["Request", "Response", "json_response", "request_from_event"]

# API Gateway's own cap is 10 MB; we accept less (DoS) and say so in docs/integrators/errors.md
# ("Input limits (every API)").
MAX_BODY_BYTES = 1_048_576


#: The source IP of the request being served (API Gateway's ``requestContext.identity.sourceIp``), set by the API
#: handler for the layers below that need it without a Request in hand: the per-credential failure counts key on
#: (credential, source), so a guesser slows down only itself (vaultcore.store.auth_failures).
_source_ip: ContextVar[str] = ContextVar("vault_source_ip", default="")


def current_source_ip() -> str:
    return _source_ip.get()


def set_source_ip(ip: str) -> None:
    _source_ip.set(ip)


class Request(Mutable):
    __slots__ = ("method", "path", "resource", "headers", "query", "path_params", "body", "request_id", "source_ip",
                 "raw_path", "multi_query", "multi_headers", "_json", "_json_loaded", "_json_error")
    _no_repr = frozenset({"_json", "_json_loaded", "_json_error"})
    method: str
    path: str
    resource: str
    headers: dict[str, str]  # lower-cased names
    query: dict[str, str]
    path_params: dict[str, str]
    body: bytes
    request_id: str
    source_ip: str
    raw_path: str  # the path as the client sent it (with a stage prefix on execute-api URLs)
    # Every value of a repeated query key or header, in order (API Gateway's multiValue* members). ``query`` and
    # ``headers`` keep one value per name (the last, as API Gateway's single-value members do); None when the
    # event had no multiValue* member (then ``query_pairs``/``header_pairs`` derive them from the dicts).
    multi_query: list[tuple[str, str]] | None
    multi_headers: list[tuple[str, str]] | None  # lower-cased names
    _json: Any
    _json_loaded: bool
    _json_error: Exception | None

    def __init__(self, method: str, path: str, resource: str, headers: dict[str, str], query: dict[str, str],
                 path_params: dict[str, str], body: bytes, request_id: str, source_ip: str = "", raw_path: str = "",
                 multi_query: list[tuple[str, str]] | None = None, multi_headers: list[tuple[str, str]] | None = None,
                 _json: Any = None, _json_loaded: bool = False, _json_error: Exception | None = None) -> None:
        self.method = method
        self.path = path
        self.resource = resource
        self.headers = headers
        self.query = query
        self.path_params = path_params
        self.body = body
        self.request_id = request_id
        self.source_ip = source_ip
        self.raw_path = raw_path
        self.multi_query = multi_query
        self.multi_headers = multi_headers
        self._json = _json
        self._json_loaded = _json_loaded
        self._json_error = _json_error

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def query_pairs(self) -> list[tuple[str, str]]:
        """Every query parameter, repeated keys included, in order (per key; see :func:`request_from_event`)."""
        return list(self.multi_query) if self.multi_query is not None else list(self.query.items())

    def header_pairs(self) -> list[tuple[str, str]]:
        """Every header field (lower-cased name, value), repeated names included, in order."""
        return list(self.multi_headers) if self.multi_headers is not None else list(self.headers.items())

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    def json(self) -> Any:
        """The body as JSON, or None when it is not valid JSON (callers validate the shape).

        JSON over the gate's caps (depth, sizes) or holding a lone surrogate raises
        :class:`vaultcore.api.json_body.InputRejected`, every time it is asked for (see :mod:`vaultcore.api.gate`).
        """
        if not self._json_loaded:
            self._json_loaded = True
            try:
                self._json = load_json(self.body)
            except Exception as exc:
                self._json_error = exc
                raise
        if self._json_error is not None:
            raise self._json_error
        return self._json

    def form(self) -> dict[str, str]:
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        return dict(parse_qsl(text, keep_blank_values=True))


class Response(Mutable):
    __slots__ = ("status", "body", "headers")
    status: int
    body: bytes | str
    headers: dict[str, str]

    def __init__(self, status: int, body: bytes | str, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = {} if headers is None else headers

    def to_event(self) -> dict[str, Any]:
        body = self.body.decode("utf-8") if isinstance(self.body, bytes) else self.body
        headers = {"Content-Type": "application/json", "Cache-Control": "no-store", **self.headers}
        if self.status == 204 and not body:
            headers.pop("Content-Type")  # no content, so no content type (RFC 9110 §15.3.5): a v4 delete
        return {"statusCode": self.status, "headers": headers, "body": body, "isBase64Encoded": False}


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(payload, separators=(", ", ": ")), headers or {})


def _multi(event: dict[str, Any], member: str, lower: bool) -> list[tuple[str, str]] | None:
    """The pairs of a ``multiValueHeaders``/``multiValueQueryStringParameters`` member, or None without one.

    API Gateway (REST, payload 1.0) groups the values by name: the values of one name keep the order they were
    sent in, while the interleaving of different names (``a=1&b=2&a=3``) is not carried by the event.
    """
    multi = event.get(member)
    if not isinstance(multi, dict) or not multi:
        return None
    pairs: list[tuple[str, str]] = []
    for name, values in multi.items():
        for value in values if isinstance(values, list) else [values]:
            if value is not None:
                pairs.append((str(name).lower() if lower else str(name), str(value)))
    return pairs


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
        multi_query=_multi(event, "multiValueQueryStringParameters", lower=False),
        multi_headers=_multi(event, "multiValueHeaders", lower=True),
    )
