"""Delivers one queued postback: signs it, POSTs it through the SSRF guard, records the attempt, and on
failure tells the consumer when the message should come back (the published retry schedule).

Message (put on the postback queue by the stream relay, from the Transactions or Deliveries stream; never clear
card data)::

    {"delivery_id": "<uuid7>", "account_id": "...", "transaction_id": "...", "created_at": <unix>,
     "response": {<the postback's responses[] entry>}, "redelivery": <n, optional>, "requeued": <n, optional>,
     "not_before": <unix s, optional: a fresh copy's earliest attempt>,
     "attempted": <n, optional: attempts made when the delivery log could not record the last one>}

A message with ``webhook_id`` is a merchant's webhook endpoint's delivery (:mod:`vaultcore.webhooks.outbox`): the
same retries, breaker, dead-letter queue and log; only its destination, body and signing secrets come from
:mod:`vaultcore.webhooks.delivery` instead of the account's postback settings.

Success is any 2xx within 10 seconds. A non-2xx answer, a timeout or a connection failure is a failed attempt:
the message becomes visible again after ``retry_delay(attempt)`` seconds (the consumer changes its visibility);
after ``maxReceiveCount`` failed attempts it goes to the dead-letter queue (the queue's redrive policy is the one
source of that number). Attempts are counted by the delivery log (:mod:`vaultcore.postback.deliveries`), not by
SQS's receive count, which also counts deferrals and early receives (issue 18): when a message's receives run out
before its attempts do, a fresh copy is queued (``requeued`` + 1, and ``not_before``: SQS FIFO has no per-message
delay, so a copy received before its time is given back with the time left as its visibility, no attempt, no
write); when its attempts run out before its receives, it is sent to the dead-letter queue directly.

Isolation per destination (issue 12): the consumer runs a batch's messages concurrently (one worker per message
group), and each attempt's timeout is ``min(10 s, time left in the invocation - RESERVE_SECONDS)``. A destination
(scheme, host, port) that stops answering opens its circuit (:mod:`vaultcore.postback.breaker`): its messages are
then deferred without an attempt and without using one up — given back with the retry schedule's delay — so they
hold up nobody.

AWS calls (issue 13, issue 29): the account's postback settings are cached per container for
``RECORD_CACHE_SECONDS``; a delivered message then costs one consistent GetItem (:func:`deliveries.read`: a
delivery already delivered is not POSTed again, unless this is an operator's redelivery) and ONE write,
:func:`deliveries.finish`, after the POST. There is no claim before the POST, and that is safe because the postback
queue is SQS FIFO (template: PostbackFifoQueue) with one message group per delivery (SQS Developer Guide, "Amazon
SQS FIFO queues": "Exactly-once processing", "Using the message deduplication ID", "Using the message group ID"):

* the relay's repeated sends of one delivery (a lost SendMessageBatch answer, a retried stream batch) carry one
  deduplication id, and SQS accepts them but delivers one message within its 5-minute deduplication interval;
* any later copy (a send after those 5 minutes, the admin's requeue, the sender's fresh copy) is in the same
  message group: SQS returns no message of a group while another of it is in flight, so the copy is handed out
  only after the first was deleted (acknowledged: its outcome is recorded, and this read sees ``delivered``) or
  came back visible (its invocation ended: it is over);
* one in-flight message per delivery, the function's 30-second timeout below the queue's 180-second visibility
  timeout: no two invocations hold one delivery at once, so ``read`` then ``finish`` is never interleaved with
  another attempt of it. ``finish``'s condition (the attempt number is still unused) guards the rule anyway.

The one remaining second POST, as before: the receiver answers 2xx and the invocation dies (or both delivery-log
writes fail) before ``delivered`` is recorded; the message comes back and is POSTed again with the same
``Vault-Delivery-Id``, which receivers deduplicate on (docs/integrators/webhooks.md). One case of it: a record
whose receiver answered 2xx while its log write is still running when the handler must answer is acknowledged
(:mod:`vaultcore.postback.consumer`) before ``delivered`` is recorded, so a later copy in its message group (there
is one only after a lost relay answer past 5 minutes, an admin requeue or a redelivery) can be handed out and read
the delivery not yet delivered. Once the handler has answered, its workers start no further record and POST
nothing (the consumer and the time check after :func:`deliveries.read`).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.gateway.accounts import postback_target
from vaultcore.logs import get_logger
from vaultcore.net.http import EgressConnectionError, EgressTimeout, SafeHttpClient
from vaultcore.net.ssrf import EgressPolicy
from vaultcore.postback import deliveries
from vaultcore.postback.breaker import DEFER, PROBE, CircuitBreaker, destination_of
from vaultcore.postback.message import build_body, fifo_ids, fresh_copy, parse_schedule, retry_delay, signature_header
from vaultcore.postback.target import PostbackTarget
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.webhooks.delivery import WebhookTarget
from vaultcore.webhooks.delivery import request as webhook_request
from vaultcore.webhooks.delivery import target as webhook_target

__all__ = ["PostbackTarget", "Outcome", "deliver", "DELIVERY_TIMEOUT_SECONDS", "RESERVE_SECONDS",
           "MIN_ATTEMPT_SECONDS", "max_receive_count", "breaker", "reset_caches"]

DELIVERY_TIMEOUT_SECONDS = 10.0  # peers' convention: the receiver must answer within 10 seconds
RESERVE_SECONDS = 5.0  # kept back from the invocation for the writes after the attempts and the reply
MIN_ATTEMPT_SECONDS = 1.0  # less time than this left: defer instead of attempting
HTTP_POOL_SIZE = 16  # connections kept per destination: a whole batch to one merchant reuses them
_log = get_logger("postback")
_max_receive: int | None = None
_max_receive_lock = threading.Lock()
_targets: ContainerCache[PostbackTarget] = ContainerCache("record_cache_seconds", max_items=4096)
_load_locks = tuple(threading.Lock() for _ in range(16))  # one cold load per account, not one per record
_breaker = CircuitBreaker()


@dataclass(frozen=True)
class Outcome:
    """``result``: delivered, skipped, requeued (a fresh copy is queued), failed-requeued (a failed attempt whose
    log write failed: a fresh copy that carries it is queued), dead-lettered (sent to the dead-letter queue) — all
    acknowledged — or failed, deferred (retry later), early (a fresh copy received before its
    ``not_before``), unprocessed (after a record of its message group that was not acknowledged) or error.

    ``delay``: the visibility timeout to give the message (seconds), or None to leave it as it is.
    ``dead_letter``: a failed last attempt: the message goes to the dead-letter queue (metrics).
    """

    result: str
    delay: int | None = None
    dead_letter: bool = False

    @property
    def acknowledged(self) -> bool:
        return self.result in ("delivered", "skipped", "requeued", "failed-requeued", "dead-lettered")


def reset_caches() -> None:
    global _max_receive
    _max_receive = None
    _breaker.clear()
    _http.cache_clear()


def breaker() -> CircuitBreaker:
    return _breaker


def max_receive_count() -> int:
    """The queue's maxReceiveCount, read once per container from its redrive policy (one source of truth)."""
    global _max_receive
    with _max_receive_lock:
        if _max_receive is None:
            attrs = client("sqs").get_queue_attributes(QueueUrl=settings().postback_queue_url,
                                                       AttributeNames=["RedrivePolicy"])["Attributes"]
            _max_receive = int(json.loads(attrs.get("RedrivePolicy", "{}")).get("maxReceiveCount", 12))
        return _max_receive


