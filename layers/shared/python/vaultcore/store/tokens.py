"""DynamoDB adapter of tokenization: the Tokens table (bfid → tokens for the gateway's read step) and the
Registry writes of the tokenization key ring that need more than :mod:`vaultcore.store.registry` offers
(a two-item transaction for rotation, a REMOVE for retirement).

Tokens item (key ``bfid``: the bfid's scope, :attr:`vaultcore.tokens.bfid.BfidInfo.scope`, which is the bfid
itself for a version-1 bfid and its core, shared by every extension of it, for version 2): ``partnerId``,
``templateRef``, ``templateVersion``, ``keyVersion``, ``createdAt``, ``updatedAt``, ``expiresAt`` (the table's TTL
attribute) and one attribute ``t#<field name>`` per token, so tokens added later under the same bfid merge into
the item in the same single write. Never a clear value.

Issue 21 adds to a Tokens item ``readable`` (true when the tokenize call asked for ``omit``: the partner's
``read`` may fetch the tokens once), ``partner_read_by`` / ``partner_read_at`` (the partner's one ``read``: the
random id of the request that made it, so an SDK retry of that same write is recognised, or, issue 28, ``k:`` and
the SHA-256 of the reader's ``Idempotency-Key``, so a retry of the request with that key is too), and, in an item of its
own keyed ``revoked#<scope>``, the **revocation record** of a deleted bfid (``partnerId``, ``revokedAt``; no
``expiresAt``: it is kept for good). The gateway's own one-time read of an iframe eToken uses another attribute
(``gateway_read_by``): the two reads are independent. A scope is URL-safe base64 text, so no scope starts with
``revoked#``.

Issue 27 (one use policy, :mod:`vaultcore.tokens.policy`): a Tokens item may carry its **owner** and **uses**
(``owner_account``, ``owner_custom_id``, ``owner_method``, ``uses`` = ``once``) and, for an iFrame capture's
CVV, ``cvv_salt`` (the per-capture secret without which its CVV token is not reversible: removed with the CVV's
token by the first read). The ``revoked#<scope>`` item is the scope's durable **scope record**: ``revokedAt``
when the bfid was deleted, ``owner_account`` when the tokenization is bound to an account. It has no
``expiresAt``, so the binding outlives the one-hour Tokens item (tokens are vaultless: they detokenize for
good), and detokenization reads both answers with the one GetItem it already made for the revocation.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["TOKEN_PREFIX", "REVOKED_PREFIX", "put_tokens", "get_token_item", "stored_tokens", "rotate_key_items",
           "retire_key_item", "claim_partner_read", "revoke_scope", "is_revoked", "revoked_among", "ConditionFailed",
           "ScopeRecord", "scope_record", "scope_records_among", "put_scope_owner", "use_item"]

TOKEN_PREFIX = "t#"
REVOKED_PREFIX = "revoked#"
#: BatchGetItem's limit of keys per call.
_BATCH_GET = 100


def put_tokens(bfid: str, partner_id: str, template_ref: str, template_version: int, key_version: int,
               tokens: dict[str, str], now: int, expires_at: int, *, readable: bool = False,
               policy: dict[str, Any] | None = None) -> None:
    """Create or extend the item of ``bfid`` in one UpdateItem (one round trip); ``readable`` marks the tokens
    for the partner's one ``read`` (an extension never takes the mark away).

    The condition refuses to touch an item of another partner (a bfid names its partner, so this never
    happens for a verified bfid; the condition is the belt to that brace). Raises ConditionFailed.
    """
    names = {"#p": "partnerId", "#tr": "templateRef", "#tv": "templateVersion", "#kv": "keyVersion",
             "#ca": "createdAt", "#ua": "updatedAt", "#ea": "expiresAt", "#b": "bfid"}
    values: dict[str, Any] = {":p": partner_id, ":tr": template_ref, ":tv": template_version, ":kv": key_version,
                              ":now": now, ":ea": expires_at}
    sets = ["#p = :p", "#tr = :tr", "#tv = :tv", "#kv = :kv", "#ca = if_not_exists(#ca, :now)", "#ua = :now",
            "#ea = :ea"]
    if readable:
        names["#rd"], values[":rd"] = "readable", True
        sets.append("#rd = :rd")
    for i, (name, value) in enumerate((policy or {}).items()):  # owner, uses, cvv_salt (issue 27)
        names[f"#o{i}"] = name
        values[f":o{i}"] = value
        sets.append(f"#o{i} = :o{i}")
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


def claim_partner_read(bfid: str, partner_id: str, read_id: str, now: float) -> dict[str, Any] | None:
    """The partner's one ``read`` of the item of ``bfid``: one conditional UpdateItem, retry-aware.

    The write succeeds only on the partner's readable item within its read window (``expiresAt`` after ``now``:
    DynamoDB deletes expired items late) that no read has claimed yet, or that ``read_id`` itself claimed: the
    JSON client retries a write whose answer was lost with the same parameters, and that retry must not look
    like a second read. Returns the item (ALL_NEW) when this read holds the claim, None when it does not (the
    caller reads the item back to say why).
    """
    names = {"#p": "partnerId", "#rd": "readable", "#ea": "expiresAt", "#rb": "partner_read_by",
             "#ra": "partner_read_at"}
    values = to_item({":p": partner_id, ":t": True, ":now": int(now), ":rid": read_id})
    try:
        with aws_errors("token read claim"):
            out = dynamodb().update_item(
                TableName=settings().tokens_table, Key=to_item({"bfid": bfid}),
                UpdateExpression="SET #rb = :rid, #ra = if_not_exists(#ra, :now)",
                ConditionExpression="#p = :p AND #rd = :t AND #ea > :now AND "
                                    "(attribute_not_exists(#rb) OR #rb = :rid)",
                ExpressionAttributeNames=names, ExpressionAttributeValues=values, ReturnValues="ALL_NEW")
    except ConditionFailed:
        return None
    return from_item(out.get("Attributes"))


def revoke_scope(bfid: str, partner_id: str, now: int) -> None:
    """Delete a bfid: ``revokedAt`` on its scope record (kept for good; idempotent), then its Tokens item
    (idempotent).

    In this order, so that from the moment the call returns nothing under the bfid reads (the item is gone) or
    detokenizes (the record says so); a failure between the two writes leaves the record, and the caller's retry
    removes the item. Neither write touches another partner's items.
    """
    try:
        with aws_errors("token revocation"):
            dynamodb().update_item(
                TableName=settings().tokens_table, Key=to_item({"bfid": REVOKED_PREFIX + bfid}),
                UpdateExpression="SET #p = :p, #r = if_not_exists(#r, :now)",
                ConditionExpression="attribute_not_exists(#b) OR #p = :p",
                ExpressionAttributeNames={"#b": "bfid", "#p": "partnerId", "#r": "revokedAt"},
                ExpressionAttributeValues=to_item({":p": partner_id, ":now": now}))
    except ConditionFailed:
        pass  # another partner's record: impossible for a verified bfid (the scope names its partner)
    try:
        with aws_errors("token deletion"):
            dynamodb().delete_item(
                TableName=settings().tokens_table, Key=to_item({"bfid": bfid}),
                ConditionExpression="attribute_not_exists(#b) OR #p = :p",
                ExpressionAttributeNames={"#b": "bfid", "#p": "partnerId"},
                ExpressionAttributeValues=to_item({":p": partner_id}))
    except ConditionFailed:
        pass  # another partner's item: impossible for a verified bfid (the scope names its partner)


class ScopeRecord(dict):  # type: ignore[type-arg]
    """A scope record's attributes (empty when it has none): :attr:`revoked`, :attr:`owner_account`."""

    @property
    def revoked(self) -> bool:
        return "revokedAt" in self

    @property
    def owner_account(self) -> str | None:
        owner = self.get("owner_account")
        return owner if isinstance(owner, str) and owner else None


