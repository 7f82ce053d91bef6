"""Test support for wallet payments: merchant key material, a wallet settings body, tokens, and the runner's
stand-in for the wallet vendor's merchant validation endpoint (HTTPS that requires and checks a client
certificate: local/wallet_vendor.py) with a test PKI of its own."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from local.wallet_token_forge import (
    TestChain,
    build_token,
    make_merchant_keys,
    make_test_chain,
    new_root,
    sample_payment_data,
    wrap_payment_token,
)
from local.wallet_vendor import VendorStandIn, make_server_pki

MERCHANT_ID = "merchant.com.example.shop"
SHOP_DOMAIN = "shop.example.com"
VECTORS = Path(__file__).resolve().parent / "vectors"


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
        server = make_server_pki(self.directory)
        self.server_ca_file, self.server_cert_file, self.server_key_file = server.ca_file, server.cert_file, server.key_file
        client_ca = new_root("Wallet Vendor Merchant")
        self.client_ca_file = self.directory / "client-ca.pem"
        self.client_ca_file.write_bytes(client_ca[0])
        key_pem, cert_pem = make_merchant_keys(MERCHANT_ID, issuer=client_ca, client_auth=True)
        self.identity_cert_pem, self.identity_key_pem = cert_pem.decode(), key_pem.decode()


class MerchantValidationStub(VendorStandIn):
    """The runner's stand-in (local/wallet_vendor.py) on the test's own PKI: HTTPS on 127.0.0.1 that demands a
    client certificate issued by the client CA, records each request (body, the client certificate's subject) and
    answers with the vendor's session object (or ``status``)."""

    def __init__(self, pki: Pki, status: int = 200) -> None:
        from local.wallet_vendor import ServerPki

        super().__init__(ServerPki(pki.server_ca_file, pki.server_cert_file, pki.server_key_file), pki.client_ca_file,
                         status=status)


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