@lru_cache(maxsize=1)
def _http() -> SafeHttpClient:
    """The sender's own SafeHttpClient (per container): pools sized for a concurrent batch."""
    return SafeHttpClient(EgressPolicy.from_env(), connect_timeout=5.0, read_timeout=DELIVERY_TIMEOUT_SECONDS,
                          max_pools=64, pool_maxsize=HTTP_POOL_SIZE)


def _target(account_id: str) -> PostbackTarget | None:
    """URL, access key and secret of the account, cached per container (RECORD_CACHE_SECONDS, 60 s)."""
    cached = _targets.get(account_id)
    if cached is not None:
        return cached
    with _load_locks[hash(account_id) % len(_load_locks)]:
        return _targets.get_or_load(account_id, lambda: postback_target(account_id))


def _excerpt(body: bytes) -> str:
    from vaultcore.cards.masking import redact_text

    return redact_text(body[:256].decode("utf-8", "replace"))


def _schedule() -> tuple[int, ...]:
    return parse_schedule(os.environ.get("POSTBACK_RETRY_SCHEDULE"))


def _is_last(attempt: int, redelivery: bool) -> bool:
    return not redelivery and attempt >= max_receive_count()


def _send(queue_url: str, body: str) -> bool:
    try:
        client("sqs").send_message(QueueUrl=queue_url, MessageBody=body, **fifo_ids(body))
    except Exception as exc:  # noqa: BLE001 - the caller falls back to SQS's own visibility and redrive
        _log.warning("postback requeue failed", extra={"error_type": type(exc).__name__})
        return False
    return True


