"""The gateway API (GatewayApi): QSAPI 3.8, the reporting interface (RSAPI), the wallet session, the other wallet
request format (``/paymentMethods``, ``/payments``) and the domain association file.

The QSAPI variables are the validator's own tables (:mod:`vaultcore.gateway.validation`): every variable the
gateway knows needs a description here, or the build stops (a new variable must be documented).
"""

from __future__ import annotations

import re
from typing import Any

from local.contracts import errors
from local.contracts.common import (
    body,
    codes,
    document,
    header,
    nullable,
    obj,
    open_codes,
    parameter,
    ref,
    response,
    text,
)
from vaultcore.gateway import validation as v
from vaultcore.gateway.processor import GATEWAY_BRANDS
from vaultcore.gateway.reporting import _DATE, _INCLUDABLE, MAX_RANGE_SECONDS, PAGE_TOKEN_SECONDS
from vaultcore.gateway.reporting import _KNOWN as RSAPI_KNOWN
from vaultcore.gateway.service import RESPONSE_FIELDS
from vaultcore.wallet.checkout_api import _COUNTRY, _REFERENCE, CARD_BRANDS, CHECKOUT_ERRORS, WALLET_TYPE
from vaultcore.wallet.gateway_hooks import FRAUD_FIELDS
from vaultcore.wallet.session import SESSION_ERRORS
from vaultcore.wallet.settings import _FILE_NAME

