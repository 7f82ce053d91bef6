"""Type rules for clear values (Luhn, MMYY, ABA, e-mail ...): pure, no AWS."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.cards.luhn import luhn_check_digit
from vaultcore.tokens.templates import GATEWAY_TEMPLATE, FieldType, TemplateField, TokenFormat
from vaultcore.tokens.validation import ValueRuleError, aba_valid, check_value


def gw(name: str) -> TemplateField:
    return GATEWAY_TEMPLATE.get_field(f"vault_token_{name}")


@pytest.mark.parametrize("field, value", [
    (gw("card_number"), "4111111111111111"),
    (gw("card_number"), "4111 1111 1111 1111"),
    (gw("card_number"), "378282246310005"),
    (gw("card_verification"), "123"),  # a 3-4 digit card field is a security code: no Luhn
    (gw("card_expiration"), "1229"),
    (TemplateField("d", FieldType.DATE), "12/2029"),
    (TemplateField("d", FieldType.DATE), "2024-02-29"),
    (gw("bank_routing_number"), "011000015"),
    (gw("bank_routing_number"), "021000021"),
    (gw("bank_account_number"), "0001234-5678"),
    (TemplateField("t", FieldType.TAX), "123-45-6789"),
    (gw("email"), "jane.doe+tag@mail.example.com"),
    (gw("zip"), "SW1A 1AA"),
])
def test_accepted(field, value):
    check_value(field, value)


@pytest.mark.parametrize("field, value, rule", [
    (gw("card_number"), "4111111111111112", "Luhn"),
    (gw("card_number"), "41111111111", "12 to 19 digits"),
    (gw("card_expiration"), "1329", "month"),
    (gw("card_expiration"), "0029", "month"),
    (TemplateField("d", FieldType.DATE), "2023-02-29", "month"),
    (TemplateField("d", FieldType.DATE), "12345", "MMYY"),
    (gw("bank_routing_number"), "011000016", "ABA"),
    (TemplateField("t", FieldType.TAX), "12-345-678", "9 digits"),
    (gw("email"), "no-at-sign.example.com", "e-mail"),
    (gw("email"), "a@localhost", "e-mail"),
    (gw("email"), "a b@example.com", "e-mail"),
    (gw("email"), "@example.com", "e-mail"),
])
def test_refused_without_quoting_the_value(field, value, rule):
    with pytest.raises(ValueRuleError, match=rule) as err:
        check_value(field, value)
    assert value not in str(err.value) and field.name in str(err.value)


def test_aba_checksum():
    assert aba_valid("011000015") and aba_valid("121000358")
    assert not aba_valid("011000016") and not aba_valid("01100001") and not aba_valid("01100001x")
    assert not aba_valid("０１１０００015")  # non-ASCII digits


@given(st.text("0123456789", min_size=11, max_size=18))
def test_every_luhn_valid_pan_passes_and_a_wrong_check_digit_fails(body):
    field = TemplateField("pan", FieldType.CARD, TokenFormat.FIRST_SIX_LAST_FOUR)
    good = body + luhn_check_digit(body)
    check_value(field, good)
    bad = body + str((int(good[-1]) + 1) % 10)
    with pytest.raises(ValueRuleError):
        check_value(field, bad)


def test_bfid_template_field_names_the_version_with_one_spelling():
    from vaultcore.tokens.template_store import bfid_template_field, split_bfid_template

    assert bfid_template_field("DEMO", 1) == "DEMO" and bfid_template_field("DEMO", 12) == "DEMO.12"
    assert split_bfid_template("DEMO") == ("DEMO", 1) and split_bfid_template("DEMO.12") == ("DEMO", 12)
    for bad in ("DEMO.1", "DEMO.012", "DEMO.", "DEMO.x", "DE-MO", "DEMO.2.3", "DÉMO", ".2"):
        assert split_bfid_template(bad) is None, bad
