"""Card-present sales on QSAPI in-process on moto (issue 20, item 9): clear tracks (card_tracks) and P2PE reader
payloads made by the simulator, decrypted through the parser's own function; refusals; and what the tables and
the logs hold afterwards (no card number, track or CVV)."""

from __future__ import annotations

import io
import json
import logging
from urllib.parse import urlencode

import pytest

from tests.helpers import admin, call
from vaultcore.crypto.dukpt import Scheme
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card
from vaultcore.gateway.errors import ERROR_MESSAGES, E
from vaultcore.settings import settings
from vaultcore.store.aws import client

PATH = "/api/qsapi/3.8"
RSAPI = "/api/rsapi/v1/transactions"
VISA = "4242424242424242"
TRACK1 = f"%B{VISA}^DOE/JANE^30121010000000000000?"
TRACK2 = f";{VISA}=30121010000000000000?"
SWIPE = TRACK1 + TRACK2
CARD = Card(pan="4761739001010010", expiry="3012", name="SMITH/JOHN", cvv="123")
TDES_BDK = simulator.DEFAULT_BDK[Scheme.TDES]


def _partner(platform, name: str = "Shop partner") -> dict:
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": name, "apiSecurity": "hmac"})
    assert status == 201, p
    return p


def _device(platform, partner_id: str, serial: str, device_type: str = "terminal", bdk: str = "bdk-shop",
            **extra) -> None:
    status, body = admin(platform, "POST", f"/admin/v1/partners/{partner_id}/devices",
                         {"serial": serial, "deviceType": device_type, "bdkId": bdk, **extra})
    assert status == 201, body


class Shop:
    def __init__(self, platform) -> None:
        self.platform = platform
        assert admin(platform, "POST", "/admin/v1/bdks", {"bdk": TDES_BDK, "scheme": "tdes", "bdkId": "bdk-shop"})[0] == 201
        self.partner = _partner(platform)["partnerId"]
        status, self.account = admin(platform, "POST", "/admin/v1/accounts", {
            "partnerId": self.partner, "options": {"tokenization": True, "token_payments": True}})
        assert status == 201, self.account
        self.creds = {"account_id": self.account["account_id"], "api_accesskey": self.account["api_accesskey"]}
        _device(platform, self.partner, "TERM-1")
        _device(platform, self.partner, "AUDIO-1", "audio-reader")

    def pay(self, form: bool = False, **variables) -> dict:
        merged = {**self.creds, "transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "12.34",
                  **variables}
        merged = {k: v for k, v in merged.items() if v is not None}
        if form:
            body, ctype = urlencode(merged), "application/x-www-form-urlencoded"
        else:
            body, ctype = json.dumps(merged), "application/json"
        status, _, payload = call(self.platform, "GatewayFunction", "POST", PATH, body, {"Content-Type": ctype},
                                  resource=PATH)
        assert status == 200, payload
        return payload

    def p2pe(self, fields: dict, serial: str = "TERM-1", **variables) -> dict:
        return self.pay(device_type=fields["deviceType"], device_serial=serial, ksn=fields.get("ksn"),
                        device_payload=fields["devicePayload"], **variables)

    def record(self, transaction_id: str) -> dict:
        status, _, payload = call(self.platform, "ReportingFunction", "POST", RSAPI,
                                  {**self.creds, "transaction_id": transaction_id,
                                   "include_fields": "bfid,vault_token_card_number"})
        assert status == 200, payload
        return payload["transaction"]


@pytest.fixture
def shop(platform):
    return Shop(platform)


def _transactions() -> list[dict]:
    return client("dynamodb").scan(TableName=settings().transactions_table)["Items"]


def _refused(body: dict, code: int) -> None:
    assert body["error"] is True and body["error_code"] == code, body
    assert body["transaction_approved"] is False and "transaction_id" not in body


# ----------------------------------------------------------------------------------------------- clear tracks
@pytest.mark.parametrize("form", [False, True])
def test_swiped_sale_is_approved_swiped_and_not_keyed(shop, form):
    body = shop.pay(form=form, card_tracks=SWIPE, zip="94107")
    assert body["transaction_approved"] is True and body["error_code"] == 0, body
    assert (body["swiped"], body["keyed"], body["entry_mode"]) == (True, False, "swiped")
    assert (body["last4"], body["card_expiration"], body["card_brand"].upper()) == ("4242", "1230", "VISA")
    assert (body["first_name"], body["last_name"]) == ("JANE", "DOE")
    assert body["authorization_message"] == "APPROVED"
    record = shop.record(body["transaction_id"])  # reported as swiped, auto-tokenized like a keyed card
    assert (record["swiped"], record["keyed"], record["entry_mode"]) == (True, False, "swiped")
    assert record["bfid"] and record["vault_token_card_number"] and record["vault_token_card_number"] != VISA


def test_one_track_is_enough_and_names_sent_win_over_the_tracks(shop):
    body = shop.pay(card_tracks=TRACK2)
    assert body["transaction_approved"] and body["swiped"] and "first_name" not in body
    body = shop.pay(card_tracks=TRACK1 + "9", first_name="Janet")  # with its LRC character
    assert body["transaction_approved"] and (body["first_name"], body["last_name"]) == ("Janet", "DOE")


