"""The Deliveries table: every postback message (no clear card data) and its delivery log, one item per delivery.

Items (partition key attribute ``account_id``, whose value is ``<account_id>#<shard>``; see below):

- ``DLV#<delivery_id>``: one delivery (issue 29, "cost per operation"). Delivery ids are time-ordered UUIDs
  (:func:`vaultcore.ids.uuid7`, RFC 9562 §5.7; webhook deliveries :func:`vaultcore.ids.time_ordered_uuid`), so
  the items of a partition sort oldest first. Attributes: ``message`` (the SQS body, deflated:
  :func:`pack_message`), ``state`` (``unsent`` as written with its transaction,
  ``failed``, ``deferred``, ``delivered``, ``dead-lettered``; ``pending`` after an operator's redrive),
  ``delivered_at`` (set by the first 2xx and never removed: a delivery delivered once stays so for every copy
  that is not an explicit redelivery, whatever a redelivery's later failure writes into ``state``),
  ``attempt`` (the real POSTs so far; ``attempt_base``: those before an operator's redrive), ``attempts`` (the log: a list of maps ``n``, ``status``, ``http_status``,
  ``duration_ms``, ``error``, ``at`` and, for a non-2xx answer only, ``response_excerpt``, its first 256
  characters redacted; a ``deferred`` or ``abandoned`` entry is no attempt and has no ``n``), ``transaction_id``
  (the log's filter; a webhook delivery's endpoint id), ``webhook_id`` (a webhook delivery's, written with it by
  :func:`outbox_put`) and ``expiresAt`` (TTL, 90 days);
- written by the version before: ``MSG#<delivery_id>`` (the same item for delivery ids that are not time-ordered:
  uuid4 postbacks and uuid5 webhook deliveries; an attempt made now is appended to its ``attempts``) and
  ``ATT#<unix ms>#<delivery_id>#<attempt>`` (one attempt each). Both are still read (listing, redelivery) and
  expire by their TTL within 90 days; nothing writes an ``ATT#`` item any more.

Why one item: the log of a delivery used to cost an attempt item per attempt beside the message item (two write
units after each POST); appended to the delivery's own item it costs none, and a first delivered attempt keeps
the item under 1 KB (1 write unit: the message deflated to about 500 bytes, no excerpt for a 2xx).

Spread: the partition is the account id plus a shard (:func:`shard_count`, the template's ``DeliveryShards``, 64
by default; raise-only, earlier values in ``DELIVERY_SHARDS_BEFORE``) taken from the delivery id, so one busy
merchant's deliveries spread over 64. At 5,000 SALE/s of one merchant each SALE writes 1 unit on its shard (the
outcome): 5,000 / 64 = about 78 units a second per partition, under 50% of DynamoDB's 1,000. The
key attribute keeps its name (renaming it would replace a ``Retain`` table); :func:`list_attempts` fans out over
the shards and merges, and also reads the unsharded partition of items written before the spread.

The outbox of a new transaction is the Transactions table's stream (issue 29: the transaction item carries the
postback flag, ``vaultcore.gateway.postbacks``): its delivery has no item until the sender's :func:`finish`
creates it with the first outcome, so a SALE writes nothing here. A change to an existing transaction that sends a
postback (a returned ACH debit), and a webhook event, write the delivery's item in the same ``TransactWriteItems``
as the change (:func:`outbox_put`), in state ``unsent``, and this table's stream (NEW_IMAGE) feeds the same relay
(:mod:`vaultcore.postback.relay`).

Attempts are counted here, not by SQS's receive count: a receive may be a deferral (the circuit is open) or a
second copy of one message, and neither is an attempt. The sender reads the item (:func:`read`, one consistent
GetItem), POSTs attempt ``attempt + 1`` and records it with ONE conditional UpdateItem (:func:`finish`: the item is
missing, or its count is below this attempt's number, or the write is this very write's SDK retry, told by its
``writer``). No claim before the POST: the postback queue is SQS FIFO with one message group per delivery, so SQS
hands out one message of a delivery at a time, and the read after it sees the outcome of the one before
(:mod:`vaultcore.postback.sender` says why this is enough). A delivered message therefore costs one write here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vaultcore import clock, ids
from vaultcore.errors import DependencyError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["outbox_put", "load_message", "record_attempt", "list_attempts", "read", "finish", "mark_delivered",
           "restart_attempts", "note_deferral", "Finished", "MARKS", "RETENTION_SECONDS", "DELIVERY_SHARDS",
           "partition", "shard_count", "earlier_shard_counts", "sort_key", "log_entry",
           "UNSENT", "pack_message", "message_body", "redelivery_mark", "schedule_base"]

RETENTION_SECONDS = 90 * 86400
#: Partitions per account by default: the template's ``DeliveryShards`` (see the module docstring for the
#: arithmetic). The operator's value is ``DELIVERY_SHARDS`` (:func:`shard_count`), raise-only, with every value
#: used before in ``DELIVERY_SHARDS_BEFORE``: a delivery's items are looked for under each of them.
DELIVERY_SHARDS = 64
MAX_SHARDS = 1024
#: The state of a message as written with its transaction: what the stream relay's filter selects.
UNSENT = "unsent"


def _table() -> str:
    return settings().deliveries_table


def _counts(name: str, default: str) -> list[int]:
    counts = [int(t) for t in os.environ.get(name, default).replace(" ", "").split(",") if t]
    if any(not 1 <= c <= MAX_SHARDS for c in counts):
        raise RuntimeError(f"{name} must be shard counts from 1 to {MAX_SHARDS}")
    return counts


def shard_count() -> int:
    """The shard count new delivery items are written with (``DELIVERY_SHARDS``; an env lookup per call)."""
    counts = _counts("DELIVERY_SHARDS", str(DELIVERY_SHARDS))
    if len(counts) != 1:
        raise RuntimeError("DELIVERY_SHARDS must be one shard count")
    return counts[0]


def earlier_shard_counts() -> list[int]:
    """The counts used before the current one (``DELIVERY_SHARDS_BEFORE``, e.g. ``"64"`` after a raise to 128)."""
    return _counts("DELIVERY_SHARDS_BEFORE", "")


def partition(account_id: str, delivery_id: str, count: int | None = None) -> str:
    """The partition key value of a delivery's items: the account plus a stable shard of its delivery id (under
    ``count`` shards; the current count by default)."""
    shard = int(hashlib.sha256(delivery_id.encode()).hexdigest()[:8], 16) % (count or shard_count())
    return f"{account_id}#{shard:02d}"


def _partitions(account_id: str, delivery_id: str) -> list[str]:
    """Where a delivery's items can be: its partition under the current count first, then under earlier ones."""
    return list(dict.fromkeys(partition(account_id, delivery_id, n) for n in (shard_count(),
                                                                             *earlier_shard_counts())))


