"""The Deliveries table: every postback message (no clear card data) and every delivery attempt.

Items (partition ``account_id``):
- ``MSG#<delivery_id>``: the message, its transaction id, its state and ``attempt``, the number of real
  POSTs made so far (``unsent`` in the outbox, ``pending`` once queued, ``sending`` while leased, ``failed``,
  ``deferred``, ``delivered``, ``dead-lettered``), for redelivery and so that a message already delivered is
  never POSTed again;
- ``ATT#<unix ms>#<delivery_id>#<attempt>``: one attempt — status, HTTP status, duration, error type and the
  first 256 characters of the receiver's answer (redacted). Kept for the retention period (TTL, 90 days).

The outbox (issue 18): the gateway writes a message's ``MSG#`` item in the same ``TransactWriteItems`` as its
transaction (:func:`outbox_put`), in state ``unsent`` with the sparse ``outbox`` index attribute, and then puts
the message on the queue itself. The sweeper (:mod:`vaultcore.postback.outbox`) queues entries still unsent
after ``OUTBOX_GRACE_SECONDS``: the gateway crashed, or SQS refused the message.

Attempts are counted here, not by SQS's receive count: a receive may be a deferral (the circuit is open) or a
second copy of one message (a lost SendMessage answer, a sweep of a message that was queued after all), and
neither is an attempt. :func:`claim` increments ``attempt`` atomically under a lease, so each attempt number
is used once per delivery id.

A claim is also bound to the SQS message that made it (``holder``: its message id; issue 28). While the item is
``sending`` — an attempt whose outcome nobody recorded: the invocation crashed, or the receiver answered and the
write after the POST failed — only that same SQS message may claim the next attempt, when it comes back (it comes
back only if it was not acknowledged, that is, if no 2xx was seen). Another copy of the message (a lost
SendMessage answer, a sweep of a message queued after all) is refused (:class:`Claimed` ``held``) and
acknowledged without a POST. So whichever bookkeeping write fails, a second copy never makes a second POST of a
delivered postback; only a crash between a 2xx and the end of the invocation can.

The sender pays two calls per delivered message (issue 13): :func:`claim` before the POST (one conditional
UpdateItem: refuses a message already delivered or dead-lettered, leases it against a concurrent copy, numbers
the attempt) and :func:`finish` after it (one BatchWriteItem: the attempt item and the message's new state).
Both recognise an SDK retry of themselves: the claim by its ``lease_owner`` (random per claim), the batch write
by writing the same items again.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

from vaultcore import clock
from vaultcore.errors import DependencyError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["outbox_put", "list_unsent", "mark_sent", "load_message", "record_attempt",
           "list_attempts", "claim", "finish", "mark_delivered", "restart_attempts", "note_deferral", "Claimed",
           "RETENTION_SECONDS", "OUTBOX_INDEX", "OUTBOX_GRACE_SECONDS"]

OUTBOX_INDEX = "outbox"  # sparse GSI: only messages not yet known to be on the queue carry `outbox`

RETENTION_SECONDS = 90 * 86400
#: An outbox entry younger than this is left to the gateway request that wrote it (it queues the message right
#: after the write); longer than the gateway function's timeout, so the sweeper and the request rarely both send.
OUTBOX_GRACE_SECONDS = 60


def _table() -> str:
    return settings().deliveries_table


def _outbox_item(message: dict[str, Any], now: int) -> dict[str, Any]:
    return {"account_id": message["account_id"], "attempt_key": f"MSG#{message['delivery_id']}",
            "delivery_id": message["delivery_id"], "transaction_id": message.get("transaction_id", ""),
            "message": json.dumps(message, separators=(",", ":")), "state": "unsent", "outbox": "1",
            "attempt": 0, "created_at": now, "expiresAt": now + RETENTION_SECONDS}


def outbox_put(message: dict[str, Any], writer: str) -> dict[str, Any]:
    """The ``Put`` of a TransactWriteItems that keeps ``message`` in the outbox (written with its transaction).

    The condition admits a new delivery id or a retry of this very write (same ``writer``).
    """
    item = {**_outbox_item(message, int(clock.now())), "writer": writer}
    return {"TableName": _table(), "Item": to_item(item),
            "ConditionExpression": "attribute_not_exists(attempt_key) OR writer = :w",
            "ExpressionAttributeValues": to_item({":w": writer})}


def outbox_grace_seconds() -> float:
    """``POSTBACK_OUTBOX_GRACE_SECONDS`` (tests and the local runner shorten it), else OUTBOX_GRACE_SECONDS."""
    try:
        return max(0.0, float(os.environ.get("POSTBACK_OUTBOX_GRACE_SECONDS", OUTBOX_GRACE_SECONDS)))
    except ValueError:
        return float(OUTBOX_GRACE_SECONDS)


def list_unsent(limit: int = 100, grace_seconds: float | None = None) -> list[dict[str, Any]]:
    """Outbox entries written at least ``grace_seconds`` ago (default :func:`outbox_grace_seconds`), oldest first."""
    cutoff = int(clock.now() - (outbox_grace_seconds() if grace_seconds is None else grace_seconds))
    with aws_errors("postback outbox read"):
        out = dynamodb().query(TableName=_table(), IndexName=OUTBOX_INDEX, Limit=limit,
                               KeyConditionExpression="outbox = :o AND created_at <= :cut",
                               ExpressionAttributeValues=to_item({":o": "1", ":cut": cutoff}))
    return [from_item(i) or {} for i in out.get("Items", [])]


def mark_sent(account_id: str, delivery_id: str) -> None:
    """Leave the outbox (the message is on the queue now), only if nothing has happened to it since.

    Conditional on state ``unsent``: when the sender has already claimed (or delivered) the message, its state
    must not be set back, or a second copy of the message would be POSTed again as a new first attempt.
    """
    try:
        with aws_errors("postback outbox update"):
            dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "attempt_key": f"MSG#{delivery_id}"}),
                UpdateExpression="SET #s = :pending REMOVE outbox", ConditionExpression="#s = :unsent",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues=to_item({":pending": "pending", ":unsent": "unsent"}))
    except ConditionFailed:
        pass  # claimed, delivered or already marked: it is out of the outbox index already


def restart_attempts(body: str) -> None:
    """Before a dead-lettered message is queued again (the operator's redrive): a new count of attempts.

    Only a message that is not delivered is reset (a delivered one stays delivered: its copy is skipped).
    """
    try:
        message = json.loads(body)
        key = {"account_id": str(message["account_id"]), "attempt_key": f"MSG#{message['delivery_id']}"}
    except (ValueError, KeyError, TypeError):
        return  # not a postback message: moved as it is
    try:
        with aws_errors("delivery log update"):
            dynamodb().update_item(TableName=_table(), Key=to_item(key),
                                   UpdateExpression="SET #s = :pending, attempt = :zero",
                                   ConditionExpression="attribute_exists(attempt_key) AND #s <> :delivered",
                                   ExpressionAttributeNames={"#s": "state"},
                                   ExpressionAttributeValues=to_item({":pending": "pending", ":zero": 0,
                                                                      ":delivered": "delivered"}))
    except ConditionFailed:
        pass


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
    """The message cannot be attempted now: ``reason`` is ``delivered``, ``dead-lettered``, ``leased``
    (``lease_until``, epoch seconds) or ``held`` (another SQS message's attempt has no recorded outcome: only that
    message may make the next one)."""

    def __init__(self, reason: str, lease_until: float = 0.0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lease_until = lease_until


def _message_values(message: dict[str, Any], now: float) -> dict[str, Any]:
    original = {k: v for k, v in message.items() if k != "redelivery"}
    return {":m": json.dumps(original, separators=(",", ":")), ":d": message["delivery_id"],
            ":t": message.get("transaction_id", ""), ":c": int(message.get("created_at") or now),
            ":exp": int(now) + RETENTION_SECONDS}


_MESSAGE_SET = ("message = :m, delivery_id = :d, transaction_id = :t, created_at = if_not_exists(created_at, :c), "
                "expiresAt = :exp")
#: The lease: none, or expired.
_UNLEASED = "(attribute_not_exists(lease_until) OR lease_until < :now)"
#: Not finished: never delivered, never dead-lettered (explicit redeliveries skip this).
_OPEN = "(attribute_not_exists(#s) OR NOT (#s IN (:delivered, :dead)))"
#: No attempt without a recorded outcome, unless this SQS message made it (issue 28; redeliveries skip this).
_NOT_HELD = "(attribute_not_exists(holder) OR holder = :holder OR #s <> :sending)"


def _update_message(message: dict[str, Any], now: float, what: str, redelivery: bool, set_clause: str,
                    values: dict[str, Any], holder: str | None = None,
                    remove: str = "outbox") -> tuple[bool, dict[str, Any]]:
    """One conditional UpdateItem of a message's MSG item (it is stored, and leaves the outbox index): the item
    is neither leased by another copy nor, unless ``redelivery``, delivered or dead-lettered, nor (``holder``
    given, unless ``redelivery``) waiting for another SQS message's unrecorded attempt.

    ``(True, item after)``, or ``(False, item as it was)`` when the condition failed.
    """
    values = {**_message_values(message, now), ":now": round(now, 3), **values}
    condition = _UNLEASED
    if not redelivery:
        condition = f"{_OPEN} AND {condition}"
        values.update({":delivered": "delivered", ":dead": "dead-lettered"})
        if holder is not None:
            condition = f"{condition} AND {_NOT_HELD}"
            values.update({":holder": holder, ":sending": "sending"})
    try:
        with aws_errors(what):
            out = dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": message["account_id"],
                                                 "attempt_key": f"MSG#{message['delivery_id']}"}),
                UpdateExpression=f"SET {set_clause}, {_MESSAGE_SET} REMOVE {remove}", ConditionExpression=condition,
                ExpressionAttributeNames={"#s": "state"}, ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ConditionFailed as exc:
        return False, from_item(getattr(exc.__cause__, "response", {}).get("Item")) or {}
    return True, from_item(out.get("Attributes")) or {}


def _refusal(old: dict[str, Any], redelivery: bool, now: float) -> Claimed:
    if not redelivery and old.get("state") in ("delivered", "dead-lettered"):
        return Claimed(str(old["state"]))
    lease_until = float(old.get("lease_until") or 0)
    if lease_until >= now or redelivery:
        return Claimed("leased", lease_until)
    return Claimed("held")  # not leased, not finished: another message's attempt has no recorded outcome


def claim(message: dict[str, Any], lease_seconds: float, *, redelivery: bool = False,
          holder: str | None = None) -> dict[str, Any]:
    """Before an attempt (one conditional UpdateItem): store the message, lease it, number the attempt.

    Returns the stored item; its ``attempt`` is this attempt's number (1 for the first POST). Raises
    :class:`Claimed` when the message was delivered or dead-lettered already (unless this is an explicit
    redelivery), another copy holds an unexpired lease (SQS standard queues may hand one message out twice), or
    (``holder``: this SQS message's id) another SQS message made the last attempt and nobody recorded its
    outcome. The lease ends with the invocation, so a crash only delays the next attempt. The update also takes
    the message out of the outbox index: it is on the queue.

    A retry of this very update (its answer lost after it was applied) fails the lease condition against its
    own lease; ``lease_owner`` says it is ours, and the item as it was is this claim's result (no second count).
    """
    now = clock.now()
    owner = uuid.uuid4().hex
    set_clause = ("#s = :sending, lease_until = :lease, lease_owner = :owner, "
                  "attempt = if_not_exists(attempt, :zero) + :one")
    values: dict[str, Any] = {":lease": round(now + lease_seconds, 3), ":owner": owner, ":sending": "sending",
                              ":zero": 0, ":one": 1}
    if holder is not None:
        set_clause += ", holder = :holder"
        values[":holder"] = holder
    ok, item = _update_message(message, now, "delivery claim", redelivery, set_clause, values, holder,
                               remove="outbox" if holder is not None else "outbox, holder")
    if not ok and item.get("lease_owner") != owner:
        raise _refusal(item, redelivery, now)
    return item


def mark_delivered(stored: dict[str, Any], attempt: int) -> None:
    """The receiver answered 2xx and :func:`finish` failed: one UpdateItem that records the message delivered
    (no attempt item), by the claim's own ``lease_owner``. A second chance at the write that stops later POSTs."""
    now = int(clock.now())
    with aws_errors("delivery log write"):
        dynamodb().update_item(
            TableName=_table(), Key=to_item({"account_id": stored["account_id"],
                                             "attempt_key": f"MSG#{stored['delivery_id']}"}),
            UpdateExpression="SET #s = :delivered, attempt = :a, last_attempt_at = :now, delivered_at = :now "
                             "REMOVE lease_until, lease_owner",
            ConditionExpression="lease_owner = :owner OR #s = :delivered",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues=to_item({":delivered": "delivered", ":a": attempt, ":now": now,
                                               ":owner": stored.get("lease_owner") or "-"}))


def note_deferral(message: dict[str, Any], reason: str, *, redelivery: bool = False,
                  holder: str | None = None) -> int:
    """A message given back without an attempt (its destination's circuit is open, or no time was left).

    Two calls: the message is stored (so it can be redelivered) with state ``deferred`` and its attempt count
    unchanged — unless it was delivered or dead-lettered already, or another SQS message's attempt has no
    recorded outcome (``holder``; :class:`Claimed`), or another copy is being attempted (left as it is) — and
    the delivery log gets a ``deferred`` entry numbered with the attempt that was put off, which is returned.
    Setting the same state again is harmless: an SDK retry needs no identity.
    """
    now = clock.now()
    ok, stored = _update_message(message, now, "delivery log update", redelivery,
                                 "#s = :deferred, attempt = if_not_exists(attempt, :zero)",
                                 {":deferred": "deferred", ":zero": 0}, holder)
    if not ok:
        refusal = _refusal(stored, redelivery, now)
        if refusal.reason != "leased":
            raise refusal
    attempt = int(stored.get("attempt") or 0) + 1
    record_attempt(message["account_id"], message["delivery_id"], message.get("transaction_id", ""), attempt,
                   "deferred", None, 0.0, reason, "")
    return attempt


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
    message_item = {k: v for k, v in stored.items() if k not in ("lease_until", "lease_owner", "outbox")}
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