def _give_back(result: str, body: str, receive_count: int, delay: int) -> Outcome:
    """Retry later: SQS shows the message again after ``delay`` seconds.

    Receives are not attempts (a deferral, an early receive): when this receive is the queue's last before its
    redrive would move the message to the dead-letter queue, a fresh copy (same delivery id, ``requeued`` + 1, its
    own deduplication id, ``not_before`` now + ``delay``) is queued instead and this one acknowledged, so
    deferrals never use up the attempts. If that send fails, SQS's redrive takes over: the message waits in the
    dead-letter queue, lost to nobody.
    """
    if receive_count >= max_receive_count() and _send(settings().postback_queue_url,
                                                      fresh_copy(body, clock.now() + delay if delay > 0 else None)):
        return Outcome("requeued")
    return Outcome(result, delay)


def _dead_letter(body: str, receive_count: int, attempted: bool = True) -> Outcome:
    """The last attempt failed: into the dead-letter queue, by SQS's redrive on the next receive when this was
    the queue's last receive, else sent there now (a message with fewer receives than attempts: a fresh copy).
    ``attempted`` False: a copy of a message already dead-lettered (metrics count no attempt for it)."""
    if receive_count >= max_receive_count():
        return Outcome("failed" if attempted else "deferred", 0, dead_letter=attempted)
    if settings().postback_dlq_url and _send(settings().postback_dlq_url, body):
        return Outcome("dead-lettered" if attempted else "skipped", dead_letter=attempted)
    return Outcome("failed" if attempted else "deferred", retry_delay(1, _schedule()))


def _defer(message: dict[str, Any], body: str, receive_count: int, reason: str, redelivery: bool) -> Outcome:
    try:
        attempt = deliveries.note_deferral(message, reason, redelivery=redelivery)
    except deliveries.Finished as finished:
        if finished.state == "dead-lettered":
            return _dead_letter(body, receive_count, attempted=False)
        return Outcome("skipped")  # delivered already, by an earlier copy
    _log.info("postback deferred", extra={"delivery_id": message["delivery_id"], "account_id": message["account_id"],
                                          "attempt": attempt, "reason": reason})
    return _give_back("deferred", body, receive_count, retry_delay(attempt, _schedule()))


