"""bfid: the opaque, integrity-protected identifier of one tokenization.

Binary layout (version 1), then URL-safe base64 without padding (RFC 4648 section 5)::

    "v1"              2 bytes  format version (a new layout gets a new version)
    key_version       2 bytes  unsigned big-endian, 1..65535: which partner tokenization key (rotation)
    issued_at         5 bytes  unsigned big-endian unix seconds (start of the active windows and read window)
    nonce            16 bytes  random (128 bits): makes every bfid unique and unguessable
    len(partner_id)   1 byte,  partner_id   UTF-8
    len(template_ref) 1 byte,  template_ref UTF-8
    tag              16 bytes  HMAC-SHA256(mac_key, all bytes above), first 16 bytes (128-bit tag)

Fixed part: 43 bytes, so a bfid is at least 60 characters; the wire limit of 150 characters (the spec's token
parameter table) leaves 69 bytes for partner id and template reference together; :func:`new_bfid` refuses more.

Verification order (:func:`parse_bfid`): length and alphabet, canonical base64 (so no two strings decode to the
same bytes), version, tag (``hmac.compare_digest``), then the fields. A forged, altered or truncated bfid, or one
made for another partner (another MAC key), is refused before any table lookup or decryption. The only step
allowed earlier is :func:`peek_bfid_unverified`, which reads partner id and key version to load the MAC key.

Keys: the partner's versioned tokenization key is a master key; :func:`derive_subkeys` derives from it, with
HKDF-SHA256 (RFC 5869) and distinct labels, the FF1 key (AES-256) and the bfid MAC key, so no key serves two
algorithms.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

__all__ = [
    "BfidError",
    "BfidInfo",
    "BFID_MIN_LENGTH",
    "BFID_MAX_LENGTH",
    "new_bfid",
    "parse_bfid",
    "peek_bfid_unverified",
    "derive_subkeys",
    "hkdf_sha256",
]

BFID_MIN_LENGTH = 30
BFID_MAX_LENGTH = 150
_VERSION = b"v1"
_NONCE = 16
_TAG = 16
_FIXED = len(_VERSION) + 2 + 5 + _NONCE + 1 + 1 + _TAG  # 43
_MAX_IDS = (BFID_MAX_LENGTH * 6) // 8 - _FIXED  # 69 bytes of partner id + template ref
_B64URL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_HKDF_SALT = b"vaultcore/tokens/hkdf-salt/v1"
_INFO_FF1 = b"vaultcore/tokens/ff1-aes-256/v1"
_INFO_MAC = b"vaultcore/tokens/bfid-hmac-sha256/v1"


class BfidError(ValueError):
    """The bfid is malformed, forged, altered or not this partner's. Messages never echo the bfid."""


@dataclass(frozen=True)
class BfidInfo:
    partner_id: str
    key_version: int
    template_ref: str
    nonce: bytes
    issued_at: int


def hkdf_sha256(ikm: bytes, info: bytes, length: int = 32, salt: bytes = _HKDF_SALT) -> bytes:
    """HKDF-SHA256 (RFC 5869): extract with ``salt``, expand with ``info`` to ``length`` bytes (<= 8160)."""
    if length > 255 * 32:
        raise ValueError("HKDF-SHA256 output is limited to 8160 bytes")
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes((counter,)), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def derive_subkeys(master: bytes) -> tuple[bytes, bytes]:
    """(FF1 AES-256 key, bfid HMAC-SHA256 key) from one partner tokenization key of 32 bytes or more."""
    if not isinstance(master, bytes | bytearray) or len(master) < 32:
        raise ValueError("partner tokenization key must be at least 32 bytes")
    master = bytes(master)
    return hkdf_sha256(master, _INFO_FF1), hkdf_sha256(master, _INFO_MAC)


def _check_mac_key(mac_key: bytes) -> None:
    if not isinstance(mac_key, bytes | bytearray) or len(mac_key) < 16:
        raise ValueError("bfid MAC key must be at least 16 bytes")


def _tag(mac_key: bytes, payload: bytes) -> bytes:
    return hmac.new(bytes(mac_key), payload, hashlib.sha256).digest()[:_TAG]


def _id_bytes(value: str, label: str) -> bytes:
    if not isinstance(value, str) or not value or not value.isprintable():
        raise BfidError(f"{label} must be a non-empty printable string")
    raw = value.encode()
    if len(raw) > 255:
        raise BfidError(f"{label} is too long for a bfid")
    return raw


