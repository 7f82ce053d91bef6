"""Card brand from the issuer identification number (the leading digits of the PAN, ISO/IEC 7812-1).

Only the brands the platform distinguishes are named; every other number is ``"Unknown"``. Detection looks
at the prefix only, not at the length or the Luhn digit, so that a partially typed or test number still gets
its brand; :data:`BRAND_LENGTHS` gives the lengths each brand issues, for callers that want the stricter
check (the log scrubber does, to tell a PAN glued to other digits from an ordinary long number).

The level 2 rules of the gateway (``level2_tax``) depend on the brand family: :func:`is_visa_type` and
:func:`is_mastercard_type`.

>>> detect_brand("4242424242424242")
'Visa'
>>> detect_brand("2221000000000009")
'MasterCard'
"""

from __future__ import annotations

__all__ = [
    "VISA",
    "MASTERCARD",
    "AMEX",
    "DISCOVER",
    "JCB",
    "DINERS",
    "UNKNOWN",
    "BRANDS",
    "BRAND_LENGTHS",
    "detect_brand",
    "is_visa_type",
    "is_mastercard_type",
]

VISA = "Visa"
MASTERCARD = "MasterCard"
AMEX = "American Express"
DISCOVER = "Discover"
JCB = "JCB"
DINERS = "Diners Club"
UNKNOWN = "Unknown"
BRANDS = (VISA, MASTERCARD, AMEX, DISCOVER, JCB, DINERS, UNKNOWN)

# PAN lengths issued per brand (public brand rules as published by the networks).
BRAND_LENGTHS: dict[str, frozenset[int]] = {
    VISA: frozenset({13, 16, 19}),
    MASTERCARD: frozenset({16}),
    AMEX: frozenset({15}),
    DISCOVER: frozenset(range(16, 20)),
    JCB: frozenset(range(16, 20)),
    DINERS: frozenset(range(14, 20)),
    UNKNOWN: frozenset(),
}

# (prefix length, lowest, highest, brand). Ordered so that narrower ranges win over the wide ones they
# overlap: the Discover/UnionPay co-brand range 622126-622925 is checked before anything shorter.
_RANGES: tuple[tuple[int, int, int, str], ...] = (
    (6, 622126, 622925, DISCOVER),
    (4, 6011, 6011, DISCOVER),
    (4, 2221, 2720, MASTERCARD),
    (4, 3528, 3589, JCB),
    (4, 3095, 3095, DINERS),
    (3, 644, 649, DISCOVER),
    (3, 300, 305, DINERS),
    (2, 65, 65, DISCOVER),
    (2, 51, 55, MASTERCARD),
    (2, 34, 34, AMEX),
    (2, 37, 37, AMEX),
    (2, 36, 36, DINERS),
    (2, 38, 39, DINERS),
    (1, 4, 4, VISA),
)


def _digits(pan: str) -> str | None:
    # Grouped input ("4242 4242 ...") is common in forms; the brand only depends on the digits.
    if not isinstance(pan, str):
        return None
    cleaned = pan.replace(" ", "").replace("-", "")
    if not cleaned or not (cleaned.isascii() and cleaned.isdigit()):
        return None
    return cleaned


def detect_brand(pan: str) -> str:
    """The brand name of ``pan`` from its issuer identification prefix, or ``"Unknown"``.

    Spaces and dashes between digit groups are ignored; any other non-digit makes the result ``"Unknown"``.
    MasterCard covers 51-55 and the 2-series 2221-2720.
    """
    digits = _digits(pan)
    if digits is None:
        return UNKNOWN
    for size, low, high, brand in _RANGES:
        if len(digits) >= size and low <= int(digits[:size]) <= high:
            return brand
    return UNKNOWN


def is_visa_type(pan: str) -> bool:
    """Whether ``pan`` is a Visa card (the gateway's level 2 tax rule requires a tax above 0.00 for these)."""
    return detect_brand(pan) == VISA


def is_mastercard_type(pan: str) -> bool:
    """Whether ``pan`` is a MasterCard card, 51-55 or 2221-2720 (level 2 tax 0.00 is allowed for these)."""
    return detect_brand(pan) == MASTERCARD
