"""The Deliveries table: every postback message (no clear card data) and every delivery attempt.

Items (partition ``account_id``):
- ``MSG#<delivery_id>``: the queued message, its transaction id and its state (``sending`` while leased,
  ``failed``, ``deferred``, ``delivered``, ``dead-lettered``; ``unsent``/``pending`` for the outbox), for
  redelivery and so that a message already delivered is never POSTed again;
- ``ATT#<unix ms>#<delivery_id>#<attempt>``: one attempt — status, HTTP status, duration, error type and the
  first 256 characters of the receiver's answer (redacted). Kept for the retention period (TTL, 90 days).

The sender pays two calls per delivered message (issue 13): :func:`claim` before the POST (one conditional
PutItem: stores the message, refuses one already delivered, leases it against a concurrent copy) and
:func:`finish` after it (one BatchWriteItem: the attempt item and the message's new state together).
"""

from __future__ import annotations

import json
import time
from typing import Any

from vaultcore import clock
from vaultcore.errors import DependencyError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors, from_item, to_item

__all__ = ["save_unsent", "list_unsent", "mark_sent", "load_message", "record_attempt", "list_attempts", "claim",
           "finish", "note_deferral", "Claimed", "RETENTION_SECONDS", "OUTBOX_INDEX"]

OUTBOX_INDEX = "outbox"  # sparse GSI: only messages the gateway could not queue carry the `outbox` attribute

RETENTION_SECONDS = 90 * 86400


def _table() -> str:
    return settings().deliveries_table


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


def record_attempt(account_id: str, delivery_id: str, transaction_id: str, attempt: int, status: str,
                   http_status: int | None, duration_ms: float, error: str | None, excerpt: str) -> None:
    now = clock.now()
    with aws_errors("delivery log write"):
        dynamodb().put_item(TableName=_table(), Item=to_item({
            "account_id": account_id, "attempt_key": f"ATT#{int(now * 1000):013d}#{delivery_id}#{attempt:03d}",
            "delivery_id": delivery_id, "transaction_id": transaction_id, "attempt": attempt, "status": status,
            "http_status": http_status, "duration_ms": round(duration_ms, 1), "error": error,
            "response_excerpt": excerpt, "at": int(now), "expiresAt": int(now) + RETENTION_SECONDS}))


