"""Test support for wallet payments: merchant key material, a wallet settings body, tokens, and a stand-in for
the wallet vendor's merchant validation endpoint (HTTPS that requires and checks a client certificate)."""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.wallet_token_forge import (
    TestChain,
    build_token,
    make_merchant_keys,
    make_test_chain,
    sample_payment_data,
    wrap_payment_token,
)

MERCHANT_ID = "merchant.com.example.shop"
SHOP_DOMAIN = "shop.example.com"
VECTORS = Path(__file__).resolve().parent / "vectors"


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _cert(subject: str, key, issuer_name: x509.Name | None, issuer_key, *, ca: bool, san: list | None = None,
          eku=None) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.now(UTC)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@dataclass
class Pki:
    """A server CA (the stand-in's certificate for localhost) and a client CA (the merchant identity)."""

    directory: Path
    server_ca_file: Path = field(init=False)
    client_ca_file: Path = field(init=False)
    server_cert_file: Path = field(init=False)
    server_key_file: Path = field(init=False)
    identity_cert_pem: str = field(init=False)
    identity_key_pem: str = field(init=False)

    def __post_init__(self) -> None:
        import ipaddress

        pem = serialization.Encoding.PEM
        server_ca_key, client_ca_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        server_ca = _cert("Stand-in Server CA", server_ca_key, None, server_ca_key, ca=True)
        client_ca = _cert("Wallet Vendor Merchant CA", client_ca_key, None, client_ca_key, ca=True)
        server_key = ec.generate_private_key(ec.SECP256R1())
        server = _cert("localhost", server_key, server_ca.subject, server_ca_key, ca=False,
                       san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
                       eku=[ExtendedKeyUsageOID.SERVER_AUTH])
        identity_key = ec.generate_private_key(ec.SECP256R1())
        identity = _cert(f"Merchant ID: {MERCHANT_ID}", identity_key, client_ca.subject, client_ca_key, ca=False,
                         eku=[ExtendedKeyUsageOID.CLIENT_AUTH])
        self.server_ca_file = self.directory / "server-ca.pem"
        self.client_ca_file = self.directory / "client-ca.pem"
        self.server_cert_file = self.directory / "server.pem"
        self.server_key_file = self.directory / "server-key.pem"
        self.server_ca_file.write_bytes(server_ca.public_bytes(pem))
        self.client_ca_file.write_bytes(client_ca.public_bytes(pem))
        self.server_cert_file.write_bytes(server.public_bytes(pem))
        self.server_key_file.write_text(_pem_key(server_key))
        self.identity_cert_pem = identity.public_bytes(pem).decode()
        self.identity_key_pem = _pem_key(identity_key)


