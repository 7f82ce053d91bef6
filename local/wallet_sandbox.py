"""Wallet onboarding sandbox: test keys, certificates and wallet tokens for a local account (``make run``).

``python -m local.wallet_sandbox`` makes, under ``<state-dir>/wallet-sandbox/`` (default ``.local``), what a
merchant gets from the wallet vendor, for test use only:

- ``root-ca.pem`` — the test root CA: the trust root of the account's wallet settings, the issuer of the
  certificates below and the client CA the runner's stand-in for the vendor requires (:mod:`local.wallet_vendor`);
- ``signing-intermediate.pem`` and ``signing-leaf.pem`` — the chain that signs tokens (CMS, RFC 5652), with the
  vendor's marker extensions (1.2.840.113635.100.6.2.14 and .6.29);
- ``payment-processing.pem`` + ``payment-processing-key.pem`` — the merchant payment processing certificate
  (P-256, merchant identifier hash in 1.2.840.113635.100.6.32) and its key, which opens tokens;
- ``merchant-identity.pem`` + ``merchant-identity-key.pem`` — the merchant identity certificate (TLS client
  authentication) and its key, for the merchant session call;
- ``sandbox.json`` — the merchant identifier and shop domain.

What exists is reused (the runner creates the root CA at start, so its stand-in accepts the identity made here);
``--renew`` makes everything but the root again. Keys are written 0600 and never printed.

``--configure ACCOUNT_ID`` PUTs the wallet settings (both keys and certificates, the domain, the root as trust
root) to the account through the management API (``--url``, default the runner's address from
``<state-dir>/demo.json``). ``--token FILE --amount 10.00 [--currency USD] [--card 4111111111111111]`` writes
a wallet token (the browser's ``{paymentData, paymentMethod, transactionIdentifier}``, ``EC_v1``) for that amount,
encrypted to the payment processing certificate and signed now by the test chain: pay it within 5 minutes
(the signing-time window), once. ``--card`` is a test device account number (Luhn-valid; the gateway's sandbox
triggers apply, e.g. 4000000000000002 declines). Prints one JSON summary of what it did.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from local.wallet_token_forge import (
    TestChain,
    build_token,
    make_merchant_keys,
    make_test_chain,
    new_root,
    sample_payment_data,
    wrap_payment_token,
)

__all__ = ["SANDBOX_DIR", "Sandbox", "ensure_root", "ensure_sandbox", "make_token", "settings_body", "main"]

SANDBOX_DIR = "wallet-sandbox"
DEFAULT_MERCHANT_ID = "merchant.com.example.shop"
DEFAULT_DOMAIN = "shop.example.com"
DEFAULT_CARD = "4111111111111111"
ROOT_NAME = "Wallet Sandbox"
_NETWORKS = {"Visa": "Visa", "MasterCard": "MasterCard", "American Express": "AmEx", "Discover": "Discover",
             "JCB": "JCB"}


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o600 if private else 0o644)
    tmp.replace(path)


def ensure_root(directory: Path) -> tuple[Path, Path]:
    """The sandbox's test root CA (certificate, key) under ``directory``, created when missing."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    cert_file, key_file = directory / "root-ca.pem", directory / "root-ca-key.pem"
    if not (cert_file.is_file() and key_file.is_file()):
        cert_pem, key_pem = new_root(ROOT_NAME)
        _write(key_file, key_pem, private=True)
        _write(cert_file, cert_pem)
    return cert_file, key_file


@dataclass(frozen=True)
class Sandbox:
    directory: Path
    merchant_identifier: str
    domain: str

    def file(self, name: str) -> Path:
        return self.directory / name

    def read(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()

    @property
    def root(self) -> tuple[bytes, bytes]:
        return self.read("root-ca.pem"), self.read("root-ca-key.pem")

    @property
    def chain(self) -> TestChain:
        return TestChain(root_pem=self.read("root-ca.pem"), root_key_pem=self.read("root-ca-key.pem"),
                         intermediate_pem=self.read("signing-intermediate.pem"),
                         intermediate_key_pem=self.read("signing-intermediate-key.pem"),
                         leaf_pem=self.read("signing-leaf.pem"), leaf_key_pem=self.read("signing-leaf-key.pem"))


def _issued_by_root(sandbox: Sandbox, name: str) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(sandbox.read(name))
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(sandbox.read("root-ca.pem")))
    except Exception:  # missing, unreadable, or issued by an earlier root
        return False
    return True


