"""Registry collections with a fixed maximum (an account's webhook endpoints, dynamic descriptors, API keys).

"Count the collection, then create" lets two concurrent creations both see ``limit - 1`` items and both write:
the maximum is a documented parameter (the operators' guide), so it must hold under concurrency too. Here the
collection has a counter item beside it (same partition key, sort key ``COUNT#<prefix>``), and a creation is one
``TransactWriteItems``: the new items' PutItems (``attribute_not_exists``) and the counter's ``n < limit``
increment. DynamoDB runs the whole transaction or none of it (serializable isolation of TransactWriteItems, the
DynamoDB Developer Guide "Amazon DynamoDB Transactions: How it works"), so no interleaving passes the limit.
A deletion decrements the counter in the transaction that deletes the items.

Collections written before the counter existed have none: the first creation after the upgrade counts them
(``count_existing``) and creates the counter with that value (``attribute_not_exists``: of two first creations
one writes it, the other uses it). A deletion of such a collection removes its items alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["LimitReached", "counter_sk", "count", "put_counted", "delete_counted"]


class LimitReached(Exception):
    """The collection holds its maximum of items."""


def counter_sk(prefix: str) -> str:
    """The counter's sort key for the collection of items whose sort keys start with ``prefix``."""
    return f"COUNT#{prefix}"


def _table() -> str:
    return settings().registry_table


def count(pk: str, prefix: str) -> int | None:
    """The counter's value (a consistent read), or None when the collection has no counter yet."""
    with aws_errors("registry read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"pk": pk, "sk": counter_sk(prefix)}),
                                  ConsistentRead=True)
    item = from_item(out.get("Item"))
    return None if item is None else int(item.get("n", 0))


def _ensure_counter(pk: str, prefix: str, count_existing: Callable[[], int]) -> None:
    if count(pk, prefix) is not None:
        return
    try:
        with aws_errors("registry write"):
            dynamodb().put_item(TableName=_table(),
                                Item=to_item({"pk": pk, "sk": counter_sk(prefix), "n": count_existing()}),
                                ConditionExpression="attribute_not_exists(pk)")
    except ConditionFailed:
        pass  # another first creation wrote it: theirs counts the same items


def _reasons(exc: ConditionFailed) -> list[str]:
    response = getattr(exc.__cause__, "response", None) or {}
    return [str((r or {}).get("Code") or "None") for r in response.get("CancellationReasons") or []]


def put_counted(items: list[dict[str, Any]], *, pk: str, prefix: str, limit: int,
                count_existing: Callable[[], int]) -> None:
    """Create ``items`` (each must not exist) while the collection ``(pk, prefix)`` holds fewer than ``limit``.

    Raises :class:`LimitReached` when it holds ``limit`` already, :class:`ConditionFailed` when one of the items
    exists (a drawn id collided: draw again). ``count_existing`` counts the collection once, for a collection that
    has no counter yet.
    """
    _ensure_counter(pk, prefix, count_existing)
    entries: list[dict[str, Any]] = [{"Update": {
        "TableName": _table(), "Key": to_item({"pk": pk, "sk": counter_sk(prefix)}),
        "UpdateExpression": "SET n = n + :one", "ConditionExpression": "n < :limit",
        "ExpressionAttributeValues": to_item({":one": 1, ":limit": limit})}}]
    entries.extend({"Put": {"TableName": _table(), "Item": to_item(item),
                            "ConditionExpression": "attribute_not_exists(pk)"}} for item in items)
    try:
        with aws_errors("registry write"):
            dynamodb().transact_write_items(TransactItems=entries)
    except ConditionFailed as exc:
        if _reasons(exc)[:1] == ["ConditionalCheckFailed"]:
            raise LimitReached(pk) from None
        raise


def delete_counted(keys: list[tuple[str, str]], *, pk: str, prefix: str) -> None:
    """Delete the items ``keys`` (the first must exist: :class:`ConditionFailed` otherwise) and decrement the
    collection's counter, in one transaction; a collection without a counter only loses the items."""
    deletes: list[dict[str, Any]] = [
        {"Delete": {"TableName": _table(), "Key": to_item({"pk": k_pk, "sk": k_sk}),
                    **({"ConditionExpression": "attribute_exists(pk)"} if i == 0 else {})}}
        for i, (k_pk, k_sk) in enumerate(keys)]
    counter = {"Update": {
        "TableName": _table(), "Key": to_item({"pk": pk, "sk": counter_sk(prefix)}),
        "UpdateExpression": "SET n = n - :one", "ConditionExpression": "n > :zero",
        "ExpressionAttributeValues": to_item({":one": 1, ":zero": 0})}}
    try:
        with aws_errors("registry delete"):
            dynamodb().transact_write_items(TransactItems=[*deletes, counter])
    except ConditionFailed as exc:
        reasons = _reasons(exc)
        if reasons and reasons[0] == "ConditionalCheckFailed":
            raise  # the item is gone already
        # no counter (a collection from before it): the items alone
        with aws_errors("registry delete"):
            dynamodb().transact_write_items(TransactItems=deletes)
