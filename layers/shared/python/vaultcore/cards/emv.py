"""EMV data objects: BER-TLV parsing (EMV Book 3 Annex B, ISO/IEC 8825-1 subset) and card-data decoding.

- :func:`parse_tlv` reads a sequence of BER-TLV objects with multi-byte tags and lengths, descends into
  constructed templates (``70`` READ RECORD response, ``77`` response format 2, ``6F`` FCI, ...) and returns
  the primitive objects in one flat dictionary keyed by upper-case hex tag.
- :func:`decode_track2_equivalent` turns a tag ``57`` value (EMV Book 3 Annex A: compressed numeric nibbles,
  ``D`` separator, ``F`` pad) into track 2 text with ``=`` as separator.
- :func:`decode_pan` turns a tag ``5A`` value (``cn``: digits, ``F`` pad) into the PAN.

Pure functions, bytes in and text or bytes out. :class:`TlvError` messages describe the structure only,
never values, since the values are card data.

>>> parse_tlv(bytes.fromhex("5A0842424242424242425F24032512319F0702FF00"))["5A"].hex()
'4242424242424242'
>>> decode_track2_equivalent(bytes.fromhex("4716916000001234D18099011234"))
'4716916000001234=18099011234'
"""

from __future__ import annotations

__all__ = [
    "TlvError",
    "CARD_DATA_TAGS",
    "parse_tlv",
    "decode_track2_equivalent",
    "decode_pan",
    "looks_like_tlv",
]

# Tags that carry card data: 57 track 2 equivalent, 5A PAN, 56 track 1 data, 9F6B track 2 data (contactless
# magstripe), 5F20 cardholder name, 5F24 expiry. looks_like_tlv wants one of them before calling bytes TLV.
CARD_DATA_TAGS = frozenset({"57", "5A", "56", "9F6B", "5F20", "5F24"})

# EMV Book 3 Annex B: lengths are coded in at most 1 + 4 bytes here (EMV itself never exceeds 1 + 2), tags in
# at most 4 bytes; templates nest only a few levels deep, so a deep nesting is malformed or hostile input.
_MAX_LENGTH_BYTES = 4
_MAX_TAG_BYTES = 4
_MAX_DEPTH = 8


class TlvError(ValueError):
    """Malformed BER-TLV data or EMV data element (truncated, bad length, bad nibble).

    The message describes the structure, never the content.
    """


def _read_tag(data: bytes, pos: int) -> tuple[bytes, int]:
    start = pos
    first = data[pos]
    pos += 1
    # Low five bits all set: the tag number continues in following bytes while their bit 8 is set.
    if first & 0x1F == 0x1F:
        while True:
            if pos >= len(data):
                raise TlvError("truncated tag")
            byte = data[pos]
            pos += 1
            if pos - start > _MAX_TAG_BYTES:
                raise TlvError("tag longer than 4 bytes")
            if not byte & 0x80:
                break
    return data[start:pos], pos


def _read_length(data: bytes, pos: int) -> tuple[int, int]:
    if pos >= len(data):
        raise TlvError("truncated length")
    first = data[pos]
    pos += 1
    if first < 0x80:
        return first, pos
    count = first & 0x7F
    if count == 0:
        # 0x80 is BER's indefinite length; EMV forbids it (Book 3 Annex B).
        raise TlvError("indefinite length is not allowed")
    if count > _MAX_LENGTH_BYTES:
        raise TlvError("length field longer than 4 bytes")
    if pos + count > len(data):
        raise TlvError("truncated length")
    return int.from_bytes(data[pos : pos + count], "big"), pos + count


def _parse_into(data: bytes, out: dict[str, bytes], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise TlvError("templates nested too deeply")
    pos, end = 0, len(data)
    while pos < end:
        # EMV Book 3 Annex B: '00' bytes may precede, separate or follow objects (erased data, block padding).
        if data[pos] == 0x00:
            pos += 1
            continue
        tag, pos = _read_tag(data, pos)
        length, pos = _read_length(data, pos)
        if pos + length > end:
            raise TlvError("value shorter than its length")
        value = data[pos : pos + length]
        pos += length
        if tag[0] & 0x20:
            # Constructed (bit 6 of the first tag byte): a template of further objects, flattened.
            _parse_into(value, out, depth + 1)
        else:
            # The first occurrence wins: a repeated tag in a later record does not replace the one read first.
            out.setdefault(tag.hex().upper(), value)


def parse_tlv(data: bytes) -> dict[str, bytes]:
    """Parse BER-TLV ``data`` into ``{"9F02": b"...", ...}`` (upper-case hex tags, primitive objects only).

    Constructed templates (``70``, ``77``, ``6F``, ``A5``, ``FF8105`` ...) are descended into and their
    primitive objects added to the same dictionary; the templates themselves are not keys. ``00`` padding
    between objects is skipped. Raises :class:`TlvError` on truncation, an indefinite or oversized length,
    or nesting deeper than 8 levels.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TlvError("TLV data must be bytes")
    out: dict[str, bytes] = {}
    _parse_into(bytes(data), out, 0)
    return out


def _nibbles_until_pad(value: bytes, what: str) -> str:
    """Upper-case hex of ``value`` cut at the first ``F`` nibble: the pad. Only further ``F`` nibbles or zero
    bytes (cipher-block padding of a decrypted value) may follow it."""
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TlvError(f"{what} must be bytes")
    text = bytes(value).hex().upper()
    pad = text.find("F")
    if pad >= 0:
        if not set(text[pad + 1 :]) <= {"F", "0"}:
            raise TlvError(f"{what}: data after the F pad")
        text = text[:pad]
    return text


def decode_track2_equivalent(value: bytes) -> str:
    """Track 2 text (``PAN=YYMM...``, ``=`` separator, no sentinels) from a tag ``57`` value.

    EMV Book 3 Annex A, Track 2 Equivalent Data: PAN, separator ``D``, expiry YYMM, service code,
    discretionary data, all as nibbles, padded with ``F`` to whole bytes. Raises :class:`TlvError` unless
    the value holds exactly one ``D`` after 8 to 19 PAN digits and otherwise only digits.
    """
    text = _nibbles_until_pad(value, "track 2 equivalent")
    pan, sep, rest = text.partition("D")
    if not sep or not pan.isdigit() or not 8 <= len(pan) <= 19 or (rest and not rest.isdigit()):
        raise TlvError("track 2 equivalent: expected PAN digits, one D separator, then digits")
    return f"{pan}={rest}"


def decode_pan(value: bytes) -> str:
    """The PAN from a tag ``5A`` value (compressed numeric, ``F`` padded). Raises :class:`TlvError` unless it
    holds 8 to 19 digits."""
    text = _nibbles_until_pad(value, "PAN")
    if not text.isdigit() or not 8 <= len(text) <= 19:
        raise TlvError("PAN: expected 8 to 19 digits")
    return text


def looks_like_tlv(data: bytes) -> bool:
    """Whether ``data`` parses completely as BER-TLV and holds at least one card-data tag (57, 5A, 56,
    9F6B, 5F20, 5F24).

    Arbitrary bytes, ASCII track text included, sometimes parse as TLV by chance; requiring a card-data
    tag is what makes the answer useful to decide how to read a decrypted payload. Never raises.
    """
    try:
        tags = parse_tlv(data)
    except (TlvError, TypeError):
        return False
    return not CARD_DATA_TAGS.isdisjoint(tags)