_RECORD_PROJECTION = "#b, #r, #oa"
_RECORD_NAMES = {"#b": "bfid", "#r": "revokedAt", "#oa": "owner_account"}


def scope_record(bfid: str) -> ScopeRecord:
    """The scope record of ``bfid`` (a scope): one strongly consistent GetItem of its key only."""
    with aws_errors("token revocation check"):
        out = dynamodb().get_item(TableName=settings().tokens_table, Key=to_item({"bfid": REVOKED_PREFIX + bfid}),
                                  ConsistentRead=True, ProjectionExpression=_RECORD_PROJECTION,
                                  ExpressionAttributeNames=_RECORD_NAMES)
    return ScopeRecord(from_item(out.get("Item")) or {})


def is_revoked(bfid: str) -> bool:
    """Whether ``bfid`` (a scope) was deleted (:func:`scope_record`)."""
    return scope_record(bfid).revoked


def put_scope_owner(bfid: str, partner_id: str, owner_account: str, now: int) -> None:
    """Bind the scope ``bfid`` to ``owner_account`` for good (its scope record; written before its tokens exist
    anywhere). Raises ConditionFailed when the scope has a record of another partner (never, for a new scope)."""
    with aws_errors("token owner write"):
        dynamodb().update_item(
            TableName=settings().tokens_table, Key=to_item({"bfid": REVOKED_PREFIX + bfid}),
            UpdateExpression="SET #p = :p, #oa = :oa, #ca = if_not_exists(#ca, :now)",
            ConditionExpression="attribute_not_exists(#b) OR #p = :p",
            ExpressionAttributeNames={"#b": "bfid", "#p": "partnerId", "#oa": "owner_account", "#ca": "createdAt"},
            ExpressionAttributeValues=to_item({":p": partner_id, ":oa": owner_account, ":now": now}))


