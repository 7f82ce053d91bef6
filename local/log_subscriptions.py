"""The runner's stand-in for CloudWatch Logs subscription filters (``AWS::Logs::SubscriptionFilter`` in
template.yaml): lines a function writes that match a filter are delivered to the filter's destination function
as CloudWatch delivers them (``{"awslogs": {"data": base64(gzip(JSON))}}``).

A filter names the function whose log group it reads in ``Metadata: {SourceFunction: <LogicalId>}``. Lines are
collected per invocation (thread-local: the runner serves requests on several threads) from the listener hook
of :mod:`vaultcore.proxy.log_shipping`, and delivered right after the invocation returns, so a test that reads
the ProxyLogs table after its call sees the entry; CloudWatch delivers within seconds. A failed delivery is
retried three times (Lambda's asynchronous retries), then reported on stderr, as Lambda would send it to the
destination's dead-letter queue.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

_capture = threading.local()


def _listener(line: str) -> None:
    lines = getattr(_capture, "lines", None)
    if lines is not None:
        lines.append(line)


def subscription_event(function: str, filter_name: str, lines: list[str], account: str) -> dict[str, Any]:
    now = int(time.time() * 1000)
    payload = {"messageType": "DATA_MESSAGE", "owner": account, "logGroup": f"/aws/lambda/{function}",
               "logStream": f"local/{uuid.uuid4().hex}", "subscriptionFilters": [filter_name],
               "logEvents": [{"id": str(uuid.uuid4().int)[:56], "timestamp": now, "message": line} for line in lines]}
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


class LogSubscriptions:
    def __init__(self, resources: dict[str, dict[str, Any]], functions: set[str], account: str) -> None:
        self.account = account
        self.by_source: dict[str, list[tuple[str, str]]] = {}
        for name, res in resources.items():
            if res.get("Type") != "AWS::Logs::SubscriptionFilter":
                continue
            source = (res.get("Metadata") or {}).get("SourceFunction")
            target = res["Properties"].get("DestinationArn")
            if isinstance(target, dict):
                target = next(iter(target.values()))
            destination = target[0] if isinstance(target, list) else str(target).split(".", 1)[0]
            if source in functions and destination in functions:
                self.by_source.setdefault(source, []).append((name, destination))
        if self.by_source:
            from vaultcore.proxy.log_shipping import add_listener

            add_listener(_listener)

    @contextlib.contextmanager
    def capture(self, function: str, invoke: Callable[[str, dict[str, Any]], Any]) -> Iterator[None]:
        filters = self.by_source.get(function)
        if not filters:
            yield
            return
        _capture.lines = []
        try:
            yield
        finally:
            lines, _capture.lines = _capture.lines, None
            if lines:
                for filter_name, destination in filters:
                    self._deliver(function, filter_name, destination, lines, invoke)

    def _deliver(self, function: str, filter_name: str, destination: str, lines: list[str],
                 invoke: Callable[[str, dict[str, Any]], Any]) -> None:
        event = subscription_event(function, filter_name, lines, self.account)
        for attempt in range(3):
            try:
                invoke(destination, event)
                return
            except Exception as exc:  # noqa: BLE001 - Lambda retries an asynchronous invocation
                print(f"log subscription {filter_name}: {destination} failed ({type(exc).__name__}), "
                      f"attempt {attempt + 1}", file=sys.stderr)
                time.sleep(0.2 * (attempt + 1))
        print(f"log subscription {filter_name}: delivery of {len(lines)} line(s) given up", file=sys.stderr)
