"""DynamoDB adapter of the gateway: the Transactions table (account_id, transaction_id; LSI byCreatedAt).

A transaction item holds what the reporting interface returns and nothing more sensitive: last four digits,
brand, expiry month, authorization data, amounts, the bfid and the token fields (PCI DSS 3.3: no CVV or track
data after authorization; 3.5: no full PAN or bank account number). The clear values of a payment live only in
the memory of the request that processes it.

Captures are one conditional UpdateItem on the authorization (:func:`capture_authorization`): DynamoDB applies
a conditional write atomically per item, so of any number of concurrent captures exactly one sees
``auth_status = authorized`` and wins; the others fail the condition and get the old item back
(``ReturnValuesOnConditionCheckFailure``) to explain why, without another read.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = [
    "put_transaction",
    "get_transaction",
    "capture_authorization",
    "revert_capture",
    "list_transactions",
    "encode_page_token",
    "decode_page_token",
    "ConditionFailed",
]


def _table() -> str:
    return settings().transactions_table


def put_transaction(item: dict[str, Any]) -> None:
    """Write a new transaction; ConditionFailed when the (account, transaction_id) pair already exists."""
    with aws_errors("transaction write"):
        dynamodb().put_item(TableName=_table(), Item=to_item(item),
                            ConditionExpression="attribute_not_exists(transaction_id)")


def get_transaction(account_id: str, transaction_id: str, *, consistent: bool = False) -> dict[str, Any] | None:
    with aws_errors("transaction read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"account_id": account_id,
                                                                  "transaction_id": transaction_id}),
                                  ConsistentRead=consistent)
    return from_item(out.get("Item"))


def _old_item(exc: ConditionFailed) -> dict[str, Any] | None:
    cause = exc.__cause__
    item = getattr(cause, "response", {}).get("Item") if cause is not None else None
    return from_item(item) if item else None


def capture_authorization(account_id: str, authorization_id: str, capture_id: str, amount_cents: int,
                          now: int, currency: str | None) -> tuple[bool, dict[str, Any] | None]:
    """Mark the authorization captured by ``capture_id`` if it still can be; one conditional UpdateItem.

    Returns ``(True, item after the update)`` or ``(False, item before, or None when it does not exist)``.
    The condition: the item exists, is an approved AUTHORIZATION not yet captured, not past its lifetime,
    authorized for at least ``amount_cents`` and (when given) in ``currency``. The key itself confines the
    capture to the same account.
    """
    values: dict[str, Any] = {":auth": "AUTHORIZATION", ":authorized": "authorized", ":captured": "captured",
                              ":cid": capture_id, ":amt": amount_cents, ":now": now}
    condition = ("attribute_exists(transaction_id) AND transaction_type = :auth AND auth_status = :authorized "
                 "AND authorized_cents >= :amt AND auth_expires_at > :now")
    if currency is not None:
        values[":cur"] = currency
        condition += " AND currency = :cur"
    try:
        with aws_errors("capture"):
            out = dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": authorization_id}),
                UpdateExpression="SET auth_status = :captured, captured_by = :cid, captured_cents = :amt, "
                                 "captured_at = :now",
                ConditionExpression=condition, ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ConditionFailed as exc:
        return False, _old_item(exc)
    return True, from_item(out.get("Attributes"))


def revert_capture(account_id: str, authorization_id: str, capture_id: str) -> None:
    """Undo :func:`capture_authorization` when the capture's own item could not be written (compensation)."""
    with aws_errors("capture revert"):
        dynamodb().update_item(
            TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": authorization_id}),
            UpdateExpression="SET auth_status = :authorized REMOVE captured_by, captured_cents, captured_at",
            ConditionExpression="captured_by = :cid",
            ExpressionAttributeValues=to_item({":authorized": "authorized", ":cid": capture_id}))


def list_transactions(account_id: str, start: int, end: int, limit: int,
                      start_key: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Transactions created in [start, end] (unix seconds), newest first, one page through the LSI."""
    kwargs: dict[str, Any] = {
        "TableName": _table(), "IndexName": "byCreatedAt",
        "KeyConditionExpression": "account_id = :a AND created_at BETWEEN :s AND :e",
        "ExpressionAttributeValues": to_item({":a": account_id, ":s": start, ":e": end}),
        "ScanIndexForward": False, "Limit": limit,
    }
    if start_key:
        kwargs["ExclusiveStartKey"] = to_item({"account_id": account_id, **start_key})
    with aws_errors("transaction query"):
        out = dynamodb().query(**kwargs)
    items = [from_item(i) or {} for i in out.get("Items", [])]
    last = from_item(out.get("LastEvaluatedKey"))
    if last:
        last = {"transaction_id": last["transaction_id"], "created_at": last["created_at"]}
    return items, last or None


def encode_page_token(key: dict[str, Any], start: int, end: int) -> str:
    """An opaque paging token bound to the query's date range (the account comes from authentication)."""
    raw = json.dumps({"t": key["transaction_id"], "c": key["created_at"], "s": start, "e": end},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, start: int, end: int) -> dict[str, Any] | None:
    """The start key of the next page, or None when the token is malformed or for another range."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        tid, created = data["t"], data["c"]
        if data["s"] != start or data["e"] != end:
            return None
        if not (isinstance(tid, str) and len(tid) == 12 and tid.isdigit() and isinstance(created, int)):
            return None
    except (ValueError, KeyError, TypeError):
        return None
    return {"transaction_id": tid, "created_at": created}
