"""Runner-only stand-in for the wallet vendor's merchant validation (payment session) endpoint, over mutual TLS.

``POST /api/v1/wallet_pay/get_wallet_pay_session`` makes the platform call the vendor's payment session URL with
the account's merchant identity certificate (:mod:`vaultcore.wallet.session`). A sandbox cannot reach the real
vendor with a test certificate, so the local runner starts this stand-in and points the wallet session function
at it (:func:`start`):

- HTTPS on 127.0.0.1 with a test server certificate for ``localhost`` issued by a test server CA the runner makes
  at each start (``<state-dir>/wallet-vendor/``);
- mutual TLS: the handshake requires a client certificate issued by the wallet sandbox's test root CA
  (``<state-dir>/wallet-sandbox/root-ca.pem``, :mod:`local.wallet_sandbox`; created here when missing, re-read
  when it changes), as the vendor requires the merchant identity certificate it issued;
- ``POST /paymentservices/paymentSession`` with the vendor's body ``{merchantIdentifier, displayName,
  initiative, initiativeContext}`` is answered with the vendor's merchant session object (``epochTimestamp``,
  ``expiresAt``, ``merchantSessionIdentifier``, ``nonce``, ``merchantIdentifier``, ``domainName``,
  ``displayName``, ``signature``, ...); a body that does not match the client certificate's merchant identifier
  is a 400 ``{statusCode, statusMessage}`` as the vendor answers.

The runner gives the session function ``WALLET_MERCHANT_VALIDATION_URL`` (this server) and
``WALLET_MERCHANT_VALIDATION_CA_FILE`` (the test server CA). The session code honours that CA bundle only with the
runner's switch (``VAULT_ALLOW_LOCAL_EGRESS=1``) in the certification environment; a deployed stack sets neither
variable, so it can never trust this server. An ``--env WALLET_MERCHANT_VALIDATION_URL=...`` override of the runner
wins: the stand-in is then not started.

Nothing here logs a key, a certificate or a request body: refusals are counted and reported by reason only.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import secrets
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from local.wallet_token_forge import issue_certificate

__all__ = ["SESSION_PATH", "ServerPki", "make_server_pki", "VendorStandIn", "start", "URL_ENV", "CA_ENV"]

SESSION_PATH = "/paymentservices/paymentSession"
URL_ENV = "WALLET_MERCHANT_VALIDATION_URL"  # vaultcore.wallet.session.VALIDATION_URL_ENV
CA_ENV = "WALLET_MERCHANT_VALIDATION_CA_FILE"  # vaultcore.wallet.session.VALIDATION_CA_ENV (runner only)
_MAX_BODY = 65_536


@dataclass(frozen=True)
class ServerPki:
    """The stand-in's TLS identity: a test server CA and a server certificate for localhost / 127.0.0.1."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)


def make_server_pki(directory: Path) -> ServerPki:
    """A fresh test server CA and server certificate (P-256) under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = serialization.Encoding.PEM
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = issue_certificate("Wallet Vendor Stand-in Server CA", ca_key, None, ca_key, ca=True, path_length=0)
    server = issue_certificate("localhost", server_key, ca, ca_key, ca=False,
                               san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
                               eku=[ExtendedKeyUsageOID.SERVER_AUTH])
    out = ServerPki(directory / "server-ca.pem", directory / "server.pem", directory / "server-key.pem")
    _write(out.ca_file, ca.public_bytes(pem))
    _write(out.cert_file, server.public_bytes(pem))
    _write(out.key_file, server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()), private=True)
    return out


def _merchant_id_of(peer: dict[str, Any] | None) -> str | None:
    """The merchant identifier of a client certificate: its UID, else the ``Merchant ID: ...`` common name."""
    subject = dict(pair for rdn in (peer or {}).get("subject", ()) for pair in rdn)
    if subject.get("userId"):
        return str(subject["userId"])
    common_name = str(subject.get("commonName") or "")
    return common_name.removeprefix("Merchant ID: ") if common_name.startswith("Merchant ID: ") else None


def session_object(merchant_identifier: str, domain: str, display_name: str) -> dict[str, Any]:
    """The vendor's merchant session object (opaque to the platform and the merchant; the browser checks it)."""
    now_ms = int(time.time() * 1000)
    digest = hashlib.sha256(merchant_identifier.encode("utf-8")).hexdigest().upper()
    return {
        "epochTimestamp": now_ms, "expiresAt": now_ms + 3_600_000,
        "merchantSessionIdentifier": "SSH" + secrets.token_hex(16).upper() + "_SANDBOX",
        "nonce": secrets.token_hex(4), "merchantIdentifier": digest, "domainName": domain,
        "displayName": display_name, "signature": base64.b64encode(secrets.token_bytes(64)).decode("ascii"),
        "operationalAnalyticsIdentifier": f"{display_name}:{digest}", "retries": 0, "pspId": digest,
    }


