"""bfid: the opaque, integrity-protected identifier of one tokenization.

Binary layout, then URL-safe base64 without padding (RFC 4648 section 5). Versions 2, 3 and 4 (version 4: every
bfid issued now)::

    "v5".."v2"        2 bytes  format version (a new layout, or a new way to make tokens, gets a new version)
    key_version       2 bytes  unsigned big-endian, 1..65535: which partner tokenization key (rotation)
    issued_at         5 bytes  unsigned big-endian unix seconds (start of the active windows and read window)
    nonce            16 bytes  random (128 bits): makes every bfid unique and unguessable
    len(partner_id)   1 byte,  partner_id   UTF-8
    len(template_ref) 1 byte,  template_ref UTF-8
    owner tag         8 bytes  version 5 only: the account the tokenization is bound to (below)
    token tags        5 bytes each, zero or more: field index (1 byte: the field's position in the bfid's template
                      version) and token tag (4 bytes, below); sorted ascending, no duplicates (one spelling)
    tag              16 bytes  HMAC-SHA256(mac_key, all bytes above), first 16 bytes (128-bit tag)

Everything up to and including the template reference is the bfid's *core*; its base64 text is the bfid's
:attr:`BfidInfo.scope`, the identity the FF1 tweaks (:func:`vaultcore.tokens.engine.field_tweak`), the token tags
and the Tokens table item are bound to. The scope does not depend on the token tags, which breaks the cycle
"tokens depend on the bfid, the bfid carries tags over the tokens": the core is drawn first (:func:`draft_bfid`),
the values are tokenized under its scope, then the tags are computed and the bfid is sealed (:func:`seal_bfid`).

Token tags (detokenization integrity)
    ``HMAC-SHA256(tag_key, "vaultcore/tokens/token-tag/v2" || 0x00 || scope || 0x00 || field name || 0x00 ||
    token)``, first 4 bytes (32 bits). ``tag_key`` is derived from the partner's tokenization key
    (:func:`derive_tag_key`), so nobody without the key can make a tag; the scope binds the tag to the bfid's
    other contents (key version, issue time, nonce, partner, template version). A token is detokenized under a
    version-2 or -3 bfid only when the bfid holds a tag for its field that matches (:func:`token_issued`): a wrong,
    mistyped or another bfid's token, or a token of a field never tokenized under the bfid, is refused before FF1
    is inverted, so it never turns into a wrong clear value. A wrong token passes with probability 2**-32 per tag
    the bfid holds for that field (one, except when a proxy request tokenizes several values of one field). The
    check is pure CPU (one HMAC): no store lookup.

    Size: 5 bytes (6.7 characters) per tokenized field. Partner id and template reference together take at most
    69 bytes (a tagless bfid fits 150 characters, as version 1 did); the gateway's ``bfid`` parameter takes 30-150
    characters, which holds ``(69 - ids) / 5`` tags: four for the built-in ``GATEWAY`` template and any partner id
    (at most 40 characters), so gateway auto-tokenization (card number and expiry, or bank account and routing
    number) always fits. A bfid of a tokenization of more fields may be longer than 150 characters (at most
    :data:`BFID_TEXT_MAX_LENGTH`, 1,024, the original's limit) and then cannot be sent to the gateway.

Version 5 (issue 27) is version 4 bound to one merchant account for good: right after the template reference,
the core holds an *owner tag* of 8 bytes, ``HMAC-SHA256(owner_key, "vaultcore/tokens/owner-tag/v1" || 0x00 ||
account id)``, first 8 bytes, where ``owner_key`` is derived from the bfid MAC key (:func:`derive_owner_key`). The
gateway's auto-tokenization issues it (:func:`draft_bfid` with ``owner_tag``); the tokens service refuses every
path but that account's gateway (:func:`owner_matches`, :mod:`vaultcore.tokens.policy`). Being in the MAC'd core,
the binding costs no write and outlives the one-hour Tokens item, as a vaultless token does; a tag and not the
account id, so a bfid names no account. Its tokens are made as version 4's. Partner id and template reference
then share 61 bytes: with ``GATEWAY`` and a partner id of at most 40 characters, the two token tags of a gateway
capture still fit the gateway's 150 characters.

Version 4 (issue 27) has the layout of versions 2 and 3 and makes its tokens as version 3 does, except card numbers,
which are Luhn-invalid unless the field asks otherwise (:data:`LUHN_INVALID_VERSION`,
:mod:`vaultcore.tokens.engine`). Tokens of version-1 to -3 bfids keep detokenizing as they were made.

Version 3 has the layout of version 2; the version says how its tokens were made. The token engine enciphers a
field part of fewer than one million possible values (a CVV, an expiry date) with the prefix cipher
(:mod:`vaultcore.crypto.prefix_cipher`, constant cost) under a version-3 bfid, and by cycle walking FF1 on a
one-million domain (up to a thousand FF1 calls for 3 digits) under a version-1 or version-2 bfid, as when those were
issued (:data:`PREFIX_CIPHER_VERSION`, :func:`vaultcore.tokens.engine.tokenize_value`). The version is part of
the MAC'd core, hence of the scope: nobody can move a token from one construction to the other. Tokenizing more
values under a version-2 bfid keeps it version 2 (and its tokens cycle-walked), so that one bfid never mixes the
two constructions.

Version 1 (issued before token tags existed) has the same layout without token tags, and its scope is the bfid
text itself (its tokens were made with tweaks over the whole bfid). It still verifies, and its tokens still
detokenize, without a tag check: nothing can be added to a version-1 bfid without changing its text.

Verification order (:func:`parse_bfid`): length and alphabet, canonical base64 (so no two strings decode to the
same bytes), version, tag (``hmac.compare_digest``), then the fields. A forged, altered or truncated bfid, or one
made for another partner (another MAC key), is refused before any table lookup or decryption. The only step
allowed earlier is :func:`peek_bfid_unverified`, which reads partner id and key version to load the MAC key.

Keys: the partner's versioned tokenization key is a master key; :func:`derive_subkeys` and :func:`derive_tag_key`
derive from it, with HKDF-SHA256 (RFC 5869) and distinct labels, the FF1 key (AES-256), the bfid MAC key and the
token tag key, so no key serves two purposes.

:class:`BfidInfo` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable
from itertools import pairwise

from vaultcore.plain import Frozen, init, replace

__all__ = [
    "BfidError",
    "BfidInfo",
    "BFID_MIN_LENGTH",
    "BFID_MAX_LENGTH",
    "BFID_TEXT_MAX_LENGTH",
    "BFID_VERSION",
    "TAGGED_VERSION",
    "PREFIX_CIPHER_VERSION",
    "LUHN_INVALID_VERSION",
    "OWNER_VERSION",
    "OWNER_TAG_BYTES",
    "derive_owner_key",
    "owner_tag",
    "owner_matches",
    "TOKEN_TAG_BYTES",
    "new_bfid",
    "draft_bfid",
    "seal_bfid",
    "token_tag",
    "token_issued",
    "parse_bfid",
    "peek_bfid_unverified",
    "derive_subkeys",
    "derive_tag_key",
    "hkdf_sha256",
]

BFID_MIN_LENGTH = 30
#: A bfid without token tags (and every version-1 bfid) fits this many characters; the gateway's bfid limit.
BFID_MAX_LENGTH = 150
#: The longest bfid text accepted: a bfid with tags grows by 5 bytes per token tag (the original's limit).
BFID_TEXT_MAX_LENGTH = 1024
#: The version of every bfid issued now.
BFID_VERSION = 4
#: bfids from this version on carry token tags (detokenization integrity).
TAGGED_VERSION = 2
#: bfids from this version on have their small-domain tokens made by the prefix cipher (module docstring).
PREFIX_CIPHER_VERSION = 3
#: bfids from this version on have Luhn-invalid card-number tokens (issue 27; vaultcore.tokens.engine).
LUHN_INVALID_VERSION = 4
#: bfids of this version carry an owner tag: bound to one merchant account for good (module docstring).
OWNER_VERSION = 5
OWNER_TAG_BYTES = 8
TOKEN_TAG_BYTES = 4
_V1, _V2, _V3, _V4, _V5 = b"v1", b"v2", b"v3", b"v4", b"v5"
_MARKERS = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5}
_VERSIONS = {marker: version for version, marker in _MARKERS.items()}
_NONCE = 16
_TAG = 16
_ENTRY = 1 + TOKEN_TAG_BYTES
_FIXED = len(_V1) + 2 + 5 + _NONCE + 1 + 1 + _TAG  # 43
_MAX_IDS = (BFID_MAX_LENGTH * 6) // 8 - _FIXED  # 69 bytes of partner id + template ref
_MAX_RAW = (BFID_TEXT_MAX_LENGTH * 6) // 8  # 768 bytes
_B64URL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_HKDF_SALT = b"vaultcore/tokens/hkdf-salt/v1"
_INFO_FF1 = b"vaultcore/tokens/ff1-aes-256/v1"
_INFO_MAC = b"vaultcore/tokens/bfid-hmac-sha256/v1"
_INFO_TAG = b"vaultcore/tokens/token-tag-hmac-sha256/v2"
_TOKEN_TAG_LABEL = b"vaultcore/tokens/token-tag/v2"
_INFO_OWNER = b"vaultcore/tokens/owner-tag-hmac-sha256/v1"
_OWNER_TAG_LABEL = b"vaultcore/tokens/owner-tag/v1"


class BfidError(ValueError):
    """The bfid is malformed, forged, altered or not this partner's. Messages never echo the bfid."""


