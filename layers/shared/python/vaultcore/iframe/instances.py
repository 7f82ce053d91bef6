"""Payment iFrame instances: short-lived bearer tokens and the submission limit (Signals table).

``POST /api/v4/accounts/{account_id}/payment-iframe/{id}/instance/init`` creates one, with the original PayConex
v4 members (:data:`INIT_MEMBERS`): ``label`` (required), ``reference``, ``customer``, ``language`` and ``timeout``
(this instance's, over the configuration's), ``amount``, ``currency``, ``initializeTransaction``, ``tokens`` (only
empty: presetting saved payment tokens is not offered), and our ``customId``. It answers the original's
``{id, bearerToken, transactionId}``: ``id`` is ``ifri_`` + 32 hex digits (the original's instance ids), and
``transactionId`` the ``custom_id`` the payment must carry (``customId`` when sent, else ``reference`` when it fits
the gateway's ``custom_id``, else a generated one): the payment is bound to it from the start, so no transaction
is made in the background for ``initializeTransaction``.

Its bearer token is ``ifb_`` + 43 base64url characters (256 random bits); only its SHA-256 is stored, so the table
holds no usable token. Two items:

    pk ``IFRAMEBEARER#<sha256 hex>``, sk ``INSTANCE``: ``accountId``, ``configId``, ``instanceId``, ``customId``,
    ``label``, ``amountCents`` (optional), ``language``, ``customer`` (optional), ``createdAt``, ``expiresAt`` (now
    + the timeout; the table's TTL attribute, and checked on every read because DynamoDB deletes expired items
    lazily), ``submissions`` and ``submitters`` (the request ids of the accepted submissions);

    pk ``IFRAMEINSTANCE#<account_id>#<instance id>``, sk ``INSTANCE``: what ``GET .../instance/{instanceId}``
    answers (the request's members) and ``tokens``, the eTokens of its submissions, kept for the eToken's read
    window (``expiresAt`` = the instance's end + one hour): how a merchant's server learns the result of an
    instance used top-level (a configuration without ``allowedParentDomains``).

Instances made before the ids existed have no ``instanceId`` and no second item (none can be read by id).

A token is good for :data:`SUBMISSION_LIMIT` submissions (against card testing: a thousand cards tried through
one instance yield at most that many eTokens). Each submission takes one with a retry-aware conditional
counter (:func:`take_submission`): the UpdateItem adds the request's random id to ``submitters`` under the
condition that the id is not there yet, the count is below the limit and the token is live; a failed condition
is resolved by reading the item back (the id already there: the SDK retried a write whose answer was lost, the
submission was taken once and is ours).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from vaultcore import clock
from vaultcore.iframe import configs
from vaultcore.iframe.errors import INSTANCE_INVALID, NOT_FOUND, SUBMISSION_LIMIT, TOKEN_INVALID, IframeError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["SUBMISSION_LIMIT_PER_TOKEN", "BEARER", "CUSTOM_ID", "init_instance", "instance_of", "live_instance",
           "record_token", "get_instance", "INSTANCE_ID", "INIT_MEMBERS",
           "take_submission", "token_hash"]

SUBMISSION_LIMIT_PER_TOKEN = 3
BEARER = re.compile(r"ifb_[A-Za-z0-9_-]{43}")
CUSTOM_ID = re.compile(r"[A-Za-z0-9_.\-]{1,50}")  # the gateway's custom_id (validation: 216)
_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,100}")
_TEXT100 = _LABEL
_EMAIL = re.compile(r"[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{2,63}")
_PHONE = re.compile(r"\+[0-9]{6,16}")
_RULES = {"name": "1 to 100 printable characters", "email": "an email address", "phone": "+ and 6 to 16 digits"}
_ADDRESS = ("address1", "address2", "city", "state", "zip", "country", "company")
INSTANCE_ID = re.compile(r"ifri_[0-9a-f]{32}")
INIT_MEMBERS = ("label", "reference", "tokens", "customer", "language", "timeout", "amount", "currency",
                "initializeTransaction", "customId")
ETOKEN_WINDOW = 3600  # an eToken is read within one hour of its capture: the view keeps it that long
_AMOUNT = re.compile(r"[0-9]{1,8}(\.[0-9]{1,2})?")
_SK = "INSTANCE"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def _pk(token: str) -> str:
    return "IFRAMEBEARER#" + token_hash(token)


def _iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _amount_cents(value: Any) -> int | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else (str(value) if isinstance(value, int | float) and not isinstance(
        value, bool) else None)
    if text is None or not _AMOUNT.fullmatch(text):
        raise IframeError(INSTANCE_INVALID, "amount: a positive amount with at most 2 decimals, at most "
                                            "99,999,999.99.")
    try:
        cents = int(Decimal(text) * 100)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise IframeError(INSTANCE_INVALID, "amount: not a number.") from None
    if cents <= 0:
        raise IframeError(INSTANCE_INVALID, "amount: must be above 0.")
    return cents


def _customer(raw: Any) -> dict[str, Any] | None:
    """The original's ``Customer``: ``name`` (at most 100), ``email``, ``phone`` (``+`` and 6-16 digits),
    ``billingAddress`` (``Address``: address1, city, state, country required). It prefills the frame's fields."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"name", "email", "phone", "billingAddress"}:
        raise IframeError(INSTANCE_INVALID, "customer: an object with name, email, phone and billingAddress only.")
    out: dict[str, Any] = {}
    for name, rule in (("name", _TEXT100), ("email", _EMAIL), ("phone", _PHONE)):
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not rule.fullmatch(value):
            raise IframeError(INSTANCE_INVALID, f"customer.{name}: {_RULES[name]}.")
        out[name] = value
    address = raw.get("billingAddress")
    if address is not None:
        if not isinstance(address, dict) or set(address) - set(_ADDRESS):
            raise IframeError(INSTANCE_INVALID, "customer.billingAddress: an object with " + ", ".join(_ADDRESS)
                              + " only.")
        for name in _ADDRESS:
            value = address.get(name)
            if value is None and name in ("address1", "city", "state", "country"):
                raise IframeError(INSTANCE_INVALID, f"customer.billingAddress.{name}: required.")
            if value is not None and (not isinstance(value, str) or not _TEXT100.fullmatch(value)):
                raise IframeError(INSTANCE_INVALID, f"customer.billingAddress.{name}: 1 to 100 printable "
                                                    "characters.")
        out["billingAddress"] = {k: address[k] for k in _ADDRESS if address.get(k) is not None}
    return out