class VendorStandIn:
    """HTTPS on 127.0.0.1 requiring a client certificate issued by ``client_ca_file`` (re-read when it changes).

    ``requests`` records each answered request (path, body, the client certificate's merchant identifier, Host);
    ``refused`` counts handshakes refused (no or untrusted client certificate); ``status`` other than 200 makes
    every answer that status (tests of the platform's 719)."""

    def __init__(self, server: ServerPki, client_ca_file: Path, *, port: int = 0, status: int = 200,
                 quiet: bool = True) -> None:
        self.server_pki, self.client_ca_file, self.status, self.quiet = server, Path(client_ca_file), status, quiet
        self.requests: list[dict[str, Any]] = []
        self.refused = 0
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._context_stamp: tuple[int, int] | None = None
        self._context_for_connection()  # fail now, not at the first call, when a file is missing
        self._httpd = _TLSServer(("127.0.0.1", port), _handler(self), self)
        self.port = int(self._httpd.server_address[1])
        self.url = f"https://localhost:{self.port}{SESSION_PATH}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True, name="wallet-vendor").start()

    def _context_for_connection(self) -> ssl.SSLContext:
        stat = self.client_ca_file.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if self._context is None or stamp != self._context_stamp:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.load_cert_chain(self.server_pki.cert_file, self.server_pki.key_file)
                context.load_verify_locations(cafile=str(self.client_ca_file))
                context.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: no trusted client certificate, no session
                self._context, self._context_stamp = context, stamp
            return self._context

    def _refuse(self, reason: str) -> None:
        with self._lock:
            self.refused += 1
        if not self.quiet:
            print(f"wallet vendor stand-in: connection refused ({reason})", file=sys.stderr, flush=True)

    def answer(self, path: str, body: Any, peer: dict[str, Any] | None, host: str | None) -> tuple[int, dict]:
        merchant_id = _merchant_id_of(peer)
        self.requests.append({"path": path, "body": body, "client_merchant_id": merchant_id,
                              "client_cn": dict(p for rdn in (peer or {}).get("subject", ()) for p in rdn).get(
                                  "commonName"), "host": host})
        if path.split("?", 1)[0] != SESSION_PATH:
            return 404, {"statusCode": "404", "statusMessage": "Not found"}
        if self.status != 200:
            return self.status, {"statusCode": str(self.status), "statusMessage": "Payment Services Exception"}
        if not isinstance(body, dict):
            return 400, {"statusCode": "400", "statusMessage": "Payment Services Exception: malformed request"}
        merchant: Any = body.get("merchantIdentifier")  # compared with the certificate's merchant below
        display = body.get("displayName")
        initiative, context = body.get("initiative"), body.get("initiativeContext")
        if merchant != merchant_id:
            return 400, {"statusCode": "400", "statusMessage": "Payment Services Exception: merchantIdentifier "
                                                               "is not the client certificate's merchant"}
        if initiative != "web" or not isinstance(context, str) or not context:
            return 400, {"statusCode": "400", "statusMessage": "Payment Services Exception: initiative web "
                                                               "requires initiativeContext (the domain)"}
        if not isinstance(display, str) or not 1 <= len(display) <= 64:
            return 400, {"statusCode": "400", "statusMessage": "Payment Services Exception: displayName"}
        return 200, session_object(merchant, context, display)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], stand_in: VendorStandIn):
        self.stand_in = stand_in
        super().__init__(address, handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        # The handshake runs in the request's thread (Handler.setup), never in the accepting one.
        try:
            context = self.stand_in._context_for_connection()
        except OSError:  # the client CA file went away: refuse this connection, keep serving
            sock.close()
            raise
        return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        self.stand_in._refuse("tls" if isinstance(exc, ssl.SSLError) else type(exc).__name__)


def _handler(stand_in: VendorStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "wallet-vendor-stand-in"

        def setup(self) -> None:
            self.request.settimeout(10)
            self.request.do_handshake()  # refused here without a client certificate the client CA issued
            super().setup()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                self.close_connection = True
                return self._reply(413, {"statusCode": "413", "statusMessage": "Request too large"})
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            status, payload = stand_in.answer(self.path, body, self.connection.getpeercert(), self.headers.get("Host"))
            self._reply(status, payload)

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._reply(405, {"statusCode": "405", "statusMessage": "Method not allowed"})

    return Handler


def start(platform: Any) -> dict[str, str] | None:
    """The runner's hook: start the stand-in and point the wallet session function at it (runner only).

    Returns what the runner adds to demo.json (``walletVendor``), or None when an ``--env`` override names another
    merchant validation URL."""
    if URL_ENV in platform.env_overrides:
        return None
    from local.wallet_sandbox import ensure_root

    state = Path(platform.state_dir)
    root_file, _ = ensure_root(state / "wallet-sandbox")
    server = make_server_pki(state / "wallet-vendor")
    stand_in = VendorStandIn(server, root_file, quiet=False)
    platform.wallet_vendor = stand_in
    variables = {URL_ENV: stand_in.url, CA_ENV: str(server.ca_file)}
    # In the runner every function shares one process environment; env.json (local.invoke, sam local) gets the
    # same values through the overrides. An explicit --env override still wins.
    variables = {k: v for k, v in variables.items() if k not in platform.env_overrides}
    os.environ.update(variables)
    platform.env_overrides = {**variables, **platform.env_overrides}
    return {"url": stand_in.url, "serverCaFile": str(server.ca_file), "clientCaFile": str(root_file)}
