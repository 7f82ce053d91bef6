"""The HMAC request-authentication scheme of the secure API and the proxy (pure: no I/O).

Header::

    Authorization: Hmac username="<partnerId>", nonce="<nonce>", timestamp="<unix seconds>", response="<hex>"

Values may be quoted or not (the timestamp appears both ways), properties come in any order, whitespace
around names, values and commas is ignored. All four properties are required, exactly once.

String to hash (spec, Authentication rule 4)::

    POST SP <path> LF <nonce> LF <timestamp> LF LF <lowercase hex SHA-256 of the exact body bytes>

``response`` is the lowercase hex HMAC-SHA256 (RFC 2104, FIPS 198-1) of that string, keyed with the
partner's shared key exactly as issued: the ASCII bytes of the ``hmacKey`` text the management API returns
(spec: "keyed with the shared key"). See :func:`accepted_key_forms` for the one legacy form still accepted.

The Digest and RSA forms (used by the certification-only debug endpoint) are defined symmetrically:
``Digest ...`` carries ``response = hex SHA-256(string_to_hash + LF + key)`` and ``Rsa ...`` carries
``response = base64 RSASSA-PKCS1-v1_5/SHA-256 signature of string_to_hash`` (RFC 8017 §8.2).

:class:`SchemeCredentials` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass
costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time

from vaultcore.plain import Frozen, init

__all__ = [
    "HeaderError",
    "SchemeCredentials",
    "parse_authorization",
    "content_hash",
    "string_to_hash",
    "string_to_hash_of",
    "hmac_response",
    "accepted_key_forms",
    "legacy_decoded_form",
    "digest_response",
    "responses_equal",
    "build_hmac_header",
    "MAX_AGE_SECONDS",
    "MAX_FUTURE_SKEW_SECONDS",
]

MAX_AGE_SECONDS = 15 * 60  # spec Limits: maximum timestamp age and nonce window
MAX_FUTURE_SKEW_SECONDS = 60  # clocks drift; a timestamp further in the future than this is refused
MAX_HEADER_LENGTH = 1024
MAX_NONCE_LENGTH = 128

_SCHEMES = {"hmac": "HMAC", "digest": "Digest", "rsa": "RSA"}
_PROPERTY = re.compile(r'\s*([A-Za-z]+)\s*=\s*(?:"([^"]*)"|([^,\s"]*))\s*(?:,|$)')
_NONCE = re.compile(r"[\x21-\x7e]{1,128}")  # printable ASCII, at most MAX_NONCE_LENGTH
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_REQUIRED = ("username", "nonce", "timestamp", "response")


class HeaderError(ValueError):
    """The Authorization header is not a well-formed scheme header (the reason is for internal logs)."""


class SchemeCredentials(Frozen):
    __slots__ = ("method", "username", "nonce", "timestamp", "response", "raw")
    method: str  # HMAC, Digest or RSA
    username: str
    nonce: str
    timestamp: int
    response: str
    raw: str

    def __init__(self, method: str, username: str, nonce: str, timestamp: int, response: str, raw: str) -> None:
        init(self, method=method, username=username, nonce=nonce, timestamp=timestamp, response=response, raw=raw)


def parse_authorization(header: str) -> SchemeCredentials:
    if not isinstance(header, str) or not header.strip():
        raise HeaderError("header missing")
    if len(header) > MAX_HEADER_LENGTH:
        raise HeaderError("header too long")
    if not header.isascii():
        raise HeaderError("non-ASCII header")
    text = header.strip()
    scheme, _, rest = text.partition(" ")
    method = _SCHEMES.get(scheme.lower())
    if method is None:
        raise HeaderError("unknown scheme")
    props: dict[str, str] = {}
    pos = 0
    rest = rest.strip()
    while pos < len(rest):
        m = _PROPERTY.match(rest, pos)
        if m is None or m.end() == pos:
            raise HeaderError("malformed property list")
        name = m.group(1).lower()
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if name in props:
            raise HeaderError("duplicate property")
        props[name] = value.strip()
        pos = m.end()
    missing = [p for p in _REQUIRED if not props.get(p)]
    if missing:
        raise HeaderError("missing property")
    if not _NONCE.fullmatch(props["nonce"]):
        raise HeaderError("bad nonce")
    if not _TIMESTAMP.fullmatch(props["timestamp"]):
        raise HeaderError("bad timestamp")
    return SchemeCredentials(method=method, username=props["username"], nonce=props["nonce"],
                             timestamp=int(props["timestamp"]), response=props["response"], raw=header)


def content_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def string_to_hash(path: str, nonce: str, timestamp: int | str, body: bytes, verb: str = "POST") -> str:
    return string_to_hash_of(path, nonce, timestamp, content_hash(body), verb)


def string_to_hash_of(path: str, nonce: str, timestamp: int | str, body_hash: str, verb: str = "POST") -> str:
    """The string to hash from an already computed content hash (one hash of the body per check)."""
    return f"{verb} {path}\n{nonce}\n{timestamp}\n\n{body_hash}"


def legacy_decoded_form(issued_key: bytes) -> bytes | None:
    """``base64decode(issued_key)`` when the issued key is strict base64 text, else None.

    Until this platform's issue 11, its own client and README signed with the base64-decoded ``hmacKey``.
    That form stays accepted (accept-both migration, docs/integrators/authentication.md "The HMAC key"); operators end
    it with the ``HmacAcceptDecodedKey`` parameter once no partner uses it.
    """
    import base64
    import binascii

    if not issued_key or len(issued_key) % 4:
        return None
    try:
        decoded = base64.b64decode(issued_key, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded or None


def accepted_key_forms(issued_key: bytes, *, accept_decoded: bool = True) -> list[tuple[str, bytes]]:
    """The HMAC keys a signature is checked against for one issued key, labelled for logs and authdebug.

    ``issued``: the key byte for byte as the partner received it (the spec's meaning, and the only form a
    client written from the spec uses); ``decoded``: the legacy form (see :func:`legacy_decoded_form`).
    """
    forms = [("issued", issued_key)]
    if accept_decoded:
        decoded = legacy_decoded_form(issued_key)
        if decoded is not None and decoded != issued_key:
            forms.append(("decoded", decoded))
    return forms


def hmac_response(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def digest_response(key: bytes, message: str) -> str:
    return hashlib.sha256(message.encode("utf-8") + b"\n" + key).hexdigest()


def responses_equal(expected: str, given: str) -> bool:
    """Constant-time comparison over bytes (``compare_digest`` raises TypeError on non-ASCII str)."""
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "surrogateescape"))


def build_hmac_header(username: str, key: bytes, path: str, body: bytes, *, nonce: str | None = None,
                      timestamp: int | None = None) -> str:
    """A complete, valid header for one request (used by the client helper and the debug endpoint)."""
    nonce = nonce or secrets.token_hex(16)
    ts = int(time.time()) if timestamp is None else int(timestamp)
    response = hmac_response(key, string_to_hash(path, nonce, ts, body))
    return f'Hmac username="{username}", nonce="{nonce}", timestamp="{ts}", response="{response}"'
