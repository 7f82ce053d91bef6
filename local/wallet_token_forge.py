"""Wallet token forge: a private CA chain, merchant keys and valid ``EC_v1`` tokens.

For the local sandbox and tests only: the wallet sandbox CLI (``python -m local.wallet_sandbox``), the runner's
stand-in for the wallet vendor (:mod:`local.wallet_vendor`), the unit, integration and end-to-end tests and the
wallet benchmark. It lives under local/ (the runner's tools, never deployed), never in the shared layer: a module
that mints validly signed wallet tokens must not ship (tests/unit/test_layer_contents.py checks).

It produces what the wallet vendor would, per the "Payment Token Format Reference": a chain root ->
intermediate (marker OID 1.2.840.113635.100.6.2.14) -> leaf (marker OID 1.2.840.113635.100.6.29), a merchant
payment processing certificate carrying the merchant identifier hash (OID 1.2.840.113635.100.6.32), and a
token encrypted to it (ECDH + NIST SP 800-56A rev.3 §5.8.2.1 KDF + AES-256-GCM) and signed as an RFC 5652
detached CMS ``SignedData`` whose signing time the caller chooses (cryptography's PKCS7 builder always
stamps the current time, so the CMS is encoded here, in DER).

Typical use::

    chain = make_test_chain()
    key_pem, cert_pem = make_merchant_keys("merchant.com.example.shop")
    token = build_token(sample_payment_data(), cert_pem, chain, signing_time=now, transaction_id="ab" * 32)
    verify_signature(token, [chain.root_pem], now=now)           # vaultcore.crypto.wallet_token
    decrypt_ec_v1(token, key_pem, merchant_certificate_pem=cert_pem)
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vaultcore.crypto.wallet_token import (
    EC_V1,
    OID_INTERMEDIATE_MARKER,
    OID_LEAF_MARKER,
    OID_MERCHANT_ID,
    ec_v1_derive_key,
    merchant_id_hash,
    public_key_hash,
    signed_content,
)

__all__ = [
    "TestChain",
    "issue_certificate",
    "new_root",
    "make_test_chain",
    "make_merchant_keys",
    "build_token",
    "sign_content",
    "sample_payment_data",
    "wrap_payment_token",
]

_DEFAULT_FROM = datetime(2000, 1, 1, tzinfo=UTC)
_DEFAULT_UNTIL = datetime(2099, 12, 31, tzinfo=UTC)
_DER_NULL = b"\x05\x00"  # the vendor's marker extensions carry NULL: only their presence matters


@dataclass(frozen=True)
class TestChain:
    """A root -> intermediate -> leaf chain (P-256, PEM). The leaf key signs tokens."""

    __test__ = False  # not a pytest test class despite the name

    root_pem: bytes
    root_key_pem: bytes
    intermediate_pem: bytes
    intermediate_key_pem: bytes
    leaf_pem: bytes
    leaf_key_pem: bytes


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Vault Test CA"),
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        ]
    )


def issue_certificate(
    subject: str | x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
    path_length: int | None = None,
    marker_oid: str | None = None,
    valid_from: datetime = _DEFAULT_FROM,
    valid_until: datetime = _DEFAULT_UNTIL,
    san: list[x509.GeneralName] | None = None,
    eku: list[x509.ObjectIdentifier] | None = None,
) -> x509.Certificate:
    """A certificate for ``key``, signed by ``issuer_key`` (self-signed when ``issuer`` is None). ``subject`` is
    a common name (with the test organisation) or a whole name; ``san`` and ``eku`` add those extensions."""
    name = _name(subject) if isinstance(subject, str) else subject
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer is not None else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_until)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    if marker_oid is not None:
        builder = builder.add_extension(
            x509.UnrecognizedExtension(x509.ObjectIdentifier(marker_oid), _DER_NULL), critical=False
        )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def new_root(name: str = "Wallet Test", *, valid_from: datetime = _DEFAULT_FROM,
             valid_until: datetime = _DEFAULT_UNTIL) -> tuple[bytes, bytes]:
    """``(certificate_pem, private_key_pem)`` of a fresh self-signed P-256 root CA named ``<name> Root CA``."""
    key = ec.generate_private_key(ec.SECP256R1())
    root = issue_certificate(f"{name} Root CA", key, None, key, ca=True, valid_from=valid_from,
                             valid_until=valid_until)
    return root.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _load_ca(cert_pem: bytes, key_pem: bytes) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the issuing key is not an EC key")
    return x509.load_pem_x509_certificate(cert_pem), key


def make_test_chain(
    *,
    leaf_oid: bool = True,
    intermediate_oid: bool = True,
    valid_from: datetime = _DEFAULT_FROM,
    valid_until: datetime = _DEFAULT_UNTIL,
    name: str = "Wallet Test",
    root: tuple[bytes, bytes] | None = None,
    leaf_valid_from: datetime | None = None,
    leaf_valid_until: datetime | None = None,
) -> TestChain:
    """A fresh chain. ``leaf_oid`` / ``intermediate_oid`` False leave out the vendor's marker extensions;
    the validity window applies to all three certificates (the default spans 2000-2099) unless
    ``leaf_valid_from`` / ``leaf_valid_until`` give the signing certificate its own (an expired signer under a
    valid chain). ``root`` (certificate and key PEM, e.g. from :func:`new_root`) issues the intermediate instead
    of a fresh root."""
    if root is None:
        root = new_root(name, valid_from=valid_from, valid_until=valid_until)
    root_cert, root_key = _load_ca(*root)
    inter_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(2))
    intermediate = issue_certificate(
        f"{name} Integration CA",
        inter_key,
        root_cert,
        root_key,
        ca=True,
        path_length=0,
        marker_oid=OID_INTERMEDIATE_MARKER if intermediate_oid else None,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    leaf = issue_certificate(
        f"{name} Signer",
        leaf_key,
        intermediate,
        inter_key,
        ca=False,
        marker_oid=OID_LEAF_MARKER if leaf_oid else None,
        valid_from=leaf_valid_from or valid_from,
        valid_until=leaf_valid_until or valid_until,
    )
    pem = serialization.Encoding.PEM
    return TestChain(
        root_pem=root[0],
        root_key_pem=root[1],
        intermediate_pem=intermediate.public_bytes(pem),
        intermediate_key_pem=_key_pem(inter_key),
        leaf_pem=leaf.public_bytes(pem),
        leaf_key_pem=_key_pem(leaf_key),
    )


def make_merchant_keys(
    merchant_identifier: str, *, issuer: tuple[bytes, bytes] | None = None, client_auth: bool = False
) -> tuple[bytes, bytes]:
    """``(private_key_pem, certificate_pem)``: a P-256 key and a certificate whose extension
    1.2.840.113635.100.6.32 holds the upper-case hex SHA-256 of ``merchant_identifier`` as a UTF8String, as
    the vendor's merchant certificates do. Self-signed, or issued by ``issuer`` (certificate and key PEM);
    ``client_auth`` marks it for TLS client authentication (a merchant identity certificate)."""
    key = ec.generate_private_key(ec.SECP256R1())
    digest_hex = hashlib.sha256(merchant_identifier.encode("utf-8")).hexdigest().upper().encode("ascii")
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.USER_ID, merchant_identifier),
            x509.NameAttribute(NameOID.COMMON_NAME, f"Merchant ID: {merchant_identifier}"),
        ]
    )
    issuer_cert, issuer_key = _load_ca(*issuer) if issuer is not None else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_DEFAULT_FROM)
        .not_valid_after(_DEFAULT_UNTIL)
        .add_extension(
            x509.UnrecognizedExtension(
                x509.ObjectIdentifier(OID_MERCHANT_ID), b"\x0c" + _len(len(digest_hex)) + digest_hex
            ),
            critical=False,
        )
    )
    if client_auth:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    cert = builder.sign(issuer_key, hashes.SHA256())
    return _key_pem(key), cert.public_bytes(serialization.Encoding.PEM)


def sample_payment_data(
    pan: str = "4111111111111111",
    expiration: str = "291231",
    amount: int = 100,
    currency_code: str = "840",
    cryptogram: str = "AOBiPOjqnc7iAAvBXrBqAoABFA==",
    eci: str = "7",
) -> dict[str, Any]:
    """A decrypted payment data dictionary of the 3-D Secure kind (the vendor's field names)."""
    return {
        "applicationPrimaryAccountNumber": pan,
        "applicationExpirationDate": expiration,
        "currencyCode": currency_code,
        "transactionAmount": amount,
        "deviceManufacturerIdentifier": "040010030273",
        "paymentDataType": "3DSecure",
        "paymentData": {"onlinePaymentCryptogram": cryptogram, "eciIndicator": eci},
    }


def build_token(
    payment_data: dict[str, Any],
    merchant_certificate_pem: bytes,
    chain: TestChain,
    signing_time: datetime | None = None,
    transaction_id: str | None = None,
    *,
    application_data: str | None = None,
) -> dict[str, Any]:
    """A valid ``EC_v1`` token (the ``paymentData`` dictionary) for ``payment_data``, encrypted to the merchant
    certificate and signed by ``chain``'s leaf at ``signing_time`` (default: now). ``transaction_id`` and
    ``application_data`` are hex (default: a random 32-byte id, no application data)."""
    merchant_key = x509.load_pem_x509_certificate(merchant_certificate_pem).public_key()
    if not isinstance(merchant_key, ec.EllipticCurvePublicKey):
        raise ValueError("merchant certificate does not hold an EC key")
    ephemeral = ec.generate_private_key(ec.SECP256R1())
    shared_secret = ephemeral.exchange(ec.ECDH(), merchant_key)
    key = ec_v1_derive_key(shared_secret, merchant_id_hash(merchant_certificate_pem=merchant_certificate_pem))
    plaintext = json.dumps(payment_data, separators=(",", ":")).encode("utf-8")
    header = {
        "ephemeralPublicKey": base64.b64encode(
            ephemeral.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        ).decode("ascii"),
        "publicKeyHash": public_key_hash(merchant_key),
        "transactionId": transaction_id if transaction_id is not None else secrets.token_hex(32),
    }
    if application_data is not None:
        header["applicationData"] = application_data
    token: dict[str, Any] = {
        "version": EC_V1,
        "data": base64.b64encode(AESGCM(key).encrypt(bytes(16), plaintext, None)).decode("ascii"),
        "header": header,
    }
    when = signing_time if signing_time is not None else datetime.now(UTC)
    token["signature"] = base64.b64encode(sign_content(signed_content(token), chain, when)).decode("ascii")
    return token


def wrap_payment_token(
    payment_data_token: dict[str, Any],
    *,
    network: str = "Visa",
    display_name: str = "Visa 1111",
    method_type: str = "debit",
) -> dict[str, Any]:
    """The full wallet token (``paymentData``, ``paymentMethod``, ``transactionIdentifier``) around a token
    from :func:`build_token`, as a browser hands it to the merchant."""
    return {
        "paymentData": payment_data_token,
        "paymentMethod": {"displayName": display_name, "network": network, "type": method_type},
        "transactionIdentifier": payment_data_token["header"]["transactionId"].upper(),
    }


# -------------------------------------------------------------------------- DER encoding (X.690)


def _len(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    size = (length.bit_length() + 7) // 8
    return bytes([0x80 | size]) + length.to_bytes(size, "big")


def _tlv(tag: int, *parts: bytes) -> bytes:
    content = b"".join(parts)
    return bytes([tag]) + _len(len(content)) + content


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    body = b""
    for arc in [arcs[0] * 40 + arcs[1], *arcs[2:]]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, body)


def _integer(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True))