def deliver(body: str, receive_count: int, deadline: float,
            on_delivered: Callable[[], None] | None = None) -> Outcome:
    """Deliver one SQS record before ``deadline`` (a time.monotonic() value: the end of the invocation).

    ``on_delivered`` is called as soon as the receiver has answered 2xx, before the delivery log write: if that
    write is still running when the handler must answer, the record is acknowledged all the same. The attempt
    number (``Vault-Delivery-Attempt``) is the delivery log's count of real POSTs plus one, not SQS's receive count.
    """
    message = json.loads(body)
    account_id, delivery_id = message["account_id"], message["delivery_id"]
    early = float(message.get("not_before") or 0) - clock.now()
    if early > 0:
        # A fresh copy received before its time (FIFO queues take no per-message delay): back when it is due.
        return Outcome("early", min(43200, math.ceil(early)))
    redelivery = int(message.get("redelivery", 0)) > 0
    webhook_id = message.get("webhook_id")  # a merchant's webhook endpoint (vaultcore.webhooks.outbox)
    target: PostbackTarget | WebhookTarget | None = (
        webhook_target(account_id, str(webhook_id), clock.now()) if webhook_id else _target(account_id))
    if target is None:
        # No postback URL (or webhook endpoint) any more: nothing to deliver; recorded so the operator sees why.
        deliveries.record_attempt(message, "abandoned", "no webhook endpoint" if webhook_id else "no postback url")
        return Outcome("skipped")
    destination = destination_of(target.url)
    decision = _breaker.before_attempt(destination)
    if decision == DEFER:
        return _defer(message, body, receive_count, "circuit open", redelivery)
    budget = min(DELIVERY_TIMEOUT_SECONDS, deadline - RESERVE_SECONDS - time.monotonic())
    if budget < MIN_ATTEMPT_SECONDS:
        if decision == PROBE:
            _breaker.release_probe(destination)
        return _defer(message, body, receive_count, "no time left", redelivery)
    try:
        stored = deliveries.read(message)
    except BaseException:
        if decision == PROBE:
            _breaker.release_probe(destination)
        raise
    # The read may have been slow (SDK retries): the POST must still end inside the invocation, before the handler
    # answers. A worker whose record was reported failed at reply time (vaultcore.postback.consumer) gets here
    # after the answer, and must not POST a message SQS may already have handed out again.
    budget = min(budget, deadline - RESERVE_SECONDS - time.monotonic())
    if budget < MIN_ATTEMPT_SECONDS:
        if decision == PROBE:
            _breaker.release_probe(destination)
        return _defer(message, body, receive_count, "no time left", redelivery)
    state = (stored or {}).get("state")
    if (stored or {}).get("delivered_at"):
        # Delivered once (``delivered_at`` is never removed): an explicit redelivery's later failure or deferral
        # rewrites ``state``, but no copy that is not an explicit redelivery is POSTed again.
        state = "delivered"
    if not redelivery and state in ("delivered", "dead-lettered"):
        if decision == PROBE:
            _breaker.release_probe(destination)
        if state == "dead-lettered":
            return _dead_letter(body, receive_count, attempted=False)  # a copy; its attempts are used up
        # delivered by an earlier message of this delivery (a copy queued after SQS's deduplication interval, or
        # the message itself after a lost acknowledgement): no second POST
        _log.info("postback copy skipped: delivered already", extra={"delivery_id": delivery_id,
                                                                      "account_id": account_id})
        return Outcome("skipped")
    # the attempts made so far: the delivery log's count, or more when a copy says its attempt's write failed
    attempt = max(int((stored or {}).get("attempt") or 0), int(message.get("attempted", 0) or 0)) + 1
    writer = uuid.uuid4().hex  # this attempt's write: its SDK retry is recognised by it

    timestamp = int(clock.now())
    if isinstance(target, WebhookTarget):
        payload, headers = webhook_request(message, target, timestamp, attempt)
    else:
        payload = build_body(account_id, target.api_accesskey, timestamp, [message["response"]])
        headers = {"Content-Type": "application/json", "User-Agent": "vault-postback/1.0",
                   "Vault-Delivery-Id": delivery_id, "Vault-Delivery-Attempt": str(attempt),
                   "Vault-Signature": signature_header(target.secret, timestamp, payload)}
    started = time.perf_counter()
    status_code: int | None = None
    error: str | None = None
    excerpt = ""
    responsive = True
    try:
        response = _http().send("POST", target.url, headers, payload, timeout=budget)
        status_code = response.status
        excerpt = _excerpt(response.body)
        ok = 200 <= response.status < 300
        if not ok:
            error = f"HTTP {response.status}"
    except Exception as exc:  # noqa: BLE001 - any failure to deliver is a retry, recorded by its type only
        ok = False
        error = type(exc).__name__
        responsive = not isinstance(exc, EgressTimeout | EgressConnectionError)
    finally:
        _breaker.record(destination, responsive)
    duration_ms = (time.perf_counter() - started) * 1000
    log = {"delivery_id": delivery_id, "account_id": account_id, "attempt": attempt}
    if ok:
        if on_delivered is not None:
            on_delivered()
        try:
            deliveries.finish(message, stored, attempt, "delivered", status_code, duration_ms, None, excerpt, writer)
        except Exception as exc:  # noqa: BLE001 - the receiver has it: a lost log line beats a second POST
            _log.error("postback delivered, delivery log write failed",
                       extra={**log, "error_type": type(exc).__name__})
            try:  # a second chance at "delivered", which stops later copies
                deliveries.mark_delivered(message, stored, attempt, writer)
            except Exception as again:  # noqa: BLE001
                _log.error("postback delivered, delivery state write failed",
                           extra={**log, "error_type": type(again).__name__})
        _log.info("postback delivered", extra={**log, "status": status_code})
        return Outcome("delivered")
    in_schedule = attempt - deliveries.schedule_base(stored)  # after an operator's redrive: a fresh schedule
    last = _is_last(in_schedule, redelivery)
    recorded = True
    try:
        deliveries.finish(message, stored, attempt, "dead-lettered" if last else "failed", status_code, duration_ms,
                          error, excerpt, writer)
    except Exception as exc:  # noqa: BLE001 - the retry must still be scheduled
        recorded = False
        _log.error("postback delivery log write failed", extra={**log, "error_type": type(exc).__name__})
    _log.warning("postback attempt failed", extra={**log, "reason": error})
    if last:
        return _dead_letter(body, receive_count)
    delay = retry_delay(in_schedule, _schedule())
    if not recorded and _send(settings().postback_queue_url,
                              fresh_copy(body, clock.now() + delay if delay > 0 else None, attempted=attempt)):
        # The log does not know this attempt: a fresh copy that says so makes the next one attempt + 1, so no
        # attempt number is POSTed twice (if this send fails too, the number may repeat; nothing is lost).
        return Outcome("failed-requeued")
    return _give_back("failed", body, receive_count, delay)
