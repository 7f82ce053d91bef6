"""Card-present parsing (vaultcore.gateway.card_present) and the QSAPI request rules for it (issue 20, item 9).

Tracks come from the published vectors of tests/vectors/tracks.json (the track parser's own vectors): each
vector's verdict below is stated, not recomputed: a published test PAN that fails Luhn, an expiry with month 82,
or an LRC that is not the track's is unreadable for a payment even though the parser reads its fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vaultcore.gateway import card_present
from vaultcore.gateway.card_present import CardPresent, from_tracks, parse_tracks, source_of
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.gateway.validation import parse_variables, validate_request

VECTORS = {e["id"]: e for e in json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "tracks.json").read_text())["entries"]}
VISA = "4242424242424242"
SWIPE = f"%B{VISA}^DOE/JANE^30121010000000000000?;{VISA}=30121010000000000000?"
NOW = 1_780_000_000.0  # 2026-05


def _vector_text(vid: str) -> str:
    e = VECTORS[vid]
    return e["track_without_lrc"] + e["expected_lrc_char"] if e.get("type") == "track_lrc" else e["raw"]


# id -> (card_number, card_expiration MMYY, first_name, last_name), or None: unreadable (and why)
READABLE = {
    "t1-11": ("5266092201416174", "0416", "SUALEH", "FATEHI"),
    "t2-1": ("4716916000001234", "0918", None, None),
    "t2-2": ("5301250070000191", "0508", None, None),
    "t2-3": ("3540599999991047", "0508", None, None),
    "t2-4": ("5413330089020037", "1214", None, None),  # its LRC '?' is the track's
    "t2-5": ("5266092201416174", "0416", None, None),
    "combined-t1-t2": ("5266092201416174", "0416", "SUALEH", "FATEHI"),
    "lrc-t1-B51507": ("5150710200107903", "0909", "MASTERCARD", "PAYPASS"),  # LRC '?' verified
    "lrc-t2-515071": ("5150710200107903", "0909", None, None),  # LRC '0' verified
}
UNREADABLE = {
    "t1-1": "expiry 3782: month 82",
    "t1-2": "LRC '?' is not the track's ('7')",
    "t1-3": "no expiry",
    "t1-4": "PAN fails Luhn", "t1-5": "PAN fails Luhn", "t1-6": "PAN fails Luhn", "t1-7": "PAN fails Luhn",
    "t1-8": "PAN fails Luhn", "t1-9": "PAN fails Luhn", "t1-10": "PAN fails Luhn",
    "lrc-t1-B42668": "PAN fails Luhn (LRC '!' itself is right)",
    "lrc-t2-426684": "PAN fails Luhn",
    "lrc-t3-333333": "a track 3 only: no track 1 or 2",
}


def test_every_track_vector_has_a_verdict():
    swipes = {i for i, e in VECTORS.items() if not str(e.get("track", "")).startswith("emv")}
    assert swipes == set(READABLE) | set(UNREADABLE)


@pytest.mark.parametrize("vid", sorted(READABLE))
def test_readable_vectors(vid):
    card = parse_tracks(_vector_text(vid))
    assert (card.card_number, card.card_expiration, card.first_name, card.last_name) == READABLE[vid]
    assert card.entry_fields() == {"keyed": False, "swiped": True, "entry_mode": "swiped"}
    assert card.card_number not in repr(card)


@pytest.mark.parametrize("vid", sorted(UNREADABLE))
def test_unreadable_vectors(vid):
    with pytest.raises(GatewayError) as info:
        parse_tracks(_vector_text(vid))
    assert info.value.code == E.CARD_DATA_UNREADABLE and info.value.message == "CARD DATA UNREADABLE"


def test_lrc_vectors_with_a_wrong_lrc_are_unreadable():
    for vid in ("lrc-t1-B51507", "lrc-t2-515071"):
        e = VECTORS[vid]
        wrong = "1" if e["expected_lrc_char"] != "1" else "2"
        with pytest.raises(GatewayError):
            parse_tracks(e["track_without_lrc"] + wrong)


def test_both_tracks_with_their_lrcs_and_a_line_end():
    t1, t2 = VECTORS["lrc-t1-B51507"], VECTORS["lrc-t2-515071"]
    text = t1["track_without_lrc"] + t1["expected_lrc_char"] + t2["track_without_lrc"] + t2["expected_lrc_char"]
    assert parse_tracks(text + "\r\n").payment_values() == {
        "card_number": "5150710200107903", "card_expiration": "0909", "first_name": "MASTERCARD",
        "last_name": "PAYPASS"}


@pytest.mark.parametrize("text", [
    "", "   ", "?", "%", ";", "B4242424242424242^DOE/JANE^3012?", "%B4242424242424242^DOE/JANE^3012",
    "junk" + SWIPE, SWIPE + "junk", f";{VISA}=3012?;{VISA}=3012?x",
    f"%B{VISA}^DOE/JANE^3012101?;4000000000000002=3012101?",  # two cards
    f"%B{VISA}^DOE/JANE^2912101?;{VISA}=3012101?",              # two expiries
    "%B" + "4" * 20 + "^DOE/JANE^3012?",                         # PAN over 19 digits
    ";424242424242=3012?",                                       # 12 digits: not a payment card number here
    "%A4242424242424242^DOE/JANE^3012?",                         # format code A
])
def test_malformed_tracks_are_unreadable(text):
    with pytest.raises(GatewayError) as info:
        parse_tracks(text)
    assert info.value.code == E.CARD_DATA_UNREADABLE
    assert VISA not in info.value.message


def test_names_that_do_not_fit_the_gateway_fields_are_left_out():
    card = parse_tracks(f"%B{VISA}^DOE/J^3012101?")
    assert (card.first_name, card.last_name) == (None, "DOE")
    assert "first_name" not in card.payment_values()


def test_from_tracks_prefers_track2_and_needs_one():
    with pytest.raises(GatewayError):
        from_tracks(None, None)
    keyed = CardPresent(VISA, "1230", None, None, "keyed", "123")
    assert keyed.entry_fields() == {"keyed": True, "swiped": False, "entry_mode": "keyed"}
    assert keyed.payment_values()["card_verification"] == "123"


def test_resolve_p2pe_without_partner_is_device_not_registered():
    with pytest.raises(GatewayError) as info:
        card_present.resolve("p2pe", {"device_type": "terminal", "device_serial": "T", "device_payload": "00"}, None)
    assert info.value.code == E.DEVICE_NOT_REGISTERED


# ----------------------------------------------------------------------------------------------- request rules
def _validate(**variables):
    base = {"account_id": "123456789012", "api_accesskey": "k", "transaction_type": "SALE", "tender_type": "CARD",
            "transaction_amount": "10.00"}
    return validate_request(parse_variables("application/json", json.dumps({**base, **variables}).encode()), now=NOW)


def _code(**variables) -> int:
    with pytest.raises(GatewayError) as info:
        _validate(**variables)
    return info.value.code


def test_sources():
    assert _validate(card_tracks=SWIPE).source == "swiped"
    req = _validate(device_type="terminal", device_serial="T-1", ksn="FFFF9876543210E00001", device_payload="AB" * 8)
    assert (req.source, req.tender) == ("p2pe", "CARD")
    assert _validate(transaction_type="AUTHORIZATION", transaction_amount="0.00", card_tracks=SWIPE).amount_cents == 0
    assert source_of({}) is None


@pytest.mark.parametrize("extra, code", [
    ({"card_tracks": SWIPE, "card_number": VISA, "card_expiration": "1230"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "card_verification": "123"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "device_payload": "AB"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "bfid": "A" * 40}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "etoken": "A" * 40, "custom_id": "c1"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "bank_account_number": "000123456789", "bank_routing_number": "011000015",
      "tender_type": None}, E.PAYMENT_DATA),  # ACH implied by the bank fields, mixed with tracks
    ({"card_tracks": SWIPE, "bank_account_number": "000123456789"}, E.TENDER_TYPE),  # CARD with bank fields
    ({"card_tracks": SWIPE, "tender_type": "ACH"}, E.TENDER_TYPE),
    ({"card_tracks": SWIPE, "tender_type": None}, E.MISSING),
    ({"card_tracks": SWIPE, "tender_type": "APay"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "transaction_type": "CAPTURE", "token_id": "123456789012"}, E.PAYMENT_DATA),
    ({"card_tracks": SWIPE, "reissue": "1"}, E.REISSUE),
    ({"card_tracks": "%B4242\x01"}, E.CARD_DATA_UNREADABLE),
    ({"card_tracks": "x" * 513}, E.CARD_DATA_UNREADABLE),
    ({"device_serial": "T-1", "device_payload": "AB"}, E.MISSING),
    ({"device_type": "terminal", "device_payload": "AB"}, E.MISSING),
    ({"device_type": "terminal", "device_serial": "T-1"}, E.MISSING),
    ({"device_type": "terminal", "device_serial": "T 1", "device_payload": "AB"}, E.VARIABLE),
    ({"device_type": "terminal", "device_serial": "T-1", "device_payload": "XYZ"}, E.VARIABLE),
    ({"device_type": "terminal", "device_serial": "T-1", "device_payload": "AB", "ksn": "nothex"}, E.VARIABLE),
])
def test_refusals(extra, code):
    assert _code(**extra) == code  # a JSON null is an absent variable


def test_p2pe_variables_are_documented_names_of_the_parser_fields():
    assert card_present.P2PE_VARIABLES == ("device_type", "device_serial", "device_client_id", "ksn",
                                           "device_payload")
