"""The outbox relay: puts every postback the gateway recorded with its transaction on the postback queue.

Invoked by two event source mappings (template: PostbackOutboxFunction, StreamViewType NEW_IMAGE):

* ``Transactions`` (issue 29, cost per operation): the Transactions table's stream. The mapping's filter passes
  only INSERTs of transaction items that carry the postback flag (:data:`TRANSACTIONS_FILTER_PATTERN`;
  ``vaultcore.gateway.postbacks.flag_item``), and the message is built from the new image
  (``postbacks.message_from_item``). Captures, refunds, fences and migration copies of an item never pass: they
  are MODIFY events or items without the flag.
* ``Deliveries``: the Deliveries table's stream, for messages written as a ``MSG#`` item in state ``unsent`` with
  the change they report (a returned ACH debit; items written before the Transactions stream was the outbox).
  The filter passes only INSERTs of such items (:data:`FILTER_PATTERN`), and the image carries the SQS body.

Either way an item is in the stream exactly when the write that made it has committed, so nothing can be
recorded without reaching the queue, no index or sweep is needed, and the relay makes no DynamoDB call.

One SendMessageBatch per ten records, to the SQS FIFO postback queue: each entry carries its message group (the
delivery id) and deduplication id (the delivery id and its marks: :func:`vaultcore.postback.message.fifo_ids`).
The answer is a partial batch response (ReportBatchItemFailures): the sequence numbers of records SQS refused.
Lambda then retries the batch from the first of them, so the records after it are sent a second time; an error of
the whole invocation retries the batch (bisected) in the same way. SQS drops such a second send of the same
deduplication id within its 5-minute deduplication interval; a copy sent later is in the same message group, so
SQS hands it out only after the first is deleted, and the sender then reads the delivery ``delivered`` and skips
it (:mod:`vaultcore.postback.sender`): each attempt is POSTed once. After the mapping's MaximumRetryAttempts the
batch's description (shard, sequence numbers) goes to the failure destination, from which :func:`redrive` queues
the messages again (docs/operators/runbooks.md).

The same function forwards the standard postback queue of the release before (its ``LegacyPostbacks`` SQS event,
one release; :func:`forward`): each message is sent to the FIFO queue with its ids and acknowledged, no attempt
is made from the old queue.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from vaultcore import metrics
from vaultcore.errors import DependencyError
from vaultcore.logs import clear_request_context, get_logger, set_request_context
from vaultcore.postback.deliveries import UNSENT, message_body
from vaultcore.postback.message import queue_entry
from vaultcore.settings import settings
from vaultcore.store.aws import client

__all__ = ["relay", "FILTER_PATTERN", "TRANSACTIONS_FILTER_PATTERN", "redrive", "wanted", "forward"]

_log = get_logger("postback.relay")

#: Empty GetRecords pages a redrive reads through before it stops (the range's records are older than that).
REDRIVE_EMPTY_PAGES = 5

#: The Deliveries event's FilterCriteria pattern (tests/unit/test_postback_relay.py checks they are the same).
FILTER_PATTERN: dict[str, Any] = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"state": {"S": [UNSENT]}}}}
#: The postback flag of a transaction item (``vaultcore.gateway.postbacks.FLAG`` and ``FLAG_VALUES``; not imported
#: here, so that a Deliveries batch does not load the gateway's modules).
_FLAG, _FLAG_VALUES = "postback", ["plain", "tokens"]
#: The Transactions event's FilterCriteria pattern: new transactions flagged for a postback.
TRANSACTIONS_FILTER_PATTERN: dict[str, Any] = {"eventName": ["INSERT"],
                                               "dynamodb": {"NewImage": {_FLAG: {"S": _FLAG_VALUES}}}}


def _flagged(image: dict[str, Any]) -> bool:
    return ((image.get(_FLAG) or {}).get("S") in _FLAG_VALUES
            and all(name in image for name in ("delivery_id", "account_id", "transaction_id", "created_at")))


def wanted(record: dict[str, Any]) -> bool:
    """What the filters pass, checked again here: a record a mapping let through by mistake is not queued."""
    image = (record.get("dynamodb") or {}).get("NewImage") or {}
    if record.get("eventName") != "INSERT":
        return False
    if (image.get("state") or {}).get("S") == UNSENT and bool({"B", "S"} & set(image.get("message") or {})):
        return True
    return _flagged(image)


def _plain_image(image: dict[str, Any]) -> dict[str, Any]:
    """A stream image as the table's items read (a Lambda event carries binary values in base64)."""
    from vaultcore.store.ddb import from_item

    def typed(value: dict[str, Any]) -> dict[str, Any]:
        (kind, v), = value.items()
        if kind == "B" and isinstance(v, str):
            return {"B": base64.b64decode(v)}
        if kind == "BS":
            return {"BS": [base64.b64decode(b) if isinstance(b, str) else b for b in v]}
        if kind == "M":
            return {"M": {k: typed(x) for k, x in v.items()}}
        if kind == "L":
            return {"L": [typed(x) for x in v]}
        return value

    return from_item({k: typed(v) for k, v in image.items()})


