"""The sandbox processor: deterministic outcomes for card and ACH payments (pure: no I/O, no logging).

The platform has no acquirer connection; this module plays the processor so that integrators can exercise
every branch of their code. Outcomes are decided by the card number (public-facts "Test triggers", the
Stripe-style numbers that peers use, plus the original gateway's public test card):

| card_number | outcome | error_code | avs_response | cvv2_response |
|---|---|---|---|---|
| 4242424242424242 | approved | 0 | from the data sent | M (P without a CVV) |
| 4124939999999990 | approved (the original's test card) | 0 | from the data sent | M / P |
| 4000000000000002 | generic decline | 500 | from the data sent | M / P |
| 4000000000000069 | declined: expired card | 501 | from the data sent | M / P |
| 4000000000000127 | declined: incorrect CVC | 502 | from the data sent | N |
| 4000000000000119 | processing error | 503 | — | — |
| 4000000000000010 | declined: AVS failure on address and zip | 504 | N | M / P |
| 4000000000000101 | declined: CVC check fails (when a CVV is sent; approved without one) | 505 | from the data sent | N |
| any other valid card | approved | 0 | from the data sent | M / P |

Amount trigger (certification sandbox only, ``settings().is_cert``): a card ``transaction_amount`` of exactly
``1.01`` declines with 500 ``DECLINED``, whatever the card, as the original's certification environment does
(its declined-purchase answers for 1.01 in ActiveMerchant's PayConex fixtures,
``test/unit/gateways/pay_conex_test.rb``); integrators' test suites rely on it. ACH is not affected.

``card_brand`` is sent in capitals, as the original sends it (``"card_brand":"VISA"`` in the same fixtures):
:data:`GATEWAY_BRANDS`, the brand names of :mod:`vaultcore.cards.brand` upper-cased (``VISA``, ``MASTERCARD``,
``AMERICAN EXPRESS``, ``DISCOVER``, ``JCB``, ``DINERS CLUB``, ``UNKNOWN``).

AVS codes (the standard single letters): ``Y`` street and zip match, ``Z`` zip only sent/matched, ``A`` street
only, ``N`` neither matches (the AVS trigger), absent when neither street nor zip was sent. CVV2 codes
(public-facts): ``M`` match, ``N`` no match, ``P`` not processed (no CVV sent).

ACH debits are approved (the sandbox has no ACH return simulation yet).

Identifiers: ``transaction_id`` is 12 digits with no leading zero (public-facts); ``authorization_code`` is 6
upper-case letters and digits, as issuers return them; ``transaction_timestamp`` is ``YYYY-MM-DD HH:MM:SS`` in
UTC.
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass
from datetime import UTC, datetime

from vaultcore.cards.brand import BRANDS, detect_brand
from vaultcore.ids import numeric_id

__all__ = [
    "DESCRIPTOR_ID",
    "CardPayment",
    "AchPayment",
    "Outcome",
    "TRIGGERS",
    "TEST_CARD",
    "AMOUNT_TRIGGERS",
    "GATEWAY_BRANDS",
    "gateway_brand",
    "authorize_card",
    "debit_ach",
    "new_transaction_id",
    "new_authorization_code",
    "transaction_timestamp",
    "Descriptor",
    "statement_line",
]

TEST_CARD = "4124939999999990"

#: card number -> (approved, error_code, message tag) of the deterministic outcomes; codes are gateway error codes.
TRIGGERS: dict[str, tuple[bool, int, str]] = {
    "4242424242424242": (True, 0, "approve"),
    TEST_CARD: (True, 0, "approve"),
    "4000000000000002": (False, 500, "generic_decline"),
    "4000000000000069": (False, 501, "expired_card"),
    "4000000000000127": (False, 502, "incorrect_cvc"),
    "4000000000000119": (False, 503, "processing_error"),
    "4000000000000010": (False, 504, "avs_failure"),
    "4000000000000101": (False, 505, "cvc_check_failure"),
}

#: transaction_amount in cents -> outcome, in the certification sandbox only (cards; 1.01 declines).
AMOUNT_TRIGGERS: dict[int, tuple[bool, int, str]] = {101: (False, 500, "generic_decline")}

#: ``card_brand`` of gateway responses: the original's capitals.
GATEWAY_BRANDS: tuple[str, ...] = tuple(b.upper() for b in BRANDS)

_AUTH_ALPHABET = string.ascii_uppercase + string.digits


def gateway_brand(name: str | None) -> str | None:
    """The ``card_brand`` a response carries: ``"Visa" -> "VISA"`` (also for records stored before capitals)."""
    return name.upper() if isinstance(name, str) else name


#: A dynamic descriptor's id (``ddesc_`` + 32 hex digits, the original's form): what a SALE may name and what
#: vaultcore.descriptors issues.
DESCRIPTOR_ID = re.compile(r"ddesc_[0-9a-f]{32}")


@dataclass(frozen=True)
class Descriptor:
    """A dynamic descriptor a payment names (issue 31, vaultcore.descriptors): what the statement shows."""

    id: str
    descriptor: str  # the merchant name, at most 25 characters
    city: str  # at most 13 characters
    state: str


def statement_line(descriptor: Descriptor) -> str:
    """The statement line the sandbox processor applies and echoes: the card acceptor name and location as card
    networks carry them (ISO 8583 field 43: a 25-character name, a 13-character city, the state), joined by
    single spaces."""
    return " ".join((descriptor.descriptor.strip(), descriptor.city.strip(), descriptor.state))


@dataclass(frozen=True)
class CardPayment:
    """What the processor sees of a card payment (clear data lives only in memory, for this call)."""

    pan: str
    expiration: str  # MMYY
    cvv: str | None = None
    zip: str | None = None
    street: str | None = None
    amount_cents: int = 0
    currency: str = "USD"
    descriptor: Descriptor | None = None  # issue 31


@dataclass(frozen=True)
class AchPayment:
    account_number: str
    routing_number: str
    amount_cents: int = 0
    currency: str = "USD"
    descriptor: Descriptor | None = None  # issue 31


@dataclass(frozen=True)
class Outcome:
    approved: bool
    error_code: int  # 0 when approved
    authorization_code: str | None
    authorization_message: str  # APPROVED, DECLINED or ERROR
    card_brand: str | None
    avs_response: str | None
    cvv2_response: str | None
    dynamic_descriptor: str | None = None  # issue 31: the statement line applied (statement_line), echoed


def new_transaction_id() -> str:
    """12 random digits with no leading zero (about 40 bits: collisions are caught by a conditional write)."""
    return numeric_id(12)


def new_authorization_code() -> str:
    return "".join(secrets.choice(_AUTH_ALPHABET) for _ in range(6))


def transaction_timestamp(unix_seconds: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC.

    >>> transaction_timestamp(1360870400)
    '2013-02-14 19:33:20'
    """
    return datetime.fromtimestamp(int(unix_seconds), UTC).strftime("%Y-%m-%d %H:%M:%S")