#: QSAPI variable -> description (rules beyond the pattern, the error code, the spec's Required column).
QSAPI_DESCRIPTIONS: dict[str, str] = {
    "account_id": "Merchant account: 12 digits (101). Required (200).",
    "api_accesskey": "Access key, 1-128 printable ASCII characters; compared in constant time with the account's key "
                     "(stored KMS-wrapped). Required (200) unless `hash` and `timestamp` authenticate the request "
                     "instead. Any authentication failure: 102 `Invalid account_id`.",
    "hash": "The original's hash authentication, sent instead of `api_accesskey` (or with it): lowercase hex "
            "SHA-256 of `account_id,api_accesskey,timestamp[,value of each variable named in hash_key]` (102 on "
            "mismatch). Accepted once. docs/integrators/gateway.md, \"Gateway authentication\".",
    "timestamp": "With `hash`: unix seconds, at most 15 minutes old and at most 60 s in the future (102).",
    "hash_key": "With `hash`: comma-separated names (at most 64) of variables whose values are appended to the "
                "hashed text, in that order; it must name every variable the request sends but `account_id`, "
                "`api_accesskey`, `timestamp`, `hash` and `hash_key` (102).",
    "response_format": "`JSON` (the default; anything else: 104).",
    "transaction_type": "`SALE`, `AUTHORIZATION`, `CAPTURE`, `REFUND` or `REVERSAL` (case-insensitive; 105). "
                        "Required (200). CAPTURE, REFUND and REVERSAL name the transaction they act on with "
                        "`token_id` and take no payment data.",
    "tender_type": "`CARD`, `ACH` or `APay` (case-insensitive; 106). Required for SALE and AUTHORIZATION, except "
                   "that it may be omitted when bank fields or bank tokens are present (ACH is implied). CARD with "
                   "bank fields, or ACH with card fields or an etoken: 106.",
    "payment_type": "`ECOMMERCE`, `MOTO`, `RECURRING` or `RETAIL` (case-insensitive; 220). Required with etoken.",
    "transaction_amount": "Amount above 0 with at most 2 decimals (whole for zero-decimal currencies such as JPY), "
                          "at most 99,999,999.99 (206). `0.00` only with AUTHORIZATION: a card verification. "
                          "CAPTURE: at most the authorized amount (403). REFUND: at most what is left to refund "
                          "(410). REVERSAL: optional; when sent, the transaction's amount (206). Required otherwise.",
    "currency": "ISO 4217 alphabetic code, case-insensitive, default USD (207). Required with etoken; a wallet "
                "payment's must be the token's (711); a capture's the authorization's (406).",
    "include_fields": "A reporting-interface parameter: ignored by QSAPI.",
    "card_number": "13-19 digits (201) passing the Luhn check (202). Card data case: required with "
                   "card_expiration.",
    "card_expiration": "MMYY, month 01-12 (203), valid through its month (204), at most 20 years ahead (203).",
    "card_verification": "3 digits, 4 for American Express (205). Never stored or tokenized.",
    "bank_account_number": "ACH: 4-17 digits (209). ACH is SALE only (222).",
    "bank_routing_number": "ACH: 9 digits with a Federal Reserve prefix and the ABA checksum (210).",
    "bank_account_type": "ACH: `CHECKING` or `SAVINGS`, case-insensitive (222).",
    "zip": "3-10 letters, digits, spaces or hyphens, starting and ending with a letter or digit (208).",
    "first_name": "2-50 printable characters (219).",
    "last_name": "2-50 printable characters (219).",
    "email": "5-100 characters, `local@domain.tld` (219).",
    "phone": "2-20 digits, spaces and `+()-.` (219).",
    "street_address1": "2-100 printable characters (219); with zip it decides the AVS response.",
    "transaction_description": "1-255 printable characters (219 `Invalid transaction_description`); stored and "
                               "echoed in the response, reported and posted back.",
    "balance": "0 to 99,999,999.99 with at most 2 decimals (219 `Invalid balance`); stored and echoed in the "
               "response as a number.",
    "device_trans_id": "Fraud-scoring device transaction id from the collector script: 1-64 letters, digits, "
                       "hyphens or underscores (215).",
    "custom_id": "Iframe output: the merchant's reference of the iframe session, 1-50 of `A-Za-z0-9._-` (216); "
                 "sent with etoken, currency and payment_type.",
    "etoken": "Iframe output: the bfid of card data tokenized for the account's partner and stored for the read "
              "step (216; unknown, another partner's or older than one hour: 306).",
    "token_id": "The 12-digit `transaction_id` acted on (218; not found on this account: 401 `Invalid token_id`). "
                "CAPTURE: an authorization (already captured 402, expired 404, not an approved authorization "
                "405, reversed 412). REFUND: an approved SALE or CAPTURE (over the amount left 410, not "
                "refundable 411). REVERSAL: an approved AUTHORIZATION not captured, or a SALE not settled nor "
                "refunded (already reversed 412, not reversible 413). SALE, AUTHORIZATION: pay with the card or "
                "bank account a STORE kept (422 when it names no STORE of this account).",
    "reissue": "`1` (or `true`) marks a reissue of a token payment or of a payment with a stored card, `0` (or "
               "`false`) none (213: another value, or a reissue without tokens).",
    "authorization_code": "FORCE: the 6 letters or digits of the offline authorization (224; required with FORCE, "
                          "refused with other types).",
    "apay_payload": "Wallet payment (`tender_type=APay`): the wallet payment token as JSON text or base64 of it "
                    "(the whole token or its paymentData), at most 16,384 characters (702/703).",
    "idempotency_key": "Idempotency key, 1-255 printable ASCII characters (221); the `Idempotency-Key` header "
                       "wins and both must agree.",
    # --- issue 31 (docs/integrators/v4-payments.md) ---
    "transaction_id": "The `id` of a v4 `payments/init` of this account (230 otherwise): the transaction is recorded "
                      "under it, its meta readable with `GET /api/v4/accounts/{account_id}/payments/{id}`; charged "
                      "once (231 after).",
    "dynamic_descriptor_id": "The `id` of one of the account's dynamic descriptors (232 otherwise): the processor "
                             "puts it on the statement and the answer echoes `dynamic_descriptor`.",
    # --- end ---
    "bfid": "Token payments (required with any vault_token_*: 305): the token identifier, 30-150 of "
            "`A-Za-z0-9_-+/=` (214). Alone: read-and-detokenize within one hour (303). Spec Required: ALL; "
            "stored for RSAPI.",
    "vault_token_card_number": "Token of card_number: 14-19 digits (214). Required with card tokens (CHD); with "
                               "vault_token_card_expiration. Stored for RSAPI.",
    "vault_token_card_expiration": "Token of card_expiration: 4 digits (214). Required with card tokens (CHD). "
                                   "Stored for RSAPI.",
    "vault_token_card_verification": "Token of card_verification: 3-4 digits (214). Optional.",
    "vault_token_bank_account_number": "Token of bank_account_number: 4-17 digits (214). Required with bank "
                                       "tokens (ACH). Stored for RSAPI.",
    "vault_token_bank_routing_number": "Token of bank_routing_number: 9 digits (214). Required with bank tokens "
                                       "(ACH). Stored for RSAPI.",
    "vault_token_email": "Token of email: 5-100 characters (214). Optional.",
    "vault_token_first_name": "Token of first_name: 2-50 characters (214). Optional.",
    "vault_token_last_name": "Token of last_name: 2-50 characters (214). Optional.",
    "vault_token_phone": "Token of phone: 2-20 characters (214). Optional.",
    "vault_token_street_address1": "Token of street_address1: 2-100 characters (214). Optional.",
    "vault_token_zip": "Token of zip: 3-10 characters (214); wins over `zip`. Optional.",
    "level2_merchant_reference": "Level 2: merchant reference, 1-17 letters or digits (211). SALE or "
                                 "AUTHORIZATION card payments only (211 with ACH or CAPTURE).",
    "level2_order_id": "Level 2: order id, 1-17 letters or digits (211).",
    "level2_tax": "Level 2: a non-negative amount with at most 2 decimals, at most the transaction amount (211); "
                  "Visa cards need more than 0.00, MasterCard and other brands accept 0.00 (212).",
    "level2_zip": "Level 2: 1-10 letters, digits or hyphens (211); not validated like `zip`.",
    # --- issue 20 (card-present): vaultcore.gateway.card_present ---
    "card_tracks": "Card-present (swiped): track 1 and/or track 2 as the reader reads them, with sentinels "
                   "(`%B...?`, `;...=...?`), each optionally followed by its LRC (checked), at most 512 printable "
                   "characters, line ends allowed around the tracks. Instead of card_number and card_expiration "
                   "(with them, card_verification, bank or token data: 217); SALE or AUTHORIZATION, tender_type "
                   "CARD. Unreadable (format, LRC, no PAN, Luhn, no expiry): 223 `CARD DATA UNREADABLE`. Never "
                   "stored or logged; the answer has `swiped` true, `keyed` false, `entry_mode` `swiped`, and "
                   "first_name/last_name from track 1 unless sent.",
    "device_type": "P2PE: the registered reader's device type, as the parser's `deviceType` (`terminal`, "
                   "`audio-reader`, ...; 219). With device_serial and device_payload (200), instead of card data "
                   "(217). Not the registered device's type: 225.",
    "device_serial": "P2PE: the reader's serial, as the parser's `deviceSerial` (1-64 of `A-Za-z0-9._:-`; 219). "
                     "The device must be registered to the account's partner and active (225 otherwise, one "
                     "answer for unknown, inactive and another partner's devices).",
    "device_client_id": "P2PE: the reader's client id, as the parser's `clientId`, for devices registered with "
                        "one (1-64 of `A-Za-z0-9._:-`; 219).",
    "ksn": "P2PE: the DUKPT key serial number of the payload, hex, as the parser's `ksn` (219 not hex); for "
           "terminals (audio readers carry it inside the payload). Wrong for the device's key: 223.",
    "device_payload": "P2PE: the encrypted reader payload, hex (at most 4,096 characters; 219 not hex), as the "
                      "parser's `devicePayload`; decrypted by the same code as POST /api/decrypt/parser. Does not "
                      "decrypt, or holds no readable card with an expiry: 223 `CARD DATA UNREADABLE`.",
    # --- end ---
}