def _body(record: dict[str, Any]) -> str:
    """The SQS body: the Deliveries image's message (deflated binary, base64 in a Lambda event; or plain JSON),
    or the message of a flagged transaction, built from its image as the gateway would have built it."""
    image = record["dynamodb"]["NewImage"]
    if "message" in image and (image.get("state") or {}).get("S") == UNSENT:
        value = image["message"]
        return message_body(value["B"] if "B" in value else value["S"])
    from vaultcore.gateway.postbacks import message_from_item  # the gateway's formatting, for this case only

    return json.dumps(message_from_item(_plain_image(image)), separators=(",", ":"))


def _send(records: list[dict[str, Any]]) -> list[str]:
    """SendMessageBatch per ten records; the sequence numbers of the records not queued."""
    failed: list[str] = []
    sqs = client("sqs")
    for start in range(0, len(records), 10):
        chunk = records[start:start + 10]
        entries = [queue_entry(str(i), _body(r)) for i, r in enumerate(chunk)]
        try:
            out = sqs.send_message_batch(QueueUrl=settings().postback_queue_url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - the whole chunk is retried by the mapping
            _log.warning("postback relay send failed", extra={"error_type": type(exc).__name__,
                                                               "count": len(chunk)})
            failed.extend(r["dynamodb"]["SequenceNumber"] for r in chunk)
            continue
        for entry in out.get("Failed") or []:
            failed.append(chunk[int(entry["Id"])]["dynamodb"]["SequenceNumber"])
    return failed


def forward(records: list[dict[str, Any]]) -> list[str]:
    """The forwarder (one release, issue 29): SQS records of the standard postback queue of the release before,
    sent to the FIFO queue with their FIFO ids (body unchanged, so a requeued copy keeps its marks); the message
    ids of those SQS refused, or that are no postback message (they stay in the old queue, then its DLQ)."""
    failed: list[str] = []
    sqs = client("sqs")
    for start in range(0, len(records), 10):
        chunk = records[start:start + 10]
        entries = []
        for i, record in enumerate(chunk):
            try:
                entries.append(queue_entry(str(i), str(record["body"])))
            except (ValueError, KeyError, TypeError):
                failed.append(str(record.get("messageId")))
        if not entries:
            continue
        try:
            out = sqs.send_message_batch(QueueUrl=settings().postback_queue_url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - those records stay in the old queue and come back
            _log.warning("postback forward failed", extra={"error_type": type(exc).__name__, "count": len(entries)})
            failed.extend(str(chunk[int(e["Id"])]["messageId"]) for e in entries)
            continue
        failed.extend(str(chunk[int(e["Id"])]["messageId"]) for e in out.get("Failed") or [])
    return failed


def relay(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    set_request_context(getattr(context, "aws_request_id", None))  # the correlation id of its log lines
    try:
        messages = [r for r in ((event or {}).get("Records") or [])
                    if isinstance(r, dict) and r.get("eventSource") == "aws:sqs"]
        if messages:  # the LegacyPostbacks event: the old standard queue, forwarded
            failed = forward(messages)
            _log.info("postbacks forwarded", extra={"count": len(messages) - len(failed), "failed": len(failed)})
            return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}
        records = [r for r in ((event or {}).get("Records") or []) if isinstance(r, dict) and wanted(r)]
        failed = _send(records)
        metrics.relay_batch(relayed=len(records) - len(failed), failed=len(failed))
        if records:
            _log.info("postbacks relayed", extra={"count": len(records) - len(failed), "failed": len(failed)})
        # Lambda resumes from the lowest sequence number reported; listing them all is the documented shape.
        return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}
    finally:
        metrics.flush(context)
        clear_request_context()


def redrive(failure: dict[str, Any], streams: Any = None) -> int:
    """Queue again the messages of one failure-destination record (an OnFailure record of the stream mapping:
    ``DDBStreamBatchInfo`` with the shard and the first and last sequence numbers). Reads that range of the
    stream (it keeps records for 24 hours) and sends what the filter passes; returns how many were sent.
    Copies of messages already queued are harmless (see the module docstring)."""
    info = failure.get("DDBStreamBatchInfo") or {}
    streams = streams or client("dynamodbstreams")
    iterator = streams.get_shard_iterator(StreamArn=info["streamArn"], ShardId=info["shardId"],
                                          ShardIteratorType="AT_SEQUENCE_NUMBER",
                                          SequenceNumber=info["startSequenceNumber"])["ShardIterator"]
    last = int(info["endSequenceNumber"])
    sent = empty = 0
    # Until the range's last record; a page may come back empty before the data (DynamoDB Streams), so a few
    # empty pages are read through; a closed shard ends with no next iterator.
    while iterator and empty < REDRIVE_EMPTY_PAGES:
        out = streams.get_records(ShardIterator=iterator, Limit=100)
        records = out.get("Records", [])
        batch = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) <= last]
        chosen = [r for r in batch if wanted(r)]
        if _send(chosen):
            raise DependencyError("Internal error: SQS refused postbacks during the relay redrive; run it again.")
        sent += len(chosen)
        if len(batch) < len(records) or (batch and int(batch[-1]["dynamodb"]["SequenceNumber"]) >= last):
            break
        empty = 0 if records else empty + 1
        iterator = out.get("NextShardIterator")
    return sent

