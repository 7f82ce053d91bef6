"""DynamoDB stream event sources for the local runner: what Lambda's event source mapping does, against moto.

moto implements DynamoDB Streams (DescribeStream, GetShardIterator, GetRecords) for a table created with a
``StreamSpecification``. For each ``Type: DynamoDB`` event of a function in template.yaml, a
:class:`StreamSource` reads every shard of the table's stream from ``StartingPosition`` (TRIM_HORIZON), in order,
and for each batch (up to ``BatchSize`` records that pass the ``FilterCriteria``; records that do not are
skipped, as Lambda drops them) calls the handler with a Lambda-shaped event::

    {"Records": [{"eventID", "eventName", "eventVersion", "eventSource": "aws:dynamodb", "awsRegion",
                  "dynamodb": {"ApproximateCreationDateTime", "Keys", "NewImage", "SequenceNumber", "SizeBytes",
                               "StreamViewType"},
                  "eventSourceARN": <stream ARN>}]}

Like Lambda:

* ``FunctionResponseTypes: [ReportBatchItemFailures]``: the batch is retried from the lowest sequence number the
  handler reports (that record and every one after it in the batch);
* ``BisectBatchOnFunctionError``: a batch whose invocation raised is split in two and each half retried on its
  own (with its own retry count);
* retries back off (``retry_seconds``: the runner's ``LOCAL_STREAM_RETRY_SECONDS``, 1 s, doubling up to 8 s);
* ``MaximumRetryAttempts``: when the retries of a batch run out, a failure record (``DDBStreamBatchInfo``: the
  shard, the first and last sequence numbers, the batch size) goes to ``DestinationConfig.OnFailure`` (an SQS
  queue) and the shard moves on.

The checkpoint (the last sequence number done, per shard) is written after every batch done. With
``checkpoint_path`` (the runner's ``--aws-endpoint`` mode, where the tables outlive the runner: a SIGKILLed runner
restarts onto the same data) it is also kept in a file, and a restarted runner resumes after it, as Lambda's
event source mapping resumes after its checkpoint when a function dies: only the batch that was not done is read
again (and its postbacks queued again, which the FIFO queue's deduplication and the sender's read absorb). Without
a path (moto in this process or started by the runner, gone with it) memory is enough.

:func:`matches` implements the part of Lambda's filter pattern syntax that templates use: nested objects, a list
of allowed values (strings, numbers, booleans, null) and the ``prefix``, ``exists`` and ``anything-but``
operators; a record passes when any of the filters matches it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import os
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["matches", "StreamSource", "lambda_record", "POLL_SECONDS"]

#: Lambda polls each shard about four times a second.
POLL_SECONDS = 0.25


def _value_matches(rule: Any, value: Any, present: bool) -> bool:
    if isinstance(rule, dict):
        if "exists" in rule:
            return bool(rule["exists"]) == present
        if not present:
            return False
        if "prefix" in rule:
            return isinstance(value, str) and value.startswith(str(rule["prefix"]))
        if "anything-but" in rule:
            excluded = rule["anything-but"]
            return value not in (excluded if isinstance(excluded, list) else [excluded])
        raise ValueError(f"filter operator not supported locally: {sorted(rule)}")
    return present and rule == value


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether a record (``event``, as Lambda sees it before the invocation) matches one filter ``pattern``."""
    for key, rule in pattern.items():
        present = isinstance(event, dict) and key in event
        value = event.get(key) if present else None
        if isinstance(rule, dict):
            if not (present and isinstance(value, dict) and matches(rule, value)):
                return False
        elif isinstance(rule, list):
            if not any(_value_matches(r, value, present) for r in rule):
                return False
        else:
            raise ValueError("a filter pattern's leaves are lists of values")
    return True


def _epoch(value: Any) -> Any:
    return value.timestamp() if isinstance(value, _dt.datetime) else value


