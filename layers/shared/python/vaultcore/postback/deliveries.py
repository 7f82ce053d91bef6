"""The Deliveries table: every postback message (no clear card data) and every delivery attempt.

Items (partition ``account_id``):
- ``MSG#<delivery_id>``: the queued message, its transaction id and its final state (for redelivery);
- ``ATT#<unix ms>#<delivery_id>#<attempt>``: one attempt — status, HTTP status, duration, error type and the
  first 256 characters of the receiver's answer (redacted). Kept for the retention period (TTL, 90 days).
"""

from __future__ import annotations

import json
from typing import Any

from vaultcore import clock
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["save_message", "save_unsent", "list_unsent", "mark_sent", "load_message", "mark_delivered",
           "record_attempt", "list_attempts", "RETENTION_SECONDS", "OUTBOX_INDEX"]

OUTBOX_INDEX = "outbox"  # sparse GSI: only messages the gateway could not queue carry the `outbox` attribute

RETENTION_SECONDS = 90 * 86400


def _table() -> str:
    return settings().deliveries_table


def save_message(message: dict[str, Any]) -> None:
    """Record the message once (the first attempt); later attempts find it there."""
    now = int(clock.now())
    try:
        with aws_errors("delivery log write"):
            dynamodb().put_item(TableName=_table(), Item=to_item({
                "account_id": message["account_id"], "attempt_key": f"MSG#{message['delivery_id']}",
                "delivery_id": message["delivery_id"], "transaction_id": message.get("transaction_id", ""),
                "message": json.dumps(message, separators=(",", ":")), "state": "pending", "created_at": now,
                "expiresAt": now + RETENTION_SECONDS}),
                ConditionExpression="attribute_not_exists(attempt_key)")
    except ConditionFailed:
        pass


def save_unsent(message: dict[str, Any]) -> None:
    """The outbox: the gateway could not put the message on the queue; keep it until the outbox sweeper does.

    Written only on that failure path, so a healthy SALE pays nothing for it (PCI-free: the message holds no
    clear card data).
    """
    now = int(clock.now())
    with aws_errors("postback outbox write"):
        dynamodb().put_item(TableName=_table(), Item=to_item({
            "account_id": message["account_id"], "attempt_key": f"MSG#{message['delivery_id']}",
            "delivery_id": message["delivery_id"], "transaction_id": message.get("transaction_id", ""),
            "message": json.dumps(message, separators=(",", ":")), "state": "unsent", "outbox": "1",
            "created_at": now, "expiresAt": now + RETENTION_SECONDS}))


def list_unsent(limit: int = 100) -> list[dict[str, Any]]:
    with aws_errors("postback outbox read"):
        out = dynamodb().query(TableName=_table(), IndexName=OUTBOX_INDEX, Limit=limit,
                               KeyConditionExpression="outbox = :o",
                               ExpressionAttributeValues={":o": {"S": "1"}})
    return [from_item(i) or {} for i in out.get("Items", [])]


def mark_sent(account_id: str, delivery_id: str) -> None:
    """Leave the outbox (the message is on the queue now); the sender's first attempt finds it pending."""
    with aws_errors("postback outbox update"):
        dynamodb().update_item(TableName=_table(), Key=to_item({"account_id": account_id,
                                                                 "attempt_key": f"MSG#{delivery_id}"}),
                               UpdateExpression="SET #s = :s REMOVE outbox", ExpressionAttributeNames={"#s": "state"},
                               ExpressionAttributeValues=to_item({":s": "pending"}))


def load_message(account_id: str, delivery_id: str) -> dict[str, Any] | None:
    with aws_errors("delivery log read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"account_id": account_id,
                                                                    "attempt_key": f"MSG#{delivery_id}"}))
    return from_item(out.get("Item"))


def mark_delivered(account_id: str, delivery_id: str) -> None:
    with aws_errors("delivery log update"):
        dynamodb().update_item(TableName=_table(), Key=to_item({"account_id": account_id,
                                                                 "attempt_key": f"MSG#{delivery_id}"}),
                               UpdateExpression="SET #s = :s, delivered_at = :t",
                               ExpressionAttributeNames={"#s": "state"},
                               ExpressionAttributeValues=to_item({":s": "delivered", ":t": int(clock.now())}))


def record_attempt(account_id: str, delivery_id: str, transaction_id: str, attempt: int, status: str,
                   http_status: int | None, duration_ms: float, error: str | None, excerpt: str) -> None:
    now = clock.now()
    with aws_errors("delivery log write"):
        dynamodb().put_item(TableName=_table(), Item=to_item({
            "account_id": account_id, "attempt_key": f"ATT#{int(now * 1000):013d}#{delivery_id}#{attempt:03d}",
            "delivery_id": delivery_id, "transaction_id": transaction_id, "attempt": attempt, "status": status,
            "http_status": http_status, "duration_ms": round(duration_ms, 1), "error": error,
            "response_excerpt": excerpt, "at": int(now), "expiresAt": int(now) + RETENTION_SECONDS}))


def list_attempts(account_id: str, *, transaction_id: str | None = None, delivery_id: str | None = None,
                  limit: int = 100) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {"TableName": _table(), "ScanIndexForward": False,
                              "KeyConditionExpression": "account_id = :a AND begins_with(attempt_key, :p)",
                              "ExpressionAttributeValues": {":a": {"S": account_id}, ":p": {"S": "ATT#"}}}
    filters = []
    if transaction_id:
        filters.append("transaction_id = :t")
        kwargs["ExpressionAttributeValues"][":t"] = {"S": transaction_id}
    if delivery_id:
        filters.append("delivery_id = :d")
        kwargs["ExpressionAttributeValues"][":d"] = {"S": delivery_id}
    if filters:
        kwargs["FilterExpression"] = " AND ".join(filters)
    items: list[dict[str, Any]] = []
    while len(items) < limit:
        with aws_errors("delivery log query"):
            out = dynamodb().query(**kwargs)
        for raw in out.get("Items", []):
            item = from_item(raw) or {}
            item.pop("expiresAt", None)
            item.pop("attempt_key", None)
            items.append(item)
        if "LastEvaluatedKey" not in out:
            break
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
    return items[:limit]
