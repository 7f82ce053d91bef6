"""Wallet payload parsing: apay_payload forms, decrypted payment data, amount and currency checks."""

from __future__ import annotations

import base64
import json
from datetime import date
from typing import Any

import pytest

from local.wallet_token_forge import sample_payment_data
from vaultcore.wallet.errors import W
from vaultcore.wallet.token_payload import (
    WalletPayloadError,
    amount_in_minor_units,
    card_from_payment_data,
    check_amount_and_currency,
    parse_apay_payload,
    payment_network,
    token_transaction_id,
)

TXID = "AB" * 32
PAYMENT_DATA: dict[str, Any] = {"version": "EC_v1", "data": "ZGF0YQ==", "signature": "c2ln",
                                "header": {"ephemeralPublicKey": "a2V5", "publicKeyHash": "aGFzaA==", "transactionId": TXID}}
FULL = {"paymentData": PAYMENT_DATA, "paymentMethod": {"displayName": "Visa 1111", "network": "Visa", "type": "debit"},
        "transactionIdentifier": TXID}


def code_of(excinfo) -> int:
    return excinfo.value.code


@pytest.mark.parametrize("form", [
    json.dumps(FULL),
    "  " + json.dumps(FULL) + "\n",
    base64.b64encode(json.dumps(FULL).encode()).decode(),
    base64.urlsafe_b64encode(json.dumps(FULL).encode()).decode().rstrip("="),
    json.dumps(PAYMENT_DATA),
    base64.b64encode(json.dumps(PAYMENT_DATA).encode()).decode(),
    json.dumps({**FULL, "paymentData": base64.b64encode(json.dumps(PAYMENT_DATA).encode()).decode()}),
    FULL,
])
def test_every_payload_form_gives_the_same_token(form):
    token = parse_apay_payload(form)
    assert token.get("paymentData", token) == PAYMENT_DATA
    assert token_transaction_id(token) == TXID.lower()


def test_network_comes_from_the_full_token_only():
    assert payment_network(parse_apay_payload(json.dumps(FULL))) == "Visa"
    assert payment_network(parse_apay_payload(json.dumps(PAYMENT_DATA))) is None


@pytest.mark.parametrize(("payload", "code"), [
    (None, W.PAYLOAD_MISSING), ("", W.PAYLOAD_MISSING), ("   ", W.PAYLOAD_MISSING),
    ("{not json", W.PAYLOAD_MALFORMED), ("%%%", W.PAYLOAD_MALFORMED), ("[1, 2]", W.PAYLOAD_MALFORMED),
    (base64.b64encode(b"[1]").decode(), W.PAYLOAD_MALFORMED), (json.dumps({"paymentData": {}}), W.PAYLOAD_MALFORMED),
    (json.dumps({**PAYMENT_DATA, "signature": None}), W.PAYLOAD_MALFORMED),
    (json.dumps({**PAYMENT_DATA, "header": {**PAYMENT_DATA["header"], "transactionId": "xyz"}}), W.PAYLOAD_MALFORMED),
    (json.dumps({"paymentData": "!!notbase64!!"}), W.PAYLOAD_MALFORMED), ("{" * 40_000, W.PAYLOAD_MALFORMED),
    (12345, W.PAYLOAD_MALFORMED),
])
def test_malformed_payloads_are_refused_with_their_code(payload, code):
    with pytest.raises(WalletPayloadError) as excinfo:
        parse_apay_payload(payload)
    assert code_of(excinfo) == code


def test_card_from_payment_data_maps_every_field_and_hides_the_pan_in_repr():
    card = card_from_payment_data(sample_payment_data(expiration="291231", eci="05"), "ab" * 32, "Visa",
                                  date(2026, 1, 1))
    assert (card.pan, card.expiry_mmyy, card.cryptogram, card.eci, card.brand, card.last4) == (
        "4111111111111111", "1229", "AOBiPOjqnc7iAAvBXrBqAoABFA==", "05", "Visa", "1111")
    assert "4111111111111111" not in repr(card) and "AOBiPO" not in repr(card)


@pytest.mark.parametrize(("changes", "code"), [
    ({"applicationPrimaryAccountNumber": "4111111111111112"}, W.PAYMENT_DATA),  # Luhn
    ({"applicationPrimaryAccountNumber": None}, W.PAYMENT_DATA),
    ({"applicationExpirationDate": "2913"}, W.PAYMENT_DATA),
    ({"applicationExpirationDate": "291331"}, W.PAYMENT_DATA),
    ({"applicationExpirationDate": "251231"}, W.CARD_EXPIRED),
    ({"paymentDataType": "EMV"}, W.PAYMENT_DATA),
    ({"paymentData": {"eciIndicator": "5"}}, W.PAYMENT_DATA),
    ({"paymentData": {"onlinePaymentCryptogram": "x", "eciIndicator": "abc"}}, W.PAYMENT_DATA),
])
def test_incomplete_or_expired_payment_data(changes, code):
    with pytest.raises(WalletPayloadError) as excinfo:
        card_from_payment_data({**sample_payment_data(), **changes}, "ab", None, date(2026, 1, 15))
    assert code_of(excinfo) == code


def test_expiry_month_is_valid_through_its_last_day():
    card = card_from_payment_data(sample_payment_data(expiration="260131"), "ab", None, date(2026, 1, 31))
    assert card.expiry_mmyy == "0126"


@pytest.mark.parametrize(("amount", "currency", "minor"), [
    ("1.00", "USD", 100), ("1", "USD", 100), ("10.5", "EUR", 1050), ("100", "JPY", 100), ("1.5", "JPY", None),
    ("1.001", "USD", None), ("-1", "USD", None), ("abc", "USD", None), ("NaN", "USD", None), ("1.234", "KWD", 1234)])
def test_amount_in_minor_units(amount, currency, minor):
    assert amount_in_minor_units(amount, currency) == minor


def test_amount_and_currency_must_match_the_token():
    data = sample_payment_data(amount=1999, currency_code="840")
    check_amount_and_currency(data, "19.99", "USD")
    check_amount_and_currency(data, "19.99", "840")
    with pytest.raises(WalletPayloadError) as excinfo:
        check_amount_and_currency(data, "20.00", "USD")
    assert code_of(excinfo) == W.AMOUNT_MISMATCH
    with pytest.raises(WalletPayloadError) as excinfo:
        check_amount_and_currency(data, "19.99", "EUR")
    assert code_of(excinfo) == W.CURRENCY_MISMATCH
    with pytest.raises(WalletPayloadError) as excinfo:
        check_amount_and_currency(sample_payment_data(currency_code="999"), "1.00", "USD")
    assert code_of(excinfo) == W.CURRENCY_MISMATCH
    check_amount_and_currency(sample_payment_data(amount=500, currency_code="392"), "500", "JPY")
