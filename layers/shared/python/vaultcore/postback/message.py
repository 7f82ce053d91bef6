"""Postback bodies, hashes, signatures and the retry schedule (pure: no I/O).

Body (spec, Events)::

    {"account_id": "...", "timestamp": <unix seconds>, "count": 1, "hash": "<64 hex>", "responses": [ ... ]}

``hash`` is the lowercase hex SHA-256 of ``account_id,api_accesskey,timestamp`` (public facts: the gateway's
hash authentication), so a receiver holding its access key can check the postback came from its gateway.

Beyond the original (public facts, peers' conventions): the exact bytes sent are signed with the account's
postback secret, Stripe-style::

    Vault-Signature: t=<timestamp>,v1=<lowercase hex HMAC-SHA256(secret, "<timestamp>.<body bytes>")>

and ``Vault-Delivery-Id`` stays the same across every retry of one postback, so receivers can deduplicate.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from typing import Any

__all__ = ["postback_hash", "build_body", "signature_header", "verify_signature", "RETRY_SCHEDULE_SECONDS",
           "retry_delay", "parse_schedule", "fifo_ids", "queue_entry", "fresh_copy"]

# Published retry schedule (delay before attempt n+1 after attempt n failed). 12 attempts over about 27 hours,
# matching the queue's maxReceiveCount of 12; SQS caps one visibility timeout at 12 hours.
RETRY_SCHEDULE_SECONDS = (10, 30, 120, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200)


def postback_hash(account_id: str, api_accesskey: str, timestamp: int) -> str:
    return hashlib.sha256(f"{account_id},{api_accesskey},{timestamp}".encode()).hexdigest()


def build_body(account_id: str, api_accesskey: str, timestamp: int, responses: list[dict[str, Any]]) -> bytes:
    body = {"account_id": account_id, "timestamp": timestamp, "count": len(responses),
            "hash": postback_hash(account_id, api_accesskey, timestamp), "responses": responses}
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def signature_header(secret: bytes, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(secret: bytes, header: str, body: bytes, now: int, tolerance: int = 300) -> bool:
    """What a receiver does (docs/integrators/webhooks.md shows the same in a snippet): check v1 and the
    timestamp's age."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        ts = int(parts["t"])
    except (KeyError, ValueError):
        return False
    expected = signature_header(secret, ts, body).split("v1=", 1)[1]
    return abs(now - ts) <= tolerance and hmac.compare_digest(expected.encode(), parts.get("v1", "").encode())


def parse_schedule(text: str | None) -> tuple[int, ...]:
    if not text:
        return RETRY_SCHEDULE_SECONDS
    delays = tuple(int(x) for x in text.split(",") if x.strip())
    if not delays or any(d < 0 or d > 43200 for d in delays):
        raise ValueError("retry schedule delays must be 0..43200 seconds")
    return delays


def retry_delay(attempt: int, schedule: tuple[int, ...] = RETRY_SCHEDULE_SECONDS) -> int:
    """Delay after failed attempt ``attempt`` (1-based); the last delay repeats past the schedule's end."""
    return schedule[min(max(attempt, 1), len(schedule)) - 1]


def fifo_ids(body: str | dict[str, Any]) -> dict[str, str]:
    """The SQS FIFO ids of a postback message (the postback queue, issue 29), for every send of one.

    ``MessageGroupId`` is the delivery id: SQS hands out one message of a group at a time, in order, so two
    copies of one delivery are never attempted at once. ``MessageDeduplicationId`` is the delivery id and its
    marks (``redelivery`` n, ``requeued`` n): the same copy sent twice within SQS's 5-minute deduplication interval
    (a lost SendMessage answer, a retried stream batch) is queued once; an operator's redelivery or the sender's
    fresh copy is a new message. SQS developer guide, "Exactly-once processing in Amazon SQS" and "Using the
    message deduplication ID"; at most 128 characters (a UUID and two counters).
    """
    message = json.loads(body) if isinstance(body, str) else body
    delivery_id = str(message["delivery_id"])
    marks = f"r{int(message.get('redelivery', 0) or 0)}q{int(message.get('requeued', 0) or 0)}"
    return {"MessageGroupId": delivery_id, "MessageDeduplicationId": f"{delivery_id}.{marks}"}


def queue_entry(entry_id: str, body: str) -> dict[str, str]:
    """One SendMessageBatch entry of a postback message, with its FIFO ids (:func:`fifo_ids`)."""
    return {"Id": entry_id, "MessageBody": body, **fifo_ids(body)}


def fresh_copy(body: str, not_before: float | None = None, attempted: int | None = None) -> str:
    """The body of a fresh copy of a postback message (the sender's requeue, a dead-letter redrive): ``requeued``
    + 1, so that it is a new message for SQS FIFO's deduplication (:func:`fifo_ids`), and ``not_before`` (unix
    seconds; none: at once). FIFO queues refuse a per-message DelaySeconds, so the time travels in the body and a
    copy received before it is given back unattempted (:mod:`vaultcore.postback.sender`). ``attempted``: the
    attempts made so far, when the delivery log could not record the last one (the next is ``attempted`` + 1)."""
    message = json.loads(body)
    message["requeued"] = int(message.get("requeued", 0) or 0) + 1
    message.pop("not_before", None)
    if not_before:
        message["not_before"] = math.ceil(not_before)
    if attempted:
        message["attempted"] = max(attempted, int(message.get("attempted", 0) or 0))
    return json.dumps(message, separators=(",", ":"))
