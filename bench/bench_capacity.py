"""The capacity model: which partition key, quota or concurrency caps each operation, at 2,300 and 23,000 a second.

``python -m bench.bench_capacity`` (also in ``make bench``). A workload runs through the platform's own handlers
(the local runner's ``Platform``, against a moto server in its own process, with the JSON-protocol AWS client
Lambda uses; postbacks delivered by the runner's event-source pollers to a local receiver), for this tree and
for ``PREVIOUS_COMMIT`` (the previous design, extracted with bench_lifecycle_cost's ``_previous_tree``), in the
same run. Operations, each ``ROUNDS`` times for each of two merchants (gateway accounts) and two partners, after
one unrecorded warm-up round (the containers' caches are warm: a cold container's KMS unwraps are not in the
figures; docs/operators/capacity.md models them):

* ``SALE``: keyed SALE with an Idempotency-Key and a postback URL, postback delivery included;
* ``AUTHORIZATION + CAPTURE`` (both postbacks delivered); ``REFUND`` (partial, of a SALE made before);
* ``tokenize``, ``detokenize``, ``batch detokenize`` (``BATCH_ITEMS`` items), ``proxy call`` (HMAC-signed, to a
  local target; its masked log stored by the log shipper).

Every AWS call of the platform's clients is recorded (their ``before-call`` hooks; botocore's
``before-parameter-build`` when the client is botocore's) with its parameters, and every Lambda invocation (the
runner's ``invoke``). DynamoDB capacity, by DynamoDB's rules, from the template's key schemas and indexes:

* an item's size is the sum of its attribute names' and values' lengths (strings in UTF-8, numbers about one
  byte per two significant digits plus one, binary in bytes, lists and maps 3 bytes plus 1 per element);
* a write costs ceil(max(size before, size after) / 1 KB) units, twice in a TransactWriteItems (a transaction's
  ConditionCheck too); the item before and after each write is read from the table around the call with a client
  of its own, which is not recorded;
* each GSI or LSI whose key attributes the item carries before or after costs its own units for its entry
  (projected attributes, the keys and 100 bytes): a put, a delete, or both when the entry's key changes;
* a read costs ceil(size / 4 KB) per item (a Query: of the items it reads before its filter), half when eventually
  consistent, twice in a TransactGetItems.

Each write and read is held against its partition key value (table, or table/index), reported by its *shape*:
the workload's merchant and partner ids become ``<account>`` / ``<partner>``, a shard suffix ``<shard>`` (the
shard count is the default of the template parameter whose name matches the table: ``AuditShards`` for
``AuditTable``; estimated from the values seen when none does), epoch-like numbers ``<time>``, random ids
``<id>``; no card data is printed. Then, per operation and for each rate:

* ``hottest_partition``: the key taking most units a second, and its share of the per-partition limits (1,000
  write units, 3,000 read units), for one merchant (or partner) taking the whole rate and for the rate spread
  over ``MERCHANTS`` merchants. A key constant for a merchant takes the merchant's whole rate; a key spread over
  N shards 1/N of it; a key of its own per operation (a transaction id) one operation's units; a key shared by
  all merchants the platform's whole rate; a read most operations do not make (a container's cache miss) at most
  once per container (the Lambda concurrency below) and ``RECORD_CACHE_SECONDS``;
* ``table_throughput``: the busiest table's units a second against the on-demand table-level default (40,000);
* ``kms``: KMS calls a second against the account's symmetric request quota (:data:`KMS_QUOTA`): the warm
  operations' own, and a cold container's unwraps (measured in a warm-up round run in emptied containers) at the
  rate containers miss their key cache (KEY_CACHE_SECONDS; :func:`model`);
* ``sqs_fifo`` (a design whose postback queue is SQS FIFO): the messages and send requests a second against the
  high throughput mode's requests per API action (:data:`SQS_FIFO_REQUESTS_PER_SECOND`), the requests as measured
  and as batched by ten;
* ``lambda_concurrency``: by Little's law, rate × duration per invocation, and at least rate ÷ 10 per function
  (Lambda serves at most 10 requests a second per unit of concurrency), against the account default (1,000).
  Durations are assumptions (:data:`ASSUMED_SECONDS`, as docs/operators/capacity.md states them): the local
  measurements against moto on loopback say nothing of AWS; they are printed beside them for reference;
* ``bottleneck``: the largest of these shares.

Figures only: nothing here asserts a time. tests/unit/test_capacity_keys.py runs :func:`run_workload` and
:func:`key_findings` in-process to fail on constant, LSI-bound or time-prefixed keys.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREVIOUS_COMMIT = "49c4310"  # main before the partition spread (issue 29)
ROUNDS = 6
BATCH_ITEMS = 100  # items of a batch detokenize (its figures grow linearly with the items, up to 1,000)
RATES = (2300, 23000)  # transactions a second: Stripe's BFCM 2024 peak, and ten times that
MERCHANTS = 10_000
WRITE_UNITS_PER_PARTITION = 1000  # DynamoDB: per partition, per second
READ_UNITS_PER_PARTITION = 3000
TABLE_UNITS_DEFAULT = 40_000  # on-demand table-level read and write throughput, default quota per table
# AWS KMS "Cryptographic operations (symmetric) request rate", default in us-east-1 (shared by Decrypt, Encrypt,
# GenerateDataKey... of the account and Region): 100,000 requests a second (10,000 in most Regions, 20,000 in some).
# https://docs.aws.amazon.com/kms/latest/developerguide/requests-per-second.html
KMS_QUOTA = 100_000
LAMBDA_CONCURRENCY_DEFAULT = 1000  # account concurrent executions, default quota
# Amazon SQS FIFO queues in high throughput mode (the postback queue, issue 29): API requests a second per API action
# (SendMessage / SendMessageBatch, ReceiveMessage, DeleteMessage), 70,000 in US East (N. Virginia), US West (Oregon)
# and Europe (Ireland), 19,000 in US East (Ohio) and Europe (Frankfurt), fewer elsewhere; a batch of up to 10
# messages is one request. Per message group (perMessageGroupId) 300 a second: one group per delivery, 1 to 3
# messages each. https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
SQS_FIFO_REQUESTS_PER_SECOND = 70_000
# Warm durations per invocation, assumed (docs/operators/capacity.md): an API request 50 ms (two to four DynamoDB
# round trips in the Region), a postback delivery 200 ms (it waits on the merchant's receiver).
ASSUMED_SECONDS = {"PostbackFunction": 0.2}
ASSUMED_DEFAULT_SECONDS = 0.05
OPERATIONS = ("SALE", "AUTHORIZATION + CAPTURE", "REFUND", "tokenize", "detokenize", "batch detokenize",
              "proxy call")
WAIT_SECONDS = 60.0  # at most this long for a postback to be delivered (a condition waited for, not a timing)

_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
_READS = ("GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems")


# ------------------------------------------------------------------------------------------------- recording
class Recorder:
    """Every AWS call of the platform's clients and every Lambda invocation, per labelled operation instance.

    DynamoDB items are read around each write or read with an unrecorded client of its own (``raw``), so the
    units can follow DynamoDB's size rules: the item before a write is read in the hook, the item after it is
    the next call's "before" of the same item, or read when the operation ends.
    """

    SERVICES = ("dynamodb", "kms", "sqs", "lambda")

    def __init__(self, platform: Any, raw: Any) -> None:
        self.platform = platform
        self.raw = raw
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.invocations: list[tuple[str, float]] = []
        self.inflight = 0
        self.label: tuple[str, str, int] | None = None  # (operation, entity, instance number)
        self.done: list[dict[str, Any]] = []  # finished operation instances
        self._clients: list[Any] = []
        self._invoke = platform.invoke

    # hooks ---------------------------------------------------------------------------------------------
    def __enter__(self) -> Recorder:
        from vaultcore.store.aws import client

        for service in self.SERVICES:
            try:
                c = client(service)
            except Exception:  # noqa: BLE001 - a service this tree's platform does not use
                continue
            botocore = type(c).__name__ != "JsonServiceClient"
            # botocore's before-call carries the serialized request; its API parameters are in before-parameter-build
            event = "before-parameter-build" if botocore else "before-call"
            c.meta.events.register(f"{event}.{service}", self._hook, unique_id=f"capacity-{service}")
            self._clients.append((c, f"{event}.{service}"))
        recorder = self

        def invoke(function: str, event: dict[str, Any]) -> Any:
            with recorder.lock:
                recorder.inflight += 1
            started = time.perf_counter()
            try:
                return recorder._invoke(function, event)
            finally:
                with recorder.lock:
                    recorder.inflight -= 1
                    recorder.invocations.append((function, time.perf_counter() - started))

        self.platform.invoke = invoke
        return self

    def __exit__(self, *exc: object) -> None:
        for c, event in self._clients:
            c.meta.events.unregister(event, unique_id=f"capacity-{event.split('.')[-1]}")
        self.platform.invoke = self._invoke

    def _hook(self, model: Any, params: dict[str, Any], **_kwargs: Any) -> None:
        service = model.service_model.service_name
        call: dict[str, Any] = {"service": service, "operation": model.name, "params": _plain(params)}
        if service == "dynamodb":
            call["seen"] = self._items_for(model.name, call["params"])
        with self.lock:
            self.calls.append(call)

    def _items_for(self, operation: str, p: dict[str, Any]) -> Any:
        """What the call reads or overwrites, read now: ``{(table, key json): item or None}``, or a Query's items."""
        try:
            if operation == "Query":
                return self._query_items(p)
            return {k: self._get(t, key) for t, key in _keys_of(operation, p, self._key_names) for k in [(t, _kj(key))]}
        except Exception:  # noqa: BLE001 - a table this measurement cannot read; units then count the request only
            return {}

    def _get(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return self.raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _query_items(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        """The items a Query reads (before its filter): the same key condition, page and start key."""
        args: dict[str, Any] = {k: p[k] for k in ("TableName", "IndexName", "KeyConditionExpression", "ExclusiveStartKey", "Limit",
                                  "ScanIndexForward", "ConsistentRead") if k in p}
        used = p.get("KeyConditionExpression", "")
        names = {k: v for k, v in (p.get("ExpressionAttributeNames") or {}).items() if k in used}
        values = {k: v for k, v in (p.get("ExpressionAttributeValues") or {}).items() if k in used}
        if names:
            args["ExpressionAttributeNames"] = names
        if values:
            args["ExpressionAttributeValues"] = values
        return self.raw.query(**args).get("Items", [])

    _schemas: dict[str, dict[str, Any]] = {}

    def _key_names(self, table: str) -> tuple[str, ...]:
        schema = self._schemas.get(table)
        if schema is None:
            out = self.raw.describe_table(TableName=table)["Table"]["KeySchema"]
            schema = {"names": tuple(k["AttributeName"] for k in out)}
            self._schemas[table] = schema
        return schema["names"]

    # operations ----------------------------------------------------------------------------------------
    def start(self, operation: str, entity: str, instance: int) -> None:
        with self.lock:
            self.calls = []
            self.invocations = []
            self.label = (operation, entity, instance)

    def finish(self) -> None:
        """Close the current operation instance: the items after its last writes are read now."""
        with self.lock:
            calls, invocations, label = self.calls, self.invocations, self.label
            self.calls, self.invocations, self.label = [], [], None
        assert label is not None
        final: dict[tuple[str, str], Any] = {}
        for call in calls:
            if call["service"] == "dynamodb" and call["operation"] in _WRITES:
                for table, key_json in call.get("seen") or {}:
                    if (table, key_json) not in final:
                        try:
                            final[(table, key_json)] = self._get(table, json.loads(key_json))
                        except Exception:  # noqa: BLE001 - unreadable: the write counts its request's own size
                            final[(table, key_json)] = None
        # the item after a write: the next write's "before" of the same item, else the item as it ends
        for i, call in enumerate(calls):
            if call["service"] != "dynamodb" or call["operation"] not in _WRITES:
                continue
            after: dict[str, Any] = {}
            for ident in call.get("seen") or {}:
                nxt = next((c["seen"][ident] for c in calls[i + 1:] if c["service"] == "dynamodb"
                            and c["operation"] in _WRITES and ident in (c.get("seen") or {})), None)
                later = any(c["service"] == "dynamodb" and c["operation"] in _WRITES and ident in (c.get("seen") or {})
                            for c in calls[i + 1:])
                after[ident] = nxt if later else final.get(ident)
            call["after"] = after
        self.done.append({"operation": label[0], "entity": label[1], "instance": label[2], "calls": calls,
                          "invocations": invocations})

    def wait_idle(self, condition: Callable[[], bool], timeout: float = WAIT_SECONDS) -> bool:
        """Wait until ``condition`` holds and no invocation is running (postbacks are delivered by pollers)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                idle = self.inflight == 0
            if idle and condition():
                time.sleep(0.05)  # a poller may be between its receive and its invoke: look again
                with self.lock:
                    if self.inflight == 0 and condition():
                        return True
            time.sleep(0.02)
        return False


def _plain(value: Any) -> Any:
    """A copy of the API parameters (bytes kept as bytes, containers copied)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_plain(v) for v in value]
    return value


def _kj(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, default=lambda b: base64.b64encode(b).decode())


def _key_of_item(item: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {n: item[n] for n in names if n in item}


def _keys_of(operation: str, p: dict[str, Any], key_names: Callable[[str], tuple[str, ...]]) -> list[tuple[str, dict]]:
    """(table, key) of every item a call writes or reads by key."""
    out: list[tuple[str, dict]] = []
    if operation in ("PutItem",):
        out.append((p["TableName"], _key_of_item(p["Item"], key_names(p["TableName"]))))
    elif operation in ("UpdateItem", "DeleteItem", "GetItem"):
        out.append((p["TableName"], p["Key"]))
    elif operation == "BatchWriteItem":
        for table, requests in (p.get("RequestItems") or {}).items():
            for r in requests:
                if "PutRequest" in r:
                    out.append((table, _key_of_item(r["PutRequest"]["Item"], key_names(table))))
                elif "DeleteRequest" in r:
                    out.append((table, r["DeleteRequest"]["Key"]))
    elif operation == "BatchGetItem":
        for table, spec in (p.get("RequestItems") or {}).items():
            out.extend((table, k) for k in spec.get("Keys", []))
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        for entry in p.get("TransactItems", []):
            (kind, spec), = entry.items()
            key = spec.get("Key") or _key_of_item(spec.get("Item") or {}, key_names(spec["TableName"]))
            out.append((spec["TableName"], key))
    return out


# ------------------------------------------------------------------------------------------------- sizes
def attribute_size(value: dict[str, Any]) -> int:
    """DynamoDB's size of one typed attribute value (docs: "Item sizes and formats")."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        digits = v.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(v) if isinstance(v, (bytes, bytearray)) else len(base64.b64decode(v))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(attribute_size({"N": n}) for n in v)
    if kind == "BS":
        return sum(len(b) if isinstance(b, (bytes, bytearray)) else len(base64.b64decode(b)) for b in v)
    if kind == "L":
        return 3 + sum(1 + attribute_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + attribute_size(e) for k, e in v.items())
    return 0


def item_size(item: dict[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(k.encode("utf-8")) + attribute_size(v) for k, v in item.items())


def _units(size: int, per_unit: int) -> int:
    return max(1, math.ceil(size / per_unit))


# ------------------------------------------------------------------------------------------------- template
def table_schemas(resources: dict[str, Any], refs: dict[str, str], parameters: dict[str, Any]) -> dict[str, dict]:
    """Physical table name -> its logical name, key attributes, indexes and shard count (template defaults)."""
    shard_params = {name: int(spec.get("Default", 0)) for name, spec in parameters.items()
                    if name.endswith("Shards") and str(spec.get("Default", "")).isdigit()}
    schemas = {}
    for logical, res in resources.items():
        if res.get("Type") != "AWS::DynamoDB::Table":
            continue
        props = res["Properties"]
        key = {k["KeyType"]: k["AttributeName"] for k in props["KeySchema"]}
        indexes = {}
        for kind, field in (("GSI", "GlobalSecondaryIndexes"), ("LSI", "LocalSecondaryIndexes")):
            for index in props.get(field) or []:
                ikey = {k["KeyType"]: k["AttributeName"] for k in index["KeySchema"]}
                indexes[index["IndexName"]] = {"type": kind, "hash": ikey["HASH"], "range": ikey.get("RANGE"),
                                               "projection": index.get("Projection") or {"ProjectionType": "ALL"}}
        stem = _stem(logical[:-5] if logical.endswith("Table") else logical)
        shards = next((n for p, n in shard_params.items() if stem.startswith(_stem(p[:-6])) and _stem(p[:-6])), None)
        schemas[refs.get(logical, logical)] = {"logical": logical, "hash": key["HASH"], "range": key.get("RANGE"),
                                                "indexes": indexes, "shards": shards}
    return schemas


def _stem(name: str) -> str:
    """``ProxyLogs`` and ``ProxyLog``, ``Deliveries`` and ``Delivery`` alike: lower case, each word's plural
    dropped."""
    words = re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", name)
    return "".join(w.lower()[:-3] + "y" if w.lower().endswith("ies") else w.lower().rstrip("s") for w in words)


def _index_entry_size(item: dict[str, Any], table: dict, index: dict) -> int:
    projection = index["projection"]
    keys = {a for a in (table["hash"], table["range"], index["hash"], index["range"]) if a}
    if projection.get("ProjectionType") == "ALL":
        projected = item
    else:
        wanted = keys | set(projection.get("NonKeyAttributes") or [])
        projected = {k: v for k, v in item.items() if k in wanted}
    return item_size(projected) + 100


# ------------------------------------------------------------------------------------------------- touches
def touches(call: dict[str, Any], schemas: dict[str, dict]) -> list[dict[str, Any]]:
    """The partition keys a DynamoDB call writes or reads, with their units: ``{kind, table, index, key, units}``."""
    op, p = call["operation"], call["params"]
    out: list[dict[str, Any]] = []
    seen = call.get("seen") or {}
    after = call.get("after") or {}

    def pk(table: str, item_or_key: dict[str, Any], attr: str) -> str | None:
        value = item_or_key.get(attr)
        if value is None:
            return None
        (_kind, v), = value.items()
        return v if isinstance(v, str) else str(v)

    def write(table: str, key: dict[str, Any], request_item: dict[str, Any] | None, factor: int) -> None:
        schema = schemas.get(table)
        ident = (table, _kj(key))
        before: dict[str, Any] = seen.get(ident) or {}
        now: dict[str, Any] = after.get(ident, request_item) or {}
        size = max(item_size(before), item_size(now), item_size(request_item) if not now else 0)
        name = schema["logical"] if schema else table
        out.append({"kind": "write", "table": name, "index": None, "key": pk(table, key, schema["hash"] if schema else
                    next(iter(key))), "units": factor * _units(size, 1024)})
        if not schema:
            return
        for iname, index in schema["indexes"].items():
            attrs = [a for a in (index["hash"], index["range"]) if a]
            b_in = bool(before) and all(a in before for a in attrs)
            a_in = bool(now) and all(a in now for a in attrs)
            same_key = b_in and a_in and all(before[a] == now[a] for a in attrs)
            entries = []
            if same_key:
                if before != now:
                    entries.append((now, max(_index_entry_size(before, schema, index),
                                             _index_entry_size(now, schema, index))))
            else:
                if b_in:
                    entries.append((before, _index_entry_size(before, schema, index)))
                if a_in:
                    entries.append((now, _index_entry_size(now, schema, index)))
            for item, isize in entries:
                out.append({"kind": "write", "table": name, "index": f"{iname} ({index['type']})",
                            "key": pk(table, item, index["hash"]), "units": _units(isize, 1024)})

    def read(table: str, key: dict[str, Any], size: int, consistent: bool, factor: float, index: str | None = None,
             key_value: str | None = None) -> None:
        schema = schemas.get(table)
        name = schema["logical"] if schema else table
        units = factor * _units(size, 4096) * (1 if consistent else 0.5)
        out.append({"kind": "read", "table": name, "index": index, "units": units,
                    "key": key_value if key_value is not None else pk(table, key, schema["hash"] if schema else "")})

    if op == "PutItem":
        schema = schemas.get(p["TableName"], {"hash": next(iter(p["Item"])), "range": None})
        names = tuple(a for a in (schema["hash"], schema.get("range")) if a)
        write(p["TableName"], _key_of_item(p["Item"], names), p["Item"], 1)
    elif op in ("UpdateItem", "DeleteItem"):
        write(p["TableName"], p["Key"], None, 1)
    elif op == "BatchWriteItem":
        for table, requests in (p.get("RequestItems") or {}).items():
            schema = schemas.get(table, {"hash": "", "range": None})
            names = tuple(a for a in (schema["hash"], schema.get("range")) if a)
            for r in requests:
                if "PutRequest" in r:
                    write(table, _key_of_item(r["PutRequest"]["Item"], names), r["PutRequest"]["Item"], 1)
                else:
                    write(table, r["DeleteRequest"]["Key"], None, 1)
    elif op == "TransactWriteItems":
        for entry in p.get("TransactItems", []):
            (kind, spec), = entry.items()
            table = spec["TableName"]
            schema = schemas.get(table, {"hash": "", "range": None})
            names = tuple(a for a in (schema["hash"], schema.get("range")) if a)
            key = spec.get("Key") or _key_of_item(spec.get("Item") or {}, names)
            if kind == "ConditionCheck":
                size = item_size(seen.get((table, _kj(key))))
                out.append({"kind": "write", "table": schemas[table]["logical"] if table in schemas else table,
                            "index": None, "key": pk(table, key, schema["hash"]), "units": 2 * _units(size, 1024)})
            else:
                write(table, key, spec.get("Item"), 2)
    elif op == "GetItem":
        ident = (p["TableName"], _kj(p["Key"]))
        read(p["TableName"], p["Key"], item_size(seen.get(ident)), bool(p.get("ConsistentRead")), 1)
    elif op == "BatchGetItem":
        for table, spec in (p.get("RequestItems") or {}).items():
            for key in spec.get("Keys", []):
                read(table, key, item_size(seen.get((table, _kj(key)))), bool(spec.get("ConsistentRead")), 1)
    elif op == "TransactGetItems":
        for entry in p.get("TransactItems", []):
            spec = entry["Get"]
            read(spec["TableName"], spec["Key"], item_size(seen.get((spec["TableName"], _kj(spec["Key"])))), True, 2)
    elif op == "Query":
        table = p["TableName"]
        schema = schemas.get(table) or {}
        index = p.get("IndexName")
        attr = (schema["indexes"][index]["hash"] if index and schema and index in schema["indexes"]
                else schema["hash"] if schema else None)
        key_value = _key_condition_value(p, attr)
        items = seen if isinstance(seen, list) else []
        label = f"{index} ({schema['indexes'][index]['type']})" if index and schema and index in schema["indexes"] else index
        read(table, {}, sum(item_size(i) for i in items), bool(p.get("ConsistentRead")), 1, label, key_value)
    elif op == "Scan":
        table = p["TableName"]
        out.append({"kind": "read", "table": schemas[table]["logical"] if table in schemas else table,
                    "index": p.get("IndexName"), "key": "<scan: every partition>", "units": 0.5})
    return out


def _key_condition_value(p: dict[str, Any], attr: str | None) -> str | None:
    """The partition key value of a Query (``#n = :v`` or ``name = :v`` in its key condition)."""
    names = p.get("ExpressionAttributeNames") or {}
    values = p.get("ExpressionAttributeValues") or {}
    for left, right in re.findall(r"([#\w]+)\s*=\s*(:\w+)", p.get("KeyConditionExpression", "")):
        if names.get(left, left) == attr and right in values:
            (_kind, v), = values[right].items()
            return str(v)
    return None


# ------------------------------------------------------------------------------------------------- shapes
_SEPARATORS = re.compile(r"([#@:|/])")


def key_shape(value: str | None, entities: dict[str, str], shards: int | None) -> str:
    """A partition key value's shape: entity ids named, a trailing ``#<small number>`` a ``<shard>`` (below 1,000,
    or below the table's shard count), epoch-like numbers ``<time>``, random-looking tokens ``<id>``; words and
    constants kept (a whole key ``"1"`` stays ``1``)."""
    if value is None:
        return "<none>"
    for raw, name in sorted(entities.items(), key=lambda kv: -len(kv[0])):
        value = value.replace(raw, f"\x00{name}\x00")
    parts = [p for p in _SEPARATORS.split(value) if p != ""]
    shaped = []
    for i, part in enumerate(parts):
        if "\x00" in part:
            shaped.append(part.replace("\x00", ""))
        elif _SEPARATORS.fullmatch(part):
            shaped.append(part)
        elif part.isdigit() and len(part) in (10, 13) and _epoch_like(int(part)):
            shaped.append("<time>")
        elif part.isdigit() and i == len(parts) - 1 and i > 1 and parts[i - 1] == "#" and int(part) < max(shards or 0, 1000):
            shaped.append("<shard>")
        elif part.isdigit() and len(part) >= 5:
            shaped.append("<n>")
        elif len(part) >= 8 and not part.isalpha():
            shaped.append("<id>")
        elif len(part) >= 16:
            shaped.append("<id>")
        else:
            shaped.append(part)
    return "".join(shaped)


def _epoch_like(n: int) -> bool:
    now = time.time()
    return abs(n - now) < 5 * 365 * 86400 or abs(n / 1000 - now) < 5 * 365 * 86400


def time_prefixed(value: str | None) -> bool:
    """Whether a key value begins with an epoch-like number (seconds or milliseconds)."""
    m = re.match(r"(\d{10}|\d{13})(?!\d)", value or "")
    return m is not None and _epoch_like(int(m.group(1)))


# ------------------------------------------------------------------------------------------------- model
def key_loads(instances: list[dict[str, Any]], schemas: dict[str, dict], entities: dict[str, str]) -> list[dict]:
    """Per (kind, table/index, shape): units per operation, and how they concentrate on one key value.

    ``per_entity``: the share of one merchant's (partner's) units of this shape that land on its busiest value;
    ``shared``: whether one value is written for different merchants (a key shared by the platform);
    ``own_key``: every value is touched by one operation instance only (a key of its own per operation).
    """
    groups: dict[tuple[str, str, str | None, str], dict[str, Any]] = {}
    for inst in instances:
        for call in inst["calls"]:
            if call["service"] != "dynamodb":
                continue
            for t in touches(call, schemas):
                schema = next((s for s in schemas.values() if s["logical"] == t["table"]), None)
                shards = schema["shards"] if schema else None
                shape = key_shape(t["key"], entities, shards)
                g = groups.setdefault((t["kind"], t["table"], t["index"], shape), {
                    "units": 0.0, "by_value": defaultdict(float), "value_entities": defaultdict(set),
                    "value_instances": defaultdict(set), "entity_units": defaultdict(float), "shards": shards,
                    "time_prefixed": False})
                g["units"] += t["units"]
                g["by_value"][(inst["entity"], t["key"])] += t["units"]
                g["value_entities"][t["key"]].add(inst["entity"])
                g["value_instances"][t["key"]].add((inst["entity"], inst["instance"]))
                g.setdefault("touched", set()).add((inst["entity"], inst["instance"]))
                g["entity_units"][inst["entity"]] += t["units"]
                g["time_prefixed"] = g["time_prefixed"] or time_prefixed(t["key"])
    n = max(1, len(instances))
    out = []
    for (kind, table, index, shape), g in groups.items():
        per_entity = max((u / g["entity_units"][e] for (e, _v), u in g["by_value"].items() if g["entity_units"][e]),
                         default=1.0)
        spread = g["shards"] if "<shard>" in shape else None
        estimated = spread is None and "<shard>" in shape
        if estimated:  # no template parameter names this table's shards: at least the highest shard seen, plus one
            spread = 1 + max(int(v.rsplit("#", 1)[1]) for v in g["value_entities"] if v and v.rsplit("#", 1)[-1].isdigit())
        out.append({"kind": kind, "table": table, "index": index, "shape": shape, "units_per_op": g["units"] / n,
                    "touch_fraction": len(g["touched"]) / n,
                    "shared": any(len(es) > 1 for es in g["value_entities"].values()),
                    # a key of its own per operation: no value touched twice, and a per-operation part in the
                    # shape (a key named only after its merchant, read once here, is still the merchant's key)
                    "own_key": all(len(i) == 1 for i in g["value_instances"].values())
                    and any(part in shape for part in ("<id>", "<time>", "<n>")),
                    "per_entity": per_entity, "shards": spread, "shards_estimated": estimated,
                    "time_prefixed": g["time_prefixed"],
                    "entity_bound": "<account>" in shape or "<partner>" in shape})
    return out


def _key_rate(load: dict[str, Any], rate: float, merchants: int) -> float:
    """Units a second on the busiest value of this key shape at ``rate`` operations a second over ``merchants``."""
    u = load["units_per_op"]
    ops = rate if load["shared"] else rate / merchants  # a key shared by every merchant takes the whole rate
    if load["shards"]:
        return ops * u / load["shards"]
    if load["own_key"] and not load["shared"]:
        return u  # a key of its own per operation: one operation's units, whatever the rate
    return ops * u * (1.0 if load["shared"] else load["per_entity"])


def _describe(load: dict[str, Any]) -> str:
    if _occasional(load):
        return "a cache miss: at most once per container and RECORD_CACHE_SECONDS for a key"
    where = "shared by every merchant" if load["shared"] else (
        "one per operation" if load["own_key"] and not load["shards"] else "one per merchant or partner")
    return f"{where}, spread over {load['shards']} shards" if load["shards"] else where


def _occasional(load: dict[str, Any]) -> bool:
    """A read most operations do not make: a container's cache miss (records are cached RECORD_CACHE_SECONDS)."""
    return load["kind"] == "read" and load["touch_fraction"] < 0.5 and not load["shards"] and not (
        load["own_key"] and not load["shared"])


def model(instances: list[dict[str, Any]], schemas: dict[str, dict], entities: dict[str, str],
          cache_seconds: float = 60.0, key_cache_seconds: float = 300.0) -> dict[str, Any]:
    """Per operation: AWS calls, units, and each limit's share at each rate (one merchant, ``MERCHANTS``).

    The figures are of warm operations (instances flagged ``warmup``, run in emptied containers, give only the
    KMS calls of a cold container). The containers are the Lambda concurrency the operation needs at that rate.

    * A read most operations do not make is a container's cache miss: its rate follows the containers, not the
      operations. At most one such read per container and ``cache_seconds`` (RECORD_CACHE_SECONDS) for a key.
    * KMS: a container unwraps a merchant's keys (the cold operation's KMS calls, ``k``) when it has not served
      that merchant for ``key_cache_seconds`` (KEY_CACHE_SECONDS), and at least once per that time: the larger
      of rate · k · e^(−λ·T/N) (λ a container's requests a second, N the merchants, as
      docs/operators/capacity.md) and containers · k / T, plus the warm operations' own KMS calls."""
    by_op: dict[str, list[dict]] = defaultdict(list)
    cold: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        (cold if inst.get("warmup") else by_op)[inst["operation"]].append(inst)
    result: dict[str, Any] = {}
    for op, insts in by_op.items():
        n = len(insts)
        calls: dict[str, float] = defaultdict(float)
        invocations: dict[str, float] = defaultdict(float)
        durations: dict[str, list[float]] = defaultdict(list)
        for inst in insts:
            for c in inst["calls"]:
                calls[f"{c['service']}.{c['operation']}"] += 1 / n
            for fn, seconds in inst["invocations"]:
                invocations[fn] += 1 / n
                durations[fn].append(seconds)
        loads = key_loads(insts, schemas, entities)
        writes = sum(x["units_per_op"] for x in loads if x["kind"] == "write")
        reads = sum(x["units_per_op"] for x in loads if x["kind"] == "read")
        per_table: dict[tuple[str, str], float] = defaultdict(float)
        for x in loads:
            per_table[(x["kind"], x["table"])] += x["units_per_op"]
        kms = sum(v for k, v in calls.items() if k.startswith("kms."))
        # the messages sent to an SQS FIFO queue (their calls carry a MessageGroupId) and the send requests
        fifo_messages = fifo_requests = 0.0
        for inst in insts:
            for c in inst["calls"]:
                if c["service"] != "sqs" or c["operation"] not in ("SendMessage", "SendMessageBatch"):
                    continue
                entries = c["params"].get("Entries") if c["operation"] == "SendMessageBatch" else [c["params"]]
                grouped = [e for e in entries or [] if isinstance(e, dict) and e.get("MessageGroupId")]
                if grouped:
                    fifo_messages += len(grouped) / n
                    fifo_requests += 1 / n
        cold_kms = (sum(1 for i in cold[op] for c in i["calls"] if c["service"] == "kms") / len(cold[op])
                    if cold[op] else 0.0)
        entry: dict[str, Any] = {
            "kms_calls_cold_container": round(cold_kms, 2),
            "aws_calls": {k: round(v, 2) for k, v in sorted(calls.items())},
            "lambda_invocations": {k: round(v, 2) for k, v in sorted(invocations.items())},
            "local_ms_per_invocation": {k: round(1000 * sum(v) / len(v), 1) for k, v in sorted(durations.items())},
            "write_units": round(writes, 2), "read_units": round(reads, 2),
            "keys": sorted(({"kind": x["kind"], "table": x["table"] + (f"/{x['index']}" if x["index"] else ""),
                             "shape": x["shape"], "units_per_op": round(x["units_per_op"], 2),
                             **({"shards": x["shards"]} if x["shards"] else {}),
                             **({"shards_estimated_from_values_seen": True} if x["shards_estimated"] else {}),
                             "key": _describe(x)}
                            for x in loads), key=lambda k: (k["kind"], -k["units_per_op"])),
            "rates": {}}
        for rate in RATES:
            scenarios = {}
            for label, merchants in (("one_merchant", 1), (f"{MERCHANTS}_merchants", MERCHANTS)):
                shares = {}
                hottest = None
                concurrency = sum(max(rate * k * ASSUMED_SECONDS.get(fn, ASSUMED_DEFAULT_SECONDS), rate * k / 10)
                                  for fn, k in invocations.items())
                for x in loads:
                    limit = WRITE_UNITS_PER_PARTITION if x["kind"] == "write" else READ_UNITS_PER_PARTITION
                    if _occasional(x):
                        merchant_ops = rate if x["shared"] else rate / merchants
                        misses = min(concurrency, merchant_ops * cache_seconds) / cache_seconds
                        per_second = misses * x["units_per_op"] / x["touch_fraction"]
                    else:
                        per_second = _key_rate(x, rate, merchants)
                    share = per_second / limit
                    if hottest is None or share > hottest["share"]:
                        hottest = {"kind": x["kind"], "table": x["table"] + (f"/{x['index']}" if x["index"] else ""),
                                   "shape": x["shape"], "units_per_second": round(per_second, 1),
                                   "share": round(share, 4)}
                if hottest:
                    shares["partition " + f"{hottest['table']} {hottest['shape']}"] = hottest["share"]
                busiest = max(per_table.items(), key=lambda kv: kv[1], default=(("write", "-"), 0.0))
                table_share = busiest[1] * rate / TABLE_UNITS_DEFAULT
                shares[f"table throughput {busiest[0][1]} ({busiest[0][0]})"] = round(table_share, 4)
                requests = rate * sum(invocations.values())
                per_container = requests / concurrency if concurrency else 0.0
                key_misses = max(rate * math.exp(-per_container * key_cache_seconds / merchants),
                                 concurrency / key_cache_seconds)
                kms_per_second = kms * rate + cold_kms * key_misses
                kms_share = kms_per_second / KMS_QUOTA
                shares["kms request rate"] = round(kms_share, 4)
                shares["lambda concurrency"] = round(concurrency / LAMBDA_CONCURRENCY_DEFAULT, 4)
                fifo = None
                if fifo_requests:
                    # the send requests as measured (one stream record per batch at the bench's rate: the most
                    # requests a message can cost; under load a relay batch carries up to 10), against the quota
                    fifo_share = rate * fifo_requests / SQS_FIFO_REQUESTS_PER_SECOND
                    fifo = {"messages_per_second": round(rate * fifo_messages, 1),
                            "send_requests_per_second": round(rate * fifo_requests, 1),
                            "send_requests_batched_per_second": round(rate * fifo_messages / 10, 1),
                            "quota_requests_per_second": SQS_FIFO_REQUESTS_PER_SECOND,
                            "share": round(fifo_share, 4)}
                    shares["sqs fifo send requests"] = round(fifo_share, 4)
                bottleneck = max(shares.items(), key=lambda kv: kv[1])
                scenarios[label] = {"hottest_partition": hottest,
                                    "table_throughput": {"table": busiest[0][1], "kind": busiest[0][0],
                                                         "units_per_second": round(busiest[1] * rate, 1),
                                                         "share_of_40000": round(table_share, 4)},
                                    "kms": {"calls_per_second": round(kms_per_second, 1), "quota": KMS_QUOTA,
                                            "share": round(kms_share, 4)},
                                    "lambda_concurrency": {"needed": round(concurrency, 1),
                                                           "account_default": LAMBDA_CONCURRENCY_DEFAULT,
                                                           "share": round(concurrency / LAMBDA_CONCURRENCY_DEFAULT, 4)},
                                    **({"sqs_fifo": fifo} if fifo else {}),
                                    "bottleneck": {"limit": bottleneck[0], "share": bottleneck[1]}}
            entry["rates"][str(rate)] = scenarios
        result[op] = entry
    return result


# ------------------------------------------------------------------------------------------------- hygiene
def key_findings(instances: list[dict[str, Any]], schemas: dict[str, dict], entities: dict[str, str],
                 resources: dict[str, Any]) -> dict[tuple[str, str, str], list[str]]:
    """What the key-hygiene test fails on: ``{(rule, table[/index], key shape): [operations]}``.

    * ``constant key``: a write whose partition key value (of the table, or of an index the item enters) is the
      same for two different merchants or partners;
    * ``per-merchant key``: a write whose partition key value is the same for every operation of one merchant or
      partner, not spread over shards (that merchant's whole rate on one partition);
    * ``time-prefixed key``: a write whose partition key begins with a timestamp, not spread;
    * ``LSI``: a table with a local secondary index (its item collections cannot be split and stop at 10 GB).
    """
    found: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for logical, res in sorted(resources.items()):
        if res.get("Type") == "AWS::DynamoDB::Table":
            for index in res["Properties"].get("LocalSecondaryIndexes") or []:
                found[("LSI", f"{logical}/{index['IndexName']}", "")].append("template")
    by_op: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        if not inst.get("warmup"):
            by_op[inst["operation"]].append(inst)
    for op, insts in sorted(by_op.items()):
        for x in key_loads(insts, schemas, entities):
            if x["kind"] != "write" or x["shards"]:
                continue
            where = x["table"] + (f"/{x['index']}" if x["index"] else "")
            if x["shared"]:
                found[("constant key", where, x["shape"])].append(op)
            elif not x["own_key"]:  # one value for every operation of a merchant, whatever its shape
                found[("per-merchant key", where, x["shape"])].append(op)
            if x["time_prefixed"]:
                found[("time-prefixed key", where, x["shape"])].append(op)
    return dict(found)


# ------------------------------------------------------------------------------------------------- workload
def _luhn(prefix: str) -> str:
    digits = [int(d) for d in prefix]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return prefix + str((10 - total % 10) % 10)


class Workload:
    """Two merchants (gateway accounts with a postback URL) and two partners (HMAC, a token template, the
    detokenize permission, a proxy configuration), and the operations of :data:`OPERATIONS` on them."""

    FIELDS = [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
              {"name": "vault_token_card_expiration", "type": "date", "format": "NONE", "minLength": 4,
               "maxLength": 4}]

    def __init__(self, platform: Any, receiver_url: str, target_url: str) -> None:
        from tests.helpers import admin

        self.platform = platform
        self.accounts: list[dict[str, Any]] = []
        self.partners: list[dict[str, Any]] = []
        self.configs: list[str] = []
        self.counter = iter(range(10**9))
        for _ in range(2):
            status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Capacity", "apiSecurity": "hmac"})
            assert status == 201, p
            pid = p["partnerId"]
            status, t = admin(platform, "POST", f"/admin/v1/partners/{pid}/templates",
                              {"templateRef": "CARDS", "fields": self.FIELDS, "accessMode": "detokenize"})
            assert status == 201, t
            status, out = admin(platform, "PUT", f"/admin/v1/partners/{pid}/permissions", {"detokenize": True})
            assert status == 200, out
            status, cfg = admin(platform, "POST", f"/admin/v1/partners/{pid}/proxy-configurations", {
                "proxy": {"authorization": {"type": "passthrough", "headerName": "X-Key"}, "method": "post",
                          "target": target_url + "/echo"}, "actions": []})
            assert status == 201, cfg
            self.partners.append(p)
            self.configs.append(cfg["configReferenceID"])
            status, account = admin(platform, "POST", "/admin/v1/accounts",
                                    {"partnerId": pid, "options": {}, "postback_url": receiver_url + "/hook"})
            assert status == 201, account
            self.accounts.append(account)

    @property
    def entities(self) -> dict[str, str]:
        names = {a["account_id"]: "<account>" for a in self.accounts}
        names.update({p["partnerId"]: "<partner>" for p in self.partners})
        return names

    def card(self, who: int) -> str:
        return _luhn(f"42424{who}{next(self.counter):09d}")

    def gateway(self, who: int, **variables: Any) -> dict[str, Any]:
        from tests.helpers import api_event

        account = self.accounts[who]
        event = api_event("POST", "/api/qsapi/3.8", {"account_id": account["account_id"],
                                                     "api_accesskey": account["api_accesskey"], **variables},
                          {"Idempotency-Key": f"capacity-{next(self.counter)}"})
        out = self.platform.invoke("GatewayFunction", event)
        body = json.loads(out["body"])
        assert out["statusCode"] == 200 and body.get("transaction_approved") is not False, body
        return body

    def keyed(self, who: int, kind: str, amount: str) -> dict[str, Any]:
        return self.gateway(who, transaction_type=kind, transaction_amount=amount, tender_type="CARD",
                            card_number=self.card(who), card_expiration="1230")

    def secure(self, who: int, function: str, path: str, body: Any, **kw: Any) -> Any:
        from tests.helpers import call
        from vaultcore.auth.hmac_scheme import build_hmac_header

        partner = self.partners[who]
        raw = json.dumps(body).encode()
        auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, raw)
        status, _, out = call(self.platform, function, "POST", path, raw, {"Authorization": auth,
                                                                           **kw.pop("headers", {})}, **kw)
        assert status == 200, out
        return out

    def tokenize(self, who: int) -> dict[str, Any]:
        return self.secure(who, "TokenizeFunction", "/api/tokenization/tokenize", {
            "reference": "r", "templateRef": "CARDS", "values": [
                {"name": "vault_token_card_number", "value": self.card(who)},
                {"name": "vault_token_card_expiration", "value": "1229"}]})

    def proxy(self, who: int) -> Any:
        partner, ref = self.partners[who], self.configs[who]
        path = f"/api/v1/partners/{partner['partnerId']}/configurations/{ref}"
        return self.secure(who, "ProxyFunction", path, {"n": next(self.counter)}, headers={"X-Key": "k"},
                           path_params={"partnerID": partner["partnerId"], "configReferenceID": ref},
                           resource="/api/v1/partners/{partnerID}/configurations/{configReferenceID}")


def run_workload(platform: Any, rounds: int, batch_items: int = BATCH_ITEMS,
                 operations: tuple[str, ...] = OPERATIONS) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Run the operations ``rounds`` times per merchant and partner (after one unrecorded round), with the
    platform's pollers delivering postbacks; the recorded operation instances and the entity names."""
    import boto3

    from tests.postback_receiver import Receiver
    from tests.proxy_target import Target

    receiver = Receiver()
    raw = boto3.client("dynamodb", region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    try:
        with Target() as target:
            work = Workload(platform, receiver.url, target.url)
            # The event sources (queues, and streams where the runner has them) deliver as Lambda does; the
            # schedules (once-a-minute sweepers) are left out: their work is not per operation.
            platform.schedules = []
            platform.start_pollers()
            recorder = Recorder(platform, raw)
            with recorder:
                # round 0: each operation in emptied containers (a cold container's KMS calls); then a round that
                # only warms the caches again; then the measured rounds
                for n, mode in [(0, "cold"), (0, "warm")] + [(n, "measure") for n in range(1, rounds + 1)]:
                    for who in (0, 1):
                        _round(work, recorder, receiver, who, n, batch_items, operations, mode)
            return recorder.done, work.entities
    finally:
        platform.stop()
        receiver.close()


def _round(work: Workload, recorder: Recorder, receiver: Any, who: int, n: int, batch_items: int,
           operations: tuple[str, ...], mode: str) -> None:
    entity = f"{who}"

    def measured(operation: str, run: Callable[[], Any], postbacks: int = 0) -> Any:
        if operation not in operations:
            return None
        expected = receiver.count("/hook") + postbacks
        if mode == "cold":
            # Each operation in containers whose caches are empty: its KMS calls then are a cold container's (for
            # the model of cache misses); the figures are of the measured rounds.
            from vaultcore.cache import reset_container_caches

            reset_container_caches()
        if mode != "warm":
            recorder.start(operation, entity, n)
        out = run()
        delivered = recorder.wait_idle(lambda: receiver.count("/hook") >= expected)
        if mode != "warm":
            recorder.finish()
            recorder.done[-1]["postbacks_delivered"] = delivered
            recorder.done[-1]["warmup"] = mode == "cold"
        return out

    measured("SALE", lambda: work.keyed(who, "SALE", "10.00"), postbacks=1)

    def auth_capture() -> None:
        auth = work.keyed(who, "AUTHORIZATION", "20.00")
        work.gateway(who, transaction_type="CAPTURE", token_id=auth["transaction_id"], transaction_amount="20.00")

    measured("AUTHORIZATION + CAPTURE", auth_capture, postbacks=2)
    if "REFUND" in operations:
        before = receiver.count("/hook")
        sale = work.keyed(who, "SALE", "12.00")
        recorder.wait_idle(lambda: receiver.count("/hook") > before)  # its postback is not the REFUND's
        measured("REFUND", lambda: work.gateway(who, transaction_type="REFUND", token_id=sale["transaction_id"],
                                                transaction_amount="5.00"), postbacks=1)
    measured("tokenize", lambda: work.tokenize(who))
    if "detokenize" in operations:
        token = work.tokenize(who)
        values = [v for v in token["values"] if v["name"] == "vault_token_card_number"]
        measured("detokenize", lambda: work.secure(who, "TokenizeFunction", "/api/tokenization/detokenize",
                                                   {"bfid": token["bfid"], "values": values}))
    if "batch detokenize" in operations:
        items = []
        for i in range(batch_items):
            token = work.tokenize(who)
            items.append({"reference": f"i-{i}", "bfid": token["bfid"],
                          "values": [v for v in token["values"] if v["name"] == "vault_token_card_number"]})
        measured("batch detokenize", lambda: work.secure(who, "TokenizeFunction", "/api/tokenization/batch/detokenize",
                                                         {"items": items}))
    measured("proxy call", lambda: work.proxy(who))


# ------------------------------------------------------------------------------------------------- processes
def measure(layer: str, endpoint: str) -> dict[str, Any]:
    """Runs in a fresh interpreter (``--measure <layer> <endpoint>``): this tree's or the previous tree's layer
    and template, against the moto server at ``endpoint``; the model's figures."""
    # the measured tree's copy (bench_lifecycle_cost._child puts that tree on PYTHONPATH)
    from bench.bench_lifecycle_cost import start_platform

    platform = start_platform(layer, endpoint)
    import io
    from contextlib import redirect_stdout

    with redirect_stdout(io.StringIO()):  # the proxy's structured log lines: not this bench's output
        instances, entities = run_workload(platform, ROUNDS)
    schemas = table_schemas(platform.resources, platform.refs, platform.template.get("Parameters") or {})
    variables = ((platform.template.get("Globals") or {}).get("Function") or {}).get("Environment", {}).get("Variables", {})
    cache_seconds = float(variables.get("RECORD_CACHE_SECONDS", 60))
    key_cache_seconds = float(variables.get("KEY_CACHE_SECONDS", 300))
    undelivered = sum(1 for i in instances if not i.get("postbacks_delivered", True) and not i.get("warmup"))
    return {"operations": model(instances, schemas, entities, cache_seconds, key_cache_seconds),
            "shards_from_template": {s["logical"]: s["shards"] for s in schemas.values() if s["shards"]},
            "lsi": sorted(f"{s['logical']}/{n}" for s in schemas.values() for n, i in s["indexes"].items()
                          if i["type"] == "LSI"),
            "postbacks_not_delivered_in_time": undelivered}


def _summary(operations: dict[str, Any]) -> dict[str, Any]:
    """Per rate and scenario: the operation whose bottleneck is the tightest, and that bottleneck."""
    out: dict[str, Any] = {}
    for rate in RATES:
        for label in ("one_merchant", f"{MERCHANTS}_merchants"):
            worst = max(operations.items(), key=lambda kv: kv[1]["rates"][str(rate)][label]["bottleneck"]["share"])
            out[f"{rate}/s {label}"] = {"operation": worst[0], **worst[1]["rates"][str(rate)][label]["bottleneck"]}
    return out


def main() -> dict:
    from bench.bench_lifecycle_cost import _child, _previous_tree
    from bench.common import ROOT
    from tests.faults.moto_server import MotoProcess

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as tmp:
        previous = _previous_tree(Path(tmp), PREVIOUS_COMMIT, ("tests/postback_receiver.py", "tests/proxy_target.py",
                                                               "bench/bench_lifecycle_cost.py"))
        for name, layer in (("now", ROOT / "layers" / "shared" / "python"), ("previous", previous)):
            server = MotoProcess()
            try:
                figures[name] = _child(layer, server.url, __file__)
            finally:
                server.stop()
    for tree in figures.values():
        tree["bottlenecks"] = _summary(tree["operations"])
    result = {"bench_capacity": figures, "previous_commit": PREVIOUS_COMMIT, "rounds": ROUNDS,
              "batch_items": BATCH_ITEMS, "rates": list(RATES), "merchants": MERCHANTS,
              "assumed_seconds_per_invocation": {**ASSUMED_SECONDS, "default": ASSUMED_DEFAULT_SECONDS},
              "note": "units and calls per operation: warm containers, averages over rounds; the KMS rate adds a cold "
                      "container's unwraps (kms_calls_cold_container) at the model's cache-miss rate"}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
