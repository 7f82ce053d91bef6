"""The sandbox processor (every trigger, brands, AVS/CVV codes, identifiers) and the gateway's pure helpers."""

from __future__ import annotations

import hashlib
import re

import pytest

from vaultcore.gateway import processor
from vaultcore.gateway.accounts import expected_hash
from vaultcore.gateway.currencies import CURRENCIES, is_currency, minor_units
from vaultcore.gateway.idempotency import fingerprint, record_id
from vaultcore.gateway.processor import AchPayment, CardPayment, authorize_card, debit_ach

EXPECTED = {  # card -> (approved, error_code, authorization_message, avs with zip, cvv2 with cvv)
    "4242424242424242": (True, 0, "APPROVED", "Z", "M"),
    "4124939999999990": (True, 0, "APPROVED", "Z", "M"),
    "4000000000000002": (False, 500, "DECLINED", "Z", "M"),
    "4000000000000069": (False, 501, "DECLINED", "Z", "M"),
    "4000000000000127": (False, 502, "DECLINED", "Z", "N"),
    "4000000000000119": (False, 503, "ERROR", None, None),
    "4000000000000010": (False, 504, "DECLINED", "N", "M"),
    "4000000000000101": (False, 505, "DECLINED", "Z", "N"),
}


@pytest.mark.parametrize("pan", sorted(EXPECTED))
def test_every_trigger(pan):
    approved, code, message, avs, cvv2 = EXPECTED[pan]
    out = authorize_card(CardPayment(pan, "1230", cvv="123", zip="12345", amount_cents=100))
    assert (out.approved, out.error_code, out.authorization_message) == (approved, code, message)
    assert (out.avs_response, out.cvv2_response) == (avs, cvv2)
    assert out.card_brand == "VISA"
    if approved:
        assert re.fullmatch(r"[A-Z0-9]{6}", out.authorization_code)
    else:
        assert out.authorization_code is None


def test_triggers_table_matches_the_documented_numbers():
    assert set(processor.TRIGGERS) == set(EXPECTED)


def test_cvc_check_trigger_needs_a_cvv_to_fail():
    out = authorize_card(CardPayment("4000000000000101", "1230"))
    assert out.approved and out.cvv2_response == "P"


@pytest.mark.parametrize("street, zip_, avs", [("1 Main St", "12345", "Y"), (None, "12345", "Z"), ("1 Main St", None, "A"),
                                               (None, None, None)])
def test_avs_codes(street, zip_, avs):
    assert authorize_card(CardPayment("4242424242424242", "1230", street=street, zip=zip_)).avs_response == avs
    assert authorize_card(CardPayment("4000000000000010", "1230", street=street, zip=zip_)).avs_response == "N"


def test_cvv2_codes():
    assert authorize_card(CardPayment("4242424242424242", "1230")).cvv2_response == "P"
    assert authorize_card(CardPayment("4242424242424242", "1230", cvv="123")).cvv2_response == "M"
    assert authorize_card(CardPayment("4000000000000127", "1230", cvv="123")).cvv2_response == "N"


@pytest.mark.parametrize("pan, brand", [
    ("4242424242424242", "VISA"), ("5555555555554444", "MASTERCARD"), ("2223003122003222", "MASTERCARD"),
    ("2720990000000007", "MASTERCARD"), ("378282246310005", "AMERICAN EXPRESS"), ("371449635398431", "AMERICAN EXPRESS"),
    ("6011111111111117", "DISCOVER"), ("6445644564456445", "DISCOVER"), ("3530111333300000", "JCB"),
    ("36227206271667", "DINERS CLUB"), ("30569309025904", "DINERS CLUB"),
])
def test_brand_detection(pan, brand):
    out = authorize_card(CardPayment(pan, "1230"))
    assert out.approved and out.card_brand == brand


def test_amount_trigger_declines_1_01_in_the_certification_sandbox_only(monkeypatch):
    """Issue 20: the original's certification environment declines 1.01 (ActiveMerchant's PayConex fixtures)."""
    from vaultcore.settings import settings

    out = authorize_card(CardPayment("4242424242424242", "1230", amount_cents=101))
    assert settings().is_cert and (out.approved, out.error_code, out.authorization_message) == (False, 500, "DECLINED")
    assert out.authorization_code is None and out.card_brand == "VISA"
    assert authorize_card(CardPayment("4242424242424242", "1230", amount_cents=102)).approved
    assert authorize_card(CardPayment("4242424242424242", "1230", amount_cents=10100)).approved
    # a card trigger keeps its own outcome
    assert authorize_card(CardPayment("4000000000000069", "1230", amount_cents=101)).error_code == 501
    assert debit_ach(AchPayment("000123456789", "011000015", 101)).approved  # ACH is not affected
    monkeypatch.setattr(processor, "_certification", lambda: False)  # production: no amount trigger
    assert authorize_card(CardPayment("4242424242424242", "1230", amount_cents=101)).approved


def test_ach_is_approved():
    out = debit_ach(AchPayment("000123456789", "011000015", 2500))
    assert out.approved and out.error_code == 0 and out.card_brand is None and out.avs_response is None


def test_transaction_ids_are_12_digits_and_unique():
    ids = {processor.new_transaction_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(re.fullmatch(r"[1-9][0-9]{11}", i) for i in ids)


def test_transaction_timestamp_format():
    assert processor.transaction_timestamp(1360870400) == "2013-02-14 19:33:20"
    assert processor.transaction_timestamp(0) == "1970-01-01 00:00:00"


def test_hash_authentication_public_facts_example():
    text = "123456789012,e6f157d2-66cf-43d5-8a56-c4c57d5760d7,1360870400"
    assert expected_hash("123456789012", "e6f157d2-66cf-43d5-8a56-c4c57d5760d7", "1360870400", []) == \
        hashlib.sha256(text.encode()).hexdigest()
    assert expected_hash("1", "k", "2", ["10.00", "SALE"]) == hashlib.sha256(b"1,k,2,10.00,SALE").hexdigest()


def test_idempotency_fingerprint_is_keyed_ordered_and_ignores_credentials():
    a = {"transaction_amount": "1.00", "card_number": "4242424242424242", "api_accesskey": "x", "account_id": "1"}
    b = {"card_number": "4242424242424242", "transaction_amount": "1.00", "api_accesskey": "y", "hash": "z"}
    assert fingerprint(a, "key") == fingerprint(b, "key")
    assert fingerprint(a, "key") != fingerprint(a, "other key")
    assert fingerprint(a, "key") != fingerprint({**a, "transaction_amount": "1.01"}, "key")
    assert "4242424242424242" not in fingerprint(a, "key")
    assert fingerprint({**a, "idempotency_key": "k1"}, "key") == fingerprint({**a, "idempotency_key": "k2"}, "key")
    rid = record_id("123456789012", "4242424242424242")
    assert rid.startswith("qsapi#123456789012#") and "4242424242424242" not in rid


def test_currencies():
    assert is_currency("USD") and is_currency("JPY") and not is_currency("usd") and not is_currency("XTS")
    assert minor_units("JPY") == 0 and minor_units("KWD") == 3 and minor_units("EUR") == 2
    assert len(CURRENCIES) > 150 and all(re.fullmatch(r"[A-Z]{3}", c) for c in CURRENCIES)
