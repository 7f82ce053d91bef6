"""A submission from the iframe: fields checked, values tokenized under the account's partner, the eToken bound.

``POST /iframe/v1/submit`` (from the iframe's own origin: no CORS) with ``Authorization: Bearer <token>`` and
the fields by their names (``paymentMethod``; ``cardNumber``, ``cardExpiration``, ``cardCvv``, ``address1``,
``address2``, ``city``, ``state``, ``zip``; ``bankAccountNumber``, ``bankRoutingNumber``, ``accountHolderName``;
``deviceTransId`` with antiFraud). The steps:

1. the token is live and its configuration exists (904); the method is allowed (907); every field is checked
   as the iframe checked it while the shopper typed (906, the message names the field, never a value);
2. one submission of the token is taken (:func:`vaultcore.iframe.instances.take_submission`; 905 past the
   limit), so malformed cards cost nothing and only well-formed ones count;
3. the values are tokenized with the built-in ``GATEWAY`` template under the account's partner and stored for
   the gateway's one-hour read step (the card number, expiry, CVV, street and zip; or the bank account, routing
   number and holder's name) with their use policy (issue 27, :mod:`vaultcore.tokens.policy`): owned by the
   account, the instance's customId and the method, used once; the account binding also on the scope's durable
   record; the CVV under a per-capture salt that the first read removes. The eToken is that bfid. The tokens
   service enforces the policy on every path; nothing here or in the gateway carries a copy of it.

4. ``cardSettings.contactInfo``: ``email`` and ``phone`` checked and returned in the result (``contact``), not
   kept; ``savePaymentOption`` (card or ACH settings): when it saves, a STORE through the gateway
   (:func:`vaultcore.gateway.service.store_for_account`, never the CVV), its ``transaction_id`` returned as
   ``saved.token_id`` (``saved: null`` when the gateway refused to store it; the eToken is good either way);
5. the eToken is added to the instance's ``tokens`` (``GET .../instance/{id}``).

DynamoDB round trips of a submission: instance GetItem, (configuration GetItem when not cached), counter
UpdateItem, scope record UpdateItem (the owner), Tokens UpdateItem (the tokens and their policy). ``bench/bench_iframe.py`` times it.
Clear values live in this request's memory only; nothing here logs a value.
"""

from __future__ import annotations

import re
from typing import Any

from vaultcore import clock
from vaultcore.cards.brand import AMEX, BRAND_LENGTHS, UNKNOWN, detect_brand
from vaultcore.cards.luhn import luhn_valid
from vaultcore.errors import VaultError
from vaultcore.gateway.accounts import load_account
from vaultcore.iframe import configs, instances
from vaultcore.iframe.errors import METHOD_NOT_ALLOWED, SUBMISSION_INVALID, TOKEN_INVALID, IframeError
from vaultcore.logs import get_logger
from vaultcore.tokens.policy import Owner
from vaultcore.tokens.service import tokenize_values

__all__ = ["FIELDS", "submit", "check_card", "check_bank"]

CARD_FIELDS = ("cardNumber", "cardExpiration", "cardCvv")
BANK_FIELDS = ("bankAccountNumber", "bankRoutingNumber", "accountHolderName")
CONTACT_FIELDS = ("email", "phone")
FIELDS = ("paymentMethod", *CARD_FIELDS, *configs.ADDRESS_FIELDS, *CONTACT_FIELDS, *BANK_FIELDS, "deviceTransId",
          "savePayment")
_EMAIL = re.compile(r"[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{2,63}")
_PHONE = re.compile(r"\+[0-9]{6,16}")  # the original's Customer.phone
_EXPIRY = re.compile(r"(0[1-9]|1[0-2])/?([0-9]{2})")
_ZIP = re.compile(r"[A-Za-z0-9 -]{3,10}")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]+")
_DEVICE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ADDRESS_LIMITS = {"address1": (2, 100), "address2": (1, 100), "city": (1, 64), "state": (1, 64)}
_log = get_logger("iframe")


def _bad(field: str, rule: str) -> IframeError:
    return IframeError(SUBMISSION_INVALID, f"{field}: {rule}.")


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 200:
        raise _bad(name, "must be text")
    return value.strip() or None