def init_instance(account: Any, config_id: str, body: Any) -> dict[str, Any]:
    """A new instance of the account's configuration ``config_id``: ``{id, bearerToken, transactionId}``."""
    from vaultcore.gateway.currencies import is_currency

    if not isinstance(body, dict):
        raise IframeError(INSTANCE_INVALID, "The body must be one JSON object.")
    unknown = sorted(set(body) - set(INIT_MEMBERS))
    if unknown:
        raise IframeError(INSTANCE_INVALID, f"{str(unknown[0])[:64]}: unknown member.")
    label = body.get("label")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise IframeError(INSTANCE_INVALID, "label: 1 to 100 printable characters (required).")
    reference = body.get("reference")
    if reference is not None and (not isinstance(reference, str) or not _TEXT100.fullmatch(reference)):
        raise IframeError(INSTANCE_INVALID, "reference: 1 to 100 printable characters.")
    custom_id = body.get("customId")
    if custom_id is None:
        custom_id = reference if reference and CUSTOM_ID.fullmatch(reference) else "ifr-" + secrets.token_hex(12)
    elif not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
        raise IframeError(INSTANCE_INVALID, "customId: 1 to 50 letters, digits, '.', '_' or '-' (the gateway's "
                                            "custom_id).")
    if body.get("tokens") not in (None, []):
        raise IframeError(INSTANCE_INVALID, "tokens: presetting saved payment tokens is not offered (an instance's "
                                            "tokens are its captures: GET .../instance/{instanceId}).")
    language = body.get("language")
    if language is not None:
        language = configs.LANGUAGE_ALIASES.get(language, language) if isinstance(language, str) else language
        if language not in configs.LANGUAGES:
            raise IframeError(INSTANCE_INVALID, "language: one of " + ", ".join(configs.LANGUAGES) + ".")
    timeout = body.get("timeout")
    if isinstance(timeout, float) and timeout.is_integer():
        timeout = int(timeout)
    low, high = configs.TIMEOUT_RANGE
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)
                                or not low <= timeout <= high):
        raise IframeError(INSTANCE_INVALID, f"timeout: an integer number of seconds, {low} to {high}.")
    currency = body.get("currency")
    if currency is not None and (not isinstance(currency, str) or not is_currency(currency.upper())):
        raise IframeError(INSTANCE_INVALID, "currency: an ISO 4217 currency code.")
    if not isinstance(body.get("initializeTransaction", False), bool):
        raise IframeError(INSTANCE_INVALID, "initializeTransaction: a boolean.")
    customer = _customer(body.get("customer"))
    amount = _amount_cents(body.get("amount"))
    config = configs.get(account, config_id)  # 404 for another account's or a deleted configuration
    now = int(clock.now())
    token = "ifb_" + secrets.token_urlsafe(32)
    instance_id = "ifri_" + secrets.token_hex(16)
    expires_at = now + int(timeout or config["timeout"])
    language = language or config["language"]
    currency = (currency or config["currency"]).upper()
    item = {"pk": _pk(token), "sk": _SK, "accountId": account.account_id, "configId": config_id,
            "instanceId": instance_id, "customId": custom_id, "label": label, "amountCents": amount,
            "language": language, "customer": customer, "createdAt": now, "expiresAt": expires_at,
            "submissions": 0, "submitters": []}
    view: dict[str, Any] = {"pk": _view_pk(account.account_id, instance_id), "sk": _SK, "configId": config_id, "label": label,
            "reference": reference, "customer": customer, "language": language, "timeout": expires_at - now,
            "amount": None if amount is None else f"{amount // 100}.{amount % 100:02d}", "currency": currency,
            "customId": custom_id, "tokens": [], "createdAt": now, "expiresAt": expires_at + ETOKEN_WINDOW}
    with aws_errors("iframe instance write"):
        # the view first: a token whose view is missing could not report its captures
        dynamodb().put_item(TableName=settings().signals_table, Item=to_item(view),
                            ConditionExpression="attribute_not_exists(pk)")
        dynamodb().put_item(TableName=settings().signals_table, Item=to_item(item),
                            ConditionExpression="attribute_not_exists(pk)")
    return {"id": instance_id, "bearerToken": token, "transactionId": custom_id}


