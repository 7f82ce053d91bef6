"""Issue 30 (item 11): the QSAPI's error_message where clients of the original compare it, as the original's
long-standing open-source clients record its answers: a card number too short to be one (5 or 6 digits) is
``CARD DATA UNREADABLE`` on STORE and CREDIT; a verification (AUTHORIZATION of 0.00) without a card number is
``INVALID CARD NUMBER``. Other types keep ``INVALID CARD NUMBER`` for a short number."""

from __future__ import annotations

import pytest

from tests.integration.test_gateway import VISA, Gateway, _account, _partner
from vaultcore.gateway.errors import E


@pytest.fixture
def gw(platform):
    return Gateway(platform, _account(platform, _partner(platform), tokenization=True, credit=True))


@pytest.mark.parametrize("number", ["12345", "123456"])
@pytest.mark.parametrize("ttype", ["STORE", "CREDIT"])
def test_a_card_number_too_short_to_be_one_is_unreadable_on_store_and_credit(gw, ttype, number):
    amount = {"transaction_amount": "5.00"} if ttype == "CREDIT" else {}
    for form in (False, True):
        answer = gw.pay(form=form, transaction_type=ttype, tender_type="CARD", card_number=number,
                        card_expiration="1230", **amount)
        assert (answer["error_code"], answer["error_message"], answer["transaction_approved"]) == (
            E.CARD_DATA_UNREADABLE, "CARD DATA UNREADABLE", False), answer


@pytest.mark.parametrize(("ttype", "number"), [("SALE", "123456"), ("STORE", "1234"), ("STORE", "1234567"),
                                               ("CREDIT", "12345678")])
def test_other_short_numbers_stay_invalid_card_number(gw, ttype, number):
    answer = gw.pay(transaction_type=ttype, tender_type="CARD", card_number=number, card_expiration="1230",
                    **({} if ttype == "STORE" else {"transaction_amount": "5.00"}))
    assert (answer["error_code"], answer["error_message"]) == (E.CARD_NUMBER, "INVALID CARD NUMBER"), answer


def test_a_verification_without_a_card_number_is_invalid_card_number(gw):
    answer = gw.pay(transaction_type="AUTHORIZATION", tender_type="CARD", card_expiration="1230",
                    transaction_amount="0.00")
    assert (answer["error_code"], answer["error_message"]) == (E.CARD_NUMBER, "INVALID CARD NUMBER"), answer
    # with an amount, a missing card number is still "card_number is required."
    answer = gw.pay(transaction_type="AUTHORIZATION", tender_type="CARD", card_expiration="1230",
                    transaction_amount="1.00")
    assert answer["error_code"] == E.MISSING and answer["error_message"] == "card_number is required.", answer
    # and a verification with a good card still verifies
    answer = gw.pay(transaction_type="AUTHORIZATION", tender_type="CARD", card_number=VISA, card_expiration="1230",
                    transaction_amount="0.00")
    assert answer["transaction_approved"] is True, answer
