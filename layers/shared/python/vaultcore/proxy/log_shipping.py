"""The masked proxy log, off the request path: one structured line on the proxy's stdout, carried to the
ProxyLogs table by a CloudWatch Logs subscription (issue 13: the proxy makes one AWS call per request, the
nonce).

On the request path, :func:`emit` writes the already-masked entry as one JSON line marked ``vaultProxyLog``
(no AWS call; CloudWatch Logs stores it durably with the function's other output). The subscription filter
``{ $.vaultProxyLog = 1 }`` on the proxy's log group delivers those lines to ProxyLogShipperFunction, whose
:func:`ship` writes them with BatchWriteItem, retrying unprocessed items; a batch it cannot store fails the
invocation, so Lambda retries the asynchronous delivery and then sends it to the shipper's dead-letter queue.
Writes are idempotent (the item key is the entry's partnerId and logId): a redelivered batch stores nothing
twice. The stored ``partnerId`` is spread (:mod:`vaultcore.store.spread`): ``<partner>#<shard>``, the shard from
a hash of the ``logId`` (``PROXY_LOG_SHARDS``, template parameter ``ProxyLogShards``), so one busy partner's
entries, whose ``logId`` starts with the time, do not all land on one partition; the line on stdout keeps the
partner's own id, and :func:`vaultcore.proxy.logs.list_logs` answers it.

A line is at most 256 KiB (CloudWatch Logs' event limit): logged bodies are cut to 32 KiB each
(:data:`vaultcore.proxy.logs.MAX_LOGGED_BODY`), and an entry that would still be larger is stored without its
bodies (said in ``logError``).

The local runner emulates the subscription: it registers a listener (:func:`add_listener`) and hands each line
to the shipper function right after the proxy invocation that wrote it.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors, to_item
from vaultcore.store.spread import spread_value

__all__ = ["MARKER", "emit", "ship", "add_listener", "remove_listener", "decode_subscription_event",
           "MAX_LINE_BYTES"]

MARKER = "vaultProxyLog"
MAX_LINE_BYTES = 256 * 1024 - 1024  # CloudWatch Logs: 256 KiB per event, some room for Lambda's own prefix
_write_lock = threading.Lock()
_listeners: list[Callable[[str], None]] = []


def add_listener(listener: Callable[[str], None]) -> None:
    """Also hand every emitted line to ``listener`` (the local runner's stand-in for the subscription)."""
    _listeners.append(listener)


def remove_listener(listener: Callable[[str], None]) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _line(item: dict[str, Any]) -> str:
    return json.dumps({MARKER: 1, "item": item}, separators=(",", ":"), default=str)


def emit(item: dict[str, Any]) -> None:
    """Write one masked log item as a structured line (never raises: the target has already answered)."""
    line = _line(item)
    if len(line.encode("utf-8")) > MAX_LINE_BYTES:
        slim = {k: v for k, v in item.items() if k not in ("request", "response")}
        slim["logError"] = "the exchange exceeded the log line limit and is stored without its bodies"
        line = _line(slim)
    with _write_lock:  # one write per line: lines of concurrent requests never interleave
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    for listener in list(_listeners):
        listener(line)


def decode_subscription_event(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The items in a CloudWatch Logs subscription event (``awslogs.data``: base64 of gzipped JSON whose
    ``logEvents[].message`` are the lines). Lines without the marker (other output) are skipped."""
    import gzip  # lazy: the shipper decodes, the proxy (which imports this module to write lines) never does

    data = json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))
    if data.get("messageType") != "DATA_MESSAGE":  # CONTROL_MESSAGE: CloudWatch's own reachability check
        return []
    items = []
    for log_event in data.get("logEvents", []):
        message = log_event.get("message", "")
        start = message.find("{")  # Lambda may prefix a line with a timestamp and request id
        if start < 0 or MARKER not in message:
            continue
        try:
            record = json.loads(message[start:])
        except ValueError:
            continue
        if isinstance(record, dict) and record.get(MARKER) == 1 and isinstance(record.get("item"), dict):
            items.append(record["item"])
    return items


def ship(event: dict[str, Any], _context: Any = None) -> dict[str, int]:
    """ProxyLogShipperFunction: store every item of one subscription delivery (BatchWriteItem, 25 a call)."""
    items = decode_subscription_event(event)
    table = settings().proxy_logs_table
    shards = settings().proxy_log_shards
    unique = {(i["partnerId"], i["logId"]): i for i in items
              if isinstance(i.get("partnerId"), str) and isinstance(i.get("logId"), str) and i["partnerId"]
              and i["logId"]}
    # The shard comes from the logId alone: a redelivered line lands on the same key (still idempotent).
    requests = [{"PutRequest": {"Item": to_item({**item, "partnerId": spread_value(pid, lid, shards)})}}
                for (pid, lid), item in unique.items()]
    for start in range(0, len(requests), 25):
        pending = {table: requests[start:start + 25]}
        for attempt in range(6):
            with aws_errors("proxy log batch write"):
                out = dynamodb().batch_write_item(RequestItems=pending)
            pending = out.get("UnprocessedItems") or {}
            if not pending:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))  # DynamoDB's advice for unprocessed items: back off, retry
        if pending:
            # Fail the invocation: Lambda retries the delivery, then its dead-letter queue keeps it.
            raise RuntimeError("proxy log items left unprocessed after retries")
    return {"stored": len(requests)}