def sort_key(delivery_id: str) -> str:
    """The sort key of a delivery's item: ``DLV#`` for a time-ordered delivery id, else the ``MSG#`` of the items
    the version before wrote (a uuid4 postback still queued or listed at the upgrade; a uuid5 webhook delivery),
    so one delivery always has one item, whichever version wrote it first."""
    return f"DLV#{delivery_id}" if ids.is_time_ordered(delivery_id) else f"MSG#{delivery_id}"


def _key(account_id: str, delivery_id: str) -> dict[str, Any]:
    """The key of a delivery's message item: under the current count, unless (after a raise of the count) the
    item exists under an earlier one. One consistent GetItem per earlier partition, only while
    ``DELIVERY_SHARDS_BEFORE`` names counts that put this delivery elsewhere: an item never moves, and the
    conditions of :func:`finish` read it, so it must be the same item whichever count is current."""
    candidates = _partitions(account_id, delivery_id)
    if not ids.is_time_ordered(delivery_id):
        # a delivery id of before the time-ordered ones may be older than the spread: its item then sits in the
        # account's unsharded partition (where load_message and list_attempts find it), and the sender must
        # read and update that item, not start a second one (a delivered delivery POSTed again, numbered from 1)
        candidates.append(account_id)
    for value in candidates[1:]:
        key = to_item({"account_id": value, "attempt_key": sort_key(delivery_id)})
        with aws_errors("delivery log read"):
            found = dynamodb().get_item(TableName=_table(), Key=key, ConsistentRead=True,
                                        ProjectionExpression="attempt_key").get("Item")
        if found:
            return key
    return to_item({"account_id": candidates[0], "attempt_key": sort_key(delivery_id)})