_CANONICAL = {"APAY": "APay"}
_AMOUNT = re.compile(r"[0-9]{1,10}(\.[0-9]{1,2})?")


def _variable(name: str) -> dict[str, Any]:
    try:
        description = QSAPI_DESCRIPTIONS[name]
    except KeyError:
        raise SystemExit(f"QSAPI variable {name!r} has no description in local/contracts/gateway.py") from None
    if name in v._CHOICES:
        choices, _code = v._CHOICES[name]
        return {"type": "string", "enum": [_CANONICAL.get(c, c) for c in choices], "description": description}
    if name in v.TOKEN_PARAMETERS:
        return text(v.TOKEN_PARAMETERS[name], description)
    if name in v.LEVEL2_FIELDS:
        return text(v.LEVEL2_FIELDS[name], description)
    if name in v._VARIABLES:
        return text(v._VARIABLES[name][0], description)
    if name == "transaction_amount":
        return text(_AMOUNT, description, examples=["19.99"])
    if name == "currency":
        return text("[A-Za-z]{3}", description, default="USD")
    return text(description=description)


def _qsapi_request() -> dict[str, Any]:
    names = sorted(v._KNOWN, key=lambda n: (not n.startswith(("account", "api", "transaction", "tender")), n))
    return obj({name: _variable(name) for name in names},
               ("account_id", "api_accesskey", "transaction_type", "transaction_amount"), closed=False,
               description="The QSAPI variables, form-urlencoded or one JSON object of scalars (numbers and "
                           "booleans are read as their text; `true`/`false` as `1`/`0`). Empty values count as "
                           "absent; a variable sent twice is 107; unknown variables are ignored; at most 200 "
                           "variables (100). Which variables each case requires: docs/integrators/gateway.md, "
                           "\"Cases and what they require\".")


def _json_twin(form: str) -> dict[str, Any]:
    """The JSON body of an operation that also takes ``form``: the same variables, under a name of its own (generated
    clients tell a form body from a JSON one by its class)."""
    # allOf with a second member: a lone reference would be the same class in openapi-python-client's client
    return {"allOf": [ref(form), {"type": "object"}],
            "description": f"The variables of {form} as one JSON object (numbers and booleans are read as their text)."}