class BfidInfo(Frozen):
    """The fields of a bfid. ``tags``: (field index, 4-byte token tag) pairs of a version-2 or -3 bfid; ``scope``:
    the identity FF1 tweaks, token tags and the Tokens item are bound to (module docstring)."""

    __slots__ = ("partner_id", "key_version", "template_ref", "nonce", "issued_at", "version", "tags", "scope",
                 "owner_tag")
    _no_compare = frozenset({"scope"})
    partner_id: str
    key_version: int
    template_ref: str
    nonce: bytes
    issued_at: int
    version: int
    tags: tuple[tuple[int, bytes], ...]
    scope: str
    #: version 5: the owner tag (8 bytes) of the account the tokenization is bound to; b"" otherwise.
    owner_tag: bytes

    def __init__(self, partner_id: str, key_version: int, template_ref: str, nonce: bytes, issued_at: int,
                 version: int = 4, tags: tuple[tuple[int, bytes], ...] = (), scope: str = "",
                 owner_tag: bytes = b'') -> None:
        init(self, partner_id=partner_id, key_version=key_version, template_ref=template_ref, nonce=nonce,
             issued_at=issued_at, version=version, tags=tags, scope=scope, owner_tag=owner_tag)


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


def _master(master: bytes) -> bytes:
    if not isinstance(master, bytes | bytearray) or len(master) < 32:
        raise ValueError("partner tokenization key must be at least 32 bytes")
    return bytes(master)