def _account_of(key_value: str) -> str:
    return key_value.split("#", 1)[0]


def pack_message(message: dict[str, Any]) -> bytes:
    """The stored form of a message: its JSON, deflated. A SALE's message with the token fields is about 930
    bytes of JSON (an item of 1.2 KB once attempted: 2 write units per write), about 500 deflated (the item stays
    under 1 KB: 1 unit). Every write of the item pays for its whole size, so this halves the delivery's units."""
    return zlib.compress(json.dumps(message, separators=(",", ":")).encode(), 6)


def message_body(stored: Any) -> str:
    """The SQS body (JSON) of a stored message attribute: deflated bytes (as the DynamoDB clients return a ``B``
    value, or base64 as a Lambda stream event carries one), or the plain JSON of items written before."""
    value = stored.get("message") if isinstance(stored, dict) else stored
    if isinstance(value, str) and not value.startswith("{"):
        value = base64.b64decode(value)
    if isinstance(value, (bytes, bytearray)):
        return zlib.decompress(bytes(value)).decode()
    return str(value)


def outbox_put(message: dict[str, Any], writer: str) -> dict[str, Any]:
    """The ``Put`` of a TransactWriteItems that keeps ``message`` for the stream relay (written with its
    transaction). Only what the postback needs: the SQS body (``message``, deflated: :func:`pack_message`), the
    state the relay's filter selects, the attempt count, the writer and the TTL; the ids are in the key and in
    ``message``.

    The condition admits a new delivery id or a retry of this very write (same ``writer``).
    """
    now = int(clock.now())
    item = {"account_id": partition(message["account_id"], message["delivery_id"]),
            "attempt_key": sort_key(str(message["delivery_id"])), "message": pack_message(message),
            "state": UNSENT, "attempt": 0, "transaction_id": str(message.get("transaction_id") or ""),
            "expiresAt": now + RETENTION_SECONDS, "writer": writer,
            **({"webhook_id": str(message["webhook_id"])} if message.get("webhook_id") else {})}
    return {"TableName": _table(), "Item": to_item(item),
            "ConditionExpression": "attribute_not_exists(attempt_key) OR writer = :w",
            "ExpressionAttributeValues": to_item({":w": writer})}


def restart_attempts(body: str) -> None:
    """Before a dead-lettered message is queued again (the operator's redrive): a fresh schedule (state
    ``pending``, ``attempt_base`` = the attempts so far), so that the redriven copy makes the schedule's attempts
    again, numbered on from the last one: ``Vault-Delivery-Attempt`` numbers are sent once per delivery id
    (docs/integrators/webhooks.md), so the count itself is kept and the sender counts the schedule from the base.

    Only a message that is not delivered is reset (a delivered one stays delivered: its copy is skipped).
    """
    try:
        message = json.loads(body)
        key = _key(str(message["account_id"]), str(message["delivery_id"]))
    except (ValueError, KeyError, TypeError):
        return  # not a postback message: moved as it is
    try:
        with aws_errors("delivery log update"):
            dynamodb().update_item(TableName=_table(), Key=key,
                                   # (holder: the claim of the version before)
                                   UpdateExpression="SET #s = :pending, attempt_base = if_not_exists(attempt, "
                                                    ":zero) REMOVE holder",
                                   ConditionExpression="attribute_exists(attempt_key) AND #s <> :delivered "
                                                       "AND attribute_not_exists(delivered_at)",
                                   ExpressionAttributeNames={"#s": "state"},
                                   ExpressionAttributeValues=to_item({":pending": "pending", ":zero": 0,
                                                                      ":delivered": "delivered"}))
    except ConditionFailed:
        pass


