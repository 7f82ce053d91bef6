"""The Registry table: partners, devices, BDKs, templates, gateway accounts and wrapped keys.

Items are keyed ``pk``/``sk`` with typed prefixes (``PARTNER#<id>``/``PROFILE``, ``PARTNER#<id>``/
``DEVICE#<serial>#<clientId>``, ``BDK#<id>``/``KEY`` ...) so one partner's records are one query away.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["get", "put", "put_new", "update_fields", "query_prefix", "scan_kind", "delete", "ConditionFailed"]


def _table() -> str:
    return settings().registry_table


def get(pk: str, sk: str, *, consistent: bool = False) -> dict[str, Any] | None:
    with aws_errors("registry read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"pk": pk, "sk": sk}), ConsistentRead=consistent)
    return from_item(out.get("Item"))


def put(item: dict[str, Any]) -> None:
    with aws_errors("registry write"):
        dynamodb().put_item(TableName=_table(), Item=to_item(item))


def put_new(item: dict[str, Any]) -> None:
    """Create an item; raises ConditionFailed when it already exists."""
    with aws_errors("registry write"):
        dynamodb().put_item(TableName=_table(), Item=to_item(item), ConditionExpression="attribute_not_exists(pk)")


def update_fields(pk: str, sk: str, fields: dict[str, Any], *, expected: dict[str, Any] | None = None) -> dict[str, Any]:
    """Set fields of an existing item (optionally only when ``expected`` attributes hold); returns the new item."""
    names = {f"#f{i}": k for i, k in enumerate(fields)}
    values = {f":v{i}": v for i, v in enumerate(fields.values())}
    sets = ", ".join(f"#f{i} = :v{i}" for i in range(len(fields)))
    condition = "attribute_exists(pk)"
    for j, (k, v) in enumerate((expected or {}).items()):
        names[f"#e{j}"] = k
        values[f":e{j}"] = v
        condition += f" AND #e{j} = :e{j}"
    with aws_errors("registry update"):
        out = dynamodb().update_item(
            TableName=_table(), Key=to_item({"pk": pk, "sk": sk}), UpdateExpression=f"SET {sets}",
            ConditionExpression=condition, ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values), ReturnValues="ALL_NEW")
    return from_item(out["Attributes"]) or {}


def query_prefix(pk: str, sk_prefix: str, *, limit: int = 1000) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": _table(), "KeyConditionExpression": "pk = :pk AND begins_with(sk, :sk)",
        "ExpressionAttributeValues": to_item({":pk": pk, ":sk": sk_prefix}),
    }
    while True:
        with aws_errors("registry query"):
            out = dynamodb().query(**kwargs)
        items.extend(from_item(i) or {} for i in out.get("Items", []))
        if "LastEvaluatedKey" not in out or len(items) >= limit:
            return items[:limit]
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def scan_kind(pk_prefix: str, sk: str, *, attributes: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every item of one kind (``pk`` starting with ``pk_prefix``, ``sk`` equal to ``sk``), only ``attributes``.

    A Scan reads the whole table (the filter only trims the answer): for scheduled checks over a kind that has no
    index (the daily wallet certificate check), never for a request's path."""
    names = {f"#a{i}": name for i, name in enumerate(("pk", "sk", *attributes))}
    kwargs: dict[str, Any] = {
        "TableName": _table(), "FilterExpression": "begins_with(#a0, :pk) AND #a1 = :sk",
        "ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_item({":pk": pk_prefix, ":sk": sk}),
    }
    items: list[dict[str, Any]] = []
    while True:
        with aws_errors("registry scan"):
            out = dynamodb().scan(**kwargs)
        items.extend(from_item(i) or {} for i in out.get("Items", []))
        if "LastEvaluatedKey" not in out:
            return items
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def delete(pk: str, sk: str) -> None:
    with aws_errors("registry delete"):
        dynamodb().delete_item(TableName=_table(), Key=to_item({"pk": pk, "sk": sk}))
