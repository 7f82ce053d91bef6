"""DynamoDB adapter of tokenization: the Tokens table (bfid → tokens for the gateway's read step) and the
Registry writes of the tokenization key ring that need more than :mod:`vaultcore.store.registry` offers
(a two-item transaction for rotation, a REMOVE for retirement).

Tokens item (key ``bfid``: the bfid's scope, :attr:`vaultcore.tokens.bfid.BfidInfo.scope`, which is the bfid
itself for a version-1 bfid and its core, shared by every extension of it, for version 2): ``partnerId``,
``templateRef``, ``templateVersion``, ``keyVersion``, ``createdAt``, ``updatedAt``, ``expiresAt`` (the table's TTL
attribute) and one attribute ``t#<field name>`` per token, so tokens added later under the same bfid merge into
the item in the same single write. Never a clear value.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["TOKEN_PREFIX", "put_tokens", "get_token_item", "stored_tokens", "rotate_key_items", "retire_key_item",
           "ConditionFailed"]

TOKEN_PREFIX = "t#"


def put_tokens(bfid: str, partner_id: str, template_ref: str, template_version: int, key_version: int,
               tokens: dict[str, str], now: int, expires_at: int) -> None:
    """Create or extend the item of ``bfid`` in one UpdateItem (one round trip).

    The condition refuses to touch an item of another partner (a bfid names its partner, so this never
    happens for a verified bfid; the condition is the belt to that brace). Raises ConditionFailed.
    """
    names = {"#p": "partnerId", "#tr": "templateRef", "#tv": "templateVersion", "#kv": "keyVersion",
             "#ca": "createdAt", "#ua": "updatedAt", "#ea": "expiresAt", "#b": "bfid"}
    values: dict[str, Any] = {":p": partner_id, ":tr": template_ref, ":tv": template_version, ":kv": key_version,
                              ":now": now, ":ea": expires_at}
    sets = ["#p = :p", "#tr = :tr", "#tv = :tv", "#kv = :kv", "#ca = if_not_exists(#ca, :now)", "#ua = :now",
            "#ea = :ea"]
    for i, (name, token) in enumerate(tokens.items()):
        names[f"#t{i}"] = TOKEN_PREFIX + name
        values[f":t{i}"] = token
        sets.append(f"#t{i} = :t{i}")
    with aws_errors("token write"):
        dynamodb().update_item(
            TableName=settings().tokens_table, Key=to_item({"bfid": bfid}), UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="attribute_not_exists(#b) OR #p = :p", ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values))


def get_token_item(bfid: str) -> dict[str, Any] | None:
    """The item of ``bfid`` (strongly consistent: the read step often follows the write within a second)."""
    with aws_errors("token read"):
        out = dynamodb().get_item(TableName=settings().tokens_table, Key=to_item({"bfid": bfid}),
                                  ConsistentRead=True)
    return from_item(out.get("Item"))


def stored_tokens(item: dict[str, Any]) -> dict[str, str]:
    """Field name → token of a Tokens item."""
    return {k[len(TOKEN_PREFIX):]: v for k, v in item.items() if k.startswith(TOKEN_PREFIX) and isinstance(v, str)}


def rotate_key_items(new_item: dict[str, Any], old_sk: str | None, now: int) -> None:
    """Put the new current key version and demote the old current one to ``active``, atomically.

    Both conditions (the new version does not exist yet; the old one is still ``current``) make two concurrent
    rotations end with exactly one winner; the loser gets ConditionFailed.
    """
    table = settings().registry_table
    items: list[dict[str, Any]] = [{"Put": {"TableName": table, "Item": to_item(new_item),
                                            "ConditionExpression": "attribute_not_exists(pk)"}}]
    if old_sk is not None:
        items.append({"Update": {
            "TableName": table, "Key": to_item({"pk": new_item["pk"], "sk": old_sk}),
            "UpdateExpression": "SET #s = :active, #d = :now", "ConditionExpression": "#s = :current",
            "ExpressionAttributeNames": {"#s": "status", "#d": "demotedAt"},
            "ExpressionAttributeValues": to_item({":active": "active", ":current": "current", ":now": now})}})
    with aws_errors("token key rotation"):
        dynamodb().transact_write_items(TransactItems=items)


def retire_key_item(pk: str, sk: str, now: int) -> dict[str, Any]:
    """Mark an ``active`` key version ``retired`` and delete its wrapped key material in the same write.

    Raises ConditionFailed when the version is missing, current or already retired (the caller reads why).
    """
    with aws_errors("token key retirement"):
        out = dynamodb().update_item(
            TableName=settings().registry_table, Key=to_item({"pk": pk, "sk": sk}),
            UpdateExpression="SET #s = :retired, #r = :now REMOVE #env", ConditionExpression="#s = :active",
            ExpressionAttributeNames={"#s": "status", "#r": "retiredAt", "#env": "env"},
            ExpressionAttributeValues=to_item({":retired": "retired", ":active": "active", ":now": now}),
            ReturnValues="ALL_NEW")
    return from_item(out["Attributes"]) or {}