def load_message(account_id: str, delivery_id: str) -> dict[str, Any] | None:
    """The delivery's item (its shard's partition; else the unsharded one of an item written before the spread)."""
    keys = [to_item({"account_id": value, "attempt_key": sort_key(delivery_id)})
            for value in (*_partitions(account_id, delivery_id), account_id)]
    for key in keys:
        with aws_errors("delivery log read"):
            out = dynamodb().get_item(TableName=_table(), Key=key)
        if out.get("Item"):
            return from_item(out["Item"])
    return None


def redelivery_mark(stored: dict[str, Any]) -> int:
    """The ``redelivery`` mark of an explicit redelivery of the stored delivery, which makes its SQS FIFO
    deduplication id (:func:`vaultcore.postback.message.fifo_ids`): one per message that ended so far, so that a
    second request before the first one's outcome is the same message (queued once) and one after it a new one.
    A message ends with an attempt (``attempt``) or ``abandoned`` (nothing to send it to: no attempt): counting
    only attempts gave a redelivery after an abandoned one the same id, which SQS accepts and drops for 5 minutes
    ("queued", never delivered)."""
    abandoned = sum(1 for entry in stored.get("attempts") or [] if entry.get("status") == "abandoned")
    return int(stored.get("attempt") or 0) + abandoned + 1


#: The largest receiver's answer kept in a log entry (characters, redacted by the sender).
EXCERPT_CHARS = 256
#: Log entries that are not attempts: no ``n`` stored (numbered with the attempt they put off when listed).
NOT_ATTEMPTS = ("deferred", "abandoned")


def log_entry(status: str, now: float, *, attempt: int | None = None, http_status: int | None = None,
              duration_ms: float = 0.0, error: str | None = None, excerpt: str = "") -> dict[str, Any]:
    """One entry of a delivery's ``attempts`` list. Absent values are left out and the receiver's answer is kept
    only for a non-2xx (a 2xx's says nothing the status does not), so a first delivered attempt adds about 60
    bytes and the item stays under 1 KB (1 write unit)."""
    entry: dict[str, Any] = {"status": status, "at": int(now)}
    if attempt is not None:
        entry["n"] = attempt
    if http_status is not None:
        entry["http_status"] = http_status
    if duration_ms:
        entry["duration_ms"] = round(duration_ms, 1)
    if error:
        entry["error"] = error
    if excerpt and not (http_status is not None and 200 <= http_status < 300):
        entry["response_excerpt"] = excerpt[:EXCERPT_CHARS]
    return entry


_APPEND = "attempts = list_append(if_not_exists(attempts, :empty), :entry)"


def record_attempt(message: dict[str, Any], status: str, error: str | None) -> None:
    """A log entry that is no attempt (``abandoned``: nothing to send it to), appended to the delivery's item (one
    UpdateItem, which creates the item with its message if it is missing, so that it can be redelivered)."""
    now = clock.now()
    original = {k: v for k, v in message.items() if k not in MARKS}
    with aws_errors("delivery log write"):
        dynamodb().update_item(
            TableName=_table(), Key=_key(str(message["account_id"]), str(message["delivery_id"])),
            UpdateExpression=f"SET {_APPEND}, message = if_not_exists(message, :m), transaction_id = :t, "
                             "expiresAt = :exp",
            ExpressionAttributeValues=to_item({":empty": [], ":entry": [log_entry(status, now, error=error)],
                                               ":m": pack_message(original),
                                               ":t": str(message.get("transaction_id") or ""),
                                               ":exp": int(now) + RETENTION_SECONDS}))


class Finished(Exception):
    """A deferral refused: the delivery is ``state`` already (delivered or dead-lettered) by an earlier copy."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state


#: The marks a copy of a message carries (an operator's redelivery, the sender's fresh copy and its time), which
#: are not part of the stored message.
MARKS = ("redelivery", "requeued", "not_before", "attempted")


def _stored_key(message: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """The key of the delivery's item: the item :func:`read` found, else a new one under the current count."""
    if stored and stored.get("attempt_key"):
        return to_item({"account_id": stored["account_id"], "attempt_key": stored["attempt_key"]})
    return to_item({"account_id": partition(str(message["account_id"]), str(message["delivery_id"])),
                    "attempt_key": sort_key(str(message["delivery_id"]))})


