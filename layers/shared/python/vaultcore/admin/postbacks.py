"""Management API for postbacks: the delivery log, redelivery of one postback, redrive of the dead-letter queue,
and the requeue of an account's postbacks from its transactions (past the stream's 24 hours)."""

from __future__ import annotations

import json
import os
from typing import Any

from vaultcore.admin.router import json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import DependencyError, NotFound, ValidationError
from vaultcore.logs import get_logger
from vaultcore.postback import deliveries, relay
from vaultcore.postback.message import fifo_ids, fresh_copy, queue_entry
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors

_log = get_logger("postback.admin")


@route("GET", "/admin/v1/accounts/{account_id}/deliveries")
def list_deliveries(request: Request, account_id: str) -> Response:
    try:
        limit = int(request.query.get("limit", "100"))
    except ValueError:
        raise ValidationError("limit must be an integer.") from None
    if limit < 1:  # (a negative one became a slice end: the log without its last entries)
        raise ValidationError("limit must be an integer from 1 to 1000.")
    limit = min(limit, 1000)
    attempts = deliveries.list_attempts(account_id, transaction_id=request.query.get("transaction_id"),
                                        delivery_id=request.query.get("delivery_id"), limit=limit)
    return ok({"account_id": account_id, "attempts": attempts})


@route("POST", "/admin/v1/accounts/{account_id}/deliveries/{delivery_id}/redeliver")
def redeliver(request: Request, account_id: str, delivery_id: str) -> Response:
    stored = deliveries.load_message(account_id, delivery_id)
    if stored is None:
        raise NotFound("No postback with this delivery id.")
    message = json.loads(deliveries.message_body(stored))
    # One redelivery per message ended so far: its own SQS FIFO deduplication id (deliveries.redelivery_mark)
    message["redelivery"] = deliveries.redelivery_mark(stored)
    body = json.dumps(message, separators=(",", ":"))
    with aws_errors("postback enqueue"):
        client("sqs").send_message(QueueUrl=settings().postback_queue_url, MessageBody=body, **fifo_ids(body))
    return ok({"delivery_id": delivery_id, "queued": True})


#: The widest window one requeue reads (days): a bounded listing per call; a longer outage takes several calls.
REQUEUE_MAX_DAYS = 31
#: Transactions one requeue call reads at most (the answer's ``next`` continues the window).
REQUEUE_MAX_TRANSACTIONS = 10_000


@route("POST", "/admin/v1/accounts/{account_id}/deliveries/requeue")
def requeue(request: Request, account_id: str) -> Response:
    """Queue again, as first copies, the postbacks of the account's transactions created in ``[from, to]`` (unix
    seconds): for when the Transactions stream's records of them are gone (24 hours) before the relay queued them.

    A postback of a new transaction is known only by its transaction item (``postback`` flag, ``delivery_id``)
    until the sender first records an attempt, so this reads the transactions themselves (the RSAPI listing, every
    shard, ``limit`` at most), and queues the message of each flagged one exactly as the relay builds it, with the
    relay's FIFO ids. A copy of a postback already delivered is not POSTed again (the sender reads the delivery
    first, and SQS FIFO hands out one message of a delivery at a time), so a window wider than the outage costs SQS
    messages, never a second POST. ``next`` (when more remain) is the
    position to send back as ``after`` to continue.
    """
    from vaultcore.api.values import json_integer
    from vaultcore.gateway import postbacks as gateway_postbacks
    from vaultcore.gateway import store

    body = json_body(request)
    start, end = json_integer(body.get("from")), json_integer(body.get("to"))
    limit = json_integer(body.get("limit", 1000))
    if start is None or end is None or not 0 <= start <= end or end - start > REQUEUE_MAX_DAYS * 86400:
        raise ValidationError(f"from and to: unix seconds, from <= to, at most {REQUEUE_MAX_DAYS} days apart.")
    if limit is None or not 1 <= limit <= REQUEUE_MAX_TRANSACTIONS:
        raise ValidationError(f"limit must be an integer from 1 to {REQUEUE_MAX_TRANSACTIONS}.")
    after = body.get("after")
    position = None
    if after is not None:
        if (not isinstance(after, dict) or not isinstance(after.get("transaction_id"), str)
                or json_integer(after.get("created_at")) is None):
            raise ValidationError("after must be the `next` of the previous answer.")
        position = {"transaction_id": after["transaction_id"], "created_at": json_integer(after["created_at"])}
    sqs = client("sqs")
    scanned = queued = 0
    while scanned < limit:
        items, position = store.list_transactions(account_id, start, end, min(100, limit - scanned), position)
        scanned += len(items)
        entries = [queue_entry(str(n), json.dumps(gateway_postbacks.message_from_item(item), separators=(",", ":")))
                   for n, item in enumerate(items) if item.get(gateway_postbacks.FLAG) and item.get("delivery_id")]
        for chunk in range(0, len(entries), 10):
            with aws_errors("postback enqueue"):
                out = sqs.send_message_batch(QueueUrl=settings().postback_queue_url, Entries=entries[chunk:chunk + 10])
            if out.get("Failed"):
                raise DependencyError("Internal error: SQS refused postbacks; run the requeue again (copies are "
                                      "harmless).")
            queued += len(entries[chunk:chunk + 10])
        if position is None:
            break
    return ok({"account_id": account_id, "scanned": scanned, "queued": queued,
               "next": ({"transaction_id": position["transaction_id"], "created_at": int(position["created_at"])}
                        if position else None)})