def new_bfid(
    mac_key: bytes,
    key_version: int,
    template_ref: str,
    partner_id: str,
    *,
    issued_at: int | None = None,
    nonce: bytes | None = None,
) -> str:
    """A new bfid (module docstring layout). ``issued_at`` defaults to now; ``nonce`` to 16 random bytes
    (both exist as parameters for tests: production callers leave them alone)."""
    _check_mac_key(mac_key)
    if not isinstance(key_version, int) or isinstance(key_version, bool) or not 1 <= key_version <= 0xFFFF:
        raise BfidError("key version must be an integer from 1 to 65535")
    ts = int(time.time()) if issued_at is None else issued_at
    if not isinstance(ts, int) or not 0 <= ts < 1 << 40:
        raise BfidError("issued_at must be unix seconds from 0 to 2**40 - 1")
    nonce = secrets.token_bytes(_NONCE) if nonce is None else nonce
    if not isinstance(nonce, bytes) or len(nonce) != _NONCE:
        raise BfidError("nonce must be 16 bytes")
    partner, template = _id_bytes(partner_id, "partner id"), _id_bytes(template_ref, "template reference")
    if len(partner) + len(template) > _MAX_IDS:
        raise BfidError(
            f"partner id and template reference take {len(partner) + len(template)} bytes together; "
            f"at most {_MAX_IDS} fit in a bfid of {BFID_MAX_LENGTH} characters"
        )
    payload = b"".join(
        (
            _VERSION,
            key_version.to_bytes(2, "big"),
            ts.to_bytes(5, "big"),
            nonce,
            bytes((len(partner),)),
            partner,
            bytes((len(template),)),
            template,
        )
    )
    text = base64.urlsafe_b64encode(payload + _tag(mac_key, payload)).rstrip(b"=").decode()
    assert BFID_MIN_LENGTH <= len(text) <= BFID_MAX_LENGTH  # guaranteed by the size checks above
    return text


def _decode(bfid: object) -> bytes:
    """Length, alphabet and canonical-encoding checks; the raw bytes (payload || tag)."""
    if not isinstance(bfid, str):
        raise BfidError("bfid must be a string")
    if not BFID_MIN_LENGTH <= len(bfid) <= BFID_MAX_LENGTH:
        raise BfidError(f"bfid must be {BFID_MIN_LENGTH} to {BFID_MAX_LENGTH} characters")
    raw_text = bfid.encode("ascii", "replace")
    if not _B64URL.issuperset(raw_text) or len(bfid) % 4 == 1:
        raise BfidError("bfid is not URL-safe base64 text")
    try:
        raw = base64.urlsafe_b64decode(raw_text + b"=" * (-len(raw_text) % 4))
    except (binascii.Error, ValueError):
        raise BfidError("bfid is not URL-safe base64 text") from None
    # Non-zero unused bits in the last character decode to the same bytes: refuse them so a bfid has one spelling.
    if base64.urlsafe_b64encode(raw).rstrip(b"=") != raw_text:
        raise BfidError("bfid is not canonical URL-safe base64 text")
    if len(raw) < _FIXED + 2 or raw[: len(_VERSION)] != _VERSION:
        raise BfidError("bfid has an unknown format")
    return raw


def _fields(payload: bytes) -> BfidInfo:
    pos = len(_VERSION)
    key_version = int.from_bytes(payload[pos : pos + 2], "big")
    issued_at = int.from_bytes(payload[pos + 2 : pos + 7], "big")
    nonce = payload[pos + 7 : pos + 7 + _NONCE]
    pos += 7 + _NONCE
    values = []
    for _ in range(2):
        if pos >= len(payload):
            raise BfidError("bfid has an unknown format")
        n = payload[pos]
        chunk = payload[pos + 1 : pos + 1 + n]
        if n == 0 or len(chunk) != n:
            raise BfidError("bfid has an unknown format")
        try:
            values.append(chunk.decode())
        except UnicodeDecodeError:
            raise BfidError("bfid has an unknown format") from None
        pos += 1 + n
    if pos != len(payload) or key_version == 0:
        raise BfidError("bfid has an unknown format")
    return BfidInfo(
        partner_id=values[0], key_version=key_version, template_ref=values[1], nonce=nonce, issued_at=issued_at
    )


def peek_bfid_unverified(bfid: str) -> tuple[str, int]:
    """(partner id, key version) read WITHOUT verifying the tag: only to load the MAC key for :func:`parse_bfid`.

    Never use the result for anything else (no token lookup, no decryption): it may be forged.
    """
    raw = _decode(bfid)
    info = _fields(raw[:-_TAG])
    return info.partner_id, info.key_version


def parse_bfid(mac_key: bytes, bfid: str, *, expected_partner_id: str | None = None) -> BfidInfo:
    """Verify ``bfid`` under the partner's MAC key and return its fields; :class:`BfidError` otherwise.

    ``expected_partner_id`` (the authenticated caller's partner) is compared after the tag is verified.
    """
    _check_mac_key(mac_key)
    raw = _decode(bfid)
    payload, tag = raw[:-_TAG], raw[-_TAG:]
    if not hmac.compare_digest(_tag(mac_key, payload), tag):
        raise BfidError("bfid is not valid")
    info = _fields(payload)
    if expected_partner_id is not None and not hmac.compare_digest(
        info.partner_id.encode(), str(expected_partner_id).encode()
    ):
        raise BfidError("bfid belongs to another partner")
    return info