def check_card(body: dict[str, Any], settings_: dict[str, Any], now: float) -> dict[str, str]:
    """Card fields -> GATEWAY template values (the iframe's own rules: Luhn and brand length, expiry not past,
    CVV length by brand, billing fields per the configuration)."""
    from vaultcore.gateway.validation import expiry_state

    number = re.sub(r"[ -]", "", _text(body, "cardNumber") or "")
    if not number.isdigit() or not 13 <= len(number) <= 19 or not luhn_valid(number):
        raise _bad("cardNumber", "13 to 19 digits that pass the Luhn check")
    brand = detect_brand(number)
    if brand != UNKNOWN and len(number) not in BRAND_LENGTHS[brand]:
        raise _bad("cardNumber", "the length does not fit the card brand")
    expiry = _EXPIRY.fullmatch(_text(body, "cardExpiration") or "")
    if expiry is None:
        raise _bad("cardExpiration", "MMYY or MM/YY")
    mmyy = expiry.group(1) + expiry.group(2)
    if expiry_state(mmyy, now) != "ok":
        raise _bad("cardExpiration", "the card has expired, or the date is more than 20 years ahead")
    values = {"vault_token_card_number": number, "vault_token_card_expiration": mmyy}
    cvv = _text(body, "cardCvv")
    mode = settings_["cvv"]
    if mode == "omit" and cvv is not None:
        raise _bad("cardCvv", "not collected by this configuration")
    if cvv is None and mode == "required":
        raise _bad("cardCvv", "required")
    if cvv is not None:
        if not cvv.isdigit() or len(cvv) != (4 if brand == AMEX else 3):
            raise _bad("cardCvv", "3 digits (4 for American Express)")
        values["vault_token_card_verification"] = cvv
    for name, mode in settings_["billingAddress"].items():
        value = _text(body, name)
        if mode == "omit":
            if value is not None:
                raise _bad(name, "not collected by this configuration")
            continue
        if value is None:
            if mode == "required":
                raise _bad(name, "required")
            continue
        if name == "zip":
            if not _ZIP.fullmatch(value):
                raise _bad(name, "3 to 10 letters, digits, spaces or hyphens")
            values["vault_token_zip"] = value
            continue
        low, high = _ADDRESS_LIMITS[name]
        if not low <= len(value) <= high or not _PRINTABLE.fullmatch(value):
            raise _bad(name, f"{low} to {high} printable characters")
        if name == "address1":
            values["vault_token_street_address1"] = value  # the gateway's street_address1 (AVS)
        # address2, city and state are checked and not kept: the gateway has no variables for them
    return values


def check_contact(body: dict[str, Any], mode: str) -> dict[str, str]:
    """``cardSettings.contactInfo``: email (required or optional per the setting) and phone (optional), or none
    when omitted. Contact details are not card data: the result returns them to the merchant, nothing keeps them."""
    values = {name: _text(body, name) for name in CONTACT_FIELDS}
    if mode == "omit":
        for name, value in values.items():
            if value is not None:
                raise _bad(name, "not collected by this configuration")
        return {}
    if values["email"] is None and mode == "required":
        raise _bad("email", "required")
    if values["email"] is not None and not _EMAIL.fullmatch(values["email"]):
        raise _bad("email", "an email address")
    if values["phone"] is not None and not _PHONE.fullmatch(values["phone"]):
        raise _bad("phone", "+ and 6 to 16 digits")
    return {k: v for k, v in values.items() if v is not None}


def _wants_save(body: dict[str, Any], mode: str) -> bool:
    """savePaymentOption: required saves every capture, optional when the shopper ticked the box, omit never."""
    asked = body.get("savePayment")
    if asked not in (None, True, False):
        raise _bad("savePayment", "a boolean")
    if mode == "omit" and asked:
        raise _bad("savePayment", "saving is not offered by this configuration")
    return mode == "required" or (mode == "optional" and asked is True)


def _save(account: Any, values: dict[str, str], method: str) -> str:
    """A STORE through the gateway (the QSAPI's checks and record) of the captured data, never the CVV; its
    ``transaction_id`` is the ``token_id`` the merchant pays with later."""
    from vaultcore.gateway.errors import GatewayError
    from vaultcore.gateway.service import store_for_account

    variables = {name.removeprefix("vault_token_"): value for name, value in values.items()
                 if name != "vault_token_card_verification"}
    # no custom_id: on the QSAPI it means "pay with an etoken"; the STORE is the account's, whoever's order it was
    variables["tender_type"] = method
    try:
        answer = store_for_account(account, variables)
    except GatewayError as exc:
        # the eToken is made already (the shopper's payment goes on): the result says the card was not saved
        _log.warning("iframe save refused by the gateway", extra={"account_id": account.account_id,
                                                                   "code": exc.code})
        return ""
    except VaultError as exc:
        # a store failure (DynamoDB, KMS) must not fail a submission whose eToken is made and counted: not saved
        _log.error("iframe save failed", extra={"account_id": account.account_id, "code": exc.code})
        return ""
    return str(answer.get("transaction_id") or "")


