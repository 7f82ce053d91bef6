"""Wallet payment token (Apple Pay ``EC_v1``) decryption and signature verification (pure).

Follows the wallet vendor's "Payment Token Format Reference" (PassKit, "Restoring the symmetric key" and
"Verifying the signature"). The token is the ``paymentData`` dictionary (``version``, ``data``,
``signature``, ``header``); the full wallet token ``{paymentData, paymentMethod, transactionIdentifier}``
is accepted too and unwrapped.

Decryption (:func:`decrypt_ec_v1`):

1. ``header.publicKeyHash`` must equal base64(SHA-256(DER SubjectPublicKeyInfo)) of the merchant's payment
   processing public key, so a token encrypted for another key is refused as ``key_mismatch`` instead of
   failing later as an unexplained tag mismatch.
2. Z = ECDH(merchant private key, ``header.ephemeralPublicKey``) on P-256 (the x coordinate, 32 bytes).
3. key = SHA-256(00000001 || Z || OtherInfo), the one-step (concatenation) KDF of NIST SP 800-56A rev.3
   §5.8.2.1 with one round of SHA-256 (the KDF itself is SP 800-56C), where OtherInfo is the concatenation
   format of §5.8.2.1.1: AlgorithmID = 0x0D || "id-aes256-GCM", PartyUInfo = "Apple", PartyVInfo =
   SHA-256(merchant identifier) (32 raw bytes). :func:`merchant_id_hash` reads PartyVInfo from the merchant
   certificate's extension 1.2.840.113635.100.6.32, whose value is a string of the 64 hex digits of that
   hash; without a certificate it hashes the merchant identifier string (UTF-8).
4. AES-256-GCM with a 16-byte zero IV, no AAD, the 16-byte tag appended to ``data``. A zero IV is safe here
   only because every key is fresh (one ephemeral key per token).

Signature verification (:func:`verify_signature`), RFC 5652 (CMS) detached ``SignedData``, BER as the wallet
sends it (indefinite lengths), parsed by the small reader below rather than a new dependency:

* signed content = ephemeralPublicKey (DER) || data || transactionId (hex-decoded) [|| applicationData
  (hex-decoded)] (:func:`signed_content`);
* the ``messageDigest`` signed attribute equals SHA-256 of that content (RFC 5652 §11.2), the ``contentType``
  attribute is id-data (§11.1), and the ECDSA-SHA256 signature covers the DER of the signed attributes with
  the SET OF tag (§5.4);
* the signer certificate chains, by signature and validity at ``now``, to one of the trust roots the operator
  configures (the wallet vendor's root is published; a pinned intermediate is accepted as an anchor too).
  With ``check_apple_oids`` the leaf carries 1.2.840.113635.100.6.29 and the certificate that issued it
  1.2.840.113635.100.6.2.14 (their values do not matter, only their presence);
* the ``signingTime`` attribute (§11.3) lies within ``max_age`` of ``now`` either way (default 5 minutes):
  an older token may be a replay.

Errors are :class:`WalletTokenError` (``ValueError``) subclasses with a stable ``reason``: ``bad_format``,
``unsupported_version``, ``key_mismatch``, ``decrypt_failed``, ``signature_invalid``, ``chain_invalid``,
``signing_time_out_of_window``. Signature refusals also carry a stable ``detail`` saying why (the service maps
it to the public message of its 707/708/709 code, :data:`vaultcore.wallet.errors.SIGNATURE_REFUSALS`):

* ``signature_invalid``: ``cms_malformed``, ``algorithm``, ``attributes_missing``, ``signing_time_missing``,
  ``signing_time_invalid``, ``signer_missing``, ``digest_mismatch``, ``signer_key_type``,
  ``signature_mismatch``;
* ``chain_invalid``: ``unknown_root``, ``certificate_signature`` (an issuer with the certificate's issuer name
  and key identifier is there, but the certificate's signature does not verify with its key: an altered
  certificate), ``chain_too_long``, ``signer_expired``, ``signer_not_yet_valid``, ``issuer_expired``,
  ``issuer_not_yet_valid``, ``critical_extension``, ``signer_key_usage``, ``issuer_not_ca``, ``path_length``,
  ``issuer_key_usage``, ``leaf_marker``, ``intermediate_marker``, ``trust_root_unreadable``,
  ``no_trust_root``;
* ``signing_time_out_of_window``: ``signing_time_too_old``, ``signing_time_in_future``.

Other errors' ``detail`` is their ``reason``. Messages never include decrypted data or key material, and
errors raised after decryption carry no chained exception (a ``JSONDecodeError`` holds the whole plaintext
in ``.doc``). Programming errors (a naive ``now``, a negative window) are plain ``ValueError``.

``RSA_v1`` tokens are refused as ``unsupported_version``: there is no known-answer vector for them, and the
wrapped-key unwrap (``RSA/ECB/OAEPWithSHA256AndMGF1Padding``: the MGF1 hash is ambiguous in Java naming)
would ship unverified.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from cryptography import x509
from cryptography.exceptions import InvalidSignature, InvalidTag, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "EC_V1",
    "OID_LEAF_MARKER",
    "OID_INTERMEDIATE_MARKER",
    "OID_MERCHANT_ID",
    "DEFAULT_SIGNING_WINDOW",
    "KDF_ALGORITHM_ID",
    "KDF_PARTY_U",
    "WalletTokenError",
    "TokenFormatError",
    "UnsupportedVersionError",
    "KeyMismatchError",
    "DecryptFailedError",
    "SignatureInvalidError",
    "ChainInvalidError",
    "SigningTimeError",
    "SignatureInfo",
    "decrypt_ec_v1",
    "verify_signature",
    "signed_content",
    "merchant_id_hash",
    "public_key_hash",
    "ec_v1_other_info",
    "ec_v1_derive_key",
    "aes_gcm_decrypt",
]

EC_V1 = "EC_v1"
OID_LEAF_MARKER = "1.2.840.113635.100.6.29"
OID_INTERMEDIATE_MARKER = "1.2.840.113635.100.6.2.14"
OID_MERCHANT_ID = "1.2.840.113635.100.6.32"
DEFAULT_SIGNING_WINDOW = timedelta(minutes=5)

KDF_ALGORITHM_ID = b"\x0did-aes256-GCM"  # length-prefixed text, as the format reference spells it
KDF_PARTY_U = b"Apple"
_GCM_IV = bytes(16)
_GCM_TAG_LEN = 16

_OID_SIGNED_DATA = "1.2.840.113549.1.7.2"
_OID_DATA = "1.2.840.113549.1.7.1"
_OID_CONTENT_TYPE = "1.2.840.113549.1.9.3"
_OID_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
_OID_SIGNING_TIME = "1.2.840.113549.1.9.5"
_OID_SHA256 = "2.16.840.1.101.3.4.2.1"
_OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"
_MAX_CHAIN = 5


# --------------------------------------------------------------------------------------------- errors


class WalletTokenError(ValueError):
    """A wallet token was refused. ``reason`` (the class) and ``detail`` (why, within the reason) are stable, for
    mapping and metrics; the message is safe to log."""

    reason = "bad_format"

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or self.reason


class TokenFormatError(WalletTokenError):
    reason = "bad_format"


class UnsupportedVersionError(WalletTokenError):
    reason = "unsupported_version"


class KeyMismatchError(WalletTokenError):
    """The token is not for this merchant key, or the merchant key material is unusable or inconsistent."""

    reason = "key_mismatch"


class DecryptFailedError(WalletTokenError):
    reason = "decrypt_failed"


class SignatureInvalidError(WalletTokenError):
    reason = "signature_invalid"


class ChainInvalidError(WalletTokenError):
    reason = "chain_invalid"


class SigningTimeError(WalletTokenError):
    reason = "signing_time_out_of_window"


@dataclass(frozen=True)
class SignatureInfo:
    """What a successful :func:`verify_signature` established."""

    signing_time: datetime
    signer_subject: str


# ------------------------------------------------------------------------------------ token fields


def _payment_data(token: Any) -> dict[str, Any]:
    if not isinstance(token, Mapping):
        raise TokenFormatError("token must be a JSON object")
    inner = token.get("paymentData")
    if inner is not None:  # the full wallet token: its paymentData is what is encrypted and signed
        token = inner
    if not isinstance(token, Mapping) or not isinstance(token.get("header"), Mapping):
        raise TokenFormatError("token has no header object")
    return dict(token)


def _require_version(payment_data: Mapping[str, Any]) -> None:
    version = payment_data.get("version")
    if not isinstance(version, str):
        raise TokenFormatError("token version missing")
    if version != EC_V1:
        raise UnsupportedVersionError(f"unsupported token version {version[:16]!r}")


def _b64_field(obj: Mapping[str, Any], name: str) -> bytes:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise TokenFormatError(f"{name} missing")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise TokenFormatError(f"{name} is not base64") from None


def _hex_field(obj: Mapping[str, Any], name: str, *, required: bool = True) -> bytes:
    value = obj.get(name)
    if value is None and not required:
        return b""
    if not isinstance(value, str) or (required and not value):
        raise TokenFormatError(f"{name} missing")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise TokenFormatError(f"{name} is not hex") from None


def signed_content(token: Mapping[str, Any]) -> bytes:
    """The bytes the CMS signature covers: ephemeralPublicKey || data || transactionId [|| applicationData]."""
    payment_data = _payment_data(token)
    header = payment_data["header"]
    return (
        _b64_field(header, "ephemeralPublicKey")
        + _b64_field(payment_data, "data")
        + _hex_field(header, "transactionId")
        + _hex_field(header, "applicationData", required=False)
    )


# ------------------------------------------------------------------------------------ key material


def _as_bytes(pem: bytes | str) -> bytes:
    return pem.encode("ascii") if isinstance(pem, str) else pem


def _spki(public_key: Any) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def public_key_hash(public_key_or_certificate_pem: Any) -> str:
    """base64(SHA-256(DER SubjectPublicKeyInfo)): the ``header.publicKeyHash`` a token for this key carries."""
    key = public_key_or_certificate_pem
    if isinstance(key, bytes | str):
        key = _load_certificate(key, KeyMismatchError).public_key()
    elif isinstance(key, x509.Certificate):
        key = key.public_key()
    return base64.b64encode(hashlib.sha256(_spki(key)).digest()).decode("ascii")


def _load_certificate(pem: bytes | str, error: type[WalletTokenError]) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(_as_bytes(pem))
    except (ValueError, TypeError):
        raise error("certificate is not a readable PEM certificate") from None


def _load_ec_private_key(pem: bytes | str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(_as_bytes(pem), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # Never chain: a parser error about a private key is not something to log.
        raise KeyMismatchError("merchant private key is not a readable unencrypted PEM key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise KeyMismatchError("merchant private key is not a P-256 key")
    return key


def _merchant_id_from_certificate(cert: x509.Certificate) -> bytes | None:
    try:
        ext = cert.extensions.get_extension_for_oid(x509.ObjectIdentifier(OID_MERCHANT_ID))
    except x509.ExtensionNotFound:
        return None
    raw = ext.value.value if isinstance(ext.value, x509.UnrecognizedExtension) else b""
    try:
        tlv = _parse_one(raw)
        # Seen as UTF8String; IA5/Printable/OCTET STRING accepted since only the 64 hex digits matter.
        if tlv.tag not in (0x0C, 0x16, 0x13, 0x04):
            raise _Asn1Error
        text = tlv.value.decode("ascii")
        if len(text) != 64:
            raise _Asn1Error
        return bytes.fromhex(text)
    except (_Asn1Error, UnicodeDecodeError, ValueError):
        raise KeyMismatchError("merchant certificate has a malformed merchant identifier extension") from None


def _merchant_id_hash(cert: x509.Certificate | None, merchant_identifier: str | None) -> bytes:
    from_cert = _merchant_id_from_certificate(cert) if cert is not None else None
    from_id = hashlib.sha256(merchant_identifier.encode("utf-8")).digest() if merchant_identifier else None
    if from_cert is not None and from_id is not None and not hmac.compare_digest(from_cert, from_id):
        # Both configured and disagreeing is a configuration error worth naming, not a decrypt failure.
        raise KeyMismatchError("merchant identifier does not match the merchant certificate")
    result = from_cert if from_cert is not None else from_id
    if result is None:
        raise KeyMismatchError("merchant identifier unavailable (no certificate extension, no identifier)")
    return result


def merchant_id_hash(
    *, merchant_certificate_pem: bytes | str | None = None, merchant_identifier: str | None = None
) -> bytes:
    """PartyVInfo: SHA-256 of the merchant identifier, from the certificate extension 1.2.840.113635.100.6.32
    (the hex of that hash) when a certificate is given, else hashed from ``merchant_identifier``.

    >>> merchant_id_hash(merchant_identifier="merchant.com.seatgeek.SeatGeek").hex().upper()[:16]
    'F938F4658CA2C1C9'
    """
    cert = _load_certificate(merchant_certificate_pem, KeyMismatchError) if merchant_certificate_pem else None
    return _merchant_id_hash(cert, merchant_identifier)


# -------------------------------------------------------------------------------------- KDF and GCM


def ec_v1_other_info(party_v_info: bytes) -> bytes:
    """OtherInfo in the concatenation format (NIST SP 800-56A rev.3 §5.8.2.1.1): AlgorithmID || PartyU || PartyV."""
    if len(party_v_info) != 32:
        raise ValueError("party V info must be the 32-byte SHA-256 of the merchant identifier")
    return KDF_ALGORITHM_ID + KDF_PARTY_U + party_v_info


def ec_v1_derive_key(shared_secret: bytes, party_v_info: bytes) -> bytes:
    """One-step KDF (NIST SP 800-56A rev.3 §5.8.2.1, SHA-256): one round gives the 256-bit AES key.

    Only one round is needed (keydatalen = 256 = the hash length), so the counter is always 00000001.
    """
    if not shared_secret:
        raise ValueError("shared secret is empty")
    return hashlib.sha256(b"\x00\x00\x00\x01" + shared_secret + ec_v1_other_info(party_v_info)).digest()


def aes_gcm_decrypt(key: bytes, data: bytes) -> bytes:
    """AES-GCM with a 16-byte zero IV and no AAD; ``data`` is ciphertext || 16-byte tag."""
    if len(data) < _GCM_TAG_LEN:
        raise TokenFormatError("data is shorter than the GCM tag")
    try:
        return AESGCM(key).decrypt(_GCM_IV, data, None)
    except InvalidTag:
        raise DecryptFailedError("authentication tag mismatch (wrong key or tampered data)") from None


def _parse_plaintext(plaintext: bytes) -> dict[str, Any]:
    # Decide inside the try, raise outside it: the refusal must not carry the parser's exception as
    # __context__ (JSONDecodeError.doc and UnicodeDecodeError.object hold the clear payment data).
    parsed: Any = None
    ok = True
    try:
        parsed = json.loads(plaintext.decode("utf-8"))
    except ValueError:
        ok = False
    if not ok or not isinstance(parsed, dict):
        raise DecryptFailedError("decrypted payload is not a JSON object")
    return parsed


def decrypt_ec_v1(
    token: Mapping[str, Any],
    merchant_private_key_pem: bytes | str,
    merchant_identifier: str | None = None,
    merchant_certificate_pem: bytes | str | None = None,
) -> dict[str, Any]:
    """Decrypt an ``EC_v1`` token into its payment data dictionary.

    Returns the decrypted JSON object (applicationPrimaryAccountNumber, applicationExpirationDate,
    currencyCode, transactionAmount, deviceManufacturerIdentifier, paymentDataType, paymentData with
    onlinePaymentCryptogram / eciIndicator, ...). This does not verify the signature: call
    :func:`verify_signature` first.
    """
    payment_data = _payment_data(token)
    _require_version(payment_data)
    header = payment_data["header"]
    data = _b64_field(payment_data, "data")
    ephemeral_der = _b64_field(header, "ephemeralPublicKey")
    key_hash = _b64_field(header, "publicKeyHash")

    private_key = _load_ec_private_key(merchant_private_key_pem)
    own_spki = _spki(private_key.public_key())
    cert = None
    if merchant_certificate_pem:
        cert = _load_certificate(merchant_certificate_pem, KeyMismatchError)
        if _spki(cert.public_key()) != own_spki:
            raise KeyMismatchError("merchant private key does not belong to the merchant certificate")
    # The hash of the certificate's SPKI equals the hash of the private key's public half (same DER), so
    # this check holds even when only the private key is configured.
    if not hmac.compare_digest(key_hash, hashlib.sha256(own_spki).digest()):
        raise KeyMismatchError("header.publicKeyHash does not match the merchant certificate")
    party_v = _merchant_id_hash(cert, merchant_identifier)

    try:
        ephemeral = serialization.load_der_public_key(ephemeral_der)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise TokenFormatError("ephemeralPublicKey is not a public key") from None
    if not isinstance(ephemeral, ec.EllipticCurvePublicKey) or not isinstance(ephemeral.curve, ec.SECP256R1):
        raise TokenFormatError("ephemeralPublicKey is not a P-256 key")
    shared_secret = private_key.exchange(ec.ECDH(), ephemeral)
    return _parse_plaintext(aes_gcm_decrypt(ec_v1_derive_key(shared_secret, party_v), data))


# ---------------------------------------------------------------- minimal BER/DER reader (X.690)


class _Asn1Error(Exception):
    pass


class _Tlv(NamedTuple):
    tag: int  # the identifier octet (low tag numbers only: enough for CMS and X.509)
    value: bytes  # the contents octets; for indefinite lengths, the encodings of the children
    raw: bytes  # the whole encoding


_MAX_DEPTH = 32


def _read(buf: bytes, pos: int, depth: int = 0) -> tuple[_Tlv, int]:
    if depth > _MAX_DEPTH or pos + 2 > len(buf):
        raise _Asn1Error
    start, tag, first = pos, buf[pos], buf[pos + 1]
    pos += 2
    if tag & 0x1F == 0x1F:
        raise _Asn1Error
    if first == 0x80:  # BER indefinite length: constructed only, children up to end-of-contents 00 00
        if not tag & 0x20:
            raise _Asn1Error
        body = pos
        while buf[pos : pos + 2] != b"\x00\x00":
            _, pos = _read(buf, pos, depth + 1)
        return _Tlv(tag, buf[body:pos], buf[start : pos + 2]), pos + 2
    if first & 0x80:
        count = first & 0x7F
        if not 1 <= count <= 4 or pos + count > len(buf):
            raise _Asn1Error
        length = int.from_bytes(buf[pos : pos + count], "big")
        pos += count
    else:
        length = first
    end = pos + length
    if end > len(buf):
        raise _Asn1Error
    return _Tlv(tag, buf[pos:end], buf[start:end]), end


def _parse_one(buf: bytes) -> _Tlv:
    tlv, end = _read(buf, 0)
    if end != len(buf):
        raise _Asn1Error
    return tlv


def _children(tlv: _Tlv) -> list[_Tlv]:
    if not tlv.tag & 0x20:
        raise _Asn1Error
    out, pos = [], 0
    while pos < len(tlv.value):
        child, pos = _read(tlv.value, pos)
        if child.tag == 0:
            raise _Asn1Error
        out.append(child)
    return out


def _expect(tlv: _Tlv, tag: int) -> _Tlv:
    if tlv.tag != tag:
        raise _Asn1Error
    return tlv


def _oid(tlv: _Tlv) -> str:
    data = _expect(tlv, 0x06).value
    if not data or data[-1] & 0x80:
        raise _Asn1Error
    arcs, acc = [], 0
    for byte in data:
        acc = (acc << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(acc)
            acc = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(str(a) for a in [first, arcs[0] - 40 * first, *arcs[1:]])


def _integer(tlv: _Tlv) -> int:
    if not _expect(tlv, 0x02).value:
        raise _Asn1Error
    return int.from_bytes(tlv.value, "big", signed=True)


_UTC_TIME = re.compile(rb"(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?Z")
_GENERALIZED_TIME = re.compile(rb"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.\d+)?Z")


def _time(tlv: _Tlv) -> datetime:
    """UTCTime (years 50-99 are 19xx, RFC 5280 §4.1.2.5.1) or GeneralizedTime, in UTC ("Z") only."""
    pattern = _UTC_TIME if tlv.tag == 0x17 else _GENERALIZED_TIME if tlv.tag == 0x18 else None
    found = pattern.fullmatch(tlv.value) if pattern else None
    if not found:
        raise _Asn1Error
    parts = [int(p) if p else 0 for p in found.groups()]
    if tlv.tag == 0x17:
        parts[0] += 1900 if parts[0] >= 50 else 2000
    try:
        year, month, day, hour, minute, second = parts
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise _Asn1Error from None


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    size = (length.bit_length() + 7) // 8
    return bytes([0x80 | size]) + length.to_bytes(size, "big")


def _algorithm(tlv: _Tlv) -> str:
    return _oid(_children(_expect(tlv, 0x30))[0])


# ------------------------------------------------------------------------------ CMS SignedData


@dataclass(frozen=True)
class _SignerInfo:
    certificates: list[x509.Certificate]
    sid_issuer: bytes | None
    sid_serial: int | None
    sid_key_id: bytes | None
    signed_attrs_der: bytes
    message_digest: bytes
    signing_time: datetime
    signature: bytes


def _parse_signed_data(blob: bytes) -> _SignerInfo:
    """RFC 5652 §5: ContentInfo{signedData} -> the single SignerInfo, its attributes and the certificates."""
    content_info = _children(_expect(_parse_one(blob), 0x30))
    if _oid(content_info[0]) != _OID_SIGNED_DATA:
        raise _Asn1Error
    signed_data = _children(_expect(_children(_expect(content_info[1], 0xA0))[0], 0x30))
    # version, digestAlgorithms, encapContentInfo, [0] certificates?, [1] crls?, signerInfos
    encap = _children(_expect(signed_data[2], 0x30))
    if _oid(encap[0]) != _OID_DATA:
        raise _Asn1Error
    certificates: list[x509.Certificate] = []
    for item in signed_data[3:-1]:
        if item.tag == 0xA0:
            for cert in _children(item):
                if cert.tag == 0x30:  # other CertificateChoices (attribute certificates) play no part
                    certificates.append(x509.load_der_x509_certificate(cert.raw))
        elif item.tag != 0xA1:
            raise _Asn1Error
    signer_infos = _children(_expect(signed_data[-1], 0x31))
    if len(signer_infos) != 1:  # the wallet signs once; several signers would need a policy we do not have
        raise _Asn1Error
    fields = _children(_expect(signer_infos[0], 0x30))
    sid, digest_alg, signed_attrs, sig_alg, signature = fields[1:6]
    if _algorithm(digest_alg) != _OID_SHA256 or _algorithm(sig_alg) != _OID_ECDSA_SHA256:
        raise SignatureInvalidError("signature algorithm is not ECDSA with SHA-256", "algorithm")
    issuer = serial = key_id = None
    if sid.tag == 0x30:
        issuer_tlv, serial_tlv = _children(sid)
        issuer, serial = _expect(issuer_tlv, 0x30).raw, _integer(serial_tlv)
    else:
        key_id = _expect(sid, 0x80).value

    attributes: dict[str, _Tlv] = {}
    for attr in _children(_expect(signed_attrs, 0xA0)):
        attr_type, values = _children(_expect(attr, 0x30))
        oid, value_list = _oid(attr_type), _children(_expect(values, 0x31))
        if oid in attributes or len(value_list) != 1:  # RFC 5652 §11: single-valued, not repeated
            raise _Asn1Error
        attributes[oid] = value_list[0]
    if any(oid not in attributes for oid in (_OID_CONTENT_TYPE, _OID_MESSAGE_DIGEST)):
        raise SignatureInvalidError("signature lacks a contentType or messageDigest attribute", "attributes_missing")
    if _OID_SIGNING_TIME not in attributes:
        raise SignatureInvalidError("signature lacks a signingTime attribute", "signing_time_missing")
    if _oid(attributes[_OID_CONTENT_TYPE]) != _OID_DATA:
        raise _Asn1Error
    try:
        signing_time = _time(attributes[_OID_SIGNING_TIME])
    except _Asn1Error:
        raise SignatureInvalidError("signingTime attribute is not a valid time", "signing_time_invalid") from None
    # §5.4: the signature covers the DER of the attributes with the EXPLICIT SET OF tag, not the [0] tag.
    return _SignerInfo(
        certificates=certificates,
        sid_issuer=issuer,
        sid_serial=serial,
        sid_key_id=key_id,
        signed_attrs_der=b"\x31" + _der_length(len(signed_attrs.value)) + signed_attrs.value,
        message_digest=_expect(attributes[_OID_MESSAGE_DIGEST], 0x04).value,
        signing_time=signing_time,
        signature=_expect(signature, 0x04).value,
    )


def _issuer_der(cert: x509.Certificate) -> bytes:
    """The issuer Name exactly as encoded in the certificate (TBSCertificate field 4, RFC 5280 §4.1)."""
    tbs = _children(_parse_one(cert.tbs_certificate_bytes))
    offset = 1 if tbs[0].tag == 0xA0 else 0  # optional [0] version
    return tbs[offset + 2].raw


def _find_signer(info: _SignerInfo) -> x509.Certificate:
    for cert in info.certificates:
        if info.sid_key_id is not None:
            try:
                ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
            except x509.ExtensionNotFound:
                continue
            if ski == info.sid_key_id:
                return cert
        elif cert.serial_number == info.sid_serial and _issuer_der(cert) == info.sid_issuer:
            return cert
    raise SignatureInvalidError("signer certificate not included in the signature", "signer_missing")


# ------------------------------------------------------------------------------------ chain checks

_KNOWN_CRITICAL = {
    x509.oid.ExtensionOID.BASIC_CONSTRAINTS,
    x509.oid.ExtensionOID.KEY_USAGE,
    x509.oid.ExtensionOID.EXTENDED_KEY_USAGE,
    x509.oid.ExtensionOID.CERTIFICATE_POLICIES,
    x509.oid.ExtensionOID.SUBJECT_ALTERNATIVE_NAME,
    x509.oid.ExtensionOID.NAME_CONSTRAINTS,
    x509.oid.ExtensionOID.POLICY_CONSTRAINTS,
    x509.oid.ExtensionOID.INHIBIT_ANY_POLICY,
}


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)  # issuer name match and signature
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    return True


def _build_path(
    leaf: x509.Certificate, pool: list[x509.Certificate], anchors: list[x509.Certificate]
) -> list[x509.Certificate]:
    """leaf -> ... -> anchor. Anchors are tried first at every step, so a look-alike root carried in the
    signature never replaces the configured one; an anchor may be a pinned intermediate."""
    anchor_der = {a.public_bytes(serialization.Encoding.DER) for a in anchors}
    path = [leaf]
    while len(path) <= _MAX_CHAIN:
        current = path[-1]
        if current.public_bytes(serialization.Encoding.DER) in anchor_der:
            return path
        issuer = next((a for a in anchors if _issued_by(current, a)), None)
        if issuer is not None:
            return [*path, issuer]
        issuer = next((c for c in pool if c not in path and _issued_by(current, c)), None)
        if issuer is None:
            if any(_names_issuer(current, c) for c in [*anchors, *pool]):
                raise ChainInvalidError("a certificate's signature does not verify with its issuer's key",
                                        "certificate_signature")
            raise ChainInvalidError("signer certificate does not chain to a configured trust root", "unknown_root")
        path.append(issuer)
    raise ChainInvalidError("certificate chain too long", "chain_too_long")


def _key_identifier(cert: x509.Certificate, cls: type[Any]) -> bytes | None:
    value = _extension(cert.extensions, cls)
    if value is None:
        return None
    return value.digest if cls is x509.SubjectKeyIdentifier else value.key_identifier


def _names_issuer(cert: x509.Certificate, candidate: x509.Certificate) -> bool:
    """``candidate`` is, by name and key identifier, the issuer of ``cert`` (so a signature that does not verify
    means an altered certificate, not an unknown root: a look-alike root has the name but another key)."""
    if cert.issuer != candidate.subject or cert == candidate:
        return False
    authority = _key_identifier(cert, x509.AuthorityKeyIdentifier)
    subject = _key_identifier(candidate, x509.SubjectKeyIdentifier)
    return authority is not None and subject is not None and hmac.compare_digest(authority, subject)


def _check_path(path: list[x509.Certificate], now: datetime, check_apple_oids: bool) -> None:
    for index, cert in enumerate(path):
        role = "signer" if index == 0 else "issuer"
        if now > cert.not_valid_after_utc:
            raise ChainInvalidError(f"the {role} certificate has expired (outside its validity period)",
                                    f"{role}_expired")
        if now < cert.not_valid_before_utc:
            raise ChainInvalidError(f"the {role} certificate is not yet valid (outside its validity period)",
                                    f"{role}_not_yet_valid")
        extensions = cert.extensions
        for ext in extensions:
            if ext.critical and ext.oid not in _KNOWN_CRITICAL:  # RFC 5280 §4.2: refuse what we cannot process
                raise ChainInvalidError("a certificate in the chain has an unknown critical extension",
                                        "critical_extension")
        key_usage = _extension(extensions, x509.KeyUsage)
        if index == 0:
            if key_usage is not None and not key_usage.digital_signature:
                raise ChainInvalidError("signer certificate is not for digital signatures", "signer_key_usage")
            continue
        constraints = _extension(extensions, x509.BasicConstraints)
        if constraints is None or not constraints.ca:
            raise ChainInvalidError("an issuing certificate is not a CA", "issuer_not_ca")
        if constraints.path_length is not None and constraints.path_length < index - 1:
            raise ChainInvalidError("an issuing certificate's path length constraint is exceeded", "path_length")
        if key_usage is not None and not key_usage.key_cert_sign:
            raise ChainInvalidError("an issuing certificate may not sign certificates", "issuer_key_usage")
    if check_apple_oids:
        if not _has_extension(path[0], OID_LEAF_MARKER):
            raise ChainInvalidError("signer certificate lacks the wallet leaf marker OID", "leaf_marker")
        if len(path) < 2 or not _has_extension(path[1], OID_INTERMEDIATE_MARKER):
            raise ChainInvalidError("intermediate certificate lacks the wallet intermediate marker OID",
                                    "intermediate_marker")


def _extension(extensions: x509.Extensions, cls: type[Any]) -> Any:
    try:
        return extensions.get_extension_for_class(cls).value
    except x509.ExtensionNotFound:
        return None


def _has_extension(cert: x509.Certificate, oid: str) -> bool:
    return any(ext.oid.dotted_string == oid for ext in cert.extensions)


def _load_trust_roots(trust_roots_pem: Iterable[bytes | str]) -> list[x509.Certificate]:
    roots: list[x509.Certificate] = []
    for pem in trust_roots_pem:
        try:
            roots.extend(x509.load_pem_x509_certificates(_as_bytes(pem)))
        except (ValueError, TypeError):
            raise ChainInvalidError("a configured trust root is not a readable PEM certificate",
                                    "trust_root_unreadable") from None
    if not roots:
        raise ChainInvalidError("no trust root configured", "no_trust_root")
    return roots


def verify_signature(
    token: Mapping[str, Any],
    trust_roots_pem: Iterable[bytes | str],
    now: datetime,
    max_age: timedelta = DEFAULT_SIGNING_WINDOW,
    check_apple_oids: bool = True,
) -> SignatureInfo:
    """Verify the token's CMS detached signature (RFC 5652) as the Payment Token Format Reference asks.

    Order: the signature itself (digest and ECDSA), then the chain at ``now``, then the signing time, so
    each refusal names the first thing that failed. ``now`` must be timezone-aware (tests inject it; the
    vendor's sample tokens are years old). Each trust root may be a PEM bundle.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    if max_age < timedelta(0):
        raise ValueError("max_age must not be negative")
    payment_data = _payment_data(token)
    _require_version(payment_data)
    content = signed_content(payment_data)
    blob = _b64_field(payment_data, "signature")
    anchors = _load_trust_roots(trust_roots_pem)

    try:
        info = _parse_signed_data(blob)
    except (_Asn1Error, ValueError, IndexError) as exc:
        if isinstance(exc, WalletTokenError):
            raise
        raise SignatureInvalidError("signature is not a well-formed CMS SignedData", "cms_malformed") from None
    signer = _find_signer(info)
    if not hmac.compare_digest(info.message_digest, hashlib.sha256(content).digest()):
        raise SignatureInvalidError("message digest does not match the signed token fields", "digest_mismatch")
    signer_key = signer.public_key()
    if not isinstance(signer_key, ec.EllipticCurvePublicKey):
        raise SignatureInvalidError("signer certificate does not hold an EC key", "signer_key_type")
    try:
        signer_key.verify(info.signature, info.signed_attrs_der, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise SignatureInvalidError("signature does not verify with the signer certificate",
                                    "signature_mismatch") from None

    path = _build_path(signer, info.certificates, anchors)
    _check_path(path, now.astimezone(UTC), check_apple_oids)

    if abs(now - info.signing_time) > max_age:
        raise SigningTimeError(
            f"signing time {info.signing_time.isoformat()} is more than {int(max_age.total_seconds())}s from now",
            "signing_time_in_future" if info.signing_time > now else "signing_time_too_old",
        )
    return SignatureInfo(signing_time=info.signing_time, signer_subject=signer.subject.rfc4514_string())