def _base64_blobs(value: Any) -> Any:
    """Binary attribute values as a Lambda event carries them (base64 strings; boto3 has decoded them)."""
    if isinstance(value, dict):
        return {k: (base64.b64encode(v).decode() if k == "B" and isinstance(v, (bytes, bytearray))
                    else [base64.b64encode(x).decode() for x in v] if k == "BS" else _base64_blobs(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_base64_blobs(v) for v in value]
    return value


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda passes it (the stream ARN added, times as epoch seconds, binary values as
    base64 strings)."""
    dynamodb = {k: (_base64_blobs(v) if k in ("Keys", "NewImage", "OldImage") else v)
                for k, v in (record.get("dynamodb") or {}).items()}
    if "ApproximateCreationDateTime" in dynamodb:
        dynamodb["ApproximateCreationDateTime"] = _epoch(dynamodb["ApproximateCreationDateTime"])
    return {"eventID": record.get("eventID"), "eventName": record.get("eventName"),
            "eventVersion": record.get("eventVersion", "1.1"), "eventSource": "aws:dynamodb",
            "awsRegion": record.get("awsRegion"), "dynamodb": dynamodb, "eventSourceARN": stream_arn}


class StreamSource:
    """One ``Type: DynamoDB`` event of a function: its stream, settings, and a checkpoint per shard."""

    def __init__(self, function: str, stream_arn: str, properties: dict[str, Any],
                 invoke: Callable[[str, dict[str, Any]], Any], send_failure: Callable[[str, str], Any] | None,
                 failure_destination: str | None, streams: Any, retry_seconds: float = 0.0,
                 stop: threading.Event | None = None, checkpoint_path: Path | None = None) -> None:
        self.function = function
        self.stream_arn = stream_arn
        self.batch = int(properties.get("BatchSize", 100))
        self.filters = [json.loads(f["Pattern"]) if isinstance(f.get("Pattern"), str) else f["Pattern"]
                        for f in ((properties.get("FilterCriteria") or {}).get("Filters") or [])]
        self.bisect = bool(properties.get("BisectBatchOnFunctionError", False))
        self.partial = "ReportBatchItemFailures" in (properties.get("FunctionResponseTypes") or [])
        retries = int(properties.get("MaximumRetryAttempts", -1))
        self.max_retries = retries if retries >= 0 else 10_000  # -1: until the record expires (24 h)
        self.starting_position = str(properties.get("StartingPosition", "TRIM_HORIZON"))
        self.invoke = invoke
        self.send_failure = send_failure
        self.failure_destination = failure_destination
        self.streams = streams
        #: Before the n-th retry of a batch: ``retry_seconds * 2**(n-1)``, at most 8 s (Lambda backs off too; the
        #: runner waits 1 s first, so a dependency that is down for a few seconds does not use up the retries).
        self.retry_seconds = retry_seconds
        self.stop = stop or threading.Event()
        self.checkpoint_path = checkpoint_path
        self.checkpoints: dict[str, str] = {}  # shard id -> last sequence number done (see the module docstring)
        if checkpoint_path is not None and checkpoint_path.exists():
            self.checkpoints = {str(k): str(v) for k, v in json.loads(checkpoint_path.read_text()).items()}
        self.lock = threading.Lock()  # one batch at a time per source (Lambda: one per shard, in order)

    # ------------------------------------------------------------ reading
    def _iterator(self, shard_id: str) -> str | None:
        done = self.checkpoints.get(shard_id)
        kwargs: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id}
        if done is None:
            kwargs["ShardIteratorType"] = self.starting_position
        else:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=done)
        return self.streams.get_shard_iterator(**kwargs).get("ShardIterator")

    def _wanted(self, record: dict[str, Any]) -> bool:
        return not self.filters or any(matches(f, record) for f in self.filters)

    def pump(self) -> int:
        """Read every shard once, up to its end, and process what passes the filters; the records passed to the
        handler (retries not counted)."""
        with self.lock:
            handled = 0
            shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"].get("Shards", [])
            for shard in shards:
                shard_id = shard["ShardId"]
                while True:
                    iterator = self._iterator(shard_id)
                    if not iterator:
                        break
                    out = self.streams.get_records(ShardIterator=iterator, Limit=self.batch)
                    raw = out.get("Records", [])
                    if not raw:
                        break
                    records = [lambda_record(r, self.stream_arn) for r in raw]
                    chosen = [r for r in records if self._wanted(r)]
                    if chosen:
                        self._deliver(shard_id, chosen)
                        handled += len(chosen)
                    # the batch is done (delivered or given up): the shard moves on
                    self.checkpoints[shard_id] = raw[-1]["dynamodb"]["SequenceNumber"]
                    self._save()
            return handled

    def _save(self) -> None:
        """The checkpoints to their file, replaced whole (a crash leaves the old file or the new one)."""
        if self.checkpoint_path is None:
            return
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.checkpoint_path.with_suffix(".tmp")
        partial.write_text(json.dumps(self.checkpoints))
        os.replace(partial, self.checkpoint_path)

    # ------------------------------------------------------------ one batch
    def _deliver(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        retries = 0
        while records:
            try:
                result = self.invoke(self.function, {"Records": records})
            except Exception as exc:  # noqa: BLE001 - a function error: bisect, or retry the whole batch
                print(f"stream handler {self.function} raised {type(exc).__name__}", file=sys.stderr)
                if self.bisect and len(records) > 1:
                    half = len(records) // 2
                    self._deliver(shard_id, records[:half])
                    self._deliver(shard_id, records[half:])
                    return
                failed_from: int | None = 0
            else:
                failed_from = self._first_failed(records, result)
            if failed_from is None:
                return
            records = records[failed_from:]  # Lambda retries from the first failed record
            retries += 1
            if retries > self.max_retries:
                self._give_up(shard_id, records)
                return
            if self.retry_seconds and self.stop.wait(min(8.0, self.retry_seconds * 2 ** (retries - 1))):
                return  # the runner is stopping: the batch is not done, so no checkpoint moves past it

    def _first_failed(self, records: list[dict[str, Any]], result: Any) -> int | None:
        if not self.partial or not isinstance(result, dict):
            return None
        failures = result.get("batchItemFailures") or []
        if not failures:
            return None
        sequence = {r["dynamodb"]["SequenceNumber"]: i for i, r in enumerate(records)}
        positions = [sequence.get(str(f.get("itemIdentifier"))) for f in failures]
        if any(p is None for p in positions):  # an unknown identifier: Lambda fails the whole batch
            return 0
        return min(p for p in positions if p is not None)

    def _give_up(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        first, last = records[0]["dynamodb"], records[-1]["dynamodb"]
        failure = {
            "requestContext": {"requestId": str(uuid.uuid4()), "functionArn": self.function,
                               "condition": "RetryAttemptsExhausted", "approximateInvokeCount": self.max_retries + 1},
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0", "timestamp": _dt.datetime.now(_dt.UTC).isoformat(),
            "DDBStreamBatchInfo": {
                "shardId": shard_id, "startSequenceNumber": first["SequenceNumber"],
                "endSequenceNumber": last["SequenceNumber"],
                "approximateArrivalOfFirstRecord": first.get("ApproximateCreationDateTime"),
                "approximateArrivalOfLastRecord": last.get("ApproximateCreationDateTime"),
                "batchSize": len(records), "streamArn": self.stream_arn}}
        if self.send_failure is not None and self.failure_destination:
            self.send_failure(self.failure_destination, json.dumps(failure, default=str))
        print(f"stream batch of {self.function} given up after {self.max_retries} retries", file=sys.stderr)

    # ------------------------------------------------------------ the runner's thread
    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                handled = self.pump()
            except Exception as exc:  # noqa: BLE001 - the server is stopping, or moto hiccuped: poll again
                if stop.is_set():
                    return
                print(f"stream poll error: {type(exc).__name__}", file=sys.stderr)
                handled = 0
            if not handled:
                stop.wait(POLL_SECONDS)
