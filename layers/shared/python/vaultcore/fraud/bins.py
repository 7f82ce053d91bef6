"""Issuer country of the sandbox's test cards (pure), for the time zone rule of :mod:`vaultcore.fraud.scoring`.

The platform has no BIN database; the sandbox processor knows its test cards, and these are the peers' test
numbers whose issuer country is published (Stripe's international test cards use ``400000`` followed by the
ISO 3166-1 numeric country code). Any other card has an unknown country and the rule stays silent ("where
known"). A production processor's issuer country would feed the same parameter.
"""

from __future__ import annotations

__all__ = ["card_country"]

_PREFIXES: tuple[tuple[str, str], ...] = (
    ("4000000760", "BR"),
    ("4000001240", "CA"),
    ("4000008260", "GB"),
    ("4000002760", "DE"),
    ("4000002500", "FR"),
    ("4000003920", "JP"),
    ("4000000360", "AU"),
    ("4000003560", "IN"),
    ("4000007240", "ES"),
    ("4000003800", "IT"),
    ("4000005280", "NL"),
    ("4000007520", "SE"),
    ("4000005540", "NZ"),
    ("4000007020", "SG"),
    ("4000004840", "MX"),
    ("424242", "US"),
    ("412493", "US"),
    ("411111", "US"),
    ("555555", "US"),
    ("400000", "US"),  # the remaining 400000... triggers are US cards
)


def card_country(pan: str) -> str | None:
    """ISO 3166-1 alpha-2 country of the issuer when known.

    >>> card_country("4000008260000000"), card_country("4242424242424242"), card_country("6011000990139424")
    ('GB', 'US', None)
    """
    for prefix, country in _PREFIXES:
        if pan.startswith(prefix):
            return country
    return None
