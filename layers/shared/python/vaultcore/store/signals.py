"""The Signals table: short-lived risk data keyed ``pk``/``sk``, every item with an ``expiresAt`` (Unix seconds).

Holds wallet token transaction ids (replay refusal), device signals collected by the fraud script, and keyed
card fingerprints per device and per card (never a card number). DynamoDB deletes expired items lazily (up to
days late, and moto never does: STYLE.md pitfall 5), so every read here treats an item past ``expiresAt`` as
absent, and :func:`claim` accepts an expired item as free, like the nonce store.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["claim", "get", "put", "put_many", "update_fields", "count_live", "ConditionFailed"]


def _table() -> str:
    return settings().signals_table


def claim(pk: str, sk: str, expires_at: int, now: int, attributes: dict[str, Any] | None = None) -> bool:
    """Create the item once (one conditional put); False when a live item already holds the key."""
    item = {**(attributes or {}), "pk": pk, "sk": sk, "expiresAt": int(expires_at)}
    try:
        with aws_errors("signals write"):
            dynamodb().put_item(
                TableName=_table(), Item=to_item(item),
                ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
                ExpressionAttributeValues=to_item({":now": int(now)}))
    except ConditionFailed:
        return False
    return True


def get(pk: str, sk: str, now: int) -> dict[str, Any] | None:
    with aws_errors("signals read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"pk": pk, "sk": sk}), ConsistentRead=True)
    item = from_item(out.get("Item"))
    if item is None or int(item.get("expiresAt", 0)) < now:
        return None
    return item


def put(item: dict[str, Any]) -> None:
    if "expiresAt" not in item:
        raise ValueError("signals items must carry expiresAt")
    with aws_errors("signals write"):
        dynamodb().put_item(TableName=_table(), Item=to_item(item))


def put_many(items: list[dict[str, Any]]) -> None:
    """Up to 25 items in one BatchWriteItem round trip (unprocessed items are retried)."""
    if not items:
        return
    if len(items) > 25 or any("expiresAt" not in i for i in items):
        raise ValueError("at most 25 items, each with expiresAt")
    requests = {_table(): [{"PutRequest": {"Item": to_item(i)}} for i in items]}
    for _ in range(5):
        with aws_errors("signals write"):
            out = dynamodb().batch_write_item(RequestItems=requests)
        requests = out.get("UnprocessedItems") or {}
        if not requests:
            return
    from vaultcore.errors import DependencyError

    raise DependencyError("Internal error: signals write failed.")


def update_fields(pk: str, sk: str, fields: dict[str, Any], *, add: dict[str, int] | None = None,
                  expected: dict[str, Any] | None = None) -> dict[str, Any]:
    """SET ``fields`` and ADD ``add`` counters on an existing item (optionally only when ``expected`` holds)."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets, adds = [], []
    for i, (k, v) in enumerate(fields.items()):
        names[f"#s{i}"], values[f":s{i}"] = k, v
        sets.append(f"#s{i} = :s{i}")
    for i, (k, v) in enumerate((add or {}).items()):
        names[f"#a{i}"], values[f":a{i}"] = k, v
        adds.append(f"#a{i} :a{i}")
    condition = "attribute_exists(pk)"
    for i, (k, v) in enumerate((expected or {}).items()):
        names[f"#e{i}"], values[f":e{i}"] = k, v
        condition += f" AND #e{i} = :e{i}"
    expression = " ".join(part for part in (
        ("SET " + ", ".join(sets)) if sets else "", ("ADD " + ", ".join(adds)) if adds else "") if part)
    with aws_errors("signals update"):
        out = dynamodb().update_item(
            TableName=_table(), Key=to_item({"pk": pk, "sk": sk}), UpdateExpression=expression,
            ConditionExpression=condition, ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values), ReturnValues="ALL_NEW")
    return from_item(out["Attributes"]) or {}


def count_live(pk: str, now: int, *, sk_at_least: str | None = None, limit: int = 1000) -> int:
    """Items under ``pk`` (with ``sk >= sk_at_least``) whose ``expiresAt`` has not passed; capped at ``limit``."""
    condition = "pk = :pk" + (" AND sk >= :from" if sk_at_least is not None else "")
    values: dict[str, Any] = {":pk": pk, ":now": int(now)}
    if sk_at_least is not None:
        values[":from"] = sk_at_least
    kwargs: dict[str, Any] = {
        "TableName": _table(), "KeyConditionExpression": condition, "FilterExpression": "expiresAt >= :now",
        "ExpressionAttributeValues": to_item(values), "Select": "COUNT", "ConsistentRead": True,
    }
    total = 0
    while True:
        with aws_errors("signals query"):
            out = dynamodb().query(**kwargs)
        total += int(out.get("Count", 0))
        if "LastEvaluatedKey" not in out or total >= limit:
            return min(total, limit)
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
