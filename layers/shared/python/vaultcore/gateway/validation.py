"""QSAPI 3.8 request parsing and validation (pure: no I/O, no logging; messages never quote a value).

Two steps, because token payments only know their card or bank data after detokenization:

1. :func:`validate_request` checks the *form* of every variable the gateway knows (types and lengths of the
   spec's token parameter and level 2 tables, the plaintext card and bank fields, amounts, currency, ...), the
   variables each case of the spec's table requires, and how the payment data is given (card, bank account,
   etoken, tokens). Unknown variables are ignored, as the original does; they are never stored or logged.
2. :func:`check_payment` checks the *meaning* of the resolved payment data (plaintext merged with detokenized
   values, token payment rule 4): Luhn (ISO/IEC 7812-1), expiry not in the past, the CVV length of the brand,
   the ABA routing checksum, and the level 2 tax rule of the card's brand.

Rules chosen where the spec is silent (docs/integrators/gateway.md): empty values count as absent (HTML forms
send them); a variable may appear once; ``tender_type`` is required for SALE and AUTHORIZATION except where
bank fields (plaintext or tokens) are present: spec "ACH is implied by the bank fields", so it may be omitted
there; a ``tender_type`` that contradicts the data (CARD with bank fields, ACH with card fields or card tokens)
is refused with 106, and card data mixed with bank data with 217; ACH supports SALE only; ``response_format`` defaults to JSON and only JSON is served; ``currency`` defaults to USD.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import parse_qsl

from vaultcore.cards.brand import AMEX, MASTERCARD, VISA, detect_brand
from vaultcore.cards.luhn import luhn_valid
from vaultcore.cards.masking import holds_pan_in_any_form
from vaultcore.gateway import card_present  # issue 20 (card-present)
from vaultcore.gateway.currencies import is_currency, minor_units
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.gateway.processor import DESCRIPTOR_ID

__all__ = [
    "TOKEN_FIELDS",
    "RSAPI_TOKEN_FIELDS",
    "TOKEN_TWINS",
    "LEVEL2_FIELDS",
    "FINGERPRINT_EXCLUDED",
    "GatewayRequest",
    "PaymentData",
    "parse_variables",
    "validate_request",
    "check_payment",
    "parse_amount",
    "format_cents",
    "aba_routing_valid",
    "expiry_state",
]

MAX_VARIABLES = 200
MAX_VALUE_LENGTH = 4096
MAX_APAY_LENGTH = 16384
#: 99,999,999.99 in the currency's major unit: above any card or ACH ticket the sandbox should see.
MAX_AMOUNT_CENTS = 9_999_999_999
MAX_EXPIRY_YEARS = 20

_PRINTABLE = r"[^\x00-\x1f\x7f]"  # any character but controls: names and addresses may carry accents


def _text(low: int, high: int) -> re.Pattern[str]:
    return re.compile(f"{_PRINTABLE}{{{low},{high}}}")


def _digits(low: int, high: int) -> re.Pattern[str]:
    return re.compile(f"[0-9]{{{low},{high}}}")


_BFID = re.compile(r"[A-Za-z0-9_\-+/=]{30,150}")

#: The spec's token parameter table: name -> (type pattern, lengths) as one pattern.
TOKEN_PARAMETERS: dict[str, re.Pattern[str]] = {
    "bfid": _BFID,
    "vault_token_card_number": _digits(14, 19),
    "vault_token_card_expiration": _digits(4, 4),
    "vault_token_card_verification": _digits(3, 4),
    "vault_token_bank_account_number": _digits(4, 17),
    "vault_token_bank_routing_number": _digits(9, 9),
    "vault_token_email": _text(5, 100),
    "vault_token_first_name": _text(2, 50),
    "vault_token_last_name": _text(2, 50),
    "vault_token_phone": _text(2, 20),
    "vault_token_street_address1": _text(2, 100),
    "vault_token_zip": _text(3, 10),
}
TOKEN_FIELDS = tuple(k for k in TOKEN_PARAMETERS if k != "bfid")
#: The token fields stored for the reporting interface (RSAPI column "yes") and sent in postbacks.
RSAPI_TOKEN_FIELDS = ("vault_token_card_number", "vault_token_card_expiration", "vault_token_bank_account_number",
                      "vault_token_bank_routing_number")
#: vault_token_<x> -> its plaintext twin <x> (token payment rule 1: detokenized output maps to these).
TOKEN_TWINS = {name: name.removeprefix("vault_token_") for name in TOKEN_FIELDS}

#: The spec's level 2 table.
LEVEL2_FIELDS: dict[str, re.Pattern[str]] = {
    "level2_merchant_reference": re.compile(r"[A-Za-z0-9]{1,17}"),
    "level2_order_id": re.compile(r"[A-Za-z0-9]{1,17}"),
    "level2_tax": re.compile(r"[0-9]{1,9}(\.[0-9]{1,2})?"),
    "level2_zip": re.compile(r"[A-Za-z0-9-]{1,10}"),
}

#: Free text stored with the transaction and echoed (response, postback, webhooks, v4 details): refused when it
#: holds a card number in any spelling (:func:`vaultcore.cards.masking.holds_pan_in_any_form`; review of issue 31).
FREE_TEXT = frozenset({"first_name", "last_name", "street_address1", "transaction_description"})
#: Plaintext and other variables: name -> (pattern, error code).
_VARIABLES: dict[str, tuple[re.Pattern[str], int]] = {
    "account_id": (re.compile(r"[0-9]{12}"), E.ACCOUNT_ID),
    "api_accesskey": (re.compile(r"[\x21-\x7e]{1,128}"), E.AUTHENTICATION),
    "hash": (re.compile(r"[0-9a-f]{64}"), E.AUTHENTICATION),
    "timestamp": (re.compile(r"[0-9]{1,12}"), E.AUTHENTICATION),
    "hash_key": (re.compile(r"[a-z0-9_]{1,64}(,[a-z0-9_]{1,64}){0,63}"), E.AUTHENTICATION),
    "card_number": (_digits(13, 19), E.CARD_NUMBER),
    "card_expiration": (re.compile(r"(0[1-9]|1[0-2])[0-9]{2}"), E.CARD_EXPIRATION),
    "card_verification": (_digits(3, 4), E.CARD_VERIFICATION),
    "bank_account_number": (_digits(4, 17), E.BANK_ACCOUNT),
    "bank_routing_number": (_digits(9, 9), E.ROUTING),
    "bank_account_type": (re.compile(r"(?i)checking|savings"), E.ACH_TYPE),
    "zip": (re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 -]{1,8})[A-Za-z0-9]"), E.ZIP),
    "first_name": (_text(2, 50), E.VARIABLE),
    "last_name": (_text(2, 50), E.VARIABLE),
    "email": (re.compile(r"(?=.{5,100}$)[^@\s]+@[^@\s]+\.[^@\s]+"), E.VARIABLE),
    "phone": (re.compile(r"[0-9+()\-. ]{2,20}"), E.VARIABLE),
    "street_address1": (_text(2, 100), E.VARIABLE),
    # issue 20: echoed in the response as sent (limits chosen here, docs/integrators/gateway.md "Echoed variables"): a
    # description of 1-255 printable characters, a balance of 0 to 99,999,999.99 with at most 2 decimals
    "transaction_description": (_text(1, 255), E.VARIABLE),
    "balance": (re.compile(r"[0-9]{1,8}(\.[0-9]{1,2})?"), E.VARIABLE),
    "device_trans_id": (re.compile(r"[A-Za-z0-9_-]{1,64}"), E.DEVICE_TRANS_ID),
    "custom_id": (re.compile(r"[A-Za-z0-9_.\-]{1,50}"), E.IFRAME_FIELD),
    # --- issue 19 (iframe): an eToken is a bfid of up to 1,024 characters (the original's limit; more tags) ---
    "etoken": (re.compile(r"[A-Za-z0-9_\-+/=]{30,1024}"), E.IFRAME_FIELD),
    # --- end ---
    "token_id": (re.compile(r"[1-9][0-9]{11}"), E.TOKEN_ID),
    # "true"/"false" as clients of the original send (no inline flag: the pattern is also the OpenAPI document's)
    "reissue": (re.compile(r"[01]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]"), E.REISSUE),
    "authorization_code": (re.compile(r"[A-Za-z0-9]{6}"), E.AUTHORIZATION_CODE),
    "apay_payload": (_text(1, MAX_APAY_LENGTH), E.VARIABLE),
    "idempotency_key": (re.compile(r"[\x20-\x7e]{1,255}"), E.IDEMPOTENCY_KEY),
    # --- issue 31: a v4 payments/init id to charge, and a dynamic descriptor's id (docs/integrators/v4-payments.md)
    "transaction_id": (re.compile(r"[1-9][0-9]{11}"), E.INIT_ID),
    "dynamic_descriptor_id": (DESCRIPTOR_ID, E.DESCRIPTOR),
    # --- end ---
}
# --- issue 20 (card-present): card_tracks and the P2PE reader variables (vaultcore.gateway.card_present) ---
_VARIABLES.update(card_present.PATTERNS)
# --- end ---
_CHOICES: dict[str, tuple[tuple[str, ...], int]] = {
    "transaction_type": (("SALE", "AUTHORIZATION", "CAPTURE", "REFUND", "REVERSAL", "CREDIT", "STORE", "FORCE",
                          "SETTLE-BATCH"), E.TRANSACTION_TYPE),
    "tender_type": (("CARD", "ACH", "APAY"), E.TENDER_TYPE),
    "payment_type": (("ECOMMERCE", "MOTO", "RECURRING", "RETAIL"), E.PAYMENT_TYPE),
    "response_format": (("JSON",), E.RESPONSE_FORMAT),
}
#: Transaction types that act on an earlier transaction named by ``token_id``.
REFERENCED_TYPES = ("CAPTURE", "REFUND", "REVERSAL")
#: Transaction types that move no amount.
NO_AMOUNT_TYPES = ("STORE", "SETTLE-BATCH")
_KNOWN = (set(TOKEN_PARAMETERS) | set(LEVEL2_FIELDS) | set(_VARIABLES) | set(_CHOICES)
          | {"transaction_amount", "currency", "include_fields"})

#: Variables left out of the idempotency fingerprint: credentials and the key itself (never fingerprinted).
FINGERPRINT_EXCLUDED = frozenset({"account_id", "api_accesskey", "hash", "timestamp", "hash_key",
                                  "idempotency_key", "response_format", "include_fields"})

_CARD_PLAIN = ("card_number", "card_expiration")
_BANK_PLAIN = ("bank_account_number", "bank_routing_number")
_FED_DISTRICTS = set(range(0, 13)) | set(range(21, 33)) | set(range(61, 73)) | {80}
_ABA_WEIGHTS = (3, 7, 1, 3, 7, 1, 3, 7, 1)


# --------------------------------------------------------------------------------------------- body parsing
def _scalar(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise GatewayError(E.VARIABLE, f"{name} is not a finite number.")
        return repr(value)
    if isinstance(value, str):
        return value
    raise GatewayError(E.BODY)


def parse_variables(content_type: str, body: bytes, known: frozenset[str] | set[str] | None = None) -> dict[str, str]:
    """Form-urlencoded or JSON variables as one ``name -> text`` dict; empty values are dropped.

    Only the ``known`` names (default: every QSAPI variable) are kept; others are ignored.

    The content type decides; without one, a body starting with ``{`` is JSON. Duplicated names are refused
    (two amounts in one request must never be resolved by a silent "last one wins").
    """
    stripped = body.strip()
    is_json = content_type in ("application/json", "text/json") or content_type.endswith("+json") or (
        content_type in ("", "text/plain") and stripped.startswith(b"{"))
    pairs: list[tuple[str, Any]]
    if is_json:
        if stripped and not stripped.startswith(b"{"):
            raise GatewayError(E.BODY)
        try:
            data = json.loads(stripped, object_pairs_hook=lambda kv: kv) if stripped else []
        except (ValueError, UnicodeDecodeError) as exc:
            raise GatewayError(E.BODY) from exc
        if not isinstance(data, list):
            raise GatewayError(E.BODY)
        pairs = data
    elif content_type in ("application/x-www-form-urlencoded", "", "text/plain"):
        try:
            text = body.decode("utf-8")
            pairs = list(parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text.strip()),
                                   max_num_fields=MAX_VARIABLES, errors="strict"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise GatewayError(E.BODY) from exc
    else:
        raise GatewayError(E.BODY)
    if len(pairs) > MAX_VARIABLES:
        raise GatewayError(E.BODY)
    known = _KNOWN if known is None else known
    out: dict[str, str] = {}
    seen: set[str] = set()
    for name, raw in pairs:
        if not isinstance(name, str):
            raise GatewayError(E.BODY)
        if name in seen:
            raise GatewayError(E.DUPLICATE_VARIABLE, f"The variable {name[:64]!r} appears more than once."
                               if name in known else None)
        seen.add(name)
        if isinstance(raw, list) and is_json:  # a nested object arrives as a list of pairs
            raise GatewayError(E.BODY)
        value = _scalar(name, raw)
        if value is None or value == "" or name not in known:
            continue
        limit = MAX_APAY_LENGTH if name == "apay_payload" else MAX_VALUE_LENGTH
        if len(value) > limit:
            raise GatewayError(E.VARIABLE, f"{name} is too long.")
        out[name] = value
    return out


# --------------------------------------------------------------------------------------------- amounts
def parse_amount(text: str, currency: str = "USD", *, allow_zero: bool = False) -> int:
    """The amount in minor units (cents); raises ValueError when not a positive number with <= 2 decimals.

    >>> parse_amount("10.5"), parse_amount("0.01"), parse_amount("7")
    (1050, 1, 700)
    """
    if not isinstance(text, str) or not re.fullmatch(r"[0-9]{1,10}(\.[0-9]{1,2})?", text):
        raise ValueError("amount format")
    try:
        value = Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - the pattern already guarantees a decimal
        raise ValueError("amount format") from exc
    cents = int(value * 100)
    if cents <= 0 and not (allow_zero and cents == 0):
        raise ValueError("amount not positive")
    if cents > MAX_AMOUNT_CENTS:
        raise ValueError("amount too large")
    if minor_units(currency) == 0 and cents % 100:
        raise ValueError("currency has no minor units")
    return cents


def format_cents(cents: int) -> str:
    """``1050 -> "10.50"``."""
    return f"{cents // 100}.{cents % 100:02d}"


def aba_routing_valid(routing: str) -> bool:
    """ABA routing number: 9 digits, a Federal Reserve routing symbol prefix (00-12, 21-32, 61-72, 80), and
    the checksum ``3(d1+d4+d7) + 7(d2+d5+d8) + (d3+d6+d9) = 0 (mod 10)`` (ABA Key to Routing Numbers).

    >>> aba_routing_valid("011000015"), aba_routing_valid("011000016"), aba_routing_valid("990000005")
    (True, False, False)
    """
    if not isinstance(routing, str) or not re.fullmatch(r"[0-9]{9}", routing):
        return False
    if int(routing[:2]) not in _FED_DISTRICTS:
        return False
    return sum(w * int(c) for w, c in zip(_ABA_WEIGHTS, routing, strict=True)) % 10 == 0


def expiry_state(mmyy: str, now: float) -> str:
    """``"ok"``, ``"expired"`` (before the current month, UTC; a card is valid through its expiry month) or
    ``"too_far"`` (more than 20 years ahead)."""
    month, year = int(mmyy[:2]), 2000 + int(mmyy[2:])
    today = datetime.fromtimestamp(now, UTC)
    if (year, month) < (today.year, today.month):
        return "expired"
    if (year, month) > (today.year + MAX_EXPIRY_YEARS, today.month):
        return "too_far"
    return "ok"


# --------------------------------------------------------------------------------------------- the request
@dataclass
class GatewayRequest:
    """A request whose variables passed :func:`validate_request`. ``values`` holds them normalised."""

    values: dict[str, str]
    transaction_type: str
    tender: str | None  # CARD, ACH, APAY or None (CAPTURE, REFUND, REVERSAL)
    amount_cents: int  # 0: an AUTHORIZATION that verifies the card, or a REVERSAL sent without an amount
    currency: str
    source: str  # "card", "ach", "iframe", "token", "capture", "refund", "reversal", "wallet"
    tokens: dict[str, str] = field(default_factory=dict)  # vault_token_* sent (not bfid)
    bfid: str | None = None

    @property
    def token_payment(self) -> bool:
        return self.source == "token"

    @property
    def bfid_only(self) -> bool:
        """Token payment rule 2: only bfid among the token parameters (the read step is needed)."""
        return self.source == "token" and not self.tokens

    @property
    def reissue(self) -> bool:
        return self.values.get("reissue") == "1"

    def get(self, name: str) -> str | None:
        return self.values.get(name)


_SHORT_CARD = re.compile(r"[0-9]{5,6}")  # too short to be a card number (issue 30: CARD DATA UNREADABLE)


def _check_pattern(name: str, value: str, pattern: re.Pattern[str], code: int) -> None:
    if not pattern.fullmatch(value):
        raise GatewayError(code, f"{name} has the wrong type or length." if code in (E.VARIABLE, E.TOKEN_PARAMETER,
                                                                                        E.LEVEL2_FIELD) else None)


def _normalise(variables: dict[str, str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, value in variables.items():
        if name in _CHOICES:
            choices, code = _CHOICES[name]
            upper = value.strip().upper()
            if upper not in choices:
                raise GatewayError(code)
            values[name] = upper
        elif name in TOKEN_PARAMETERS:
            _check_pattern(name, value, TOKEN_PARAMETERS[name], E.TOKEN_PARAMETER)
            values[name] = value
        elif name in LEVEL2_FIELDS:
            _check_pattern(name, value, LEVEL2_FIELDS[name], E.LEVEL2_FIELD)
            values[name] = value
        elif name in _VARIABLES:
            pattern, code = _VARIABLES[name]
            if name == "card_number" and _SHORT_CARD.fullmatch(value) and str(
                    variables.get("transaction_type", "")).strip().upper() in ("STORE", "CREDIT"):
                # issue 30: the original's answer to a card number too short to be one, on STORE and CREDIT
                raise GatewayError(E.CARD_DATA_UNREADABLE)
            _check_pattern(name, value, pattern, code)
            if name in FREE_TEXT and holds_pan_in_any_form(value):
                # stored with the transaction and sent on (postback, webhook, v4 details): never a PAN (PCI DSS 3.4)
                raise GatewayError(E.VARIABLE, f"{name} must not hold a card number.")
            if name == "reissue":
                value = {"true": "1", "false": "0"}.get(value.lower(), value)
            values[name] = value.upper() if name in ("bank_account_type", "authorization_code") else value
        else:
            values[name] = value  # transaction_amount, currency, include_fields: checked below
    return values


def _require(values: dict[str, str], *names: str) -> None:
    for name in names:
        if name not in values:
            raise GatewayError(E.MISSING, f"{name} is required.")


def validate_request(variables: dict[str, str], *, now: float) -> GatewayRequest:
    """Check the form of every variable and what each case of the spec's table requires."""
    values = _normalise(variables)
    values.pop("include_fields", None)  # a reporting-interface parameter: no meaning on QSAPI
    _require(values, "transaction_type")
    ttype = values["transaction_type"]
    tender = values.get("tender_type")
    currency = values.get("currency", "USD").strip().upper()
    if not is_currency(currency):
        raise GatewayError(E.CURRENCY)
    if "currency" in values:
        values["currency"] = currency
    if ttype == "REVERSAL" and "transaction_amount" not in values:
        amount = 0  # a reversal voids the whole transaction; an amount, when sent, must match it
    elif ttype in NO_AMOUNT_TYPES:
        # STORE keeps payment data, SETTLE-BATCH closes the batch: neither moves an amount (0.00 is tolerated)
        if values.get("transaction_amount", "0") not in ("0", "0.0", "0.00"):
            raise GatewayError(E.AMOUNT, f"A {ttype} takes no transaction_amount.")
        values.pop("transaction_amount", None)
        amount = 0
    else:
        _require(values, "transaction_amount")
        try:
            # 0.00 is a card verification: an AUTHORIZATION that holds no funds (issue 20)
            amount = parse_amount(values["transaction_amount"], currency, allow_zero=ttype == "AUTHORIZATION")
        except ValueError as exc:
            raise GatewayError(E.AMOUNT) from exc
        values["transaction_amount"] = format_cents(amount)

    tokens = {k: v for k, v in values.items() if k.startswith("vault_token_")}
    bfid = values.get("bfid")
    payment_fields = [k for k in (*_CARD_PLAIN, "card_verification", *_BANK_PLAIN, "etoken", "custom_id")
                      if k in values]
    # --- issue 20 (card-present): card_tracks or a P2PE reader payload is payment data too ---
    present = card_present.source_of(values)  # "swiped", "p2pe" or None
    if present is not None:
        payment_fields.append("card_tracks" if present == "swiped" else "device_payload")
    # --- end ---

    if tender == "APAY" and ttype not in REFERENCED_TYPES:
        # Issue 8: a wallet payment carries apay_payload instead of payment data; amount and currency are
        # checked above like any payment, and against the token by vaultcore.wallet.payments.
        if payment_fields or tokens or bfid or values.get("reissue") == "1":
            raise GatewayError(E.PAYMENT_DATA, "A wallet payment (tender_type APay) takes apay_payload, not payment data.")
        return GatewayRequest(values, ttype, "APAY", amount, currency, "wallet")

    if ttype == "SETTLE-BATCH":
        if payment_fields or tokens or bfid or "token_id" in values:
            raise GatewayError(E.PAYMENT_DATA, "A SETTLE-BATCH takes no payment data and no token_id.")
        return GatewayRequest(values, ttype, None, 0, currency, "settle")

    if ttype in ("SALE", "AUTHORIZATION") and "token_id" in values:
        # A payment with a stored card or bank account: token_id names the STORE (reissue may be 1 or true).
        if payment_fields or tokens or bfid:
            raise GatewayError(E.TOKEN_ID)  # token_id with payment data: as the original, a bad token_id
        return GatewayRequest(values, ttype, tender, amount, currency, "stored")

    if ttype == "STORE" and "etoken" in values:
        # The payment iframe's eToken, kept as a stored card (custom_id and payment_type are not needed here).
        if tokens or bfid or any(k in values for k in (*_CARD_PLAIN, *_BANK_PLAIN, "card_verification")) or len(
                [k for k in payment_fields if k not in ("etoken", "custom_id")]):
            raise GatewayError(E.PAYMENT_DATA, "etoken replaces card data: send no card, bank, reader or token fields.")
        return GatewayRequest(values, ttype, "CARD", 0, currency, "iframe")

    if ttype == "STORE" and (tokens or bfid):
        # Issue 27: tokens are stored already (a STORE keeps clear card or bank data, or an eToken, as tokens)
        raise GatewayError(E.PAYMENT_DATA, "A STORE takes card or bank data or an etoken, not bfid or vault tokens.")

    if ttype == "FORCE":
        _require(values, "authorization_code")
    elif "authorization_code" in values:
        raise GatewayError(E.AUTHORIZATION_CODE, "authorization_code is only sent with FORCE.")

    if ttype in REFERENCED_TYPES:
        # CAPTURE, REFUND and REVERSAL name the transaction they act on with token_id, and nothing else.
        _require(values, "token_id")
        if payment_fields or tokens or bfid or "reissue" in values and values["reissue"] == "1":
            raise GatewayError(E.PAYMENT_DATA, f"A {ttype} takes token_id and transaction_amount, not payment data.")
        if any(k in values for k in LEVEL2_FIELDS):
            raise GatewayError(E.LEVEL2_FIELD, f"Level 2 data is sent with SALE or AUTHORIZATION, not {ttype}.")
        return GatewayRequest(values, ttype, None, amount, currency, ttype.lower())

    has_card = any(k in values for k in (*_CARD_PLAIN, "card_verification"))
    has_bank = any(k in values for k in (*_BANK_PLAIN, "bank_account_type"))
    card_tokens = "vault_token_card_number" in tokens or "vault_token_card_expiration" in tokens
    bank_tokens = "vault_token_bank_account_number" in tokens or "vault_token_bank_routing_number" in tokens
    if (has_card or card_tokens) and (has_bank or bank_tokens):
        raise GatewayError(E.PAYMENT_DATA, "Send card data or bank data, not both.")
    if tender is None and (has_bank or bank_tokens):
        tender = values["tender_type"] = "ACH"  # spec: "ACH is implied by the bank fields"
    if tender is None and ttype in ("STORE", "CREDIT", "FORCE") and (has_card or card_tokens):
        tender = values["tender_type"] = "CARD"  # these types name no tender in clients of the original
    _require(values, "tender_type")
    if tender == "CARD" and (has_bank or bank_tokens):
        raise GatewayError(E.TENDER_TYPE, "tender_type CARD contradicts the bank fields (omit it, or send ACH).")
    # --- issue 19 (iframe): an eToken may hold bank data (the iframe's ACH): tender_type ACH then ---
    if tender == "ACH" and (has_card or card_tokens):
    # --- end ---
        raise GatewayError(E.TENDER_TYPE, "tender_type ACH contradicts the card fields.")
    if "token_id" in values:
        raise GatewayError(E.TOKEN_ID, "token_id is only used with CAPTURE, REFUND and REVERSAL, and to pay with a "
                                       "stored card (SALE, AUTHORIZATION).")

    has_level2 = any(k in values for k in LEVEL2_FIELDS)
    if "level2_tax" in values:
        try:
            tax = parse_amount(values["level2_tax"], allow_zero=True)
        except ValueError as exc:
            raise GatewayError(E.LEVEL2_FIELD, "level2_tax must be a non-negative amount with at most 2 decimals.") from exc
        if tax > amount:
            raise GatewayError(E.LEVEL2_FIELD, "level2_tax cannot exceed transaction_amount.")
        values["level2_tax"] = format_cents(tax)

    # --- issue 20 (card-present): the card is read from card_tracks or a P2PE payload, nothing else ---
    if present is not None:
        if [k for k in payment_fields if k not in card_present.VARIABLES] or tokens or bfid or has_bank or bank_tokens:
            raise GatewayError(E.PAYMENT_DATA, "card_tracks or a P2PE reader payload replaces card data: send no "
                               "other card, bank or token data.")
        if ttype not in ("SALE", "AUTHORIZATION"):
            raise GatewayError(E.PAYMENT_DATA, "Card-present data is sent with SALE or AUTHORIZATION.")
        if tender != "CARD":
            raise GatewayError(E.TENDER_TYPE, "A card-present payment has tender_type CARD.")
        if values.get("reissue") == "1":
            raise GatewayError(E.REISSUE)
        return GatewayRequest(values, ttype, "CARD", amount, currency, present)
    # --- end ---

    if "etoken" in values or "custom_id" in values:
        # The tokenized payment iframe case: custom_id + etoken instead of card data.
        _require(values, "custom_id", "etoken", "currency", "payment_type")
        if tokens or bfid or any(k in values for k in (*_CARD_PLAIN, *_BANK_PLAIN)):
            raise GatewayError(E.PAYMENT_DATA, "etoken replaces card data: send no card, bank or token fields.")
        # --- issue 19 (iframe): CARD or ACH (the eToken's data must be of that tender: 106 otherwise) ---
        if tender not in ("CARD", "ACH"):
            raise GatewayError(E.TENDER_TYPE, "An etoken payment has tender_type CARD or ACH.")
        if tender == "ACH" and ttype != "SALE":
            raise GatewayError(E.ACH_TYPE)
        if values.get("reissue") == "1":
            raise GatewayError(E.REISSUE)
        return GatewayRequest(values, ttype, tender, amount, currency, "iframe")
        # --- end ---

    if tokens or bfid:
        # Token payment rule 1: any vault_token_* or bfid triggers token logic.
        if not bfid:
            raise GatewayError(E.TOKEN_DATA_INCOMPLETE, "bfid is required with token parameters.")
        if tokens:  # rule 3: the supplied tokens are all the data; the spec's Required column applies
            if card_tokens:
                _require_tokens(tokens, "vault_token_card_number", "vault_token_card_expiration")
            elif bank_tokens:
                _require_tokens(tokens, "vault_token_bank_account_number", "vault_token_bank_routing_number")
            else:
                raise GatewayError(E.TOKEN_DATA_INCOMPLETE, "A token payment needs vault_token_card_number and "
                                   "vault_token_card_expiration, or the two bank tokens, besides bfid.")
            if (card_tokens and any(k in values for k in _BANK_PLAIN)) or (
                    bank_tokens and any(k in values for k in _CARD_PLAIN)):
                raise GatewayError(E.PAYMENT_DATA, "Plaintext payment data of another kind than the tokens.")
        kind = "ACH" if bank_tokens else ("CARD" if card_tokens else None)
        if tender == "ACH" and kind == "CARD":
            raise GatewayError(E.PAYMENT_DATA, "tender_type ACH with card tokens.")
        if has_level2 and kind == "ACH":
            raise GatewayError(E.LEVEL2_FIELD, "Level 2 data applies to card payments.")
        return GatewayRequest(values, ttype, kind or tender, amount, currency, "token", tokens, bfid)

    if values.get("reissue") == "1":
        raise GatewayError(E.REISSUE)
    if amount == 0 and ttype not in NO_AMOUNT_TYPES and (has_bank or tender == "ACH"):
        raise GatewayError(E.AMOUNT, "A 0.00 verification is for cards; ACH has no verification.")
    if has_bank:
        _require(values, *_BANK_PLAIN)
        if has_level2:
            raise GatewayError(E.LEVEL2_FIELD, "Level 2 data applies to card payments.")
        return GatewayRequest(values, ttype, "ACH", amount, currency, "ach")
    if tender == "ACH":
        _require(values, *_BANK_PLAIN)
    if ttype == "AUTHORIZATION" and amount == 0 and "card_number" not in values:
        raise GatewayError(E.CARD_NUMBER)  # issue 30: the original's verification without a card number
    _require(values, *_CARD_PLAIN)
    return GatewayRequest(values, ttype, "CARD", amount, currency, "card")


def _require_tokens(tokens: dict[str, str], *names: str) -> None:
    for name in names:
        if name not in tokens:
            raise GatewayError(E.TOKEN_DATA_INCOMPLETE, f"{name} is required with this token payment.")


# --------------------------------------------------------------------------------------------- payment data
@dataclass
class PaymentData:
    """The payment data of one transaction after token resolution (clear values: memory only, never stored)."""

    kind: str  # CARD or ACH
    values: dict[str, str]  # plaintext names: card_number, card_expiration, ..., zip
    detokenized: frozenset[str] = frozenset()  # names whose value came from detokenization

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    @property
    def brand(self) -> str | None:
        return detect_brand(self.values["card_number"]) if self.kind == "CARD" else None


def _origin(name: str, payment: PaymentData) -> str:
    return f"{name} (detokenized)" if name in payment.detokenized else name


def check_payment(payment: PaymentData, request: GatewayRequest, *, now: float) -> None:
    """Check the meaning of the resolved payment data (and re-check the form of detokenized values)."""
    v = payment.values
    for name in payment.detokenized:
        if name in _VARIABLES and name in v:
            pattern, code = _VARIABLES[name]
            if not pattern.fullmatch(v[name]):
                raise GatewayError(code, f"{_origin(name, payment)} has the wrong type or length.")
    if payment.kind == "ACH":
        for name in _BANK_PLAIN:
            if name not in v:
                raise GatewayError(E.TOKEN_DATA_INCOMPLETE if request.token_payment else E.MISSING,
                                   f"{name} is required for an ACH payment.")
        if not aba_routing_valid(v["bank_routing_number"]):
            raise GatewayError(E.ROUTING, f"{_origin('bank_routing_number', payment)} is not a valid ABA routing "
                               "number (prefix or checksum).")
        if request.transaction_type not in ("SALE", "STORE"):
            raise GatewayError(E.ACH_TYPE)
        if any(k in request.values for k in LEVEL2_FIELDS):
            raise GatewayError(E.LEVEL2_FIELD, "Level 2 data applies to card payments.")
        return
    for name in _CARD_PLAIN:
        if name not in v:
            raise GatewayError(E.TOKEN_DATA_INCOMPLETE if request.source in ("token", "iframe") else E.MISSING,
                               f"{name} is required for a card payment.")
    pan = v["card_number"]
    if not luhn_valid(pan):
        raise GatewayError(E.CARD_LUHN, f"{_origin('card_number', payment)} fails the Luhn check.")
    state = expiry_state(v["card_expiration"], now)
    if state == "expired":
        raise GatewayError(E.CARD_EXPIRED)
    if state == "too_far":
        raise GatewayError(E.CARD_EXPIRATION, "card_expiration is more than 20 years ahead.")
    brand = detect_brand(pan)
    cvv = v.get("card_verification")
    if cvv is not None and len(cvv) != (4 if brand == AMEX else 3):
        raise GatewayError(E.CARD_VERIFICATION)
    tax = request.values.get("level2_tax")
    if tax is not None:
        cents = parse_amount(tax, allow_zero=True)
        # Level 2 rule (spec level 2 table): Visa-type cards need a tax above 0.00; MasterCard-type cards
        # accept 0.00; other brands follow MasterCard's rule.
        if brand == VISA and cents == 0:
            raise GatewayError(E.LEVEL2_TAX)
        if brand not in (VISA, MASTERCARD) and cents < 0:  # pragma: no cover - the pattern forbids negatives
            raise GatewayError(E.LEVEL2_TAX)
