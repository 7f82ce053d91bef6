"""Payment iFrame instances: short-lived bearer tokens and the submission limit (Signals table).

``POST /api/v4/accounts/{account_id}/payment-iframe/{id}/instance/init`` with ``{label, amount?, customId?}``
creates one. Its bearer token is ``ifb_`` + 43 base64url characters (256 random bits); only its SHA-256 is
stored, so the table holds no usable token:

    pk ``IFRAMEBEARER#<sha256 hex>``, sk ``INSTANCE``: ``accountId``, ``configId``, ``customId``, ``label``,
    ``amountCents`` (optional), ``createdAt``, ``expiresAt`` (now + the configuration's ``timeout``; the table's
    TTL attribute, and checked on every read because DynamoDB deletes expired items lazily), ``submissions``
    and ``submitters`` (the request ids of the accepted submissions).

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
from vaultcore.iframe.errors import INSTANCE_INVALID, SUBMISSION_LIMIT, TOKEN_INVALID, IframeError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["SUBMISSION_LIMIT_PER_TOKEN", "BEARER", "CUSTOM_ID", "init_instance", "instance_of", "live_instance",
           "record_token",
           "take_submission", "token_hash"]

SUBMISSION_LIMIT_PER_TOKEN = 3
BEARER = re.compile(r"ifb_[A-Za-z0-9_-]{43}")
CUSTOM_ID = re.compile(r"[A-Za-z0-9_.\-]{1,50}")  # the gateway's custom_id (validation: 216)
_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,64}")
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


def init_instance(account: Any, config_id: str, body: Any) -> dict[str, Any]:
    """A new instance of the account's configuration ``config_id``: ``{bearerToken, expiresAt, customId, ...}``."""
    if not isinstance(body, dict):
        raise IframeError(INSTANCE_INVALID, "The body must be one JSON object.")
    unknown = sorted(set(body) - {"label", "amount", "customId"})
    if unknown:
        raise IframeError(INSTANCE_INVALID, f"{str(unknown[0])[:64]}: unknown member.")
    label = body.get("label")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise IframeError(INSTANCE_INVALID, "label: 1 to 64 printable characters (required).")
    custom_id = body.get("customId")
    if custom_id is None:
        custom_id = "ifr-" + secrets.token_hex(12)
    elif not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
        raise IframeError(INSTANCE_INVALID, "customId: 1 to 50 letters, digits, '.', '_' or '-' (the gateway's "
                                            "custom_id).")
    amount = _amount_cents(body.get("amount"))
    config = configs.get(account, config_id)  # 404 for another account's or a deleted configuration
    now = int(clock.now())
    token = "ifb_" + secrets.token_urlsafe(32)
    expires_at = now + int(config["timeout"])
    item = {"pk": _pk(token), "sk": _SK, "accountId": account.account_id, "configId": config_id,
            "customId": custom_id, "label": label, "amountCents": amount, "createdAt": now,
            "expiresAt": expires_at, "submissions": 0, "submitters": []}
    with aws_errors("iframe instance write"):
        dynamodb().put_item(TableName=settings().signals_table, Item=to_item(item),
                            ConditionExpression="attribute_not_exists(pk)")
    return {"bearerToken": token, "expiresAt": _iso(expires_at), "customId": custom_id,
            "submissionLimit": SUBMISSION_LIMIT_PER_TOKEN}


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


def record_token(token: str, bfid: str) -> None:
    """Add a submission's eToken to its instance's ``tokens`` (answered by ``GET .../instance/{id}``: how the
    merchant's server learns the result of an instance used top-level, without a parent page). At most
    :data:`SUBMISSION_LIMIT_PER_TOKEN` ever, since each one took a submission first."""
    try:
        with aws_errors("iframe instance tokens"):
            dynamodb().update_item(
                TableName=settings().signals_table, Key=to_item({"pk": _pk(token), "sk": _SK}),
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