def test_swiped_authorization_and_a_decline_carry_the_entry_mode(shop):
    auth = shop.pay(transaction_type="AUTHORIZATION", card_tracks=SWIPE)
    assert auth["transaction_approved"] and auth["swiped"] is True
    capture = shop.pay(transaction_type="CAPTURE", tender_type=None, token_id=auth["transaction_id"],
                       transaction_amount="12.34")
    assert capture["authorization_message"] == "CAPTURED" and capture["swiped"] is True
    declined = shop.pay(card_tracks=";4000000000000002=30121010000000000000?")
    assert declined["error_code"] == 500 and declined["swiped"] is True and declined["keyed"] is False


@pytest.mark.parametrize("tracks", [
    TRACK1 + "8",                                        # an LRC that is not the track's
    "%B4242424242424241^DOE/JANE^30121010000000000000?",  # Luhn failure
    ";4242424242424242=3013?",                          # month 13
    "%B4242424242424242^DOE/JANE^^^?",                  # no expiry
    "%B4242424242424242^DOE/JANE?",                     # one field separator
    "4242424242424242=3012",                            # no sentinels
    "garbage " + TRACK2,                                # text outside the tracks
    ";1234567=3012?",                                   # PAN too short
    f"%B{VISA}^DOE/JANE^3012101?;5555555555554444=3012101?",  # tracks of two cards
    "%B4242424242424242^DOE/JANE^30121010000000000000?\x01",   # a control character
])
def test_unreadable_tracks_are_card_data_unreadable(shop, tracks):
    before = len(_transactions())
    body = shop.pay(card_tracks=tracks)
    _refused(body, E.CARD_DATA_UNREADABLE)
    assert body["error_message"] == "CARD DATA UNREADABLE" == ERROR_MESSAGES[E.CARD_DATA_UNREADABLE]
    assert len(_transactions()) == before  # a refusal creates no transaction


def test_an_expired_swiped_card_is_204_like_a_keyed_one(shop):
    _refused(shop.pay(card_tracks=";4242424242424242=2001101?"), E.CARD_EXPIRED)


@pytest.mark.parametrize("extra, code", [
    ({"card_number": VISA, "card_expiration": "1230"}, E.PAYMENT_DATA),
    ({"card_verification": "123"}, E.PAYMENT_DATA),
    ({"device_payload": "00" * 8, "device_type": "terminal", "device_serial": "TERM-1"}, E.PAYMENT_DATA),
    ({"bank_account_number": "000123456789", "bank_routing_number": "011000015", "tender_type": None},
     E.PAYMENT_DATA),
    ({"tender_type": "ACH"}, E.TENDER_TYPE),
    ({"transaction_type": "CAPTURE", "token_id": "123456789012"}, E.PAYMENT_DATA),
])
def test_card_tracks_with_other_payment_data_is_refused(shop, extra, code):
    _refused(shop.pay(**{"card_tracks": SWIPE, **extra}), code)


# ----------------------------------------------------------------------------------------------- P2PE
@pytest.mark.parametrize("mode", ["track1", "track2", "emv57"])
def test_p2pe_terminal_sale_is_decrypted_and_paid_as_swiped(shop, mode):
    body = shop.p2pe(simulator.terminal_payload(CARD, mode))
    assert body["transaction_approved"] is True, body
    assert (body["swiped"], body["keyed"], body["entry_mode"]) == (True, False, "swiped")
    assert (body["last4"], body["card_expiration"]) == ("0010", "1230")
    if mode == "track1":
        assert (body["first_name"], body["last_name"]) == ("JOHN", "SMITH")


@pytest.mark.parametrize("payload_format", ["original", "enhanced"])
def test_p2pe_audio_reader_sale(shop, payload_format):
    fields = simulator.audio_reader_payload(CARD, payload_format=payload_format, framed=True)
    body = shop.p2pe(fields, serial="AUDIO-1")
    assert body["transaction_approved"] is True and body["swiped"] is True and body["last4"] == "0010", body


def test_p2pe_keyed_entry_is_keyed_and_its_cvv_reaches_the_processor(shop):
    body = shop.p2pe(simulator.terminal_payload(CARD, "keyed"))
    assert body["transaction_approved"] is True, body
    assert (body["swiped"], body["keyed"], body["entry_mode"], body["cvv2_response"]) == (False, True, "keyed", "M")