def derive_subkeys(master: bytes) -> tuple[bytes, bytes]:
    """(FF1 AES-256 key, bfid HMAC-SHA256 key) from one partner tokenization key of 32 bytes or more."""
    master = _master(master)
    return hkdf_sha256(master, _INFO_FF1), hkdf_sha256(master, _INFO_MAC)


def derive_tag_key(master: bytes) -> bytes:
    """The token tag HMAC-SHA256 key (version-2 and -3 bfids) from one partner tokenization key of 32 bytes or more."""
    return hkdf_sha256(_master(master), _INFO_TAG)


def derive_owner_key(mac_key: bytes) -> bytes:
    """The owner tag's HMAC-SHA256 key, derived from the bfid MAC key (HKDF, RFC 5869): no key serves two purposes."""
    _check_mac_key(mac_key)
    return hkdf_sha256(bytes(mac_key), _INFO_OWNER)


def owner_tag(mac_key: bytes, account_id: str) -> bytes:
    """The 8-byte owner tag of ``account_id`` under the partner's bfid MAC key (module docstring, version 5)."""
    message = _OWNER_TAG_LABEL + b"\x00" + _id_bytes(account_id, "owner account")
    return hmac.new(derive_owner_key(mac_key), message, hashlib.sha256).digest()[:OWNER_TAG_BYTES]


