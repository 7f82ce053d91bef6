"""SafeHttpClient against a real local http.server (CWE-918): policy, rebinding, caps, deadline, no redirects."""

from __future__ import annotations

import datetime
import http.server
import json
import socket
import ssl
import threading
import time

import pytest

from vaultcore.net.http import (
    EgressConnectionError,
    EgressDenied,
    EgressTimeout,
    HttpResponse,
    InvalidRequest,
    RequestTooLarge,
    ResponseTooLarge,
    SafeHttpClient,
    get_default_client,
)
from vaultcore.net.ssrf import EgressPolicy

LOCAL = EgressPolicy(allow_http=True, allow_loopback=True)
_real_getaddrinfo = socket.getaddrinfo


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is observable

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append(
            {
                "path": self.path,
                "method": self.command,
                "headers": dict(self.headers.items()),
                "body": body,
                "port": self.client_address[1],
            }
        )
        return body

    def do_POST(self):
        self.do_GET()

    def do_GET(self):
        body = self._record()
        if self.path == "/ok":
            self._send(
                200,
                json.dumps({"host": self.headers.get("Host"), "body": body.decode()}).encode(),
                {"Set-Cookie": "a=1"},
            )
        elif self.path == "/headers":
            self._send(200, json.dumps(dict(self.headers.items())).encode())
        elif self.path == "/redirect":
            self._send(302, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
        elif self.path.startswith("/big"):
            self._send(200, b"x" * 5000)
        elif self.path == "/unsized":
            # No Content-Length and chunked: the size is only known by reading.
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(10):
                self.wfile.write(b"3e8\r\n" + b"y" * 1000 + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/slow":
            time.sleep(3)
            self._send(200, b"late")
        elif self.path == "/drip":
            # One header byte at a time, each well within any per-recv read timeout.
            try:
                for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"z" * 200:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            self.close_connection = True
        else:
            self._send(404, b"")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list[dict] = []

    def handle_error(self, request, client_address):
        pass  # refused TLS handshakes and abandoned connections are expected here


def _serve(ssl_context: ssl.SSLContext | None = None):
    server = _Server(("127.0.0.1", 0), _Handler)
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def server():
    srv, thread = _serve()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


@pytest.fixture
def client():
    c = SafeHttpClient(LOCAL, connect_timeout=2, read_timeout=5, max_response_bytes=1000, max_request_bytes=100)
    yield c
    c.close()


def _fake_dns(monkeypatch, answers: dict[str, list[str]], calls: list[str] | None = None):
    """Resolve names from ``answers`` (each call pops the next answer when several are listed);
    IP literals go to the real resolver, as urllib3 itself passes the checked address to getaddrinfo."""

    def _getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            if calls is not None:
                calls.append(host)
            queue = answers[host]
            address = queue.pop(0) if len(queue) > 1 else queue[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", _getaddrinfo)


# ---------------------------------------------------------------------------------------------- happy path


def test_loopback_allowed_by_local_policy_works(server, client):
    port = server.server_address[1]
    response = client.send("POST", f"http://127.0.0.1:{port}/ok", {"Content-Type": "text/plain"}, b"hello")
    assert isinstance(response, HttpResponse)
    assert response.status == 200
    assert json.loads(response.body) == {"host": f"127.0.0.1:{port}", "body": "hello"}
    assert response.header("set-cookie") == "a=1"
    assert server.seen[0]["method"] == "POST"


def test_connects_to_checked_address_and_keeps_host_name(monkeypatch, server, client):
    # Given a name that rebinds: first answer loopback (allowed locally), then the metadata address
    calls: list[str] = []
    _fake_dns(monkeypatch, {"stub.example.com": ["127.0.0.1", "169.254.169.254"]}, calls)
    port = server.server_address[1]
    # When one request is sent
    response = client.send("GET", f"http://stub.example.com:{port}/ok")
    # Then the name was resolved once, the checked address was used, and Host carries the name
    assert response.status == 200
    assert calls == ["stub.example.com"]
    assert json.loads(response.body)["host"] == f"stub.example.com:{port}"


def test_client_owned_headers_cannot_be_overridden(server, client):
    port = server.server_address[1]
    response = client.send(
        "GET",
        f"http://127.0.0.1:{port}/headers",
        [
            ("Host", "169.254.169.254"),
            ("Accept-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("X-Partner", "p1"),
        ],
    )
    seen = json.loads(response.body)
    assert seen["Host"] == f"127.0.0.1:{port}"
    assert seen["Accept-Encoding"] == "identity"
    assert "Transfer-Encoding" not in seen
    assert seen["X-Partner"] == "p1"


def test_connections_are_pooled_per_target(server, client):
    port = server.server_address[1]
    for _ in range(3):
        assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert len({request["port"] for request in server.seen}) == 1  # one TCP connection, reused
    assert len(client._pools) == 1


def test_pool_cache_is_bounded(server):
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, max_pools=2) as c:
        for host in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
            try:
                c.send("GET", f"http://{host}:{port}/ok", timeout=2)
            except EgressConnectionError:
                pass  # 127.0.0.2/3 may not be routable everywhere; the pool is created either way
        assert len(c._pools) == 2


# ---------------------------------------------------------------------------------------------- redirects


def test_redirect_to_internal_address_is_not_followed(monkeypatch, server, client):
    port = server.server_address[1]
    connections: list[object] = []
    real_create = socket.create_connection
    monkeypatch.setattr(
        socket, "create_connection", lambda addr, *a, **k: connections.append(addr) or real_create(addr, *a, **k)
    )
    response = client.send("GET", f"http://127.0.0.1:{port}/redirect")
    assert response.status == 302
    assert response.is_redirect
    assert response.header("Location") == "http://169.254.169.254/latest/meta-data/"
    assert [r["path"] for r in server.seen] == ["/redirect"]
    assert all(addr[0] != "169.254.169.254" for addr in connections)


# ---------------------------------------------------------------------------------------------- policy


def test_loopback_refused_without_local_policy(monkeypatch, server):
    port = server.server_address[1]
    _fake_dns(monkeypatch, {"evil.example.com": ["127.0.0.1"]})
    strict_http = SafeHttpClient(EgressPolicy(allow_http=True))
    with pytest.raises(EgressDenied, match="IP address"):
        strict_http.send("GET", f"http://127.0.0.1:{port}/ok")
    with pytest.raises(EgressDenied, match="internal name"):
        strict_http.send("GET", f"http://localhost:{port}/ok")
    with pytest.raises(EgressDenied, match="not allowed") as info:
        strict_http.send("GET", f"http://evil.example.com:{port}/ok")
    assert info.value.reason == "loopback"
    with pytest.raises(EgressDenied, match="https"):
        SafeHttpClient().send("GET", f"http://evil.example.com:{port}/ok")
    assert server.seen == []  # nothing reached the server


@pytest.mark.parametrize("url", ["http://169.254.169.254/", "http://0xa9fea9fe/", "http://[::ffff:169.254.169.254]/"])
def test_metadata_targets_refused_even_locally(url, client):
    with pytest.raises(EgressDenied):
        client.send("GET", url)


def test_default_client_reads_policy_from_env(monkeypatch):
    get_default_client.cache_clear()
    monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", "1")
    try:
        assert get_default_client().policy == LOCAL
        assert get_default_client() is get_default_client()
    finally:
        get_default_client.cache_clear()
    monkeypatch.delenv("VAULT_ALLOW_LOCAL_EGRESS")
    try:
        assert get_default_client().policy == EgressPolicy()
    finally:
        get_default_client.cache_clear()


# ---------------------------------------------------------------------------------------------- caps


def test_response_body_cap_with_content_length(server, client):
    port = server.server_address[1]
    with pytest.raises(ResponseTooLarge):
        client.send("GET", f"http://127.0.0.1:{port}/big")
    # The client stays usable: the abandoned connection is replaced
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200


def test_response_body_cap_without_content_length(server, client):
    port = server.server_address[1]
    with pytest.raises(ResponseTooLarge):
        client.send("GET", f"http://127.0.0.1:{port}/unsized")


def test_response_at_cap_is_accepted(server):
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, max_response_bytes=5000) as c:
        assert len(c.send("GET", f"http://127.0.0.1:{port}/big").body) == 5000


def test_request_body_cap(server, client):
    port = server.server_address[1]
    with pytest.raises(RequestTooLarge):
        client.send("POST", f"http://127.0.0.1:{port}/ok", body=b"x" * 101)
    assert server.seen == []


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("CONNECT", None),
        ("TRACE", None),
        ("GET", {"X-A": "1\r\nX-Injected: 1"}),
        ("GET", {"Bad Name": "1"}),
        ("GET", {"X-A": "\u20ac"}),
    ],
)
def test_invalid_requests_refused(server, client, method, headers):
    port = server.server_address[1]
    with pytest.raises(InvalidRequest):
        client.send(method, f"http://127.0.0.1:{port}/ok", headers)
    assert server.seen == []


