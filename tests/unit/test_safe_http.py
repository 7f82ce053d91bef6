"""SafeHttpClient against a real local http.server (CWE-918): policy, rebinding, caps, deadline, no redirects."""

from __future__ import annotations

import datetime
import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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
    server: _Server  # the recording server below (http.server types it as any BaseServer)

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
                "raw_headers": list(self.headers.items()),  # every line, in order, duplicates kept
                "body": body,
                "port": self.client_address[1],
            }
        )
        return body

    def do_POST(self):
        self.do_GET()

    def do_PUT(self):
        self.do_GET()

    def do_DELETE(self):
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
        elif self.path == "/chunked":
            # Chunks of uneven sizes, then a trailer: the body is their concatenation.
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"a", b"b" * 300, b"c" * 199):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
        elif self.path.startswith("/close-delimited"):
            # HTTP/1.1 without Content-Length or chunking: the body ends when the server closes.
            size = int(parse_qs(urlsplit(self.path).query).get("n", ["500"])[0])
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"z" * size)
        elif self.path == "/silent-close":
            self._send(200, b"ok")
            self.close_connection = True  # without saying so in the answer
        elif self.path == "/close":
            self._send(200, b"bye", {"Connection": "close"})
        elif self.path == "/endless":
            # Close-delimited and never ending: only a client that does not drain gets out.
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            stop = time.monotonic() + 10
            try:
                while time.monotonic() < stop:
                    self.wfile.write(b"e" * 65536)
            except OSError:
                self.server.endless_aborted.set()
        elif self.path == "/truncated":
            # Declares 100 bytes, sends 10 and closes.
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"t" * 10)
        elif self.path == "/hangup":
            # Reads the request and closes without an answer.
            self.close_connection = True
        elif self.path == "/slowish":
            time.sleep(0.3)
            self._send(200, b"ok")
        elif self.path in ("/drip-body", "/drip-close-delimited"):
            # Headers at once, then one body byte every 100 ms.
            self.send_response(200)
            if self.path == "/drip-body":
                self.send_header("Content-Length", "200")
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b"d")
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
        self.accepted = 0  # TCP connections accepted: connection reuse is observable
        self.endless_aborted = threading.Event()

    def get_request(self):
        request = super().get_request()
        self.accepted += 1
        return request

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
    IP literals go to the real resolver, as socket.create_connection passes the checked address to getaddrinfo."""

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
    assert time.monotonic() - started < 6  # cut near 0.5 s, not at the target's pace (slack for a loaded machine)


def test_total_deadline_holds_against_drip_feed(server):
    # Given a target that sends a header byte every 100 ms (no per-recv timeout ever expires)
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, connect_timeout=2, read_timeout=20) as c:
        started = time.monotonic()
        with pytest.raises(EgressTimeout):
            c.send("GET", f"http://127.0.0.1:{port}/drip", timeout=1.0)
        # Then the wall-clock budget still ends the call: near 1 s, far from the 20 s read timeout (the slack is
        # for a loaded machine, issue 26)
        assert time.monotonic() - started < 6


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


# ---------------------------------------------------------------------------------------------- wire format


def test_repeated_request_headers_go_out_as_separate_lines_in_order(server, client):
    port = server.server_address[1]
    client.send(
        "GET",
        f"http://127.0.0.1:{port}/ok",
        [("X-Dup", "1"), ("X-Other", "a"), ("x-dup", "2"), ("X-Dup", "3"), ("User-Agent", "partner/2")],
    )
    lines = server.seen[0]["raw_headers"]
    # Host first (the configured name), then ours, then the caller's lines as given, one per value
    assert lines[0] == ("Host", f"127.0.0.1:{port}")
    assert [line for line in lines if line[0].lower() in ("x-dup", "x-other")] == [
        ("X-Dup", "1"),
        ("X-Other", "a"),
        ("x-dup", "2"),
        ("X-Dup", "3"),
    ]
    assert [value for name, value in lines if name.lower() == "user-agent"] == ["partner/2"]
    assert [value for name, value in lines if name.lower() == "accept-encoding"] == ["identity"]
    assert "Content-Length" not in dict(lines) and "Transfer-Encoding" not in dict(lines)  # GET without a body


def test_request_framing(server, client):
    port = server.server_address[1]
    client.send("POST", f"http://127.0.0.1:{port}/ok")  # no body: Content-Length 0, as urllib3 sent it
    client.send("PUT", f"http://127.0.0.1:{port}/ok", body="é")  # str bodies are UTF-8
    client.send("GET", f"http://127.0.0.1:{port}/ok", body=b"")  # an empty body is still framed
    client.send("DELETE", f"http://127.0.0.1:{port}/ok")
    framing = [
        [(n, v) for n, v in seen["raw_headers"] if n.lower() in ("content-length", "transfer-encoding")]
        for seen in server.seen
    ]
    assert framing == [[("Content-Length", "0")], [("Content-Length", "2")], [("Content-Length", "0")], []]
    assert server.seen[1]["body"] == "é".encode()
    # A User-Agent is always sent (urllib3 added its own when the caller gave none)
    assert all(len([n for n, _ in seen["raw_headers"] if n.lower() == "user-agent"]) == 1 for seen in server.seen)


def test_response_headers_raw_in_order_with_duplicates(monkeypatch):
    raw = (
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-B: 2\r\nset-cookie: b=2\r\nContent-Length: 2\r\n"
        b"Connection: close\r\n\r\nhi"
    )
    with _raw_server(raw) as port, SafeHttpClient(LOCAL) as c:
        response = c.send("GET", f"http://127.0.0.1:{port}/")
    assert response.body == b"hi"
    assert response.headers == (
        ("Set-Cookie", "a=1"),
        ("X-B", "2"),
        ("set-cookie", "b=2"),
        ("Content-Length", "2"),
        ("Connection", "close"),
    )


class _raw_server:
    """A one-shot TCP server that answers the first request with ``raw`` bytes and closes."""

    def __init__(self, raw: bytes):
        self.raw = raw
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(self.raw)

    def __enter__(self) -> int:
        self.thread.start()
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()
        self.thread.join(timeout=5)


def test_chunked_response_is_read_whole_and_the_connection_reused(server, client):
    port = server.server_address[1]
    response = client.send("GET", f"http://127.0.0.1:{port}/chunked")
    assert response.body == b"a" + b"b" * 300 + b"c" * 199
    assert response.header("Transfer-Encoding") == "chunked"  # framing undone, header returned raw
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert server.accepted == 1


def test_close_delimited_response_is_read_whole(server, client):
    port = server.server_address[1]
    assert client.send("GET", f"http://127.0.0.1:{port}/close-delimited?n=1000").body == b"z" * 1000


def test_truncated_body_is_a_connection_error_not_a_response(server, client):
    port = server.server_address[1]
    with pytest.raises(EgressConnectionError) as info:
        client.send("GET", f"http://127.0.0.1:{port}/truncated")
    assert info.value.reason == "io"


# ---------------------------------------------------------------------------------------------- connection reuse


def test_keep_alive_connection_is_reused_for_the_same_target(server, client):
    port = server.server_address[1]
    for path in ("/ok", "/headers", "/redirect", "/ok"):
        client.send("GET", f"http://127.0.0.1:{port}{path}")
    assert server.accepted == 1
    assert len({seen["port"] for seen in server.seen}) == 1


def test_connection_close_is_not_reused(server, client):
    port = server.server_address[1]
    assert client.send("GET", f"http://127.0.0.1:{port}/close").body == b"bye"
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert server.accepted == 2
    assert client.send("GET", f"http://127.0.0.1:{port}/close-delimited?n=10").body == b"z" * 10
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert server.accepted == 3  # the /ok connection served /close-delimited, which closed it


def test_connection_closed_by_the_target_while_idle_is_replaced(server, client):
    port = server.server_address[1]
    # The answer says nothing about closing, then the server drops the connection (an idle keep-alive timeout)
    assert client.send("GET", f"http://127.0.0.1:{port}/silent-close").status == 200
    time.sleep(0.2)
    # The stale pooled connection is noticed before anything is sent on it: a fresh one carries the request
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert server.accepted == 2
    assert [seen["path"] for seen in server.seen] == ["/silent-close", "/ok"]


def test_pool_keeps_at_most_pool_maxsize_idle_connections(server):
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, pool_maxsize=1) as c:
        results: list[int] = []
        threads = [
            threading.Thread(target=lambda: results.append(c.send("GET", f"http://127.0.0.1:{port}/slowish").status))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert results == [200, 200]  # a busy pool never blocks: a second connection was opened
        assert server.accepted == 2
        for _ in range(2):
            assert c.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
        assert server.accepted == 2  # one of them was kept and is reused; the other was closed


@pytest.mark.parametrize(
    "path",
    ["/big", "/unsized", "/close-delimited?n=5000"],
    ids=["content-length", "chunked", "close-delimited"],
)
def test_response_over_the_cap_closes_the_connection(server, client, path):
    port = server.server_address[1]
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    with pytest.raises(ResponseTooLarge):
        client.send("GET", f"http://127.0.0.1:{port}{path}")  # on the pooled connection
    assert server.accepted == 1
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    assert server.accepted == 2  # the connection that carried the oversized answer was not reused


def test_endless_response_is_abandoned_not_drained(server, client):
    port = server.server_address[1]
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge):
        client.send("GET", f"http://127.0.0.1:{port}/endless")
    assert time.monotonic() - started < 6  # abandoned at the size cap; an endless drain would never end
    assert server.endless_aborted.wait(5)  # the client closed its end: the server's writes failed


# ---------------------------------------------------------------------------------------------- no retries


def test_a_request_is_never_sent_twice(server, client):
    port = server.server_address[1]
    assert client.send("GET", f"http://127.0.0.1:{port}/ok").status == 200
    with pytest.raises(EgressConnectionError) as info:
        client.send("POST", f"http://127.0.0.1:{port}/hangup", body=b"card")  # on the reused connection
    assert info.value.reason == "io"
    with pytest.raises(EgressConnectionError):
        client.send("POST", f"http://127.0.0.1:{port}/hangup", body=b"card")  # on a fresh one
    assert [seen["path"] for seen in server.seen] == ["/ok", "/hangup", "/hangup"]


def _fake_dns_all(monkeypatch, name: str, addresses: list[str]):
    def _getaddrinfo(host, port, *args, **kwargs):
        if host == name:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in addresses]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", _getaddrinfo)


def _record_connects(monkeypatch) -> list:
    connects: list = []
    real_create = socket.create_connection

    def create_connection(addr, *a, **k):
        connects.append(addr[0])
        return real_create(addr, *a, **k)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return connects


def test_next_address_only_when_the_tcp_connect_fails(monkeypatch, server, client):
    port = server.server_address[1]
    # 127.0.0.2 refuses (the server listens on 127.0.0.1 only): nothing was sent, the next address is tried
    _fake_dns_all(monkeypatch, "multi.example.com", ["127.0.0.2", "127.0.0.1"])
    connects = _record_connects(monkeypatch)
    assert client.send("GET", f"http://multi.example.com:{port}/ok").status == 200
    assert connects == ["127.0.0.2", "127.0.0.1"]
    # Once connected, a failure ends the call: the request may have been received
    _fake_dns_all(monkeypatch, "multi2.example.com", ["127.0.0.1", "127.0.0.3"])
    connects.clear()
    with pytest.raises(EgressConnectionError) as info:
        client.send("POST", f"http://multi2.example.com:{port}/hangup", body=b"card")
    assert info.value.reason == "io"
    assert connects == ["127.0.0.1"]


def test_every_address_refusing_is_a_connect_error(monkeypatch, client):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _fake_dns_all(monkeypatch, "multi.example.com", ["127.0.0.2", "127.0.0.1"])
    connects = _record_connects(monkeypatch)
    with pytest.raises(EgressConnectionError) as info:
        client.send("GET", f"http://multi.example.com:{port}/ok", timeout=3)
    assert info.value.reason == "connect"
    assert connects == ["127.0.0.2", "127.0.0.1"]


# ---------------------------------------------------------------------------------------------- deadline


@pytest.mark.parametrize("path", ["/drip", "/drip-body", "/drip-close-delimited"])
def test_drip_feed_past_the_deadline_is_a_deadline_timeout(server, path):
    # Given a target that sends a byte every 100 ms (no per-recv timeout ever expires), in the status line and
    # headers, in a body with a Content-Length, or in a close-delimited body
    port = server.server_address[1]
    with SafeHttpClient(LOCAL, connect_timeout=2, read_timeout=20) as c:
        started = time.monotonic()
        with pytest.raises(EgressTimeout) as info:
            c.send("GET", f"http://127.0.0.1:{port}{path}", timeout=1.0)
        elapsed = time.monotonic() - started
    # Then the wall-clock budget ends the call, in about the budget: never before it, and far from the 20 s read
    # timeout (the slack is for a loaded machine, issue 26)
    assert info.value.reason == "deadline"
    assert 0.9 <= elapsed < 6


def test_stalled_tls_handshake_is_bounded(monkeypatch):
    # A TCP listener that never answers the TLS handshake
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        port = listener.getsockname()[1]
        _fake_dns(monkeypatch, {"stub.example.com": ["127.0.0.1"]})
        with SafeHttpClient(EgressPolicy(allow_loopback=True), connect_timeout=2, read_timeout=20) as c:
            started = time.monotonic()
            with pytest.raises(EgressTimeout):
                c.send("GET", f"https://stub.example.com:{port}/ok", timeout=0.5)
            assert time.monotonic() - started < 6  # near 0.5 s; the 20 s read timeout would fail this
    finally:
        listener.close()


# ---------------------------------------------------------------------------------------------- TLS with a test CA


@pytest.fixture
def ca_tls_server(tmp_path):
    """HTTPS with a certificate for localhost and 127.0.0.1 issued by a test CA (local/wallet_vendor.py)."""
    from local.wallet_vendor import make_server_pki

    pki = make_server_pki(tmp_path / "pki")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    sni: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    srv, thread = _serve(context)
    srv.sni = sni
    srv.ca = str(pki.ca_file)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def test_tls_sni_and_host_carry_the_name(monkeypatch, ca_tls_server):
    _fake_dns(monkeypatch, {"localhost": ["127.0.0.1"]})
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(LOCAL, ca_certs=ca_tls_server.ca) as c:
        first = c.send("GET", f"https://localhost:{port}/ok")
        second = c.send("GET", f"https://localhost:{port}/ok")
    assert first.status == second.status == 200
    assert json.loads(first.body)["host"] == f"localhost:{port}"
    assert ca_tls_server.sni == ["localhost"]  # one handshake: the TLS connection was reused
    assert ca_tls_server.accepted == 1


def test_tls_to_an_ip_literal_checks_the_address_and_sends_no_sni(ca_tls_server):
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(LOCAL, ca_certs=ca_tls_server.ca) as c:
        assert c.send("GET", f"https://127.0.0.1:{port}/ok").status == 200
    assert ca_tls_server.sni == [None]


def test_tls_certificate_valid_for_the_address_but_not_the_name_is_refused(monkeypatch, ca_tls_server):
    # The certificate covers 127.0.0.1, the address we connect to; the URL's name is another: refused
    _fake_dns(monkeypatch, {"other.example.com": ["127.0.0.1"]})
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(EgressPolicy(allow_loopback=True), ca_certs=ca_tls_server.ca) as c:
        with pytest.raises(EgressConnectionError) as info:
            c.send("POST", f"https://other.example.com:{port}/ok", body=b"card")
    assert info.value.reason == "tls"
    assert ca_tls_server.sni == ["other.example.com"]
    assert ca_tls_server.seen == []


def test_tls_against_the_system_store_refuses_a_test_ca(monkeypatch, ca_tls_server):
    _fake_dns(monkeypatch, {"localhost": ["127.0.0.1"]})
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(LOCAL) as c:
        with pytest.raises(EgressConnectionError) as info:
            c.send("GET", f"https://localhost:{port}/ok")
    assert info.value.reason == "tls"
    assert ca_tls_server.seen == []


def test_tls_context_is_made_once_per_client(monkeypatch, ca_tls_server):
    from vaultcore.net import http as egress

    made: list[str | None] = []
    real = egress._client_tls_context
    monkeypatch.setattr(egress, "_client_tls_context", lambda ca: made.append(ca) or real(ca))
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(LOCAL, ca_certs=ca_tls_server.ca) as c:
        for host in ("127.0.0.1", "localhost", "127.0.0.1"):
            assert c.send("GET", f"https://{host}:{port}/close").status == 200
    assert made == [ca_tls_server.ca]


def test_unreadable_ca_bundle_is_a_tls_error(tmp_path, ca_tls_server):
    port = ca_tls_server.server_address[1]
    with SafeHttpClient(LOCAL, ca_certs=str(tmp_path / "missing.pem")) as c:
        with pytest.raises(EgressConnectionError) as info:
            c.send("GET", f"https://127.0.0.1:{port}/ok")
    assert info.value.reason == "tls"
    assert ca_tls_server.seen == []


# ---------------------------------------------------------------------------------------------- wallet session call


@pytest.fixture
def vendor(tmp_path, monkeypatch):
    from tests.wallet_support import MerchantValidationStub, Pki
    from vaultcore.settings import reset_settings
    from vaultcore.wallet import session

    pki = Pki(tmp_path / "vendor")
    stub = MerchantValidationStub(pki)
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", str(pki.server_ca_file))
    monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", "1")
    monkeypatch.setenv("ENVIRONMENT", "cert")
    session._contexts.reset()
    yield stub, pki
    stub.close()
    session._contexts.reset()
    reset_settings()


_VENDOR_BODY = {
    "merchantIdentifier": "merchant.com.example.shop",
    "displayName": "Shop",
    "initiative": "web",
    "initiativeContext": "shop.example.com",
}


def _session_call(pki, url):
    from vaultcore.wallet import session

    return session.request_session(url, _VENDOR_BODY, pki.identity_cert_pem, pki.identity_key_pem)


def test_wallet_session_call_over_mutual_tls_names_the_vendor(monkeypatch, vendor):
    stub, pki = vendor
    _fake_dns(monkeypatch, {"localhost": ["127.0.0.1"]})
    connects = _record_connects(monkeypatch)
    answer = _session_call(pki, stub.url)
    assert answer["domainName"] == "shop.example.com"
    assert connects == ["127.0.0.1"]  # the checked address
    sent = stub.requests[-1]
    assert sent["host"] == f"localhost:{stub.port}" and sent["client_merchant_id"] == "merchant.com.example.shop"
    assert sent["body"] == _VENDOR_BODY


def test_wallet_session_call_refuses_a_certificate_for_another_name(monkeypatch, vendor):
    from vaultcore.wallet.errors import W, WalletError

    stub, pki = vendor
    # The stand-in's certificate covers localhost and 127.0.0.1 (the address), not this name
    _fake_dns(monkeypatch, {"vendor.example.com": ["127.0.0.1"]})
    warnings: list[dict] = []
    from vaultcore.wallet import session

    monkeypatch.setattr(session._log, "warning", lambda msg, extra=None, **k: warnings.append(extra))
    with pytest.raises(WalletError) as info:
        _session_call(pki, f"https://vendor.example.com:{stub.port}/paymentservices/paymentSession")
    assert (info.value.code, info.value.status) == (W.VALIDATION_FAILED, 502)
    assert warnings == [{"reason": "tls"}]
    assert stub.requests == []


def test_wallet_session_call_maps_vendor_failures(monkeypatch, vendor):
    from vaultcore.wallet import session
    from vaultcore.wallet.errors import WalletError

    stub, pki = vendor
    warnings: list[dict] = []
    monkeypatch.setattr(session._log, "warning", lambda msg, extra=None, **k: warnings.append(extra))
    stub.status = 500
    with pytest.raises(WalletError):
        _session_call(pki, stub.url)
    # http: never, whatever the egress policy
    with pytest.raises(WalletError):
        _session_call(pki, f"http://localhost:{stub.port}/x")
    # the metadata address: refused before any connection
    with pytest.raises(WalletError):
        _session_call(pki, "https://169.254.169.254/latest")
    # nothing listening: every checked address refused
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with pytest.raises(WalletError):
        _session_call(pki, f"https://127.0.0.1:{closed_port}/x")
    reasons = [w["reason"] for w in warnings]
    assert reasons[0] == "status-500" and reasons[-1] == "connect"
    assert all(r.startswith("egress-") or r == "not-https" for r in reasons[1:3])
    assert len(stub.requests) == 1


# ---------------------------------------------------------------------------------------------- cold start


def test_egress_modules_do_not_import_urllib3():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root / "layers" / "shared" / "python")}
    code = (
        "import vaultcore.net.http, vaultcore.wallet.session, sys\n"
        # use them too, so that imports made on first use are counted
        "c = vaultcore.net.http.SafeHttpClient(vaultcore.net.ssrf.EgressPolicy(allow_http=True, allow_loopback=True))\n"
        "try:\n"
        "    c.send('GET', 'http://127.0.0.1:9/', timeout=2)\n"
        "except vaultcore.net.http.EgressError:\n"
        "    pass\n"
        "try:\n"
        "    vaultcore.wallet.session.request_session('https://169.254.169.254/', {}, '', '')\n"
        "except Exception:\n"
        "    pass\n"
        "print('urllib3' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
