"""The other request format of the wallet flow: ``POST /paymentMethods`` and ``POST /payments`` (GatewayApi).

Integrators who know the checkout API of the peer the spec mirrors use these two calls; they are a thin
translation onto the QSAPI gateway, so a payment made here is an ordinary gateway transaction (stored, reported,
scored, posted back) with ``tender_type`` ``APay``.

Authentication (spec Authentication rule 2): ``account_id`` and ``api_accesskey`` as members of the JSON body,
or as the headers ``X-Account-Id`` and ``X-Api-Accesskey``.

``POST /paymentMethods``: ``countryCode`` (ISO 3166-1 alpha-2), ``amount`` ``{currency, value}`` (value in
minor units), ``channel`` (``Web`` or ``iOS``) -> ``{"paymentMethods": [...]}``: cards (``type`` ``scheme``)
always, and the wallet (``type`` ``applepay``, with the merchant identifier and networks) when the account's
wallet is configured (for ``Web``: with at least one registered domain).

``POST /payments``: ``amount`` ``{currency, value}``, ``reference`` (the merchant's, 1-80 characters),
``paymentMethod`` ``{type: "applepay", applePayToken: <the wallet token as JSON text, base64 of it, or an
object>}``, optional ``deviceTransId`` (fraud scoring), optional ``Idempotency-Key`` header -> a SALE through
the gateway, answered with ``resultCode`` ``Authorized`` (inform the shopper) or ``Refused`` (ask for another
payment method) with ``refusalReason`` and ``refusalReasonCode`` (the gateway ``error_code``, e.g. 710 for an
amount that is not the token's).

Errors are ``{status, errorCode, message, errorType}`` with the codes of :data:`CHECKOUT_ERRORS` (the table
"Checkout error codes" of docs/integrators/wallets.md): a body that is not one JSON object, or a request refused by the
input gate, is HTTP 400 ``"100"``; an invalid member HTTP 422 (``errorType`` ``validation``); failed authentication HTTP
401 ``"102"`` (``security``); an internal error HTTP 500 ``"1"`` (``internal``). Gate refusals and internal errors are
mapped by :mod:`vaultcore.api.responses` (family ``checkout``), the rest here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import VaultError
from vaultcore.gateway.currencies import is_currency, minor_units
from vaultcore.logs import get_logger
from vaultcore.wallet import settings as wallet_settings
from vaultcore.wallet.merchants import authenticate_merchant

__all__ = ["checkout_route", "payment_methods", "payments", "WALLET_TYPE", "CARD_BRANDS", "CHECKOUT_ERRORS"]

WALLET_TYPE = "applepay"
CARD_BRANDS = ("visa", "mc", "amex", "discover", "jcb", "diners")
_AUTH_CODES = (101, 102)
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_REFERENCE = re.compile(r"^[\x20-\x7e]{1,80}$")
_log = get_logger("wallet.checkout")

#: Every ``errorCode`` of ``/paymentMethods`` and ``/payments``: code -> (HTTP status, meaning). The
#: "Checkout error codes" table of docs/integrators/wallets.md and the OpenAPI enum are this dict
#: (tests/unit/test_openapi_contracts.py). Codes that are numbers are the gateway's (100, 102, 702, 1); the others name
#: the member at fault.
CHECKOUT_ERRORS: dict[str, tuple[int, str]] = {
    "1": (500, "Internal error: a dependency is unavailable. `/payments`: the outcome is unknown; retry with the "
               "same Idempotency-Key."),
    "100": (400, "The body is not one JSON object, or the request was refused by the input gate (size, nesting, "
                 "text that is not UTF-8)."),
    "102": (401, "Authentication failed: credentials missing, `account_id` not 12 digits, wrong access key, "
                 "unknown or disabled account."),
    "702": (422, "`paymentMethod.applePayToken` is missing or empty."),
    "amount": (422, "`amount` is not `{currency: ISO 4217 code, value: positive integer in minor units}`."),
    "channel": (422, "`channel` is not `Web` or `iOS`."),
    "countryCode": (422, "`countryCode` is not an ISO 3166-1 alpha-2 code."),
    "paymentMethod": (422, "`paymentMethod` is not an object with `type` `applepay`."),
    "reference": (422, "`reference` is not 1 to 80 printable ASCII characters."),
}
_KIND = {401: "security", 500: "internal"}


def _invalid(code: str, message: str) -> Response:
    status = CHECKOUT_ERRORS[code][0]
    return json_response(status, {"status": status, "errorCode": code, "message": message,
                                  "errorType": _KIND.get(status, "validation")})


def _credentials(request: Request, body: dict[str, Any]) -> tuple[Any, Any]:
    return (body.get("account_id", request.header("x-account-id")),
            body.get("api_accesskey", request.header("x-api-accesskey")))


def _authenticate(request: Request, body: dict[str, Any]) -> Any:
    return authenticate_merchant(*_credentials(request, body))


def _amount(body: dict[str, Any]) -> tuple[str, int] | None:
    amount = body.get("amount")
    if not isinstance(amount, dict):
        return None
    currency, value = amount.get("currency"), amount.get("value")
    if not isinstance(currency, str) or not is_currency(currency):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 10**11:
        return None
    return currency, value


def _decimal(value: int, currency: str) -> str:
    digits = minor_units(currency)
    if digits == 0:
        return str(value)
    text = str(value).rjust(digits + 1, "0")
    return f"{text[:-digits]}.{text[-digits:]}"


def payment_methods(request: Request) -> Response:
    body = request.json()
    if not isinstance(body, dict):
        return _invalid("100", "The request body must be one JSON object.")
    try:
        account = _authenticate(request, body)
    except VaultError as exc:
        if exc.status >= 500:
            raise  # a dependency failed: "1" (HTTP 500), never an authentication failure
        return _invalid("102", "Authentication failed.")
    channel = body.get("channel", "Web")
    if channel not in ("Web", "iOS"):
        return _invalid("channel", "channel must be Web or iOS.")
    country = body.get("countryCode")
    if country is not None and (not isinstance(country, str) or not _COUNTRY.match(country)):
        return _invalid("countryCode", "countryCode must be an ISO 3166-1 alpha-2 code.")
    if "amount" in body and _amount(body) is None:
        return _invalid("amount", "amount must be {currency: ISO 4217 code, value: positive integer in minor units}.")
    methods: list[dict[str, Any]] = [{"name": "Cards", "type": "scheme", "brands": list(CARD_BRANDS)}]
    ws = wallet_settings.get_wallet_settings(account.account_id)
    if ws is not None and (channel == "iOS" or ws.domains):
        methods.append({"name": "Apple Pay", "type": WALLET_TYPE, "brands": ["visa", "mc", "amex", "discover"],
                        "configuration": {"merchantId": ws.merchant_identifier, "merchantName": account.account_id}})
    return json_response(200, {"paymentMethods": methods})


def payments(request: Request) -> Response:
    from vaultcore.gateway.service import process

    body = request.json()
    if not isinstance(body, dict):
        return _invalid("100", "The request body must be one JSON object.")
    account_id, accesskey = _credentials(request, body)
    amount = _amount(body)
    if amount is None:
        return _invalid("amount", "amount must be {currency: ISO 4217 code, value: positive integer in minor units}.")
    reference = body.get("reference")
    if not isinstance(reference, str) or not _REFERENCE.match(reference):
        return _invalid("reference", "reference must be 1 to 80 printable ASCII characters.")
    method = body.get("paymentMethod")
    if not isinstance(method, dict) or method.get("type") != WALLET_TYPE:
        return _invalid("paymentMethod", f"paymentMethod.type must be {WALLET_TYPE} (the wallet payment method).")
    token = method.get("applePayToken")
    if isinstance(token, dict):
        token = json.dumps(token)
    if not isinstance(token, str) or not token:
        return _invalid("702", "paymentMethod.applePayToken is required.")
    currency, value = amount
    variables: dict[str, Any] = {
        "account_id": account_id, "api_accesskey": accesskey, "response_format": "JSON",
        "transaction_type": "SALE", "tender_type": "APay", "payment_type": "ECOMMERCE",
        "transaction_amount": _decimal(value, currency), "currency": currency, "apay_payload": token,
    }
    if isinstance(body.get("deviceTransId"), str):
        variables["device_trans_id"] = body["deviceTransId"]
    try:
        _status, result, _headers = process("application/json", json.dumps(variables).encode("utf-8"),
                                            request.header("idempotency-key"))
    except VaultError as exc:  # every gateway refusal (validation, wallet 7xx, fraud) is "Refused" here
        if exc.code in _AUTH_CODES or (exc.code == 200 and not (account_id and accesskey)):
            return _invalid("102", "Authentication failed.")
        if exc.status >= 500:
            raise
        result = {"transaction_approved": False, "error_code": exc.code, "error_message": exc.message}
    answer: dict[str, Any] = {"merchantReference": reference, "amount": {"currency": currency, "value": value}}
    if result.get("transaction_id"):
        answer["pspReference"] = result["transaction_id"]
    if result.get("transaction_approved"):
        answer["resultCode"] = "Authorized"
        answer["additionalData"] = {k: v for k, v in (
            ("authCode", result.get("authorization_code")), ("cardBrand", result.get("card_brand")),
            ("cardSummary", result.get("last4")), ("expiryDate", result.get("card_expiration"))) if v}
    else:
        answer["resultCode"] = "Refused"
        answer["refusalReason"] = result.get("error_message") or "Refused"
        answer["refusalReasonCode"] = str(result.get("error_code") or "")
    _log.info("checkout payment", extra={"account_id": account_id if isinstance(account_id, str) else None,
                                         "event": answer["resultCode"]})
    return json_response(200, answer)


def checkout_route(request: Request) -> Response:
    """The CheckoutFunction's routes (wiring: ``functions/checkout/app.py``)."""
    if request.path.rstrip("/").endswith("/paymentMethods"):
        return payment_methods(request)
    return payments(request)