# ---------------------------------------------------------------------------------------------- time


def test_read_timeout(server, client):
    port = server.server_address[1]
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        client.send("GET", f"http://127.0.0.1:{port}/slow", timeout=0.5)
    assert time.monotonic() - started < 2


def test_total_deadline_holds_against_drip_feed(server):
    # Given a target that sends a header byte every 100 ms (no per-recv timeout ever expires)
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, connect_timeout=2, read_timeout=20) as c:
        started = time.monotonic()
        with pytest.raises(EgressTimeout):
            c.send("GET", f"http://127.0.0.1:{port}/drip", timeout=1.0)
        # Then the wall-clock budget still ends the call
        assert time.monotonic() - started < 2.5


def test_timeouts_are_capped_at_25_seconds():
    with pytest.raises(ValueError, match="25"):
        SafeHttpClient(connect_timeout=10, read_timeout=20)


def test_connection_refused_is_a_connection_error(client):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before use: nothing listens there
    with pytest.raises(EgressConnectionError):
        client.send("GET", f"http://127.0.0.1:{port}/ok", timeout=3)


# ---------------------------------------------------------------------------------------------- TLS


def _certificate(tmp_path, name: str):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


@pytest.fixture
def tls_server(tmp_path):
    cert, key = _certificate(tmp_path, "stub.example.com")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    sni: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    srv, thread = _serve(context)
    srv.sni = sni
    srv.ca = cert
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def test_tls_verifies_the_host_name_not_the_address(monkeypatch, tls_server):
    _fake_dns(monkeypatch, {"stub.example.com": ["127.0.0.1"]})
    port = tls_server.server_address[1]
    with SafeHttpClient(EgressPolicy(allow_loopback=True), ca_certs=tls_server.ca) as c:
        response = c.send("GET", f"https://stub.example.com:{port}/ok")
    assert response.status == 200
    assert json.loads(response.body)["host"] == f"stub.example.com:{port}"
    assert tls_server.sni == ["stub.example.com"]


def test_tls_certificate_for_another_name_is_refused(monkeypatch, tls_server):
    _fake_dns(monkeypatch, {"other.example.com": ["127.0.0.1"]})
    port = tls_server.server_address[1]
    with SafeHttpClient(EgressPolicy(allow_loopback=True), ca_certs=tls_server.ca) as c:
        with pytest.raises(EgressConnectionError) as info:
            c.send("GET", f"https://other.example.com:{port}/ok")
    assert info.value.reason == "tls"
    assert tls_server.seen == []


def test_tls_untrusted_certificate_is_refused(monkeypatch, tls_server, tmp_path):
    _fake_dns(monkeypatch, {"stub.example.com": ["127.0.0.1"]})
    other_ca, _ = _certificate(tmp_path, "unrelated.example.com")
    port = tls_server.server_address[1]
    with SafeHttpClient(EgressPolicy(allow_loopback=True), ca_certs=other_ca) as c:
        with pytest.raises(EgressConnectionError):
            c.send("GET", f"https://stub.example.com:{port}/ok")
