"""A real HTTP receiver for postback tests: records every request, answers per path.

Paths: ``/ok`` always 200; ``/flaky/<n>`` 500 for the first n attempts of each delivery id, then 200;
``/down`` 500 until ``recovered`` is set, then 200; ``/slow/<ms>`` 200 after that many milliseconds;
``/hang`` never answers (recorded with status ``"hang"``, the connection held until ``released`` is set or
``hang_seconds`` pass, then dropped) until ``released`` is set, then 200.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.attempts: dict[str, int] = defaultdict(int)
        self.recovered = threading.Event()
        self.released = threading.Event()
        self.hang_seconds = 60.0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real receivers: the sender's pool reuses connections
            wbufsize = 65536  # headers and body leave in one send (flushed per request): no Nagle/delayed-ACK stall

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802 - stdlib name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                delivery = self.headers.get("Vault-Delivery-Id", "")
                with receiver.lock:
                    receiver.attempts[delivery] += 1
                    attempt = receiver.attempts[delivery]
                    status = 200
                    if self.path.startswith("/flaky/") and attempt <= int(self.path.rsplit("/", 1)[1]):
                        status = 500
                    if self.path == "/down" and not receiver.recovered.is_set():
                        status = 500
                    if self.path.startswith("/hang") and not receiver.released.is_set():
                        status = "hang"
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                              "status": status, "at": time.monotonic(), "wall": time.time()})
                if status == "hang":
                    receiver.released.wait(receiver.hang_seconds)
                    self.close_connection = True  # dropped without an answer
                    return
                if self.path.startswith("/slow/"):
                    time.sleep(int(self.path.rsplit("/", 1)[1]) / 1000)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"no")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self, path_prefix: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["path"].startswith(path_prefix) and r["status"] == 200]

    def count(self, path_prefix: str) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r["path"].startswith(path_prefix))

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