def _time(when: datetime) -> bytes:
    when = when.astimezone(UTC)
    if 1950 <= when.year < 2050:  # RFC 5652 §11.3: UTCTime in these years, GeneralizedTime otherwise
        return _tlv(0x17, when.strftime("%y%m%d%H%M%SZ").encode("ascii"))
    return _tlv(0x18, when.strftime("%Y%m%d%H%M%SZ").encode("ascii"))


def sign_content(
    content: bytes,
    chain: TestChain,
    signing_time: datetime,
    *,
    include_certificates: bool = True,
    signing_time_der: bytes | None = None,
    include_signing_time: bool = True,
) -> bytes:
    """RFC 5652 detached ``SignedData`` (DER) over ``content`` by the chain's leaf: digest SHA-256, signature
    ECDSA-SHA256, signed attributes contentType / signingTime / messageDigest, certificates leaf and
    intermediate (the root is the verifier's to supply, as with the vendor's tokens). For refusal tests,
    ``signing_time_der`` replaces the encoded signing time and ``include_signing_time=False`` leaves it out."""
    leaf = x509.load_pem_x509_certificate(chain.leaf_pem)
    intermediate = x509.load_pem_x509_certificate(chain.intermediate_pem)
    leaf_key = serialization.load_pem_private_key(chain.leaf_key_pem, password=None)
    if not isinstance(leaf_key, ec.EllipticCurvePrivateKey):
        raise ValueError("leaf key is not an EC key")
    sha256 = _tlv(0x30, _oid("2.16.840.1.101.3.4.2.1"), b"\x05\x00")
    id_data = _oid("1.2.840.113549.1.7.1")
    time_der = signing_time_der if signing_time_der is not None else _time(signing_time)
    attributes = sorted(  # DER SET OF: elements in ascending order of their encodings (X.690 §11.6)
        [
            _tlv(0x30, _oid("1.2.840.113549.1.9.3"), _tlv(0x31, id_data)),
            *([_tlv(0x30, _oid("1.2.840.113549.1.9.5"), _tlv(0x31, time_der))] if include_signing_time else []),
            _tlv(0x30, _oid("1.2.840.113549.1.9.4"), _tlv(0x31, _tlv(0x04, hashlib.sha256(content).digest()))),
        ]
    )
    signature = leaf_key.sign(_tlv(0x31, *attributes), ec.ECDSA(hashes.SHA256()))
    signer_info = _tlv(
        0x30,
        _integer(1),
        _tlv(0x30, leaf.issuer.public_bytes(), _integer(leaf.serial_number)),
        sha256,
        _tlv(0xA0, *attributes),
        _tlv(0x30, _oid("1.2.840.10045.4.3.2")),
        _tlv(0x04, signature),
    )
    der = serialization.Encoding.DER
    certificates = _tlv(0xA0, leaf.public_bytes(der), intermediate.public_bytes(der)) if include_certificates else b""
    signed_data = _tlv(
        0x30, _integer(1), _tlv(0x31, sha256), _tlv(0x30, id_data), certificates, _tlv(0x31, signer_info)
    )
    return _tlv(0x30, _oid("1.2.840.113549.1.7.2"), _tlv(0xA0, signed_data))
