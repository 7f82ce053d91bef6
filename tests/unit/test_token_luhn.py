"""Issue 27: card-number tokens fail the Luhn check by default (bfid version 4), keep format, BIN and last four; a
field option asks for Luhn-valid tokens; tokens made before (bfid versions 1 to 3) still detokenize. Pure engine:
no AWS, no clock."""

from __future__ import annotations

import random

import pytest

from vaultcore.cards.luhn import luhn_valid
from vaultcore.tokens.engine import INVALID_VALUE, TokenError, detokenize_value, tokenize_value
from vaultcore.tokens.templates import GATEWAY_TEMPLATE, FieldType, TemplateError, TemplateField, TokenFormat

KEY = bytes(range(32))
SCOPE_V4 = "djQAAQBrAl4ena42TO6lvdIcXESbAaZNVgtwYXJ0bmVyLTEyMwdHQVRFV0FZ"
SCOPE_V3 = "djMAAQBrAl4ena42TO6lvdIcXESbAaZNVgtwYXJ0bmVyLTEyMwdHQVRFV0FZ"
CARD = GATEWAY_TEMPLATE.get_field("vault_token_card_number")

#: Tokens the engine made before issue 27 (bfid version 3, computed with the code of main before the change): they
#: must keep detokenizing to these PANs.
OLD_V3_VECTORS = [
    ("4111111111111111", "4111110111111111"),
    ("378282246310005", "378282517600005"),
    ("6011000990139424", "6011005879709424"),
    ("5555555555554444", "5555555544964444"),
]


def _pan(rng: random.Random, length: int, bin6: str | None = None) -> str:
    body = (bin6 or "") + "".join(str(rng.randrange(10)) for _ in range(length - 1 - len(bin6 or "")))
    return next(body + c for c in "0123456789" if luhn_valid(body + c))


def test_no_luhn_valid_token_in_100000():
    """0 Luhn-valid tokens in 100,000 generated: 98,000 PANs of 13 and 14 digits (the constant-cost prefix cipher
    path) and 2,000 of the GATEWAY field (16 and 19 digits: FF1 and cycle walking), each keeping BIN and last four."""
    rng = random.Random(27)
    short = TemplateField("pan", FieldType.CARD, TokenFormat.FIRST_SIX_LAST_FOUR, min_length=13, max_length=19)
    valid = 0
    for i in range(100_000):
        field, length = (CARD, 16 if i % 2 else 19) if i < 2_000 else (short, 13 + i % 2)
        pan = _pan(rng, length)
        token = tokenize_value(KEY, SCOPE_V4, field, pan)
        valid += luhn_valid(token)
        assert token[:6] == pan[:6] and token[-4:] == pan[-4:] and len(token) == len(pan)
    assert valid == 0


@pytest.mark.parametrize("fmt", list(TokenFormat))
@pytest.mark.parametrize("length", [13, 15, 16, 19])
def test_round_trip_format_and_option(fmt, length):
    rng = random.Random(f"{fmt}{length}")
    invalid = TemplateField("pan", FieldType.CARD, fmt, min_length=13, max_length=19)
    valid = TemplateField("pan", FieldType.CARD, fmt, min_length=13, max_length=19, luhn_valid_tokens=True)
    for _ in range(40):
        pan = _pan(rng, length)
        token = tokenize_value(KEY, SCOPE_V4, invalid, pan)
        assert not luhn_valid(token) and detokenize_value(KEY, SCOPE_V4, invalid, token) == pan
        asked = tokenize_value(KEY, SCOPE_V4, valid, pan)
        assert luhn_valid(asked) and detokenize_value(KEY, SCOPE_V4, valid, asked) == pan


def test_separators_and_irreversible_tokens_fail_luhn_too():
    spaced = TemplateField("pan", FieldType.CARD, TokenFormat.FIRST_SIX_LAST_FOUR, max_length=23)
    token = tokenize_value(KEY, SCOPE_V4, spaced, "4111 1111 1111 1111")
    assert token[:7] == "4111 11" and token[-4:] == "1111" and not luhn_valid(token.replace(" ", ""))
    assert detokenize_value(KEY, SCOPE_V4, spaced, token) == "4111 1111 1111 1111"
    one_way = TemplateField("pan", FieldType.CARD, TokenFormat.FIRST_SIX_LAST_FOUR, irreversible=True)
    assert not luhn_valid(tokenize_value(KEY, SCOPE_V4, one_way, "4111111111111111"))


def test_tokens_made_before_still_detokenize():
    for pan, token in OLD_V3_VECTORS:
        assert detokenize_value(KEY, SCOPE_V3, CARD, token, bfid_version=3) == pan
        assert tokenize_value(KEY, SCOPE_V3, CARD, pan, bfid_version=3) == token  # made as before under version 3
    assert tokenize_value(KEY, SCOPE_V4, CARD, "4111111111111111") != "4111110111111111"


def test_a_token_with_another_check_digit_or_a_luhn_invalid_value_is_refused():
    token = tokenize_value(KEY, SCOPE_V4, CARD, "4111111111111111")
    wrong = token[:11] + str((int(token[11]) + 1) % 10) + token[12:]  # the last middle digit altered
    with pytest.raises(TokenError) as err:
        detokenize_value(KEY, SCOPE_V4, CARD, wrong)
    assert err.value.code == INVALID_VALUE and "4111" not in err.value.message
    with pytest.raises(TokenError) as err:
        tokenize_value(KEY, SCOPE_V4, CARD, "4111111111111112")
    assert err.value.code == INVALID_VALUE and "Luhn" in err.value.message


def test_the_option_is_a_template_member_of_card_number_fields_only():
    field = TemplateField.from_dict({"name": "pan", "type": "card", "format": "FIRST_SIX_LAST_FOUR",
                                     "luhnValidTokens": True})
    assert field.luhn_valid_tokens and field.to_dict()["luhnValidTokens"] is True
    assert "luhnValidTokens" not in CARD.to_dict()  # templates of before keep their exact form
    for data in ({"name": "cvv", "type": "card", "format": "NONE", "maxLength": 4, "luhnValidTokens": True},
                 {"name": "zip", "type": "address", "format": "NONE", "luhnValidTokens": True},
                 {"name": "pan", "type": "card", "format": "NONE", "luhnValidTokens": "yes"}):
        with pytest.raises(TemplateError):
            TemplateField.from_dict(data)
