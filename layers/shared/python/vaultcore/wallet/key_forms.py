"""Wallet key material in the forms operators have (``PUT /admin/v1/accounts/{account_id}/wallet``).

Two roles, each a private key and its certificate: ``payment_processing`` (the P-256 key that decrypts
``EC_v1`` tokens) and ``merchant_identity`` (the client certificate of the wallet session call, RSA or EC).
For a role ``R`` the body may carry:

* ``R_private_key``: a PEM private key (SEC1 ``EC PRIVATE KEY``, what ``openssl ecparam -genkey`` writes;
  PKCS#8 ``PRIVATE KEY``; PKCS#1 ``RSA PRIVATE KEY``; PKCS#8 ``ENCRYPTED PRIVATE KEY`` or a legacy
  ``Proc-Type: 4,ENCRYPTED`` PEM with ``R_private_key_passphrase``), or base64 of the same key in DER;
* ``R_certificate``: a PEM certificate (a chain is kept in order, leaf first) or base64 of one DER certificate;
* or ``R_pkcs12``: base64 of a PKCS#12 bundle (``.p12``/``.pfx``) holding the key and its certificate, with
  ``R_pkcs12_passphrase`` (omit it, or send ``""``, for a bundle exported without a password). Not together
  with ``R_private_key`` or ``R_certificate``.

Everything is normalised to ONE form before it is KMS-wrapped: the key as an unencrypted PKCS#8 PEM (the
envelope is the protection at rest; the passphrase is used once and never stored), certificates as PEM.

Refusals are :class:`ValidationError` (HTTP 400) naming the field, with fixed texts: a message never quotes
the value, the parser's own exception is never chained or kept as context (the refusal is raised outside the
``except`` block), and nothing here logs.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from vaultcore.errors import ValidationError

__all__ = ["ROLES", "RoleMaterial", "read_role", "fields_given", "read_certificates", "MAX_PEM_CHARS",
           "MAX_PKCS12_CHARS", "MAX_PASSPHRASE_CHARS"]

ROLES = ("payment_processing", "merchant_identity")
MAX_PEM_CHARS = 16_384
MAX_PKCS12_CHARS = 65_536
MAX_PASSPHRASE_CHARS = 1_024
_B64_JUNK = re.compile(r"\s+")


@dataclass(frozen=True)
class RoleMaterial:
    """What the body gave for one role, normalised; ``None`` where the body gave nothing."""

    private_key_pem: str | None
    certificate_pem: str | None

    def __repr__(self) -> str:  # never print key material
        return "RoleMaterial(<redacted>)"


def _refuse(message: str) -> ValidationError:
    return ValidationError(message, code=400)


def _text(body: dict[str, Any], name: str, limit: int) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise _refuse(f"{name} must be a non-empty string of at most {limit} characters.")
    return value.strip()


def _passphrase(body: dict[str, Any], name: str, of: str, given: bool) -> bytes | None:
    value = body.get(name)
    if value is None:
        return None
    if not given:
        raise _refuse(f"{name} is given without {of}.")
    if not isinstance(value, str) or len(value) > MAX_PASSPHRASE_CHARS:
        raise _refuse(f"{name} must be a string of at most {MAX_PASSPHRASE_CHARS} characters.")
    return value.encode("utf-8")


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(_B64_JUNK.sub("", text), validate=True) or None
    except (binascii.Error, ValueError):
        return None


def fields_given(body: dict[str, Any], role: str) -> tuple[bool, bool]:
    """``(key given, certificate given)`` for ``role``, before any parsing (a bundle gives both)."""
    bundle = body.get(f"{role}_pkcs12") is not None
    return (bundle or body.get(f"{role}_private_key") is not None,
            bundle or body.get(f"{role}_certificate") is not None)


# ------------------------------------------------------------------------------------------- private keys


def _load_private_key(text: str, password: bytes | None, name: str) -> Any:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    if "-----BEGIN" in text:
        data: bytes | None = text.encode("ascii", "replace")
        loader = serialization.load_pem_private_key
    else:
        data = _b64(text)
        loader = serialization.load_der_private_key
    if data is None:
        raise _refuse(f"{name} must be a PEM private key (SEC1 or PKCS#8, optionally encrypted) "
                      "or base64 of its DER.")
    key, failure = None, ""
    try:
        key = loader(data, password=password)
    except TypeError:  # encrypted without a passphrase, or a passphrase for a clear key
        failure = "needs-passphrase" if password is None else "not-encrypted"
    except ValueError:
        failure = "unreadable" if password is None else "wrong-passphrase"
    except UnsupportedAlgorithm:
        failure = "unsupported"
    # Raised here, outside the except blocks: the refusal carries no parser exception as its context.
    if failure == "needs-passphrase":
        raise _refuse(f"{name} is encrypted: send its passphrase in {name}_passphrase.")
    if failure == "not-encrypted":
        raise _refuse(f"{name} is not encrypted: omit {name}_passphrase.")
    if failure == "wrong-passphrase":
        raise _refuse(f"{name} could not be decrypted with {name}_passphrase (wrong passphrase, or not a "
                      "readable private key).")
    if failure == "unreadable":
        raise _refuse(f"{name} is not a readable private key (PEM SEC1 or PKCS#8, or base64 of its DER).")
    if failure == "unsupported":
        raise _refuse(f"{name} uses an unsupported key type or encryption.")
    return key


def _check_key_type(key: Any, role: str, name: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if role == "payment_processing":
        if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
            raise _refuse(f"{name} must be an EC P-256 (prime256v1) key.")
    elif isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < 2048:
            raise _refuse(f"{name} must be an RSA key of at least 2048 bits or an EC key.")
    elif not isinstance(key, ec.EllipticCurvePrivateKey):
        raise _refuse(f"{name} must be an RSA or EC key.")


def _pkcs8_pem(key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode("ascii")


# ------------------------------------------------------------------------------------------- certificates


def read_certificates(text: str, name: str) -> list[Any]:
    """The certificates of ``text`` (PEM, one or more; or base64 of one DER certificate), in order."""
    from cryptography import x509

    certs: list[Any] = []
    if "-----BEGIN" in text:
        try:
            certs = x509.load_pem_x509_certificates(text.encode("ascii", "replace"))
        except ValueError:
            certs = []
    else:
        der = _b64(text)
        if der is not None:
            try:
                certs = [x509.load_der_x509_certificate(der)]
            except ValueError:
                certs = []
    if not certs:
        raise _refuse(f"{name} is not a readable certificate (PEM, or base64 of its DER).")
    return certs


def _pem_chain(certs: list[Any]) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)


def _spki(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


# ------------------------------------------------------------------------------------------------ PKCS#12


def _read_pkcs12(body: dict[str, Any], role: str) -> RoleMaterial:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import pkcs12

    name, pass_name = f"{role}_pkcs12", f"{role}_pkcs12_passphrase"
    for other in (f"{role}_private_key", f"{role}_certificate", f"{role}_private_key_passphrase"):
        if body.get(other) is not None:
            raise _refuse(f"Send either {name} or {role}_private_key and {role}_certificate, not both "
                          f"({other} is given).")
    text = _text(body, name, MAX_PKCS12_CHARS)
    assert text is not None
    password = _passphrase(body, pass_name, name, True)
    data = _b64(text)
    if data is None:
        raise _refuse(f"{name} must be base64 of a PKCS#12 (.p12/.pfx) file.")
    loaded, failure = None, ""
    try:
        loaded = pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        failure = "unreadable"
    except UnsupportedAlgorithm:
        failure = "unsupported"
    if failure == "unreadable":
        raise _refuse(f"{name} could not be opened with {pass_name} (wrong passphrase, or not a PKCS#12 file).")
    if failure == "unsupported":
        raise _refuse(f"{name} uses an unsupported encryption; export it again with AES-256 (OpenSSL 3 default).")
    assert loaded is not None
    key, cert, extra = loaded
    if key is None:
        raise _refuse(f"{name} holds no private key.")
    _check_key_type(key, role, name)
    own = _spki(key.public_key())
    matching = [c for c in ([cert] if cert is not None else []) + list(extra) if _spki(c.public_key()) == own]
    if not matching:
        raise _refuse(f"{name} holds no certificate for its private key.")
    return RoleMaterial(_pkcs8_pem(key), _pem_chain(matching[:1]))


# ------------------------------------------------------------------------------------------------- a role


def read_role(body: dict[str, Any], role: str) -> RoleMaterial:
    """The key and certificate ``body`` gives for ``role``, normalised (see the module docstring)."""
    if role not in ROLES:
        raise ValueError(role)
    if body.get(f"{role}_pkcs12") is not None:
        return _read_pkcs12(body, role)
    if body.get(f"{role}_pkcs12_passphrase") is not None:
        raise _refuse(f"{role}_pkcs12_passphrase is given without {role}_pkcs12.")
    key_name, cert_name = f"{role}_private_key", f"{role}_certificate"
    key_pem = cert_pem = None
    key_text = _text(body, key_name, MAX_PEM_CHARS)
    password = _passphrase(body, f"{key_name}_passphrase", key_name, key_text is not None)
    if key_text is not None:
        key = _load_private_key(key_text, password, key_name)
        _check_key_type(key, role, key_name)
        key_pem = _pkcs8_pem(key)
    cert_text = _text(body, cert_name, MAX_PEM_CHARS)
    if cert_text is not None:
        cert_pem = _pem_chain(read_certificates(cert_text, cert_name))
    return RoleMaterial(key_pem, cert_pem)
