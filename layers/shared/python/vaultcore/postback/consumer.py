"""The SQS event handler of the postback function: a batch's messages are delivered concurrently, and the
answer is a partial batch response (template: FunctionResponseTypes ReportBatchItemFailures), so one failing
record never makes the others redeliver.

The queue is SQS FIFO, one message group per delivery (issue 29): a batch may hold several messages of one group
(copies of one delivery), in order. Each group's records run in order in one worker; once a record of a group is
not acknowledged, the rest of that group in the batch are reported as failures unprocessed, with the same new
visibility (the Lambda developer guide, "Using Lambda with Amazon SQS": with FIFO queues and
ReportBatchItemFailures, a function stops processing a message group at its first failure and returns that message
and every unprocessed one after it, so that the group's order holds). Groups run concurrently.

Time budget (template.yaml: PostbackFunction Timeout 30 s, BatchSize 10; PostbackFifoQueue VisibilityTimeout
180 s = 6 x Timeout). From ``context.get_remaining_time_in_millis()`` (30 s when there is no context):

* every group of the batch starts at once (up to ``MAX_WORKERS`` = 16 threads; a batch of 10 needs at most 10);
* one attempt waits at most ``min(10 s, remaining - RESERVE_SECONDS (5 s))``: a batch whose destinations all
  hang ends after about 10 s, far inside the 30 s timeout (today's sequential delivery needed 10 x 10 s);
* the handler answers at the latest ``REPLY_MARGIN_SECONDS`` (2 s) before the timeout. A record still running
  then (a DynamoDB call stuck in retries) is acknowledged if its receiver already answered 2xx; otherwise it is
  reported as failed without a new visibility: it comes back after the queue's 180 s, when the delivery log says
  whether it was delivered.

Records that failed or were deferred get their next visibility (the retry schedule) in one
ChangeMessageVisibilityBatch call per ten records.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from vaultcore import metrics
from vaultcore.logs import get_logger, set_request_context
from vaultcore.postback.sender import Outcome, deliver
from vaultcore.settings import settings
from vaultcore.store.aws import client

__all__ = ["handle_batch", "MAX_WORKERS", "REPLY_MARGIN_SECONDS", "DEFAULT_REMAINING_SECONDS"]

MAX_WORKERS = 16
REPLY_MARGIN_SECONDS = 2.0
DEFAULT_REMAINING_SECONDS = 30.0  # the template's Timeout, for calls without a Lambda context
_log = get_logger("postback")


def _remaining_seconds(context: Any) -> float:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    if callable(getter):
        try:
            return max(0.0, float(getter()) / 1000)
        except (TypeError, ValueError):
            pass
    return DEFAULT_REMAINING_SECONDS


def _receive_count(record: dict[str, Any]) -> int:
    try:
        return max(1, int((record.get("attributes") or {}).get("ApproximateReceiveCount", 1)))
    except (TypeError, ValueError):
        return 1


def _one(record: dict[str, Any], deadline: float, on_delivered: Any = None) -> Outcome:
    set_request_context(record.get("messageId"))
    try:
        return deliver(record["body"], _receive_count(record), deadline, on_delivered)
    except Exception as exc:  # noqa: BLE001 - one bad record (malformed, a dependency down) fails alone
        _log.error("postback record failed", extra={"error_type": type(exc).__name__})
        return Outcome("error")


def _groups(records: list[dict[str, Any]]) -> list[list[int]]:
    """The batch's records by SQS FIFO message group, each group in the batch's order (a record without a group,
    from a standard queue, is a group of its own)."""
    groups: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        group = (record.get("attributes") or {}).get("MessageGroupId") or f"#{record.get('messageId', i)}"
        groups.setdefault(str(group), []).append(i)
    return list(groups.values())


def _run_group(records: list[dict[str, Any]], group: list[int], deadline: float, outcomes: dict[int, Outcome],
               posted: set[int] | None, answered: threading.Event | None = None) -> None:
    """One message group's records, in order; after one that is not acknowledged, the rest are unprocessed and
    come back with it (the same visibility), so that the group's order holds.

    Once the handler has answered (``answered``), the worker starts no further record: the answer reported it
    failed, so SQS hands it out again after its visibility timeout, maybe to another container, and a worker of
    this invocation (in Lambda: whenever the frozen container runs again) would attempt or defer a message it no
    longer holds — a second holder of one delivery, which the FIFO argument of :mod:`vaultcore.postback.sender`
    excludes."""
    for n, i in enumerate(group):
        if answered is not None and answered.is_set():
            return
        outcome = _one(records[i], deadline, (lambda i=i: posted.add(i)) if posted is not None else None)
        outcomes[i] = outcome
        if not outcome.acknowledged:
            for j in group[n + 1:]:
                outcomes[j] = Outcome("unprocessed", outcome.delay)
            return


def _change_visibility(changes: list[tuple[str, int]]) -> None:
    sqs = client("sqs")
    for start in range(0, len(changes), 10):
        entries = [{"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": delay}
                   for i, (handle, delay) in enumerate(changes[start:start + 10])]
        try:
            out = sqs.change_message_visibility_batch(QueueUrl=settings().postback_queue_url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - those records come back after the queue's visibility timeout
            _log.error("postback visibility change failed", extra={"error_type": type(exc).__name__,
                                                                   "count": len(entries)})
            continue
        if out.get("Failed"):
            _log.warning("postback visibility change refused", extra={"count": len(out["Failed"])})


def handle_batch(event: dict[str, Any], context: Any, *, max_workers: int | None = None) -> dict[str, Any]:
    """Deliver every record; ``max_workers=1`` is the sequential path (bench reference)."""
    records = [r for r in (event.get("Records") or []) if isinstance(r, dict)]
    deadline = time.monotonic() + _remaining_seconds(context)
    set_request_context(getattr(context, "aws_request_id", None))  # batch lines: the invocation's id
    outcomes: dict[int, Outcome] = {}
    if records:
        for service in ("dynamodb", "sqs", "kms"):
            client(service)  # once per container (normally at init already), before any worker thread needs one
        groups = _groups(records)
        workers = max(1, min(max_workers or MAX_WORKERS, len(groups)))
        if workers == 1:
            for group in groups:
                _run_group(records, group, deadline, outcomes, None)
        else:
            posted: set[int] = set()  # records the receiver already accepted (their log write may still run)
            answered = threading.Event()  # set at reply time: a worker still running starts no further record
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="postback")
            futures = [pool.submit(_run_group, records, group, deadline, outcomes, posted, answered)
                       for group in groups]
            wait(futures, timeout=max(0.0, deadline - REPLY_MARGIN_SECONDS - time.monotonic()))
            answered.set()
            pool.shutdown(wait=False, cancel_futures=True)
            done = dict(outcomes)  # the answer: a worker still running no longer changes it
            for group in groups:
                for n, i in enumerate(group):
                    if i in done:
                        continue
                    # still running (or not started after it): acknowledged if its receiver has it, else it
                    # comes back later; the rest of its group with it
                    done[i] = Outcome("delivered" if i in posted else "error")
                    _log.warning("postback record still running at reply time", extra={"event": done[i].result})
                    if not done[i].acknowledged:
                        for j in group[n + 1:]:
                            done.setdefault(j, Outcome("unprocessed"))
                        break
            outcomes = done
    # Lines about the whole batch carry the invocation's id; each record's lines carried its SQS message id.
    set_request_context(getattr(context, "aws_request_id", None))
    changes = [(records[i]["receiptHandle"], o.delay) for i, o in outcomes.items()
               if not o.acknowledged and o.delay is not None and records[i].get("receiptHandle")]
    if changes:
        _change_visibility(changes)
    if records:  # issue 14: the batch's postback metrics, one EMF line (vaultcore.metrics)
        metrics.postback_batch([o.result for o in outcomes.values()], sum(o.dead_letter for o in outcomes.values()))
        metrics.flush(context)
    set_request_context(None)
    return {"batchItemFailures": [{"itemIdentifier": records[i]["messageId"]}
                                  for i, o in sorted(outcomes.items()) if not o.acknowledged]}