def _view_pk(account_id: str, instance_id: str) -> str:
    return f"IFRAMEINSTANCE#{account_id}#{instance_id}"


def get_instance(account: Any, config_id: str, instance_id: str) -> dict[str, Any]:
    """The original's ``IFrameInstanceResponse`` of one of the account's instances (404 otherwise, and once its
    eTokens' read window has passed)."""
    item = None
    if INSTANCE_ID.fullmatch(instance_id):
        with aws_errors("iframe instance view read"):
            out = dynamodb().get_item(TableName=settings().signals_table,
                                      Key=to_item({"pk": _view_pk(account.account_id, instance_id), "sk": _SK}),
                                      ConsistentRead=True)
        item = from_item(out.get("Item"))
    if item is None or item.get("configId") != config_id or int(item.get("expiresAt", 0)) <= clock.now():
        raise IframeError(NOT_FOUND, "No such payment iFrame instance.")
    view: dict[str, Any] = {"id": instance_id, "label": item["label"], "reference": item.get("reference"),
            "tokens": list(item.get("tokens") or []), "customer": item.get("customer"),
            "language": item["language"], "timeout": int(item["timeout"]), "amount": item.get("amount"),
            "currency": item["currency"]}
    return {k: v for k, v in view.items() if v is not None}  # the original's members are optional, not nullable


