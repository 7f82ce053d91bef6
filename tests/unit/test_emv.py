"""BER-TLV parsing (EMV Book 3 Annex B) and the card-data elements 57 and 5A (Annex A)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.cards.emv import (
    CARD_DATA_TAGS,
    TlvError,
    decode_pan,
    decode_track2_equivalent,
    looks_like_tlv,
    parse_tlv,
)
from vaultcore.cards.tracks import parse_track2

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
IDTECH = {e["id"]: e for e in json.loads((VECTORS / "idtech.json").read_text())["entries"]}


def _tlv(tag: str, value: bytes) -> bytes:
    """Encode one object (test helper; definite lengths in the shortest form)."""
    n = len(value)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes.fromhex(tag) + length + value


def test_decrypted_emv_block_vector() -> None:
    # Given the decrypted EMV block of the ID TECH vectors (5A, 57, then zero padding)
    entry = IDTECH["data-key-emv-tlv-block"]
    data = bytes.fromhex(entry["plaintext_hex"])
    # When parsed / Then both card-data objects come out and the padding is ignored
    tags = parse_tlv(data)
    assert set(tags) == {"5A", "57"}
    assert decode_pan(tags["5A"]) == "4761739001010010"
    track2 = decode_track2_equivalent(tags["57"])
    assert track2 == "4761739001010010=15122011143878089"
    parsed = parse_track2(track2)
    assert (parsed.pan, parsed.expiry_yymm, parsed.service_code) == ("4761739001010010", "1512", "201")
    assert looks_like_tlv(data)


def test_nested_templates_are_flattened() -> None:
    record = _tlv("57", bytes.fromhex("4242424242424242D25121011234567F")) + _tlv("5F24", bytes.fromhex("251231"))
    inner = _tlv("A5", _tlv("9F38", b"\x9f\x66\x04") + _tlv("BF0C", _tlv("9F4D", b"\x0b\x0a")))
    data = _tlv("70", record) + _tlv("6F", _tlv("84", b"\xa0\x00\x00\x00\x03\x10\x10") + inner)
    data += _tlv("77", _tlv("9F27", b"\x80") + _tlv("9F36", b"\x00\x01"))
    tags = parse_tlv(data)
    assert tags == {
        "57": bytes.fromhex("4242424242424242D25121011234567F"),
        "5F24": bytes.fromhex("251231"),
        "84": bytes.fromhex("A0000000031010"),
        "9F38": bytes.fromhex("9F6604"),
        "9F4D": bytes.fromhex("0B0A"),
        "9F27": b"\x80",
        "9F36": b"\x00\x01",
    }


def test_multi_byte_tags_and_long_lengths() -> None:
    long_value = bytes(range(256)) * 2  # 512 bytes: length 82 02 00
    data = _tlv("DF8101", b"\x01") + _tlv("9F6B", bytes.fromhex("4242424242424242D2512F")) + _tlv("C1", long_value)
    data += bytes.fromhex("5F2A") + b"\x81\x02" + b"\x09\x78"  # long form for a short value is still valid
    tags = parse_tlv(data)
    assert tags["DF8101"] == b"\x01"
    assert tags["C1"] == long_value
    assert tags["5F2A"] == b"\x09\x78"
    assert tags["9F6B"] == bytes.fromhex("4242424242424242D2512F")


def test_empty_value_padding_and_first_occurrence_wins() -> None:
    data = b"\x00\x00" + _tlv("5A", b"") + b"\x00" + _tlv("9F02", b"\x01") + _tlv("9F02", b"\x02") + b"\x00" * 3
    assert parse_tlv(data) == {"5A": b"", "9F02": b"\x01"}
    assert parse_tlv(b"") == {}
    # parse_tlv takes any bytes-like object at run time; its annotation names bytes only.
    assert parse_tlv(bytearray(_tlv("5A", b"\x42"))) == {"5A": b"\x42"}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hex_data", "message"),
    [
        ("5A08424242", "value shorter than its length"),
        ("5A", "truncated length"),
        ("9F", "truncated tag"),
        ("9F81", "truncated tag"),
        ("5A81", "truncated length"),
        ("5A8201", "truncated length"),
        ("5A80", "indefinite length"),
        ("5A850000000001", "length field longer than 4 bytes"),
        ("9F8181818101", "tag longer than 4 bytes"),
        ("7005" + "5A03424242"[:-2], "value shorter than its length"),
        ("7003" + "5A0542", "value shorter than its length"),
    ],
)
def test_malformed_tlv_raises_without_quoting_data(hex_data: str, message: str) -> None:
    with pytest.raises(TlvError, match=message) as info:
        parse_tlv(bytes.fromhex(hex_data))
    assert "4242" not in str(info.value)


def test_deep_nesting_is_rejected() -> None:
    data = _tlv("5A", b"\x42")
    for _ in range(12):
        data = _tlv("70", data)
    with pytest.raises(TlvError, match="nested too deeply"):
        parse_tlv(data)


def test_parse_tlv_rejects_text() -> None:
    with pytest.raises(TlvError, match="bytes"):
        parse_tlv("5A0842")  # type: ignore[arg-type]


def test_tlv_error_is_a_value_error() -> None:
    assert issubclass(TlvError, ValueError)


@pytest.mark.parametrize(
    ("hex_value", "expected"),
    [
        ("4716916000001234D18099011234", "4716916000001234=18099011234"),
        ("5301250070000191D08051010912345678901F", "5301250070000191=08051010912345678901"),
        ("3540599999991047D080501234567F", "3540599999991047=080501234567"),
        ("3540599999991047D080501234567F000000", "3540599999991047=080501234567"),  # block padding
        ("4242424242424242D2512F", "4242424242424242=2512"),
        ("4242424242424242D2512FFF", "4242424242424242=2512"),
        ("4242424242424242DF", "4242424242424242="),
        ("4761739001010010d15122011143878089", "4761739001010010=15122011143878089"),
    ],
)
def test_decode_track2_equivalent(hex_value: str, expected: str) -> None:
    assert decode_track2_equivalent(bytes.fromhex(hex_value)) == expected


@pytest.mark.parametrize(
    "hex_value",
    [
        "4242424242424242",  # no separator
        "4242D25121011234",  # PAN too short
        "42424242424242424242D2512F",  # PAN too long
        "4242424242424242D2512D01",  # two separators
        "4242424242424242D25A1F",  # non-digit nibble
        "4242424242424242D2512F01",  # data after the pad
        "",
    ],
)
def test_decode_track2_equivalent_rejections(hex_value: str) -> None:
    with pytest.raises(TlvError, match="track 2 equivalent") as info:
        decode_track2_equivalent(bytes.fromhex(hex_value))
    assert "4242" not in str(info.value)


@pytest.mark.parametrize(
    ("hex_value", "expected"),
    [
        ("4242424242424242", "4242424242424242"),
        ("378282246310005F", "378282246310005"),
        ("6011000990139424FFFF", "6011000990139424"),
        ("5413330089020037F0", "5413330089020037"),
        ("4242424242424242424F", "4242424242424242424"),
    ],
)
def test_decode_pan(hex_value: str, expected: str) -> None:
    assert decode_pan(bytes.fromhex(hex_value)) == expected


@pytest.mark.parametrize("hex_value", ["4242", "42424242424242424242", "4242424242424242D1", "4242F4242424", ""])
def test_decode_pan_rejections(hex_value: str) -> None:
    with pytest.raises(TlvError, match="PAN") as info:
        decode_pan(bytes.fromhex(hex_value))
    assert "4242" not in str(info.value)


def test_decoders_reject_text() -> None:
    with pytest.raises(TlvError):
        decode_pan("4242424242424242")  # type: ignore[arg-type]
    with pytest.raises(TlvError):
        decode_track2_equivalent("4242424242424242D2512")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_tlv("57", bytes.fromhex("4242424242424242D2512101")), True),
        (_tlv("70", _tlv("5A", bytes.fromhex("4242424242424242"))), True),
        (_tlv("9F02", b"\x00\x00\x00\x00\x10\x00"), False),  # TLV, but no card data
        (b";4242424242424242=25121011234?0", False),  # track text
        (b"%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?!", False),
        (b"4242424242424242=2512=123", False),  # keyed text
        (bytes.fromhex("4242424242424242D25121011234"), False),  # a bare tag 57 value
        (b"", False),
        ("5A08", False),
    ],
)
def test_looks_like_tlv(data: bytes, expected: bool) -> None:
    assert looks_like_tlv(data) is expected


def test_card_data_tags() -> None:
    assert {"57", "5A"} <= CARD_DATA_TAGS


@given(st.binary(max_size=64))
def test_parse_tlv_never_fails_other_than_tlv_error(data: bytes) -> None:
    try:
        parse_tlv(data)
    except TlvError:
        pass
    assert isinstance(looks_like_tlv(data), bool)


@given(
    st.dictionaries(
        st.sampled_from(["5A", "57", "5F24", "9F02", "9F6B", "DF8101", "84", "9F36"]),
        st.binary(max_size=300),
        max_size=6,
    )
)
def test_encode_then_parse_round_trip(objects: dict[str, bytes]) -> None:
    data = b"".join(_tlv(tag, value) for tag, value in objects.items())
    assert parse_tlv(_tlv("70", data)) == objects
