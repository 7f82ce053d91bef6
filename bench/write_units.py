"""DynamoDB write units as DynamoDB bills them, from the real item sizes: per table and per index.

:class:`WriteMeter` hooks the platform's DynamoDB client (``before-call``: the API parameters, and the item as it
is just before the write, read with a separate client that is not metered) and, at the end, reads the items as
they are left. Rules (the DynamoDB developer guide, "Read/write capacity mode" and "Item sizes"):

* a write of one item costs ``ceil(size / 1 KB)`` units, the size being the larger of the item before and after
  (PutItem: the new item; UpdateItem and DeleteItem: before or after, whichever is larger);
* TransactWriteItems: twice that, per item;
* BatchWriteItem: each put or delete, as a single write;
* every global or local secondary index whose keys the item has before or after: a put of the projected item, a
  delete of the old projection when the index key changes or goes, each ``ceil(projected size / 1 KB)``;
* a failed condition costs the write anyway (not told apart here: the measured paths seldom fail one).

Item size: the attribute names' UTF-8 lengths plus their values: strings and binaries by length, numbers about
one byte per two significant digits plus one, booleans and null one byte, maps and lists 3 bytes plus one per
element plus their contents.
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from typing import Any

__all__ = ["WriteMeter", "item_size"]


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def _value_size(value: dict[str, Any]) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(x.encode()) for x in v)
    if kind == "NS":
        return sum(_number_size(x) for x in v)
    if kind == "BS":
        return sum(len(x) for x in v)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(x) + 1 for k, x in v.items())
    if kind == "L":
        return 3 + sum(_value_size(x) + 1 for x in v)
    raise ValueError(kind)


def item_size(item: dict[str, Any] | None) -> int:
    """Bytes of an item in DynamoDB JSON (``{"name": {"S": "..."}}``)."""
    return sum(len(k.encode()) + _value_size(v) for k, v in (item or {}).items())


def _units(size: int) -> int:
    return max(1, math.ceil(size / 1024)) if size else 0


class _Table:
    def __init__(self, description: dict[str, Any]) -> None:
        self.keys = [k["AttributeName"] for k in description["KeySchema"]]
        self.indexes: list[tuple[str, list[str], dict[str, Any]]] = []
        for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            for index in description.get(kind) or []:
                self.indexes.append((index["IndexName"], [k["AttributeName"] for k in index["KeySchema"]],
                                     index.get("Projection") or {"ProjectionType": "ALL"}))

    def key_of(self, item: dict[str, Any]) -> tuple:
        return tuple(str(item.get(k)) for k in self.keys)

    def projection(self, item: dict[str, Any], index_keys: list[str], projection: dict[str, Any]) -> dict[str, Any]:
        kind = projection.get("ProjectionType", "ALL")
        if kind == "ALL":
            return item
        names = set(self.keys) | set(index_keys)
        if kind == "INCLUDE":
            names |= set(projection.get("NonKeyAttributes") or [])
        return {k: v for k, v in item.items() if k in names}


class WriteMeter:
    """Attach to the platform's DynamoDB client; ``reset()`` before an operation, ``units()`` after it."""

    def __init__(self, platform_client: Any, reader: Any) -> None:
        self.reader = reader  # a client of its own: its reads are not the platform's
        self.lock = threading.Lock()
        self.tables: dict[str, _Table] = {}
        self.writes: list[dict[str, Any]] = []
        self.largest: dict[str, int] = {}  # the largest item written per table (bytes), over every units() call
        platform_client.meta.events.register("before-call", self._before, unique_id="bench-write-units")

    def _table(self, name: str) -> _Table:
        if name not in self.tables:
            self.tables[name] = _Table(self.reader.describe_table(TableName=name)["Table"])
        return self.tables[name]

    def _current(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return self.reader.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _note(self, op: str, table: str, key: dict[str, Any], new: dict[str, Any] | None, factor: int) -> None:
        self.writes.append({"op": op, "table": table, "key": key, "before": self._current(table, key),
                            "new": new, "factor": factor})

    def _key(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        return {k: item[k] for k in self._table(table).keys}

    def _before(self, model: Any, params: dict[str, Any], **_kwargs: Any) -> None:
        op = model.name
        with self.lock:
            if op == "PutItem":
                self._note(op, params["TableName"], self._key(params["TableName"], params["Item"]), params["Item"], 1)
            elif op in ("UpdateItem", "DeleteItem"):
                self._note(op, params["TableName"], params["Key"], None, 1)
            elif op == "TransactWriteItems":
                for entry in params["TransactItems"]:
                    (kind, body), = entry.items()
                    if kind == "ConditionCheck":
                        continue
                    key = body.get("Key") or self._key(body["TableName"], body["Item"])
                    self._note(kind, body["TableName"], key, body.get("Item"), 2)
            elif op == "BatchWriteItem":
                for table, requests in params["RequestItems"].items():
                    for request in requests:
                        if "PutRequest" in request:
                            item = request["PutRequest"]["Item"]
                            self._note("Put", table, self._key(table, item), item, 1)
                        else:
                            self._note("Delete", table, request["DeleteRequest"]["Key"], None, 1)

    def reset(self) -> None:
        with self.lock:
            self.writes = []

    def units(self) -> dict[str, float]:
        """``{table or table/index: write units}`` of the writes since :meth:`reset`."""
        with self.lock:
            writes = list(self.writes)
        out: dict[str, float] = defaultdict(float)
        for i, w in enumerate(writes):
            table = self._table(w["table"])
            after = w["new"]
            if after is None and w["op"] not in ("DeleteItem", "Delete"):
                later = next((x for x in writes[i + 1:] if x["table"] == w["table"] and x["key"] == w["key"]), None)
                after = later["before"] if later is not None else self._current(w["table"], w["key"])
            before = w["before"]
            size = max(item_size(before), item_size(after))
            self.largest[w["table"]] = max(self.largest.get(w["table"], 0), size)
            out[w["table"]] += w["factor"] * _units(size)
            for name, keys, projection in table.indexes:
                had = before is not None and all(k in before for k in keys)
                has = after is not None and all(k in after for k in keys)
                same_key = had and has and all(before[k] == after[k] for k in keys)
                new = table.projection(after, keys, projection) if has else None
                old = table.projection(before, keys, projection) if had else None
                if has and not (same_key and new == old):  # an unchanged projection is not written again
                    out[f"{w['table']}/{name}"] += _units(max(item_size(new), item_size(old) if same_key else 0))
                if had and not same_key:
                    out[f"{w['table']}/{name}"] += _units(item_size(old))
        return dict(out)
