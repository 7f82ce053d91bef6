"""The ProxyConfigs table adapter: one item per (partnerId, configReferenceID), with a version.

The validated document is stored as JSON text (exact round trip, no DynamoDB type juggling) with its secrets
KMS-wrapped (:func:`vaultcore.proxy.config.stored_document`). Every update increments ``version`` in one
conditional write, so the proxy's compiled-configuration cache, keyed by version, can never serve a mix.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["get_item", "put_new", "replace", "delete", "list_items", "ConditionFailed"]


def _table() -> str:
    return settings().proxy_configs_table


def _key(partner_id: str, reference: str) -> dict[str, Any]:
    return to_item({"partnerId": partner_id, "configReferenceID": reference})


def get_item(partner_id: str, reference: str, *, consistent: bool = False) -> dict[str, Any] | None:
    with aws_errors("proxy configuration read"):
        out = dynamodb().get_item(TableName=_table(), Key=_key(partner_id, reference), ConsistentRead=consistent)
    return from_item(out.get("Item"))


def put_new(item: dict[str, Any]) -> None:
    """Create; raises :class:`ConditionFailed` when the reference exists (a generated id never collides)."""
    with aws_errors("proxy configuration write"):
        dynamodb().put_item(TableName=_table(), Item=to_item(item),
                            ConditionExpression="attribute_not_exists(configReferenceID)")


def replace(partner_id: str, reference: str, document: str, updated_at: int) -> dict[str, Any]:
    """Store a new document and increment the version; raises :class:`ConditionFailed` when the item is gone."""
    with aws_errors("proxy configuration update"):
        out = dynamodb().update_item(
            TableName=_table(), Key=_key(partner_id, reference),
            UpdateExpression="SET #d = :d, #u = :u ADD #v :one",
            ConditionExpression="attribute_exists(configReferenceID)",
            ExpressionAttributeNames={"#d": "document", "#u": "updatedAt", "#v": "version"},
            ExpressionAttributeValues=to_item({":d": document, ":u": updated_at, ":one": 1}),
            ReturnValues="ALL_NEW")
    return from_item(out["Attributes"]) or {}


def delete(partner_id: str, reference: str) -> bool:
    """Delete; False when there was nothing to delete."""
    try:
        with aws_errors("proxy configuration delete"):
            dynamodb().delete_item(TableName=_table(), Key=_key(partner_id, reference),
                                   ConditionExpression="attribute_exists(configReferenceID)")
    except ConditionFailed:
        return False
    return True


def list_items(partner_id: str, *, limit: int = 200) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": _table(), "KeyConditionExpression": "partnerId = :p",
                              "ExpressionAttributeValues": to_item({":p": partner_id})}
    while True:
        with aws_errors("proxy configuration query"):
            out = dynamodb().query(**kwargs)
        items.extend(from_item(i) or {} for i in out.get("Items", []))
        if "LastEvaluatedKey" not in out or len(items) >= limit:
            return items[:limit]
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
