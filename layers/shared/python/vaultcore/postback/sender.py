"""Delivers one queued postback: signs it, POSTs it through the SSRF guard, records the attempt, and on
failure schedules the next attempt by changing the message's visibility (the published retry schedule).

Message (put on the postback queue by the gateway; never clear card data)::

    {"delivery_id": "<uuid>", "account_id": "...", "transaction_id": "...", "created_at": <unix>,
     "response": {<the postback's responses[] entry>}, "redelivery": <n, optional>}

Success is any 2xx within 10 seconds. A non-2xx answer, a timeout or a connection failure is a failed attempt:
the message becomes visible again after ``retry_delay(attempt)`` seconds; after ``maxReceiveCount`` receives
SQS moves it to the dead-letter queue (the queue's redrive policy is the one source of that number).
A message already delivered (its MSG item says so) is acknowledged without sending again, so an SQS
redelivery after a crash does not reach the receiver twice; explicit redeliveries bypass that check.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from vaultcore import clock
from vaultcore.logs import get_logger
from vaultcore.postback import deliveries
from vaultcore.postback.message import build_body, parse_schedule, retry_delay, signature_header
from vaultcore.settings import settings
from vaultcore.store.aws import client

__all__ = ["PostbackTarget", "DeliveryFailed", "deliver_record", "DELIVERY_TIMEOUT_SECONDS", "max_receive_count",
           "reset_caches"]

DELIVERY_TIMEOUT_SECONDS = 10.0  # peers' convention: the receiver must answer within 10 seconds
_log = get_logger("postback")
_max_receive: int | None = None


@dataclass(frozen=True)
class PostbackTarget:
    url: str
    api_accesskey: str
    secret: bytes


class DeliveryFailed(Exception):
    """This record must be retried later (its visibility was already set to the next delay)."""


def reset_caches() -> None:
    global _max_receive
    _max_receive = None


def max_receive_count() -> int:
    """The queue's maxReceiveCount, read once per container from its redrive policy (one source of truth)."""
    global _max_receive
    if _max_receive is None:
        attrs = client("sqs").get_queue_attributes(QueueUrl=settings().postback_queue_url,
                                                   AttributeNames=["RedrivePolicy"])["Attributes"]
        _max_receive = int(json.loads(attrs.get("RedrivePolicy", "{}")).get("maxReceiveCount", 12))
    return _max_receive


def _target(account_id: str) -> PostbackTarget | None:
    from vaultcore.gateway.accounts import postback_target

    return postback_target(account_id)


def _excerpt(body: bytes) -> str:
    from vaultcore.cards.masking import redact_text

    return redact_text(body[:256].decode("utf-8", "replace"))


def deliver_record(body: str, receipt_handle: str, receive_count: int) -> str:
    """Deliver one SQS record; returns "delivered" or "skipped", raises DeliveryFailed to retry."""
    message = json.loads(body)
    account_id, delivery_id = message["account_id"], message["delivery_id"]
    transaction_id = message.get("transaction_id", "")
    redelivery = int(message.get("redelivery", 0))
    attempt = receive_count
    if attempt == 1 and not redelivery:
        deliveries.save_message(message)
    elif not redelivery:
        stored = deliveries.load_message(account_id, delivery_id)
        if stored is not None and stored.get("state") == "delivered":
            return "skipped"
    target = _target(account_id)
    if target is None:
        # No postback URL any more: nothing to deliver; recorded so the operator sees why.
        deliveries.record_attempt(account_id, delivery_id, transaction_id, attempt, "abandoned", None, 0.0,
                                  "no postback url", "")
        return "skipped"
    timestamp = int(clock.now())
    payload = build_body(account_id, target.api_accesskey, timestamp, [message["response"]])
    headers = {"Content-Type": "application/json", "User-Agent": "vault-postback/1.0",
               "Vault-Delivery-Id": delivery_id, "Vault-Delivery-Attempt": str(attempt),
               "Vault-Signature": signature_header(target.secret, timestamp, payload)}
    started = time.perf_counter()
    status_code: int | None = None
    error: str | None = None
    excerpt = ""
    try:
        from vaultcore.net.http import get_default_client

        response = get_default_client().send("POST", target.url, headers, payload, timeout=DELIVERY_TIMEOUT_SECONDS)
        status_code = response.status
        excerpt = _excerpt(response.body)
        ok = 200 <= response.status < 300
        if not ok:
            error = f"HTTP {response.status}"
    except Exception as exc:  # noqa: BLE001 - any failure to deliver is a retry, recorded by its type only
        ok = False
        error = type(exc).__name__
    duration_ms = (time.perf_counter() - started) * 1000
    if ok:
        deliveries.record_attempt(account_id, delivery_id, transaction_id, attempt, "delivered", status_code,
                                  duration_ms, None, excerpt)
        deliveries.mark_delivered(account_id, delivery_id)
        _log.info("postback delivered", extra={"delivery_id": delivery_id, "account_id": account_id,
                                               "attempt": attempt, "status": status_code})
        return "delivered"
    last = attempt >= max_receive_count() and not redelivery
    deliveries.record_attempt(account_id, delivery_id, transaction_id, attempt, "dead-lettered" if last else "failed",
                              status_code, duration_ms, error, excerpt)
    schedule = parse_schedule(os.environ.get("POSTBACK_RETRY_SCHEDULE"))
    delay = 0 if last else retry_delay(attempt, schedule)
    client("sqs").change_message_visibility(QueueUrl=settings().postback_queue_url, ReceiptHandle=receipt_handle,
                                            VisibilityTimeout=delay)
    _log.warning("postback attempt failed", extra={"delivery_id": delivery_id, "account_id": account_id,
                                                   "attempt": attempt, "reason": error})
    raise DeliveryFailed(delivery_id)
