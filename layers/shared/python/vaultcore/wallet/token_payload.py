"""Wallet payload parsing (pure): the ``apay_payload`` text, the decrypted payment data, amount and currency.

``apay_payload`` arrives as the spec allows it: JSON text of the wallet payment token, or base64 of that text
(standard or URL-safe alphabet, padding optional). The token is either the whole browser token
``{paymentData, paymentMethod, transactionIdentifier}`` or its ``paymentData`` alone, and ``paymentData`` may
itself be base64 of its JSON ("serialized and base64-encoded where the integration requires it").

The decrypted payment data (the vendor's "Payment Token Format Reference") gives the device account number
(``applicationPrimaryAccountNumber``), its expiry (``applicationExpirationDate``, YYMMDD), the amount in minor
units (``transactionAmount``), the ISO 4217 numeric currency (``currencyCode``) and, for the ``3DSecure``
payment data type, the online payment cryptogram and the ECI. ``EMV`` payment data (issued in China) is not
supported.

Errors are :class:`WalletPayloadError` (``ValueError``) with the 7xx ``code`` of :mod:`vaultcore.wallet.errors`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from vaultcore.cards.brand import detect_brand
from vaultcore.cards.luhn import luhn_valid
from vaultcore.gateway.currencies import CURRENCIES
from vaultcore.wallet.errors import W

__all__ = [
    "MAX_PAYLOAD_CHARS",
    "ISO4217_NUMERIC",
    "WalletPayloadError",
    "WalletCard",
    "parse_apay_payload",
    "token_transaction_id",
    "payment_network",
    "card_from_payment_data",
    "check_amount_and_currency",
    "amount_in_minor_units",
]

MAX_PAYLOAD_CHARS = 32_768  # a real token is about 3 KB; the bound keeps parsing cheap

#: ISO 4217 numeric code -> alphabetic code, for the currencies wallets are used with. A token in a currency
#: missing here is refused as a currency mismatch (711, docs/integrators/wallets.md "Wallet and fraud error codes").
ISO4217_NUMERIC: dict[str, str] = {
    "840": "USD", "978": "EUR", "826": "GBP", "392": "JPY", "124": "CAD", "036": "AUD", "756": "CHF",
    "156": "CNY", "344": "HKD", "702": "SGD", "554": "NZD", "752": "SEK", "578": "NOK", "208": "DKK",
    "985": "PLN", "203": "CZK", "348": "HUF", "946": "RON", "975": "BGN", "949": "TRY", "643": "RUB",
    "356": "INR", "986": "BRL", "484": "MXN", "032": "ARS", "152": "CLP", "170": "COP", "604": "PEN",
    "710": "ZAR", "784": "AED", "682": "SAR", "634": "QAR", "414": "KWD", "048": "BHD", "512": "OMR",
    "400": "JOD", "376": "ILS", "818": "EGP", "566": "NGN", "404": "KES", "410": "KRW", "901": "TWD",
    "764": "THB", "458": "MYR", "360": "IDR", "608": "PHP", "704": "VND", "586": "PKR", "050": "BDT",
    "980": "UAH", "352": "ISK", "788": "TND", "504": "MAD",
}
_HEX = re.compile(r"^[0-9a-fA-F]{2,128}$")
_B64_TEXT = re.compile(r"^[A-Za-z0-9+/=_\-\s]+$")


class WalletPayloadError(ValueError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class WalletCard:
    """What a wallet token pays with. ``pan`` (the device account number) and ``cryptogram`` stay out of repr."""

    pan: str = field(repr=False)
    expiry_mmyy: str
    cryptogram: str | None = field(repr=False, default=None)
    eci: str | None = None
    brand: str | None = None
    transaction_id: str = ""  # the token's header.transactionId (hex, lower case): the replay key
    network: str | None = None  # paymentMethod.network when the full token was sent

    @property
    def last4(self) -> str:
        return self.pan[-4:]


def _b64decode(text: str) -> bytes | None:
    compact = "".join(text.split())
    if not compact or not _B64_TEXT.match(compact):
        return None
    padded = compact + "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _json_object(text: str | bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def parse_apay_payload(payload: Any) -> dict[str, Any]:
    """The token as a dictionary whose ``paymentData`` (when present) is an object. Raises 702/703."""
    if payload is None or (isinstance(payload, str) and not payload.strip()):
        raise WalletPayloadError(W.PAYLOAD_MISSING, "apay_payload is required.")
    if isinstance(payload, dict):  # a JSON request body may carry the token as an object
        token: dict[str, Any] | None = payload
    elif isinstance(payload, str):
        if len(payload) > MAX_PAYLOAD_CHARS:
            raise WalletPayloadError(W.PAYLOAD_MALFORMED, "apay_payload is too long.")
        text = payload.strip()
        token = _json_object(text) if text.startswith("{") else None
        if token is None and not text.startswith("{"):
            raw = _b64decode(text)
            token = _json_object(raw) if raw is not None else None
    else:
        token = None
    if token is None:
        raise WalletPayloadError(W.PAYLOAD_MALFORMED, "apay_payload is neither JSON nor base64 of JSON.")
    inner = token.get("paymentData")
    if isinstance(inner, str):
        decoded = _b64decode(inner)
        inner_obj = _json_object(decoded) if decoded is not None else _json_object(inner)
        if inner_obj is None:
            raise WalletPayloadError(W.PAYLOAD_MALFORMED, "paymentData is neither an object nor base64 of one.")
        token = {**token, "paymentData": inner_obj}
    payment_data = token.get("paymentData", token)
    if not isinstance(payment_data, dict) or not isinstance(payment_data.get("header"), dict):
        raise WalletPayloadError(W.PAYLOAD_MALFORMED, "The wallet token has no paymentData header.")
    for name in ("data", "signature", "version"):
        if not isinstance(payment_data.get(name), str):
            raise WalletPayloadError(W.PAYLOAD_MALFORMED, f"The wallet token has no {name}.")
    token_transaction_id(token)  # validates the header's transactionId
    return token


def token_transaction_id(token: dict[str, Any]) -> str:
    payment_data = token.get("paymentData", token)
    value = payment_data.get("header", {}).get("transactionId")
    if not isinstance(value, str) or not _HEX.match(value):
        raise WalletPayloadError(W.PAYLOAD_MALFORMED, "The wallet token header has no valid transactionId.")
    return value.lower()


def payment_network(token: dict[str, Any]) -> str | None:
    method = token.get("paymentMethod")
    network = method.get("network") if isinstance(method, dict) else None
    return network if isinstance(network, str) and 0 < len(network) <= 32 else None


def card_from_payment_data(decrypted: dict[str, Any], transaction_id: str, network: str | None,
                           today: date) -> WalletCard:
    """Map the decrypted payment data to a :class:`WalletCard`. Raises 713 (incomplete/EMV) or 714 (expired)."""
    pan = decrypted.get("applicationPrimaryAccountNumber")
    if not isinstance(pan, str) or not pan.isdigit() or not 12 <= len(pan) <= 19 or not luhn_valid(pan):
        raise WalletPayloadError(W.PAYMENT_DATA, "The wallet token has no valid device account number.")
    expiry = decrypted.get("applicationExpirationDate")
    if not isinstance(expiry, str) or len(expiry) != 6 or not expiry.isdigit() or not 1 <= int(expiry[2:4]) <= 12:
        raise WalletPayloadError(W.PAYMENT_DATA, "The wallet token has no valid expiration date.")
    year, month = 2000 + int(expiry[:2]), int(expiry[2:4])
    if (year, month) < (today.year, today.month):
        raise WalletPayloadError(W.CARD_EXPIRED, "The wallet card has expired.")
    data_type = decrypted.get("paymentDataType")
    details = decrypted.get("paymentData")
    if data_type != "3DSecure" or not isinstance(details, dict):
        raise WalletPayloadError(W.PAYMENT_DATA, "Only the 3DSecure payment data type is supported.")
    cryptogram = details.get("onlinePaymentCryptogram")
    if not isinstance(cryptogram, str) or not cryptogram or len(cryptogram) > 64:
        raise WalletPayloadError(W.PAYMENT_DATA, "The wallet token has no online payment cryptogram.")
    eci = details.get("eciIndicator")
    if eci is not None and (not isinstance(eci, str) or not eci.isdigit() or len(eci) > 2):
        raise WalletPayloadError(W.PAYMENT_DATA, "The wallet token's ECI indicator is invalid.")
    return WalletCard(pan=pan, expiry_mmyy=expiry[2:4] + expiry[0:2], cryptogram=cryptogram, eci=eci,
                      brand=detect_brand(pan), transaction_id=transaction_id, network=network)


def amount_in_minor_units(amount: str, currency: str) -> int | None:
    """``"10.50"`` USD -> 1050; None when the text is not a plain non-negative amount for that currency."""
    try:
        value = Decimal(str(amount).strip())
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value < 0:
        return None
    scaled = value.scaleb(CURRENCIES.get(currency, 2))
    if scaled != scaled.to_integral_value():
        return None
    return int(scaled)


def check_amount_and_currency(decrypted: dict[str, Any], amount: str, currency: str) -> None:
    """The request's amount and currency must be the token's (raises 711, then 710)."""
    currency = (currency or "").strip().upper()
    alpha = ISO4217_NUMERIC.get(currency, currency)  # the request may use the numeric code too
    token_currency = decrypted.get("currencyCode")
    token_alpha = ISO4217_NUMERIC.get(str(token_currency).zfill(3)) if token_currency is not None else None
    if token_alpha is None or token_alpha != alpha:
        raise WalletPayloadError(W.CURRENCY_MISMATCH, "currency does not match the wallet token.")
    token_amount = decrypted.get("transactionAmount")
    if isinstance(token_amount, str) and token_amount.isdigit():
        token_amount = int(token_amount)
    if isinstance(token_amount, bool) or not isinstance(token_amount, int):
        raise WalletPayloadError(W.PAYMENT_DATA, "The wallet token has no transaction amount.")
    if amount_in_minor_units(amount, alpha) != token_amount:
        raise WalletPayloadError(W.AMOUNT_MISMATCH, "transaction_amount does not match the wallet token.")
