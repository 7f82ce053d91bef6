"""A real HTTP target for proxy tests: a threaded http.server on 127.0.0.1 that records what it receives and
verifies the Basic and HMAC authorizations the proxy adds (as a third party would)."""

from __future__ import annotations

import base64
import hmac
import http.server
import json
import threading
from typing import Any

from vaultcore.auth.hmac_scheme import HeaderError, hmac_response, parse_authorization, string_to_hash


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server: Target = self.server  # type: ignore[assignment]
        record = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                  # every header line as received, repeated names included, in order
                  "header_list": [(k.lower(), v) for k, v in self.headers.items()], "body": body}
        server.seen.append(record)
        path = self.path.split("?", 1)[0]
        ctype = self.headers.get("Content-Type") or "application/octet-stream"
        if path.endswith("/echo"):
            return self._reply(200, body, {"Content-Type": ctype, "X-Seen-Method": self.command,
                                           "Set-Cookie": "session=secret-cookie"})
        if path.endswith("/echo-headers"):  # every X-Echo-* request header comes back (a card number in a header)
            echoed = {k: v for k, v in self.headers.items() if k.lower().startswith("x-echo-")}
            return self._reply(200, b'{"ok": true}', {"Content-Type": "application/json", **echoed})
        if path.endswith("/echo-truncated"):  # the echo minus its last byte: JSON that no longer parses
            return self._reply(200, body[:-1], {"Content-Type": ctype})
        if path.endswith("/echo-html"):  # an HTML error page quoting the request
            return self._reply(502, b"<html><body><pre>" + body + b"</pre></body></html>",
                               {"Content-Type": "text/html; charset=utf-8"})
        if path.endswith("/basic"):
            expected = "Basic " + base64.b64encode(f"{server.basic[0]}:{server.basic[1]}".encode()).decode()
            ok = hmac.compare_digest((self.headers.get("Authorization") or "").encode(), expected.encode())
            return self._reply(200 if ok else 401, json.dumps({"verified": ok}).encode(),
                               {"Content-Type": "application/json"})
        if path.endswith("/hmac"):
            ok = False
            try:
                creds = parse_authorization(self.headers.get("Authorization") or "")
                expected = hmac_response(server.hmac_key, string_to_hash(path, creds.nonce, creds.timestamp, body))
                ok = creds.username == server.hmac_user and hmac.compare_digest(expected.encode(),
                                                                               creds.response.encode())
            except HeaderError:
                ok = False
            return self._reply(200 if ok else 401, json.dumps({"verified": ok}).encode(),
                               {"Content-Type": "application/json"})
        if path.endswith("/redirect"):
            return self._reply(302, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
        if path.endswith("/fail"):
            return self._reply(500, body, {"Content-Type": ctype})
        if path.endswith("/binary"):
            return self._reply(200, b"\xff\xfe\x00binary", {"Content-Type": "application/octet-stream"})
        return self._reply(404, b'{"error": "no such target path"}', {"Content-Type": "application/json"})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


class Target(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[dict[str, Any]] = []
        self.basic: tuple[str, str] = ("", "")
        self.hmac_key = b""
        self.hmac_user = ""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> Target:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