def use_item(bfid: str, partner_id: str, reader: str, now: int, *, account_id: str, custom_id: str | None,
             method: str | None, remove: tuple[str, ...]) -> dict[str, Any] | None:
    """The gateway's one read of a Tokens item (an eToken, or a read-once bfid): one conditional UpdateItem,
    retry-aware (``reader`` is the request's id; the condition accepts its own earlier write).

    ``SET gateway_read_by`` and ``REMOVE`` ``remove`` (the CVV's token and salt) in the same write, on condition
    that the item is the partner's and live, not read by another request, and that its owner (account, and
    ``custom_id`` and tender when they are given) is this request's. Returns the item as it was *before* the
    write (ALL_OLD: with the CVV's token, for this read only), None when the condition failed (the caller reads
    the item back to say why).
    """
    names = {"#b": "bfid", "#p": "partnerId", "#e": "expiresAt", "#r": "gateway_read_by", "#ra": "gateway_read_at",
             "#a": "owner_account", "#la": "iframe_account"}
    values: dict[str, Any] = {":p": partner_id, ":now": now, ":r": reader, ":a": account_id}
    condition = ("attribute_exists(#b) AND #p = :p AND #e > :now AND (attribute_not_exists(#r) OR #r = :r) "
                 "AND (attribute_not_exists(#a) OR #a = :a) AND (attribute_not_exists(#la) OR #la = :a)")
    if custom_id is not None:
        names.update({"#c": "owner_custom_id", "#lc": "iframe_custom_id"})
        values[":c"] = custom_id
        condition += " AND (attribute_not_exists(#c) OR #c = :c) AND (attribute_not_exists(#lc) OR #lc = :c)"
    if method is not None:
        names.update({"#m": "owner_method", "#lm": "iframe_method"})
        values[":m"] = method
        condition += " AND (attribute_not_exists(#m) OR #m = :m) AND (attribute_not_exists(#lm) OR #lm = :m)"
    update = "SET #r = :r, #ra = if_not_exists(#ra, :now)"
    if remove:
        names.update({f"#x{i}": name for i, name in enumerate(remove)})
        update += " REMOVE " + ", ".join(f"#x{i}" for i in range(len(remove)))
    try:
        with aws_errors("token use"):
            out = dynamodb().update_item(
                TableName=settings().tokens_table, Key=to_item({"bfid": bfid}), UpdateExpression=update,
                ConditionExpression=condition, ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values), ReturnValues="ALL_OLD")
    except ConditionFailed:
        return None
    return from_item(out.get("Attributes")) or {}


def scope_records_among(scopes: set[str]) -> dict[str, ScopeRecord]:
    """The scope records of ``scopes`` that exist: BatchGetItem, 100 keys a call, strongly consistent
    (unprocessed keys asked again)."""
    found: dict[str, ScopeRecord] = {}
    table = settings().tokens_table
    ordered = sorted(scopes)
    for i in range(0, len(ordered), _BATCH_GET):
        keys = [to_item({"bfid": REVOKED_PREFIX + s}) for s in ordered[i:i + _BATCH_GET]]
        request: dict[str, Any] = {table: {"Keys": keys, "ConsistentRead": True,
                                           "ProjectionExpression": _RECORD_PROJECTION,
                                           "ExpressionAttributeNames": _RECORD_NAMES}}
        for _attempt in range(8):
            with aws_errors("token revocation check"):
                out = dynamodb().batch_get_item(RequestItems=request)
            for raw in out.get("Responses", {}).get(table, []):
                record = from_item(raw) or {}
                found[str(record.get("bfid", ""))[len(REVOKED_PREFIX):]] = ScopeRecord(record)
            request = out.get("UnprocessedKeys") or {}
            if not request:
                break
        else:
            from vaultcore.errors import DependencyError

            raise DependencyError("The revocation records could not be read.")
    return found


def revoked_among(scopes: set[str]) -> set[str]:
    """The scopes of ``scopes`` that were deleted (:func:`scope_records_among`)."""
    return {s for s, record in scope_records_among(scopes).items() if record.revoked}


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