def owner_matches(mac_key: bytes, info: BfidInfo, account_id: str | None) -> bool:
    """Whether the verified version-5 ``info`` is bound to ``account_id`` (constant-time comparison)."""
    if not info.owner_tag or not account_id:
        return False
    return hmac.compare_digest(owner_tag(mac_key, account_id), info.owner_tag)


def _check_mac_key(mac_key: bytes, what: str = "bfid MAC key") -> None:
    if not isinstance(mac_key, bytes | bytearray) or len(mac_key) < 16:
        raise ValueError(f"{what} must be at least 16 bytes")


def _tag(mac_key: bytes, payload: bytes) -> bytes:
    return hmac.new(bytes(mac_key), payload, hashlib.sha256).digest()[:_TAG]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _id_bytes(value: str, label: str) -> bytes:
    if not isinstance(value, str) or not value or not value.isprintable():
        raise BfidError(f"{label} must be a non-empty printable string")
    raw = value.encode()
    if len(raw) > 255:
        raise BfidError(f"{label} is too long for a bfid")
    return raw


def _core(version: bytes, info: BfidInfo) -> bytes:
    partner, template = info.partner_id.encode(), info.template_ref.encode()
    return b"".join((version, info.key_version.to_bytes(2, "big"), info.issued_at.to_bytes(5, "big"), info.nonce,
                     bytes((len(partner),)), partner, bytes((len(template),)), template, info.owner_tag))


def draft_bfid(
    key_version: int,
    template_ref: str,
    partner_id: str,
    *,
    issued_at: int | None = None,
    nonce: bytes | None = None,
    version: int = BFID_VERSION,
    owner_tag: bytes | None = None,
) -> BfidInfo:
    """A new bfid (version 4; 2 or 3 for tests of former bfids) before it is sealed: its fields and
    :attr:`~BfidInfo.scope`, no token tags yet. With ``owner_tag`` (:func:`owner_tag`), a version-5 bfid bound to
    that account.

    Tokenize under ``scope`` (and ``version``), compute the tags (:func:`token_tag`), then :func:`seal_bfid` gives
    the text. ``issued_at`` defaults to now; ``nonce`` to 16 random bytes (both exist as parameters for tests).
    """
    if owner_tag is not None:
        if not isinstance(owner_tag, bytes) or len(owner_tag) != OWNER_TAG_BYTES:
            raise BfidError(f"an owner tag is {OWNER_TAG_BYTES} bytes")
        version = OWNER_VERSION
    elif version == OWNER_VERSION:
        raise BfidError("a version-5 bfid needs an owner tag")
    if version < TAGGED_VERSION or version not in _MARKERS:
        raise BfidError("a bfid with token tags is version 2, 3, 4 or 5")
    if not isinstance(key_version, int) or isinstance(key_version, bool) or not 1 <= key_version <= 0xFFFF:
        raise BfidError("key version must be an integer from 1 to 65535")
    ts = int(time.time()) if issued_at is None else issued_at
    if not isinstance(ts, int) or not 0 <= ts < 1 << 40:
        raise BfidError("issued_at must be unix seconds from 0 to 2**40 - 1")
    nonce = secrets.token_bytes(_NONCE) if nonce is None else nonce
    if not isinstance(nonce, bytes) or len(nonce) != _NONCE:
        raise BfidError("nonce must be 16 bytes")
    partner, template = _id_bytes(partner_id, "partner id"), _id_bytes(template_ref, "template reference")
    room = _MAX_IDS - (OWNER_TAG_BYTES if owner_tag is not None else 0)
    if len(partner) + len(template) > room:
        raise BfidError(
            f"partner id and template reference take {len(partner) + len(template)} bytes together; "
            f"at most {room} fit in a bfid of {BFID_MAX_LENGTH} characters"
        )
    info = BfidInfo(partner_id, key_version, template_ref, nonce, ts, version, owner_tag=owner_tag or b"")
    return replace(info, scope=_b64(_core(_MARKERS[version], info)))