class Claimed(Exception):
    """The message cannot be attempted now: ``reason`` is ``delivered`` or ``leased`` (``lease_until`` epoch s)."""

    def __init__(self, reason: str, lease_until: float = 0.0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lease_until = lease_until


def _message_item(message: dict[str, Any], state: str, now: float, **extra: Any) -> dict[str, Any]:
    original = {k: v for k, v in message.items() if k != "redelivery"}
    return {"account_id": message["account_id"], "attempt_key": f"MSG#{message['delivery_id']}",
            "delivery_id": message["delivery_id"], "transaction_id": message.get("transaction_id", ""),
            "message": json.dumps(original, separators=(",", ":")), "state": state,
            "created_at": int(message.get("created_at") or now), "expiresAt": int(now) + RETENTION_SECONDS, **extra}


def _conditional_put(item: dict[str, Any], now: float, redelivery: bool, what: str) -> None:
    """PutItem of the MSG item unless it was delivered (explicit redeliveries aside) or another copy holds an
    unexpired lease; the refusal becomes :class:`Claimed`, from the item as it was (no second read)."""
    from vaultcore.store.aws import client_errors, transport_errors

    condition = "(attribute_not_exists(lease_until) OR lease_until < :now)"
    values: dict[str, Any] = {":now": round(now, 3)}
    if not redelivery:
        condition = "(attribute_not_exists(#s) OR #s <> :delivered) AND " + condition
        values[":delivered"] = "delivered"
    try:
        dynamodb().put_item(TableName=_table(), Item=to_item(item), ConditionExpression=condition,
                            ExpressionAttributeValues=to_item(values),
                            **({"ExpressionAttributeNames": {"#s": "state"}} if not redelivery else {}),
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except client_errors() as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            old = from_item(exc.response.get("Item")) or {}
            if old.get("state") == "delivered" and not redelivery:
                raise Claimed("delivered") from None
            raise Claimed("leased", float(old.get("lease_until") or 0)) from None
        raise DependencyError(f"Internal error: {what} failed.") from exc
    except transport_errors() as exc:
        raise DependencyError(f"Internal error: {what} failed.") from exc


def claim(message: dict[str, Any], lease_seconds: float, *, redelivery: bool = False) -> dict[str, Any]:
    """Before an attempt (one conditional PutItem): store the message, lease it, and return the stored item.

    Raises :class:`Claimed` when the message was already delivered (unless this is an explicit redelivery) or
    another copy of it holds an unexpired lease (SQS standard queues may hand one message out twice). The
    lease ends with the invocation, so a crash only delays the next attempt. Writing the whole item also takes
    it out of the outbox index: the message is on the queue.
    """
    now = clock.now()
    item = _message_item(message, "sending", now, lease_until=round(now + lease_seconds, 3))
    _conditional_put(item, now, redelivery, "delivery claim")
    return item


def note_deferral(message: dict[str, Any], attempt: int, reason: str, *, redelivery: bool = False) -> None:
    """A message given back without an attempt (its destination's circuit is open, or no time was left).

    Two calls: the message is stored (so it can be redelivered) with state ``deferred`` — unless it was
    delivered already (:class:`Claimed` ``delivered``: the caller acknowledges it) or another copy is being
    attempted (left as it is) — and the delivery log gets a ``deferred`` entry.
    """
    now = clock.now()
    try:
        _conditional_put(_message_item(message, "deferred", now, attempt=attempt), now, redelivery,
                         "delivery log update")
    except Claimed as claimed:
        if claimed.reason == "delivered":
            raise
    record_attempt(message["account_id"], message["delivery_id"], message.get("transaction_id", ""), attempt,
                   "deferred", None, 0.0, reason, "")


def finish(stored: dict[str, Any], attempt: int, status: str, http_status: int | None, duration_ms: float,
           error: str | None, excerpt: str) -> None:
    """After an attempt (one BatchWriteItem): the attempt item, and the message item with its new state.

    ``stored`` is the item :func:`claim` returned; this copy holds the lease, so writing the whole item back is
    safe (and drops the lease). ``status``: delivered, failed or dead-lettered.
    """
    now = clock.now()
    delivery_id = stored["delivery_id"]
    attempt_item = {
        "account_id": stored["account_id"], "attempt_key": f"ATT#{int(now * 1000):013d}#{delivery_id}#{attempt:03d}",
        "delivery_id": delivery_id, "transaction_id": stored.get("transaction_id", ""), "attempt": attempt,
        "status": status, "http_status": http_status, "duration_ms": round(duration_ms, 1), "error": error,
        "response_excerpt": excerpt, "at": int(now), "expiresAt": int(now) + RETENTION_SECONDS}
    message_item = {k: v for k, v in stored.items() if k != "lease_until"}
    message_item.update({"state": status, "attempt": attempt, "last_attempt_at": int(now)})
    if status == "delivered":
        message_item["delivered_at"] = int(now)
    requests = [{"PutRequest": {"Item": to_item(attempt_item)}}, {"PutRequest": {"Item": to_item(message_item)}}]
    for retry in range(4):
        with aws_errors("delivery log write"):
            out = dynamodb().batch_write_item(RequestItems={_table(): requests})
        requests = (out.get("UnprocessedItems") or {}).get(_table()) or []
        if not requests:
            return
        time.sleep(0.05 * 2 ** retry)  # throttled: DynamoDB asks to retry the rest with backoff
    raise DependencyError("Internal error: delivery log write failed.")


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
