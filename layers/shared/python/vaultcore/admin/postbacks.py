"""Management API for postbacks: the delivery log, redelivery of one postback, redrive of the dead-letter queue."""

from __future__ import annotations

import json
import os
from typing import Any

from vaultcore.admin.router import json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import NotFound, ValidationError
from vaultcore.postback import deliveries, relay
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors


@route("GET", "/admin/v1/accounts/{account_id}/deliveries")
def list_deliveries(request: Request, account_id: str) -> Response:
    try:
        limit = min(int(request.query.get("limit", "100")), 1000)
    except ValueError:
        raise ValidationError("limit must be an integer.") from None
    attempts = deliveries.list_attempts(account_id, transaction_id=request.query.get("transaction_id"),
                                        delivery_id=request.query.get("delivery_id"), limit=limit)
    return ok({"account_id": account_id, "attempts": attempts})


@route("POST", "/admin/v1/accounts/{account_id}/deliveries/{delivery_id}/redeliver")
def redeliver(request: Request, account_id: str, delivery_id: str) -> Response:
    stored = deliveries.load_message(account_id, delivery_id)
    if stored is None:
        raise NotFound("No postback with this delivery id.")
    message = json.loads(deliveries.message_body(stored))
    message["redelivery"] = int(message.get("redelivery", 0)) + 1
    with aws_errors("postback enqueue"):
        client("sqs").send_message(QueueUrl=settings().postback_queue_url, MessageBody=json.dumps(message))
    return ok({"delivery_id": delivery_id, "queued": True})


def _redrive_relay_failures(sqs: Any) -> int:
    """Queue again the postbacks of every batch the stream relay gave up (its failure queue's records name a
    range of the Deliveries stream, kept 24 hours); returns how many messages were sent. A copy of a postback
    already queued is harmless: the sender lets one first copy claim it."""
    url = os.environ.get("POSTBACK_RELAY_FAILURE_QUEUE_URL", "")
    relayed = 0
    while url:
        with aws_errors("relay failure queue read"):
            out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60)
        messages = out.get("Messages", [])
        if not messages:
            break
        for m in messages:
            with aws_errors("postback relay redrive"):
                relayed += relay.redrive(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return relayed


@route("POST", "/admin/v1/postbacks/redrive")
def redrive(request: Request) -> Response:
    """Move every message of the dead-letter queue back to the postback queue (same delivery ids); first, queue
    again the postbacks of the stream relay's failed batches (``relayed``)."""
    body = json_body(request)
    from vaultcore.api.values import json_integer

    limit = json_integer(body.get("limit", 1000))
    if limit is None or not 1 <= limit <= 10000:
        raise ValidationError("limit must be an integer from 1 to 10000.")
    sqs = client("sqs")
    relayed = _redrive_relay_failures(sqs)
    moved = 0
    while moved < limit:
        with aws_errors("dead-letter queue read"):
            out = sqs.receive_message(QueueUrl=settings().postback_dlq_url, MaxNumberOfMessages=10,
                                      WaitTimeSeconds=0, VisibilityTimeout=30)
        messages = out.get("Messages", [])
        if not messages:
            break
        for m in messages:
            # A fresh message and a fresh attempt count (the delivery log counts attempts): the full schedule.
            deliveries.restart_attempts(m["Body"])
            with aws_errors("postback enqueue"):
                sqs.send_message(QueueUrl=settings().postback_queue_url, MessageBody=m["Body"])
                sqs.delete_message(QueueUrl=settings().postback_dlq_url, ReceiptHandle=m["ReceiptHandle"])
            moved += 1
    return ok({"moved": moved, "relayed": relayed})
