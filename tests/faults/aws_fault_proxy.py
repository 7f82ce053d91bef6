"""A fault-injecting HTTP proxy between the platform's AWS client and a moto server (issue 18).

Every request is forwarded byte for byte (method, path, headers -- ``Host`` included, so the SigV4 signature the
client computed stays what moto receives -- and body); the answer comes back unchanged. Faults are rules matched
against the ``X-Amz-Target`` header of the AWS JSON protocol (``DynamoDB_20120810.PutItem``,
``AmazonSQS.SendMessage``, ``TrentService.Decrypt``, ...):

* ``lost_answer``: forward (moto applies the write), read the answer, then close the client's connection without
  sending it: the client sees EOF and retries a write that was applied;
* ``reset_before``: reset the client's connection without forwarding (nothing applied);
* ``http_5xx``: answer 500 InternalServerError (``status: 503``: ServiceUnavailable) without forwarding;
* ``throttle``: answer 400 with a throttling error (``ThrottlingException``; DynamoDB
  ``ProvisionedThroughputExceededException`` unless the rule names a ``code``) without forwarding;
* ``delay``: sleep ``seconds``, then forward;
* ``reset_after``: sleep ``seconds``, then reset the client's connection without forwarding (nothing applied): a
  call the client made but that never left it, for a process killed meanwhile.

A rule: ``{"mode": ..., "operations": ["DynamoDB_20120810.PutItem", "PutItem", "DynamoDB_20120810.*"],
"probability": 0.3, "count": 10, "status": 503, "seconds": 2.0, "code": "...", "table": "DeliveriesTable",
"contains": "list_append"}`` (``operations`` are shell patterns matched against the whole target or its operation
part; ``table``, when set, must equal the request's ``TableName`` and ``contains`` be in its body, so that one
write of a table can be told from another; ``count`` limits the rule's injections). The
first rule that matches a request and fires (its probability drawn, its count not spent) decides.

Control, in process: ``proxy.set_rules([...])``, ``proxy.clear()``, ``proxy.counts`` (``{"<mode> <target>": n}``,
plus ``"forwarded <target>"`` for every request that reached moto); over HTTP on the same port (a test that
drives a subprocess changes faults mid-run): ``POST /__faults`` with ``{"rules": [...]}`` (``{"rules": []}``
clears), ``GET /__faults`` -> ``{"rules": [...], "counts": {...}}``, ``DELETE /__faults`` clears rules and counts.

Standalone: ``python -m tests.faults.aws_fault_proxy --upstream http://127.0.0.1:5000 [--port 0]`` prints its URL.
Standard library only.
"""

from __future__ import annotations

import argparse
import fnmatch
import http.client
import json
import random
import socket
import struct
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FaultProxy", "Rule", "MODES"]

MODES = ("lost_answer", "reset_before", "http_5xx", "throttle", "delay", "reset_after")
CONTROL_PATH = "/__faults"
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
               "content-length"}


@dataclass
class Rule:
    mode: str
    operations: list[str] = field(default_factory=lambda: ["*"])
    probability: float = 1.0
    count: int | None = None  # at most this many injections (None: unlimited)
    status: int = 500  # http_5xx: 500 or 503
    seconds: float = 1.0  # delay, reset_after
    code: str | None = None  # throttle / http_5xx: the error code to answer
    table: str | None = None  # only requests whose JSON body names this TableName
    contains: str | None = None  # only requests whose body contains this text
    injected: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown fault mode {self.mode!r} (one of {', '.join(MODES)})")
        if isinstance(self.operations, str):
            self.operations = [self.operations]

    def matches(self, target: str, body: bytes = b"") -> bool:
        operation = target.rsplit(".", 1)[-1]
        if not any(fnmatch.fnmatchcase(target, p) or fnmatch.fnmatchcase(operation, p) for p in self.operations):
            return False
        if self.contains is not None and self.contains.encode() not in (body or b""):
            return False
        if self.table is None:
            return True
        try:
            return isinstance(request := json.loads(body or b"{}"), dict) and request.get("TableName") == self.table
        except ValueError:
            return False

    @classmethod
    def of(cls, value: Rule | dict[str, Any]) -> Rule:
        if isinstance(value, Rule):
            return value
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__ and k != "injected"}
        return cls(**known)


def _service_of(target: str) -> str:
    prefix = target.split(".", 1)[0]
    if prefix.startswith("DynamoDB"):
        return "dynamodb"
    if prefix == "AmazonSQS":
        return "sqs"
    if prefix == "TrentService":
        return "kms"
    return prefix.lower() or "unknown"


def error_answer(rule: Rule, target: str) -> tuple[int, dict[str, str], bytes]:
    """The answer an AWS service gives for this fault (JSON protocol error shape)."""
    service = _service_of(target)
    if rule.mode == "throttle":
        status = 400
        code = rule.code or ("ProvisionedThroughputExceededException" if service == "dynamodb"
                             else "ThrottlingException")
        message = "Rate of requests exceeds the allowed throughput (injected by the fault proxy)."
    else:
        status = rule.status if rule.status in (500, 502, 503, 504) else 500
        unavailable = status == 503
        code = rule.code or {
            "dynamodb": "ServiceUnavailable" if unavailable else "InternalServerError",
            "kms": "KMSInternalException" if not unavailable else "ServiceUnavailableException",
            "sqs": "ServiceUnavailable" if unavailable else "InternalError",
        }.get(service, "ServiceUnavailable" if unavailable else "InternalFailure")
        message = "Internal server error (injected by the fault proxy)."
    namespace = {"dynamodb": "com.amazonaws.dynamodb.v20120810", "kms": "com.amazonaws.kms",
                 "sqs": "com.amazonaws.sqs"}.get(service)
    body = json.dumps({"__type": f"{namespace}#{code}" if namespace else code, "message": message}).encode()
    content_type = "application/x-amz-json-1.0" if service in ("dynamodb", "sqs") else "application/x-amz-json-1.1"
    return status, {"Content-Type": content_type, "x-amzn-RequestId": str(uuid.uuid4())}, body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of the platform's pooled connections

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a client that went away (the runner was killed, a pooled connection closed): not news
        super().handle_error(request, client_address)


