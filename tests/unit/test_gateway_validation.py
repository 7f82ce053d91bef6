"""QSAPI request validation: every length boundary of the token and level 2 tables, the plaintext fields,
amounts, currencies, Luhn, expiry, ABA routing numbers, level 2 tax rules and the case table's requirements."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from vaultcore.gateway.errors import ERROR_MESSAGES, E, GatewayError
from vaultcore.gateway.validation import (
    PaymentData,
    aba_routing_valid,
    check_payment,
    expiry_state,
    format_cents,
    parse_amount,
    parse_variables,
    validate_request,
)

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC).timestamp()
VISA, MC, MC2, AMEX, DISCOVER = "4242424242424242", "5555555555554444", "2223003122003222", "378282246310005", "6011111111111117"
CARD = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": VISA, "card_expiration": "1230",
        "transaction_amount": "10.00"}
BFID = "b" * 60


def code_of(variables: dict, **kw) -> int:
    with pytest.raises(GatewayError) as err:
        req = validate_request(variables, now=NOW)
        if req.source in ("card", "ach"):
            check_payment(_payment(req), req, now=NOW)
    return err.value.code


def ok(variables: dict):
    req = validate_request(variables, now=NOW)
    if req.source in ("card", "ach"):
        check_payment(_payment(req), req, now=NOW)
    return req


def _payment(req) -> PaymentData:
    names = ("card_number", "card_expiration", "card_verification", "bank_account_number", "bank_routing_number",
             "zip", "first_name", "last_name", "email", "phone", "street_address1")
    return PaymentData("ACH" if req.source == "ach" else "CARD", {k: req.values[k] for k in names if k in req.values})


# ------------------------------------------------------------------------------------------------ body parsing
def test_form_and_json_give_the_same_variables():
    form = parse_variables("application/x-www-form-urlencoded", b"transaction_type=SALE&card_number=4242424242424242&zip=")
    js = parse_variables("application/json", json.dumps({"transaction_type": "SALE", "card_number": "4242424242424242",
                                                         "zip": ""}).encode())
    assert form == js == {"transaction_type": "SALE", "card_number": "4242424242424242"}


def test_json_numbers_and_booleans_become_text_and_unknown_names_are_ignored():
    out = parse_variables("application/json", b'{"transaction_amount": 10.5, "reissue": true, "x_secret": "1", "zip": null}')
    assert out == {"transaction_amount": "10.5", "reissue": "1"}


@pytest.mark.parametrize("content_type, body", [
    ("application/json", b"[1, 2]"), ("application/json", b'{"card_number": {"a": 1}}'),
    ("application/json", b'{"card_number": [1]}'), ("application/json", b"{nope"),
    ("application/xml", b"<a/>"), ("application/x-www-form-urlencoded", b"\xff\xfe"),
    ("application/x-www-form-urlencoded", b"a=1&b"),
])
def test_unreadable_bodies_are_error_100(content_type, body):
    with pytest.raises(GatewayError) as err:
        parse_variables(content_type, body)
    assert err.value.code == E.BODY


@pytest.mark.parametrize("content_type, body", [
    ("application/x-www-form-urlencoded", b"transaction_amount=1.00&transaction_amount=1000.00"),
    ("application/json", b'{"transaction_amount": "1.00", "transaction_amount": "1000.00"}'),
])
def test_a_variable_sent_twice_is_refused(content_type, body):
    with pytest.raises(GatewayError) as err:
        parse_variables(content_type, body)
    assert err.value.code == E.DUPLICATE_VARIABLE


def test_without_content_type_a_brace_means_json():
    assert parse_variables("", b' {"zip": "12345"}') == {"zip": "12345"}
    assert parse_variables("", b"zip=12345") == {"zip": "12345"}


def test_overlong_values_are_refused():
    with pytest.raises(GatewayError) as err:
        parse_variables("application/json", json.dumps({"street_address1": "a" * 5000}).encode())
    assert err.value.code == E.VARIABLE


# ------------------------------------------------------------------------------------------------ token table
TOKEN_TABLE = [  # name, min, max, numeric
    ("vault_token_card_number", 14, 19, True), ("vault_token_card_expiration", 4, 4, True),
    ("vault_token_card_verification", 3, 4, True), ("vault_token_bank_account_number", 4, 17, True),
    ("vault_token_bank_routing_number", 9, 9, True), ("vault_token_email", 5, 100, False),
    ("vault_token_first_name", 2, 50, False), ("vault_token_last_name", 2, 50, False),
    ("vault_token_phone", 2, 20, False), ("vault_token_street_address1", 2, 100, False),
    ("vault_token_zip", 3, 10, False),
]
TOKEN_BASE = {"transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "1.00", "bfid": BFID,
              "vault_token_card_number": "4" * 16, "vault_token_card_expiration": "1230"}


@pytest.mark.parametrize("name, low, high, numeric", TOKEN_TABLE)
def test_token_parameter_lengths_and_types(name, low, high, numeric):
    base = dict(TOKEN_BASE)
    if name.startswith("vault_token_bank"):
        base = {k: v for k, v in base.items() if not k.startswith("vault_token_card_")}
        base.update({"tender_type": "ACH", "vault_token_bank_account_number": "1234",
                     "vault_token_bank_routing_number": "123456789"})
    char = "1" if numeric else "a"
    for length in (low, high):
        ok({**base, name: char * length})
    for length in (low - 1, high + 1):
        if length > 0:
            assert code_of({**base, name: char * length}) == E.TOKEN_PARAMETER, (name, length)
    if numeric:
        assert code_of({**base, name: "a" * low}) == E.TOKEN_PARAMETER
    else:
        assert code_of({**base, name: "a\x01" + "a" * low}) == E.TOKEN_PARAMETER


@pytest.mark.parametrize("length, good", [(29, False), (30, True), (150, True), (151, False)])
def test_bfid_length_30_to_150(length, good):
    variables = {**TOKEN_BASE, "bfid": "A" * length}
    if good:
        ok(variables)
    else:
        assert code_of(variables) == E.TOKEN_PARAMETER


def test_reissue_is_a_boolean_of_length_one_and_needs_a_token_payment():
    ok({**TOKEN_BASE, "reissue": "1"})
    ok({**TOKEN_BASE, "reissue": "0"})
    assert code_of({**TOKEN_BASE, "reissue": "2"}) == E.REISSUE
    assert code_of({**TOKEN_BASE, "reissue": "10"}) == E.REISSUE
    assert code_of({**CARD, "reissue": "1"}) == E.REISSUE
    assert ok({**CARD, "reissue": "0"}).reissue is False


# ------------------------------------------------------------------------------------------------ level 2
@pytest.mark.parametrize("name", ["level2_merchant_reference", "level2_order_id"])
def test_level2_references_are_alphanumeric_up_to_17(name):
    ok({**CARD, name: "A1" * 8 + "Z"})
    assert code_of({**CARD, name: "A" * 18}) == E.LEVEL2_FIELD
    assert code_of({**CARD, name: "AB-12"}) == E.LEVEL2_FIELD
    ok({**CARD, name: "x"})


def test_level2_zip_is_any_alphanumeric_up_to_10():
    for value in ("1", "12345-6789", "SW1A1AA", "K1A0B1", "abcdefghij"):
        ok({**CARD, "level2_zip": value})
    for value in ("12345678901", "SW1A 1AA", "ab_1"):
        assert code_of({**CARD, "level2_zip": value}) == E.LEVEL2_FIELD


@pytest.mark.parametrize("tax, good", [("0.01", True), ("1", True), ("1.5", True), ("10.00", True), ("10.01", False),
                                       ("1.234", False), ("-1", False), ("abc", False), ("1e2", False)])
def test_level2_tax_is_a_non_negative_amount_not_above_the_transaction(tax, good):
    variables = {**CARD, "card_number": MC, "level2_tax": tax}
    if good:
        ok(variables)
    else:
        assert code_of(variables) == E.LEVEL2_FIELD


@pytest.mark.parametrize("pan, zero_ok", [(VISA, False), ("4000056655665556", False), (MC, True), (MC2, True),
                                          (AMEX, True), (DISCOVER, True)])
def test_level2_tax_rule_visa_above_zero_mastercard_zero_allowed(pan, zero_ok):
    cvv = "1234" if pan == AMEX else "123"
    variables = {**CARD, "card_number": pan, "card_verification": cvv, "level2_tax": "0.00"}
    if zero_ok:
        ok(variables)
    else:
        assert code_of(variables) == E.LEVEL2_TAX
    ok({**variables, "level2_tax": "0.01"})


def test_level2_data_is_for_card_sales_and_authorizations():
    ach = {"transaction_type": "SALE", "tender_type": "ACH", "transaction_amount": "1.00",
           "bank_account_number": "12345678", "bank_routing_number": "011000015"}
    assert code_of({**ach, "level2_order_id": "A1"}) == E.LEVEL2_FIELD
    assert code_of({"transaction_type": "CAPTURE", "transaction_amount": "1.00", "token_id": "123456789012",
                    "level2_tax": "1.00"}) == E.LEVEL2_FIELD


# ------------------------------------------------------------------------------------------------ plaintext fields
@pytest.mark.parametrize("name, values_ok, values_bad, code", [
    ("card_number", ["4" * 12 + "2", "4242424242424242", "4000000000000000006"], ["4" * 11 + "8", "42424242424242424241",
                                                                                   "4242 4242 4242 4242"], E.CARD_NUMBER),
    ("card_expiration", ["1226", "0130", "0626"], ["1330", "0030", "126", "01/26", "12345"], E.CARD_EXPIRATION),
    ("card_verification", ["123"], ["12", "12345", "12a"], E.CARD_VERIFICATION),
    ("zip", ["123", "12345-6789", "SW1A 1AA", "K1A0B1"], ["12", "12345678901", " 1234", "1234_5"], E.ZIP),
    ("first_name", ["Al", "A" * 50, "José"], ["A", "A" * 51, "A\nB"], E.VARIABLE),
    ("last_name", ["Li", "B" * 50], ["B", "B" * 51], E.VARIABLE),
    ("email", ["a@b.c", "x" * 90 + "@host.com"], ["a@b", "a b@c.de", "x" * 95 + "@host.com"], E.VARIABLE),
    ("phone", ["12", "+1 (555) 010-9999"], ["1", "1" * 21, "555-CALL"], E.VARIABLE),
    ("street_address1", ["1 A", "a" * 100], ["a", "a" * 101], E.VARIABLE),
    ("device_trans_id", ["a", "f" * 64, "6f2b-44_aa"], ["f" * 65, "a b", "a/b"], E.DEVICE_TRANS_ID),
    ("payment_type", ["ECOMMERCE", "moto", "Recurring"], ["WEB", "e-commerce"], E.PAYMENT_TYPE),
    ("idempotency_key", ["k", "k" * 255], ["k" * 256, "k\x01"], E.IDEMPOTENCY_KEY),
])
def test_plaintext_field_boundaries(name, values_ok, values_bad, code):
    for value in values_ok:
        variables = {**CARD, name: value}
        if name == "card_number":
            variables[name] = _luhn_fix(value)
        ok(variables)
    for value in values_bad:
        assert code_of({**CARD, name: value}) == code, (name, value)


def _luhn_fix(digits: str) -> str:
    from vaultcore.cards.luhn import luhn_check_digit

    return digits[:-1] + luhn_check_digit(digits[:-1])


def test_luhn_failure_is_202():
    assert code_of({**CARD, "card_number": "4242424242424241"}) == E.CARD_LUHN


@pytest.mark.parametrize("pan, cvv, good", [(VISA, "123", True), (VISA, "1234", False), (AMEX, "1234", True),
                                            (AMEX, "123", False), (MC, "123", True)])
def test_cvv_length_follows_the_brand(pan, cvv, good):
    variables = {**CARD, "card_number": pan, "card_verification": cvv}
    if good:
        ok(variables)
    else:
        assert code_of(variables) == E.CARD_VERIFICATION


@pytest.mark.parametrize("mmyy, state", [("0626", "ok"), ("0526", "expired"), ("1225", "expired"), ("0127", "ok"),
                                         ("0646", "ok"), ("0746", "too_far")])
def test_expiry_is_valid_through_its_month(mmyy, state):
    assert expiry_state(mmyy, NOW) == state
    if state == "ok":
        ok({**CARD, "card_expiration": mmyy})
    else:
        assert code_of({**CARD, "card_expiration": mmyy}) == (E.CARD_EXPIRED if state == "expired" else
                                                              E.CARD_EXPIRATION)


# ------------------------------------------------------------------------------------------------ ACH
ACH = {"transaction_type": "SALE", "tender_type": "ACH", "transaction_amount": "25.00",
       "bank_account_number": "000123456789", "bank_routing_number": "011000015"}


@pytest.mark.parametrize("routing, good", [("011000015", True), ("021000021", True), ("111000025", True),
                                           ("322271627", True), ("011000016", False), ("990000005", False),
                                           ("00000000", False), ("0110000150", False)])
def test_aba_routing_numbers(routing, good):
    assert aba_routing_valid(routing) is good
    if good:
        ok({**ACH, "bank_routing_number": routing})
    else:
        assert code_of({**ACH, "bank_routing_number": routing}) == E.ROUTING


@pytest.mark.parametrize("account, good", [("123", False), ("1234", True), ("1" * 17, True), ("1" * 18, False),
                                           ("12a4", False)])
def test_bank_account_number_4_to_17_digits(account, good):
    if good:
        ok({**ACH, "bank_account_number": account})
    else:
        assert code_of({**ACH, "bank_account_number": account}) == E.BANK_ACCOUNT


def test_ach_is_implied_by_bank_fields_and_is_sale_only():
    # spec: "ACH is implied by the bank fields": tender_type may be omitted.
    without_tender = {k: v for k, v in ACH.items() if k != "tender_type"}
    implied = ok(without_tender)
    assert (implied.source, implied.tender, implied.values["tender_type"]) == ("ach", "ACH", "ACH")
    bank_tokens = {"transaction_type": "SALE", "transaction_amount": "5.00", "bfid": BFID,
                   "vault_token_bank_account_number": "000123456789", "vault_token_bank_routing_number": "011000015"}
    assert validate_request(bank_tokens, now=NOW).tender == "ACH"
    # A tender_type that contradicts the data is refused; so is mixed card and bank data.
    assert code_of({**ACH, "tender_type": "CARD"}) == E.TENDER_TYPE
    assert code_of({**bank_tokens, "tender_type": "CARD"}) == E.TENDER_TYPE
    assert code_of({**CARD, "tender_type": "ACH"}) == E.TENDER_TYPE
    assert code_of({**without_tender, "card_number": VISA}) == E.PAYMENT_DATA
    assert code_of({**without_tender, "vault_token_card_number": "4242424242424242", "bfid": BFID}) == E.PAYMENT_DATA
    # Card data still names its tender (the spec's table requires it); bfid alone cannot imply one.
    assert code_of({k: v for k, v in CARD.items() if k != "tender_type"}) == E.MISSING
    assert code_of({"transaction_type": "SALE", "transaction_amount": "5.00", "bfid": BFID}) == E.MISSING
    assert code_of({**ACH, "transaction_type": "AUTHORIZATION"}) == E.ACH_TYPE
    assert code_of({**ACH, "bank_account_type": "BROKERAGE"}) == E.ACH_TYPE
    ok({**ACH, "bank_account_type": "savings"})
    assert code_of({**ACH, "card_number": VISA}) == E.PAYMENT_DATA
    assert code_of({k: v for k, v in ACH.items() if k != "bank_routing_number"}) == E.MISSING


# ------------------------------------------------------------------------------------------------ amounts, currency
@pytest.mark.parametrize("text, cents", [("10", 1000), ("10.5", 1050), ("10.50", 1050), ("0.01", 1),
                                         ("99999999.99", 9_999_999_999)])
def test_amounts(text, cents):
    assert parse_amount(text) == cents and format_cents(cents) == ("%.2f" % (cents / 100))


@pytest.mark.parametrize("text", ["0", "0.00", "-1", "1.001", "1e2", " 1", "1,00", "100000000.00", ".5", "1.", "NaN"])
def test_bad_amounts_are_206(text):
    assert code_of({**CARD, "transaction_amount": text}) == E.AMOUNT


def test_json_number_amounts_and_zero_decimal_currencies():
    assert ok(parse_variables("application/json", json.dumps({**CARD, "transaction_amount": 12.5}).encode())
              ).amount_cents == 1250
    ok({**CARD, "currency": "JPY", "transaction_amount": "1200"})
    assert code_of({**CARD, "currency": "JPY", "transaction_amount": "12.50"}) == E.AMOUNT


@pytest.mark.parametrize("currency, good", [("USD", True), ("usd", True), ("EUR", True), ("KWD", True),
                                            ("XXX", False), ("US", False), ("USDD", False), ("HRK", False)])
def test_iso_4217_currency(currency, good):
    if good:
        assert ok({**CARD, "currency": currency}).currency == currency.upper()
    else:
        assert code_of({**CARD, "currency": currency}) == E.CURRENCY


# ------------------------------------------------------------------------------------------------ the case table
def test_card_case_required_variables():
    for name in ("transaction_type", "tender_type", "card_number", "card_expiration", "transaction_amount"):
        assert code_of({k: v for k, v in CARD.items() if k != name}) == E.MISSING, name
    assert ok({**CARD, "response_format": "json"}).source == "card"
    assert code_of({**CARD, "response_format": "FORM"}) == E.RESPONSE_FORMAT
    assert code_of({**CARD, "transaction_type": "CREDITX"}) == E.TRANSACTION_TYPE
    # REFUND and REVERSAL name a transaction with token_id and take no card data (issue 20)
    assert code_of({**CARD, "transaction_type": "REFUND"}) == E.MISSING
    assert code_of({**CARD, "transaction_type": "REFUND", "token_id": "123456789012"}) == E.PAYMENT_DATA
    refund = ok({"transaction_type": "refund", "token_id": "123456789012", "transaction_amount": "1.00"})
    assert (refund.source, refund.amount_cents) == ("refund", 100)
    reversal = ok({"transaction_type": "REVERSAL", "token_id": "123456789012"})
    assert (reversal.source, reversal.amount_cents) == ("reversal", 0)
    assert ok({**CARD, "transaction_type": "AUTHORIZATION", "transaction_amount": "0.00"}).amount_cents == 0
    assert code_of({**CARD, "transaction_amount": "0.00"}) == E.AMOUNT
    assert code_of({**CARD, "tender_type": "CASH"}) == E.TENDER_TYPE
    assert ok({**CARD, "tender_type": "card"}).tender == "CARD"


def test_iframe_case():
    iframe = {"transaction_type": "SALE", "tender_type": "CARD", "custom_id": "order-77", "etoken": BFID,
              "transaction_amount": "5.00", "currency": "USD", "payment_type": "ECOMMERCE",
              "device_trans_id": "abc-123"}
    assert ok(iframe).source == "iframe"
    for name in ("custom_id", "etoken", "currency", "payment_type"):
        assert code_of({k: v for k, v in iframe.items() if k != name}) == E.MISSING, name
    assert code_of({**iframe, "card_number": VISA}) == E.PAYMENT_DATA
    assert code_of({**iframe, "custom_id": "a" * 51}) == E.IFRAME_FIELD
    assert code_of({**iframe, "etoken": "short"}) == E.IFRAME_FIELD


def test_token_cases():
    assert ok({"transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "1.00", "bfid": BFID}).bfid_only
    req = ok(TOKEN_BASE)
    assert req.token_payment and not req.bfid_only and set(req.tokens) == {"vault_token_card_number",
                                                                           "vault_token_card_expiration"}
    # rule 1: any vault_token* triggers token logic, and bfid must accompany it
    assert code_of({**CARD, "vault_token_zip": "12345"}) == E.TOKEN_DATA_INCOMPLETE
    # the Required column: card tokens go in pairs, bank tokens too
    assert code_of({k: v for k, v in TOKEN_BASE.items() if k != "vault_token_card_expiration"}) == E.TOKEN_DATA_INCOMPLETE
    assert code_of({**TOKEN_BASE, "vault_token_bank_account_number": "1234",
                    "vault_token_bank_routing_number": "123456789"}) == E.PAYMENT_DATA
    assert code_of({"transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "1.00", "bfid": BFID,
                    "vault_token_zip": "12345"}) == E.TOKEN_DATA_INCOMPLETE
    # rule 4: plaintext twins may accompany tokens
    assert ok({**TOKEN_BASE, "card_number": VISA, "zip": "12345", "vault_token_zip": "54321"}).token_payment


def test_capture_case():
    capture = {"transaction_type": "CAPTURE", "transaction_amount": "5.00", "token_id": "123456789012"}
    assert ok(capture).source == "capture"
    assert code_of({k: v for k, v in capture.items() if k != "token_id"}) == E.MISSING
    for token_id in ("12345678901", "1234567890123", "023456789012", "12345678901a"):
        assert code_of({**capture, "token_id": token_id}) == E.TOKEN_ID
    assert code_of({**capture, "card_number": VISA}) == E.PAYMENT_DATA
    assert code_of({**CARD, "token_id": "123456789012"}) == E.TOKEN_ID


def test_wallet_case_is_recognised_before_other_checks():
    req = ok({"transaction_type": "SALE", "tender_type": "APay", "transaction_amount": "1.00", "apay_payload": "{}"})
    assert req.source == "wallet"


def test_every_code_has_a_message():
    for code in [v for k, v in vars(E).items() if k.isupper()]:
        assert ERROR_MESSAGES[code]


@pytest.mark.parametrize("name", ["transaction_description", "first_name", "last_name", "street_address1"])
@pytest.mark.parametrize("text", ["card 4242424242424242", "4242 4242 4242 4242", "4242.4242.4242.4242"])
def test_free_text_never_holds_a_card_number(name, text):
    """Review of issue 31: the free-text variables are stored with the transaction and sent on in the postback,
    the VAULT_TRANSACTION webhook and the v4 payment details; a card number in one was stored and sent in clear.
    Refused as a variable of the wrong form (error 219), the value never named."""
    with pytest.raises(GatewayError) as err:
        ok({**CARD, name: text})
    assert err.value.code == E.VARIABLE and "4242" not in str(err.value) and name in str(err.value)
    assert ok({**CARD, name: "Order 42 of 4242"}).values[name] == "Order 42 of 4242"