class MerchantValidationStub:
    """HTTPS on 127.0.0.1 that demands a client certificate issued by the client CA, records each request (body
    and the client certificate's subject) and answers with an opaque session object."""

    def __init__(self, pki: Pki, status: int = 200) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = status
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                peer = self.connection.getpeercert()
                subject = dict(x[0] for x in peer.get("subject", ())) if peer else {}
                stub.requests.append({"path": self.path, "body": body, "client_cn": subject.get("commonName"),
                                      "host": self.headers.get("Host")})
                payload = json.dumps({"epochTimestamp": 1700000000000, "expiresAt": 1700003600000,
                                      "merchantSessionIdentifier": "SSH-stand-in", "nonce": "abcd1234",
                                      "merchantIdentifier": "ABCDEF", "domainName": body.get("initiativeContext"),
                                      "displayName": body.get("displayName"), "signature": "c2lnbmF0dXJl"}).encode()
                self.send_response(stub.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.server_cert_file, pki.server_key_file)
        context.load_verify_locations(pki.client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: no client certificate, no handshake
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://localhost:{self.server.server_address[1]}/paymentservices/paymentSession"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class WalletMerchant:
    chain: TestChain
    key_pem: bytes
    cert_pem: bytes

    def token(self, amount: int = 1000, currency_code: str = "840", *, pan: str = "4111111111111111",
              signing_time: datetime | None = None, chain: TestChain | None = None, full: bool = True,
              **payment: Any) -> dict[str, Any]:
        data = sample_payment_data(pan=pan, amount=amount, currency_code=currency_code, **payment)
        token = build_token(data, self.cert_pem, chain or self.chain, signing_time=signing_time or datetime.now(UTC))
        return wrap_payment_token(token) if full else token


def new_merchant() -> WalletMerchant:
    key_pem, cert_pem = make_merchant_keys(MERCHANT_ID)
    return WalletMerchant(make_test_chain(), key_pem, cert_pem)


def wallet_body(merchant: WalletMerchant, pki: Pki | None = None, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "merchant_identifier": MERCHANT_ID,
        "payment_processing_private_key": merchant.key_pem.decode(),
        "payment_processing_certificate": merchant.cert_pem.decode(),
        "domains": [SHOP_DOMAIN],
        "trust_roots": [merchant.chain.root_pem.decode()],
    }
    if pki is not None:
        body["merchant_identity_certificate"] = pki.identity_cert_pem
        body["merchant_identity_private_key"] = pki.identity_key_pem
    body.update(changes)
    return body


# ------------------------------------------------------------------------------ the published merchant key
#
# The merchant key and certificate of the published wallet fixture (tests/vectors/applepay.json, entry
# gala-8bf3871), converted by the openssl CLI into the forms operators have (tests/vectors/wallet_keys/README.md
# records each command). Not made by the project.

GALA_DIR = VECTORS / "wallet_keys"
GALA_PASSPHRASE = "gala-fixture-passphrase"


def gala_vector() -> dict[str, Any]:
    entries = json.loads((VECTORS / "applepay.json").read_text())["entries"]
    return next(e for e in entries if e["id"] == "gala-8bf3871")


GALA_MERCHANT_ID = "merchant.com.seatgeek.SeatGeek"


def gala_certificate_pem() -> str:
    return gala_vector()["merchant_certificate_pem"]


def gala_key_fields(form: str, role: str = "payment_processing") -> dict[str, str]:
    """The body fields that carry the fixture's key (and, for ``pkcs12``, its certificate) in ``form``:
    ``sec1``, ``pkcs8``, ``pkcs8-encrypted``, ``sec1-encrypted`` or ``pkcs12``."""
    import base64

    if form == "pkcs12":
        return {f"{role}_pkcs12": base64.b64encode((GALA_DIR / "gala-merchant.p12").read_bytes()).decode(),
                f"{role}_pkcs12_passphrase": GALA_PASSPHRASE}
    fields = {f"{role}_private_key": (GALA_DIR / f"gala-key.{form}.pem").read_text()}
    if form.endswith("-encrypted"):
        fields[f"{role}_private_key_passphrase"] = GALA_PASSPHRASE
    return fields


def gala_wallet_body(form: str, chain: TestChain, domain: str = "gala.example.com", *, der_certificate: bool = False,
                     **changes: Any) -> dict[str, Any]:
    """A wallet settings body for the fixture's merchant with its key in ``form``; ``chain``'s root is the
    trust root (tokens are signed by the test's own chain: the fixture's vendor chain dates from 2014)."""
    import base64

    body: dict[str, Any] = {"merchant_identifier": GALA_MERCHANT_ID, "domains": [domain],
                            "trust_roots": [chain.root_pem.decode()], **gala_key_fields(form)}
    if form != "pkcs12":
        body["payment_processing_certificate"] = (
            base64.b64encode((GALA_DIR / "gala-cert.der").read_bytes()).decode() if der_certificate
            else gala_certificate_pem())
    body.update(changes)
    return body


def gala_token(chain: TestChain, amount: int = 1000, **payment: Any) -> dict[str, Any]:
    """A fresh full wallet token encrypted to the fixture's merchant certificate, signed by ``chain``."""
    data = sample_payment_data(amount=amount, **payment)
    return wrap_payment_token(build_token(data, gala_certificate_pem().encode(), chain,
                                          signing_time=datetime.now(UTC)))
