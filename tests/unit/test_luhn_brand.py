"""Luhn check digit (ISO/IEC 7812-1 Annex B) and brand detection from the issuer prefix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.cards.brand import (
    AMEX,
    BRAND_LENGTHS,
    BRANDS,
    DINERS,
    DISCOVER,
    JCB,
    MASTERCARD,
    UNKNOWN,
    VISA,
    detect_brand,
    is_mastercard_type,
    is_visa_type,
)
from vaultcore.cards.luhn import luhn_check_digit, luhn_valid

# Public test numbers: Stripe's test cards (public-facts.md "Peers' conventions"), the original gateway's
# public test card, and the networks' published test PANs.
VALID_TEST_PANS = [
    "4242424242424242",
    "4000000000000002",
    "4000000000000069",
    "4000000000000127",
    "4000000000000119",
    "4000000000000010",
    "4000000000000101",
    "4124939999999990",
    "5555555555554444",
    "2223003122003222",
    "378282246310005",
    "6011111111111117",
    "3566002020360505",
    "30569309025904",
    "79927398713",
]


@pytest.mark.parametrize("pan", VALID_TEST_PANS)
def test_luhn_accepts_published_test_numbers(pan: str) -> None:
    # Given a published test number / When checked / Then it is valid and its check digit recomputes
    assert luhn_valid(pan)
    assert luhn_check_digit(pan[:-1]) == pan[-1]


@pytest.mark.parametrize("pan", ["4242424242424241", "79927398710", "4000000000000003", "1234567812345678"])
def test_luhn_rejects_a_wrong_check_digit(pan: str) -> None:
    assert not luhn_valid(pan)


@pytest.mark.parametrize(
    "value", ["", "0", "4242 4242 4242 4242", "4242-4242-4242-4242", "42424242424242a2", "４２４２", "²²"]
)
def test_luhn_valid_is_false_for_non_digit_or_too_short_input(value: str) -> None:
    assert luhn_valid(value) is False


def test_luhn_valid_is_false_for_non_text() -> None:
    assert luhn_valid(None) is False  # type: ignore[arg-type]
    assert luhn_valid(4242424242424242) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("partial", ["", "12a", "４２", " 123"])
def test_luhn_check_digit_rejects_non_digits_without_echoing_them(partial: str) -> None:
    with pytest.raises(ValueError, match="non-empty string of ASCII digits") as info:
        luhn_check_digit(partial)
    assert partial.strip() == "" or partial not in str(info.value)


@given(st.text(alphabet="0123456789", min_size=1, max_size=30))
def test_appending_the_check_digit_always_gives_a_valid_number(partial: str) -> None:
    assert luhn_valid(partial + luhn_check_digit(partial))


@given(st.text(alphabet="0123456789", min_size=1, max_size=30), st.integers(min_value=1, max_value=9))
def test_changing_the_check_digit_breaks_validity(partial: str, delta: int) -> None:
    good = luhn_check_digit(partial)
    bad = str((int(good) + delta) % 10)
    assert not luhn_valid(partial + bad)


@pytest.mark.parametrize(
    ("pan", "brand"),
    [
        ("4242424242424242", VISA),
        ("4000000000000002", VISA),
        ("4124939999999990", VISA),
        ("4222222222222", VISA),
        ("5105105105105100", MASTERCARD),
        ("5555555555554444", MASTERCARD),
        ("5200828282828210", MASTERCARD),
        ("378282246310005", AMEX),
        ("371449635398431", AMEX),
        ("340000000000009", AMEX),
        ("6011111111111117", DISCOVER),
        ("6011000990139424", DISCOVER),
        ("6445644564456445", DISCOVER),
        ("6500000000000002", DISCOVER),
        ("6221260000000000", DISCOVER),
        ("6229250000000000", DISCOVER),
        ("3566002020360505", JCB),
        ("3528000000000007", JCB),
        ("3589000000000003", JCB),
        ("30569309025904", DINERS),
        ("38520000023237", DINERS),
        ("36227206271667", DINERS),
        ("3095000000000000", DINERS),
        ("39000000000000", DINERS),
        ("6200000000000005", UNKNOWN),
        ("6221250000000000", UNKNOWN),
        ("6229260000000000", UNKNOWN),
        ("1234567812345670", UNKNOWN),
        ("9000000000000000", UNKNOWN),
        ("3500000000000000", UNKNOWN),
        ("3590000000000000", UNKNOWN),
        ("3060000000000000", UNKNOWN),
    ],
)
def test_detect_brand(pan: str, brand: str) -> None:
    assert detect_brand(pan) == brand


@pytest.mark.parametrize(
    ("pan", "brand"),
    [
        ("2220999999999999", UNKNOWN),  # just below the 2-series range
        ("2221000000000009", MASTERCARD),  # first 2-series number
        ("2223003122003222", MASTERCARD),
        ("2720999999999999", MASTERCARD),  # last 2-series number
        ("2721000000000000", UNKNOWN),  # just above
        ("5099999999999999", UNKNOWN),
        ("5100000000000008", MASTERCARD),
        ("5599999999999999", MASTERCARD),
        ("5600000000000000", UNKNOWN),
    ],
)
def test_mastercard_range_boundaries(pan: str, brand: str) -> None:
    assert detect_brand(pan) == brand
    assert is_mastercard_type(pan) is (brand == MASTERCARD)


@pytest.mark.parametrize("value", ["", "abc", "4242x", None, "4242.4242", "４２４２"])
def test_detect_brand_unknown_for_non_numbers(value: str | None) -> None:
    assert detect_brand(value) == UNKNOWN  # type: ignore[arg-type]


def test_detect_brand_ignores_group_separators() -> None:
    assert detect_brand("4242 4242 4242 4242") == VISA
    assert detect_brand("3782-822463-10005") == AMEX


def test_visa_type_helpers() -> None:
    assert is_visa_type("4242424242424242")
    assert not is_visa_type("5555555555554444")
    assert is_mastercard_type("5555555555554444")
    assert is_mastercard_type("2221000000000009")
    assert not is_mastercard_type("4242424242424242")


def test_every_brand_has_lengths_and_unknown_has_none() -> None:
    assert set(BRAND_LENGTHS) == set(BRANDS)
    assert BRAND_LENGTHS[UNKNOWN] == frozenset()
    assert all(BRAND_LENGTHS[b] for b in BRANDS if b != UNKNOWN)
    assert all(13 <= n <= 19 for lengths in BRAND_LENGTHS.values() for n in lengths)
