"""Template model: defaults, validation messages, storage round trip, durations, the built-in gateway template."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vaultcore.tokens.alphabets import ALPHABETS, CARD10, CARD62, get_alphabet
from vaultcore.tokens.templates import (
    BUILTIN_TEMPLATES,
    CLEAR_CHARACTERS,
    GATEWAY_TEMPLATE,
    GATEWAY_TEMPLATE_REF,
    ActiveWindow,
    FieldType,
    Template,
    TemplateError,
    TemplateField,
    TokenFormat,
    generate_template_ref,
    parse_iso8601_duration,
)

# spec/interface.md, "Token fields": gateway parameters accepted for token payments (name: type, length range).
TOKEN_TABLE = {
    "vault_token_card_number": ("numeric", 14, 19),
    "vault_token_card_expiration": ("numeric", 4, 4),
    "vault_token_card_verification": ("numeric", 3, 4),
    "vault_token_bank_account_number": ("numeric", 4, 17),
    "vault_token_bank_routing_number": ("numeric", 9, 9),
    "vault_token_email": ("string", 5, 100),
    "vault_token_first_name": ("string", 2, 50),
    "vault_token_last_name": ("string", 2, 50),
    "vault_token_phone": ("string", 2, 20),
    "vault_token_street_address1": ("string", 2, 100),
    "vault_token_zip": ("string", 3, 10),
}


def _ts(year: int, month: int, day: int, hour: int = 0) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


# ---------------------------------------------------------------------------------------------- alphabets


def test_alphabets():
    assert CARD10.chars == "0123456789" and CARD10.radix == 10
    assert CARD62.radix == 62 and CARD62.chars.startswith("0123456789ABC") and CARD62.chars.endswith("xyz")
    assert get_alphabet("CARD62") is CARD62 and set(ALPHABETS) == {"CARD10", "CARD62"}
    assert "7" in CARD10 and "a" not in CARD10 and CARD62.index["a"] == 36


# ------------------------------------------------------------------------------------------ built-in template


def test_builtin_gateway_template_matches_token_table():
    assert BUILTIN_TEMPLATES[GATEWAY_TEMPLATE_REF] is GATEWAY_TEMPLATE and GATEWAY_TEMPLATE.template_ref == "GATEWAY"
    assert [f.name for f in GATEWAY_TEMPLATE.fields] == list(TOKEN_TABLE)
    for name, (kind, lo, hi) in TOKEN_TABLE.items():
        f = GATEWAY_TEMPLATE.get_field(name)
        assert (f.min_length, f.max_length) == (lo, hi), name
        if kind == "numeric":
            assert f.alphabet == "CARD10" and not f.free_text, name
        assert not f.irreversible and f.active is None, name


def test_builtin_card_number_keeps_bin_and_last_four():
    assert GATEWAY_TEMPLATE.get_field("vault_token_card_number").format is TokenFormat.FIRST_SIX_LAST_FOUR


def test_unknown_field_lookup():
    with pytest.raises(TemplateError, match="template GATEWAY has no field 'vault_token_pin'"):
        GATEWAY_TEMPLATE.get_field("vault_token_pin")
    assert "vault_token_zip" in GATEWAY_TEMPLATE


# -------------------------------------------------------------------------------------------------- defaults


@pytest.mark.parametrize(
    ("ftype", "alphabet"),
    [
        ("card", "CARD10"),
        ("date", "CARD10"),
        ("bank", "CARD10"),
        ("routing", "CARD10"),
        ("tax", "CARD10"),
        ("phone", "CARD10"),
        ("email", "CARD62"),
        ("address", "CARD62"),
        ("field", "CARD62"),
    ],
)
def test_default_alphabet_per_type(ftype, alphabet):
    f = TemplateField("f", ftype)  # type: ignore[arg-type]
    assert f.alphabet == alphabet and f.type is FieldType(ftype) and f.format is TokenFormat.NONE
    assert 1 <= f.min_length <= f.max_length


def test_explicit_alphabet_and_lengths_win():
    f = TemplateField("f", FieldType.CARD, alphabet="CARD62", min_length=20, max_length=30)
    assert (f.alphabet, f.min_length, f.max_length) == ("CARD62", 20, 30)


def test_clear_characters_per_format():
    assert CLEAR_CHARACTERS == {
        TokenFormat.NONE: (0, 0),
        TokenFormat.LAST_FOUR: (0, 4),
        TokenFormat.FIRST_SIX: (6, 0),
        TokenFormat.FIRST_SIX_LAST_FOUR: (6, 4),
        TokenFormat.FIRST_TWO_LAST_FOUR: (2, 4),
    }


# ------------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "1abc", "type": "card"}, "field name must start with a letter"),
        ({"name": "a b", "type": "card"}, "field name must start with a letter"),
        ({"name": "f", "type": "pin"}, r"field 'f': unknown type 'pin' \(expected one of card, date"),
        (
            {"name": "f", "type": "card", "format": "LAST_TWO"},
            r"unknown format 'LAST_TWO' \(expected one of NONE, LAST_FOUR",
        ),
        (
            {"name": "f", "type": "card", "alphabet": "CARD36"},
            r"unknown alphabet 'CARD36' \(expected one of CARD10, CARD62\)",
        ),
        ({"name": "f", "type": "card", "irreversible": "yes"}, "irreversible must be true or false"),
        ({"name": "f", "type": "card", "min_length": 0}, "minLength must be an integer from 1 to 256"),
        ({"name": "f", "type": "card", "max_length": 257}, "maxLength must be an integer from 1 to 256"),
        ({"name": "f", "type": "card", "max_length": True}, "maxLength must be an integer"),
        (
            {"name": "f", "type": "card", "min_length": 19, "max_length": 14},
            "minLength 19 is greater than maxLength 14",
        ),
    ],
)
def test_field_validation_messages(kwargs, message):
    with pytest.raises(TemplateError, match=message):
        TemplateField(**kwargs)


def test_format_leaving_too_little_to_encrypt_is_refused():
    # Given a phone (2 to 20 digits) that would keep its last four digits in clear
    with pytest.raises(TemplateError) as exc:
        TemplateField("phone", FieldType.PHONE, TokenFormat.LAST_FOUR)
    # Then the message says why and how to fix it
    assert str(exc.value) == (
        "field 'phone': format LAST_FOUR keeps 4 characters in clear, so a value of the minimum length 2 leaves 0 "
        "CARD10 characters to encrypt; at least 2 are needed (at least 100 possible values). Raise minLength to 6 "
        "or choose a format that keeps fewer characters"
    )
    # and the suggested minimum length is accepted
    TemplateField("phone", FieldType.PHONE, TokenFormat.LAST_FOUR, min_length=6)


@pytest.mark.parametrize(
    ("ftype", "fmt", "lo", "ok"),
    [
        ("card", "FIRST_SIX_LAST_FOUR", 12, True),  # 2 digits left: 100 values
        ("card", "FIRST_SIX_LAST_FOUR", 11, False),  # 1 digit left
        ("card", "FIRST_TWO_LAST_FOUR", 8, True),
        ("field", "NONE", 2, True),  # 62**2 values
        ("field", "NONE", 1, False),  # 62 values
        ("field", "FIRST_SIX", 7, False),  # one CARD62 character left: 62 < 100
    ],
)
def test_minimum_encrypted_domain(ftype, fmt, lo, ok):
    if ok:
        TemplateField("f", ftype, fmt, min_length=lo, max_length=30)  # type: ignore[arg-type]
    else:
        with pytest.raises(TemplateError, match="at least 100 possible values"):
            TemplateField("f", ftype, fmt, min_length=lo, max_length=30)  # type: ignore[arg-type]


def test_template_validation():
    f = TemplateField("f", FieldType.CARD)
    with pytest.raises(TemplateError, match="templateRef must be 1 to 32 letters and digits"):
        Template("bad-ref", (f,))
    with pytest.raises(TemplateError, match="templateRef must be"):
        Template("A" * 33, (f,))
    with pytest.raises(TemplateError, match="a template needs 1 to 64 fields"):
        Template("T1", ())
    with pytest.raises(TemplateError, match=r"fields\[1\]: duplicate field name 'f'"):
        Template("T1", (f, f))
    with pytest.raises(TemplateError, match="name must be a string of at most 100"):
        Template("T1", (f,), name="x" * 101)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a template must be an object"),
        ({"templateRef": "T1", "fields": [], "x": 1}, "unknown member 'x'"),
        ({"fields": [{"name": "f", "type": "card", "format": "NONE"}]}, "templateRef is required"),
        ({"templateRef": "T1", "fields": []}, "fields must be a non-empty array"),
        ({"templateRef": "T1", "fields": [{"name": "f", "type": "card"}]}, r"fields\[0\]: member 'format' is required"),
        (
            {"templateRef": "T1", "fields": [{"name": "f", "type": 3, "format": "NONE"}]},
            r"fields\[0\]: member 'type' must be a string",
        ),
        ({"templateRef": "T1", "fields": ["f"]}, r"fields\[0\]: a field must be an object"),
        (
            {"templateRef": "T1", "fields": [{"name": "f", "type": "card", "format": "NONE", "mask": 1}]},
            r"fields\[0\]: unknown member 'mask'",
        ),
        (
            {"templateRef": "T1", "fields": [{"name": "f", "type": "card", "format": "NONE", "alphabet": 10}]},
            "member 'alphabet' must be a string",
        ),
        (
            {
                "templateRef": "T1",
                "fields": [
                    {"name": "ok", "type": "card", "format": "NONE"},
                    {"name": "f", "type": "card", "format": "NONE", "active": {"to": "P1X"}},
                ],
            },
            r"fields\[1\]: active.to: 'P1X' is not an ISO-8601 duration",
        ),
        (
            {
                "templateRef": "T1",
                "fields": [{"name": "f", "type": "card", "format": "NONE", "active": {"until": "P1D"}}],
            },
            "active: unknown member 'until'",
        ),
        (
            {"templateRef": "T1", "fields": [{"name": "f", "type": "card", "format": "NONE", "active": {}}]},
            "active window needs 'from', 'to' or both",
        ),
        (
            {"templateRef": "T1", "fields": [{"name": "f", "type": "card", "format": "NONE", "active": "P1D"}]},
            "active must be an object",
        ),
        (
            {
                "templateRef": "T1",
                "fields": [{"name": "f", "type": "card", "format": "NONE", "active": {"from": "P2D", "to": "P1D"}}],
            },
            r"active window 'from' \(P2D\) must be before 'to' \(P1D\)",
        ),
    ],
)
def test_from_dict_messages(data, message):
    with pytest.raises(TemplateError, match=message):
        Template.from_dict(data)


def test_from_dict_uses_given_template_ref_for_new_templates():
    t = Template.from_dict({"fields": [{"name": "f", "type": "email", "format": "NONE"}]}, template_ref="ABC123")
    assert t.template_ref == "ABC123" and t.get_field("f").alphabet == "CARD62"


def test_dict_round_trip():
    t = Template.from_dict(
        {
            "templateRef": "Shop1",
            "name": "checkout",
            "fields": [
                {"name": "pan", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
                {"name": "cvv", "type": "card", "format": "NONE", "minLength": 3, "maxLength": 4, "irreversible": True},
                {"name": "mail", "type": "email", "format": "NONE", "active": {"from": "PT1H", "to": "P1Y2M"}},
            ],
        }
    )
    stored = t.to_dict()
    assert stored["fields"][2]["active"] == {"from": "PT1H", "to": "P1Y2M"}
    assert stored["fields"][1] == {
        "name": "cvv",
        "type": "card",
        "format": "NONE",
        "alphabet": "CARD10",
        "irreversible": True,
        "minLength": 3,
        "maxLength": 4,
    }
    assert Template.from_dict(stored) == t
    assert Template.from_dict(GATEWAY_TEMPLATE.to_dict()) == GATEWAY_TEMPLATE


def test_generate_template_ref():
    refs = {generate_template_ref() for _ in range(50)}
    assert len(refs) == 50
    for ref in refs:
        Template(ref, (TemplateField("f", FieldType.CARD),))


# ------------------------------------------------------------------------------------------------ durations


@pytest.mark.parametrize(
    ("text", "months", "seconds"),
    [
        ("P30D", 0, 30 * 86400),
        ("PT1H", 0, 3600),
        ("P1Y2M", 14, 0),
        ("P2W", 0, 14 * 86400),
        ("PT0.5S", 0, 0.5),
        ("PT1,25S", 0, 1.25),
        ("P1DT2H3M4S", 0, 86400 + 7200 + 180 + 4),
        ("PT90M", 0, 5400),
        ("P0D", 0, 0),
    ],
)
def test_parse_durations(text, months, seconds):
    d = parse_iso8601_duration(text)
    assert (d.text, d.months, d.seconds) == (text, months, seconds)


@pytest.mark.parametrize(
    "text", ["", "P", "PT", "P1", "1D", "P-1D", "PT1.5H", "P1DT", "P1.5D", "p1d", "P1D ", "P101Y", "P1M1Y"]
)
def test_parse_duration_rejects(text):
    with pytest.raises(TemplateError, match="ISO-8601 duration|longer than 100 years"):
        parse_iso8601_duration(text)


def test_parse_duration_rejects_non_strings():
    with pytest.raises(TemplateError, match="must be an ISO-8601 duration string"):
        parse_iso8601_duration(30)  # type: ignore[arg-type]


def test_duration_after_uses_calendar_months():
    assert parse_iso8601_duration("P1M").after(_ts(2024, 1, 31, 12)) == _ts(2024, 2, 29, 12)
    assert parse_iso8601_duration("P1Y").after(_ts(2024, 2, 29)) == _ts(2025, 2, 28)
    assert parse_iso8601_duration("P1MT1H").after(_ts(2023, 12, 15)) == _ts(2024, 1, 15, 1)
    assert parse_iso8601_duration("PT1H").after(1000.0) == 4600.0


def test_active_window_state():
    window = ActiveWindow(parse_iso8601_duration("PT1H"), parse_iso8601_duration("P1D"))
    issued = 1_700_000_000
    assert window.state(issued, issued) == "pending"
    assert window.state(issued, issued + 3599) == "pending"
    assert window.state(issued, issued + 3600) == "active"  # from is inclusive
    assert window.state(issued, issued + 86399) == "active"
    assert window.state(issued, issued + 86400) == "expired"  # to is exclusive
    assert ActiveWindow(end=parse_iso8601_duration("PT1S")).state(issued, issued) == "active"
    assert ActiveWindow(start=parse_iso8601_duration("PT1S")).state(issued, issued + 10**9) == "active"