def _message_values(message: dict[str, Any], now: float) -> dict[str, Any]:
    """The message stored by every write (a delivery whose item does not exist yet, or has expired, is stored with
    its first outcome), the transaction id the log's filter reads, and the TTL."""
    original = {k: v for k, v in message.items() if k not in MARKS}
    return {":m": pack_message(original), ":t": str(message.get("transaction_id") or ""),
            ":exp": int(now) + RETENTION_SECONDS}


def read(message: dict[str, Any]) -> dict[str, Any] | None:
    """The delivery's item, read before an attempt: one consistent GetItem (the version before's ``MSG#`` item for
    an id that is not time-ordered; under an earlier shard count while ``DELIVERY_SHARDS_BEFORE`` names one).
    None when the delivery has no item yet (a postback relayed from the Transactions stream)."""
    key = _key(str(message["account_id"]), str(message["delivery_id"]))
    with aws_errors("delivery log read"):
        out = dynamodb().get_item(TableName=_table(), Key=key, ConsistentRead=True)
    return from_item(out.get("Item")) if out.get("Item") else None


def finish(message: dict[str, Any], stored: dict[str, Any] | None, attempt: int, status: str,
           http_status: int | None, duration_ms: float, error: str | None, excerpt: str, writer: str) -> None:
    """After an attempt: ONE conditional UpdateItem of the delivery's item, which it creates when missing — the
    message, the log entry appended, the new state (delivered, failed or dead-lettered) and the attempt count.

    ``stored`` is what :func:`read` returned before the attempt, and ``attempt`` its count plus one. Condition: the
    item is missing, or its count is below ``attempt`` (no other write recorded this attempt number: SQS FIFO hands
    out one message of a delivery at a time, so none should have), or ``writer`` (random per attempt) is this very
    write's — an SDK retry after its answer was lost, refused by the count, is recognised by ``writer`` in the item
    as it was, and not appended twice.
    """
    now = clock.now()
    entry = log_entry(status, now, attempt=attempt, http_status=http_status, duration_ms=duration_ms, error=error,
                      excerpt=excerpt)
    values: dict[str, Any] = {**_message_values(message, now), ":status": status, ":a": attempt, ":now": int(now),
                              ":w": writer, ":empty": [], ":entry": [entry]}
    delivered = ", delivered_at = :now" if status == "delivered" else ""
    try:
        with aws_errors("delivery log write"):
            dynamodb().update_item(
                TableName=_table(), Key=_stored_key(message, stored),
                UpdateExpression=f"SET #s = :status, attempt = :a, last_attempt_at = :now, writer = :w, {_APPEND}, "
                                 f"message = :m, transaction_id = :t, expiresAt = :exp{delivered} "
                                 # the claim's attributes of a MSG# item of the version before
                                 "REMOVE lease_until, lease_owner, holder",
                ConditionExpression="attribute_not_exists(attempt_key) OR attempt < :a",
                ExpressionAttributeNames={"#s": "state"}, ExpressionAttributeValues=to_item(values),
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ConditionFailed as exc:
        old = from_item(getattr(exc.__cause__, "response", {}).get("Item")) or {}
        if old.get("writer") == writer:
            return  # this very write, applied before its answer was lost
        raise DependencyError("Internal error: delivery log write refused: the attempt was recorded already.") \
            from exc


def mark_delivered(message: dict[str, Any], stored: dict[str, Any] | None, attempt: int, writer: str) -> None:
    """The receiver answered 2xx and :func:`finish` failed: one UpdateItem that records the delivery delivered
    (no log entry), a second chance at the write that stops later copies from POSTing again. Idempotent: the same
    ``writer`` may write it twice."""
    now = clock.now()
    with aws_errors("delivery log write"):
        dynamodb().update_item(
            TableName=_table(), Key=_stored_key(message, stored),
            UpdateExpression="SET #s = :delivered, attempt = :a, last_attempt_at = :now, delivered_at = :now, "
                             "writer = :w, message = if_not_exists(message, :m), transaction_id = :t, "
                             "expiresAt = :exp",
            ConditionExpression="attribute_not_exists(attempt_key) OR attempt < :a OR writer = :w",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues=to_item({**_message_values(message, now), ":delivered": "delivered",
                                               ":a": attempt, ":now": int(now), ":w": writer}))


def note_deferral(message: dict[str, Any], reason: str, *, redelivery: bool = False) -> int:
    """A message given back without an attempt (its destination's circuit is open, or no time was left).

    One UpdateItem, which creates the item when missing: the message is stored (so it can be redelivered) with
    state ``deferred``, its attempt count unchanged and a ``deferred`` entry appended to its log, unless (not
    ``redelivery``) it was delivered or dead-lettered already (:class:`Finished`). Returns the number, in the
    current schedule (:func:`schedule_base`), of the attempt that was put off.
    """
    now = clock.now()
    values: dict[str, Any] = {**_message_values(message, now), ":deferred": "deferred", ":zero": 0,
                              ":empty": [], ":entry": [log_entry("deferred", now, error=reason)]}
    condition = None
    if not redelivery:
        # delivered_at: delivered once, whatever a redelivery's later attempt wrote into the state
        condition = ("attribute_not_exists(delivered_at) AND "
                     "(attribute_not_exists(#s) OR NOT (#s IN (:delivered, :dead)))")
        values.update({":delivered": "delivered", ":dead": "dead-lettered"})
    kwargs: dict[str, Any] = {"ConditionExpression": condition} if condition else {}
    try:
        with aws_errors("delivery log update"):
            out = dynamodb().update_item(
                TableName=_table(), Key=_key(str(message["account_id"]), str(message["delivery_id"])),
                UpdateExpression=f"SET #s = :deferred, attempt = if_not_exists(attempt, :zero), {_APPEND}, "
                                 "message = :m, transaction_id = :t, expiresAt = :exp",
                ExpressionAttributeNames={"#s": "state"}, ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD", **kwargs)
    except ConditionFailed as exc:
        old = from_item(getattr(exc.__cause__, "response", {}).get("Item")) or {}
        raise Finished("delivered" if old.get("delivered_at") else str(old.get("state") or "delivered")) from exc
    new = from_item(out.get("Attributes")) or {}
    return int(new.get("attempt") or 0) - schedule_base(new) + 1


def schedule_base(stored: dict[str, Any] | None) -> int:
    """The attempts made before the current schedule (an operator's redrive starts one: :func:`restart_attempts`);
    attempt ``n`` is the schedule's ``n - schedule_base``: its retry delay and whether it is the last."""
    return int((stored or {}).get("attempt_base") or 0)


#: Concurrent queries of one listing's fan-out over the shards.
LIST_WORKERS = 8


def _entries(item: dict[str, Any]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """A stored item's log entries as (sort key, attempt), the sort key ordering the merged listing: a ``DLV#``
    delivery by its id's time (newest delivery first), then its entries (newest first); the version before's
    ``MSG#`` entries and ``ATT#`` items, all older than any ``DLV#`` delivery, by their own time."""
    key = str(item.get("attempt_key") or "")
    if key.startswith("ATT#"):
        _, millis, delivery_id, _n = key.split("#", 3)
        view = {"delivery_id": delivery_id, "transaction_id": item.get("transaction_id"),
                "attempt": item.get("attempt"), "status": item.get("status"), "http_status": item.get("http_status"),
                "duration_ms": item.get("duration_ms"), "error": item.get("error"),
                "response_excerpt": item.get("response_excerpt") or "", "at": item.get("at")}
        return [((0, int(millis), delivery_id, 0), view)]
    delivery_id = key.split("#", 1)[1]
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    previous = 0
    for i, entry in enumerate(item.get("attempts") or []):
        n = entry.get("n")
        number = int(n) if n is not None else previous + 1  # a deferral: the attempt it put off
        if n is not None:
            previous = int(n)
        view = {"delivery_id": delivery_id, "transaction_id": item.get("transaction_id"), "attempt": number,
                "status": entry.get("status"), "http_status": entry.get("http_status"),
                "duration_ms": entry.get("duration_ms", 0.0 if entry.get("status") in NOT_ATTEMPTS else None),
                "error": entry.get("error"), "response_excerpt": entry.get("response_excerpt") or "",
                "at": entry.get("at")}
        order = ((1, ids.uuid_millis(delivery_id), delivery_id, i) if key.startswith("DLV#")
                 else (0, int(entry.get("at") or 0) * 1000, delivery_id, i))
        out.append((order, view))
    return out


def _read(kwargs: dict[str, Any], limit: int) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """The log entries of one Query's items, read until ``limit`` of them are certain to be the newest: the Query
    runs descending, and past the ``DLV#`` items (newest delivery first) nothing newer follows; ``MSG#`` items
    (the version before's, few: their new entries are newer than every ``ATT#``) are all read."""
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    newest = 0  # entries of DLV# items
    while True:
        with aws_errors("delivery log query"):
            out = dynamodb().query(**kwargs)
        for raw in out.get("Items", []):
            item = from_item(raw) or {}
            key = str(item.get("attempt_key") or "")
            entries = _entries(item)
            found.extend(entries)
            if key.startswith("DLV#"):
                newest += len(entries)
                if newest >= limit:
                    return found
            elif key.startswith("ATT#") and len(found) >= limit:
                return found
        if "LastEvaluatedKey" not in out:
            return found
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def _query_attempts(key_value: str, filters: dict[str, str], limit: int
                    ) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """One partition's log entries, at most its ``limit`` newest after the filters: one Query of the partition,
    descending (``MSG#``, then ``DLV#``, then ``ATT#`` items: :func:`_read`); with ``delivery_id``, its item and,
    for an id of the version before, its ``ATT#`` items."""
    base: dict[str, Any] = {"TableName": _table(), "ScanIndexForward": False,
                            "KeyConditionExpression": "account_id = :a",
                            "ExpressionAttributeValues": {":a": {"S": key_value}}}
    conditions: list[str] = []
    if filters.get("transaction_id"):
        conditions.append("transaction_id = :t")
        base["ExpressionAttributeValues"][":t"] = {"S": filters["transaction_id"]}
    queries: list[tuple[dict[str, Any], list[str]]] = [(base, [])]  # (Query, its own filter conditions)
    delivery_id = filters.get("delivery_id")
    if delivery_id:
        own = {**base, "KeyConditionExpression": "account_id = :a AND attempt_key = :k",
               "ExpressionAttributeValues": {**base["ExpressionAttributeValues"],
                                             ":k": {"S": sort_key(delivery_id)}}}
        queries = [(own, [])]
        if not ids.is_time_ordered(delivery_id):  # the version before's attempt items of it
            queries.append(({**base, "KeyConditionExpression": "account_id = :a AND begins_with(attempt_key, :p)",
                             "ExpressionAttributeValues": {**base["ExpressionAttributeValues"],
                                                           ":p": {"S": "ATT#"}, ":d": {"S": delivery_id}}},
                            ["delivery_id = :d"]))
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for query, own_conditions in queries:
        if conditions + own_conditions:
            query["FilterExpression"] = " AND ".join(conditions + own_conditions)
        found.extend(_read(query, limit))
    return found


def list_attempts(account_id: str, *, transaction_id: str | None = None, delivery_id: str | None = None,
                  limit: int = 100) -> list[dict[str, Any]]:
    """The account's log, newest delivery first and each delivery's entries newest first (``limit`` counts
    entries): every shard's newest ``limit``, merged, plus the unsharded partition of older items. With
    ``delivery_id``, only that delivery's shards are read (under the current and every earlier count)."""
    filters = {k: v for k, v in (("transaction_id", transaction_id), ("delivery_id", delivery_id)) if v}
    if delivery_id:
        partitions = _partitions(account_id, delivery_id)
    else:
        top = max([shard_count(), *earlier_shard_counts()])
        partitions = [f"{account_id}#{shard:02d}" for shard in range(top)]
    partitions.append(account_id)  # items written before the spread (gone with their TTL)
    with ThreadPoolExecutor(max_workers=LIST_WORKERS, thread_name_prefix="deliveries") as pool:
        pages = list(pool.map(lambda key: _query_attempts(key, filters, limit), partitions))
    merged = sorted((entry for page in pages for entry in page), key=lambda e: e[0], reverse=True)
    return [{**view, "account_id": account_id} for _, view in merged[:limit]]