def _entries(tags: Iterable[tuple[int, bytes]]) -> tuple[tuple[int, bytes], ...]:
    out = set()
    for index, tag in tags:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= 255:
            raise BfidError("a token tag's field index must be an integer from 0 to 255")
        if not isinstance(tag, bytes) or len(tag) != TOKEN_TAG_BYTES:
            raise BfidError(f"a token tag must be {TOKEN_TAG_BYTES} bytes")
        out.add((index, tag))
    return tuple(sorted(out))


def seal_bfid(mac_key: bytes, info: BfidInfo, tags: Iterable[tuple[int, bytes]] = ()) -> str:
    """The text of version-2 or -3 ``info`` carrying its own tags and ``tags`` (merged, sorted, no duplicates).

    Sealing a parsed bfid with tags it already holds gives the same text again; with new ones, an extended bfid
    (same scope: the same tokens and Tokens item) that also vouches for the new tokens. :class:`BfidError` when
    the text would exceed :data:`BFID_TEXT_MAX_LENGTH` characters (about 130 distinct tokens).
    """
    _check_mac_key(mac_key)
    if info.version < TAGGED_VERSION or info.version not in _MARKERS:
        raise BfidError("only a version-2, -3, -4 or -5 bfid can carry token tags")
    entries = _entries((*info.tags, *tags))
    payload = _core(_MARKERS[info.version], info) + b"".join(bytes((i,)) + t for i, t in entries)
    if len(payload) + _TAG > _MAX_RAW:
        raise BfidError(f"too many token tags for one bfid of at most {BFID_TEXT_MAX_LENGTH} characters")
    text = _b64(payload + _tag(mac_key, payload))
    assert BFID_MIN_LENGTH <= len(text) <= BFID_TEXT_MAX_LENGTH  # guaranteed by the size checks above
    return text


def new_bfid(
    mac_key: bytes,
    key_version: int,
    template_ref: str,
    partner_id: str,
    *,
    issued_at: int | None = None,
    nonce: bytes | None = None,
    version: int = BFID_VERSION,
) -> str:
    """A new bfid without token tags (module docstring layout). ``issued_at`` defaults to now; ``nonce`` to 16
    random bytes. ``version=1`` or ``2`` writes a former version: only tests of old bfids use them."""
    _check_mac_key(mac_key)
    if version not in _MARKERS or version == OWNER_VERSION:
        raise BfidError("bfid version must be 1, 2, 3 or 4 (a version-5 bfid is drafted with its owner tag)")
    if version != 1:
        return seal_bfid(mac_key, draft_bfid(key_version, template_ref, partner_id, issued_at=issued_at, nonce=nonce,
                                             version=version))
    info = draft_bfid(key_version, template_ref, partner_id, issued_at=issued_at, nonce=nonce)
    payload = _core(_V1, info)
    text = _b64(payload + _tag(mac_key, payload))
    assert BFID_MIN_LENGTH <= len(text) <= BFID_MAX_LENGTH  # guaranteed by the size checks of draft_bfid
    return text


def token_tag(tag_key: bytes, scope: str, field_name: str, token: str) -> bytes:
    """The 4-byte tag of ``token`` in ``field_name`` under the bfid of ``scope`` (module docstring)."""
    _check_mac_key(tag_key, "token tag key")
    message = b"\x00".join((_TOKEN_TAG_LABEL, scope.encode(), field_name.encode(), token.encode()))
    return hmac.new(bytes(tag_key), message, hashlib.sha256).digest()[:TOKEN_TAG_BYTES]


