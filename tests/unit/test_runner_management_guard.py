"""Issue 27: the local runner's management API (no authentication on loopback) keeps browsers out: a foreign
``Host`` (DNS rebinding) is 421, and a request other than GET or HEAD without ``Content-Type: application/json``
(a cross-site ``no-cors`` POST can only be ``text/plain``, a form or multipart) is 415. The other APIs are not
affected. Served through the runner's own HTTP handler on an ephemeral loopback port, with a stand-in platform."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from local.runner import Route, _Server, make_http_handler, management_refusal


class _StandIn:
    """The two things the HTTP handler asks of the platform: which route, and the function's answer."""

    def __init__(self) -> None:
        self.invoked: list[tuple[str, dict[str, Any]]] = []

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        if path.startswith("/admin/v1/"):
            return Route(method, "/admin/v1/{proxy+}", "ManagementFunction", "ManagementApi"), {"proxy": path[10:]}
        return Route(method, "/api/qsapi/3.8", "GatewayFunction", "GatewayApi"), {}

    def api_event(self, method: str, path: str, headers: Any, body: bytes, route: Route, params: dict[str, str],
                  source_ip: str) -> dict[str, Any]:
        return {"httpMethod": method, "path": path}

    def invoke(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        self.invoked.append((function, event))
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}


@pytest.fixture
def served() -> Iterator[tuple[int, _StandIn]]:
    platform = _StandIn()
    server = _Server(("127.0.0.1", 0), make_http_handler(platform))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], platform
    finally:
        server.shutdown()
        server.server_close()


def _send(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else {}
    finally:
        conn.close()


def test_foreign_hosts_and_non_json_writes_are_refused(served):
    port, platform = served
    own = f"127.0.0.1:{port}"
    refused = [
        ("POST", {"Host": "attacker.example", "Content-Type": "application/json"}, 421),  # DNS rebinding
        ("GET", {"Host": f"attacker.example:{port}"}, 421),
        ("GET", {}, 421),  # no Host at all
        ("POST", {"Host": own, "Content-Type": "text/plain"}, 415),  # the no-cors cross-site POST
        ("POST", {"Host": own, "Content-Type": "application/x-www-form-urlencoded"}, 415),
        ("POST", {"Host": own, "Content-Type": "multipart/form-data; boundary=x"}, 415),
        ("POST", {"Host": own}, 415),  # no Content-Type (a body-less fetch)
        ("DELETE", {"Host": own}, 415),
        ("PATCH", {"Host": f"localhost:{port}", "Content-Type": "text/json"}, 415),
    ]
    for method, headers, status in refused:
        got, body = _send(port, method, "/admin/v1/partners", headers, b'{"name": "x"}')
        assert (got, "message" in body) == (status, True), (method, headers)
    assert platform.invoked == []
    accepted = [("POST", {"Host": own, "Content-Type": "application/json"}),
                ("PATCH", {"Host": f"localhost:{port}", "Content-Type": "Application/JSON; charset=utf-8"}),
                ("DELETE", {"Host": f"[::1]:{port}", "Content-Type": "application/json"}),
                ("GET", {"Host": own}), ("HEAD", {"Host": f"LOCALHOST:{port}"})]
    for method, headers in accepted:
        assert _send(port, method, "/admin/v1/partners", headers)[0] == 200, (method, headers)
    assert [f for f, _ in platform.invoked] == ["ManagementFunction"] * len(accepted)


def test_the_other_apis_are_not_affected(served):
    port, platform = served
    status, _ = _send(port, "POST", "/api/qsapi/3.8", {"Host": "shop.example", "Content-Type": "text/plain"},
                      b"account_id=1")
    assert status == 200 and platform.invoked[0][0] == "GatewayFunction"


def test_the_rule_itself():
    assert management_refusal("GET", "127.0.0.1:3000", None, 3000) is None
    assert management_refusal("GET", "127.0.0.1:3001", None, 3000)[0] == 421  # another port: another origin
    assert management_refusal("OPTIONS", "127.0.0.1:3000", None, 3000)[0] == 415
    assert management_refusal("POST", "localhost:3000", "application/json;charset=utf-8", 3000) is None