def _transaction_properties() -> dict[str, Any]:
    s = {"type": "string"}
    props: dict[str, Any] = {
        "transaction_id": text("[1-9][0-9]{11}", "12 digits, unique per account."),
        "tender_type": nullable({"type": "string", "enum": ["CARD", "ACH", "APay"]}),
        "transaction_timestamp": text(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}",
                                      "`YYYY-MM-DD HH:MM:SS`, UTC."),
        "card_brand": nullable({"type": "string", "enum": list(GATEWAY_BRANDS),
                                    "description": "In capitals, as the original sends them. Null for ACH."}),
        "transaction_type": {"type": "string", "enum": ["SALE", "AUTHORIZATION", "CAPTURE", "REFUND", "REVERSAL",
                                                        "CREDIT", "STORE", "FORCE", "SETTLE-BATCH"]},
        "last4": nullable(text("[0-9]{4}", "Last four digits of the card (device account number for wallets) or "
                                           "bank account.")),
        "card_expiration": nullable(text("(0[1-9]|1[0-2])[0-9]{2}", "MMYY; null for ACH.")),
        "authorization_code": nullable(text("[A-Z0-9]{6}", "Null on declines and errors.")),
        "authorization_message": {"type": "string", "enum": ["APPROVED", "DECLINED", "ERROR", "CAPTURED", "REFUND",
                                                             "VOID", "PENDING", "CREDIT", "SETTLED"],
                                  "description": "REFUND: a refund; VOID: a full refund before settlement; "
                                                 "PENDING: an ACH debit (until its batch settles); CREDIT: a "
                                                 "credit; SETTLED: a SETTLE-BATCH."},
        "request_amount": {"type": "number"},
        "transaction_amount": {"type": "number", "description": "The amount approved (0 on a decline)."},
        "first_name": s, "last_name": s,
        "keyed": nullable({"type": "boolean"}), "swiped": nullable({"type": "boolean"}),
        "entry_mode": nullable({"type": "string", "enum": ["keyed", "swiped", "wallet"],  # issue 20: swiped
                                "description": "`keyed` (card data, or a keyed entry on a P2PE terminal), "
                                               "`swiped` (card_tracks, or a P2PE swipe or EMV read), `wallet`."}),
        "transaction_approved": {"type": "boolean"},
        "avs_response": {"type": "string", "enum": ["Y", "Z", "A", "N"],
                         "description": "`Y` street and zip, `Z` zip only, `A` street only, `N` no match; absent "
                                        "when neither was sent."},
        "cvv2_response": {"type": "string", "enum": ["M", "N", "P"],
                          "description": "`M` match, `N` no match, `P` not processed (no CVV)."},
        "transaction_description": text(v._VARIABLES["transaction_description"][0], "As sent (when sent)."),
        "balance": {"type": "number", "description": "As sent (when sent)."},
        "currency": nullable(text("[A-Z]{3}")),
        "custom_id": text(v._VARIABLES["custom_id"][0]),
        "token_id": text("[1-9][0-9]{11}", "CAPTURE, REFUND, REVERSAL: the transaction_id acted on."),
        "batch_id": {"type": "integer", "minimum": 1, "description": "SETTLE-BATCH: the batch it closed."},
        # --- issue 31 ---
        "dynamic_descriptor_id": text(v._VARIABLES["dynamic_descriptor_id"][0], "The descriptor the request named."),
        "dynamic_descriptor": {"type": "string", "maxLength": 42,
                               "description": "The statement line the processor applied: `<descriptor> <city> "
                                              "<state>` of the named dynamic descriptor."},
        # --- end ---
        "error": {"type": "boolean"},
        "error_code": ref("GatewayErrorCode"),
        "error_message": nullable(s), "error_msg": nullable(s),
    }
    missing = [n for n, _ in RESPONSE_FIELDS if n not in props]
    if missing:
        raise SystemExit(f"gateway response fields without a schema in local/contracts/gateway.py: {missing}")
    return props


