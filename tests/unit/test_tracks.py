"""ISO/IEC 7813 track parsing, LRC, byte stripping, keyed entries and the parser substitution formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.cards.emv import decode_track2_equivalent
from vaultcore.cards.tracks import (
    TRACK_FORMATS,
    KeyedEntry,
    Track1,
    Track2,
    TrackError,
    parse_keyed,
    parse_track1,
    parse_track2,
    split_tracks,
    strip_track_bytes,
    track_format,
    track_lrc,
)

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
TRACKS = json.loads((VECTORS / "tracks.json").read_text())["entries"]
IDTECH = {e["id"]: e for e in json.loads((VECTORS / "idtech.json").read_text())["entries"]}

# Vector field name -> attribute of the parsed record.
_FIELDS = {
    "pan": "pan",
    "expiration": "expiry_yymm",
    "service_code": "service_code",
    "discretionary_data": "discretionary",
    "name": "raw_name",
}


def _kind(entry: dict[str, Any]) -> str:
    if entry.get("type") == "track_lrc":
        return "lrc"
    if entry["id"].startswith("combined"):
        return "combined"
    return {1: "track1", 2: "track2", "emv_track2_equivalent": "emv57"}[entry["track"]]


def _check_fields(parsed: Track1 | Track2, expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        if key == "format_code":
            assert isinstance(parsed, Track1)
            assert parsed.format_code == value
        else:
            assert getattr(parsed, _FIELDS[key]) == value, key


@pytest.mark.parametrize("entry", TRACKS, ids=[e["id"] for e in TRACKS])
def test_every_tracks_vector(entry: dict[str, Any]) -> None:
    kind = _kind(entry)
    if kind == "lrc":
        # Given a track without its LRC / When the LRC is computed / Then it is the reader's LRC character
        track = entry["track_without_lrc"]
        lrc = entry["expected_lrc_char"]
        assert track_lrc(track) == lrc
        # ... and a reader's output (track + LRC + block padding) strips back to the track.
        assert strip_track_bytes((track + lrc).encode() + b"\x00" * 5) == track.encode()
        if entry["track"] == 1:
            assert parse_track1(track + lrc).raw == track[1:-1]
        elif entry["track"] == 2:
            assert parse_track2(track + lrc).raw == track[1:-1]
    elif kind == "track1":
        _check_fields(parse_track1(entry["raw"]), entry["expected"])
    elif kind == "track2":
        _check_fields(parse_track2(entry["raw"]), entry["expected"])
    elif kind == "emv57":
        raw = entry["raw"]
        _check_fields(parse_track2(raw), entry["expected"])
        if len(raw) % 2 == 0 and raw[0].isdigit():
            # The same value as tag 57 bytes decodes to the same track 2.
            _check_fields(parse_track2(decode_track2_equivalent(bytes.fromhex(raw))), entry["expected"])
    else:
        track1, track2 = split_tracks(entry["raw"])
        assert track1 == entry["expected_track1_raw"]
        assert track2 == entry["expected_track2_raw"]
        assert track1 is not None and track2 is not None
        t1, t2 = parse_track1(track1), parse_track2(track2)
        for parsed in (t1, t2):
            assert parsed.pan == entry["expected"]["pan"]
            assert parsed.expiry_yymm == entry["expected"]["expiration"]
            assert parsed.service_code == entry["expected"]["service_code"]


def test_vector_file_covers_every_kind() -> None:
    assert {_kind(e) for e in TRACKS} == {"lrc", "track1", "track2", "emv57", "combined"}


# ----------------------------------------------------------------------------------------------- track 1


def test_track1_fields_names_and_expiry_views() -> None:
    t1 = parse_track1("%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?")
    assert t1.pan == "4266841088889999"
    assert t1.surname == "BUSH JR"
    assert t1.first_name == "GEORGE W"  # the middle initial stays with the first name
    assert t1.title == "MR"
    assert t1.full_name == "GEORGE W BUSH JR"
    assert t1.raw_name == "BUSH JR/GEORGE W.MR"
    assert (t1.expiry_yymm, t1.expiry_mmyy, t1.expiry_month, t1.expiry_year) == ("0809", "0908", "09", "08")
    assert t1.service_code == "101"
    assert t1.discretionary == "100001100000000046000000"
    assert t1.raw == "B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000"
    assert t1.with_sentinels == "%" + t1.raw + "?"


@pytest.mark.parametrize(
    ("name", "surname", "first", "title"),
    [
        ("DOE/ JOHN              ", "DOE", "JOHN", None),
        ("DOE/JOHN L                ", "DOE", "JOHN L", None),
        ("SMITH/JOHN M.DR", "SMITH", "JOHN M", "DR"),
        ("ALISON-MAYNE/B", "ALISON-MAYNE", "B", None),
        ("CARDHOLDER", "CARDHOLDER", None, None),
        ("/JOHN", None, "JOHN", None),
        ("   ", None, None, None),
        ("", None, None, None),
    ],
)
def test_track1_name_split(name: str, surname: str | None, first: str | None, title: str | None) -> None:
    t1 = parse_track1(f"%B4242424242424242^{name}^2512101?")
    assert (t1.surname, t1.first_name, t1.title) == (surname, first, title)
    assert t1.raw_name == name


def test_track1_without_sentinels_and_with_lrc_and_padding() -> None:
    bare = "B4242424242424242^DOE/JOHN^25121010000?"
    assert parse_track1(bare) == parse_track1("%" + bare)
    assert parse_track1("%B4242424242424242^DOE/JOHN^25121010000").discretionary == "0000"
    assert parse_track1("%B4242424242424242^DOE/JOHN^25121010000?X\x00\x00").pan == "4242424242424242"


def test_track1_pan_with_group_spaces() -> None:
    t1 = parse_track1("%B3782 822463 10005^AMEX/TEST^2512101?")
    assert t1.pan == "378282246310005"


def test_track1_empty_tail_is_all_absent() -> None:
    t1 = parse_track1("%B4242424242424242^DOE/JOHN^?")
    assert (t1.expiry_yymm, t1.service_code, t1.discretionary) == (None, None, None)
    assert t1.expiry_mmyy is None and t1.expiry_month is None and t1.expiry_year is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("%A4242424242424242^DOE/JOHN^2512101?", "format code B"),
        ("%B4242424242424242^DOE/JOHN?", "two '\\^' field separators"),
        ("%B42424242424242424242^DOE/JOHN^2512101?", "8 to 19 digits"),
        ("%B4242^DOE/JOHN^2512101?", "8 to 19 digits"),
        ("%B42424242424242x2^DOE/JOHN^2512101?", "8 to 19 digits"),
        ("%B4242424242424242^DOE/JOHN^25?", "expiry must be 4 digits"),
        ("%B4242424242424242^DOE/JOHN^25AB101?", "expiry must be 4 digits"),
        ("%B4242424242424242^DOE/JOHN^25121?", "service code must be 3 digits"),
        ("%B4242424242424242^DOE/JOHN^2512101?XY", "after the end sentinel"),
        ("", "format code B"),
    ],
)
def test_track1_rejections_never_quote_the_track(text: str, message: str) -> None:
    with pytest.raises(TrackError, match=message) as info:
        parse_track1(text)
    assert "4242" not in str(info.value)


def test_track_error_is_a_value_error() -> None:
    assert issubclass(TrackError, ValueError)
    with pytest.raises(TrackError):
        parse_track1(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------- track 2


@pytest.mark.parametrize(
    "text",
    [
        ";4242424242424242=25121011234?",
        "4242424242424242=25121011234",
        ";4242424242424242=25121011234?7",
        ";4242424242424242=25121011234?\x00\x00\r\n",
        "4242424242424242D25121011234",
        "4242424242424242d25121011234",
        "4242424242424242D25121011234F",
        "4242424242424242D25121011234F0000",
        "B4242424242424242D25121011234F",
    ],
)
def test_track2_forms_parse_to_the_same_record(text: str) -> None:
    t2 = parse_track2(text)
    assert t2 == Track2("4242424242424242", "2512", "101", "1234", "4242424242424242=25121011234")


def test_track2_absent_fields() -> None:
    t2 = parse_track2(";4242424242424242===1234?")
    assert (t2.expiry_yymm, t2.service_code, t2.discretionary) == (None, None, "1234")
    t2 = parse_track2("4242424242424242DD101")
    assert (t2.expiry_yymm, t2.service_code, t2.raw) == (None, "101", "4242424242424242==101")
    t2 = parse_track2(";4242424242424242=?")
    assert (t2.expiry_yymm, t2.service_code, t2.discretionary) == (None, None, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (";4242424242424242?", "separator is required"),
        (";=2512101?", "separator is required"),
        (";4242424242424242^2512101?", "separator is required"),
        (";4242=2512101?", "8 to 19 digits"),
        (";4242424242424242=25?", "expiry must be 4 digits"),
        (";4242424242424242=251210?", "service code must be 3 digits"),
        (";4242424242424242=2512101AB?", "discretionary data must be digits"),
        ("B4242424242424242=2512101", "leading 'B'"),
        (";4242424242424242=2512101?12", "after the end sentinel"),
    ],
)
def test_track2_rejections_never_quote_the_track(text: str, message: str) -> None:
    with pytest.raises(TrackError, match=message) as info:
        parse_track2(text)
    assert "4242" not in str(info.value)


@given(
    pan=st.text(alphabet="0123456789", min_size=8, max_size=19),
    expiry=st.text(alphabet="0123456789", min_size=4, max_size=4),
    service=st.text(alphabet="0123456789", min_size=3, max_size=3),
    discretionary=st.text(alphabet="0123456789", max_size=12),
    sentinels=st.booleans(),
)
def test_track2_round_trip(pan: str, expiry: str, service: str, discretionary: str, sentinels: bool) -> None:
    body = f"{pan}={expiry}{service}{discretionary}"
    text = f";{body}?{track_lrc(';' + body + '?')}" if sentinels else body
    t2 = parse_track2(text)
    assert (t2.pan, t2.expiry_yymm, t2.service_code, t2.discretionary or "") == (pan, expiry, service, discretionary)
    assert t2.raw == body


@given(
    pan=st.text(alphabet="0123456789", min_size=8, max_size=19),
    surname=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ-'", min_size=1, max_size=12),
    first=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=10),
    expiry=st.text(alphabet="0123456789", min_size=4, max_size=4),
    service=st.text(alphabet="0123456789", min_size=3, max_size=3),
    discretionary=st.text(alphabet="0123456789 ", max_size=20),
)
def test_track1_round_trip(pan: str, surname: str, first: str, expiry: str, service: str, discretionary: str) -> None:
    track = f"%B{pan}^{surname}/{first}^{expiry}{service}{discretionary}?"
    t1 = parse_track1(track + track_lrc(track))
    assert (t1.pan, t1.surname, t1.first_name) == (pan, surname, first)
    assert (t1.expiry_yymm, t1.service_code, t1.discretionary or "") == (expiry, service, discretionary)
    assert t1.with_sentinels == track


# ----------------------------------------------------------------------------------------------- LRC, bytes


def test_track_lrc_rejects_characters_outside_the_set() -> None:
    with pytest.raises(TrackError, match="character set"):
        track_lrc(";4242424242424242=2512^?")
    with pytest.raises(TrackError, match="start sentinel"):
        track_lrc("")


def test_strip_track_bytes_on_the_idtech_decrypted_block() -> None:
    entry = IDTECH["idtech-enhanced-tracks-ksn02"]
    block = bytes.fromhex(entry["t2_decrypted_block_hex"])
    expected_t2 = entry["expected_t2"]  # track, end sentinel, LRC
    assert strip_track_bytes(block) == expected_t2[:-1].encode()
    assert track_lrc(expected_t2[:-1]) == expected_t2[-1]
    t1 = entry["expected_t1"]
    assert strip_track_bytes(t1.encode() + b"\x00\x00\x00") == t1[:-1].encode()


def test_strip_track_bytes_on_a_zero_padded_track_without_lrc() -> None:
    entry = IDTECH["data-key-e00008-hogan"]
    plaintext = bytes.fromhex(entry["plaintext_hex"])
    assert strip_track_bytes(plaintext) == entry["plaintext_ascii_zero_padded"].encode()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"%B4242424242424242^A/B^2512101?;;4242424242424242=2512101?0", None),  # track-1 LRC is ';'
        (b"%B4242424242424242^A/B^2512101?;4242424242424242=2512101?", None),  # no LRCs
        (b"4242424242424242=2512=123\x00\x00\x00\x00\x00\x00\x00", b"4242424242424242=2512=123"),  # keyed
        (b"", b""),
        (b"\x00" * 8, b""),
        (b";4242424242424242=2512101", b";4242424242424242=2512101"),  # no end sentinel
    ],
)
def test_strip_track_bytes_cases(data: bytes, expected: bytes | None) -> None:
    if expected is None:
        expected = b"%B4242424242424242^A/B^2512101?;4242424242424242=2512101?"
    assert strip_track_bytes(data) == expected


def test_split_tracks_with_lrcs_and_missing_tracks() -> None:
    t1 = "%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?"
    t2 = ";4266841088889999=080910110000046?"
    assert split_tracks(t1 + "!" + t2 + "0") == (t1, t2)
    assert split_tracks(t2 + "0") == (None, t2)
    assert split_tracks(t1) == (t1, None)
    assert split_tracks("") == (None, None)
    assert split_tracks(";0123456789?") == (None, None)  # not a track 2 (no separator)


# ----------------------------------------------------------------------------------------------- keyed


@pytest.mark.parametrize(
    ("text", "expiry", "cvv"),
    [
        ("4242424242424242", None, None),
        ("4242424242424242=2512", "2512", None),
        ("4242424242424242=2512=123", "2512", "123"),
        ("378282246310005=2512=1234", "2512", "1234"),
        ("4242424242424242==123", None, "123"),
        ("  4242424242424242=2512=123\x00\x00", "2512", "123"),
    ],
)
def test_parse_keyed(text: str, expiry: str | None, cvv: str | None) -> None:
    keyed = parse_keyed(text)
    assert keyed.pan == text.strip(" \x00")[: len(keyed.pan)]
    assert (keyed.expiry_yymm, keyed.cvv) == (expiry, cvv)


def test_keyed_expiry_views() -> None:
    keyed = parse_keyed("4242424242424242=2512=123")
    assert (keyed.expiry_mmyy, keyed.expiry_month, keyed.expiry_year) == ("1225", "12", "25")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "4242",
        "42424242424242424242",
        "4242424242424242=",
        "4242424242424242=25",
        "4242424242424242=2512=12",
        "4242424242424242=2512=12345",
        "4242424242424242=2512=123=1",
        "4242 4242 4242 4242",
        "4242424242424242;2512",
    ],
)
def test_parse_keyed_rejections(text: str) -> None:
    with pytest.raises(TrackError) as info:
        parse_keyed(text)
    assert "4242" not in str(info.value)


# ----------------------------------------------------------------------------------------------- repr


def test_reprs_show_a_masked_pan_only() -> None:
    records = [
        parse_track1("%B4242424242424242^DOE/JOHN^25121011234?"),
        parse_track2(";4242424242424242=25121011234?"),
        parse_keyed("4242424242424242=2512=123"),
    ]
    for record in records:
        text = repr(record)
        assert "4242424242424242" not in text
        assert "424242******4242" in text
        assert "1234" not in text and "123'" not in text


# ----------------------------------------------------------------------------------------------- formats

T1 = parse_track1("%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?")
T2 = parse_track2(";4266841088889999=080910110000046?")
KEYED = KeyedEntry(pan="4242424242424242", expiry_yymm="2512", cvv="123")

SWIPED_EXPECTED = {
    "rawTrack2": ";4266841088889999=080910110000046?",
    "track2": "4266841088889999=080910110000046",
    "track2equivalentLower": "4266841088889999d080910110000046",
    "track2equivalentUpper": "4266841088889999D080910110000046",
    "rawTrack1": "%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?",
    "Track1": "B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000",
    "pan": "4266841088889999",
    "expiry": "0908",
    "expiryMonth": "09",
    "expiryYear": "08",
    "cvv": None,
    "serviceCode": "101",
    "discretionary": "10000046",  # from track 2, the track authorisations carry
    "firstName": "GEORGE W",
    "surname": "BUSH JR",
    "firstNameAndSurname": "GEORGE W BUSH JR",
    "rawName": "BUSH JR/GEORGE W.MR",
}
KEYED_EXPECTED = {
    "pan": "4242424242424242",
    "expiry": "1225",
    "expiryMonth": "12",
    "expiryYear": "25",
    "cvv": "123",
}


def test_format_table_lists_the_17_spec_formats() -> None:
    assert len(TRACK_FORMATS) == 17 == len(set(TRACK_FORMATS))
    assert set(SWIPED_EXPECTED) == set(TRACK_FORMATS)


@pytest.mark.parametrize("kind", TRACK_FORMATS)
def test_track_format_swiped(kind: str) -> None:
    assert track_format(kind, T1, T2, None) == SWIPED_EXPECTED[kind]


@pytest.mark.parametrize("kind", TRACK_FORMATS)
def test_track_format_keyed(kind: str) -> None:
    assert track_format(kind, None, None, KEYED) == KEYED_EXPECTED.get(kind)


@pytest.mark.parametrize("kind", TRACK_FORMATS)
def test_track_format_nothing(kind: str) -> None:
    assert track_format(kind, None, None, None) is None


def test_track_format_track1_only_and_fallbacks() -> None:
    assert track_format("pan", T1, None, None) == "4266841088889999"
    assert track_format("discretionary", T1, None, None) == "100001100000000046000000"
    assert track_format("track2", T1, None, None) is None
    # An absent expiry in track 2 falls back to track 1's.
    no_expiry = parse_track2(";4266841088889999==101?")
    assert track_format("expiry", T1, no_expiry, None) == "0908"


def test_track_format_emv_track2_equivalent() -> None:
    t2 = parse_track2(decode_track2_equivalent(bytes.fromhex("4761739001010010D15122011143878089")))
    assert track_format("rawTrack2", None, t2, None) == ";4761739001010010=15122011143878089?"
    assert track_format("track2equivalentUpper", None, t2, None) == "4761739001010010D15122011143878089"
    assert track_format("expiry", None, t2, None) == "1215"
    assert track_format("firstName", None, t2, None) is None


def test_track_format_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown parser substitution format"):
        track_format("track3", T1, T2, None)