def _merchant_of(sandbox: Sandbox, name: str) -> str | None:
    try:
        cert = x509.load_pem_x509_certificate(sandbox.read(name))
    except (OSError, ValueError):
        return None
    values = cert.subject.get_attributes_for_oid(x509.NameOID.USER_ID)
    return str(values[0].value) if values else None


def ensure_sandbox(directory: Path, merchant_identifier: str | None = None, domain: str | None = None,
                   renew: bool = False) -> tuple[Sandbox, list[str]]:
    """Every artefact under ``directory``: what is missing, stale (another root, another merchant identifier) or
    asked to be renewed is made; the rest is kept. Returns the sandbox and the names of the files made."""
    ensure_root(directory)
    meta_file = directory / "sandbox.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    sandbox = Sandbox(directory, merchant_identifier or meta.get("merchant_identifier") or DEFAULT_MERCHANT_ID,
                      domain or meta.get("domain") or DEFAULT_DOMAIN)
    made: list[str] = []
    if renew or not _issued_by_root(sandbox, "signing-intermediate.pem") or not (directory / "signing-leaf.pem").is_file():
        chain = make_test_chain(name=ROOT_NAME, root=sandbox.root)
        for name, data, private in (("signing-intermediate.pem", chain.intermediate_pem, False),
                                    ("signing-intermediate-key.pem", chain.intermediate_key_pem, True),
                                    ("signing-leaf.pem", chain.leaf_pem, False),
                                    ("signing-leaf-key.pem", chain.leaf_key_pem, True)):
            _write(directory / name, data, private)
        made += ["signing-intermediate.pem", "signing-leaf.pem"]
    for role, client_auth in (("payment-processing", False), ("merchant-identity", True)):
        if renew or not _issued_by_root(sandbox, f"{role}.pem") or _merchant_of(sandbox, f"{role}.pem") != \
                sandbox.merchant_identifier or not (directory / f"{role}-key.pem").is_file():
            key_pem, cert_pem = make_merchant_keys(sandbox.merchant_identifier, issuer=sandbox.root,
                                                   client_auth=client_auth)
            _write(directory / f"{role}-key.pem", key_pem, private=True)
            _write(directory / f"{role}.pem", cert_pem)
            made.append(f"{role}.pem")
    _write(meta_file, json.dumps({"merchant_identifier": sandbox.merchant_identifier, "domain": sandbox.domain},
                                 indent=2).encode() + b"\n")
    return sandbox, made


def settings_body(sandbox: Sandbox) -> dict[str, Any]:
    """The body of ``PUT /admin/v1/accounts/{id}/wallet`` for the sandbox's merchant."""
    return {
        "merchant_identifier": sandbox.merchant_identifier,
        "payment_processing_private_key": sandbox.read("payment-processing-key.pem").decode("ascii"),
        "payment_processing_certificate": sandbox.read("payment-processing.pem").decode("ascii"),
        "merchant_identity_private_key": sandbox.read("merchant-identity-key.pem").decode("ascii"),
        "merchant_identity_certificate": sandbox.read("merchant-identity.pem").decode("ascii"),
        "domains": [sandbox.domain],
        "trust_roots": [sandbox.read("root-ca.pem").decode("ascii")],
        "verify_signature": True,
    }


def _minor_units(amount: str, currency: str) -> tuple[int, str]:
    """``(amount in minor units, ISO 4217 numeric code)``; ValueError names what is wrong."""
    from vaultcore.gateway.currencies import minor_units
    from vaultcore.wallet.token_payload import ISO4217_NUMERIC

    numeric = {alpha: code for code, alpha in ISO4217_NUMERIC.items()}.get(currency.upper())
    if numeric is None:
        raise ValueError(f"--currency {currency!r} is not a wallet currency of the platform")
    digits = minor_units(currency.upper())
    try:
        value = Decimal(amount)
    except InvalidOperation:
        raise ValueError(f"--amount {amount!r} is not a number") from None
    scaled = value.scaleb(digits)
    if value <= 0 or scaled != scaled.to_integral_value():
        raise ValueError(f"--amount must be positive with at most {digits} decimals for {currency.upper()}")
    return int(scaled), numeric


def _default_expiry(today: datetime) -> str:
    return f"{(today.year + 3) % 100:02d}1231"