class FaultProxy:
    """``with FaultProxy(upstream) as proxy: ...`` or ``start()``/``stop()``; ``url`` is what AWS_ENDPOINT_URL names."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0, seed: int | None = None) -> None:
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self._rules: list[Rule] = []
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._local = threading.local()
        self._server = _Server((host, port), self._handler_class())
        self.url = f"http://{host}:{self._server.server_address[1]}"
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control
    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="aws-fault-proxy")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_rules(self, rules: list[Rule | dict[str, Any]]) -> None:
        parsed = [Rule.of(r) for r in rules]
        with self._lock:
            self._rules = parsed

    def clear(self, counts: bool = False) -> None:
        with self._lock:
            self._rules = []
            if counts:
                self._counts.clear()

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(r) for r in self._rules]

    def injected(self, mode: str | None = None, operation: str | None = None) -> int:
        """Injections so far, of one mode and/or one operation (the target's operation part)."""
        total = 0
        for key, n in self.counts.items():
            kind, _, target = key.partition(" ")
            if kind == "forwarded":
                continue
            if mode and kind != mode:
                continue
            if operation and target.rsplit(".", 1)[-1] != operation:
                continue
            total += n
        return total

    def _decide(self, target: str, body: bytes = b"") -> Rule | None:
        with self._lock:
            for rule in self._rules:
                if not rule.matches(target, body):
                    continue
                if rule.count is not None and rule.injected >= rule.count:
                    continue
                if rule.probability < 1.0 and self._random.random() >= rule.probability:
                    continue
                rule.injected += 1
                self._counts[f"{rule.mode} {target}"] += 1
                return rule
        return None

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    # ------------------------------------------------------------------ upstream
    def _forward(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes
                 ) -> tuple[int, list[tuple[str, str]], bytes]:
        for fresh in (False, True):
            conn = None if fresh else getattr(self._local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
                self._local.conn = conn
            try:
                conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    if name.lower() not in _HOP_BY_HOP:
                        conn.putheader(name, value)
                conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
                response = conn.getresponse()
                data = response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if fresh:
                    raise
                continue
            if response.will_close:
                conn.close()
                self._local.conn = None
            return response.status, response.getheaders(), data
        raise AssertionError("unreachable")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as AWS endpoints: the clients pool connections
            disable_nagle_algorithm = True
            wbufsize = 65536

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _read_body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks: list[bytes] = []
                    while True:
                        size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _send(self, status: int, headers: list[tuple[str, str]] | dict[str, str], data: bytes) -> None:
                self.send_response(status)
                items = headers.items() if isinstance(headers, dict) else headers
                for name, value in items:
                    if name.lower() not in _HOP_BY_HOP and name.lower() not in ("server", "date"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _drop(self, reset: bool) -> None:
                """Close the client's connection without an answer (RST when ``reset``, else FIN/EOF)."""
                self.close_connection = True
                try:
                    self.wfile.flush()
                    if reset:
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    else:
                        self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def _control(self, body: bytes) -> None:
                if self.command == "POST":
                    try:
                        payload = json.loads(body or b"{}")
                        rules = payload.get("rules", []) if isinstance(payload, dict) else payload
                        proxy.set_rules(rules)
                        if isinstance(payload, dict) and payload.get("reset_counts"):
                            proxy.clear(counts=True)
                            proxy.set_rules(rules)
                    except (ValueError, TypeError) as exc:
                        return self._send(400, {"Content-Type": "application/json"},
                                          json.dumps({"error": str(exc)}).encode())
                elif self.command == "DELETE":
                    proxy.clear(counts=True)
                self._send(200, {"Content-Type": "application/json"},
                           json.dumps({"rules": proxy.rules, "counts": proxy.counts}).encode())

            def _serve(self) -> None:
                body = self._read_body()
                if self.path.split("?", 1)[0] == CONTROL_PATH:
                    return self._control(body)
                target = self.headers.get("X-Amz-Target") or ""
                rule = proxy._decide(target, body)
                if rule is not None and rule.mode == "reset_before":
                    return self._drop(reset=True)
                if rule is not None and rule.mode in ("http_5xx", "throttle"):
                    self.close_connection = False
                    return self._send(*error_answer(rule, target))
                if rule is not None and rule.mode in ("delay", "reset_after"):
                    time.sleep(rule.seconds)
                    if rule.mode == "reset_after":
                        return self._drop(reset=True)
                try:
                    status, headers, data = proxy._forward(self.command, self.path, list(self.headers.items()), body)
                except (http.client.HTTPException, OSError):
                    proxy._count(f"upstream_error {target}")
                    return self._drop(reset=True)  # the upstream is down: the client sees no answer
                proxy._count(f"forwarded {target}")
                if rule is not None and rule.mode == "lost_answer":
                    return self._drop(reset=False)  # applied by moto, the answer never reaches the client
                self._send(status, headers, data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fault-injecting proxy in front of an AWS endpoint (moto).")
    parser.add_argument("--upstream", required=True, help="e.g. http://127.0.0.1:5000")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rules", default="[]", help="JSON list of rules to start with")
    args = parser.parse_args(argv)
    proxy = FaultProxy(args.upstream, args.host, args.port)
    proxy.set_rules(json.loads(args.rules))
    proxy.start()
    print(f"AWS fault proxy listening on {proxy.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