def _avs(payment: CardPayment, trigger: str) -> str | None:
    if trigger == "avs_failure":
        return "N"
    if payment.street and payment.zip:
        return "Y"
    if payment.zip:
        return "Z"
    if payment.street:
        return "A"
    return None


def _cvv2(payment: CardPayment, trigger: str) -> str:
    if not payment.cvv:
        return "P"
    if trigger in ("incorrect_cvc", "cvc_check_failure"):
        return "N"
    return "M"


def _echo(outcome: Outcome, descriptor: Descriptor | None) -> Outcome:
    """The outcome with the statement line of the payment's dynamic descriptor, as a processor echoes what it
    applied (issue 31)."""
    if descriptor is None:
        return outcome
    return Outcome(outcome.approved, outcome.error_code, outcome.authorization_code, outcome.authorization_message,
                   outcome.card_brand, outcome.avs_response, outcome.cvv2_response, statement_line(descriptor))


def authorize_card(payment: CardPayment) -> Outcome:
    """Authorize (SALE or AUTHORIZATION) a card payment that already passed the gateway's validation."""
    return _echo(_authorize_card(payment), payment.descriptor)


def _authorize_card(payment: CardPayment) -> Outcome:
    brand = gateway_brand(detect_brand(payment.pan))
    approved, code, trigger = TRIGGERS.get(payment.pan, (True, 0, "approve"))
    if approved and payment.amount_cents in AMOUNT_TRIGGERS and _certification():
        approved, code, trigger = AMOUNT_TRIGGERS[payment.amount_cents]
    if trigger == "processing_error":
        return Outcome(False, code, None, "ERROR", brand, None, None)
    cvv2 = _cvv2(payment, trigger)
    if trigger == "cvc_check_failure" and not payment.cvv:
        approved, code = True, 0  # the check needs a CVV to fail (Stripe's 4000000000000101 behaves so)
    if approved:
        return Outcome(True, 0, new_authorization_code(), "APPROVED", brand, _avs(payment, trigger), cvv2)
    return Outcome(False, code, None, "DECLINED", brand, _avs(payment, trigger), cvv2)


def _certification() -> bool:
    from vaultcore.settings import settings

    return settings().is_cert


def debit_ach(payment: AchPayment) -> Outcome:
    """Accept an ACH debit (the sandbox approves every valid one)."""
    return _echo(Outcome(True, 0, new_authorization_code(), "APPROVED", None, None, None), payment.descriptor)


# --- issue 20: the sandbox bank's ACH returns ------------------------------------------------------------------
#: Bank account numbers whose debits the sandbox bank returns when their batch settles (NACHA return codes:
#: R01 insufficient funds, R02 account closed, R03 no account). docs/integrators/gateway.md "ACH lifecycle".
ACH_RETURN_TRIGGERS = {"000000000001": "R01", "000000000002": "R02", "000000000003": "R03"}


def ach_return_code(bank_account_number: str) -> str | None:
    return ACH_RETURN_TRIGGERS.get(bank_account_number)
