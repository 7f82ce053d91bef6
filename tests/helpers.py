"""Test helpers: API Gateway events and management calls against an in-process platform."""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlencode


def api_event(method: str, path: str, body: bytes | str | dict | None = None, headers: dict[str, str] | None = None,
              query: dict[str, str] | None = None, resource: str | None = None,
              path_params: dict[str, str] | None = None) -> dict[str, Any]:
    if isinstance(body, dict):
        body = json.dumps(body)
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    return {
        "resource": resource or path, "path": path, "httpMethod": method,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "queryStringParameters": query or None, "pathParameters": path_params,
        "requestContext": {"requestId": str(uuid.uuid4()), "path": path, "identity": {"sourceIp": "127.0.0.1"}},
        "body": body, "isBase64Encoded": False,
        "_query_string": urlencode(query or {}),
    }


def call(platform, function: str, method: str, path: str, body=None, headers=None, **kw) -> tuple[int, dict, Any]:
    out = platform.invoke(function, api_event(method, path, body, headers, **kw))
    try:
        payload = json.loads(out["body"]) if out.get("body") else None
    except ValueError:
        payload = out["body"]
    return out["statusCode"], out.get("headers", {}), payload


def admin(platform, method: str, path: str, body=None, query=None) -> tuple[int, Any]:
    status, _, payload = call(platform, "ManagementFunction", method, path, body, query=query)
    return status, payload


class SteppingClock:
    """A monotonic clock that advances ``step`` seconds at every read (issue 26).

    Work budgets (:mod:`vaultcore.net.deadline`) read the clock at every check and around every metered section,
    so with this clock a budget is spent by a *count* of checks: the same verdict on a fast machine, a slow one
    and a loaded one. The ``budget_clock`` fixture (tests/conftest.py) installs one with a step of 0.
    """

    def __init__(self, step: float) -> None:
        self.now, self.step, self.reads = 1000.0, step, 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def readable_items(value: Any) -> Any:
    """DynamoDB items (as boto3 answers them) made JSON-safe for scans for card data: a binary attribute (the
    postback's delivery message is stored deflated) is inflated to its text, so what it holds is scanned too;
    other binary values become base64; a number attribute (``{"N": "834"}``) becomes a JSON number. Without this a scan either fails on ``bytes`` or misses what they hold."""
    import base64
    import zlib

    def text(raw: bytes) -> str:
        try:
            return zlib.decompress(raw).decode("utf-8", "replace")
        except zlib.error:
            return base64.b64encode(raw).decode()

    if isinstance(value, bytes | bytearray):
        return text(bytes(value))
    if isinstance(value, dict) and set(value) == {"N"} and isinstance(value["N"], str):
        # a number attribute stays a JSON number: a scan for a CVV token ("834" as a whole JSON string) must not
        # take a duration, an HTTP status or an amount in cents that happens to have the same digits for one
        from decimal import Decimal

        number = Decimal(value["N"])
        return int(number) if number == number.to_integral_value() else float(number)
    if isinstance(value, dict):
        return {k: readable_items(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [readable_items(v) for v in value]
    return value


def table_dump(ddb: Any) -> str:
    """Every item of every table of ``ddb`` (a boto3 DynamoDB client) as one JSON text (:func:`readable_items`)."""
    items = []
    for table in ddb.list_tables()["TableNames"]:
        for page in ddb.get_paginator("scan").paginate(TableName=table):
            items.extend(page["Items"])
    return json.dumps(readable_items(items))