def make_token(sandbox: Sandbox, amount: str, currency: str = "USD", card: str = DEFAULT_CARD,
               expiry: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """A full wallet token for ``amount`` (decimal text) in ``currency``, paying with ``card``, signed at ``now``."""
    from vaultcore.cards.brand import detect_brand
    from vaultcore.cards.luhn import luhn_valid

    if not (card.isdigit() and 12 <= len(card) <= 19 and luhn_valid(card)):
        raise ValueError("--card must be a Luhn-valid test card or device account number (12-19 digits)")
    now = now or datetime.now(UTC)
    expiry = expiry or _default_expiry(now)
    if not (len(expiry) == 6 and expiry.isdigit() and 1 <= int(expiry[2:4]) <= 12):
        raise ValueError("--expiry must be YYMMDD")
    minor, numeric = _minor_units(amount, currency)
    data = sample_payment_data(pan=card, expiration=expiry, amount=minor, currency_code=numeric)
    token = build_token(data, sandbox.read("payment-processing.pem"), sandbox.chain, signing_time=now)
    network = _NETWORKS.get(detect_brand(card), "Visa")
    return wrap_payment_token(token, network=network, display_name=f"{network} {card[-4:]}", method_type="debit")


def _admin_put(base_url: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(base_url.rstrip("/") + path, data=json.dumps(body).encode(), method="PUT",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the operator's management API
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {}
    except (urllib.error.URLError, OSError) as exc:  # nothing listening: is `make run` running?
        reason = getattr(exc, "reason", exc)
        return 0, {"error": f"cannot reach {base_url} ({type(reason).__name__}); start the platform with make run"}


def _base_url(state_dir: Path) -> str:
    try:
        return str(json.loads((state_dir / "demo.json").read_text())["baseUrl"])
    except (OSError, ValueError, KeyError):
        return "http://127.0.0.1:3000"


def _sha256_of_certificate(pem: bytes) -> str:
    return hashlib.sha256(x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m local.wallet_sandbox",
        description="Test wallet keys, certificates and tokens for a local account (sandbox only).")
    parser.add_argument("--state-dir", type=Path, default=Path(".local"),
                        help="the runner's state directory (default .local); files go to <state-dir>/wallet-sandbox")
    parser.add_argument("--merchant-id", help=f"merchant identifier (default {DEFAULT_MERCHANT_ID}, or the last used)")
    parser.add_argument("--domain", help=f"shop domain (default {DEFAULT_DOMAIN}, or the last used)")
    parser.add_argument("--renew", action="store_true", help="make every key and certificate but the root again")
    parser.add_argument("--configure", metavar="ACCOUNT_ID", help="PUT the wallet settings to this account")
    parser.add_argument("--url", help="the platform's base URL (default: baseUrl of <state-dir>/demo.json)")
    parser.add_argument("--token", metavar="FILE", type=Path, help="write a wallet token (JSON) to FILE")
    parser.add_argument("--amount", help="the token's amount, e.g. 10.00 (with --token)")
    parser.add_argument("--currency", default="USD", help="the token's currency (default USD)")
    parser.add_argument("--card", default=DEFAULT_CARD, help=f"device account number (default {DEFAULT_CARD})")
    parser.add_argument("--expiry", help="the card's expiry, YYMMDD (default: December 31st, three years ahead)")
    args = parser.parse_args(argv)
    if args.token is not None and not args.amount:
        parser.error("--token needs --amount")
    if args.amount and args.token is None:
        parser.error("--amount goes with --token FILE")

    directory = args.state_dir / SANDBOX_DIR
    sandbox, made = ensure_sandbox(directory, args.merchant_id, args.domain, args.renew)
    summary: dict[str, Any] = {
        "sandbox": str(directory), "made": made, "merchant_identifier": sandbox.merchant_identifier,
        "domain": sandbox.domain,
        "trust_root": {"file": str(sandbox.file("root-ca.pem")),
                       "sha256": _sha256_of_certificate(sandbox.read("root-ca.pem"))},
    }
    status = 0
    if args.configure:
        base_url = args.url or _base_url(args.state_dir)
        code, view = _admin_put(base_url, f"/admin/v1/accounts/{args.configure}/wallet", settings_body(sandbox))
        summary["configured"] = {"account_id": args.configure, "status": code, "response": view}
        status = 0 if code == 200 else 1
    if args.token is not None and status == 0:
        try:
            token = make_token(sandbox, args.amount, args.currency, args.card, args.expiry)
        except ValueError as exc:
            parser.error(str(exc))
        _write(args.token, json.dumps(token).encode("utf-8"), private=True)
        summary["token"] = {"file": str(args.token), "amount": args.amount, "currency": args.currency.upper(),
                            "last4": args.card[-4:], "transactionIdentifier": token["transactionIdentifier"],
                            "expires": "pay within 5 minutes, once"}
    print(json.dumps(summary, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