def instance_of(token: Any) -> dict[str, Any] | None:
    """The instance item of ``token`` whether expired or not (the page still needs its configuration to answer
    an expired token inside the merchant's page), or None for a malformed or unknown token."""
    if not isinstance(token, str) or not BEARER.fullmatch(token):
        return None
    with aws_errors("iframe instance read"):
        out = dynamodb().get_item(TableName=settings().signals_table, Key=to_item({"pk": _pk(token), "sk": _SK}),
                                  ConsistentRead=True)
    return from_item(out.get("Item"))


def live_instance(token: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(instance, configuration)`` of a live token; 904 for an unknown or expired token or a deleted
    configuration."""
    item = instance_of(token)
    if item is None or int(item.get("expiresAt", 0)) <= clock.now():
        from vaultcore import metrics

        metrics.authentication_failed("iframe: bearer token", cause="bearer")  # issue 27: Api=iframe
        raise IframeError(TOKEN_INVALID)
    config = configs.load(item["accountId"], item["configId"])
    if config is None:
        raise IframeError(TOKEN_INVALID)
    return item, config


def record_token(instance: dict[str, Any], bfid: str) -> None:
    """Add a submission's eToken to its instance's ``tokens`` (answered by ``GET .../instance/{id}``: how the
    merchant's server learns the result of an instance used top-level, without a parent page). At most
    :data:`SUBMISSION_LIMIT_PER_TOKEN` ever, since each one took a submission first."""
    if not instance.get("instanceId"):
        return  # an instance made before instance ids: nothing can read it by id
    try:
        with aws_errors("iframe instance tokens"):
            dynamodb().update_item(
                TableName=settings().signals_table,
                Key=to_item({"pk": _view_pk(instance["accountId"], instance["instanceId"]), "sk": _SK}),
                UpdateExpression="SET #t = list_append(if_not_exists(#t, :empty), :bfid)",
                ConditionExpression="attribute_exists(pk)", ExpressionAttributeNames={"#t": "tokens"},
                ExpressionAttributeValues=to_item({":empty": [], ":bfid": [bfid]}))
    except ConditionFailed:
        pass  # the instance expired and its item is gone: the submit() result still carries the eToken


def take_submission(token: str, writer: str) -> int:
    """Count one submission of ``token`` for the request ``writer``; the number taken, or 905 / 904.

    One conditional UpdateItem; a failed condition is resolved by reading the item back (module docstring).
    """
    now = int(clock.now())
    names = {"#n": "submissions", "#w": "submitters", "#e": "expiresAt"}
    try:
        with aws_errors("iframe submission count"):
            out = dynamodb().update_item(
                TableName=settings().signals_table, Key=to_item({"pk": _pk(token), "sk": _SK}),
                UpdateExpression="SET #n = #n + :one, #w = list_append(#w, :me)",
                ConditionExpression="attribute_exists(pk) AND #e > :now AND #n < :limit AND NOT contains(#w, :id)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item({":one": 1, ":me": [writer], ":id": writer, ":now": now,
                                                   ":limit": SUBMISSION_LIMIT_PER_TOKEN}),
                ReturnValues="UPDATED_NEW")
        return int(from_item(out.get("Attributes"))["submissions"])  # type: ignore[index]
    except ConditionFailed:
        pass
    item = instance_of(token)
    if item is not None and writer in (item.get("submitters") or []):
        return int(item.get("submissions", 0))  # our own write, retried by the SDK: taken once
    if item is None or int(item.get("expiresAt", 0)) <= now:
        raise IframeError(TOKEN_INVALID)
    raise IframeError(SUBMISSION_LIMIT, f"This bearer token has used its {SUBMISSION_LIMIT_PER_TOKEN} "
                                        "submissions: start a new instance.")