def check_bank(body: dict[str, Any]) -> dict[str, str]:
    from vaultcore.gateway.validation import aba_routing_valid

    account = _text(body, "bankAccountNumber") or ""
    if not account.isdigit() or not 4 <= len(account) <= 17:
        raise _bad("bankAccountNumber", "4 to 17 digits")
    routing = _text(body, "bankRoutingNumber") or ""
    if len(routing) != 9 or not routing.isdigit() or not aba_routing_valid(routing):
        raise _bad("bankRoutingNumber", "a 9-digit ABA routing number (checksum)")
    holder = " ".join((_text(body, "accountHolderName") or "").split())
    if not 2 <= len(holder) <= 100 or not _PRINTABLE.fullmatch(holder):
        raise _bad("accountHolderName", "2 to 100 printable characters")
    values = {"vault_token_bank_account_number": account, "vault_token_bank_routing_number": routing}
    first, _, last = holder.rpartition(" ")
    if 2 <= len(first) <= 50 and 2 <= len(last) <= 50:
        values.update(vault_token_first_name=first, vault_token_last_name=last)
    else:
        values["vault_token_last_name"] = holder[:50] if len(holder) >= 2 else holder
    return values


def submit(token: Any, body: Any, writer: str) -> dict[str, Any]:
    """One submission of the bearer ``token`` (module docstring); the result ``submit()`` resolves with."""
    from vaultcore.gateway.processor import gateway_brand

    instance, config = instances.live_instance(token)
    if not isinstance(body, dict):
        raise IframeError(SUBMISSION_INVALID, "The body must be one JSON object.")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise _bad(str(unknown[0])[:64], "unknown field")
    method = body.get("paymentMethod", config["allowedPaymentMethods"][0])
    if method not in config["allowedPaymentMethods"]:
        raise IframeError(METHOD_NOT_ALLOWED, "paymentMethod: not allowed by this configuration.")
    if method == "CARD":
        if any(body.get(k) not in (None, "") for k in BANK_FIELDS):
            raise _bad("paymentMethod", "CARD takes no bank fields")
        values = check_card(body, config["cardSettings"], clock.now())
        contact = check_contact(body, config["cardSettings"]["contactInfo"])
        save = _wants_save(body, config["cardSettings"]["savePaymentOption"])
    else:
        if any(body.get(k) not in (None, "") for k in (*CARD_FIELDS, *configs.ADDRESS_FIELDS, *CONTACT_FIELDS)):
            raise _bad("paymentMethod", "ACH takes no card, address or contact fields")
        values = check_bank(body)
        contact = {}
        save = _wants_save(body, config["achSettings"]["savePaymentOption"])
    device = _text(body, "deviceTransId")
    if config["antiFraud"]:
        if device is None or not _DEVICE.fullmatch(device):
            raise _bad("deviceTransId", "1 to 64 letters, digits, '-' or '_' (the device collection's id)")
    elif device is not None:
        raise _bad("deviceTransId", "antiFraud is off for this configuration")
    account = load_account(instance["accountId"])
    if account is None or not account.active or not account.partner_id:
        raise IframeError(TOKEN_INVALID)
    instances.take_submission(str(token), writer)
    extra = [("iframe_instance", instances.token_hash(str(token))[:16])]
    if device is not None:
        extra.append(("iframe_device_trans_id", device))
    owner = Owner(account.account_id, custom_id=instance["customId"], method=method, once=True, durable=True,
                  extra=tuple(extra))
    # readable: the partner's one `read` of an iframe bfid (issue 21; never the CVV's token), besides the gateway's
    # one read of the eToken
    result = tokenize_values(account.partner_id, "GATEWAY", list(values.items()), store=True, readable=True,
                             owner=owner)
    _log.info("iframe submission tokenized", extra={"account_id": account.account_id, "event": method})
    out: dict[str, Any] = {"eToken": result.bfid, "customId": instance["customId"], "paymentMethod": method}
    if method == "CARD":
        number = values["vault_token_card_number"]
        out["card"] = {"first1": number[0], "last4": number[-4:], "expiration": values["vault_token_card_expiration"],
                       "brand": gateway_brand(detect_brand(number))}
    else:
        out["bank"] = {"last4": values["vault_token_bank_account_number"][-4:]}
    if device is not None:
        out["antiFraud"] = {"device_trans_id": device}
    if contact:
        out["contact"] = contact
    if save:
        out["saved"] = {"token_id": token_id} if (token_id := _save(account, values, method)) else None
    instances.record_token(instance, result.bfid)  # GET .../instance/{id} answers it as `tokens`
    return out