def _redrive_relay_failures(sqs: Any) -> int:
    """Queue again the postbacks of every batch the stream relay gave up (its failure queue's records name a
    range of the Deliveries stream, kept 24 hours); returns how many messages were sent. A copy of a postback
    already queued is harmless: SQS FIFO deduplicates it, or it waits in its delivery's message group and is
    skipped once the delivery is recorded."""
    url = os.environ.get("POSTBACK_RELAY_FAILURE_QUEUE_URL", "")
    relayed = 0
    while url:
        with aws_errors("relay failure queue read"):
            out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60)
        messages = out.get("Messages", [])
        if not messages:
            break
        for m in messages:
            try:
                with aws_errors("postback relay redrive"):
                    relayed += relay.redrive(json.loads(m["Body"]))
            except (DependencyError, ValueError, KeyError, TypeError) as exc:
                # A range the stream no longer holds (it keeps 24 hours), or a record that names none: it stays in
                # the failure queue (visible again after this receive's 60 s) for the runbook's requeue from the
                # transactions, and the rest of the redrive goes on (else every redrive failed on it until the
                # record expired, and the dead-letter queue could not be redriven meanwhile).
                _log.error("postback relay failure not redriven: left in its queue",
                           extra={"error_type": type(exc.__cause__ or exc).__name__, "message_id": m.get("MessageId")})
                continue
            with aws_errors("relay failure queue delete"):
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return relayed


def _move(sqs: Any, dlq_url: str, limit: int) -> int:
    """Move up to ``limit`` messages of a dead-letter queue to the postback queue: each a fresh copy (same delivery
    id, ``requeued`` + 1: a new message for SQS FIFO's deduplication) with a fresh schedule of attempts."""
    moved = 0
    while dlq_url and moved < limit:
        with aws_errors("dead-letter queue read"):
            out = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=min(10, limit - moved),
                                      WaitTimeSeconds=0, VisibilityTimeout=30)
        messages = out.get("Messages", [])
        if not messages:
            break
        for m in messages:
            # A fresh message and a fresh schedule (deliveries.restart_attempts; the numbers go on): 12 attempts.
            deliveries.restart_attempts(m["Body"])
            try:
                body = fresh_copy(m["Body"])
                ids = fifo_ids(body)
            except (ValueError, KeyError, TypeError):
                continue  # not a postback message: left where it is (it stays visible in the DLQ)
            with aws_errors("postback enqueue"):
                sqs.send_message(QueueUrl=settings().postback_queue_url, MessageBody=body, **ids)
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
            moved += 1
    return moved


@route("POST", "/admin/v1/postbacks/redrive")
def redrive(request: Request) -> Response:
    """Move every message of the dead-letter queue back to the postback queue (same delivery ids), the standard
    dead-letter queue of the release before first (``POSTBACK_LEGACY_DLQ_URL``, one release: issue 29's move to
    SQS FIFO); first of all, queue again the postbacks of the stream relay's failed batches (``relayed``)."""
    body = json_body(request)
    from vaultcore.api.values import json_integer

    limit = json_integer(body.get("limit", 1000))
    if limit is None or not 1 <= limit <= 10000:
        raise ValidationError("limit must be an integer from 1 to 10000.")
    sqs = client("sqs")
    relayed = _redrive_relay_failures(sqs)
    moved = _move(sqs, os.environ.get("POSTBACK_LEGACY_DLQ_URL", ""), limit)
    moved += _move(sqs, settings().postback_dlq_url, limit - moved)
    return ok({"moved": moved, "relayed": relayed})
