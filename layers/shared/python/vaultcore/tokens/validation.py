"""Type rules for clear values before they are tokenized (pure; no I/O, messages never quote the value).

The token engine (:mod:`vaultcore.tokens.engine`) already enforces each field's length range and characters.
These rules add what a value of a type must mean, so a typo is refused instead of being tokenized for good:

* ``card`` fields that hold a card number (``maxLength`` of 12 or more; a 3-4 digit ``card`` field such as
  ``vault_token_card_verification`` is a security code): 12 to 19 digits once spaces and dashes are removed,
  and a correct Luhn check digit (ISO/IEC 7812-1 Annex B);
* ``date``: ``MMYY`` (card expiry, the gateway's ``card_expiration``), ``MMYYYY``, or a calendar date
  ``YYYYMMDD``, separators allowed anywhere (``12/25``, ``12/2025``, ``2025-12-31``); months 01 to 12;
* ``routing``: 9 digits with the ABA checksum ``3(d1+d4+d7) + 7(d2+d5+d8) + (d3+d6+d9) = 0 mod 10``
  (ABA Key to Routing Numbers);
* ``bank``: digits only once separators are removed; ``tax``: 9 digits (SSN / EIN);
* ``email``: one ``local@domain`` with a dotted domain and no spaces (a plausibility check, not RFC 5322);
* ``phone``, ``address``, ``field``: no rule beyond the engine's.
"""

from __future__ import annotations

import calendar

from vaultcore.cards.luhn import luhn_valid
from vaultcore.tokens.templates import FieldType, TemplateField

__all__ = ["ValueRuleError", "check_value", "aba_valid", "CARD_NUMBER_MIN_MAX_LENGTH"]

#: A ``card`` field whose maxLength reaches this is a card number field (shorter ones are security codes).
CARD_NUMBER_MIN_MAX_LENGTH = 12
_ABA_WEIGHTS = (3, 7, 1, 3, 7, 1, 3, 7, 1)


class ValueRuleError(ValueError):
    """The value breaks its type's rule; the message names the field and the rule only."""


def aba_valid(digits: str) -> bool:
    """Whether ``digits`` is a 9-digit ABA routing number with a correct checksum.

    >>> aba_valid("011000015"), aba_valid("011000016")
    (True, False)
    """
    if not isinstance(digits, str) or len(digits) != 9 or not (digits.isascii() and digits.isdigit()):
        return False
    return sum(w * (ord(c) - 48) for w, c in zip(_ABA_WEIGHTS, digits, strict=True)) % 10 == 0


def _digits_only(field: TemplateField, value: str) -> str:
    return "".join(ch for ch in value if ch not in field.separators)


def _is_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _valid_date(digits: str) -> bool:
    if len(digits) in (4, 6):  # MMYY, MMYYYY
        return 1 <= int(digits[:2]) <= 12
    if len(digits) == 8:  # YYYYMMDD
        year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
        return year >= 1 and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]
    return False


def check_value(field: TemplateField, value: str) -> None:
    """Raise :class:`ValueRuleError` when ``value`` breaks the rule of ``field``'s type (module docstring)."""
    where = f"value for field {field.name}"
    kind = field.type
    if kind == FieldType.CARD and field.length_range[1] >= CARD_NUMBER_MIN_MAX_LENGTH:
        digits = _digits_only(field, value)
        if not _is_digits(digits) or not 12 <= len(digits) <= 19:
            raise ValueRuleError(f"{where} is not a card number (12 to 19 digits)")
        if not luhn_valid(digits):
            raise ValueRuleError(f"{where} is not a valid card number (Luhn check failed)")
    elif kind == FieldType.DATE:
        digits = _digits_only(field, value)
        if not _is_digits(digits) or not _valid_date(digits):
            raise ValueRuleError(f"{where} is not a date (MMYY, MMYYYY or YYYYMMDD with a month from 01 to 12)")
    elif kind == FieldType.ROUTING:
        if not aba_valid(_digits_only(field, value)):
            raise ValueRuleError(f"{where} is not a valid routing number (9 digits with the ABA checksum)")
    elif kind == FieldType.BANK:
        if not _is_digits(_digits_only(field, value)):
            raise ValueRuleError(f"{where} is not a bank account number (digits)")
    elif kind == FieldType.TAX:
        digits = _digits_only(field, value)
        if not _is_digits(digits) or len(digits) != 9:
            raise ValueRuleError(f"{where} is not a tax id (9 digits)")
    elif kind == FieldType.EMAIL:
        local, at, domain = value.rpartition("@")
        labels = domain.split(".")
        if not at or not local or len(labels) < 2 or not all(labels) or any(ch.isspace() for ch in value):
            raise ValueRuleError(f"{where} is not an e-mail address")