def _schemas() -> dict[str, Any]:
    table = errors.gateway_table()
    tx = _transaction_properties()
    always = [n for n, a in RESPONSE_FIELDS if a]
    s, i = {"type": "string"}, {"type": "integer"}
    record_extra = {
        "account_id": text("[0-9]{12}"), "payment_type": s, "device_trans_id": s,
        "reissue": {"const": "1"}, **{n: text(p) for n, p in v.LEVEL2_FIELDS.items()},
        "auth_status": {"type": "string", "enum": ["authorized", "captured", "declined", "verified"]},
        "auth_expires_at": text(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"),
        "captured_by": text("[1-9][0-9]{11}"),
        "bfid": s, **{n: s for n in v.RSAPI_TOKEN_FIELDS},
        "fraud_score": {"type": "integer", "minimum": 0, "maximum": 100},
        "fraud_recommendation": {"type": "string", "enum": ["accept", "review", "reject", "unscored"]},
        "fraud_reasons": {"type": "array", "items": s},
        "status": {"type": "string", "enum": ["APPROVED", "DECLINED", "CAPTURED", "VOIDED", "REFUNDED", "PENDING",
                                              "SETTLED", "RETURNED"],
                   "description": "The lifecycle status (docs/integrators/gateway.md, "
                                  "\"Batches and statuses\")."},
        "refunded_amount": {"type": "number", "description": "What refunds took, when any."},
        "ach_return_code": text("R[0-9]{2}", "RETURNED: the bank's NACHA return code."),
    }
    assert set(FRAUD_FIELDS) <= set(record_extra)
    # null, written so generators take it (openapi-generator's python generator has no type for a bare "null"):
    # a nullable string that is not a string
    null = {"type": ["string", "null"], "not": {"type": "string"}, "description": "Always null here."}
    ok = {"error": {"const": False}, "error_code": {"const": 0}, "error_message": null, "error_msg": null}
    amount = obj({"currency": text("[A-Z]{3}", "ISO 4217 code."),
                  "value": {"type": "integer", "minimum": 1, "maximum": 10**11 - 1,
                            "description": "Minor units (1000 = 10.00 USD)."}}, ("currency", "value"))
    credentials = {"account_id": text(v._VARIABLES["account_id"][0], "Or the `X-Account-Id` header."),
                   "api_accesskey": text(v._VARIABLES["api_accesskey"][0], "Or the `X-Api-Accesskey` header.")}
    return {
        "GatewayErrorCode": codes(table, "`error_code` of gateway (QSAPI, RSAPI) responses; 0 when no error. "
                                         "Failures answer HTTP 200 (input-gate refusals too: 100) except 1 (500) "
                                         "and 601 (409)."),
        "QsapiRequest": _qsapi_request(),
        "TransactionResponse": obj(tx, always, description="The gateway transaction response "
                                                           "(docs/integrators/gateway.md). Declines are transactions too: "
                                                           "`transaction_approved` false, `error` true, a 5xx or 720 "
                                                           "`error_code`."),
        "GatewayError": obj({"error": {"const": True}, "error_code": ref("GatewayErrorCode"),
                             "error_message": s, "error_msg": s, "transaction_approved": {"const": False}},
                            ("error", "error_code", "error_message", "error_msg", "transaction_approved"),
                            description="A refusal before any transaction was made (no transaction_id); "
                                        "`error_message` = `error_msg`."),
        "QsapiJsonRequest": _json_twin("QsapiRequest"),
        "QsapiResponse": {"anyOf": [ref("TransactionResponse"), ref("GatewayError")]},
        "RsapiRequest": obj({
            "account_id": _variable("account_id"), "api_accesskey": _variable("api_accesskey"),
            "hash": _variable("hash"), "timestamp": _variable("timestamp"), "hash_key": _variable("hash_key"),
            "response_format": text(description="Accepted and ignored (the answer is JSON)."),
            "transaction_id": text("[0-9]{12}", "One transaction (801 when it is not this account's)."),
            "start_date": text(_DATE, "UTC `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS` (802); default 24 hours before "
                                      "end_date."),
            "end_date": text(_DATE, f"UTC; a bare date is the end of that day; default now; at most "
                                    f"{MAX_RANGE_SECONDS // 86400} days after start_date (802)."),
            "limit": text("[0-9]{1,3}", "1-100, default 25 (805)."),
            "batch_id": text("[1-9][0-9]{0,6}", "The transactions of one settlement batch, instead of start_date and "
                                                "end_date (806)."),
            "next_token": text(description="The previous page's `next_token`: the next page of the range it was "
                                           "issued for (start_date, end_date and batch_id may be left out; when "
                                           "sent, they must name that range). Tamper-evident, for the same "
                                           f"account, usable for {PAGE_TOKEN_SECONDS // 3600} hours from its listing's "
                                           "first page (803)."),
            "include_fields": text(description="Comma-separated names (at most 50) to add (804 for an unknown "
                                               "one): " + ", ".join(sorted(_INCLUDABLE)) + "."),
        }, ("account_id", "api_accesskey"), closed=False,
            description=f"Form-urlencoded or JSON. Other variables are ignored: {', '.join(sorted(RSAPI_KNOWN))} "
                        "are read."),
        "RsapiJsonRequest": _json_twin("RsapiRequest"),
        "TransactionRecord": obj({**tx, **record_extra}, always,
                                 description="The transaction response plus the stored extras; token fields "
                                             "(empty strings when absent) with TOKEN DATA IN RSAPI or when named in "
                                             "include_fields; fraud fields with `fraud_in_rsapi` or when named."),
        "RsapiTransaction": obj({**ok, "transaction": ref("TransactionRecord")},
                                ("error", "error_code", "error_message", "error_msg", "transaction")),
        "RsapiPage": obj({**ok, "transactions": {"type": "array", "items": ref("TransactionRecord"),
                                                 "description": "Newest first."},
                          "count": i, "next_token": nullable(s)},
                         ("error", "error_code", "error_message", "error_msg", "transactions", "count",
                          "next_token")),
        "RsapiResponse": {"anyOf": [ref("RsapiTransaction"), ref("RsapiPage"), ref("GatewayError")]},
        "WalletSessionRequest": obj({
            **credentials,
            "display_name": text(description="Shown in the payment sheet: 1-64 printable characters (missing or "
                                             "empty: 200; otherwise invalid: 219).", minLength=1, maxLength=64),
            "referrer": text(description="The shop domain or a URL on it: one of the account's wallet `domains` "
                                         "(716); 1-2048 printable characters (200, 219).", minLength=1,
                             maxLength=2048),
            "merchant_id": text(description="The account's `merchant_identifier` (718); 1-255 printable "
                                            "characters (200, 219).", minLength=1, maxLength=255),
        }, ("account_id", "api_accesskey", "display_name", "referrer", "merchant_id"), closed=False),
        "WalletSessionErrorCode": codes(SESSION_ERRORS, "`error_code` of the wallet session endpoint (gateway "
                                                        "codes; docs/integrators/wallets.md, \"Paying\": "
                                                        "\"Wallet session errors\")."),
        "WalletSessionError": obj({"error": {"const": True}, "error_code": ref("WalletSessionErrorCode"),
                                   "error_message": s, "error_msg": s, "transaction_approved": {"const": False}},
                                  ("error", "error_code", "error_message", "error_msg", "transaction_approved")),
        "WalletSession": {"type": "object", "description": "The wallet vendor's merchant session object, unchanged: "
                                                           "pass it to `completeMerchantValidation`."},
        "Amount": amount,
        "PaymentMethodsRequest": obj({
            **credentials,
            "countryCode": text(_COUNTRY, "ISO 3166-1 alpha-2."),
            "amount": ref("Amount"),
            "channel": {"type": "string", "enum": ["Web", "iOS"], "default": "Web"},
        }, closed=False),
        "PaymentMethod": obj({"name": s, "type": {"type": "string", "enum": ["scheme", WALLET_TYPE]},
                              "brands": {"type": "array", "items": {"type": "string", "enum": list(CARD_BRANDS)}},
                              "configuration": obj({"merchantId": s, "merchantName": s}, ("merchantId",))},
                             ("name", "type")),
        "PaymentMethodsResponse": obj({"paymentMethods": {"type": "array", "items": ref("PaymentMethod")}},
                                      ("paymentMethods",)),
        "PaymentsRequest": obj({
            **credentials,
            "reference": text(_REFERENCE, "The merchant's reference: 1-80 printable ASCII characters."),
            "amount": ref("Amount"),
            "paymentMethod": obj({"type": {"const": WALLET_TYPE},
                                  # anyOf, not a type list: openapi-generator's normalizer logs an error on one
                                  "applePayToken": {"anyOf": [{"type": "string"}, {"type": "object"}],
                                                    "description": "The wallet token: JSON text, base64 of it, or "
                                                                   "the object."}},
                                 ("type", "applePayToken"), closed=False),
            "deviceTransId": text(v._VARIABLES["device_trans_id"][0], "Fraud scoring: the device transaction id."),
        }, ("reference", "amount", "paymentMethod"), closed=False),
        "PaymentsResponse": obj({
            "merchantReference": s, "amount": ref("Amount"),
            "pspReference": text("[1-9][0-9]{11}", "The gateway transaction_id."),
            "resultCode": {"type": "string", "enum": ["Authorized", "Refused"],
                           "description": "`Authorized`: inform the shopper; `Refused`: ask for another payment "
                                          "method."},
            "additionalData": obj({"authCode": s, "cardBrand": s, "cardSummary": s, "expiryDate": s}),
            "refusalReason": s,
            "refusalReasonCode": text("[0-9]*", "The gateway `error_code` as text (e.g. 710)."),
        }, ("merchantReference", "amount", "resultCode")),
        "CheckoutErrorCode": _checkout_codes(),
        "CheckoutError": obj({"status": {"type": "integer", "enum": sorted({st for st, _m in
                                                                          CHECKOUT_ERRORS.values()}),
                                         "description": "The HTTP status."},
                              "errorCode": ref("CheckoutErrorCode"),
                              "message": s, "errorType": {"type": "string",
                                                          "enum": ["validation", "security", "internal"],
                                                          "description": "`security`: 401; `internal`: 500; "
                                                                         "`validation`: 400 and 422."}},
                             ("status", "errorCode", "message", "errorType")),
    }


def _checkout_codes() -> dict[str, Any]:
    """The checkout API's string ``errorCode`` (open; the known values are :data:`CHECKOUT_ERRORS`, in its order)."""
    ordered = list(CHECKOUT_ERRORS)
    meanings = [f"{CHECKOUT_ERRORS[c][1]} (HTTP {CHECKOUT_ERRORS[c][0]})" for c in ordered]
    return open_codes("string", ordered, meanings, "`errorCode` of `/paymentMethods` and `/payments` errors: "
                                                   "gateway codes as text, or the member at fault.")


def _internal(schema: str = "GatewayError") -> dict[str, Any]:
    return {"500": response("Internal error (error_code 1): the outcome is unknown; retry with the same "
                            "Idempotency-Key.", ref(schema))}


def _gate_and_internal(schema: str = "GatewayError") -> dict[str, Any]:
    return {"400": response("Refused by the input gate (error_code 100).", ref(schema)), **_internal(schema)}


def _checkout_errors() -> dict[str, Any]:
    error = ref("CheckoutError")
    return {"400": response("The body is not one JSON object, or the input gate refused the request (`100`, "
                            "`errorType` validation).", error),
            "401": response("Authentication failed (`102`, `errorType` security).", error),
            "422": response("An invalid member (`errorType` validation; `errorCode` names it, or `702`).", error),
            "500": response("Internal error (`1`, `errorType` internal); for `/payments` the outcome is unknown: "
                            "retry with the same Idempotency-Key.", error)}


def build() -> dict[str, Any]:
    schemas = _schemas()
    idempotency = parameter("Idempotency-Key", "header", "1-255 printable ASCII characters, per account, kept 24 "
                                                         "hours: the same key and variables replay the first "
                                                         "response (600: other variables; 601: still running).",
                            text("[\\x20-\\x7e]{1,255}"))
    replayed = {"Idempotent-Replayed": header("`true` when this is the stored response of an earlier request.")}
    qsapi = {
        "operationId": "qsapi", "tags": ["qsapi"], "summary": "SALE, AUTHORIZATION or CAPTURE",
        "description": "Card, ACH, token, iframe (etoken) and wallet payments, captures. Authentication: "
                       "`account_id` + `api_accesskey` (and optional hash). Every answer is a transaction response "
                       "with HTTP 200, failures too (`error` true, a non-zero `error_code`; an input-gate refusal is "
                       "100), except error 1 (500) and 601 (409). Also served with a trailing slash "
                       "(`/api/qsapi/3.8/`). An API key may stand in for `api_accesskey` as `api_<id>:<secret>`, "
                       "with the transaction type's scope (103, HTTP 403, without it).",
        "security": [{}], "x-body-credentials": ["account_id", "api_accesskey"],
        "parameters": [idempotency],
        "requestBody": body(ref("QsapiJsonRequest"), form=ref("QsapiRequest"), example={
            "account_id": "123456789012", "api_accesskey": "<api_accesskey>", "response_format": "JSON",
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "card_verification": "123", "transaction_amount": "19.99",
            "currency": "USD"}),
        "responses": {
            "200": response("A transaction response (approved or declined) or a refusal (input-gate refusals "
                            "included: 100).", ref("QsapiResponse"), headers=replayed),
            "409": response("601: a request with this idempotency key is still running.", ref("GatewayError")),
            "403": response("103: an API key sent as `api_accesskey` (`api_<id>:<secret>`) does not hold the "
                            "transaction type's scope (docs/integrators/api-keys.md).", ref("GatewayError")),
            **_internal(),
        },
    }
    credentials: list[dict[str, list[str]]] = [{"accountId": [], "apiAccesskey": []}, {}]
    paths: dict[str, Any] = {
        "/api/qsapi/3.8": {"post": qsapi},
        "/api/rsapi/v1/transactions": {"post": {
            "operationId": "rsapiTransactions", "tags": ["rsapi"], "summary": "Reporting interface: one "
                                                                               "transaction or a page",
            "description": "`transaction_id` gives one record; otherwise a UTC date range (default the last 24 "
                           "hours, at most 31 days), newest first, `limit` per page, `next_token` for the next.",
            "security": [{}], "x-body-credentials": ["account_id", "api_accesskey"],
            "requestBody": body(ref("RsapiJsonRequest"), form=ref("RsapiRequest"), required=False,
                                description="Without a body (or without the credentials) the answer is the "
                                            "refusal 200 (`account_id is required.`). Not marked required: "
                                            "openapi-python-client's client (0.29) then imports what its "
                                            "two-media-type body needs."),
            "responses": {"200": response("The record(s), or a refusal (`error` true; input-gate refusals "
                                          "included: 100).", ref("RsapiResponse")),
                          "403": response("103: an API key sent as `api_accesskey` does not hold "
                                          "`pcx:payments:read`.", ref("GatewayError")),
                          **_internal()},
        }},
        "/api/v1/wallet_pay/get_wallet_pay_session": {"post": {
            "operationId": "getWalletPaySession", "tags": ["wallet"], "summary": "Wallet merchant session",
            "description": "Called by the merchant's server: the platform calls the wallet vendor's merchant "
                           "validation over mutual TLS with the account's merchant identity certificate and returns "
                           "the vendor's session object unchanged.",
            "security": [{}], "x-body-credentials": ["account_id", "api_accesskey"],
            "requestBody": body(ref("WalletSessionRequest")),
            "responses": {
                "200": response("The vendor's session object.", ref("WalletSession")),
                "400": response("The request: not one JSON object or refused by the input gate (100), a field "
                                "missing (200) or malformed (219), wallet not configured (701), referrer (716), "
                                "no merchant identity (717), merchant_id (718).", ref("WalletSessionError")),
                "401": response("The credentials: `account_id` or `api_accesskey` missing (200), `account_id` not "
                                "12 digits (101), authentication failed (102).", ref("WalletSessionError")),
                "500": response("Internal error (1).", ref("WalletSessionError")),
                "502": response("The vendor's merchant validation failed (719).", ref("WalletSessionError")),
            },
        }},
        "/paymentMethods": {"post": {
            "operationId": "paymentMethods", "tags": ["checkout"], "summary": "Payment methods for a checkout",
            "description": "Cards always; the wallet (`applepay`) when the account's wallet is configured (for "
                           "`Web`: with at least one domain).",
            "security": credentials, "x-body-credentials": ["account_id", "api_accesskey"],
            "requestBody": body(ref("PaymentMethodsRequest"), example={
                "account_id": "123456789012", "api_accesskey": "...", "countryCode": "US",
                "amount": {"currency": "USD", "value": 1000}, "channel": "Web"}),
            "responses": {"200": response("The methods.", ref("PaymentMethodsResponse")),
                          **_checkout_errors()},
        }},
        "/payments": {"post": {
            "operationId": "payments", "tags": ["checkout"], "summary": "A wallet payment (a gateway SALE)",
            "description": "A SALE through the gateway with tender_type APay: stored, reported, posted back and "
                           "scored like any transaction. Every gateway refusal is `resultCode` `Refused` with the "
                           "gateway code in `refusalReasonCode`.",
            "security": credentials, "x-body-credentials": ["account_id", "api_accesskey"],
            "parameters": [idempotency],
            "requestBody": body(ref("PaymentsRequest")),
            "responses": {"200": response("Authorized or Refused.", ref("PaymentsResponse")),
                          **_checkout_errors()},
        }},
        "/.well-known/{file}": {"get": {
            "operationId": "domainAssociationFile", "tags": ["wallet"], "summary": "The domain association file",
            "description": "Served as `text/plain` for requests whose `Host` is one of an account's wallet domains "
                           "(`PUT /admin/v1/accounts/{id}/wallet/domain-association`); anything else is a plain "
                           "404.",
            "security": [{}],
            "parameters": [parameter("file", "path", "The file name.", text(_FILE_NAME)),
                           parameter("Host", "header", "A wallet domain of an account.", required=True)],
            "responses": {
                "200": response("The file.", content={"text/plain": {"schema": {"type": "string"}}}),
                "404": response("No such file for this host.", content={"text/plain": {"schema": {"type": "string"}}}),
                **_gate_and_internal(),
            },
        }},
    }
    # --- issue 19 (iframe): the payment iFrame's operations (local/contracts/iframe.py) ---
    from local.contracts import iframe

    paths.update(iframe.paths())
    schemas.update(iframe.schemas())
    # --- end ---
    # --- issue 31 (API keys): the merchants' API keys and the scope catalog (local/contracts/api_keys.py) ---
    from local.contracts import api_keys

    paths.update(api_keys.paths())
    schemas.update(api_keys.schemas())
    # --- issue 31: the v4 payments and dynamic descriptors (local/contracts/payments_v4.py) ---
    from local.contracts import payments_v4

    paths.update(payments_v4.paths())
    schemas.update(payments_v4.schemas())
    payments_v4.extend_violation_codes(schemas["ApiViolation"])
    # --- issue 31 (webhooks): merchants' webhook endpoints (local/contracts/webhooks.py) ---
    from local.contracts import webhooks

    paths.update(webhooks.paths())
    schemas.update(webhooks.schemas())
    # --- end ---
    return document(
        api="gateway", title="Vault payment gateway API (QSAPI 3.8)",
        description="QSAPI 3.8 payments, the reporting interface (RSAPI), wallet sessions and payments, the "
                    "wallet domain association file. Gateway failures are transaction responses with `error` "
                    "true and an `error_code` (docs/integrators/gateway.md, \"Gateway error codes\"; "
                    "docs/integrators/wallets.md, \"Wallet and fraud error codes\").",
        paths=paths, schemas=schemas,
        security_schemes={
            "accountId": {"type": "apiKey", "in": "header", "name": "X-Account-Id",
                          "description": "`/paymentMethods` and `/payments` only: the account id, instead of the "
                                         "body's `account_id`. Elsewhere the credentials are body variables."},
            "apiAccesskey": {"type": "apiKey", "in": "header", "name": "X-Api-Accesskey",
                             "description": "`/paymentMethods` and `/payments` only: the access key."},
            **iframe.SECURITY_SCHEMES,  # issue 19 (iframe)
            **api_keys.SECURITY_SCHEMES,  # issue 31 (API keys)
        },
        tags=[{"name": n} for n in ("qsapi", "rsapi", "wallet", "checkout", "iframe",
                                    "api-keys", "payments", "dynamic_descriptors", "webhooks")])  # issue 19: iframe; 31