def token_issued(tag_key: bytes, info: BfidInfo, field_index: int, field_name: str, token: str) -> bool:
    """Whether the verified bfid ``info`` vouches for ``token`` in the field at ``field_index`` / ``field_name``.

    Version 1 (no tags): always True (old bfids keep working without the check). Versions 2 and 3: True only when
    one of the bfid's tags for that field index equals the token's tag; a field without a tag is never issued.
    """
    if info.version < TAGGED_VERSION:
        return True
    expected = token_tag(tag_key, info.scope, field_name, token)
    found = False
    for index, tag in info.tags:
        if index == field_index and hmac.compare_digest(expected, tag):
            found = True
    return found


def _decode(bfid: object) -> bytes:
    """Length, alphabet and canonical-encoding checks; the raw bytes (payload || tag)."""
    if not isinstance(bfid, str):
        raise BfidError("bfid must be a string")
    if not BFID_MIN_LENGTH <= len(bfid) <= BFID_TEXT_MAX_LENGTH:
        raise BfidError(f"bfid must be {BFID_MIN_LENGTH} to {BFID_TEXT_MAX_LENGTH} characters")
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
    version = raw[: len(_V1)]
    if len(raw) < _FIXED + 2 or version not in _VERSIONS or (version == _V1 and len(bfid) > BFID_MAX_LENGTH):
        raise BfidError("bfid has an unknown format")
    return raw


def _fields(payload: bytes) -> BfidInfo:
    version = _VERSIONS[payload[: len(_V1)]]
    pos = len(_V1)
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
    owner = b""
    if version == OWNER_VERSION:
        owner = payload[pos : pos + OWNER_TAG_BYTES]
        if len(owner) != OWNER_TAG_BYTES:
            raise BfidError("bfid has an unknown format")
        pos += OWNER_TAG_BYTES
    rest = payload[pos:]
    if key_version == 0 or (version == 1 and rest) or len(rest) % _ENTRY:
        raise BfidError("bfid has an unknown format")
    tags = tuple((rest[i], rest[i + 1 : i + _ENTRY]) for i in range(0, len(rest), _ENTRY))
    if any(a >= b for a, b in pairwise(tags)):  # sorted without duplicates: one spelling
        raise BfidError("bfid has an unknown format")
    scope = _b64(payload[:pos])
    return BfidInfo(partner_id=values[0], key_version=key_version, template_ref=values[1], nonce=nonce,
                    issued_at=issued_at, version=version, tags=tags, scope=scope, owner_tag=owner)


def peek_bfid_unverified(bfid: str) -> tuple[str, int]:
    """(partner id, key version) read WITHOUT verifying the tag: only to load the MAC key for :func:`parse_bfid`.

    Never use the result for anything else (no token lookup, no decryption): it may be forged.
    """
    raw = _decode(bfid)
    info = _fields(raw[:-_TAG])
    return info.partner_id, info.key_version


def parse_bfid(mac_key: bytes, bfid: str, *, expected_partner_id: str | None = None) -> BfidInfo:
    """Verify ``bfid`` under the partner's MAC key and return its fields; :class:`BfidError` otherwise.

    ``expected_partner_id`` (the authenticated caller's partner) is compared after the tag is verified. The
    scope of a version-1 bfid is the bfid text itself (module docstring).
    """
    _check_mac_key(mac_key)
    raw = _decode(bfid)
    payload, tag = raw[:-_TAG], raw[-_TAG:]
    if not hmac.compare_digest(_tag(mac_key, payload), tag):
        raise BfidError("bfid is not valid")
    info = _fields(payload)
    if info.version == 1:
        info = replace(info, scope=bfid)
    if expected_partner_id is not None and not hmac.compare_digest(
        info.partner_id.encode(), str(expected_partner_id).encode()
    ):
        raise BfidError("bfid belongs to another partner")
    return info