def test_p2pe_device_problems_are_one_refusal_that_says_nothing_about_the_device(shop, platform):
    fields = simulator.terminal_payload(CARD, "track2")
    other = _partner(platform, "Other partner")["partnerId"]
    _device(platform, other, "OTHER-TERM")
    _device(platform, shop.partner, "TERM-OFF", status="inactive")
    bodies = [shop.p2pe(fields, serial="NO-SUCH-TERM"),       # unknown
              shop.p2pe(fields, serial="OTHER-TERM"),         # another partner's
              shop.p2pe(fields, serial="TERM-OFF"),           # inactive
              shop.p2pe({**fields, "deviceType": "audio-reader"}),  # not the registered device's type
              shop.p2pe({**fields, "deviceType": "no-such-type"})]
    for body in bodies:
        _refused(body, E.DEVICE_NOT_REGISTERED)
    assert len({json.dumps(b, sort_keys=True) for b in bodies}) == 1  # identical answers
    assert "TERM" not in json.dumps(bodies[0]) and "bdk" not in json.dumps(bodies[0]).lower()


def test_p2pe_without_a_partner_is_device_not_registered(platform, shop):
    status, acct = admin(platform, "POST", "/admin/v1/accounts", {"partnerId": None, "options": {}})
    assert status == 201
    shop.creds = {"account_id": acct["account_id"], "api_accesskey": acct["api_accesskey"]}
    _refused(shop.p2pe(simulator.terminal_payload(CARD, "track2")), E.DEVICE_NOT_REGISTERED)


def test_p2pe_payloads_that_do_not_decrypt_to_a_card_are_unreadable(shop):
    wrong_key = simulator.terminal_payload(CARD, "track2", bdk=bytes.fromhex("11" * 16))
    good = simulator.terminal_payload(CARD, "track2")
    tampered = {**good, "devicePayload": good["devicePayload"][:-2] + ("00" if good["devicePayload"][-2:] != "00"
                                                                        else "11")}
    no_expiry = simulator.terminal_payload(CARD, "emv5a")  # a PAN alone: nothing to pay with
    luhn = simulator.terminal_payload(Card(pan="4761739001010011", expiry="3012"), "track2")
    for fields in (wrong_key, tampered, no_expiry, luhn, {**good, "ksn": "FFFF"},
                   {**good, "devicePayload": good["devicePayload"][:-2]}, {**good, "devicePayload": "0" * 15}):
        body = shop.p2pe(fields)
        assert body["error_code"] in (E.CARD_DATA_UNREADABLE, E.VARIABLE), body
        assert body["transaction_approved"] is False and "transaction_id" not in body
    _refused(shop.p2pe(wrong_key), E.CARD_DATA_UNREADABLE)
    _refused(shop.p2pe(no_expiry), E.CARD_DATA_UNREADABLE)
    _refused(shop.p2pe(luhn), E.CARD_DATA_UNREADABLE)
    _refused(shop.p2pe({**good, "ksn": "FFFF"}), E.CARD_DATA_UNREADABLE)
    _refused(shop.p2pe({**good, "devicePayload": "ZZ"}), E.VARIABLE)


def test_p2pe_needs_type_serial_and_payload(shop):
    fields = simulator.terminal_payload(CARD, "track2")
    _refused(shop.pay(device_serial="TERM-1", ksn=fields["ksn"], device_payload=fields["devicePayload"]), E.MISSING)
    _refused(shop.pay(device_type="terminal", device_serial="TERM-1", ksn=fields["ksn"]), E.MISSING)


# ----------------------------------------------------------------------------------------------- storage and logs
def test_tables_and_logs_hold_no_card_number_track_or_cvv(shop, capsys):
    root = logging.getLogger("vault")
    captured = io.StringIO()
    handler = logging.StreamHandler(captured)
    handler.setFormatter(root.handlers[0].formatter if root.handlers else None)
    root.addHandler(handler)
    try:
        shop.pay(card_tracks=SWIPE, idempotency_key="cp-1")
        shop.pay(card_tracks=TRACK1 + "8")  # refused: logged without data
        shop.p2pe(simulator.terminal_payload(CARD, "track1"), idempotency_key="cp-2")
        shop.p2pe(simulator.terminal_payload(CARD, "keyed"))
        shop.p2pe(simulator.audio_reader_payload(CARD), serial="AUDIO-1")
        shop.p2pe(simulator.terminal_payload(CARD, "track2"), serial="NO-SUCH-TERM")
        shop.pay(transaction_type="AUTHORIZATION", card_tracks=SWIPE)
    finally:
        root.removeHandler(handler)
    out = capsys.readouterr()
    logs = captured.getvalue() + out.out + out.err
    assert "transaction recorded" in logs  # the handler saw the gateway's own lines
    ddb = client("dynamodb")
    secrets = [VISA, CARD.pan, "DOE/JANE", "SMITH/JOHN", "30121010000000000000", "=3012", "^3012", CARD.pan[6:]]
    tables = (settings().transactions_table, settings().idempotency_table, settings().tokens_table)
    texts = {t: json.dumps(ddb.scan(TableName=t)["Items"]) for t in tables}
    assert json.loads(texts[settings().transactions_table])
    for where, text in [*texts.items(), ("logs", logs)]:
        for secret in secrets:
            assert secret not in text, (where, secret)
    for item in json.loads(texts[settings().transactions_table]):
        assert not {"card_number", "card_tracks", "device_payload", "card_verification", "cvv"} & set(item)
        assert all(list(v.values())[0] != CARD.cvv for v in item.values())
